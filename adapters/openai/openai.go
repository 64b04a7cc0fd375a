// Package openai implements ports.LLM with go-openai, for OpenAI and any
// server that speaks its Chat Completions API: Azure OpenAI, Ollama, vLLM,
// the llama.cpp server. Every call streams, assembles tool calls out of the
// fragments each server sends in its own way, retries what is worth retrying
// before the caller has seen any text, and maps provider failures to
// ports.Error.
//
// The same Client implements ports.Transcriber (go-openai's audio
// transcriptions, which Azure deployments and local Whisper servers speak
// too) and ports.Realtime (OpenAI's realtime client secrets, over plain
// HTTP: go-openai has no realtime support, and Azure's realtime API is not
// supported).
package openai

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/devpilot/devpilot/ports"
)

// APIType selects the flavour of the API: where requests go and how they
// authenticate.
type APIType string

// The API flavours Config accepts.
const (
	// APITypeOpenAI is OpenAI and every OpenAI-compatible server: requests go
	// to BaseURL/chat/completions with "Authorization: Bearer APIKey" (no
	// header when APIKey is empty, as local servers expect).
	APITypeOpenAI APIType = "openai"
	// APITypeAzure is Azure OpenAI with an API key: requests go to
	// BaseURL/openai/deployments/{Model}/chat/completions?api-version=APIVersion
	// with an "api-key" header, so Model names the deployment.
	APITypeAzure APIType = "azure"
	// APITypeAzureAD is APITypeAzure authenticated by a Microsoft Entra ID
	// token passed as APIKey and sent as a bearer token.
	APITypeAzureAD APIType = "azure_ad"
)

// Defaults of Config.
const (
	DefaultBaseURL         = "https://api.openai.com/v1"
	DefaultTimeout         = 120 * time.Second
	DefaultMaxRetries      = 2
	DefaultAzureAPIVersion = "2024-10-21"

	DefaultRealtimeModel     = "gpt-realtime"
	DefaultRealtimeVoice     = "alloy"
	DefaultRealtimeExpiry    = 10 * time.Minute
	DefaultRealtimeTimeout   = 15 * time.Second
	DefaultTranscribeModel   = "whisper-1"
	DefaultTranscribeTimeout = 2 * time.Minute
)

// The range of client secret lifetimes OpenAI accepts.
const (
	MinRealtimeExpiry = 10 * time.Second
	MaxRealtimeExpiry = 2 * time.Hour
)

// Config configures a Client.
type Config struct {
	// APIKey authenticates to the provider. Required for OpenAI itself and
	// for Azure; local servers usually need none.
	APIKey string
	// BaseURL is the API's base URL, DefaultBaseURL when empty. For Azure it
	// is the resource endpoint, such as https://NAME.openai.azure.com.
	BaseURL string
	// Model is the model (for Azure, the deployment) a ChatRequest without a
	// model of its own uses. Required.
	Model string
	// Timeout bounds a whole Chat call, retries included; DefaultTimeout
	// when zero or negative.
	Timeout time.Duration
	// MaxRetries is how many times a failed call is tried again:
	// DefaultMaxRetries when zero, none when negative.
	MaxRetries int
	// HTTPClient sends the requests; a new http.Client when nil.
	HTTPClient *http.Client
	// APIType is the API flavour, APITypeOpenAI when empty.
	APIType APIType
	// APIVersion is the api-version of Azure requests,
	// DefaultAzureAPIVersion when empty. Ignored for APITypeOpenAI.
	APIVersion string
	// LegacyMaxTokens sends a ChatRequest's MaxTokens as max_tokens instead
	// of max_completion_tokens, for servers that predate the latter (Ollama,
	// older vLLM and llama.cpp releases). OpenAI's reasoning models reject
	// max_tokens.
	LegacyMaxTokens bool
	// StructuredOutput is how structured output is asked of models that
	// StructuredOutputByModel does not name: StructuredStrict when empty.
	StructuredOutput StructuredOutput
	// StructuredOutputByModel is the structured output capability of
	// particular models, by the model (for Azure, the deployment) a request
	// is sent to.
	StructuredOutputByModel map[string]StructuredOutput

	// RealtimeModel is the model of realtime sessions that do not name one,
	// DefaultRealtimeModel when empty.
	RealtimeModel string
	// RealtimeVoice is the voice of realtime sessions that do not name one,
	// DefaultRealtimeVoice when empty.
	RealtimeVoice string
	// RealtimeExpiry is how long a client secret stays valid when the
	// session does not say, DefaultRealtimeExpiry when zero; OpenAI accepts
	// MinRealtimeExpiry to MaxRealtimeExpiry.
	RealtimeExpiry time.Duration
	// RealtimeTimeout bounds a CreateClientSecret call,
	// DefaultRealtimeTimeout when zero or negative.
	RealtimeTimeout time.Duration
	// TranscribeModel is the model (for Azure, the deployment) of
	// transcriptions that do not name one, DefaultTranscribeModel when empty.
	TranscribeModel string
	// TranscribeTimeout bounds a Transcribe call, reading the audio
	// included; DefaultTranscribeTimeout when zero or negative.
	TranscribeTimeout time.Duration
}

// String describes the configuration without its API key.
func (c Config) String() string {
	key := "none"
	if c.APIKey != "" {
		key = ports.RedactedText
	}
	return fmt.Sprintf("openai.Config{APIType: %q, BaseURL: %q, Model: %q, APIKey: %s, Timeout: %s, MaxRetries: %d, RealtimeModel: %q, TranscribeModel: %q}",
		c.APIType, c.BaseURL, c.Model, key, c.Timeout, c.MaxRetries, c.RealtimeModel, c.TranscribeModel)
}

// GoString is String, so %#v does not print the API key either.
func (c Config) GoString() string { return c.String() }

// Client is a ports.LLM, ports.Transcriber and ports.Realtime over one
// OpenAI-compatible API. It is safe for concurrent use.
type Client struct {
	api             *goopenai.Client
	apiKey          string
	model           string
	timeout         time.Duration
	maxRetries      int
	legacyMaxTokens bool

	structured        StructuredOutput
	structuredByModel map[string]StructuredOutput

	apiType           APIType
	baseURL           string // without a trailing slash
	hc                *http.Client
	realtimeModel     string
	realtimeVoice     string
	realtimeExpiry    time.Duration
	realtimeTimeout   time.Duration
	transcribeModel   string
	transcribeTimeout time.Duration

	// Retry pacing: the first backoff, the largest, and the longest wait a
	// Retry-After may ask for before the call gives up instead.
	backoffBase  time.Duration
	backoffMax   time.Duration
	maxRetryWait time.Duration
	sleep        func(ctx context.Context, d time.Duration) error
	newCallID    func() string

	lastTools atomic.Pointer[toolSet] // see mapTools
}

var (
	_ ports.LLM         = (*Client)(nil)
	_ ports.Transcriber = (*Client)(nil)
	_ ports.Realtime    = (*Client)(nil)
)

// New returns a Client for cfg. It returns an internal Error when Model is
// missing, BaseURL is not an http(s) URL, APIType is unknown, APIKey is
// missing where the provider needs one, RealtimeExpiry is out of range, or a
// structured output capability is unknown.
func New(cfg Config) (*Client, error) {
	if cfg.Model == "" {
		return nil, ports.Errorf(ports.KindInternal, "openai: no model configured")
	}
	if e := cfg.RealtimeExpiry; e != 0 && (e < MinRealtimeExpiry || e > MaxRealtimeExpiry) {
		return nil, ports.Errorf(ports.KindInternal, "openai: realtime expiry %s is not between %s and %s",
			e, MinRealtimeExpiry, MaxRealtimeExpiry)
	}
	if cfg.StructuredOutput == "" {
		cfg.StructuredOutput = StructuredStrict
	}
	byModel := make(map[string]StructuredOutput, len(cfg.StructuredOutputByModel))
	for model, s := range cfg.StructuredOutputByModel {
		if !s.Valid() {
			return nil, ports.Errorf(ports.KindInternal, "openai: unknown structured output %q for model %q", s, model)
		}
		byModel[model] = s
	}
	if !cfg.StructuredOutput.Valid() {
		return nil, ports.Errorf(ports.KindInternal, "openai: unknown structured output %q", cfg.StructuredOutput)
	}
	if cfg.APIType == "" {
		cfg.APIType = APITypeOpenAI
	}
	if cfg.BaseURL == "" {
		if cfg.APIType != APITypeOpenAI {
			return nil, ports.Errorf(ports.KindInternal, "openai: Azure needs the resource endpoint as BaseURL")
		}
		cfg.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, ports.Errorf(ports.KindInternal, "openai: base URL %q is not an http(s) URL", cfg.BaseURL)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	var gc goopenai.ClientConfig
	switch cfg.APIType {
	case APITypeOpenAI:
		if cfg.APIKey == "" && strings.TrimRight(cfg.BaseURL, "/") == DefaultBaseURL {
			return nil, ports.Errorf(ports.KindInternal, "openai: the OpenAI API needs an API key")
		}
		gc = goopenai.DefaultConfig(cfg.APIKey)
		gc.BaseURL = cfg.BaseURL
	case APITypeAzure, APITypeAzureAD:
		if cfg.APIKey == "" {
			return nil, ports.Errorf(ports.KindInternal, "openai: Azure needs an API key or token")
		}
		gc = goopenai.DefaultAzureConfig(cfg.APIKey, cfg.BaseURL)
		if cfg.APIType == APITypeAzureAD {
			gc.APIType = goopenai.APITypeAzureAD
		}
		gc.APIVersion = cfg.APIVersion
		if gc.APIVersion == "" {
			gc.APIVersion = DefaultAzureAPIVersion
		}
		gc.AzureModelMapperFunc = func(model string) string { return model }
	default:
		return nil, ports.Errorf(ports.KindInternal, "openai: unknown API type %q", cfg.APIType)
	}
	gc.HTTPClient = recordingDoer{hc: hc}

	c := &Client{
		api:             goopenai.NewClientWithConfig(gc),
		apiKey:          cfg.APIKey,
		model:           cfg.Model,
		timeout:         cfg.Timeout,
		maxRetries:      cfg.MaxRetries,
		legacyMaxTokens: cfg.LegacyMaxTokens,
		backoffBase:     500 * time.Millisecond,
		backoffMax:      8 * time.Second,
		maxRetryWait:    30 * time.Second,
		sleep:           sleepCtx,
		newCallID:       func() string { return "call_" + crand.Text() },

		structured:        cfg.StructuredOutput,
		structuredByModel: byModel,

		apiType:           cfg.APIType,
		baseURL:           strings.TrimRight(cfg.BaseURL, "/"),
		hc:                hc,
		realtimeModel:     cmp.Or(cfg.RealtimeModel, DefaultRealtimeModel),
		realtimeVoice:     cmp.Or(cfg.RealtimeVoice, DefaultRealtimeVoice),
		realtimeExpiry:    cmp.Or(cfg.RealtimeExpiry, DefaultRealtimeExpiry),
		realtimeTimeout:   positiveOr(cfg.RealtimeTimeout, DefaultRealtimeTimeout),
		transcribeModel:   cmp.Or(cfg.TranscribeModel, DefaultTranscribeModel),
		transcribeTimeout: positiveOr(cfg.TranscribeTimeout, DefaultTranscribeTimeout),
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	switch {
	case c.maxRetries == 0:
		c.maxRetries = DefaultMaxRetries
	case c.maxRetries < 0:
		c.maxRetries = 0
	}
	return c, nil
}

// positiveOr returns d, or def when d is zero or negative.
func positiveOr(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

var errCallTimeout = errors.New("openai: call timeout")

// Chat implements ports.LLM. It streams the completion, passing each piece of
// text to onDelta, and returns the whole answer with its tool calls complete
// (calls the server sent without an id, or with an id already used, get a new
// one). Rate limits, server errors, dropped connections and cut streams are
// tried again, with exponential backoff and jitter that honours Retry-After,
// up to MaxRetries times, but only while no text has been received: once
// onDelta has seen text, the error is returned. Errors: rate_limited (with
// RetryAfter), unavailable, timeout (Config.Timeout passed), invalid (Code
// context_length or invalid_request), upstream (Code truncated when the
// stream ended before a finish_reason; also for rejected credentials, an
// exhausted quota, a malformed stream), ctx's error when ctx ends, and
// onDelta's error as it was returned. On error the result holds the text
// received so far.
func (c *Client) Chat(ctx context.Context, req ports.ChatRequest, onDelta func(delta string) error) (ports.ChatResult, error) {
	cl, err := c.buildRequest(req)
	if err != nil {
		return ports.ChatResult{}, err
	}
	callCtx, cancel := context.WithTimeoutCause(ctx, c.timeout, errCallTimeout)
	defer cancel()
	var res ports.ChatResult
	for attempt := 0; ; attempt++ {
		f := c.attempt(callCtx, cl, onDelta, &res)
		if f == nil {
			if req.ResponseFormat != nil {
				res.Content = string(ports.CleanJSON([]byte(res.Content)))
			}
			return res, nil
		}
		if f.callerErr != nil {
			return res, f.callerErr
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if callCtx.Err() != nil {
			return res, c.timeoutError()
		}
		if res.Content != "" || !f.retryable || attempt >= c.maxRetries {
			return res, f.err
		}
		wait := c.backoff(attempt, f.err.RetryAfter)
		if deadline, ok := callCtx.Deadline(); wait > c.maxRetryWait || (ok && time.Until(deadline) < wait) {
			return res, f.err
		}
		if err := c.sleep(callCtx, wait); err != nil {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			return res, c.timeoutError()
		}
	}
}

func (c *Client) timeoutError() *ports.Error { return timeoutAfter(c.timeout) }

// backoff is the wait before retry number attempt+1: exponential from
// backoffBase up to backoffMax, with equal jitter, and never shorter than
// what the provider asked for.
func (c *Client) backoff(attempt int, retryAfter time.Duration) time.Duration {
	d := c.backoffBase
	for i := 0; i < attempt && d < c.backoffMax; i++ {
		d *= 2
	}
	d = min(d, c.backoffMax)
	if half := int64(d / 2); half > 0 {
		d = time.Duration(half + rand.Int64N(half+1))
	}
	return max(d, retryAfter)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// attempt runs one streamed request, leaving what it received in res.
//
// The model's first byte is awaited in open, so that while a stream is idle
// only small frames of the adapter are on the goroutine's stack: the Go
// runtime shrinks a parked goroutine's stack only when it uses less than a
// quarter of it.
func (c *Client) attempt(ctx context.Context, cl *call, onDelta func(string) error, res *ports.ChatResult) *failure {
	stream, info, err := c.open(ctx, cl)
	if err != nil {
		*res = ports.ChatResult{Model: cl.req.Model}
		return c.classify(err, info, false)
	}
	defer stream.Close()
	return c.read(ctx, stream, info, cl.req.Model, onDelta, res)
}

// read reads a stream to its end into res.
func (c *Client) read(ctx context.Context, stream *goopenai.ChatCompletionStream, info *responseInfo, reqModel string, onDelta func(string) error, res *ports.ChatResult) *failure {
	var (
		content strings.Builder
		calls   assembler
		finish  goopenai.FinishReason
		usage   ports.Usage
		model   string
		id      string
	)
	partial := func() ports.ChatResult {
		return ports.ChatResult{Content: content.String(), Model: cmp.Or(model, reqModel), ID: id}
	}
	var chunk chunk
	for {
		// go-openai's Recv decodes each chunk with encoding/json into its
		// whole response type; decodeChunk reads what is used, several
		// times faster, with the same results and errors.
		raw, err := stream.RecvRaw()
		if err == nil {
			err = decodeChunk(raw, &chunk)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if finish != "" && ctx.Err() == nil {
				break
			}
			*res = partial()
			return c.classify(err, info, true)
		}
		if model == "" {
			model = chunk.Model
		}
		if id == "" {
			id = chunk.ID
		}
		if chunk.Usage != nil {
			usage = ports.Usage{PromptTokens: chunk.Usage.PromptTokens, CompletionTokens: chunk.Usage.CompletionTokens}
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue
			}
			// Model output is cleaned as it comes (ports.CleanText): each delta
			// is whole runes, decoded from the chunk's JSON.
			if text := ports.CleanText(ch.Delta.Content + ch.Delta.Refusal); text != "" {
				content.WriteString(text)
				if onDelta != nil {
					if err := onDelta(text); err != nil {
						*res = partial()
						return &failure{callerErr: err}
					}
				}
			}
			for _, tc := range ch.Delta.ToolCalls {
				calls.add(fragment{Index: tc.Index, ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
			}
			if ch.FinishReason != "" && ch.FinishReason != string(goopenai.FinishReasonNull) {
				finish = goopenai.FinishReason(ch.FinishReason)
			}
		}
	}
	if finish == "" {
		*res = partial()
		return &failure{err: truncated(errors.New("stream ended without a finish_reason")), retryable: true}
	}
	*res = partial()
	res.ToolCalls = c.withIDs(calls.result())
	res.FinishReason = finishReason(finish, len(res.ToolCalls) > 0)
	res.Usage = usage
	return nil
}

// open sends cl and returns its stream once the response has started: its
// headers and first byte have come (see recordingDoer).
func (c *Client) open(ctx context.Context, cl *call) (*goopenai.ChatCompletionStream, *responseInfo, error) {
	info := &responseInfo{call: cl}
	stream, err := c.api.CreateChatCompletionStream(context.WithValue(ctx, responseInfoKey{}, info), cl.req)
	return stream, info, err
}

// withIDs gives every call an id of its own, and cleans its arguments
// (ports.CleanJSON).
func (c *Client) withIDs(calls []ports.ToolCall) []ports.ToolCall {
	seen := make(map[string]bool, len(calls))
	for i := range calls {
		calls[i].Arguments = string(ports.CleanJSON([]byte(calls[i].Arguments)))
		if calls[i].ID == "" || seen[calls[i].ID] {
			calls[i].ID = c.newCallID()
		}
		seen[calls[i].ID] = true
	}
	return calls
}

// finishReason maps the provider's finish_reason. Servers that end a turn of
// tool calls with "stop" (Ollama does) report tool_calls.
func finishReason(r goopenai.FinishReason, hasCalls bool) ports.FinishReason {
	switch r {
	case goopenai.FinishReasonToolCalls, goopenai.FinishReasonFunctionCall:
		return ports.FinishToolCalls
	case goopenai.FinishReasonLength:
		return ports.FinishLength
	case goopenai.FinishReasonContentFilter:
		return ports.FinishContentFilter
	}
	if hasCalls {
		return ports.FinishToolCalls
	}
	return ports.FinishStop
}
