package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"

	"github.com/devpilot/devpilot/adapters/doctext"
	"github.com/devpilot/devpilot/adapters/oidc"
	"github.com/devpilot/devpilot/adapters/queue"
	"github.com/devpilot/devpilot/adapters/secretbox"
	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/system"
	"github.com/devpilot/devpilot/adapters/telemetry"
	"github.com/devpilot/devpilot/core/assistant"
	"github.com/devpilot/devpilot/core/cloud"
	"github.com/devpilot/devpilot/core/content"
	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/core/mcptools"
	"github.com/devpilot/devpilot/core/permission"
	"github.com/devpilot/devpilot/core/scm"
	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/core/usage"
	"github.com/devpilot/devpilot/core/voice"
	"github.com/devpilot/devpilot/hosts/httpapi"
	"github.com/devpilot/devpilot/hosts/worker"
	"github.com/devpilot/devpilot/ports"
)

// NewLogger returns the process logger writing text or JSON to w at the
// configured level.
func NewLogger(cfg Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// Base is what every host needs: the configuration, the logger, the clock
// and ids, and fx's own events logged at debug level.
func Base(cfg Config, logger *slog.Logger) fx.Option {
	return fx.Options(
		fx.Supply(cfg, logger),
		fx.WithLogger(func() fxevent.Logger {
			l := &fxevent.SlogLogger{Logger: logger}
			l.UseLogLevel(slog.LevelDebug)
			// Its failures too: the command line prints the one line an
			// operator acts on (StartupCause), not fx's dump of them.
			l.UseErrorLevel(slog.LevelDebug)
			return l
		}),
		fx.Provide(
			// The one metrics registry of the process: every server and
			// instrumented adapter registers on it.
			prometheus.NewRegistry,
			NewTracing,
			fx.Annotate(func() system.Clock { return system.Clock{} }, fx.As(new(ports.Clock))),
			fx.Annotate(func() system.IDs { return system.IDs{} }, fx.As(new(ports.IDs))),
		),
	)
}

// NewTracing starts the process's tracer provider as cfg.Tracing says (a
// Tracing that traces nothing when it is off), and flushes and stops it
// when the app stops.
func NewTracing(lc fx.Lifecycle, cfg Config) (*telemetry.Tracing, error) {
	t, err := telemetry.NewTracing(context.Background(), cfg.Tracing, cfg.Version, os.Stdout)
	if err != nil {
		return nil, err
	}
	lc.Append(fx.Hook{OnStop: t.Shutdown})
	return t, nil
}

// StoreModule opens the database, closes it on stop, and provides it as the
// Transactor and as every store port. In run mode it applies pending
// migrations on start.
var StoreModule = fx.Module("sqlstore",
	fx.Provide(
		OpenDB,
		fx.Annotate(func(db *sqlstore.DB) *sqlstore.DB { return db }, fx.As(new(ports.Transactor))),
		fx.Annotate(sqlstore.NewIdentity,
			fx.As(new(ports.OrgStore)), fx.As(new(ports.UserStore)), fx.As(new(ports.TokenStore)),
			fx.As(new(ports.IdentityLinkStore))),
		fx.Annotate(sqlstore.NewInvitations, fx.As(new(ports.InvitationStore))),
		fx.Annotate(sqlstore.NewIdempotency, fx.As(new(ports.IdempotencyStore))),
		fx.Annotate(sqlstore.NewUsage, fx.As(new(ports.UsageStore))),
		fx.Annotate(sqlstore.NewBudgets, fx.As(new(ports.BudgetStore))),
		fx.Annotate(sqlstore.NewRates, fx.As(new(ports.RateStore))),
		fx.Annotate(sqlstore.NewRetention, fx.As(new(ports.RetentionStore))),
		fx.Annotate(sqlstore.NewPermissions, fx.As(new(ports.PermissionStore))),
		NewReadiness,
	),
)

// OpenDB opens the configured database and closes it when the app stops;
// in run mode it migrates it first.
func OpenDB(lc fx.Lifecycle, cfg Config, logger *slog.Logger, tracing *telemetry.Tracing) (*sqlstore.DB, error) {
	db, err := sqlstore.Open(context.Background(), cfg.DatabaseURL,
		sqlstore.WithTracer(tracing.Provider()), sqlstore.WithMaxConns(cfg.DatabaseMaxConns))
	if err != nil {
		return nil, &StartupError{What: "cannot open the database", Setting: EnvDatabaseURL, Err: err}
	}
	lc.Append(fx.Hook{
		OnStart: func(ctx context.Context) error {
			if cfg.Mode != ModeRun {
				return nil
			}
			applied, err := MigrateUp(ctx, db, logger)
			if err == nil && len(applied) > 0 {
				logger.Info(DescribeMigrations(applied))
			}
			return err
		},
		OnStop: func(context.Context) error { return db.Close() },
	})
	return db, nil
}

// Migrate applies devpilot's and the job queue's pending migrations, logging
// the queue's to logger.
func Migrate(ctx context.Context, db *sqlstore.DB, logger *slog.Logger) error {
	_, err := MigrateUp(ctx, db, logger)
	return err
}

// MigrateUp is Migrate, returning the names of the migrations it applied,
// devpilot's ("00034_webhook_digests") then the job queue's ("river
// 006_bulk_unique"): none when the database was up to date. River's own
// lines go to logger at debug.
func MigrateUp(ctx context.Context, db *sqlstore.DB, logger *slog.Logger) ([]string, error) {
	applied, err := db.MigrateUp(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrating: %w", err)
	}
	river, err := queue.MigrateUp(ctx, db, logger)
	if err != nil {
		return nil, fmt.Errorf("migrating the job queue: %w", err)
	}
	return append(applied, river...), nil
}

// DescribeMigrations says what MigrateUp applied, in one line: "database
// is up to date" for none, else "applied 3 migrations: 00034_x, 00035_y,
// river 006_bulk_unique", the middle of a long list elided ("…, 28 more,
// …").
func DescribeMigrations(applied []string) string {
	switch n := len(applied); {
	case n == 0:
		return "database is up to date"
	case n == 1:
		return "applied 1 migration: " + applied[0]
	case n <= 6:
		return fmt.Sprintf("applied %d migrations: %s", n, strings.Join(applied, ", "))
	default:
		return fmt.Sprintf("applied %d migrations: %s, … %d more …, %s", n,
			strings.Join(applied[:3], ", "), n-5, strings.Join(applied[n-2:], ", "))
	}
}

// Readiness reports whether the database answers and is fully migrated.
type Readiness struct {
	db *sqlstore.DB
}

// NewReadiness returns the readiness check of db.
func NewReadiness(db *sqlstore.DB) *Readiness { return &Readiness{db: db} }

// Ready returns an unavailable Error when the database does not answer or
// has pending migrations.
func (r *Readiness) Ready(ctx context.Context) error {
	if err := r.db.Ping(ctx); err != nil {
		return ports.Wrap(ports.KindUnavailable, err, "database unreachable")
	}
	n, err := r.db.PendingMigrations(ctx)
	if err != nil {
		return ports.Wrap(ports.KindUnavailable, err, "checking migrations")
	}
	q, err := queue.PendingMigrations(ctx, r.db)
	if err != nil {
		return ports.Wrap(ports.KindUnavailable, err, "checking job queue migrations")
	}
	if n+q > 0 {
		return ports.Errorf(ports.KindUnavailable, "%d migrations pending: run devpilot migrate", n+q)
	}
	return nil
}

// CipherModule provides the Cipher: from DEVPILOT_SECRET_KEY, or in run
// mode from a key file it creates on first start.
var CipherModule = fx.Module("secretbox",
	fx.Provide(fx.Annotate(NewCipher, fx.As(new(ports.Cipher)))),
	fx.Invoke(func(ports.Cipher) {}),
)

// NewCipher returns the AES-256-GCM cipher over the configured keys.
func NewCipher(cfg Config) (*secretbox.Box, error) {
	keys := cfg.SecretKeys
	if len(keys) == 0 && cfg.SecretKeyFile != "" {
		key, err := secretbox.LoadOrCreateKeyFile(cfg.SecretKeyFile)
		if err != nil {
			return nil, &StartupError{What: fmt.Sprintf("cannot read or create the secret key file %q", cfg.SecretKeyFile),
				Setting: EnvDataDir + " or " + EnvSecretKey, Err: err}
		}
		keys = [][]byte{key}
	}
	if len(keys) == 0 {
		return nil, &StartupError{What: "no secret key is set", Setting: EnvSecretKey,
			Err: errors.New("it is required: a base64 32-byte key (generate one with: openssl rand -base64 32)")}
	}
	return secretbox.New(keys...)
}

// CoreModule provides the core services every host shares.
var CoreModule = fx.Module("core",
	fx.Provide(NewIdentity, usage.New, NewBudgets, NewPermissions),
)

// PermissionParams are the ports the permission policy is built from.
type PermissionParams struct {
	fx.In
	Store ports.PermissionStore
	Audit ports.AuditStore
	Clock ports.Clock
	IDs   ports.IDs
}

// NewPermissions returns the organisations' permission policy, which the
// HTTP host, the assistant and voice check every guarded write with.
func NewPermissions(p PermissionParams) *permission.Service {
	return permission.New(permission.Deps{Store: p.Store, Audit: p.Audit, Clock: p.Clock, IDs: p.IDs})
}

// IdentityParams are the ports the identity service is built from.
type IdentityParams struct {
	fx.In
	Orgs        ports.OrgStore
	Users       ports.UserStore
	Tokens      ports.TokenStore
	Audit       ports.AuditStore
	Invitations ports.InvitationStore
	Links       ports.IdentityLinkStore
	Tx          ports.Transactor
	Clock       ports.Clock
	IDs         ports.IDs
	Config      Config
}

// NewIdentity returns the identity service, signing console users in
// through the OpenID Connect provider when one is configured.
func NewIdentity(p IdentityParams) (*identity.Service, error) {
	d := identity.Deps{
		Orgs: p.Orgs, Users: p.Users, Tokens: p.Tokens, Audit: p.Audit, Tx: p.Tx, Clock: p.Clock, IDs: p.IDs,
		CacheFor: p.Config.AuthCacheTTL, Invitations: p.Invitations, Links: p.Links,
	}
	if c := p.Config.SignIn; c.Issuer != "" {
		provider, err := oidc.New(oidc.Config{IssuerURL: c.Issuer, ClientID: c.ClientID, ClientSecret: c.ClientSecret,
			RedirectURL: p.Config.SignInRedirectURL(), GroupsClaim: c.GroupsClaim, Now: p.Clock.Now})
		if err != nil {
			return nil, err
		}
		d.SignIn, d.SignInPolicy = provider, c.Policy
	}
	return identity.New(d), nil
}

// QueueModule provides the JobQueue port: an insert-only River client, so
// services enqueue jobs in their transactions whether or not this process
// works them. It counts the jobs inserted, and reads the queue's depth, on
// the process registry.
var QueueModule = fx.Module("queue",
	fx.Provide(fx.Annotate(
		func(db *sqlstore.DB, cfg Config, logger *slog.Logger, reg *prometheus.Registry, tracing *telemetry.Tracing) (*queue.Queue, error) {
			return queue.New(db, queue.Config{Logger: logger, Metrics: reg, Kinds: worker.Kinds(), Tracer: tracing.Provider(), Queue: jobQueue(cfg)})
		},
		fx.As(new(ports.JobQueue)),
	)),
)

// WorkerModule runs the River workers that call the core services: a second
// River client that works jobs and enqueues the periodic maintenance ones,
// started and stopped with the app (run, worker, and serve with the
// sandbox). Except in run, which migrates first, it starts working once
// the database is migrated (see migratedStart).
var WorkerModule = fx.Module("worker",
	fx.Invoke(StartWorkers),
)

// WorkerProbesModule serves the worker command's /livez, /readyz and
// /metrics on DEVPILOT_WORKER_ADDR, so that a worker is probed and scraped
// like serve.
var WorkerProbesModule = fx.Module("worker-probes",
	fx.Invoke(ServeWorkerProbes),
)

// ServeWorkerProbes listens on cfg.WorkerAddr on start (a bad or busy
// address fails start-up), serves the probes and the metrics, and shuts
// down gracefully on stop.
func ServeWorkerProbes(lc fx.Lifecycle, sd fx.Shutdowner, cfg Config, logger *slog.Logger, ready *Readiness, reg *prometheus.Registry, tracing *telemetry.Tracing) {
	srv := httpapi.NewOperations(httpapi.Config{RequestTimeout: cfg.RequestTimeout, ShutdownGrace: cfg.ShutdownGrace},
		httpapi.Deps{Ready: ready, Providers: providers(cfg), Logger: logger, Metrics: reg,
			Tracer: tracing.Provider(), Propagator: tracing.Propagator()})
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			ln, err := net.Listen("tcp", cfg.WorkerAddr)
			if err != nil {
				return listenError(cfg.WorkerAddr, EnvWorkerAddr, err)
			}
			go func() {
				if err := srv.Serve(ln); err != nil {
					logger.Error("worker probe server stopped", "err", err)
					_ = sd.Shutdown(fx.ExitCode(1))
				}
			}()
			return nil
		},
		OnStop: srv.Shutdown,
	})
}

// WorkerParams are what the worker client is built from.
type WorkerParams struct {
	fx.In
	Lifecycle fx.Lifecycle
	Config    Config
	DB        *sqlstore.DB
	Logger    *slog.Logger
	Identity  *identity.Service
	Assistant *assistant.Service
	Spec      *spec.Service
	SCM       *scm.Service
	Content   *content.Service
	Voice     *voice.Service
	// Idempotency is pruned of expired Idempotency-Key records.
	Idempotency ports.IdempotencyStore
	// UsageKeys is pruned of the keys of old usage records added once.
	UsageKeys ports.UsageStore
	// Retention is pruned of the other records that grow with traffic.
	Retention ports.RetentionStore
	Clock     ports.Clock
	// Metrics receives the job metrics.
	Metrics *prometheus.Registry
	// Tracing traces the jobs' attempts.
	Tracing *telemetry.Tracing
	// Ready tells the worker command whether the database is migrated.
	Ready      *Readiness
	Shutdowner fx.Shutdowner
}

// StartWorkers builds the worker client and ties it to the app's lifecycle.
func StartWorkers(p WorkerParams) error {
	workers, err := worker.NewWorkers(worker.Deps{Identity: p.Identity, Assistant: p.Assistant, Spec: p.Spec, SpecExport: p.Spec, SCM: p.SCM, Content: p.Content, Publishing: p.Content, Voice: p.Voice,
		Idempotency: p.Idempotency, UsageKeys: p.UsageKeys, Retention: p.Retention, Keep: p.Config.Retention.Keep,
		Clock: p.Clock, Logger: p.Logger, GenerationBudget: p.Config.JobRescueAfter})
	if err != nil {
		return err
	}
	// `devpilot run` is documented as the only worker of its database, so
	// jobs running when it starts are its predecessor's, which died.
	q, err := queue.New(p.DB, queue.Config{Workers: workers, PeriodicJobs: worker.PeriodicJobs(), MaxWorkers: p.Config.WorkerJobs, Logger: p.Logger,
		RescueAfter: p.Config.JobRescueAfter, RescueOnStart: p.Config.Mode == ModeRun, Metrics: p.Metrics, Kinds: worker.Kinds(),
		Tracer: p.Tracing.Provider(), Retention: p.Config.Retention.Jobs, Queue: jobQueue(p.Config)})
	if err != nil {
		return err
	}
	if p.Config.Mode == ModeRun { // run migrates as it starts
		p.Lifecycle.Append(fx.StartStopHook(q.Start, q.Stop))
		return nil
	}
	w := &migratedStart{q: q, ready: p.Ready, logger: p.Logger, sd: p.Shutdowner, poll: migrationPoll}
	p.Lifecycle.Append(fx.Hook{OnStart: w.start, OnStop: w.stop})
	return nil
}

// SandboxQueue is the job queue of `serve --sandbox`: its jobs need the
// fake providers in its memory, so it inserts every job there and works
// that queue alone, in process; `devpilot worker` (River's default queue)
// never takes one up, and so never fails a sandbox generation for want of
// a model.
const SandboxQueue = "sandbox"

// jobQueue is the queue this process inserts its jobs into and works:
// SandboxQueue for serve with the sandbox, else River's default ("").
// `devpilot run` is the only worker of its database and keeps the default.
func jobQueue(cfg Config) string {
	if cfg.Mode == ModeServe && cfg.Sandbox {
		return SandboxQueue
	}
	return ""
}

// migrationPoll is how often a worker waiting for its database to be
// migrated checks it again.
var migrationPoll = 2 * time.Second

// migratedStart starts the worker command's queue once the database is
// migrated. A worker started before `devpilot migrate` finished (a
// Kubernetes Deployment rolled out with its migration Job, a compose
// service started with the migrate one) does not crash-loop on River's
// missing tables: it says what serve's /readyz says ("31 migrations
// pending: run devpilot migrate") once, answers /readyz 503 with it, and
// starts working jobs as soon as the migrations are in, logging so.
type migratedStart struct {
	q      *queue.Queue
	ready  *Readiness
	logger *slog.Logger
	sd     fx.Shutdowner
	poll   time.Duration

	cancel  context.CancelFunc
	done    chan struct{}
	started bool
}

func (w *migratedStart) start(ctx context.Context) error {
	err := w.ready.Ready(ctx)
	if err == nil {
		w.started = true
		return w.q.Start(ctx)
	}
	if !ports.IsKind(err, ports.KindUnavailable) {
		return err
	}
	reason := readyReason(err)
	w.logger.Warn(reason + " (the worker works no job until the database is migrated; it checks every " + w.poll.String() + ")")
	wctx, cancel := context.WithCancel(context.Background())
	w.cancel, w.done = cancel, make(chan struct{})
	go w.wait(wctx, reason)
	return nil
}

// wait checks the database every poll until it is migrated, then starts
// the queue; a change of reason is logged once. A queue that fails to
// start then stops the app with exit code 1.
func (w *migratedStart) wait(ctx context.Context, last string) {
	defer close(w.done)
	t := time.NewTicker(w.poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := w.ready.Ready(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			if reason := readyReason(err); reason != last {
				w.logger.Warn(reason)
				last = reason
			}
			continue
		}
		if err := w.q.Start(ctx); err != nil {
			w.logger.Error("cannot start working jobs", "err", err)
			_ = w.sd.Shutdown(fx.ExitCode(1))
			return
		}
		w.started = true
		w.logger.Info("the database is migrated: working jobs")
		return
	}
}

func (w *migratedStart) stop(ctx context.Context) error {
	if w.cancel != nil {
		w.cancel()
		select {
		case <-w.done:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if !w.started {
		return nil
	}
	return w.q.Stop(ctx)
}

// readyReason is the client-safe reason of a Readiness error.
func readyReason(err error) string {
	if pe, ok := ports.AsError(err); ok && pe.Message != "" {
		return pe.Message
	}
	return "not ready"
}

// HTTPModule provides the HTTP server: it listens on start, so a bad or busy
// address fails start-up, serves in a goroutine and shuts down gracefully.
var HTTPModule = fx.Module("http",
	fx.Provide(NewHTTPServer),
	// The watch starts before the server listens and stops after it drained.
	fx.Invoke(WatchRevocations),
	fx.Invoke(func(*httpapi.Server) {}),
)

// WatchRevocations runs the identity service's watch of token revocations
// (so that a token revoked elsewhere stops working here at once) from start
// to stop. A watch that fails is logged; the cache's TTL still bounds how
// long a revoked token may work.
func WatchRevocations(lc fx.Lifecycle, id *identity.Service, logger *slog.Logger) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			go func() {
				defer close(done)
				if err := id.WatchRevocations(ctx); err != nil && ctx.Err() == nil {
					logger.Error("watching token revocations stopped", "err", err)
				}
			}()
			return nil
		},
		OnStop: func(stop context.Context) error {
			cancel()
			select {
			case <-done:
			case <-stop.Done():
			}
			return nil
		},
	})
}

// HTTPParams are what the HTTP server is built from.
type HTTPParams struct {
	fx.In
	Lifecycle  fx.Lifecycle
	Shutdowner fx.Shutdowner
	Config     Config
	Logger     *slog.Logger
	Identity   *identity.Service
	Assistant  *assistant.Service
	Spec       *spec.Service
	Cloud      *cloud.Service
	SCM        *scm.Service
	Content    *content.Service
	Voice      *voice.Service
	Usage      *usage.Service
	// Permissions guards the writes ports.Permissions names and serves
	// /api/v1/permissions.
	Permissions *permission.Service `optional:"true"`
	Ready       *Readiness
	Metrics     *prometheus.Registry
	Tracing     *telemetry.Tracing
	// Idempotency keeps the Idempotency-Key records of the API's writes.
	Idempotency ports.IdempotencyStore
	// Rates counts the requests of each user to the costly routes.
	Rates ports.RateStore
	// Cipher seals console sign-in attempts into a cookie, and the
	// responses kept for Idempotency-Key replays.
	Cipher ports.Cipher
	// MCP serves /api/v1/mcp/servers (MCPModule).
	MCP *mcptools.Service `optional:"true"`
}

// NewHTTPServer returns the HTTP API server bound to the app's lifecycle.
func NewHTTPServer(p HTTPParams) *httpapi.Server {
	var demoToken func() string
	if sb := p.Config.sandbox; sb != nil {
		demoToken = sb.ConsoleToken
	}
	var mcpServers httpapi.MCPServers // nil, not a nil pointer, without MCPModule
	if p.MCP != nil {
		mcpServers = p.MCP
	}
	var perms httpapi.Permissions // nil, not a nil pointer, without a policy
	if p.Permissions != nil {
		perms = p.Permissions
	}
	srv := httpapi.New(httpapi.Config{
		BodyLimit:             p.Config.BodyLimit,
		RequestTimeout:        p.Config.RequestTimeout,
		BodyReadTimeout:       p.Config.BodyReadTimeout,
		CORSOrigins:           p.Config.CORSOrigins,
		ShutdownGrace:         p.Config.ShutdownGrace,
		RateLimit:             p.Config.RateLimit,
		RateWindow:            p.Config.RateWindow,
		WebhookReadsPerClient: p.Config.WebhookReadsPerClient,
		LogPoll:               p.Config.LogPoll,
		LogFollowFor:          p.Config.LogFollowFor,
		MCPCallTimeout:        p.Config.MCPRequestTimeout,
		MCPWatchInterval:      p.Config.MCPWatchInterval,
		PublicURL:             p.Config.PublicURL,
		OIDCIssuer:            p.Config.SignIn.Issuer,
	}, httpapi.Deps{Identity: p.Identity, Tokens: p.Identity, Members: p.Identity, Invitations: p.Identity, AuditLog: p.Identity,
		SignIn: p.Identity, SignInSeal: p.Cipher, Assistant: p.Assistant, Spec: p.Spec, Documents: doctext.New(), Cloud: p.Cloud, SCM: p.SCM,
		Content: p.Content, Voice: p.Voice, Usage: p.Usage, Ready: p.Ready, Logger: p.Logger, Providers: providers(p.Config),
		DemoToken: demoToken, Idempotency: p.Idempotency, IdempotencySeal: p.Cipher, Rates: p.Rates, Metrics: p.Metrics,
		Tracer: p.Tracing.Provider(), Propagator: p.Tracing.Propagator(), Permissions: perms, MCP: mcpServers,
		MCPAssistant: p.Assistant, SpecDocuments: p.Spec, MCPSeal: p.Cipher})

	p.Lifecycle.Append(fx.Hook{
		OnStart: func(context.Context) error {
			ln := p.Config.takeHTTPListener()
			if ln == nil && p.Config.sandbox != nil {
				ln = p.Config.sandbox.TakeListener()
			}
			if ln == nil {
				var err error
				if ln, err = net.Listen("tcp", p.Config.HTTPAddr); err != nil {
					return listenError(p.Config.HTTPAddr, EnvHTTPAddr, err)
				}
			}
			go func() {
				if err := srv.Serve(ln); err != nil {
					p.Logger.Error("http server stopped", "err", err)
					_ = p.Shutdowner.Shutdown(fx.ExitCode(1))
				}
			}()
			return nil
		},
		OnStop: srv.Shutdown,
	})
	return srv
}

// providers is what /readyz reports as "providers".
func providers(cfg Config) string {
	if cfg.Sandbox {
		return httpapi.ProvidersSandbox
	}
	return httpapi.ProvidersReal
}

// Options returns the fx options of a long-running host in the given mode:
// run (HTTP and worker), serve (HTTP) or worker. A configuration with
// Sandbox set must have a running sandbox attached (WithSandbox, done by
// package hosts/sandbox's Start): the sandbox then seeds its demo records on
// start, before the HTTP server listens, and stops its fakes on stop;
// without one the app fails to build.
func Options(cfg Config, logger *slog.Logger) fx.Option {
	opts := []fx.Option{
		Base(cfg, logger),
		StoreModule,
		CipherModule,
		CoreModule,
		LLMModule,
		AssistantModule,
		MCPModule,
		SpecModule,
		CloudModule,
		SCMModule,
		ContentModule,
		VoiceModule,
		QueueModule,
		TelemetryModule,
		fx.StopTimeout(cfg.ShutdownGrace + 5*time.Second),
	}
	switch {
	case cfg.Sandbox && cfg.sandbox == nil:
		opts = append(opts, fx.Error(errors.New("sandbox providers are configured but not started: call sandbox.Start (package hosts/sandbox) before app.Options")))
	case cfg.sandbox != nil:
		opts = append(opts, cfg.sandbox.Module())
	}
	if cfg.Mode == ModeRun || cfg.Mode == ModeServe {
		opts = append(opts, HTTPModule)
	}
	// serve --sandbox works its own jobs (on SandboxQueue): no worker
	// process has its fake providers.
	if cfg.Mode == ModeRun || cfg.Mode == ModeWorker || cfg.Mode == ModeServe && cfg.Sandbox {
		opts = append(opts, WorkerModule)
	}
	if cfg.Mode == ModeWorker {
		opts = append(opts, WorkerProbesModule)
	}
	return fx.Options(opts...)
}
