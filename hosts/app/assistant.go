package app

import (
	"log/slog"

	"go.uber.org/fx"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/core/assistant"
	"github.com/devpilot/devpilot/core/mcptools"
	"github.com/devpilot/devpilot/core/permission"
	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/ports"
)

// AssistantModule provides the assistant: its stores (the organisations'
// tool policies among them), the tool registry (areas register their tools
// into it) and the service.
var AssistantModule = fx.Module("assistant",
	fx.Provide(
		fx.Annotate(sqlstore.NewAssistant,
			fx.As(new(ports.ChatSessionStore)), fx.As(new(ports.ChatMessageStore)),
			fx.As(new(ports.ConfirmationStore)), fx.As(new(ports.StreamEventStore)),
			fx.As(new(ports.TurnStore)), fx.As(new(ports.PreferenceStore))),
		fx.Annotate(sqlstore.NewToolPolicies, fx.As(new(ports.ToolPolicyStore))),
		tool.NewRegistry,
		NewAssistant,
	),
)

// AssistantParams are what the assistant service is built from.
type AssistantParams struct {
	fx.In
	Config        Config
	Logger        *slog.Logger
	Sessions      ports.ChatSessionStore
	Messages      ports.ChatMessageStore
	Confirmations ports.ConfirmationStore
	Events        ports.StreamEventStore
	Turns         ports.TurnStore
	Preferences   ports.PreferenceStore
	Policies      ports.ToolPolicyStore
	Tx            ports.Transactor
	LLM           ports.LLM
	Clock         ports.Clock
	IDs           ports.IDs
	Registry      *tool.Registry
	// Permissions, when given, refuses the tool calls a caller's role may
	// not make.
	Permissions *permission.Service `optional:"true"`
	DB          *sqlstore.DB        `optional:"true"`
	// Observer, when given (TelemetryModule), hears the tool calls and
	// decisions.
	Observer ports.Observer `optional:"true"`
	// MCP, when given (MCPModule), adds each organisation's MCP servers'
	// tools to its turns.
	MCP *mcptools.Service `optional:"true"`
	// Lifecycle, when given, waits on stop for the sessions being titled.
	Lifecycle fx.Lifecycle `optional:"true"`
}

// guard is the assistant's Guard: p, or none (a nil interface, not a nil
// pointer) without a policy.
func guard(p *permission.Service) tool.Guard {
	if p == nil {
		return nil
	}
	return p
}

// extra is the assistant's source of organisations' tools: m, or none (a
// nil interface) without it.
func extra(m *mcptools.Service) tool.Source {
	if m == nil {
		return nil
	}
	return m
}

// NewAssistant returns the assistant service; it titles sessions after
// their first answer unless the config says not to, and on stop waits for
// the titles under way. On SQLite, which has one
// writer connection, stream events are stored by one write at a time (as
// webhook deliveries are: see NewSCM).
func NewAssistant(p AssistantParams) *assistant.Service {
	writers := 0 // the default
	if p.DB != nil && p.DB.Dialect == sqlstore.DialectSQLite {
		writers = 1
	}
	svc := assistant.New(assistant.Config{
		MaxToolRounds:   p.Config.Assistant.MaxToolRounds,
		MaxTokens:       p.Config.Assistant.MaxTokens,
		ConfirmationTTL: p.Config.Assistant.ConfirmationTTL,
		MaxTurnsPerUser: p.Config.Assistant.MaxTurnsPerUser,
		AutoTitle:       p.Config.Assistant.AutoTitle,
		TurnLease:       p.Config.Assistant.TurnLease,
		EventWriters:    writers,
	}, assistant.Deps{
		Sessions: p.Sessions, Messages: p.Messages, Confirmations: p.Confirmations, Events: p.Events,
		Turns: p.Turns, Preferences: p.Preferences, Policies: p.Policies, Tx: p.Tx, LLM: p.LLM, Clock: p.Clock, IDs: p.IDs,
		Registry: p.Registry, Observer: p.Observer, Logger: p.Logger, Guard: guard(p.Permissions), Extra: extra(p.MCP),
	})
	if p.Lifecycle != nil {
		p.Lifecycle.Append(fx.StopHook(svc.Drain))
	}
	return svc
}
