package app

import (
	"log/slog"

	"go.uber.org/fx"

	"github.com/devpilot/devpilot/adapters/publish"
	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/core/content"
	"github.com/devpilot/devpilot/core/scm"
	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/ports"
)

// ContentModule provides the content engine and registers its tools with
// the assistant.
var ContentModule = fx.Module("content",
	fx.Provide(
		fx.Annotate(sqlstore.NewContent, fx.As(new(ports.ContentStore))),
		fx.Annotate(sqlstore.NewPublish, fx.As(new(ports.PublishStore))),
		fx.Annotate(NewContentPublisher, fx.As(new(ports.ContentPublisher))),
		NewContent,
	),
	fx.Invoke(func(r *tool.Registry, s *content.Service) error { return r.Register(s.Tools()...) }),
)

// ContentParams are what the content engine is built from.
type ContentParams struct {
	fx.In
	Config Config
	Logger *slog.Logger
	Store  ports.ContentStore
	Tx     ports.Transactor
	Jobs   ports.JobQueue
	LLM    ports.LLM
	Clock  ports.Clock
	IDs    ports.IDs

	Publish   ports.PublishStore
	Publisher ports.ContentPublisher
	Cipher    ports.Cipher
	Audit     ports.AuditStore
	Users     ports.UserStore
	// SCM writes the files of github_file targets.
	SCM *scm.Service
}

// NewContentPublisher returns the HTTP client of webhook and WordPress
// targets: loopback and private addresses only with
// DEVPILOT_PUBLISH_ALLOW_PRIVATE=1.
func NewContentPublisher(cfg Config) *publish.Client {
	return publish.New(publish.Config{AllowPrivate: cfg.PublishAllowPrivate})
}

// NewContent returns the content engine.
func NewContent(p ContentParams) *content.Service {
	return content.New(content.Config{Model: p.Config.LLMModel, AllowPrivateTargets: p.Config.PublishAllowPrivate}, content.Deps{
		Store: p.Store, Tx: p.Tx, Jobs: p.Jobs, LLM: p.LLM, Clock: p.Clock, IDs: p.IDs, Logger: p.Logger,
		Publish: p.Publish, Publisher: p.Publisher, Cipher: p.Cipher, Audit: p.Audit, Repos: p.SCM, Users: p.Users,
	})
}
