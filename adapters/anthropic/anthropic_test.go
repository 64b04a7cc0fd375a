package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/anthropic"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeanthropic"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
	"github.com/devpilot/devpilot/ports"
)

const testKey = "sk-ant-test-0123456789abcdef"

// setup starts a fake Anthropic API over a fresh script and a client of it.
func setup(t *testing.T) (*fakeopenai.Server, *fakeanthropic.Server, *anthropic.Client) {
	t.Helper()
	script := fakeopenai.New(t)
	fake := fakeanthropic.New(t, script)
	c, err := anthropic.New(anthropic.Config{APIKey: testKey, BaseURL: fake.URL(), Model: "claude-test"})
	if err != nil {
		t.Fatal(err)
	}
	return script, fake, c
}

func user(text string) ports.Message { return ports.Message{Role: ports.MessageUser, Content: text} }

func system(text string) ports.Message {
	return ports.Message{Role: ports.MessageSystem, Content: text}
}

// sent is the JSON body of the request number i the fake received.
func sent(t *testing.T, script *fakeopenai.Server, i int) map[string]any {
	t.Helper()
	reqs := script.Requests()
	if len(reqs) <= i {
		t.Fatalf("the fake received %d requests, want more than %d", len(reqs), i)
	}
	var body map[string]any
	if err := json.Unmarshal(reqs[i].Body, &body); err != nil {
		t.Fatal(err)
	}
	return body
}

func TestNewChecksConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []anthropic.Config{
		{APIKey: testKey},
		{Model: "m"},
		{Model: "m", APIKey: testKey, BaseURL: "ftp://example.com"},
	} {
		if _, err := anthropic.New(cfg); !ports.IsKind(err, ports.KindInternal) {
			t.Errorf("New(%v) = %v, want an internal error", cfg, err)
		}
	}
	cfg := anthropic.Config{APIKey: testKey, Model: "m"}
	if s := cfg.String() + cfg.GoString(); strings.Contains(s, testKey) {
		t.Errorf("Config prints its key: %s", s)
	}
}

func TestChatStreamsText(t *testing.T) {
	t.Parallel()
	script, _, c := setup(t)
	script.Enqueue(fakeopenai.TextChunks("Hello", ", ", "world").WithUsage(12, 3))
	var deltas []string
	res, err := c.Chat(context.Background(), ports.ChatRequest{
		Messages: []ports.Message{system("You are terse."), user("Say hello")},
	}, func(d string) error { deltas = append(deltas, d); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if res.Content != "Hello, world" || strings.Join(deltas, "|") != "Hello|, |world" {
		t.Errorf("content %q, deltas %q", res.Content, deltas)
	}
	if res.FinishReason != ports.FinishStop || res.Model != "claude-test" || res.Provider != anthropic.ProviderName ||
		!strings.HasPrefix(res.ID, "msg_") {
		t.Errorf("result = %+v", res)
	}
	if res.Usage.PromptTokens != 12 || res.Usage.CompletionTokens != 3 {
		t.Errorf("usage = %+v", res.Usage)
	}
	req := script.Requests()[0]
	if req.Path != "/v1/messages" || req.Header.Get("X-Api-Key") != testKey || req.Header.Get("Anthropic-Version") == "" || !req.Stream {
		t.Errorf("request path %s, headers %v, stream %v", req.Path, req.Header, req.Stream)
	}
	if req.MaxTokens != anthropic.DefaultMaxTokens || req.Model != "claude-test" {
		t.Errorf("max tokens %d, model %q", req.MaxTokens, req.Model)
	}
	if len(req.Messages) != 2 || req.Messages[0].Role != "system" || req.Messages[1].Content != "Say hello" {
		t.Errorf("messages = %+v", req.Messages)
	}
}

func TestChatModelAndMaxTokensOverride(t *testing.T) {
	t.Parallel()
	script, _, c := setup(t)
	script.Enqueue(fakeopenai.Text("ok"))
	temp, seed := 1.5, int64(7)
	res, err := c.Chat(context.Background(), ports.ChatRequest{Model: "claude-other", MaxTokens: 99,
		Temperature: &temp, Seed: &seed, Messages: []ports.Message{user("hi")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	body := sent(t, script, 0)
	if body["model"] != "claude-other" || body["max_tokens"] != float64(99) || res.Model != "claude-other" {
		t.Errorf("body = %v, result model %q", body, res.Model)
	}
	if _, ok := body["temperature"]; ok {
		t.Errorf("a temperature was sent: %v", body)
	}
}

func TestChatToolCallsAndResults(t *testing.T) {
	t.Parallel()
	script, _, c := setup(t)
	script.Enqueue(
		fakeopenai.Text("Let me look.").WithToolCalls(
			fakeopenai.Call{ID: "toolu_1", Name: "list_repos", Arguments: `{"org":"acme"}`},
			fakeopenai.Call{ID: "toolu_2", Name: "list_pulls", Arguments: `{}`},
		),
		fakeopenai.Text("Two repos, no pulls."),
	)
	tools := []ports.ToolDefinition{
		{Name: "list_repos", Description: "Lists repos", Parameters: json.RawMessage(`{"type":"object","properties":{"org":{"type":"string"}},"required":["org"],"additionalProperties":false}`), Strict: true},
		{Name: "list_pulls", Description: "Lists pulls"},
	}
	msgs := []ports.Message{system("static prefix"), user("what repos?")}
	res, err := c.Chat(context.Background(), ports.ChatRequest{Messages: msgs, Tools: tools}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []ports.ToolCall{{ID: "toolu_1", Name: "list_repos", Arguments: `{"org":"acme"}`}, {ID: "toolu_2", Name: "list_pulls", Arguments: `{}`}}
	if res.FinishReason != ports.FinishToolCalls || res.Content != "Let me look." || len(res.ToolCalls) != 2 ||
		res.ToolCalls[0] != want[0] || res.ToolCalls[1] != want[1] {
		t.Fatalf("result = %+v", res)
	}
	req := script.Requests()[0]
	if len(req.Tools) != 2 || !req.Tools[0].Strict || string(req.Tools[1].Parameters) != `{"type":"object","properties":{}}` {
		t.Errorf("tools = %+v", req.Tools)
	}

	msgs = append(msgs,
		ports.Message{Role: ports.MessageAssistant, Content: res.Content, ToolCalls: res.ToolCalls},
		ports.Message{Role: ports.MessageTool, ToolCallID: "toolu_1", Name: "list_repos", Content: `["a","b"]`},
		ports.Message{Role: ports.MessageTool, ToolCallID: "toolu_2", Name: "list_pulls", Content: `[]`},
	)
	res, err = c.Chat(context.Background(), ports.ChatRequest{Messages: msgs, Tools: tools}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Content != "Two repos, no pulls." || res.FinishReason != ports.FinishStop {
		t.Errorf("second result = %+v", res)
	}
	body := sent(t, script, 1)
	turns := body["messages"].([]any)
	if len(turns) != 3 {
		t.Fatalf("the follow-up sent %d turns, want 3 (user, assistant, one user with both results): %v", len(turns), turns)
	}
	results := turns[2].(map[string]any)["content"].([]any)
	if len(results) != 2 || results[0].(map[string]any)["type"] != "tool_result" || results[1].(map[string]any)["tool_use_id"] != "toolu_2" {
		t.Errorf("tool results turn = %v", turns[2])
	}
	got := script.Requests()[1].Messages
	if len(got) != 5 || got[3].Role != "tool" || got[3].ToolCallID != "toolu_1" || got[4].Content != "[]" ||
		len(got[2].ToolCalls) != 2 || got[2].ToolCalls[0].Arguments != `{"org":"acme"}` {
		t.Errorf("the fake read %+v", got)
	}
}

func TestChatStructuredOutput(t *testing.T) {
	t.Parallel()
	script, _, c := setup(t)
	script.Enqueue(fakeopenai.TextChunks(`{"title":`, `"Plan"}`))
	schema := json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"}},"required":["title"],"additionalProperties":false}`)
	var deltas []string
	res, err := c.Chat(context.Background(), ports.ChatRequest{
		Messages:       []ports.Message{system("Write a plan."), user("go")},
		Tools:          []ports.ToolDefinition{{Name: "lookup", Parameters: json.RawMessage(`{"type":"object"}`)}},
		ResponseFormat: &ports.JSONSchemaFormat{Name: "spec_scope", Schema: schema, Strict: true},
	}, func(d string) error { deltas = append(deltas, d); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if res.Content != `{"title":"Plan"}` || len(res.ToolCalls) != 0 || res.FinishReason != ports.FinishStop {
		t.Errorf("result = %+v", res)
	}
	if strings.Join(deltas, "") != `{"title":"Plan"}` {
		t.Errorf("deltas = %q", deltas)
	}
	body := sent(t, script, 0)
	choice := body["tool_choice"].(map[string]any)
	if choice["type"] != "tool" || choice["name"] != "spec_scope" {
		t.Errorf("tool_choice = %v", choice)
	}
	req := script.Requests()[0]
	if req.ResponseSchemaName() != "spec_scope" || len(req.Tools) != 1 || req.Tools[0].Name != "lookup" {
		t.Errorf("the fake read format %v and tools %+v", req.ResponseFormat, req.Tools)
	}
}

func TestChatPromptCaching(t *testing.T) {
	t.Parallel()
	script, _, c := setup(t)
	script.Enqueue(fakeopenai.Text("one").WithUsage(500, 1), fakeopenai.Text("two").WithUsage(500, 1))
	req := ports.ChatRequest{
		Messages: []ports.Message{system(strings.Repeat("static rules. ", 40)), system("page: home"), user("hi")},
		Tools: []ports.ToolDefinition{
			{Name: "a", Parameters: json.RawMessage(`{"type":"object"}`)},
			{Name: "b", Parameters: json.RawMessage(`{"type":"object"}`)},
		},
	}
	first, err := c.Chat(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.Chat(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	body := sent(t, script, 0)
	sys := body["system"].([]any)
	if len(sys) != 2 || sys[0].(map[string]any)["cache_control"] != nil ||
		sys[1].(map[string]any)["cache_control"].(map[string]any)["type"] != "ephemeral" {
		t.Errorf("system = %v", sys)
	}
	tools := body["tools"].([]any)
	if tools[0].(map[string]any)["cache_control"] != nil || tools[1].(map[string]any)["cache_control"].(map[string]any)["type"] != "ephemeral" {
		t.Errorf("tools = %v", tools)
	}
	if u := first.Usage; u.PromptTokens != 500 || u.CacheWriteTokens == 0 || u.CacheReadTokens != 0 {
		t.Errorf("first usage = %+v", u)
	}
	if u := second.Usage; u.PromptTokens != 500 || u.CacheReadTokens != first.Usage.CacheWriteTokens || u.CacheWriteTokens != 0 {
		t.Errorf("second usage = %+v (first %+v)", u, first.Usage)
	}
}

func TestChatErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		resp       fakeopenai.Response
		kind       ports.Kind
		code       string
		retryAfter time.Duration
	}{
		{"rate limited", fakeopenai.RateLimited(7 * time.Second), ports.KindRateLimited, "", 7 * time.Second},
		{"overloaded 529", fakeopenai.Error(fakeanthropic.StatusOverloaded, `{}`).WithHeader("Retry-After", "3"), ports.KindUnavailable, "", 3 * time.Second},
		{"overloaded 503", fakeopenai.Overloaded(), ports.KindUnavailable, "", 0},
		{"server error", fakeopenai.ServerError(), ports.KindUnavailable, "", 0},
		{"unauthorized", fakeopenai.Unauthorized(), ports.KindUpstream, "", 0},
		{"context too long", fakeopenai.ContextLengthExceeded(), ports.KindInvalid, ports.CodeContextLength, 0},
		{"bad request", fakeopenai.APIError(http.StatusBadRequest, "invalid_request_error", "", "messages: bad"), ports.KindInvalid, ports.CodeInvalidRequest, 0},
		{"stream cut", fakeopenai.Text("a b c").TruncatedAfter(1), ports.KindUpstream, ports.CodeTruncated, 0},
		{"stream aborted", fakeopenai.Text("a b c").AbortedAfter(1), ports.KindUpstream, ports.CodeTruncated, 0},
		{"overloaded mid-stream", fakeopenai.Text("a b c").FailAfter(1, fakeopenai.Overloaded()), ports.KindUnavailable, "", 0},
		{"rate limited mid-stream", fakeopenai.Text("a b c").FailAfter(1, fakeopenai.RateLimited(0)), ports.KindRateLimited, "", 0},
		{"hangup", fakeopenai.Hangup(), ports.KindUnavailable, "", 0},
		{"key echoed", fakeopenai.APIError(http.StatusBadRequest, "invalid_request_error", "", "the key "+testKey+" is bad"),
			ports.KindInvalid, ports.CodeInvalidRequest, 0},
		{"forbidden", fakeopenai.APIError(http.StatusForbidden, "permission_error", "", "no access"), ports.KindUpstream, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			script, _, c := setup(t)
			script.Enqueue(tt.resp)
			_, err := c.Chat(context.Background(), ports.ChatRequest{Messages: []ports.Message{user("hi")}}, nil)
			e, ok := ports.AsError(err)
			if !ok || e.Kind != tt.kind || (tt.code != "" && e.ErrorCode() != tt.code) || e.RetryAfter != tt.retryAfter {
				t.Fatalf("error = %#v (%v), want kind %s code %q retry after %s", e, err, tt.kind, tt.code, tt.retryAfter)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Errorf("the error shows the key: %v", err)
			}
			if tt.code == ports.CodeContextLength && !errors.Is(err, ports.ErrContextLength) {
				t.Errorf("%v is not ErrContextLength", err)
			}
		})
	}
}

func TestChatPartialTextOnCut(t *testing.T) {
	t.Parallel()
	script, _, c := setup(t)
	script.Enqueue(fakeopenai.TextChunks("one ", "two ", "three").TruncatedAfter(2))
	res, err := c.Chat(context.Background(), ports.ChatRequest{Messages: []ports.Message{user("hi")}}, nil)
	if !errors.Is(err, &ports.Error{Kind: ports.KindUpstream, Code: ports.CodeTruncated}) || res.Content != "one two " {
		t.Errorf("result %+v, error %v", res, err)
	}
}

func TestChatCallerAndContext(t *testing.T) {
	t.Parallel()
	t.Run("onDelta error", func(t *testing.T) {
		t.Parallel()
		script, _, c := setup(t)
		script.Enqueue(fakeopenai.TextChunks("a", "b", "c"))
		stop := errors.New("stop")
		_, err := c.Chat(context.Background(), ports.ChatRequest{Messages: []ports.Message{user("hi")}},
			func(string) error { return stop })
		if !errors.Is(err, stop) {
			t.Errorf("error = %v", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		t.Parallel()
		script, _, c := setup(t)
		script.Enqueue(fakeopenai.TextChunks("a", "b", "c").WithTokenDelay(time.Hour))
		ctx, cancel := context.WithCancel(context.Background())
		_, err := c.Chat(ctx, ports.ChatRequest{Messages: []ports.Message{user("hi")}},
			func(string) error { cancel(); return nil })
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error = %v", err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		t.Parallel()
		script := fakeopenai.New(t)
		fake := fakeanthropic.New(t, script)
		c, err := anthropic.New(anthropic.Config{APIKey: testKey, BaseURL: fake.URL(), Model: "m", Timeout: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		script.Enqueue(fakeopenai.Text("late").WithResponseDelay(time.Hour))
		_, err = c.Chat(context.Background(), ports.ChatRequest{Messages: []ports.Message{user("hi")}}, nil)
		if !ports.IsKind(err, ports.KindTimeout) {
			t.Errorf("error = %v", err)
		}
	})
}

func TestChatInvalidRequests(t *testing.T) {
	t.Parallel()
	_, _, c := setup(t)
	for name, req := range map[string]ports.ChatRequest{
		"no messages":     {},
		"only system":     {Messages: []ports.Message{system("x")}},
		"negative max":    {MaxTokens: -1, Messages: []ports.Message{user("x")}},
		"unknown role":    {Messages: []ports.Message{{Role: "robot", Content: "x"}}},
		"tool without id": {Messages: []ports.Message{user("x"), {Role: ports.MessageTool, Content: "y"}}},
		"bad schema":      {Messages: []ports.Message{user("x")}, Tools: []ports.ToolDefinition{{Name: "t", Parameters: json.RawMessage(`{`)}}},
	} {
		if _, err := c.Chat(context.Background(), req, nil); !errors.Is(err, &ports.Error{Kind: ports.KindInvalid, Code: ports.CodeInvalidRequest}) {
			t.Errorf("%s: error = %v", name, err)
		}
	}
}

func TestChatHostileContent(t *testing.T) {
	t.Parallel()
	script, _, c := setup(t)
	script.Enqueue(fakeopenai.TextChunks("ok\x00", "\xff done"))
	res, err := c.Chat(context.Background(), ports.ChatRequest{Messages: []ports.Message{
		system("sys\x00tem"), user("bad \xff\xfe utf8 and NUL \x00"),
		{Role: ports.MessageAssistant, ToolCalls: []ports.ToolCall{{ID: "t1", Name: "x", Arguments: "not json\x00"}}},
		{Role: ports.MessageTool, ToolCallID: "t1", Content: "\x00\xff"},
		user("   "),
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Content != "ok\ufffd done" {
		t.Errorf("content = %q", res.Content)
	}
}

func TestChatInvalidArgumentsPassThrough(t *testing.T) {
	t.Parallel()
	script, _, c := setup(t)
	script.Enqueue(
		fakeopenai.ToolCalls(fakeopenai.Call{ID: "toolu_x", Name: "t", Arguments: `{"a": tru`}),
		fakeopenai.Text(`not json at all`),
		fakeopenai.Text("fine"),
	)
	tools := []ports.ToolDefinition{{Name: "t", Parameters: json.RawMessage(`{"type":"object"}`)}}
	msgs := []ports.Message{user("go")}
	res, err := c.Chat(context.Background(), ports.ChatRequest{Messages: msgs, Tools: tools}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ToolCalls) != 1 || res.ToolCalls[0].Arguments != `{"a": tru` {
		t.Fatalf("result = %+v", res)
	}
	res, err = c.Chat(context.Background(), ports.ChatRequest{Messages: msgs,
		ResponseFormat: &ports.JSONSchemaFormat{Name: "answer", Schema: json.RawMessage(`{"type":"object"}`)}}, nil)
	if err != nil || res.Content != "not json at all" {
		t.Fatalf("structured result %+v, error %v", res, err)
	}
	// The invalid arguments go back as an empty input, which the API accepts.
	msgs = append(msgs, ports.Message{Role: ports.MessageAssistant, ToolCalls: []ports.ToolCall{{ID: "toolu_x", Name: "t", Arguments: `{"a": tru`}}},
		ports.Message{Role: ports.MessageTool, ToolCallID: "toolu_x", Content: "invalid arguments"})
	if _, err := c.Chat(context.Background(), ports.ChatRequest{Messages: msgs, Tools: tools}, nil); err != nil {
		t.Fatal(err)
	}
}

func TestChatRetries(t *testing.T) {
	t.Parallel()
	client := func(t *testing.T, retries int) (*fakeopenai.Server, *anthropic.Client) {
		script := fakeopenai.New(t)
		fake := fakeanthropic.New(t, script)
		c, err := anthropic.New(anthropic.Config{APIKey: testKey, BaseURL: fake.URL(), Model: "m", MaxRetries: retries})
		if err != nil {
			t.Fatal(err)
		}
		anthropic.SetBackoff(c, time.Microsecond, time.Microsecond)
		return script, c
	}
	req := ports.ChatRequest{Messages: []ports.Message{user("hi")}}
	t.Run("overloaded then answered", func(t *testing.T) {
		t.Parallel()
		script, c := client(t, 2)
		script.Enqueue(fakeopenai.Error(fakeanthropic.StatusOverloaded, `{}`), fakeopenai.Text("a b").AbortedAfter(0), fakeopenai.Text("fine"))
		res, err := c.Chat(context.Background(), req, nil)
		if err != nil || res.Content != "fine" || len(script.Requests()) != 3 {
			t.Errorf("result %+v, error %v, %d requests", res, err, len(script.Requests()))
		}
	})
	t.Run("none by default", func(t *testing.T) {
		t.Parallel()
		script, c := client(t, 0)
		script.Enqueue(fakeopenai.Error(fakeanthropic.StatusOverloaded, `{}`))
		if _, err := c.Chat(context.Background(), req, nil); !ports.IsKind(err, ports.KindUnavailable) || len(script.Requests()) != 1 {
			t.Errorf("error %v, %d requests", err, len(script.Requests()))
		}
	})
	t.Run("not after a delta", func(t *testing.T) {
		t.Parallel()
		script, c := client(t, 2)
		script.Enqueue(fakeopenai.TextChunks("a", "b").FailAfter(1, fakeopenai.Overloaded()))
		res, err := c.Chat(context.Background(), req, func(string) error { return nil })
		if !ports.IsKind(err, ports.KindUnavailable) || res.Content != "a" || len(script.Requests()) != 1 {
			t.Errorf("result %+v, error %v, %d requests", res, err, len(script.Requests()))
		}
	})
	t.Run("not a refusal", func(t *testing.T) {
		t.Parallel()
		script, c := client(t, 2)
		script.Enqueue(fakeopenai.ContextLengthExceeded())
		if _, err := c.Chat(context.Background(), req, nil); !errors.Is(err, ports.ErrContextLength) || len(script.Requests()) != 1 {
			t.Errorf("error %v, %d requests", err, len(script.Requests()))
		}
	})
	t.Run("not past a long Retry-After", func(t *testing.T) {
		t.Parallel()
		script, c := client(t, 2)
		script.Enqueue(fakeopenai.RateLimited(time.Hour))
		if _, err := c.Chat(context.Background(), req, nil); !ports.IsKind(err, ports.KindRateLimited) || len(script.Requests()) != 1 {
			t.Errorf("error %v, %d requests", err, len(script.Requests()))
		}
	})
}

// TestIgnoresTheSDKsEnvironment checks that the SDK's environment variables
// do not change where a configured client goes or what key it sends.
func TestIgnoresTheSDKsEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
	t.Setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Leak: yes")
	script, _, c := setup(t)
	script.Enqueue(fakeopenai.Text("ok"))
	if _, err := c.Chat(context.Background(), ports.ChatRequest{Messages: []ports.Message{user("hi")}}, nil); err != nil {
		t.Fatal(err)
	}
	h := script.Requests()[0].Header
	if h.Get("X-Api-Key") != testKey || h.Get("Authorization") != "" || h.Get("X-Leak") != "" || h.Get("Traceparent") != "" {
		t.Errorf("headers = %v", h)
	}
}
