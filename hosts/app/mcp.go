package app

import (
	"log/slog"

	"go.uber.org/fx"

	"github.com/devpilot/devpilot/adapters/mcpclient"
	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/core/mcptools"
	"github.com/devpilot/devpilot/core/permission"
	"github.com/devpilot/devpilot/ports"
)

// MCPModule provides devpilot as an MCP client: the organisations' MCP
// servers (their store), the client over the MCP Go SDK, and the service
// that manages them and adds their tools to the assistant's.
var MCPModule = fx.Module("mcp",
	fx.Provide(
		fx.Annotate(sqlstore.NewMCPServers, fx.As(new(ports.MCPServerStore))),
		NewMCPClient,
		NewMCPTools,
	),
)

// NewMCPClient returns the MCP client; servers may be private addresses
// only where publishing targets may (DEVPILOT_PUBLISH_ALLOW_PRIVATE). Its
// sessions close when the app stops.
func NewMCPClient(cfg Config, logger *slog.Logger, lc fx.Lifecycle) ports.MCPClient {
	c := mcpclient.New(mcpclient.Config{AllowPrivate: cfg.PublishAllowPrivate, Logger: logger.With("adapter", "mcpclient")})
	lc.Append(fx.StopHook(c.Close))
	return c
}

// MCPParams are what the MCP tools service is built from.
type MCPParams struct {
	fx.In
	Config      Config
	Logger      *slog.Logger
	Store       ports.MCPServerStore
	Client      ports.MCPClient
	Cipher      ports.Cipher
	Audit       ports.AuditStore
	Clock       ports.Clock
	IDs         ports.IDs
	Permissions *permission.Service `optional:"true"`
}

// NewMCPTools returns the service of the organisations' MCP servers.
func NewMCPTools(p MCPParams) *mcptools.Service {
	var permit mcptools.Checker // nil, not a nil pointer, without a policy
	if p.Permissions != nil {
		permit = p.Permissions
	}
	return mcptools.New(mcptools.Config{
		ListTimeout:  p.Config.MCPListTimeout,
		CallTimeout:  p.Config.MCPCallTimeout,
		AllowPrivate: p.Config.PublishAllowPrivate,
	}, mcptools.Deps{Store: p.Store, Client: p.Client, Cipher: p.Cipher, Audit: p.Audit, Clock: p.Clock, IDs: p.IDs,
		Permit: permit, Logger: p.Logger})
}
