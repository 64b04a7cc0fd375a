package app

import (
	"log/slog"

	"go.uber.org/fx"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/ports"
)

// SpecModule provides the specification engine and registers its tools
// with the assistant.
var SpecModule = fx.Module("spec",
	fx.Provide(
		fx.Annotate(sqlstore.NewSpec, fx.As(new(ports.SpecStore)), fx.As(new(ports.StandardStore)), fx.As(new(ports.SpecDigestStore)), fx.As(new(ports.IssueExportStore))),
		NewSpec,
	),
	fx.Invoke(func(r *tool.Registry, s *spec.Service) error { return r.Register(s.Tools()...) }),
)

// SpecParams are what the specification engine is built from.
type SpecParams struct {
	fx.In
	Config    Config
	Logger    *slog.Logger
	Specs     ports.SpecStore
	Standards ports.StandardStore
	Digests   ports.SpecDigestStore
	Exports   ports.IssueExportStore
	Tx        ports.Transactor
	Jobs      ports.JobQueue
	LLM       ports.LLM
	Clock     ports.Clock
	IDs       ports.IDs
	// Repos, SCM and Cipher read the repository a session is linked to.
	Repos  ports.SCMStore
	SCM    ports.SCMProvider
	Cipher ports.Cipher
	// Observer, when given (TelemetryModule), hears each stage stored.
	Observer ports.Observer `optional:"true"`
	// Audit records renames and deletes of sessions.
	Audit ports.AuditStore `optional:"true"`
	// Users names who edited a version by hand.
	Users ports.UserStore
}

// NewSpec returns the specification engine.
func NewSpec(p SpecParams) *spec.Service {
	return spec.New(spec.Config{Model: p.Config.LLMModel, ContextBudget: p.Config.SpecContextBudget, MaxTokens: p.Config.Spec.MaxTokens,
		CallTimeout: p.Config.Spec.CallTimeout, BatchConcurrency: p.Config.Spec.Concurrency,
		Temperature: p.Config.Spec.Temperature, Seed: p.Config.Spec.Seed}, spec.Deps{
		Specs: p.Specs, Standards: p.Standards, Digests: p.Digests, Tx: p.Tx, Jobs: p.Jobs, LLM: p.LLM,
		Clock: p.Clock, IDs: p.IDs, Logger: p.Logger, Repos: p.Repos, SCM: p.SCM, Cipher: p.Cipher,
		Exports: p.Exports, Observer: p.Observer, Audit: p.Audit, Users: p.Users,
	})
}
