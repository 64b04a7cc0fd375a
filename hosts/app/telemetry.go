package app

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"

	"github.com/devpilot/devpilot/adapters/telemetry"
	"github.com/devpilot/devpilot/ports"
)

// TelemetryModule counts what the cores do on the process registry: it
// provides the Observer the assistant, voice, GitHub and spec cores report to,
// and registers the gauge of pending confirmations, read from the database
// at each scrape. Serve, worker and run all get it.
var TelemetryModule = fx.Module("telemetry",
	fx.Provide(fx.Annotate(NewObserver, fx.As(new(ports.Observer)))),
	fx.Invoke(RegisterPendingConfirmations),
)

// NewObserver returns the Prometheus Observer of the cores, registered on
// the process registry.
func NewObserver(reg *prometheus.Registry) *telemetry.Observer {
	return telemetry.NewObserver(reg)
}

// RegisterPendingConfirmations registers devpilot_confirmations_pending on
// the process registry: a count of the store's pending confirmations at
// each scrape, bounded to telemetry.DefaultPendingTimeout. Errors: the
// registry's, for a clashing metric.
func RegisterPendingConfirmations(reg *prometheus.Registry, store ports.ConfirmationStore, clock ports.Clock, logger *slog.Logger) error {
	return telemetry.RegisterPendingConfirmations(reg,
		telemetry.NewPendingConfirmations(store, clock, telemetry.DefaultPendingTimeout, logger))
}
