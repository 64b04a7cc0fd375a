// Package app holds what every devpilot host shares: the configuration, read
// once from the environment, and one fx module per adapter and core service.
package app

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/fx"

	"github.com/devpilot/devpilot/adapters/openai"
	"github.com/devpilot/devpilot/adapters/queue"
	"github.com/devpilot/devpilot/adapters/secretbox"
	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/telemetry"
	"github.com/devpilot/devpilot/core/cloud"
	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/hosts/httpapi"
	"github.com/devpilot/devpilot/ports"
)

// Mode is how the binary was started; some defaults depend on it.
type Mode string

// The modes of the devpilot binary.
const (
	ModeRun     Mode = "run"     // HTTP and worker in one process, embedded defaults
	ModeServe   Mode = "serve"   // HTTP only
	ModeWorker  Mode = "worker"  // background jobs only
	ModeMigrate Mode = "migrate" // apply migrations and exit
	ModeToken   Mode = "token"   // manage API tokens and exit
)

// Config is devpilot's configuration, parsed once at start-up.
type Config struct {
	Mode Mode
	// Version is the build's, for the traces' service.version ("" when
	// unknown); the command line sets it.
	Version string
	// Tracing is what the OTEL_* variables say of traces: off unless an
	// exporter is set (see telemetry.TracingFromEnv).
	Tracing     telemetry.TracingConfig
	DatabaseURL string
	// DatabaseMaxConns bounds the main PostgreSQL pool of each process
	// (DEVPILOT_DATABASE_MAX_CONNS, default sqlstore.DefaultMaxConns).
	DatabaseMaxConns int
	HTTPAddr         string
	DataDir          string
	// SecretKeys are the Cipher's keys, current first. Empty in run mode
	// until a key file is loaded; see SecretKeyFile.
	SecretKeys [][]byte
	// SecretKeyFile is where run mode keeps a generated key when
	// DEVPILOT_SECRET_KEY is not set.
	SecretKeyFile string
	LLMModel      string
	LLM           LLMConfig
	// Models says which models serve each feature, with failover, and
	// configures the providers besides OpenAI (DEVPILOT_MODEL_*,
	// ANTHROPIC_*, DEVPILOT_BEDROCK_*).
	Models    ModelsConfig
	Assistant AssistantConfig
	Spec      SpecConfig
	// SpecContextBudget bounds the estimated tokens of a specification
	// stage's request to the spec model (DEVPILOT_SPEC_CONTEXT_BUDGET,
	// default spec.DefaultContextBudget): longer inputs are digested once
	// and the stages are given the digest (spec.Config.ContextBudget).
	SpecContextBudget int
	// OrgMonthlyTokens is the monthly token budget (prompt plus completion,
	// per UTC month) of an organisation whose admin set none
	// (DEVPILOT_ORG_MONTHLY_TOKENS, default 0: unlimited).
	OrgMonthlyTokens int64
	// WorkerJobs is how many background jobs a worker runs at once.
	WorkerJobs int
	// WorkerAddr is where the worker command serves /livez, /readyz and
	// /metrics (DEVPILOT_WORKER_ADDR, default DefaultWorkerAddr, on
	// loopback); run and serve serve them on HTTPAddr.
	WorkerAddr string
	// JobRescueAfter bounds how long a background job stays running once the
	// process working it died: after it, a working process makes the job
	// available again (DEVPILOT_JOB_RESCUE_AFTER, default 5m). Every attempt
	// is cancelled at queue.JobTimeout of it (four fifths). `devpilot run`,
	// the only worker of its database, also takes up every job left running
	// as it starts.
	JobRescueAfter time.Duration
	Voice          VoiceConfig
	// AWSEndpoint is AWS_ENDPOINT_URL, read here too so that it can be set
	// through Load's getenv; the SDK also honours AWS_ENDPOINT_URL_<SERVICE>.
	AWSEndpoint string
	GitHub      GitHubConfig
	// SignIn is the console's OpenID Connect sign-in (DEVPILOT_OIDC_*):
	// off unless an issuer is set.
	SignIn         SignInConfig
	PublicURL      string
	LogFormat      string
	LogLevel       slog.Level
	RequestTimeout time.Duration
	// BodyReadTimeout bounds the time to receive a request's body
	// (httpapi.Config.BodyReadTimeout).
	BodyReadTimeout time.Duration
	// CORSOrigins are the origins whose browser clients may call the API
	// from another origin (httpapi.Config.CORSOrigins); none by default.
	CORSOrigins   []string
	ShutdownGrace time.Duration
	BodyLimit     int64
	// PublishAllowPrivate lets publishing targets name addresses that are
	// not public (loopback, private and the other ranges ports.PublicAddr
	// refuses) (DEVPILOT_PUBLISH_ALLOW_PRIVATE=1); off by default.
	PublishAllowPrivate bool
	// MCPListTimeout bounds listing one MCP server's tools for a turn
	// (DEVPILOT_MCP_LIST_TIMEOUT, default 5s); MCPCallTimeout bounds one
	// call of an MCP tool (DEVPILOT_MCP_CALL_TIMEOUT, default 30s).
	MCPListTimeout time.Duration
	MCPCallTimeout time.Duration
	// CloudScaleConfirmAbove is the desired count above which scaling a
	// container service needs its name typed
	// (DEVPILOT_CLOUD_SCALE_CONFIRM_ABOVE, default 10, 1 to 1000;
	// cloud.Config.ScaleConfirmAbove).
	CloudScaleConfirmAbove int
	// RateLimit is how many requests a user may make to the costly routes
	// per RateWindow, across replicas (httpapi.Config.RateLimit); 0 sets no
	// limit. Default 30 per minute.
	RateLimit  int
	RateWindow time.Duration
	// LogPoll is the interval between two polls of a followed log
	// (DEVPILOT_LOG_FOLLOW_INTERVAL, 2s to 1m, default 2s); LogFollowFor how
	// long one log stream lasts before it asks its client to reconnect
	// (DEVPILOT_LOG_FOLLOW_MAX, 1s to 1h, default 15m).
	LogPoll      time.Duration
	LogFollowFor time.Duration
	// MCPRequestTimeout bounds one request to the MCP server at /mcp: a tool
	// still running then is cancelled (DEVPILOT_MCP_REQUEST_TIMEOUT, 1s to
	// 10m, default 60s). MCPWatchInterval is how often a replica with open
	// MCP subscriptions/listen streams polls the database for changes of
	// their users' specifications (DEVPILOT_MCP_WATCH_INTERVAL, 100ms to
	// 1m, default 3s).
	MCPRequestTimeout time.Duration
	MCPWatchInterval  time.Duration
	// WebhookReadsPerClient bounds the webhook bodies read at once from one
	// client address (DEVPILOT_WEBHOOK_READS_PER_CLIENT, default
	// httpapi.DefaultWebhookReadsPerClient; httpapi.Config.WebhookReadsPerClient).
	WebhookReadsPerClient int
	// AuthCacheTTL is how long a verified API token is trusted without
	// reading it again (identity.Deps.CacheFor); 0 reads it on every request.
	AuthCacheTTL time.Duration
	// Retention is how long the records that grow with traffic, and the
	// queue's finished jobs, are kept (DEVPILOT_RETENTION_*; see
	// RetentionSettings).
	Retention RetentionConfig
	// Sandbox is whether this process runs sandbox providers: in-process
	// fakes of OpenAI, AWS and GitHub on loopback, with demo data (package
	// hosts/sandbox, attached with WithSandbox). It is all or nothing: either every provider (the
	// model, AWS, GitHub) is a fake, or none is. Load decides it:
	//
	//   - run: on unless one of ProviderVariables is set;
	//     DEVPILOT_SANDBOX=1 forces it on (the provider variables are then
	//     ignored), DEVPILOT_SANDBOX=0 forces it off.
	//   - serve: off unless --sandbox (WithSandboxFlag) or
	//     DEVPILOT_SANDBOX=1 is given. With it, serve also works its own
	//     jobs, on SandboxQueue, which no worker takes from.
	//   - worker: never. A worker in sandbox mode would need the fakes that
	//     the serving process holds in memory, so DEVPILOT_SANDBOX=1 is an
	//     error.
	//   - migrate, token: never (they start no providers).
	//
	// DEVPILOT_SANDBOX accepts only 1 and 0; anything else is an error, as
	// is --sandbox together with DEVPILOT_SANDBOX=0.
	Sandbox bool
	// SandboxReason says why the sandbox is on or off, for the start-up log
	// line: the provider variable that turned it off ("OPENAI_API_KEY is
	// set"), DEVPILOT_SANDBOX, --sandbox, or the mode.
	SandboxReason string

	// sandbox is the running sandbox once WithSandbox attached it; Options
	// refuses a Sandbox configuration without it.
	sandbox SandboxProviders
	// httpListener is the HTTP API's socket once ListenHTTP opened it.
	httpListener *heldListener
}

// SandboxProviders is what the app needs of running sandbox providers
// (package hosts/sandbox, which starts the fakes before the fx graph is
// built and points the configuration at them). It keeps this package free
// of the sandbox's fakes: a host that never attaches one links none of them.
type SandboxProviders interface {
	// Module returns the fx options that seed the demo records on start
	// (before the HTTP server listens) and stop the fakes on stop.
	Module() fx.Option
	// ConsoleToken returns the demo user's API token, which the console's
	// "demo user" button signs in with (GET /api/v1/sandbox); "" until the
	// demo records are seeded.
	ConsoleToken() string
	// TakeListener returns, once, a socket the sandbox opened for the HTTP
	// API (when it resolved a port-0 HTTPAddr to build the public URL); nil
	// when there is none. The HTTP server serves on it unless ListenHTTP
	// opened one.
	TakeListener() net.Listener
}

// WithSandbox returns c with the running sandbox sb attached: Options then
// adds sb's module and the HTTP server hands out its console token. sb must
// be non-nil; c must already point the providers at the sandbox's fakes
// (the sandbox package does both).
func (c Config) WithSandbox(sb SandboxProviders) Config {
	c.sandbox = sb
	return c
}

// heldListener is a socket opened before the app starts, handed to the
// HTTP server once.
type heldListener struct {
	mu sync.Mutex
	ln net.Listener
}

func (h *heldListener) take() net.Listener {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	ln := h.ln
	h.ln = nil
	return ln
}

// ListenHTTP opens the HTTP API's socket on HTTPAddr before anything else
// starts (migrations, the sandbox's seeding), so that an address in use
// fails start-up at once, with one error. It returns cfg holding the socket
// for the HTTP server, with port 0 in HTTPAddr replaced by the port chosen,
// and a function that closes the socket unless the server took it (call it
// when the app ends, started or not). Errors: the address cannot be listened
// on, naming EnvHTTPAddr.
func ListenHTTP(cfg Config) (Config, func(), error) {
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return cfg, func() {}, listenError(cfg.HTTPAddr, EnvHTTPAddr, err)
	}
	if host, port, err := net.SplitHostPort(cfg.HTTPAddr); err == nil && port == "0" {
		cfg.HTTPAddr = net.JoinHostPort(host, strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	}
	held := &heldListener{ln: ln}
	cfg.httpListener = held
	return cfg, func() {
		if ln := held.take(); ln != nil {
			_ = ln.Close()
		}
	}, nil
}

// takeHTTPListener returns the socket ListenHTTP opened, once; nil when
// there is none.
func (c Config) takeHTTPListener() net.Listener { return c.httpListener.take() }

// LLMConfig points the OpenAI-compatible adapter at a provider.
type LLMConfig struct {
	APIKey  string
	BaseURL string // "" is OpenAI's
	Timeout time.Duration
	// StructuredOutput is how structured output is asked of the models
	// StructuredOutputByModel does not name (DEVPILOT_LLM_STRUCTURED_OUTPUT):
	// strict for OpenAI's API and the sandbox, lenient for any other server.
	StructuredOutput openai.StructuredOutput
	// StructuredOutputByModel holds the MODEL=MODE entries of
	// DEVPILOT_LLM_STRUCTURED_OUTPUT; nil when there are none.
	StructuredOutputByModel map[string]openai.StructuredOutput
}

// GitHubConfig configures the GitHub integration: an OAuth app, its web and
// API URLs (GitHub Enterprise Server sets both), and the webhook secret.
type GitHubConfig struct {
	ClientID      string
	ClientSecret  string
	WebURL        string
	APIURL        string
	WebhookSecret string
}

// SignInRedirectURL is the callback the identity provider sends browsers
// back to: SignIn.RedirectURL, else PublicURL + /auth/oidc/callback.
func (c Config) SignInRedirectURL() string {
	if c.SignIn.RedirectURL != "" {
		return c.SignIn.RedirectURL
	}
	return strings.TrimRight(c.PublicURL, "/") + "/auth/oidc/callback"
}

// SignInConfig configures console sign-in through an OpenID Connect
// provider. Issuer "" turns it off.
type SignInConfig struct {
	Issuer       string
	ClientID     string
	ClientSecret string
	// RedirectURL is the callback registered with the provider; "" means
	// the public URL + /auth/oidc/callback (see Config.SignInRedirectURL).
	RedirectURL string
	// GroupsClaim names the ID token claim listing the user's groups.
	GroupsClaim string
	// Policy admits new users by email domain or group, into one org.
	Policy identity.SignInPolicy
}

// VoiceConfig configures realtime voice sessions and transcription.
type VoiceConfig struct {
	RealtimeModel   string
	RealtimeVoice   string
	TokenTTL        time.Duration
	TranscribeModel string
}

// SpecConfig bounds the specification engine's model calls, apart from the
// chat's: DEVPILOT_SPEC_MAX_TOKENS (output tokens per call, 16384),
// DEVPILOT_SPEC_CALL_TIMEOUT (one exchange, 0 = the LLM timeout only),
// DEVPILOT_SPEC_CONCURRENCY (story and PRP calls at a time, 4; 0 asks for
// each stage in one call), DEVPILOT_SPEC_TEMPERATURE and
// DEVPILOT_SPEC_SEED (the sampling of each stage's calls; unset leaves it
// to the provider).
type SpecConfig struct {
	MaxTokens   int
	CallTimeout time.Duration
	Concurrency int
	// Temperature is each stage's temperature, from 0 to 2; a stage not in
	// it is sent none.
	Temperature map[ports.Stage]float64
	// Seed, when not nil, is sent with every stage's calls.
	Seed *int64
}

// AssistantConfig bounds the assistant loop.
type AssistantConfig struct {
	MaxToolRounds   int
	MaxTokens       int
	ConfirmationTTL time.Duration
	// MaxTurnsPerUser caps the chat turns one user runs at once, on every
	// replica together (0: no cap).
	MaxTurnsPerUser int
	// AutoTitle titles a session after its first answer, with one short
	// model call (DEVPILOT_AUTO_TITLE, on by default).
	AutoTitle bool
	// TurnLease bounds how long a running chat turn may go without a
	// heartbeat before it is taken for lost with its replica and ended
	// (turn_lost); it heartbeats every tenth of it.
	TurnLease time.Duration
}

// Variable names read by Load.
const (
	EnvDatabaseURL    = "DEVPILOT_DATABASE_URL"
	EnvDatabaseConns  = "DEVPILOT_DATABASE_MAX_CONNS"
	EnvHTTPAddr       = "DEVPILOT_HTTP_ADDR"
	EnvDataDir        = "DEVPILOT_DATA_DIR"
	EnvSecretKey      = "DEVPILOT_SECRET_KEY"
	EnvLLMModel       = "DEVPILOT_LLM_MODEL"
	EnvPublicURL      = "DEVPILOT_PUBLIC_URL"
	EnvLogFormat      = "DEVPILOT_LOG_FORMAT"
	EnvLogLevel       = "DEVPILOT_LOG_LEVEL"
	EnvRequestTimeout = "DEVPILOT_REQUEST_TIMEOUT"
	EnvShutdownGrace  = "DEVPILOT_SHUTDOWN_GRACE"
	EnvAuthCacheTTL   = "DEVPILOT_AUTH_CACHE_TTL"
	EnvBodyLimit      = "DEVPILOT_BODY_LIMIT"
	EnvBodyTimeout    = "DEVPILOT_BODY_READ_TIMEOUT"
	EnvCORSOrigins    = "DEVPILOT_CORS_ORIGINS"
	EnvRateRequests   = "DEVPILOT_RATE_LIMIT_REQUESTS"
	EnvRateWindow     = "DEVPILOT_RATE_LIMIT_WINDOW"
	EnvLogPoll        = "DEVPILOT_LOG_FOLLOW_INTERVAL"
	EnvLogFollowFor   = "DEVPILOT_LOG_FOLLOW_MAX"
	// EnvMCPRequestTimeout and EnvMCPWatchInterval set
	// Config.MCPRequestTimeout and Config.MCPWatchInterval.
	EnvMCPRequestTimeout = "DEVPILOT_MCP_REQUEST_TIMEOUT"
	EnvMCPWatchInterval  = "DEVPILOT_MCP_WATCH_INTERVAL"
	EnvOpenAIKey         = "OPENAI_API_KEY"
	EnvOpenAIBaseURL     = "OPENAI_BASE_URL"
	EnvLLMTimeout        = "DEVPILOT_LLM_TIMEOUT"
	EnvLLMStructured     = "DEVPILOT_LLM_STRUCTURED_OUTPUT"
	EnvMaxToolRounds     = "DEVPILOT_MAX_TOOL_ROUNDS"
	EnvSpecMaxTokens     = "DEVPILOT_SPEC_MAX_TOKENS"
	EnvSpecTimeout       = "DEVPILOT_SPEC_CALL_TIMEOUT"
	EnvSpecParallel      = "DEVPILOT_SPEC_CONCURRENCY"
	// EnvSpecTemperature is SpecConfig.Temperature: one number from 0 to 2
	// for every stage ("0.2"), or stage=number pairs separated by commas
	// ("scope=0.7,prd=0.3,prps=0"), with at most one bare number for the
	// stages not named.
	EnvSpecTemperature = "DEVPILOT_SPEC_TEMPERATURE"
	// EnvSpecSeed is SpecConfig.Seed: a whole number, for every stage.
	EnvSpecSeed       = "DEVPILOT_SPEC_SEED"
	EnvMaxTokens      = "DEVPILOT_MAX_TOKENS"
	EnvConfirmTTL     = "DEVPILOT_CONFIRMATION_TTL"
	EnvAWSEndpoint    = "AWS_ENDPOINT_URL"
	EnvGitHubClientID = "GITHUB_CLIENT_ID"
	EnvGitHubSecret   = "GITHUB_CLIENT_SECRET"
	EnvGitHubURL      = "GITHUB_URL"
	EnvGitHubAPIURL   = "GITHUB_API_URL"
	EnvGitHubWebhook  = "GITHUB_WEBHOOK_SECRET"
	EnvRealtimeModel  = "DEVPILOT_REALTIME_MODEL"
	EnvRealtimeVoice  = "DEVPILOT_REALTIME_VOICE"
	EnvRealtimeTTL    = "DEVPILOT_REALTIME_TOKEN_TTL"
	EnvTranscribe     = "DEVPILOT_TRANSCRIBE_MODEL"
	EnvSandbox        = "DEVPILOT_SANDBOX"
	EnvWorkerJobs     = "DEVPILOT_WORKER_CONCURRENCY"
	EnvWorkerAddr     = "DEVPILOT_WORKER_ADDR"
	EnvJobRescueAfter = "DEVPILOT_JOB_RESCUE_AFTER"
	// EnvPublishAllowPrivate set to 1 lets publishing targets (webhooks,
	// WordPress sites) be loopback and private addresses: for tests and
	// sandboxes only. Default 0.
	EnvPublishAllowPrivate = "DEVPILOT_PUBLISH_ALLOW_PRIVATE"
	// EnvMCPListTimeout and EnvMCPCallTimeout are Config.MCPListTimeout
	// and Config.MCPCallTimeout.
	EnvMCPListTimeout = "DEVPILOT_MCP_LIST_TIMEOUT"
	EnvMCPCallTimeout = "DEVPILOT_MCP_CALL_TIMEOUT"
	// EnvCloudScaleConfirmAbove is Config.CloudScaleConfirmAbove.
	EnvCloudScaleConfirmAbove = "DEVPILOT_CLOUD_SCALE_CONFIRM_ABOVE"
)

// The variables of SignInConfig.
const (
	EnvOIDCIssuer       = "DEVPILOT_OIDC_ISSUER"
	EnvOIDCClientID     = "DEVPILOT_OIDC_CLIENT_ID"
	EnvOIDCClientSecret = "DEVPILOT_OIDC_CLIENT_SECRET"
	EnvOIDCRedirectURL  = "DEVPILOT_OIDC_REDIRECT_URL"
	EnvOIDCGroupsClaim  = "DEVPILOT_OIDC_GROUPS_CLAIM"
	EnvOIDCOrg          = "DEVPILOT_OIDC_ORG"
	EnvOIDCDomains      = "DEVPILOT_OIDC_ALLOWED_DOMAINS"
	EnvOIDCGroups       = "DEVPILOT_OIDC_ALLOWED_GROUPS"
	EnvOIDCAdminGroups  = "DEVPILOT_OIDC_ADMIN_GROUPS"
	EnvSessionTTL       = "DEVPILOT_SESSION_TTL"
)

// DefaultWorkerAddr is where the worker command serves its probes and
// metrics unless DEVPILOT_WORKER_ADDR says otherwise: loopback only, so that
// a worker exposes nothing to the network until told to (":9091" exposes
// them on every interface).
const DefaultWorkerAddr = "127.0.0.1:9091"

// EnvSpecContextBudget is the variable of Config.SpecContextBudget, in
// tokens.
const EnvSpecContextBudget = "DEVPILOT_SPEC_CONTEXT_BUDGET"

// EnvAutoTitle is the variable of AssistantConfig.AutoTitle: 1 (the
// default) titles every chat session after its first answer, 0 leaves
// titles to POST /api/v1/agent/generate-title.
const EnvAutoTitle = "DEVPILOT_AUTO_TITLE"

// EnvMaxTurnsPerUser is the variable of AssistantConfig.MaxTurnsPerUser
// (default 8, 0 to 1000, 0 for no cap).
const EnvMaxTurnsPerUser = "DEVPILOT_MAX_TURNS_PER_USER"

// EnvTurnLease is the variable of AssistantConfig.TurnLease (default 20s,
// at least 1s).
const EnvTurnLease = "DEVPILOT_TURN_LEASE"

// EnvWebhookReadsPerClient is the variable of Config.WebhookReadsPerClient
// (1 to 1000). Behind a reverse proxy, which is one address for every
// delivery, raise it to the core's bound on reads at once (16) to lift it.
const EnvWebhookReadsPerClient = "DEVPILOT_WEBHOOK_READS_PER_CLIENT"

// EnvOrgMonthlyTokens is the variable of Config.OrgMonthlyTokens.
const EnvOrgMonthlyTokens = "DEVPILOT_ORG_MONTHLY_TOKENS"

// ProviderVariables returns the settings of real providers: any of them
// set turns the sandbox off in run mode, unless its value is the public
// default (OPENAI_BASE_URL=https://api.openai.com/v1,
// GITHUB_URL=https://github.com, GITHUB_API_URL=https://api.github.com).
// The AWS ones are those that give the SDK credentials or send it elsewhere
// than AWS.
func ProviderVariables() []string {
	return []string{
		EnvOpenAIKey, EnvOpenAIBaseURL,
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE",
		EnvAWSEndpoint, "AWS_ENDPOINT_URL_STS", "AWS_ENDPOINT_URL_ECS", "AWS_ENDPOINT_URL_CLOUDWATCH_LOGS",
		"AWS_ENDPOINT_URL_LAMBDA", "AWS_ENDPOINT_URL_COST_EXPLORER", "AWS_ENDPOINT_URL_AMPLIFY",
		EnvGitHubClientID, EnvGitHubSecret, EnvGitHubWebhook, EnvGitHubURL, EnvGitHubAPIURL,
		EnvAnthropicKey, EnvAnthropicBaseURL, EnvBedrockRoleARN, EnvBedrockEndpoint,
	}
}

// publicDefaults are the values of provider variables that name the public
// service the adapters use anyway: such a value is no provider setting (it
// keeps the sandbox on, and Load reads it as unset). GitHub Actions sets
// GITHUB_API_URL=https://api.github.com on every runner, for one.
var publicDefaults = map[string]string{
	EnvOpenAIBaseURL: "https://api.openai.com/v1",
	EnvGitHubURL:     "https://github.com",
	EnvGitHubAPIURL:  "https://api.github.com",
}

// isPublicDefault reports whether v is name's public default, ignoring a
// trailing slash and the case of the scheme and host.
func isPublicDefault(name, v string) bool {
	def, ok := publicDefaults[name]
	if !ok {
		return false
	}
	u, err := url.Parse(strings.TrimSpace(v))
	if err != nil || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return false
	}
	got := strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) + strings.TrimRight(u.Path, "/")
	return got == def
}

// LoadOption changes what Load reads besides the environment.
type LoadOption func(*loadOptions)

type loadOptions struct{ sandboxFlag bool }

// WithSandboxFlag is serve's --sandbox flag: it turns the sandbox on as
// DEVPILOT_SANDBOX=1 does.
func WithSandboxFlag() LoadOption { return func(o *loadOptions) { o.sandboxFlag = true } }

// Load reads the configuration for mode from getenv (os.Getenv in the
// binary). Every bad value is reported, each naming its variable.
// Config.Sandbox says how Load decides whether the sandbox runs.
func Load(mode Mode, getenv func(string) string, opts ...LoadOption) (Config, error) {
	var o loadOptions
	for _, opt := range opts {
		opt(&o)
	}
	r := reader{getenv: getenv}
	c := Config{Mode: mode}
	c.Sandbox, c.SandboxReason = r.sandbox(mode, o.sandboxFlag)
	c.DataDir = r.str(EnvDataDir, "./data")
	c.DatabaseURL = r.str(EnvDatabaseURL, "sqlite:"+filepath.Join(c.DataDir, "devpilot.db"))
	c.DatabaseMaxConns = int(r.number(EnvDatabaseConns, sqlstore.DefaultMaxConns, 2, 1000))
	defaultAddr := ":8080"
	if mode == ModeRun {
		defaultAddr = "127.0.0.1:8080"
	}
	c.HTTPAddr = r.addr(EnvHTTPAddr, defaultAddr)
	c.LLMModel = r.str(EnvLLMModel, "gpt-4o-mini")
	c.Spec = SpecConfig{
		MaxTokens:   int(r.number(EnvSpecMaxTokens, 16384, 1, 1<<20)),
		CallTimeout: r.duration(EnvSpecTimeout, 0),
		Concurrency: int(r.number(EnvSpecParallel, 4, 0, 32)),
		Temperature: r.temperatures(EnvSpecTemperature),
		Seed:        r.seed(EnvSpecSeed),
	}
	c.LLM = LLMConfig{
		APIKey:  r.str(EnvOpenAIKey, ""),
		BaseURL: r.url(EnvOpenAIBaseURL),
		Timeout: r.duration(EnvLLMTimeout, 2*time.Minute),
	}
	// OpenAI's API (and the sandbox's fake of it) enforces schemas in strict
	// mode; other OpenAI-compatible servers mostly compile them into
	// grammars, which lenient mode is for.
	defaultStructured := openai.StructuredLenient
	if c.Sandbox || c.LLM.BaseURL == "" {
		defaultStructured = openai.StructuredStrict
	}
	c.LLM.StructuredOutput, c.LLM.StructuredOutputByModel = r.structuredOutput(EnvLLMStructured, defaultStructured)
	c.Models = r.models(c.LLMModel, c.Sandbox || c.LLM.APIKey != "" || c.LLM.BaseURL != "")
	c.Assistant = AssistantConfig{
		MaxToolRounds:   int(r.number(EnvMaxToolRounds, 8, 1, 64)),
		MaxTokens:       int(r.number(EnvMaxTokens, 4096, 1, 1<<20)),
		ConfirmationTTL: r.duration(EnvConfirmTTL, 15*time.Minute),
	}
	c.Assistant.MaxTurnsPerUser = int(r.number(EnvMaxTurnsPerUser, 8, 0, 1000))
	c.Assistant.AutoTitle = r.oneOf(EnvAutoTitle, "1", "0", "1") == "1"
	if c.Assistant.TurnLease = r.duration(EnvTurnLease, 20*time.Second); c.Assistant.TurnLease < time.Second {
		r.fail(EnvTurnLease, "must be at least 1s")
	}
	c.SpecContextBudget = int(r.number(EnvSpecContextBudget, spec.DefaultContextBudget, 2000, 10_000_000))
	if r.str(EnvSpecContextBudget, "") == "" {
		c.SpecContextBudget = specContextBudget(c.SpecContextBudget, c.Spec.MaxTokens, c.Models)
	}
	c.OrgMonthlyTokens = r.number(EnvOrgMonthlyTokens, 0, 0, 1_000_000_000_000)
	c.WorkerJobs = int(r.number(EnvWorkerJobs, queue.DefaultMaxWorkers, 1, 1000))
	c.WorkerAddr = r.addr(EnvWorkerAddr, DefaultWorkerAddr)
	c.JobRescueAfter = r.duration(EnvJobRescueAfter, queue.DefaultRescueAfter)
	switch jobTimeout := queue.JobTimeout(c.JobRescueAfter); {
	case c.JobRescueAfter < 30*time.Second || c.JobRescueAfter > 24*time.Hour:
		r.fail(EnvJobRescueAfter, "must be from 30s to 24h")
	case jobTimeout < c.LLM.Timeout:
		r.fail(EnvJobRescueAfter, fmt.Sprintf("%s lets a job attempt run for %s (four fifths of it), less than one model call may take (%s %s)",
			c.JobRescueAfter, jobTimeout, EnvLLMTimeout, c.LLM.Timeout))
	}
	c.Voice = VoiceConfig{
		RealtimeModel:   r.str(EnvRealtimeModel, "gpt-realtime"),
		RealtimeVoice:   r.str(EnvRealtimeVoice, "alloy"),
		TokenTTL:        r.duration(EnvRealtimeTTL, 10*time.Minute),
		TranscribeModel: r.str(EnvTranscribe, "whisper-1"),
	}
	if c.Voice.TokenTTL < 10*time.Second || c.Voice.TokenTTL > 2*time.Hour {
		r.fail(EnvRealtimeTTL, "must be from 10s to 2h")
	}
	c.PublicURL = r.url(EnvPublicURL)
	c.AWSEndpoint = r.url(EnvAWSEndpoint)
	c.GitHub = GitHubConfig{
		ClientID:      r.str(EnvGitHubClientID, ""),
		ClientSecret:  r.str(EnvGitHubSecret, ""),
		WebURL:        r.url(EnvGitHubURL),
		APIURL:        r.url(EnvGitHubAPIURL),
		WebhookSecret: r.str(EnvGitHubWebhook, ""),
	}
	if (c.GitHub.ClientID == "") != (c.GitHub.ClientSecret == "") {
		r.fail(EnvGitHubClientID, "and "+EnvGitHubSecret+" must be set together")
	}
	c.SignIn = r.signIn(c.PublicURL, c.Sandbox)
	logFormat := "text"
	if mode == ModeServe || mode == ModeWorker {
		logFormat = "json"
	}
	c.LogFormat = r.oneOf(EnvLogFormat, logFormat, "text", "json")
	c.LogLevel = r.level(EnvLogLevel)
	c.RequestTimeout = r.duration(EnvRequestTimeout, 30*time.Second)
	c.BodyReadTimeout = r.duration(EnvBodyTimeout, 30*time.Second)
	c.CORSOrigins = r.origins(EnvCORSOrigins)
	c.ShutdownGrace = r.duration(EnvShutdownGrace, 10*time.Second)
	c.AuthCacheTTL = r.durationOrOff(EnvAuthCacheTTL, 5*time.Second, time.Minute)
	c.BodyLimit = r.number(EnvBodyLimit, 1<<20, 1, 1<<40)
	c.PublishAllowPrivate = r.oneOf(EnvPublishAllowPrivate, "0", "0", "1") == "1"
	c.MCPListTimeout = r.duration(EnvMCPListTimeout, 5*time.Second)
	c.MCPCallTimeout = r.duration(EnvMCPCallTimeout, 30*time.Second)
	c.CloudScaleConfirmAbove = int(r.number(EnvCloudScaleConfirmAbove, cloud.DefaultScaleConfirmAbove, 1, cloud.MaxDesiredCount))
	c.RateLimit = int(r.number(EnvRateRequests, 30, 0, 1_000_000))
	c.RateWindow = r.duration(EnvRateWindow, time.Minute)
	c.LogPoll = r.durationIn(EnvLogPoll, cloud.DefaultLogPoll, cloud.MinLogPoll, time.Minute)
	c.LogFollowFor = r.durationIn(EnvLogFollowFor, cloud.DefaultLogFollowFor, time.Second, time.Hour)
	c.MCPRequestTimeout = r.durationIn(EnvMCPRequestTimeout, httpapi.DefaultMCPCallTimeout, time.Second, 10*time.Minute)
	c.MCPWatchInterval = r.durationIn(EnvMCPWatchInterval, httpapi.DefaultMCPWatchInterval, 100*time.Millisecond, time.Minute)
	c.WebhookReadsPerClient = int(r.number(EnvWebhookReadsPerClient, httpapi.DefaultWebhookReadsPerClient, 1, 1000))
	c.Retention = r.retention(c.RateWindow)
	if tc, err := telemetry.TracingFromEnv(getenv); err != nil {
		r.errs = append(r.errs, err)
	} else {
		c.Tracing = tc
	}

	if key := getenv(EnvSecretKey); key != "" {
		keys, err := secretbox.ParseKeys(key)
		if err != nil {
			r.fail(EnvSecretKey, err.Error())
		}
		c.SecretKeys = keys
	} else {
		switch mode {
		case ModeRun:
			c.SecretKeyFile = filepath.Join(c.DataDir, "secret.key")
		case ModeServe, ModeWorker:
			r.fail(EnvSecretKey, "is required: a base64 32-byte key (generate one with: openssl rand -base64 32)")
		}
	}
	return c, errors.Join(r.errs...)
}

// CheckFiles checks who may read devpilot's local files before they are
// used. A secret key file (SecretKeyFile) that its group or others may
// read or write is refused: it opens every sealed credential, and a copy
// may already have been taken, so it should be replaced, not just chmodded.
// A data directory or SQLite database that others may read is used, with a
// warning on logger. Files that do not exist yet pass: devpilot creates them
// 0600 in 0700 directories. Errors: the key file's mode, naming the path.
func CheckFiles(cfg Config, logger *slog.Logger) error {
	if cfg.SecretKeyFile != "" {
		if fi, err := os.Stat(cfg.SecretKeyFile); err == nil && fi.Mode().Perm()&0o077 != 0 {
			return fmt.Errorf("secret key file %s has mode %#o: its group or other users may read it; "+
				"make it the owner's alone (chmod 600 %s), or, if it may have been copied, set %s to a new key",
				cfg.SecretKeyFile, fi.Mode().Perm(), cfg.SecretKeyFile, EnvSecretKey)
		}
	}
	seen := map[string]bool{}
	check := func(what, path string) {
		if seen[filepath.Clean(path)] {
			return
		}
		seen[filepath.Clean(path)] = true
		if fi, err := os.Stat(path); err == nil && fi.Mode().Perm()&0o007 != 0 {
			logger.Warn(fmt.Sprintf("%s %s has mode %#o: other users of this machine may read it; chmod o-rwx %s",
				what, path, fi.Mode().Perm(), path))
		}
	}
	if cfg.Mode == ModeRun {
		check("the data directory", cfg.DataDir)
	}
	if path, ok := strings.CutPrefix(cfg.DatabaseURL, "sqlite:"); ok && path != "" {
		check("the database", path)
		check("the database's directory", filepath.Dir(path))
	}
	return nil
}

type reader struct {
	getenv func(string) string
	errs   []error
}

func (r *reader) fail(name, problem string) {
	r.errs = append(r.errs, fmt.Errorf("%s %s", name, problem))
}

// origins reads a list of origins separated by commas or spaces.
func (r *reader) origins(name string) []string {
	list := strings.FieldsFunc(r.getenv(name), func(c rune) bool { return c == ',' || c == ' ' || c == '\t' })
	if err := httpapi.CheckOrigins(list); err != nil {
		r.fail(name, err.Error())
		return nil
	}
	return list
}

// list reads words separated by commas or spaces.
func (r *reader) list(name string) []string {
	return strings.FieldsFunc(r.getenv(name), func(c rune) bool { return c == ',' || c == ' ' || c == '\t' })
}

// signIn reads SignInConfig: all of it or none. Without a redirect URL,
// the callback is on the public URL (the sandbox's is known once it runs).
func (r *reader) signIn(publicURL string, sandbox bool) SignInConfig {
	c := SignInConfig{
		Issuer:       r.url(EnvOIDCIssuer),
		ClientID:     r.str(EnvOIDCClientID, ""),
		ClientSecret: r.str(EnvOIDCClientSecret, ""),
		RedirectURL:  r.url(EnvOIDCRedirectURL),
		GroupsClaim:  r.str(EnvOIDCGroupsClaim, "groups"),
		Policy: identity.SignInPolicy{
			Org:         r.str(EnvOIDCOrg, ""),
			Domains:     r.list(EnvOIDCDomains),
			Groups:      r.list(EnvOIDCGroups),
			AdminGroups: r.list(EnvOIDCAdminGroups),
			SessionTTL:  r.duration(EnvSessionTTL, identity.DefaultSessionTTL),
		},
	}
	if c.Policy.SessionTTL < 5*time.Minute || c.Policy.SessionTTL > 30*24*time.Hour {
		r.fail(EnvSessionTTL, "must be from 5m to 720h")
	}
	if c.Issuer == "" {
		if c.ClientID != "" {
			r.fail(EnvOIDCClientID, "is set without "+EnvOIDCIssuer)
		}
		return SignInConfig{}
	}
	if c.ClientID == "" {
		r.fail(EnvOIDCIssuer, "needs "+EnvOIDCClientID+" (and usually "+EnvOIDCClientSecret+")")
	}
	if c.RedirectURL == "" && publicURL == "" && !sandbox {
		r.fail(EnvOIDCIssuer, "needs "+EnvOIDCRedirectURL+" or "+EnvPublicURL+" for the callback's address")
	}
	admits := len(c.Policy.Domains)+len(c.Policy.Groups)+len(c.Policy.AdminGroups) > 0
	if admits && c.Policy.Org == "" {
		r.fail(EnvOIDCOrg, "is required to admit new users by "+EnvOIDCDomains+", "+EnvOIDCGroups+" or "+EnvOIDCAdminGroups)
	}
	return c
}

func (r *reader) str(name, def string) string {
	if v := strings.TrimSpace(r.getenv(name)); v != "" {
		return v
	}
	return def
}

func (r *reader) addr(name, def string) string {
	v := r.str(name, def)
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		r.fail(name, fmt.Sprintf("%q is not HOST:PORT", v))
		return v
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		r.fail(name, fmt.Sprintf("%q has no valid port (0 to 65535)", v))
	}
	return v
}

// sandbox decides Config.Sandbox and SandboxReason (see Config.Sandbox).
func (r *reader) sandbox(mode Mode, flag bool) (bool, string) {
	forced := r.str(EnvSandbox, "")
	switch forced {
	case "", "0", "1":
	default:
		r.fail(EnvSandbox, fmt.Sprintf("%q must be 1 (sandbox providers on) or 0 (off)", forced))
		return false, ""
	}
	if flag && forced == "0" {
		r.fail(EnvSandbox, "is 0, which contradicts --sandbox")
		return false, ""
	}
	var set []string
	for _, name := range ProviderVariables() {
		if v := strings.TrimSpace(r.getenv(name)); v != "" && !isPublicDefault(name, v) {
			set = append(set, name)
		}
	}
	ignoring := ""
	if len(set) > 0 {
		ignoring = " (ignoring " + strings.Join(set, ", ") + ")"
	}
	switch mode {
	case ModeWorker:
		if forced == "1" {
			r.fail(EnvSandbox, "is 1, but a worker cannot run the sandbox: its fake providers live in the memory of "+
				"the process that starts them; use `devpilot run`, which works the jobs itself")
		}
		return false, "worker never runs the sandbox"
	case ModeRun, ModeServe:
	default:
		return false, string(mode) + " starts no providers"
	}
	switch {
	case forced == "1":
		return true, EnvSandbox + "=1" + ignoring
	case forced == "0":
		return false, EnvSandbox + "=0"
	case flag:
		return true, "--sandbox" + ignoring
	case mode == ModeServe:
		return false, "serve runs the sandbox only with --sandbox or " + EnvSandbox + "=1"
	case len(set) > 0:
		return false, set[0] + " is set"
	}
	return true, "no provider settings in the environment (" + EnvOpenAIKey + ", AWS, GitHub)"
}

// structuredOutput reads a structured output setting: comma-separated
// entries, each a mode (the default of every model not named) or MODEL=MODE
// (that model's), where a mode is strict, lenient or json_object. Model
// names are the provider's, case and all; at most one entry names no model
// and at most one names each model.
func (r *reader) structuredOutput(name string, def openai.StructuredOutput) (openai.StructuredOutput, map[string]openai.StructuredOutput) {
	v := r.str(name, "")
	if v == "" {
		return def, nil
	}
	modes := make([]string, len(openai.StructuredOutputs))
	for i, m := range openai.StructuredOutputs {
		modes[i] = string(m)
	}
	allowed := strings.Join(modes, ", ")
	var byModel map[string]openai.StructuredOutput
	bare := false
	for entry := range strings.SplitSeq(v, ",") {
		entry = strings.TrimSpace(entry)
		model, mode, named := "", entry, false
		if i := strings.LastIndex(entry, "="); i >= 0 {
			model, mode, named = strings.TrimSpace(entry[:i]), strings.TrimSpace(entry[i+1:]), true
		}
		m := openai.StructuredOutput(mode)
		switch {
		case entry == "":
			r.fail(name, fmt.Sprintf("%q has an empty entry", v))
			return def, nil
		case !m.Valid():
			r.fail(name, fmt.Sprintf("%q: %q is not one of %s", v, mode, allowed))
			return def, nil
		case named && model == "":
			r.fail(name, fmt.Sprintf("%q: %q names no model before =", v, entry))
			return def, nil
		case !named && bare:
			r.fail(name, fmt.Sprintf("%q gives the default mode twice", v))
			return def, nil
		case !named:
			def, bare = m, true
		case byModel[model] != "":
			r.fail(name, fmt.Sprintf("%q gives model %q a mode twice", v, model))
			return def, nil
		default:
			if byModel == nil {
				byModel = map[string]openai.StructuredOutput{}
			}
			byModel[model] = m
		}
	}
	return def, byModel
}

// maxTemperature is the highest sampling temperature providers take.
const maxTemperature = 2

// temperatures reads a temperature for every stage, or per stage (see
// EnvSpecTemperature); nil when unset.
func (r *reader) temperatures(name string) map[ports.Stage]float64 {
	v := r.str(name, "")
	if v == "" {
		return nil
	}
	parse := func(text string) (float64, bool) {
		t, err := strconv.ParseFloat(strings.TrimSpace(text), 64)
		if err != nil || !(t >= 0 && t <= maxTemperature) {
			r.fail(name, fmt.Sprintf("%q: %q is not a number from 0 to %d", v, strings.TrimSpace(text), maxTemperature))
			return 0, false
		}
		return t, true
	}
	out := map[ports.Stage]float64{}
	var (
		def    float64
		hasDef bool
	)
	for entry := range strings.SplitSeq(v, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			r.fail(name, fmt.Sprintf("%q has an empty entry", v))
			return nil
		}
		stage, num, named := strings.Cut(entry, "=")
		if !named {
			if hasDef {
				r.fail(name, fmt.Sprintf("%q gives the temperature of every stage twice", v))
				return nil
			}
			t, ok := parse(entry)
			if !ok {
				return nil
			}
			def, hasDef = t, true
			continue
		}
		st := ports.Stage(strings.TrimSpace(stage))
		if !slices.Contains(ports.Stages, st) {
			r.fail(name, fmt.Sprintf("%q: %q is not a stage (%s)", v, st, stageNames()))
			return nil
		}
		if _, dup := out[st]; dup {
			r.fail(name, fmt.Sprintf("%q gives stage %s a temperature twice", v, st))
			return nil
		}
		t, ok := parse(num)
		if !ok {
			return nil
		}
		out[st] = t
	}
	if hasDef {
		for _, st := range ports.Stages {
			if _, ok := out[st]; !ok {
				out[st] = def
			}
		}
	}
	return out
}

func stageNames() string {
	names := make([]string, len(ports.Stages))
	for i, st := range ports.Stages {
		names[i] = string(st)
	}
	return strings.Join(names, ", ")
}

// seed reads a whole number; nil when unset.
func (r *reader) seed(name string) *int64 {
	v := r.str(name, "")
	if v == "" {
		return nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		r.fail(name, fmt.Sprintf("%q must be a whole number", v))
		return nil
	}
	return &n
}

func (r *reader) oneOf(name, def string, allowed ...string) string {
	v := r.str(name, def)
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	r.fail(name, fmt.Sprintf("%q must be one of %s", v, strings.Join(allowed, ", ")))
	return def
}

func (r *reader) level(name string) slog.Level {
	var l slog.Level
	if err := l.UnmarshalText([]byte(r.str(name, "info"))); err != nil {
		r.fail(name, fmt.Sprintf("%q must be debug, info, warn or error", r.getenv(name)))
	}
	return l
}

func (r *reader) duration(name string, def time.Duration) time.Duration {
	v := r.str(name, "")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		r.fail(name, fmt.Sprintf("%q must be a positive duration such as 30s", v))
		return def
	}
	return d
}

// durationIn is a duration from lo to hi.
func (r *reader) durationIn(name string, def, lo, hi time.Duration) time.Duration {
	v := r.str(name, "")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < lo || d > hi {
		r.fail(name, fmt.Sprintf("%q must be a duration from %s to %s", v, lo, hi))
		return def
	}
	return d
}

// durationOrOff is a duration from 0 (off) to hi.
func (r *reader) durationOrOff(name string, def, hi time.Duration) time.Duration {
	v := r.str(name, "")
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 || d > hi {
		r.fail(name, fmt.Sprintf("%q must be a duration from 0 (off) to %s", v, hi))
		return def
	}
	return d
}

func (r *reader) number(name string, def, lo, hi int64) int64 {
	v := r.str(name, "")
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		r.fail(name, fmt.Sprintf("%q must be a whole number from %d to %d", v, lo, hi))
		return def
	}
	return n
}

// url reads an http(s) URL without its trailing slash; "" when unset or
// equal to the variable's public default (see publicDefaults).
func (r *reader) url(name string) string {
	v := r.str(name, "")
	if v == "" || isPublicDefault(name, v) {
		return ""
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		r.fail(name, fmt.Sprintf("%q must be an http(s) URL", v))
	}
	return strings.TrimRight(v, "/")
}
