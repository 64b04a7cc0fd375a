// Package aws implements ports.CloudProvider with aws-sdk-go-v2: STS for
// identities and assumed roles, ECS, CloudWatch Logs, Lambda, Cost Explorer
// and Amplify.
//
// The base configuration is loaded once (config.LoadDefaultConfig), so the
// standard AWS environment keeps working: AWS_ENDPOINT_URL and
// AWS_ENDPOINT_URL_<SERVICE> for emulators and VPC endpoints, and the base
// credentials that sign AssumeRole. Each call copies it and adds the
// account's region and credentials: a static access key, or a role assumed
// with its external id through STS, whose credentials are cached per (role,
// external id, region) in a small bounded cache.
package aws

import (
	"container/list"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go/logging"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/devpilot/devpilot/ports"
)

// Defaults of Options.
const (
	DefaultTimeout         = 30 * time.Second
	DefaultMaxAttempts     = 3
	DefaultMaxBackoff      = 2 * time.Second
	DefaultRoleCacheSize   = 64
	DefaultRoleSessionName = "devpilot"
)

// Options configures a Provider. The zero value is usable.
type Options struct {
	// LoadOptions are passed to config.LoadDefaultConfig, such as
	// config.WithCredentialsProvider for the base credentials that assume
	// roles, or config.WithBaseEndpoint.
	LoadOptions []func(*config.LoadOptions) error
	// BaseEndpoint, when set, sends every service's requests to this URL
	// (an emulator, a proxy), overriding AWS_ENDPOINT_URL.
	BaseEndpoint string
	// HTTPClient sends every request, build log downloads included; the
	// SDK's default client when nil.
	HTTPClient *http.Client
	// MaxAttempts bounds the attempts of one request, retries of throttled
	// and failed requests included: DefaultMaxAttempts when zero.
	MaxAttempts int
	// MaxBackoff bounds the wait between attempts: DefaultMaxBackoff when
	// zero.
	MaxBackoff time.Duration
	// Timeout bounds each CloudProvider call, all its requests and retries
	// included: DefaultTimeout when zero.
	Timeout time.Duration
	// Clock tells the time of the default log window; the system clock when
	// nil.
	Clock ports.Clock
	// Logger receives one debug line per failed call and the SDK's
	// warnings; nothing is logged when nil. Lines never hold credentials.
	Logger *slog.Logger
	// RoleCacheSize bounds the cached assumed-role credential providers:
	// DefaultRoleCacheSize when zero.
	RoleCacheSize int
	// RoleSessionName names the sessions of assumed roles:
	// DefaultRoleSessionName when empty.
	RoleSessionName string
	// Metrics, when set, receives the devpilot_aws_calls_total counter (by
	// service, operation and outcome: ok, canceled or the kind of the
	// ports.Error the call's failure maps to) and the
	// devpilot_aws_call_duration_seconds histogram (by service and
	// operation) of every SDK call, AssumeRole included; a call's retries
	// are part of it. Collectors registered already are reused. Nothing is
	// measured when nil.
	Metrics prometheus.Registerer
	// Tracer, when set, puts a client span "<service>.<operation>" around
	// every SDK call (its retries included) under the caller's span, with
	// the request's region and the error's kind; nothing is traced when
	// nil.
	Tracer trace.TracerProvider
}

// Provider is a ports.CloudProvider for AWS, safe for concurrent use.
type Provider struct {
	base        sdkaws.Config
	httpClient  sdkaws.HTTPClient
	timeout     time.Duration
	clock       ports.Clock
	log         *slog.Logger
	sessionName string
	roles       *roleCache
}

var _ ports.CloudProvider = (*Provider)(nil)

// New loads the base AWS configuration and returns a Provider. It fails
// only when the configuration cannot be loaded (such as a malformed shared
// config file named by the environment).
func New(ctx context.Context, opts Options) (*Provider, error) {
	base, err := config.LoadDefaultConfig(ctx, opts.LoadOptions...)
	if err != nil {
		return nil, fmt.Errorf("aws: loading the configuration: %w", err)
	}
	if opts.BaseEndpoint != "" {
		base.BaseEndpoint = sdkaws.String(opts.BaseEndpoint)
	}
	if opts.HTTPClient != nil {
		base.HTTPClient = opts.HTTPClient
	}
	if base.HTTPClient == nil {
		base.HTTPClient = http.DefaultClient
	}
	base.HTTPClient = plainBodies{base.HTTPClient}
	attempts := opts.MaxAttempts
	if attempts <= 0 {
		attempts = DefaultMaxAttempts
	}
	backoff := opts.MaxBackoff
	if backoff <= 0 {
		backoff = DefaultMaxBackoff
	}
	base.Retryer = func() sdkaws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = attempts
			o.MaxBackoff = backoff
		})
	}
	base.RetryMaxAttempts, base.RetryMode = 0, ""

	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	base.Logger = sdkLogger{log}
	base.ClientLogMode = 0
	if opts.Metrics != nil {
		base.APIOptions = append(base.APIOptions, newCallMetrics(opts.Metrics).addTo)
	}
	if opts.Tracer != nil {
		base.APIOptions = append(base.APIOptions, newCallSpans(opts.Tracer).addTo)
	}

	p := &Provider{
		base:        base,
		httpClient:  base.HTTPClient,
		timeout:     opts.Timeout,
		clock:       opts.Clock,
		log:         log,
		sessionName: opts.RoleSessionName,
		roles:       newRoleCache(opts.RoleCacheSize),
	}
	if p.timeout <= 0 {
		p.timeout = DefaultTimeout
	}
	if p.clock == nil {
		p.clock = systemClock{}
	}
	if p.sessionName == "" {
		p.sessionName = DefaultRoleSessionName
	}
	return p, nil
}

// plainBodies sends each request with a body that hides the WriterTo of
// the SDK's request bodies. smithy-go closes a request body as soon as the
// response has arrived, and the WriteTo of a closed body fails with io.EOF;
// when net/http's last read of the body (after Content-Length bytes) comes
// after that close (rare over a network, frequent on loopback under load),
// it tears the connection down while the response is read, and the SDK
// retries a call AWS has already carried out: a second deployment or
// invocation (see aws/aws-sdk-go-v2#2737). A plain Read reports the closed
// body as a clean end.
type plainBodies struct{ next sdkaws.HTTPClient }

// Do sends r through the wrapped client with a plain body.
func (c plainBodies) Do(r *http.Request) (*http.Response, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return c.next.Do(r)
	}
	plain := r.WithContext(r.Context())
	plain.Body = plainBody{r.Body}
	return c.next.Do(plain)
}

type plainBody struct{ io.ReadCloser }

type systemClock struct{}

// Now returns the current time in UTC.
func (systemClock) Now() time.Time { return time.Now().UTC() }

// sdkLogger forwards the SDK's log lines (warnings and, when enabled, debug
// lines; request and response logging stays off) to slog.
type sdkLogger struct{ log *slog.Logger }

// Logf logs one SDK line: warnings as warnings, anything else at debug level.
func (l sdkLogger) Logf(c logging.Classification, format string, v ...any) {
	level := slog.LevelDebug
	if c == logging.Warn {
		level = slog.LevelWarn
	}
	l.log.Log(context.Background(), level, "aws sdk: "+fmt.Sprintf(format, v...))
}

// session is one call's configuration and credentials.
type session struct {
	cfg   sdkaws.Config
	creds ports.CloudCredentials
}

// start validates c, bounds ctx with the call timeout and returns the
// call's session.
func (p *Provider) start(ctx context.Context, c ports.CloudCredentials) (context.Context, context.CancelFunc, *session, error) {
	if c.Region == "" {
		return nil, nil, nil, ports.Invalid("aws: the account has no region", ports.FieldError{Field: "region", Reason: "required"})
	}
	cfg := p.base.Copy()
	cfg.Region = c.Region
	switch c.Mode {
	case ports.AuthAccessKey:
		if c.AccessKeyID == "" || c.SecretAccessKey == "" {
			return nil, nil, nil, ports.Invalid("aws: access_key authentication needs an access key id and a secret access key")
		}
		cfg.Credentials = credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, "")
	case ports.AuthAssumeRole:
		if c.RoleARN == "" {
			return nil, nil, nil, ports.Invalid("aws: assume_role authentication needs a role ARN",
				ports.FieldError{Field: "auth.role_arn", Reason: "required"})
		}
		cfg.Credentials = p.roles.get(roleKey{arn: c.RoleARN, externalID: c.ExternalID, region: c.Region}, p.assumeRole)
	default:
		return nil, nil, nil, ports.Invalid(fmt.Sprintf("aws: unknown authentication mode %q", c.Mode))
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	return ctx, cancel, &session{cfg: cfg, creds: c}, nil
}

// assumeRole returns a cached credentials provider assuming k's role with
// the base credentials.
func (p *Provider) assumeRole(k roleKey) *sdkaws.CredentialsCache {
	cfg := p.base.Copy()
	cfg.Region = k.region
	return AssumeRoleCredentials(cfg, k.arn, k.externalID, p.sessionName)
}

// AssumeRoleCredentials returns cached credentials of the role roleARN,
// assumed through STS (in base's region, at base's endpoint) with base's
// credentials, the external id when it is not empty, and the session name
// (DefaultRoleSessionName when empty): how cloud accounts and other AWS
// clients of devpilot (Amazon Bedrock) assume roles. The role is assumed at
// the first use and again before its credentials expire; a failure is the
// error of the call that needed them.
func AssumeRoleCredentials(base sdkaws.Config, roleARN, externalID, sessionName string) *sdkaws.CredentialsCache {
	if sessionName == "" {
		sessionName = DefaultRoleSessionName
	}
	client := sts.NewFromConfig(base)
	provider := stscreds.NewAssumeRoleProvider(client, roleARN, func(o *stscreds.AssumeRoleOptions) {
		o.RoleSessionName = sessionName
		if externalID != "" {
			o.ExternalID = sdkaws.String(externalID)
		}
	})
	return sdkaws.NewCredentialsCache(provider)
}

type roleKey struct{ arn, externalID, region string }

type roleEntry struct {
	key   roleKey
	cache *sdkaws.CredentialsCache
}

// roleCache keeps the most recently used assumed-role providers.
type roleCache struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *roleEntry, most recent first
	items map[roleKey]*list.Element
}

func newRoleCache(size int) *roleCache {
	if size <= 0 {
		size = DefaultRoleCacheSize
	}
	return &roleCache{max: size, order: list.New(), items: map[roleKey]*list.Element{}}
}

func (c *roleCache) get(k roleKey, create func(roleKey) *sdkaws.CredentialsCache) *sdkaws.CredentialsCache {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		c.order.MoveToFront(el)
		return el.Value.(*roleEntry).cache
	}
	e := &roleEntry{key: k, cache: create(k)}
	c.items[k] = c.order.PushFront(e)
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.items, last.Value.(*roleEntry).key)
	}
	return e.cache
}
