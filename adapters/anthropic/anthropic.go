// Package anthropic implements ports.LLM with Anthropic's official Go SDK
// (github.com/anthropics/anthropic-sdk-go/v2) over the Messages API: every
// call streams; text is passed on as it comes; tool_use blocks are
// assembled into complete tool calls; structured output is a forced call of
// a tool whose input schema is the answer's schema; the static system prefix
// and the tool definitions are marked for Anthropic's prompt cache; and
// provider failures are mapped to ports.Error kinds.
//
// The SDK's own retries are off (option.WithMaxRetries(0)). By default a
// failed call is returned at once, classified, for devpilot's failover
// between providers to decide what to do next; Config.MaxRetries makes the
// adapter try a passing failure again itself, before any output.
package anthropic

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"math/rand/v2"
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
	// MaxRetries is how many times a call that failed before any of its
	// answer reached onDelta is tried again, when the failure may pass
	// (rate limited, overloaded, a server error, a dropped connection, a
	// cut stream): with exponential backoff and jitter, never sooner than
	// the API's Retry-After, and not when that asks for more than 30s.
	// None when zero or negative, the default, which leaves retrying to the
	// caller (devpilot's failover between providers).
	MaxRetries int
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

	// Retry pacing: how many retries, the first backoff, the largest, and
	// the longest wait a Retry-After may ask for before the call gives up
	// instead.
	maxRetries   int
	backoffBase  time.Duration
	backoffMax   time.Duration
	maxRetryWait time.Duration
}

var _ ports.LLM = (*Client)(nil)

// New returns a Client for cfg. It returns an internal Error when Model is
// missing, BaseURL is not an http(s) URL, or the API key is missing for
// Anthropic's own API. Nothing is read from the environment: the SDK's
// defaults (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, profiles) and its
// OpenTelemetry spans are off, so what the caller configured is what is
// used.
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
		// devpilot traces model calls itself (telemetry.TraceLLM and the
		// traced HTTP client a host passes): the SDK's spans would
		// duplicate those, and carry prompts when
		// ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE says so.
		option.WithoutOpenTelemetry(),
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

		maxRetries:   max(cfg.MaxRetries, 0),
		backoffBase:  500 * time.Millisecond,
		backoffMax:   8 * time.Second,
		maxRetryWait: 30 * time.Second,
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
// with FinishReason stop. A failure that may pass is tried again as
// Config.MaxRetries says, only while nothing has reached onDelta. Errors:
// rate_limited (with RetryAfter), unavailable (overloaded, server errors,
// unreachable; with RetryAfter when the API gave one), timeout
// (Config.Timeout passed), invalid (Code context_length or
// invalid_request), upstream (Code truncated when the stream ended before
// message_stop; also rejected credentials, billing and malformed streams),
// ctx's error when ctx ends, and onDelta's error as it was returned. On
// error the result holds the text received so far. Every result names
// ProviderName.
func (c *Client) Chat(ctx context.Context, req ports.ChatRequest, onDelta func(delta string) error) (ports.ChatResult, error) {
	b, err := c.buildParams(req)
	if err != nil {
		return ports.ChatResult{Provider: ProviderName}, err
	}
	callCtx, cancel := context.WithTimeoutCause(ctx, c.timeout, errCallTimeout)
	defer cancel()
	delivered := false
	deliver := onDelta
	if onDelta != nil {
		deliver = func(d string) error { delivered = true; return onDelta(d) }
	}
	for attempt := 0; ; attempt++ {
		res, f := c.stream(callCtx, b, deliver)
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
		if delivered || res.Content != "" || attempt >= c.maxRetries || !f.err.Retryable() {
			return res, f.err
		}
		wait := c.backoff(attempt, f.err.RetryAfter)
		if deadline, ok := callCtx.Deadline(); wait > c.maxRetryWait || (ok && time.Until(deadline) < wait) {
			return res, f.err
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-callCtx.Done():
			t.Stop()
			if err := ctx.Err(); err != nil {
				return res, err
			}
			return res, timeoutAfter(c.timeout)
		}
	}
}

// backoff is the wait before retry number attempt+1: exponential from
// backoffBase up to backoffMax, with equal jitter, and never shorter than
// what the API asked for.
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

// stream runs one streamed request and reads it to its end.
func (c *Client) stream(ctx context.Context, b *built, onDelta func(string) error) (ports.ChatResult, *failure) {
	s := c.api.Messages.NewStreaming(ctx, b.params)
	defer func() { _ = s.Close() }()
	var (
		msg      message
		content  strings.Builder
		started  bool
		stopped  bool
		answerAt = int64(-1) // the index of the forced tool's block
	)
	partial := func() ports.ChatResult {
		return ports.ChatResult{Content: content.String(), Model: cmp.Or(msg.model, b.params.Model), ID: msg.id}
	}
	for s.Next() {
		ev := s.Current()
		started = true
		if err := msg.add(&ev); err != nil {
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
	seen := map[string]bool{}
	for _, blk := range msg.blocks {
		if blk.typ != "tool_use" {
			continue
		}
		input := blk.input.String()
		if strings.TrimSpace(input) == "" {
			input = "{}"
		}
		input = string(ports.CleanJSON([]byte(input)))
		if blk.index == answerAt {
			res.Content = input
			continue
		}
		id := blk.id
		if id == "" || seen[id] { // every call needs an id of its own for its result
			id = "toolu_" + crand.Text()
		}
		seen[id] = true
		res.ToolCalls = append(res.ToolCalls, ports.ToolCall{ID: id, Name: blk.name, Arguments: input})
	}
	res.FinishReason = finishReason(msg.stop, len(res.ToolCalls) > 0, answerAt >= 0)
	u := msg.usage
	res.Usage = ports.Usage{
		PromptTokens:     int(u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens),
		CompletionTokens: int(u.OutputTokens),
		CacheReadTokens:  int(u.CacheReadInputTokens),
		CacheWriteTokens: int(u.CacheCreationInputTokens),
	}
	return res, nil
}

// message is what a stream said of its message: the SDK's Accumulate
// without its copies of the raw JSON, and keeping a tool's input as the
// model wrote it, valid JSON or not, for the core to judge.
type message struct {
	id, model string
	stop      anthropic.StopReason
	usage     anthropic.MessageDeltaUsage
	blocks    []*block
}

// block is one content block of a streamed message.
type block struct {
	index         int64
	typ, id, name string
	input         strings.Builder
}

// add applies one event. It returns an error for an event about a block
// that was not started, or a block started out of order.
func (m *message) add(ev *anthropic.MessageStreamEventUnion) error {
	switch ev.Type {
	case "message_start":
		m.id, m.model = ev.Message.ID, ev.Message.Model
		u := ev.Message.Usage
		m.usage = anthropic.MessageDeltaUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
			CacheCreationInputTokens: u.CacheCreationInputTokens, CacheReadInputTokens: u.CacheReadInputTokens}
	case "content_block_start":
		if ev.Index != int64(len(m.blocks)) {
			return fmt.Errorf("content block %d started after %d blocks", ev.Index, len(m.blocks))
		}
		cb := ev.ContentBlock
		m.blocks = append(m.blocks, &block{index: ev.Index, typ: cb.Type, id: cb.ID, name: cb.Name})
	case "content_block_delta":
		if ev.Index < 0 || ev.Index >= int64(len(m.blocks)) {
			return fmt.Errorf("a delta of content block %d, which was not started", ev.Index)
		}
		if ev.Delta.Type == "input_json_delta" {
			m.blocks[ev.Index].input.WriteString(ev.Delta.PartialJSON)
		}
	case "message_delta":
		m.stop = ev.Delta.StopReason
		// Every count is a total for the whole message; those not sent
		// keep what message_start said.
		u := ev.Usage
		m.usage.OutputTokens = u.OutputTokens
		if u.JSON.InputTokens.Valid() {
			m.usage.InputTokens = u.InputTokens
		}
		if u.JSON.CacheCreationInputTokens.Valid() {
			m.usage.CacheCreationInputTokens = u.CacheCreationInputTokens
		}
		if u.JSON.CacheReadInputTokens.Valid() {
			m.usage.CacheReadInputTokens = u.CacheReadInputTokens
		}
	}
	return nil
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
