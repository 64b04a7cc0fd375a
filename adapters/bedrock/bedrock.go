// Package bedrock implements ports.LLM with Amazon Bedrock's Converse API
// (aws-sdk-go-v2's bedrockruntime, ConverseStream): streamed text, tool use,
// structured output as a forced tool call, prompt caching with cachePoint
// blocks, and Bedrock's exceptions mapped to ports errors.
//
// Credentials are found as devpilot's cloud accounts find them: the default
// chain (environment, shared config and SSO, web identity, container and
// instance roles) or the credentials given, and, when a role is named, that
// role assumed through STS with its external id (adapters/aws). A model is
// a foundation model id ("anthropic.claude-…"), an inference profile id
// ("us.anthropic.claude-…") or an inference profile ARN.
package bedrock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"

	devaws "github.com/devpilot/devpilot/adapters/aws"
	"github.com/devpilot/devpilot/ports"
)

// ProviderName is what ChatResult.Provider says of an answer from Bedrock.
const ProviderName = "bedrock"

// Defaults of Config.
const (
	// DefaultTimeout bounds a Chat call, its retries included, when
	// Config.Timeout is not set: long enough for a long structured answer.
	DefaultTimeout = 5 * time.Minute
	// DefaultMaxRetries is how many times a call the service refused with
	// a throttling or server error is tried again before any output.
	DefaultMaxRetries = 2
	// DefaultRoleSessionName names the sessions of an assumed role.
	DefaultRoleSessionName = "devpilot-bedrock"
)

// maxBackoff bounds the SDK's wait between two attempts.
const maxBackoff = 8 * time.Second

// Config configures a Client.
type Config struct {
	// Region is the AWS region of the Bedrock runtime endpoint. Required.
	Region string
	// Model is the model a ChatRequest without a model of its own uses: a
	// model id, an inference profile id ("us.anthropic.claude-…") or an
	// inference profile ARN ("arn:aws:bedrock:…:inference-profile/…").
	// Required.
	Model string
	// Endpoint, when set, is the base URL of the Bedrock runtime API (a VPC
	// endpoint, a proxy, a fake) instead of AWS's. It does not apply to STS.
	Endpoint string
	// RoleARN, when set, is a role assumed through STS with the base
	// credentials (Credentials, or the default chain), ExternalID its
	// external id; the credentials are cached and renewed before they
	// expire.
	RoleARN, ExternalID string
	// Timeout bounds a whole Chat call, retries included; DefaultTimeout
	// when zero or negative.
	Timeout time.Duration
	// MaxRetries is how many times a call refused with a throttling or
	// server error is tried again (the SDK's standard retryer, only before
	// the stream has started): DefaultMaxRetries when zero, none when
	// negative.
	MaxRetries int
	// MaxTokens is inferenceConfig.maxTokens of a ChatRequest without
	// MaxTokens; 0 leaves it to the model's default.
	MaxTokens int
	// HTTPClient sends the requests (STS's for RoleARN included); the
	// SDK's default client when nil. Only the SDK's own client honours a
	// custom CA bundle (AWS_CA_BUNDLE): a client given must trust it itself.
	HTTPClient *http.Client
	// Credentials are the base credentials; nil loads the default chain.
	Credentials sdkaws.CredentialsProvider
	// PromptCache says whether cachePoint blocks are sent: PromptCacheAuto
	// (the zero value) for the models known to support them, and for any
	// model not known not to, until Bedrock refuses them for it.
	PromptCache PromptCache
}

// PromptCache is when a Client marks its requests' static prefix for
// Bedrock's prompt cache.
type PromptCache string

// The prompt cache settings.
const (
	// PromptCacheAuto sends cachePoint blocks after the system prompt and
	// the tools to Anthropic Claude models (but the first Claude 3 models),
	// after the system prompt only to Amazon Nova models, and after both to
	// a model it does not recognise (an application inference profile ARN)
	// until Bedrock refuses a cachePoint for that model; the request is then
	// sent again at once without them, and so are that model's later ones.
	PromptCacheAuto PromptCache = ""
	// PromptCacheOn always sends cachePoint blocks after the system prompt
	// and the tools.
	PromptCacheOn PromptCache = "on"
	// PromptCacheOff never sends cachePoint blocks.
	PromptCacheOff PromptCache = "off"
)

// String describes the configuration without credentials.
func (c Config) String() string {
	creds := "default chain"
	if c.Credentials != nil {
		creds = "given"
	}
	return fmt.Sprintf("bedrock.Config{Region: %q, Model: %q, Endpoint: %q, RoleARN: %q, Credentials: %s, Timeout: %s, MaxTokens: %d}",
		c.Region, c.Model, c.Endpoint, c.RoleARN, creds, c.Timeout, c.MaxTokens)
}

// GoString is String, so %#v prints no credentials either.
func (c Config) GoString() string { return c.String() }

// Client is a ports.LLM over Amazon Bedrock's ConverseStream. It is safe for
// concurrent use.
type Client struct {
	// newAPI makes the SDK client of one call: the SDK's clients share one
	// event-stream decoder (and its buffer) between their streams, so two
	// streams of one client corrupt each other's events. The credentials'
	// cache is the configuration's, shared by every call.
	newAPI      func() *bedrockruntime.Client
	model       string
	timeout     time.Duration
	maxTokens   int
	promptCache PromptCache

	// noCache holds the models Bedrock refused a cachePoint for, noForce
	// those it refused a forced tool choice for.
	noCache sync.Map
	noForce sync.Map
}

var _ ports.LLM = (*Client)(nil)

// New loads the AWS configuration (the default chain unless
// cfg.Credentials is set, then the role of cfg.RoleARN) and returns a
// Client. Credentials are only fetched by the first call. It returns an
// internal Error when Region or Model is missing, Endpoint is not an
// http(s) URL, PromptCache is unknown or the configuration cannot be loaded
// (a malformed shared config file named by the environment).
func New(ctx context.Context, cfg Config) (*Client, error) {
	return newClient(ctx, cfg, nil)
}

// newClient is New with the SDK retryer's backoff (nil: the SDK's
// exponential backoff with jitter).
func newClient(ctx context.Context, cfg Config, backoff retry.BackoffDelayer) (*Client, error) {
	if cfg.Region == "" {
		return nil, ports.Errorf(ports.KindInternal, "bedrock: no region configured")
	}
	if cfg.Model == "" {
		return nil, ports.Errorf(ports.KindInternal, "bedrock: no model configured")
	}
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, ports.Errorf(ports.KindInternal, "bedrock: endpoint %q is not an http(s) URL", cfg.Endpoint)
		}
	}
	switch cfg.PromptCache {
	case PromptCacheAuto, PromptCacheOn, PromptCacheOff:
	default:
		return nil, ports.Errorf(ports.KindInternal, "bedrock: unknown prompt cache setting %q", cfg.PromptCache)
	}
	opts := []func(*config.LoadOptions) error{config.WithRegion(cfg.Region)}
	if cfg.Credentials != nil {
		opts = append(opts, config.WithCredentialsProvider(cfg.Credentials))
	}
	// The client given is set after loading: the SDK refuses to load a
	// configuration naming a custom CA bundle (AWS_CA_BUNDLE) with a
	// client it cannot rebuild, and such a bundle is the caller's to put
	// in its own client's TLS roots.
	base, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, ports.Errorf(ports.KindInternal, "bedrock: loading the AWS configuration: %w", err)
	}
	if cfg.HTTPClient != nil {
		base.HTTPClient = cfg.HTTPClient
	}
	if cfg.RoleARN != "" {
		base.Credentials = devaws.AssumeRoleCredentials(base, cfg.RoleARN, cfg.ExternalID, DefaultRoleSessionName)
	}
	retries := cfg.MaxRetries
	switch {
	case retries == 0:
		retries = DefaultMaxRetries
	case retries < 0:
		retries = 0
	}
	apiOptions := func(o *bedrockruntime.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = sdkaws.String(strings.TrimRight(cfg.Endpoint, "/"))
		}
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = retries + 1
			so.MaxBackoff = maxBackoff
			so.RateLimiter = ratelimit.None
			if backoff != nil {
				so.Backoff = backoff
			}
		})
	}
	c := &Client{
		newAPI:      func() *bedrockruntime.Client { return bedrockruntime.NewFromConfig(base, apiOptions) },
		model:       cfg.Model,
		timeout:     cfg.Timeout,
		maxTokens:   cfg.MaxTokens,
		promptCache: cfg.PromptCache,
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	return c, nil
}

var errCallTimeout = errors.New("bedrock: call timeout")

// Chat implements ports.LLM with one ConverseStream call. Text is passed to
// onDelta as it arrives; tool calls are returned complete, their ids
// Bedrock's toolUseIds. A request with a ResponseFormat offers a tool
// named after the format whose input schema is the format's schema and
// forces its use: the input the model writes for it is streamed to onDelta
// as text and returned as the result's Content (finish reason stop), never
// as a tool call. A model Bedrock refuses a forced tool choice for (Meta's
// Llama, among others) is asked in the system prompt to answer with that
// tool instead, from then on; its text is the answer when it writes text.
// Temperature is held to 0..1, the range of Bedrock's models; Seed is not
// sent (Converse has none). The SDK tries a throttled or failed request
// again (see Config.MaxRetries) before the stream starts; nothing is tried
// again once it has. Errors: unavailable (throttling, with RetryAfter when the service
// sent one; service unavailable, internal server error, model not ready,
// the endpoint unreachable), timeout (Config.Timeout passed, or the model
// timed out), invalid (Code context_length for an input too long for the
// model, else invalid_request), upstream (Code truncated when the stream
// ended before messageStop; refused credentials; an exhausted quota; a
// model error), ctx's error when ctx ends, and onDelta's error as it was
// returned. On error the result holds the text received so far.
func (c *Client) Chat(ctx context.Context, req ports.ChatRequest, onDelta func(delta string) error) (ports.ChatResult, error) {
	model := cmp.Or(req.Model, c.model)
	res := ports.ChatResult{Model: model, Provider: ProviderName}
	callCtx, cancel := context.WithTimeoutCause(ctx, c.timeout, errCallTimeout)
	defer cancel()
	cache := c.cacheFor(model)
	_, refused := c.noForce.Load(model)
	force := !refused
	for {
		in, structured, err := c.buildInput(req, model, cache, force)
		if err != nil {
			return res, err
		}
		err = c.stream(callCtx, in, structured, onDelta, &res)
		if err == nil {
			return res, nil
		}
		var callerErr *callerError
		if errors.As(err, &callerErr) {
			return res, callerErr.err
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if callCtx.Err() != nil {
			return res, c.timeoutError()
		}
		if cache != noCachePoints && res.Content == "" && refusedCachePoint(err) && c.promptCache == PromptCacheAuto {
			c.noCache.Store(model, true)
			cache = noCachePoints
			continue
		}
		if force && structured != "" && res.Content == "" && refusedToolChoice(err) {
			c.noForce.Store(model, true)
			force = false
			continue
		}
		return res, classify(err)
	}
}

func (c *Client) timeoutError() *ports.Error {
	return ports.Wrap(ports.KindTimeout, errCallTimeout,
		fmt.Sprintf("the model provider did not finish answering within %s", c.timeout))
}

// callerError carries the error onDelta returned.
type callerError struct{ err error }

func (e *callerError) Error() string { return e.err.Error() }
func (e *callerError) Unwrap() error { return e.err }
