package telemetry

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/devpilot/devpilot/ports"
)

// PendingCounter counts the confirmations waiting for a human at now, of
// every organisation: ports.ConfirmationStore has it.
type PendingCounter interface {
	CountPendingConfirmations(ctx context.Context, now time.Time) (int64, error)
}

// DefaultPendingTimeout bounds the store's count during a scrape.
const DefaultPendingTimeout = 2 * time.Second

// PendingConfirmations is a Prometheus collector of the gauge
// devpilot_confirmations_pending: the confirmations pending and unexpired,
// over every organisation, counted by the store at each scrape, so that it
// is right whichever replica is scraped and across restarts. A count that
// fails or takes longer than its timeout is logged and exported as nothing
// (the series is absent from that scrape), so a slow database cannot hang a
// scrape.
type PendingConfirmations struct {
	store   PendingCounter
	clock   ports.Clock
	log     *slog.Logger
	timeout time.Duration
	desc    *prometheus.Desc
}

var _ prometheus.Collector = (*PendingConfirmations)(nil)

// NewPendingConfirmations returns the collector counting with store at the
// clock's time, each count bounded by timeout (DefaultPendingTimeout when
// not positive). logger nil discards logs.
func NewPendingConfirmations(store PendingCounter, clock ports.Clock, timeout time.Duration, logger *slog.Logger) *PendingConfirmations {
	if timeout <= 0 {
		timeout = DefaultPendingTimeout
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &PendingConfirmations{store: store, clock: clock, timeout: timeout, log: logger,
		desc: prometheus.NewDesc("devpilot_confirmations_pending",
			"Confirmations waiting for a human decision (pending and unexpired), over every organisation.", nil, nil)}
}

// Describe implements prometheus.Collector.
func (p *PendingConfirmations) Describe(ch chan<- *prometheus.Desc) { ch <- p.desc }

// Collect implements prometheus.Collector: one count from the store.
func (p *PendingConfirmations) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
	defer cancel()
	type count struct {
		n   int64
		err error
	}
	done := make(chan count, 1) // a store that ignores ctx finishes on its own
	go func() {
		n, err := p.store.CountPendingConfirmations(ctx, p.clock.Now())
		done <- count{n, err}
	}()
	var n int64
	var err error
	select {
	case c := <-done:
		n, err = c.n, c.err
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		p.log.Warn("counting pending confirmations for the metrics", "err", err)
		return
	}
	ch <- prometheus.MustNewConstMetric(p.desc, prometheus.GaugeValue, float64(n))
}

// RegisterPendingConfirmations registers p on reg. A collector of the same
// metric registered before is kept (it reads the same database), and nil is
// returned; other errors are reg's.
func RegisterPendingConfirmations(reg prometheus.Registerer, p *PendingConfirmations) error {
	err := reg.Register(p)
	if _, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
		return nil
	}
	return err
}
