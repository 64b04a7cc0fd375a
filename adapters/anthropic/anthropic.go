// Package anthropic implements ports.LLM with Anthropic's official Go SDK
// (github.com/anthropics/anthropic-sdk-go/v2) over the Messages API: every
// call streams; text is passed on as it comes; tool_use blocks are
// assembled into complete tool calls; structured output is a forced call of
// a tool whose input schema is the answer's schema; the static system prefix
// and the tool definitions are marked for Anthropic's prompt cache; and
// provider failures are mapped to ports.Error kinds.
//
// The SDK's own retries are off (option.WithMaxRetries(0)): a failed call
// is returned at once, classified, for devpilot's retries and failover
// to decide what to do next.
package anthropic

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/devpilot/devpilot/ports"
)

// ProviderName is the name ChatResult.Provider carries for answers of this
// adapter.
const ProviderName = "anthropic"

// Defaults of Config.
const (
	DefaultBaseURL   = "https://api.anthropic.com"
	DefaultTimeout   = 120 * time.Second
	DefaultMaxTokens = 8192
)

// Config configures a Client.
type Config struct {
	// APIKey authenticates to the API. Required for Anthropic's own API
	// (BaseURL empty or DefaultBaseURL).
	APIKey string
	// BaseURL is the API's base URL, without /v1: DefaultBaseURL when
	// empty.
	BaseURL string
	// Model is the model a ChatRequest without a model of its own uses.
	// Required.
	Model string
	// Timeout bounds a whole Chat call; DefaultTimeout when zero or
	// negative.
	Timeout time.Duration
	// HTTPClient sends the requests; a new http.Client when nil.
	HTTPClient *http.Client
	// MaxTokens caps the answer of a ChatRequest whose MaxTokens is 0
	// (Anthropic requires a cap on every call); DefaultMaxTokens when zero
	// or negative.
	MaxTokens int
}

// String describes the configuration without its API key.
func (c Config) String() string {
	key := "none"
	if c.APIKey != "" {
		key = ports.RedactedText
	}
	return fmt.Sprintf("anthropic.Config{BaseURL: %q, Model: %q, APIKey: %s, Timeout: %s, MaxTokens: %d}",
		c.BaseURL, c.Model, key, c.Timeout, c.MaxTokens)
}

// GoString is String, so %#v does not print the API key either.
func (c Config) GoString() string { return c.String() }

// Client is a ports.LLM over Anthropic's Messages API. It is safe for
// concurrent use.
type Client struct {
	api       anthropic.Client
	apiKey    string
	model     string
	timeout   time.Duration
	maxTokens int
}

var _ ports.LLM = (*Client)(nil)

// New returns a Client for cfg. It returns an internal Error when Model is
// missing, BaseURL is not an http(s) URL, or the API key is missing for
// Anthropic's own API. Nothing is read from the environment: the SDK's
// defaults (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, profiles) are off, so
// what the caller configured is what is used.
func New(cfg Config) (*Client, error) {
	if cfg.Model == "" {
		return nil, ports.Errorf(ports.KindInternal, "anthropic: no model configured")
	}
	base := strings.TrimRight(cmp.Or(cfg.BaseURL, DefaultBaseURL), "/")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, ports.Errorf(ports.KindInternal, "anthropic: base URL %q is not an http(s) URL", cfg.BaseURL)
	}
	if cfg.APIKey == "" && base == DefaultBaseURL {
		return nil, ports.Errorf(ports.KindInternal, "anthropic: the Anthropic API needs an API key")
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	opts := []option.RequestOption{
		option.WithoutEnvironmentDefaults(),
		option.WithBaseURL(base + "/"),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
	}
	if cfg.APIKey != "" {
		// Anthropic's API takes the key as x-api-key; the SDK's
		// WithAPIKey sends it as a bearer token, which API gateways and
		// compatible servers do not all accept.
		opts = append(opts, option.WithHeader("X-Api-Key", cfg.APIKey))
	}
	c := &Client{
		api:       anthropic.NewClient(opts...),
		apiKey:    cfg.APIKey,
		model:     cfg.Model,
		timeout:   cfg.Timeout,
		maxTokens: cfg.MaxTokens,
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	if c.maxTokens <= 0 {
		c.maxTokens = DefaultMaxTokens
	}
	return c, nil
}

var errCallTimeout = errors.New("anthropic: call timeout")

// Chat implements ports.LLM. It streams one message, passing each piece of
// text to onDelta, and returns the whole answer with its tool calls
// complete. With a ResponseFormat, the answer is the input of the forced
// tool call (see buildParams), streamed to onDelta as it comes, the way
// the OpenAI adapter streams structured content, and returned as Content
// with FinishReason stop. Nothing is tried again. Errors: rate_limited
// (with RetryAfter), unavailable (overloaded, server errors, unreachable;
// with RetryAfter when the API gave one), timeout (Config.Timeout passed),
// invalid (Code context_length or invalid_request), upstream (Code
// truncated when the stream ended before message_stop; also rejected
// credentials and malformed streams), ctx's error when ctx ends, and
// onDelta's error as it was returned. On error the result holds the text
// received so far.
func (c *Client) Chat(ctx context.Context, req ports.ChatRequest, onDelta func(delta string) error) (ports.ChatResult, error) {
	b, err := c.buildParams(req)
	if err != nil {
		return ports.ChatResult{Provider: ProviderName}, err
	}
	callCtx, cancel := context.WithTimeoutCause(ctx, c.timeout, errCallTimeout)
	defer cancel()
	res, f := c.stream(callCtx, b, onDelta)
	res.Provider = ProviderName
	if f == nil {
		return res, nil
	}
	if f.callerErr != nil {
		return res, f.callerErr
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if callCtx.Err() != nil {
		return res, timeoutAfter(c.timeout)
	}
	return res, f.err
}

// stream runs one streamed request and reads it to its end.
func (c *Client) stream(ctx context.Context, b *built, onDelta func(string) error) (ports.ChatResult, *failure) {
	s := c.api.Messages.NewStreaming(ctx, b.params)
	defer func() { _ = s.Close() }()
	var (
		acc      anthropic.Message
		content  strings.Builder
		started  bool
		stopped  bool
		answerAt = int64(-1) // the index of the forced tool's block
	)
	partial := func() ports.ChatResult {
		return ports.ChatResult{Content: content.String(), Model: cmp.Or(acc.Model, b.params.Model), ID: acc.ID}
	}
	for s.Next() {
		ev := s.Current()
		started = true
		if err := acc.Accumulate(ev); err != nil {
			return partial(), &failure{err: ports.Wrap(ports.KindUpstream, err, msgMalformed)}
		}
		var text string
		switch ev.Type {
		case "content_block_start":
			if b.answerTool != "" && ev.ContentBlock.Type == "tool_use" && ev.ContentBlock.Name == b.answerTool && answerAt < 0 {
				answerAt = ev.Index
			}
		case "content_block_delta":
			switch ev.Delta.Type {
			case "text_delta":
				// Model output is cleaned as it comes (ports.CleanText).
				text = ports.CleanText(ev.Delta.Text)
				content.WriteString(text)
			case "input_json_delta":
				if ev.Index == answerAt {
					text = ports.CleanText(ev.Delta.PartialJSON)
				}
			}
		case "message_stop":
			stopped = true
		}
		if text != "" && onDelta != nil {
			if err := onDelta(text); err != nil {
				return partial(), &failure{callerErr: err}
			}
		}
	}
	if err := s.Err(); err != nil {
		return partial(), c.classify(err, started)
	}
	if !stopped {
		return partial(), &failure{err: truncated(errors.New("the stream ended before message_stop"))}
	}
	res := partial()
	for i, blk := range acc.Content {
		if blk.Type != "tool_use" {
			continue
		}
		if int64(i) == answerAt {
			res.Content = string(ports.CleanJSON(blk.Input))
			continue
		}
		res.ToolCalls = append(res.ToolCalls, ports.ToolCall{
			ID: blk.ID, Name: blk.Name, Arguments: string(ports.CleanJSON(blk.Input)),
		})
	}
	res.FinishReason = finishReason(acc.StopReason, len(res.ToolCalls) > 0, answerAt >= 0)
	u := acc.Usage
	res.Usage = ports.Usage{
		PromptTokens:     int(u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens),
		CompletionTokens: int(u.OutputTokens),
		CacheReadTokens:  int(u.CacheReadInputTokens),
		CacheWriteTokens: int(u.CacheCreationInputTokens),
	}
	return res, nil
}

// finishReason maps Anthropic's stop_reason. The forced call of a
// structured answer (answered) is a stop, not a tool call.
func finishReason(r anthropic.StopReason, hasCalls, answered bool) ports.FinishReason {
	switch r {
	case anthropic.StopReasonMaxTokens, anthropic.StopReasonModelContextWindowExceeded:
		return ports.FinishLength
	case anthropic.StopReasonRefusal:
		return ports.FinishContentFilter
	}
	if hasCalls {
		return ports.FinishToolCalls
	}
	if r == anthropic.StopReasonToolUse && !answered {
		return ports.FinishToolCalls
	}
	return ports.FinishStop
}
