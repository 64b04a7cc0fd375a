package app

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"

	"github.com/devpilot/devpilot/adapters/aws"
	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/telemetry"
	"github.com/devpilot/devpilot/core/cloud"
	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/ports"
)

// CloudModule provides cloud management on AWS and registers its tools
// with the assistant.
var CloudModule = fx.Module("cloud",
	fx.Provide(
		fx.Annotate(sqlstore.NewCloud,
			fx.As(new(ports.CloudAccountStore)), fx.As(new(ports.CostCacheStore)), fx.As(new(ports.AuditStore))),
		NewCloudProvider,
		NewCloud,
	),
	fx.Invoke(func(r *tool.Registry, c *cloud.Service) error { return r.Register(c.Tools()...) }),
)

// NewCloudProvider returns the AWS adapter over the SDK's default
// configuration (environment, shared files, endpoint overrides), its calls
// measured on reg when it is not nil and traced when tracing is on.
func NewCloudProvider(cfg Config, clock ports.Clock, logger *slog.Logger, reg *prometheus.Registry, tracing *telemetry.Tracing) (ports.CloudProvider, error) {
	opts := aws.Options{BaseEndpoint: cfg.AWSEndpoint, Clock: clock, Logger: logger, Tracer: tracing.Provider()}
	if reg != nil {
		opts.Metrics = reg
	}
	return aws.New(context.Background(), opts)
}

// CloudParams are what cloud management is built from.
type CloudParams struct {
	fx.In
	Logger   *slog.Logger
	Accounts ports.CloudAccountStore
	Costs    ports.CostCacheStore
	Audit    ports.AuditStore
	Provider ports.CloudProvider
	Cipher   ports.Cipher
	Clock    ports.Clock
	IDs      ports.IDs
	Config   Config
}

// NewCloud returns the cloud management service.
func NewCloud(p CloudParams) *cloud.Service {
	return cloud.New(cloud.Config{ScaleConfirmAbove: p.Config.CloudScaleConfirmAbove}, cloud.Deps{
		Accounts: p.Accounts, Costs: p.Costs, Audit: p.Audit, Provider: p.Provider, Cipher: p.Cipher,
		Clock: p.Clock, IDs: p.IDs, Logger: p.Logger,
	})
}
