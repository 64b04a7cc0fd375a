package app

import (
	"context"
	"log/slog"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"

	"github.com/devpilot/devpilot/adapters/github"
	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/telemetry"
	"github.com/devpilot/devpilot/core/scm"
	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/ports"
)

// SCMModule provides the GitHub integration and registers its tools with
// the assistant.
var SCMModule = fx.Module("scm",
	fx.Provide(
		fx.Annotate(sqlstore.NewSCM, fx.As(new(ports.SCMStore))),
		NewSCMProvider,
		NewSCMWebhooks,
		NewSCM,
	),
	fx.Invoke(func(r *tool.Registry, s *scm.Service) error { return r.Register(s.Tools()...) }),
)

// NewSCMProvider returns the GitHub adapter, or, without an OAuth app
// configured, a provider that answers every call with an unavailable error
// naming the variables to set. The adapter's requests are measured on reg
// when it is not nil, and traced when tracing is on.
func NewSCMProvider(cfg Config, logger *slog.Logger, reg *prometheus.Registry, tracing *telemetry.Tracing) (ports.SCMProvider, error) {
	if cfg.GitHub.ClientID == "" {
		logger.Info("GitHub is not configured: set " + EnvGitHubClientID + " and " + EnvGitHubSecret + " to connect repositories")
		return unconfiguredSCM{}, nil
	}
	apiURL := cfg.GitHub.APIURL
	if apiURL != "" && !strings.HasSuffix(apiURL, "/") {
		apiURL += "/"
	}
	ghCfg := github.Config{
		ClientID: cfg.GitHub.ClientID, ClientSecret: cfg.GitHub.ClientSecret,
		WebURL: cfg.GitHub.WebURL, APIURL: apiURL,
		HTTPClient: tracing.Client(nil, "github"),
	}
	if reg != nil {
		ghCfg.Metrics = reg
	}
	return github.New(ghCfg)
}

// NewSCMWebhooks returns the reader of GitHub's webhook deliveries. It needs
// no OAuth app: webhooks work with GITHUB_WEBHOOK_SECRET alone.
func NewSCMWebhooks() ports.SCMWebhooks { return github.Webhooks{} }

// SCMParams are what the GitHub integration is built from.
type SCMParams struct {
	fx.In
	Config   Config
	Logger   *slog.Logger
	Store    ports.SCMStore
	Provider ports.SCMProvider
	Webhooks ports.SCMWebhooks
	Cipher   ports.Cipher
	Jobs     ports.JobQueue
	Tx       ports.Transactor
	Clock    ports.Clock
	IDs      ports.IDs
	// DB, when given, tunes the webhook group commit to the database.
	DB *sqlstore.DB `optional:"true"`
	// Observer, when given (TelemetryModule), hears the webhook deliveries.
	Observer ports.Observer `optional:"true"`
}

// NewSCM returns the GitHub integration service. On SQLite, which has one
// writer connection, webhook deliveries are stored by one transaction at a
// time: a second would only wait for the connection, closed to deliveries
// arriving meanwhile; on PostgreSQL the scm core's default lets one batch
// commit while the next is written.
func NewSCM(p SCMParams) *scm.Service {
	publicURL := p.Config.PublicURL
	if publicURL == "" && p.Config.Mode == ModeRun {
		publicURL = "http://" + p.Config.HTTPAddr
	}
	writers := 0 // the default
	if p.DB != nil && p.DB.Dialect == sqlstore.DialectSQLite {
		writers = 1
	}
	return scm.New(scm.Config{PublicURL: publicURL, WebhookSecret: []byte(p.Config.GitHub.WebhookSecret), WebhookWriters: writers}, scm.Deps{
		Store: p.Store, Provider: p.Provider, Webhooks: p.Webhooks, Cipher: p.Cipher, Jobs: p.Jobs, Tx: p.Tx,
		Clock: p.Clock, IDs: p.IDs, Observer: p.Observer, Logger: p.Logger,
	})
}

// unconfiguredSCM stands in for GitHub when no OAuth app is configured.
type unconfiguredSCM struct{}

var errNoGitHub = &ports.Error{Kind: ports.KindUnavailable, Code: "not_configured",
	Message: "GitHub is not configured: set " + EnvGitHubClientID + " and " + EnvGitHubSecret}

func (unconfiguredSCM) AuthorizeURL(string, string, string) (string, error) { return "", errNoGitHub }
func (unconfiguredSCM) Exchange(context.Context, string, string, string) (ports.SCMToken, error) {
	return ports.SCMToken{}, errNoGitHub
}
func (unconfiguredSCM) User(context.Context, string) (ports.SCMUser, error) {
	return ports.SCMUser{}, errNoGitHub
}
func (unconfiguredSCM) ListRepos(context.Context, string, ports.Page) ([]ports.SCMRepo, string, error) {
	return nil, "", errNoGitHub
}
func (unconfiguredSCM) ListCommits(context.Context, string, string, string, ports.Page) ([]ports.SCMCommit, string, error) {
	return nil, "", errNoGitHub
}
func (unconfiguredSCM) ListPulls(context.Context, string, string, string, ports.Page) ([]ports.SCMPull, string, error) {
	return nil, "", errNoGitHub
}
func (unconfiguredSCM) SearchCommits(context.Context, string, string, ports.Page) ([]ports.SCMCommit, string, error) {
	return nil, "", errNoGitHub
}
func (unconfiguredSCM) ReadTree(context.Context, string, string, string, string) ([]ports.SCMTreeEntry, bool, error) {
	return nil, false, errNoGitHub
}
func (unconfiguredSCM) ReadFile(context.Context, string, string, string, string, string, int) (ports.SCMFile, error) {
	return ports.SCMFile{}, errNoGitHub
}
func (unconfiguredSCM) WriteFile(context.Context, string, string, string, ports.SCMFileWrite) (string, error) {
	return "", errNoGitHub
}
func (unconfiguredSCM) ListActivity(context.Context, string, string, string, ports.Page) ([]ports.SCMActivity, string, error) {
	return nil, "", errNoGitHub
}
func (unconfiguredSCM) CreateIssue(context.Context, string, string, string, ports.SCMIssueInput) (ports.SCMIssue, error) {
	return ports.SCMIssue{}, errNoGitHub
}
func (unconfiguredSCM) UpdateIssue(context.Context, string, string, string, int, ports.SCMIssueInput) (ports.SCMIssue, error) {
	return ports.SCMIssue{}, errNoGitHub
}
func (unconfiguredSCM) ListIssuesByLabel(context.Context, string, string, string, string, ports.Page) ([]ports.SCMIssue, string, error) {
	return nil, "", errNoGitHub
}
func (unconfiguredSCM) ListLabels(context.Context, string, string, string, ports.Page) ([]ports.SCMLabel, string, error) {
	return nil, "", errNoGitHub
}
func (unconfiguredSCM) CreateLabel(context.Context, string, string, string, ports.SCMLabel) error {
	return errNoGitHub
}
