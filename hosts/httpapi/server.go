// Package httpapi is devpilot's HTTP transport: routing on httprouter,
// middleware (request id, access log, metrics, panic recovery, body limit,
// timeout, bearer auth), RFC 9457 problem responses and JSON helpers.
//
// It is thin: a handler decodes the request, calls a core use case and
// encodes the result. Business rules live in the cores.
package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/julienschmidt/httprouter"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/ports"
)

// Identity authenticates bearer tokens and describes the caller.
type Identity interface {
	// Authenticate resolves a bearer token to a principal; an unauthenticated
	// Error when the token is unknown, revoked or expired.
	Authenticate(ctx context.Context, token string) (ports.Principal, error)
	// Me returns the principal in ctx with their organisation.
	Me(ctx context.Context) (identity.Me, error)
}

// Readiness reports whether the service can take traffic (database reachable,
// migrations applied). A ports.Error's Message is shown to the caller of
// /readyz as the reason; any other error is logged and shown as "not ready".
type Readiness interface {
	// Ready returns nil when the service can take traffic.
	Ready(ctx context.Context) error
}

// Deps are what the transport calls. Identity and Ready are required.
type Deps struct {
	Identity Identity
	Ready    Readiness
	// Assistant serves /api/v1/agent; nil leaves those routes out.
	Assistant Assistant
	// Spec serves /pse; nil leaves those routes out.
	Spec Spec
	// Documents extracts the text of PDF and Word uploads to /pse; nil
	// answers them 415.
	Documents ports.DocumentText
	// Cloud serves /cloud; nil leaves those routes out.
	Cloud Cloud
	// SCM serves /scm, /scm-oauth and /webhooks/scm; nil leaves them out.
	SCM SCM
	// Content serves /content; nil leaves those routes out.
	Content Content
	// Voice serves /api/v1/voice and /audio; nil leaves those routes out.
	Voice Voice
	// Usage serves /api/v1/usage; nil leaves it out.
	Usage Usage
	// Tokens serves /api/v1/tokens, each user's own API tokens; nil leaves
	// them out.
	Tokens Tokens
	// Members serves /api/v1/members, an organisation's users for its
	// admins; nil leaves them out.
	Members Membership
	// Invitations serves /api/v1/invitations: admins invite people, and
	// an invitee accepts (a public route); nil leaves them out.
	Invitations Invitations
	// Permissions serves /api/v1/permissions and guards every operation
	// ports.Permissions names; nil leaves the routes out and guards
	// nothing.
	Permissions Permissions
	// MCP serves /api/v1/mcp/servers, the organisation's remote MCP
	// servers for its admins; nil leaves them out.
	MCP MCPServers
	// AuditLog serves /api/v1/audit, the organisation's audit log for
	// admins; nil leaves it out.
	AuditLog AuditLog
	// SignIn serves /auth: console sign-in through an OpenID Connect
	// provider, sessions in an HttpOnly cookie, sign-out; nil leaves those
	// routes out and accepts no session cookie. SignInSeal seals each
	// sign-in attempt's state into a cookie, so that any replica can finish
	// it; it is required with SignIn.
	SignIn     SignIn
	SignInSeal ports.Cipher
	// Rates counts the requests of each user to the costly routes (chat,
	// spec and content generation, transcription, voice sessions) against
	// Config.RateLimit; nil sets no limit.
	Rates ports.RateStore
	// Idempotency keeps the Idempotency-Key records of authenticated writes;
	// nil ignores the header. IdempotencySeal seals every response body
	// kept for a replay (one may hold a secret shown once), bound to its
	// record; it is required with Idempotency.
	Idempotency     ports.IdempotencyStore
	IdempotencySeal ports.Cipher
	// Providers is what /readyz reports as "providers": ProvidersSandbox
	// when the model, AWS and GitHub are devpilot's in-process fakes,
	// ProvidersReal otherwise; "" leaves the field out.
	Providers string
	// DemoToken returns the sandbox's demo token, which GET /api/v1/sandbox
	// hands out when Providers is ProvidersSandbox; nil or "" hands out none.
	DemoToken func() string
	// MCPAssistant and SpecDocuments serve the MCP server at /mcp with
	// Assistant, Voice (which records an MCP client's tool calls), Spec and
	// SCM; MCPSeal seals the state of an approval asked through
	// elicitation, so that any replica can finish it. Without
	// MCPAssistant or Voice the MCP server offers no tools, without
	// SpecDocuments no specification, without MCPSeal no elicitation.
	MCPAssistant  MCPAssistant
	SpecDocuments SpecDocuments
	MCPSeal       ports.Cipher
	Logger        *slog.Logger         // nil: slog.Default()
	Metrics       *prometheus.Registry // nil: a new registry with Go and process collectors
	// Tracer, when set, puts each request under a server span named by its
	// route ("POST /api/v1/agent/chat"), a child of the caller's span when
	// the request carries W3C trace context (read with Propagator, W3C
	// trace-context when nil); what the handlers do is traced under it. Nil
	// traces nothing.
	Tracer     trace.TracerProvider
	Propagator propagation.TextMapPropagator
}

// The values of Deps.Providers.
const (
	ProvidersReal    = "real"
	ProvidersSandbox = "sandbox"
)

// Config tunes the transport. Zero fields take their defaults.
type Config struct {
	// BodyLimit caps request bodies, in bytes (default 1 MiB); a route may
	// raise or lower it.
	BodyLimit int64
	// RequestTimeout bounds a request's context (default 30s); streaming
	// routes are exempt.
	RequestTimeout time.Duration
	// ShutdownGrace bounds Shutdown when its context has no earlier deadline
	// (default 10s).
	ShutdownGrace time.Duration
	// BodyReadTimeout bounds the time to receive a request's body, from the
	// request's start (default 30s): a body still arriving then is answered
	// 408 and its connection closed. It never exceeds a route's request
	// timeout, and a route with a longer request timeout (an upload) gets
	// that long. Streaming routes read their body under it, then stream
	// without a deadline.
	BodyReadTimeout time.Duration
	// CORSOrigins are the origins whose browser clients may call the API
	// from another origin (see CheckOrigins for their form); none, the
	// default, sends no CORS headers and answers no preflight.
	CORSOrigins []string
	// RateLimit is how many requests a user may make to the costly routes
	// (chat, spec and content generation, transcription, voice sessions),
	// all together, per RateWindow, counted in Deps.Rates and so across
	// replicas; over it they get 429 with Retry-After. 0, the default, sets
	// no limit.
	RateLimit int
	// RateWindow is the fixed window RateLimit counts in (default 1m).
	RateWindow time.Duration
	// WebhookReadsPerClient bounds the webhook bodies read at once from
	// one client address (an IPv6 /64 counts as one address), which are
	// unauthenticated until their signature is checked at their end
	// (default DefaultWebhookReadsPerClient). A delivery over it waits up
	// to 2 s for one of them to end, then is answered 429 with
	// Retry-After, its body unread. A webhook body must also arrive within
	// 10 s (or BodyReadTimeout, when shorter). Behind a reverse proxy
	// every delivery comes from the proxy's address, so the bound is the
	// proxy's as a whole: raise it there.
	WebhookReadsPerClient int
	// LogPoll is the interval between two polls of a followed log (default
	// and minimum cloud.MinLogPoll, 2 s: a shorter one is raised to it).
	LogPoll time.Duration
	// LogFollowFor is how long one log stream lasts before it asks its
	// client to reconnect (default cloud.DefaultLogFollowFor, 15 min).
	LogFollowFor time.Duration
	// PublicURL is the address clients reach the server at, for the links
	// the MCP server gives (its protected-resource metadata, the console's
	// page of a confirmation); "" takes the request's scheme and host.
	PublicURL string
	// OIDCIssuer is the OpenID Connect issuer console sign-in uses, named
	// as the MCP server's authorization server; "" names devpilot itself.
	OIDCIssuer string
	// MCPCallTimeout bounds one MCP request's work (default
	// DefaultMCPCallTimeout): a tool still running then is cancelled and
	// answered with an error result. A subscriptions/listen stream is
	// exempt; it lasts until its client leaves or the server stops.
	MCPCallTimeout time.Duration
	// MCPWatchInterval is how often a replica with open
	// subscriptions/listen streams of a user polls that user's
	// specification sessions for changes to announce (default
	// DefaultMCPWatchInterval).
	MCPWatchInterval time.Duration
}

// Defaults for Config.
const (
	DefaultBodyLimit       int64 = 1 << 20
	DefaultRequestTimeout        = 30 * time.Second
	DefaultShutdownGrace         = 10 * time.Second
	DefaultBodyReadTimeout       = 30 * time.Second
	DefaultRateWindow            = time.Minute
	DefaultMCPCallTimeout        = 60 * time.Second
)

const (
	// turnWindUp bounds the time Shutdown leaves assistant turns to store
	// their end once it has cancelled them.
	turnWindUp        = 3 * time.Second
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 2 * time.Minute
)

// Server is the HTTP host: a router with its middleware, metrics and an
// http.Server to run it.
type Server struct {
	cfg      Config
	d        Deps
	log      *slog.Logger
	router   *httprouter.Router
	handler  http.Handler
	srv      *http.Server
	registry *prometheus.Registry
	metrics  *metrics
	spans    *requestSpans // nil: tracing off
	// crossOrigin refuses cookie-authenticated writes from other origins.
	crossOrigin *http.CrossOriginProtection
	stopping    chan struct{}
	stopOnce    sync.Once
	// readiness is what /readyz last said, to log its changes only.
	readiness readiness
	// turns is the context of assistant turns, which outlive their
	// requests: Shutdown cancels it before its grace is over, so every turn
	// still running ends (stored as cancelled) within the grace.
	turns       context.Context
	cancelTurns context.CancelFunc
	// webhookReads bounds the webhook bodies read at once per client.
	webhookReads *clientReads
	// registered lists the routes as handle registered them (HEAD twins
	// aside), for the test that holds openapi.json to the router.
	registered []route
	// mcpHandler serves /mcp's Streamable HTTP transport (stateless).
	mcpHandler http.Handler
	// specFeed announces changes of specification sessions to this
	// replica's subscriptions/listen streams.
	specFeed *specFeed
}

// New builds a Server with every route registered. It panics when Identity
// or Ready is missing, when SignIn or Idempotency comes without its Cipher
// (SignInSeal, IdempotencySeal), or when two routes clash: all wiring bugs.
func New(cfg Config, d Deps) *Server {
	if d.Identity == nil || d.Ready == nil {
		panic("httpapi.New: Deps.Identity and Deps.Ready are required")
	}
	if d.SignIn != nil && d.SignInSeal == nil {
		panic("httpapi.New: Deps.SignInSeal is required with Deps.SignIn")
	}
	if d.Idempotency != nil && d.IdempotencySeal == nil {
		panic("httpapi.New: Deps.IdempotencySeal is required with Deps.Idempotency")
	}
	return newServer(cfg, d, (*Server).routes)
}

// NewOperations builds a Server for a process that serves no API, the
// worker: it answers /livez, /readyz and /metrics only, with the same
// middleware (request ids, metrics, problem responses) as the API. Of d it
// uses Ready (required), Providers, Logger, Metrics, Tracer and Propagator.
func NewOperations(cfg Config, d Deps) *Server {
	if d.Ready == nil {
		panic("httpapi.NewOperations: Deps.Ready is required")
	}
	return newServer(cfg, Deps{Ready: d.Ready, Providers: d.Providers, Logger: d.Logger, Metrics: d.Metrics,
		Tracer: d.Tracer, Propagator: d.Propagator}, (*Server).operationRoutes)
}

func newServer(cfg Config, d Deps, routes func(*Server)) *Server {
	if cfg.BodyLimit <= 0 {
		cfg.BodyLimit = DefaultBodyLimit
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = DefaultShutdownGrace
	}
	if cfg.BodyReadTimeout <= 0 {
		cfg.BodyReadTimeout = DefaultBodyReadTimeout
	}
	if cfg.MCPCallTimeout <= 0 {
		cfg.MCPCallTimeout = DefaultMCPCallTimeout
	}
	if cfg.RateWindow <= 0 {
		cfg.RateWindow = DefaultRateWindow
	}
	if cfg.WebhookReadsPerClient <= 0 {
		cfg.WebhookReadsPerClient = DefaultWebhookReadsPerClient
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	s := &Server{
		cfg:          cfg,
		d:            d,
		log:          d.Logger,
		stopping:     make(chan struct{}),
		webhookReads: newClientReads(cfg.WebhookReadsPerClient, webhookReadWait),
	}
	s.turns, s.cancelTurns = context.WithCancel(context.Background())
	s.crossOrigin = http.NewCrossOriginProtection()
	for _, o := range cfg.CORSOrigins {
		_ = s.crossOrigin.AddTrustedOrigin(o) // a pattern such as https://*.example.com is not an origin: CORS alone covers it
	}
	s.registry, s.metrics = newMetrics(d.Metrics)
	s.spans = newRequestSpans(d.Tracer, d.Propagator)
	s.router = s.newRouter()
	routes(s)
	s.handler = s.observe(withCORS(cfg.CORSOrigins, s.recoverer(s.router)))
	s.srv = &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		// No ReadTimeout or WriteTimeout: they would cut SSE streams. Handlers
		// are bounded by the request context instead, and bodies by a read
		// deadline per request (Config.BodyReadTimeout).
		ErrorLog: slog.NewLogLogger(d.Logger.Handler(), slog.LevelWarn),
	}
	// HTTP/1.1, and HTTP/2 without TLS for clients that know the server
	// speaks it (prior knowledge; there is no Upgrade: h2c). A proxy that
	// talks HTTP/2 to its upstreams then carries many SSE streams on one
	// connection, and each open stream costs the server less: no connection,
	// no per-connection buffers, no background reader of its own.
	s.srv.Protocols = new(http.Protocols)
	s.srv.Protocols.SetHTTP1(true)
	s.srv.Protocols.SetUnencryptedHTTP2(true)
	return s
}

// Handler returns the whole transport (middleware and routes) as one handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Serve accepts connections on ln until Shutdown. It logs
// "listening on http://ADDR" with the bound address first, and returns nil
// after a Shutdown, or the error that stopped it.
func (s *Server) Serve(ln net.Listener) error {
	s.log.Info("listening on http://"+ln.Addr().String(), slog.String("addr", ln.Addr().String()))
	if err := s.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown stops accepting connections, closes Stopping so streams can end,
// and waits for in-flight requests until ctx's deadline or ShutdownGrace,
// whichever is first. Assistant turns (which run on when their client has
// gone) get most of that time to finish; the rest of it (a quarter, at most
// turnWindUp) is theirs to wind up: they are cancelled then, and each stores
// its end (an error event, then done), so no turn is left running.
// Connections still open then are closed, and the deadline's error is
// returned.
func (s *Server) Shutdown(ctx context.Context) error {
	s.stopOnce.Do(func() { close(s.stopping) })
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ShutdownGrace)
	defer cancel()
	deadline, _ := ctx.Deadline()
	left := time.Until(deadline)
	stopTurns := time.AfterFunc(left-min(left/4, turnWindUp), s.cancelTurns)
	defer stopTurns.Stop()
	defer s.cancelTurns()
	if err := s.srv.Shutdown(ctx); err != nil {
		return errors.Join(fmt.Errorf("httpapi: shutdown grace over, closing open connections: %w", err), s.srv.Close())
	}
	return nil
}

// Stopping is closed when Shutdown starts. Long-lived handlers (SSE streams)
// select on it to finish their stream cleanly.
func (s *Server) Stopping() <-chan struct{} { return s.stopping }
