package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
	"github.com/devpilot/devpilot/ports"
)

const testKey = "sk-devpilot-test-0123456789abcdef"

// waits records the backoff waits of a Client instead of sleeping them.
type waits struct {
	mu sync.Mutex
	ds []time.Duration
}

func (w *waits) sleep(ctx context.Context, d time.Duration) error {
	w.mu.Lock()
	w.ds = append(w.ds, d)
	w.mu.Unlock()
	return ctx.Err()
}

func (w *waits) get() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.ds)
}

// newTestClient returns a Client of the fake whose retries do not sleep.
func newTestClient(t testing.TB, f *fakeopenai.Server, configure ...func(*Config)) (*Client, *waits) {
	t.Helper()
	cfg := Config{APIKey: testKey, BaseURL: f.URL(), Model: "gpt-test"}
	for _, fn := range configure {
		fn(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := &waits{}
	c.sleep = w.sleep
	return c, w
}

func userSays(text string) ports.ChatRequest {
	return ports.ChatRequest{Messages: []ports.Message{{Role: ports.MessageUser, Content: text}}}
}

// deltas collects what Chat passes to onDelta.
type deltas struct {
	mu  sync.Mutex
	got []string
}

func (d *deltas) on(s string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.got = append(d.got, s)
	return nil
}

func (d *deltas) text() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return strings.Join(d.got, "")
}

func wantError(t *testing.T, err error, kind ports.Kind, code string) *ports.Error {
	t.Helper()
	e, ok := ports.AsError(err)
	if !ok {
		t.Fatalf("error %v (%T), want a ports.Error of kind %s", err, err, kind)
	}
	if e.Kind != kind || e.ErrorCode() != code {
		t.Fatalf("error kind %s code %s (%v), want %s %s", e.Kind, e.ErrorCode(), err, kind, code)
	}
	if strings.Contains(e.Message, testKey) {
		t.Errorf("message %q shows the API key", e.Message)
	}
	return e
}

func TestStreamsText(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	f.Enqueue(fakeopenai.Text("Hello there, how can I help?").WithUsage(12, 7).WithModel("gpt-test-2025"))
	c, _ := newTestClient(t, f)
	var d deltas
	res, err := c.Chat(t.Context(), userSays("hi"), d.on)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"Hello", " there,", " how", " can", " I", " help?"}; !slices.Equal(d.got, want) {
		t.Errorf("deltas %q, want %q", d.got, want)
	}
	want := ports.ChatResult{
		Content:      "Hello there, how can I help?",
		FinishReason: ports.FinishStop,
		Usage:        ports.Usage{PromptTokens: 12, CompletionTokens: 7},
		Model:        "gpt-test-2025",
	}
	if !equalResult(res, want) {
		t.Errorf("result %+v, want %+v", res, want)
	}
	reqs := f.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if !r.Stream || !r.IncludeUsage || r.Model != "gpt-test" || r.Header.Get("Authorization") != "Bearer "+testKey {
		t.Errorf("request stream %v usage %v model %q auth %q", r.Stream, r.IncludeUsage, r.Model, r.Header.Get("Authorization"))
	}
}

func equalResult(a, b ports.ChatResult) bool {
	return a.Content == b.Content && slices.Equal(a.ToolCalls, b.ToolCalls) && a.FinishReason == b.FinishReason &&
		a.Usage == b.Usage && a.Model == b.Model
}

func TestNilOnDelta(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	f.Enqueue(fakeopenai.Text("quiet answer"))
	c, _ := newTestClient(t, f)
	res, err := c.Chat(t.Context(), userSays("hi"), nil)
	if err != nil || res.Content != "quiet answer" {
		t.Fatalf("Chat = %+v, %v", res, err)
	}
}

func TestFinishReasons(t *testing.T) {
	t.Parallel()
	tests := []struct {
		resp fakeopenai.Response
		want ports.FinishReason
	}{
		{fakeopenai.Text("a").WithFinishReason("length"), ports.FinishLength},
		{fakeopenai.Text("a").WithFinishReason("content_filter"), ports.FinishContentFilter},
		{fakeopenai.Text("a").WithFinishReason("eos"), ports.FinishStop},
		{fakeopenai.ToolCalls(fakeopenai.Call{ID: "c", Name: "f", Arguments: "{}"}).WithFinishReason("stop"), ports.FinishToolCalls},
		{fakeopenai.ToolCalls(fakeopenai.Call{ID: "c", Name: "f", Arguments: "{}"}).WithFinishReason("function_call"), ports.FinishToolCalls},
	}
	for _, tt := range tests {
		t.Run(string(tt.want), func(t *testing.T) {
			t.Parallel()
			f := fakeopenai.New(t)
			f.Enqueue(tt.resp)
			c, _ := newTestClient(t, f)
			res, err := c.Chat(t.Context(), userSays("hi"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.FinishReason != tt.want {
				t.Errorf("finish %q, want %q", res.FinishReason, tt.want)
			}
		})
	}
}

func TestToolCalls(t *testing.T) {
	t.Parallel()
	weather := fakeopenai.Call{ID: "call_w", Name: "get_weather", Arguments: `{"city":"Paris","unit":"celsius"}`}
	clock := fakeopenai.Call{ID: "call_t", Name: "get_time", Arguments: `{"tz":"Europe/Paris"}`}
	noArgs := fakeopenai.Call{ID: "call_r", Name: "list_repos", Arguments: `{}`}
	port := func(cs ...fakeopenai.Call) []ports.ToolCall {
		var out []ports.ToolCall
		for _, c := range cs {
			out = append(out, ports.ToolCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
		}
		return out
	}
	both := []fakeopenai.Call{weather, clock}
	tests := []struct {
		name string
		resp fakeopenai.Response
		text string
		want []ports.ToolCall
	}{
		{"single", fakeopenai.ToolCalls(weather), "", port(weather)},
		{"parallel", fakeopenai.ToolCalls(weather, clock, noArgs), "", port(weather, clock, noArgs)},
		{"text then call", fakeopenai.Text("Let me check.").WithToolCalls(weather), "Let me check.", port(weather)},
		{"arguments split across many chunks", fakeopenai.ToolCalls(both...).SplitArguments(3), "", port(both...)},
		{"interleaved parallel calls", fakeopenai.ToolCalls(both...).SplitArguments(5).InterleaveToolCalls(), "", port(both...)},
		{"first index above 0", fakeopenai.ToolCalls(both...).FirstToolCallIndex(2).SplitArguments(4), "", port(both...)},
		{"duplicate entries in one chunk", fakeopenai.ToolCalls(both...).SplitArguments(6).DuplicateToolCallEntries(), "", port(both...)},
		{"ollama: no index", fakeopenai.ToolCalls(both...).WholeToolCalls().OmitToolCallIndex(), "", port(both...)},
		{"ollama: index 0 for every call", fakeopenai.ToolCalls(both...).WholeToolCalls().SameToolCallIndex(), "", port(both...)},
		{"ollama: all calls in one chunk at index 0", fakeopenai.ToolCalls(both...).ToolCallsInOneChunk().SameToolCallIndex(), "", port(both...)},
		{"ollama: finish stop", fakeopenai.ToolCalls(both...).WholeToolCalls().WithFinishReason("stop"), "", port(both...)},
		{"no index, split arguments", fakeopenai.ToolCalls(both...).OmitToolCallIndex().SplitArguments(4), "", port(both...)},
		{"same index, split arguments", fakeopenai.ToolCalls(both...).SameToolCallIndex().SplitArguments(4), "", port(both...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := fakeopenai.New(t)
			f.Enqueue(tt.resp)
			c, _ := newTestClient(t, f)
			var d deltas
			res, err := c.Chat(t.Context(), userSays("weather?"), d.on)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.ToolCalls, tt.want) {
				t.Errorf("tool calls\n %+v\nwant\n %+v", res.ToolCalls, tt.want)
			}
			if res.FinishReason != ports.FinishToolCalls {
				t.Errorf("finish %q", res.FinishReason)
			}
			if res.Content != tt.text || d.text() != tt.text {
				t.Errorf("content %q, deltas %q, want %q", res.Content, d.text(), tt.text)
			}
			for _, call := range res.ToolCalls {
				if !json.Valid([]byte(call.Arguments)) {
					t.Errorf("call %s: arguments %q", call.Name, call.Arguments)
				}
			}
		})
	}
}

func TestToolCallsWithoutIDsGetUniqueIDs(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	f.Enqueue(fakeopenai.ToolCalls(
		fakeopenai.Call{Name: "f", Arguments: `{"a":1}`},
		fakeopenai.Call{Name: "g", Arguments: `{"b":2}`},
	).OmitToolCallIDs().SplitArguments(2))
	c, _ := newTestClient(t, f)
	res, err := c.Chat(t.Context(), userSays("go"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ToolCalls) != 2 {
		t.Fatalf("calls %+v", res.ToolCalls)
	}
	a, b := res.ToolCalls[0], res.ToolCalls[1]
	if a.Name != "f" || a.Arguments != `{"a":1}` || b.Name != "g" || b.Arguments != `{"b":2}` {
		t.Errorf("calls %+v", res.ToolCalls)
	}
	if !strings.HasPrefix(a.ID, "call_") || !strings.HasPrefix(b.ID, "call_") || a.ID == b.ID {
		t.Errorf("ids %q %q, want distinct call_ ids", a.ID, b.ID)
	}
}

func TestTruncatedStream(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		resp     fakeopenai.Response
		wantText string
	}{
		{"clean end without finish_reason", fakeopenai.Text("The answer is").Truncated(), "The answer is"},
		{"connection cut", fakeopenai.Text("The answer is").AbortedAfter(2), "The answer"},
		{"tool call cut", fakeopenai.Text("Checking.").WithToolCalls(fakeopenai.Call{ID: "c", Name: "f", Arguments: `{"x":1}`}).TruncatedAfter(2), "Checking."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := fakeopenai.New(t)
			f.Enqueue(tt.resp, fakeopenai.Text("must not be requested"))
			c, _ := newTestClient(t, f)
			var d deltas
			res, err := c.Chat(t.Context(), userSays("q"), d.on)
			wantError(t, err, ports.KindUpstream, ports.CodeTruncated)
			if !errors.Is(err, &ports.Error{Kind: ports.KindUpstream, Code: ports.CodeTruncated}) {
				t.Errorf("errors.Is(truncated) failed for %v", err)
			}
			if d.text() != tt.wantText || res.Content != tt.wantText {
				t.Errorf("delivered %q, result %q, want %q", d.text(), res.Content, tt.wantText)
			}
			if len(res.ToolCalls) != 0 {
				t.Errorf("partial tool calls returned: %+v", res.ToolCalls)
			}
			if n := len(f.Requests()); n != 1 {
				t.Errorf("%d requests: a stream that delivered text was retried", n)
			}
		})
	}
}

func TestTruncatedBeforeAnyTextIsRetried(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	f.Enqueue(
		fakeopenai.ToolCalls(fakeopenai.Call{ID: "c", Name: "f", Arguments: `{"x":1}`}).SplitArguments(2).TruncatedAfter(2),
		fakeopenai.Text("").AbortedAfter(0),
		fakeopenai.ToolCalls(fakeopenai.Call{ID: "c", Name: "f", Arguments: `{"x":1}`}),
	)
	c, w := newTestClient(t, f)
	res, err := c.Chat(t.Context(), userSays("q"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []ports.ToolCall{{ID: "c", Name: "f", Arguments: `{"x":1}`}}; !slices.Equal(res.ToolCalls, want) {
		t.Errorf("calls %+v", res.ToolCalls)
	}
	if len(f.Requests()) != 3 || len(w.get()) != 2 {
		t.Errorf("%d requests, %d waits; want 3 and 2", len(f.Requests()), len(w.get()))
	}
}

func TestMalformedChunk(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	f.Enqueue(fakeopenai.Text("partial answer here").MalformedAfter(2))
	c, _ := newTestClient(t, f)
	var d deltas
	res, err := c.Chat(t.Context(), userSays("q"), d.on)
	e := wantError(t, err, ports.KindUpstream, string(ports.KindUpstream))
	if e.Message != msgMalformed {
		t.Errorf("message %q", e.Message)
	}
	if d.text() != "partial answer" || res.Content != "partial answer" {
		t.Errorf("delivered %q, result %q", d.text(), res.Content)
	}
	if len(f.Requests()) != 1 {
		t.Errorf("malformed stream was retried")
	}
}

func TestRetries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		script   []fakeopenai.Response
		minWaits []time.Duration // a lower bound for each wait
	}{
		{
			name:     "429 then success honours Retry-After",
			script:   []fakeopenai.Response{fakeopenai.RateLimited(time.Second), fakeopenai.Text("ok")},
			minWaits: []time.Duration{time.Second},
		},
		{
			name:     "retry-after-ms",
			script:   []fakeopenai.Response{fakeopenai.RateLimited(0).WithHeader("retry-after-ms", "1500"), fakeopenai.Text("ok")},
			minWaits: []time.Duration{1500 * time.Millisecond},
		},
		{
			name:     "500 twice then success",
			script:   []fakeopenai.Response{fakeopenai.ServerError(), fakeopenai.ServerError(), fakeopenai.Text("ok")},
			minWaits: []time.Duration{250 * time.Millisecond, 500 * time.Millisecond},
		},
		{
			name:     "503 then success",
			script:   []fakeopenai.Response{fakeopenai.Overloaded(), fakeopenai.Text("ok")},
			minWaits: []time.Duration{250 * time.Millisecond},
		},
		{
			name:     "connection dropped then success",
			script:   []fakeopenai.Response{fakeopenai.Hangup(), fakeopenai.Text("ok")},
			minWaits: []time.Duration{250 * time.Millisecond},
		},
		{
			name:     "non-JSON 502 from a proxy then success",
			script:   []fakeopenai.Response{fakeopenai.Error(http.StatusBadGateway, "<html>bad gateway</html>"), fakeopenai.Text("ok")},
			minWaits: []time.Duration{250 * time.Millisecond},
		},
		{
			name:     "error event before any text then success",
			script:   []fakeopenai.Response{fakeopenai.Text("x").FailAfter(0, fakeopenai.ServerError()), fakeopenai.Text("ok")},
			minWaits: []time.Duration{250 * time.Millisecond},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := fakeopenai.New(t)
			f.Enqueue(tt.script...)
			c, w := newTestClient(t, f)
			var d deltas
			res, err := c.Chat(t.Context(), userSays("q"), d.on)
			if err != nil {
				t.Fatal(err)
			}
			if res.Content != "ok" || d.text() != "ok" {
				t.Errorf("result %q, deltas %q", res.Content, d.text())
			}
			if n := len(f.Requests()); n != len(tt.script) {
				t.Errorf("%d requests, want %d", n, len(tt.script))
			}
			got := w.get()
			if len(got) != len(tt.minWaits) {
				t.Fatalf("waits %v, want %d", got, len(tt.minWaits))
			}
			for i, min := range tt.minWaits {
				if got[i] < min || got[i] > max(min, c.backoffMax) {
					t.Errorf("wait %d = %v, want in [%v, %v]", i, got[i], min, max(min, c.backoffMax))
				}
			}
		})
	}
}

func TestRetriesAreBounded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		maxRetries int
		requests   int
	}{
		{"default", 0, 3},
		{"one", 1, 2},
		{"none", -1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := fakeopenai.New(t)
			for range tt.requests {
				f.Enqueue(fakeopenai.ServerError().WithHeader("Retry-After", "3"))
			}
			c, w := newTestClient(t, f, func(c *Config) { c.MaxRetries = tt.maxRetries })
			_, err := c.Chat(t.Context(), userSays("q"), nil)
			e := wantError(t, err, ports.KindUnavailable, string(ports.KindUnavailable))
			if e.RetryAfter != 3*time.Second {
				t.Errorf("RetryAfter %v", e.RetryAfter)
			}
			if !errors.Is(err, ports.ErrUnavailable) {
				t.Errorf("errors.Is(ErrUnavailable) failed")
			}
			if n := len(f.Requests()); n != tt.requests || len(w.get()) != tt.requests-1 {
				t.Errorf("%d requests and %d waits, want %d and %d", n, len(w.get()), tt.requests, tt.requests-1)
			}
		})
	}
}

func TestRateLimitAfterFirstTokenIsNotRetried(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	f.Enqueue(fakeopenai.Text("Sure, here").FailAfter(1, fakeopenai.RateLimited(0)), fakeopenai.Text("never"))
	c, w := newTestClient(t, f)
	var d deltas
	res, err := c.Chat(t.Context(), userSays("q"), d.on)
	wantError(t, err, ports.KindRateLimited, string(ports.KindRateLimited))
	if !errors.Is(err, ports.ErrRateLimited) {
		t.Errorf("errors.Is(ErrRateLimited) failed")
	}
	if d.text() != "Sure," || res.Content != "Sure," {
		t.Errorf("delivered %q, result %q", d.text(), res.Content)
	}
	if len(f.Requests()) != 1 || len(w.get()) != 0 {
		t.Errorf("retried after text was delivered")
	}
}

func TestRetryAfterBeyondTheBoundIsReturned(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		retryAfter time.Duration
		timeout    time.Duration
	}{
		{"longer than maxRetryWait", time.Minute, 0},
		{"longer than the time left", 2 * time.Second, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := fakeopenai.New(t)
			f.Enqueue(fakeopenai.RateLimited(tt.retryAfter))
			c, w := newTestClient(t, f, func(c *Config) { c.Timeout = tt.timeout })
			_, err := c.Chat(t.Context(), userSays("q"), nil)
			e := wantError(t, err, ports.KindRateLimited, string(ports.KindRateLimited))
			if e.RetryAfter != tt.retryAfter {
				t.Errorf("RetryAfter %v", e.RetryAfter)
			}
			if len(f.Requests()) != 1 || len(w.get()) != 0 {
				t.Errorf("waited for a Retry-After it could not honour")
			}
		})
	}
}

func TestErrorMapping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		resp     fakeopenai.Response
		kind     ports.Kind
		code     string
		sentinel error
		inMsg    string
	}{
		{"context length", fakeopenai.ContextLengthExceeded(), ports.KindInvalid, ports.CodeContextLength, ports.ErrInvalid, msgContext},
		{"llama.cpp context size", fakeopenai.APIError(400, "exceed_context_size_error", "",
			"the request exceeds the available context size, try increasing it"), ports.KindInvalid, ports.CodeContextLength, ports.ErrInvalid, msgContext},
		{"vllm context length without code", fakeopenai.APIError(400, "BadRequestError", "",
			"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens."), ports.KindInvalid, ports.CodeContextLength, ports.ErrInvalid, msgContext},
		{"bad request", fakeopenai.APIError(400, "invalid_request_error", "",
			"Invalid 'messages[1].tool_call_id': unknown id."), ports.KindInvalid, ports.CodeInvalidRequest, ports.ErrInvalid, "Invalid 'messages[1].tool_call_id'"},
		{"unknown model", fakeopenai.APIError(404, "invalid_request_error", "model_not_found",
			"The model `gpt-test` does not exist or you do not have access to it."), ports.KindInvalid, ports.CodeInvalidRequest, ports.ErrInvalid, "does not exist"},
		{"unprocessable", fakeopenai.APIError(422, "invalid_request_error", "", "bad schema"), ports.KindInvalid, ports.CodeInvalidRequest, ports.ErrInvalid, "bad schema"},
		{"unauthorized", fakeopenai.Unauthorized(), ports.KindUpstream, string(ports.KindUpstream), ports.ErrUpstream, msgCredentials},
		{"forbidden", fakeopenai.APIError(403, "invalid_request_error", "unsupported_country_region_territory", "Country not supported"), ports.KindUpstream, string(ports.KindUpstream), ports.ErrUpstream, msgCredentials},
		{"quota", fakeopenai.QuotaExceeded(), ports.KindUpstream, string(ports.KindUpstream), ports.ErrUpstream, msgQuota},
		{"teapot", fakeopenai.Error(418, "short and stout"), ports.KindUpstream, string(ports.KindUpstream), ports.ErrUpstream, "status 418"},
		{"key echoed in a 400", fakeopenai.APIError(400, "invalid_request_error", "",
			"bad header Authorization: Bearer "+testKey+" and "+testKey), ports.KindInvalid, ports.CodeInvalidRequest, ports.ErrInvalid, "[redacted]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := fakeopenai.New(t)
			f.Enqueue(tt.resp)
			c, _ := newTestClient(t, f)
			_, err := c.Chat(t.Context(), userSays("q"), nil)
			e := wantError(t, err, tt.kind, tt.code)
			if !errors.Is(err, tt.sentinel) {
				t.Errorf("errors.Is(%v) failed", tt.sentinel)
			}
			if !strings.Contains(e.Message, tt.inMsg) {
				t.Errorf("message %q does not contain %q", e.Message, tt.inMsg)
			}
			if strings.Contains(e.Message, "sk-") {
				t.Errorf("message %q shows a key", e.Message)
			}
			if len(f.Requests()) != 1 {
				t.Errorf("%d requests: a permanent error was retried", len(f.Requests()))
			}
		})
	}
}

func TestContextCanceledMidStream(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	f.Enqueue(fakeopenai.Text("one two three").WithTokenDelay(time.Hour))
	c, _ := newTestClient(t, f)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var d deltas
	res, err := c.Chat(ctx, userSays("q"), func(s string) error {
		cancel()
		return d.on(s)
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if d.text() != "one" || res.Content != "one" {
		t.Errorf("delivered %q, result %q", d.text(), res.Content)
	}
}

func TestContextAlreadyCanceled(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	c, _ := newTestClient(t, f)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := c.Chat(ctx, userSays("q"), nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if len(f.Requests()) != 0 {
		t.Errorf("a request was sent")
	}
}

func TestOnDeltaErrorAborts(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	f.Enqueue(fakeopenai.Text("one two three").WithTokenDelay(time.Hour))
	c, _ := newTestClient(t, f)
	errClientGone := errors.New("client went away")
	_, err := c.Chat(t.Context(), userSays("q"), func(string) error { return errClientGone })
	if !errors.Is(err, errClientGone) {
		t.Fatalf("error %v, want onDelta's", err)
	}
	if _, ok := ports.AsError(err); ok {
		t.Errorf("onDelta's error was wrapped: %v", err)
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		resp fakeopenai.Response
	}{
		{"no first token", fakeopenai.Text("late").WithFirstTokenDelay(time.Hour)},
		{"no headers", fakeopenai.Text("late").WithResponseDelay(time.Hour)},
		{"stalls mid-stream", fakeopenai.Text("one two").WithTokenDelay(time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := fakeopenai.New(t)
			f.Enqueue(tt.resp)
			c, w := newTestClient(t, f, func(c *Config) { c.Timeout = 50 * time.Millisecond })
			_, err := c.Chat(t.Context(), userSays("q"), nil)
			wantError(t, err, ports.KindTimeout, string(ports.KindTimeout))
			if !errors.Is(err, ports.ErrTimeout) {
				t.Errorf("errors.Is(ErrTimeout) failed")
			}
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ports.ErrUpstream) {
				t.Errorf("timeout also matches another error: %v", err)
			}
			if len(f.Requests()) != 1 || len(w.get()) != 0 {
				t.Errorf("%d requests, %d waits after the timeout", len(f.Requests()), len(w.get()))
			}
		})
	}
}

func TestRequestMapping(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)
	req := ports.ChatRequest{
		Model: "gpt-override",
		Messages: []ports.Message{
			{Role: ports.MessageSystem, Content: "You are devpilot."},
			{Role: ports.MessageUser, Content: "Weather in Paris and the time?"},
			{Role: ports.MessageAssistant, Content: "Checking.", ToolCalls: []ports.ToolCall{
				{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`},
				{ID: "call_2", Name: "get_time"},
			}},
			{Role: ports.MessageTool, ToolCallID: "call_1", Name: "get_weather", Content: `{"temp":21}`},
			{Role: ports.MessageTool, ToolCallID: "call_2", Name: "get_time", Content: `"12:00"`},
		},
		Tools: []ports.ToolDefinition{
			{Name: "get_weather", Description: "Current weather of a city.", Parameters: schema},
			{Name: "get_time", Description: "The time now."},
		},
		MaxTokens: 256,
	}
	tests := []struct {
		name                 string
		legacy               bool
		maxTokens, maxCompln int
	}{
		{"max_completion_tokens", false, 0, 256},
		{"legacy max_tokens", true, 256, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := fakeopenai.New(t)
			f.Enqueue(fakeopenai.Text("It is 21°C."))
			c, _ := newTestClient(t, f, func(c *Config) { c.LegacyMaxTokens = tt.legacy })
			if _, err := c.Chat(t.Context(), req, nil); err != nil {
				t.Fatal(err)
			}
			r := f.Requests()[0]
			if r.Model != "gpt-override" || r.MaxTokens != tt.maxTokens || r.MaxCompletionTokens != tt.maxCompln {
				t.Errorf("model %q max_tokens %d max_completion_tokens %d", r.Model, r.MaxTokens, r.MaxCompletionTokens)
			}
			want := []fakeopenai.Message{
				{Role: "system", Content: "You are devpilot."},
				{Role: "user", Content: "Weather in Paris and the time?"},
				{Role: "assistant", Content: "Checking.", ToolCalls: []fakeopenai.Call{
					{ID: "call_1", Name: "get_weather", Arguments: `{"city":"Paris"}`},
					{ID: "call_2", Name: "get_time", Arguments: `{}`},
				}},
				{Role: "tool", ToolCallID: "call_1", Content: `{"temp":21}`},
				{Role: "tool", ToolCallID: "call_2", Content: `"12:00"`},
			}
			if fmt.Sprintf("%+v", r.Messages) != fmt.Sprintf("%+v", want) {
				t.Errorf("messages\n %+v\nwant\n %+v", r.Messages, want)
			}
			if len(r.Tools) != 2 {
				t.Fatalf("tools %+v", r.Tools)
			}
			if tl := r.Tools[0]; tl.Type != "function" || tl.Name != "get_weather" || tl.Description != "Current weather of a city." ||
				!jsonEqual(t, tl.Parameters, schema) {
				t.Errorf("tool 0 %+v", tl)
			}
			if tl := r.Tools[1]; tl.Name != "get_time" || !jsonEqual(t, tl.Parameters, emptyObjectSchema) {
				t.Errorf("tool 1 %+v", tl)
			}
			if r.ResponseFormat != nil {
				t.Errorf("response_format sent: %+v", r.ResponseFormat)
			}
		})
	}
}

func jsonEqual(t *testing.T, a, b json.RawMessage) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return fmt.Sprint(x) == fmt.Sprint(y)
}

func TestResponseFormat(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"}},"required":["title"],"additionalProperties":false}`)
	f := fakeopenai.New(t)
	f.Enqueue(fakeopenai.Text(`{"title":"Deploy the API"}`))
	c, _ := newTestClient(t, f)
	req := userSays("title?")
	req.ResponseFormat = &ports.JSONSchemaFormat{Name: "session_title", Schema: schema, Strict: true}
	res, err := c.Chat(t.Context(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Content != `{"title":"Deploy the API"}` {
		t.Errorf("content %q", res.Content)
	}
	rf := f.Requests()[0].ResponseFormat
	if rf == nil || rf.Type != "json_schema" || rf.JSONSchema == nil || rf.JSONSchema.Name != "session_title" ||
		!rf.JSONSchema.Strict || !jsonEqual(t, rf.JSONSchema.Schema, schema) {
		t.Errorf("response_format %+v", rf)
	}
}

// Model output is text devpilot did not get from its caller: NUL, controls,
// byte-order marks and bidi controls are dropped from the text, the tool
// arguments and a structured answer, never refused.
func TestModelOutputIsCleaned(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	f.Enqueue(
		fakeopenai.TextChunks("Hel\x00lo", "\x1b[0m wor\u202eld\ufeff").
			WithToolCalls(fakeopenai.Call{ID: "call_1", Name: "scale", Arguments: `{"service":"check\u0000out","n":2}`}),
		fakeopenai.Text(`{"title":"Deploy\u0007 the API\ud800"}`),
	)
	c, _ := newTestClient(t, f)
	var d deltas
	res, err := c.Chat(t.Context(), userSays("hi"), d.on)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"Hello", "[0m world"}; !slices.Equal(d.got, want) {
		t.Errorf("deltas %q, want %q", d.got, want)
	}
	if res.Content != "Hello[0m world" || len(res.ToolCalls) != 1 || res.ToolCalls[0].Arguments != `{"n":2,"service":"checkout"}` {
		t.Errorf("result %+v", res)
	}
	req := userSays("title?")
	req.ResponseFormat = &ports.JSONSchemaFormat{Name: "session_title", Schema: json.RawMessage(`{"type":"object"}`)}
	res, err = c.Chat(t.Context(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Content != "{\"title\":\"Deploy the API\uFFFD\"}" {
		t.Errorf("structured content %q", res.Content)
	}
}

func TestInvalidRequestsAreNotSent(t *testing.T) {
	t.Parallel()
	user := ports.Message{Role: ports.MessageUser, Content: "hi"}
	tests := []struct {
		name string
		req  ports.ChatRequest
	}{
		{"no messages", ports.ChatRequest{}},
		{"unknown role", ports.ChatRequest{Messages: []ports.Message{{Role: "robot", Content: "beep"}}}},
		{"tool message without call id", ports.ChatRequest{Messages: []ports.Message{user, {Role: ports.MessageTool, Content: "x"}}}},
		{"assistant call without id", ports.ChatRequest{Messages: []ports.Message{user,
			{Role: ports.MessageAssistant, ToolCalls: []ports.ToolCall{{Name: "f"}}}}}},
		{"tool schema not JSON", ports.ChatRequest{Messages: []ports.Message{user},
			Tools: []ports.ToolDefinition{{Name: "f", Parameters: json.RawMessage(`{`)}}}},
		{"tool without name", ports.ChatRequest{Messages: []ports.Message{user}, Tools: []ports.ToolDefinition{{}}}},
		{"response schema missing", ports.ChatRequest{Messages: []ports.Message{user}, ResponseFormat: &ports.JSONSchemaFormat{Name: "x"}}},
		{"negative max tokens", ports.ChatRequest{Messages: []ports.Message{user}, MaxTokens: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := fakeopenai.New(t)
			c, _ := newTestClient(t, f)
			_, err := c.Chat(t.Context(), tt.req, nil)
			wantError(t, err, ports.KindInvalid, ports.CodeInvalidRequest)
			if len(f.Requests()) != 0 {
				t.Errorf("an invalid request was sent")
			}
		})
	}
}

func TestAzure(t *testing.T) {
	t.Parallel()
	tests := []struct {
		apiType    APIType
		apiVersion string
		wantHeader string
		wantValue  string
		wantVer    string
	}{
		{APITypeAzure, "", "Api-Key", testKey, DefaultAzureAPIVersion},
		{APITypeAzureAD, "2025-01-01-preview", "Authorization", "Bearer " + testKey, "2025-01-01-preview"},
	}
	for _, tt := range tests {
		t.Run(string(tt.apiType), func(t *testing.T) {
			t.Parallel()
			f := fakeopenai.New(t)
			f.Enqueue(fakeopenai.Text("hi from azure"))
			c, _ := newTestClient(t, f, func(c *Config) {
				c.APIType, c.BaseURL, c.APIVersion, c.Model = tt.apiType, f.AzureURL(), tt.apiVersion, "gpt-4o-deploy.1"
			})
			res, err := c.Chat(t.Context(), userSays("hi"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Content != "hi from azure" {
				t.Errorf("content %q", res.Content)
			}
			r := f.Requests()[0]
			if r.Path != "/openai/deployments/gpt-4o-deploy.1/chat/completions" || r.Query.Get("api-version") != tt.wantVer {
				t.Errorf("path %s query %v", r.Path, r.Query)
			}
			if got := r.Header.Get(tt.wantHeader); got != tt.wantValue {
				t.Errorf("%s %q", tt.wantHeader, got)
			}
			if tt.apiType == APITypeAzure && r.Header.Get("Authorization") != "" {
				t.Errorf("Authorization sent to Azure with an API key")
			}
		})
	}
}

func TestNoAPIKeyForLocalServers(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	f.Enqueue(fakeopenai.Text("local"))
	c, _ := newTestClient(t, f, func(c *Config) { c.APIKey = "" })
	if _, err := c.Chat(t.Context(), userSays("hi"), nil); err != nil {
		t.Fatal(err)
	}
	if h := f.Requests()[0].Header.Get("Authorization"); h != "" {
		t.Errorf("Authorization %q sent without a key", h)
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"defaults", Config{APIKey: "k", Model: "m"}, true},
		{"local server without key", Config{BaseURL: "http://127.0.0.1:11434/v1", Model: "llama3"}, true},
		{"no model", Config{APIKey: "k"}, false},
		{"openai without key", Config{Model: "m"}, false},
		{"bad base URL", Config{APIKey: "k", Model: "m", BaseURL: "localhost:8080"}, false},
		{"azure without endpoint", Config{APIType: APITypeAzure, APIKey: "k", Model: "m"}, false},
		{"azure without key", Config{APIType: APITypeAzure, BaseURL: "https://x.openai.azure.com", Model: "m"}, false},
		{"unknown API type", Config{APIType: "bedrock", APIKey: "k", Model: "m", BaseURL: "https://x"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := New(tt.cfg)
			if (err == nil) != tt.ok {
				t.Fatalf("New: %v, want ok %v", err, tt.ok)
			}
			if err != nil {
				if !errors.Is(err, ports.ErrInternal) {
					t.Errorf("error %v is not internal", err)
				}
				return
			}
			if c.timeout != DefaultTimeout || c.maxRetries != DefaultMaxRetries {
				t.Errorf("timeout %v retries %d", c.timeout, c.maxRetries)
			}
		})
	}
}

func TestConfigHidesKey(t *testing.T) {
	t.Parallel()
	cfg := Config{APIKey: testKey, Model: "m"}
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), cfg.String()} {
		if strings.Contains(s, testKey) {
			t.Errorf("%q shows the key", s)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		header http.Header
		want   time.Duration
	}{
		{nil, 0},
		{http.Header{"Retry-After": {"2"}}, 2 * time.Second},
		{http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond},
		{http.Header{"Retry-After": {"-1"}}, 0},
		{http.Header{"Retry-After": {"soon"}}, 0},
		{http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second},
		{http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"9"}}, 250 * time.Millisecond},
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.header, now); got != tt.want {
			t.Errorf("parseRetryAfter(%v) = %v, want %v", tt.header, got, tt.want)
		}
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	c := &Client{backoffBase: 100 * time.Millisecond, backoffMax: time.Second}
	tests := []struct {
		attempt    int
		retryAfter time.Duration
		lo, hi     time.Duration
	}{
		{0, 0, 50 * time.Millisecond, 100 * time.Millisecond},
		{1, 0, 100 * time.Millisecond, 200 * time.Millisecond},
		{3, 0, 400 * time.Millisecond, 800 * time.Millisecond},
		{10, 0, 500 * time.Millisecond, time.Second},
		{100, 0, 500 * time.Millisecond, time.Second},
		{0, 5 * time.Second, 5 * time.Second, 5 * time.Second},
	}
	for _, tt := range tests {
		for range 50 {
			if got := c.backoff(tt.attempt, tt.retryAfter); got < tt.lo || got > tt.hi {
				t.Fatalf("backoff(%d, %v) = %v, want in [%v, %v]", tt.attempt, tt.retryAfter, got, tt.lo, tt.hi)
			}
		}
	}
}

func BenchmarkChatStream(b *testing.B) {
	const tokens = 1000
	f := fakeopenai.New(b)
	resp := fakeopenai.Text(strings.Repeat(" token", tokens))
	c, _ := newTestClient(b, f)
	req := userSays("stream")
	var n int
	b.ReportAllocs()
	for b.Loop() {
		f.Enqueue(resp)
		if _, err := c.Chat(b.Context(), req, func(string) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
	}
	if n != tokens*b.N {
		b.Fatalf("%d deltas, want %d", n, tokens*b.N)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "tokens/s")
}
