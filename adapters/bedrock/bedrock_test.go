package bedrock_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/devpilot/devpilot/adapters/bedrock"
	"github.com/devpilot/devpilot/hosts/sandbox/fakebedrock"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
	"github.com/devpilot/devpilot/ports"
)

const model = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"

// newClient returns a Client talking to a fake Bedrock over HTTP that
// answers from a new script, with static credentials and no retries.
func newClient(t *testing.T, mod func(*bedrock.Config)) (*bedrock.Client, *fakeopenai.Server) {
	t.Helper()
	script := fakeopenai.New(t)
	fake := fakebedrock.New(t, script)
	cfg := bedrock.Config{
		Region:      "us-east-1",
		Model:       model,
		Endpoint:    fake.URL(),
		MaxRetries:  -1,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDFAKEBEDROCK", "fake-secret-key", ""),
	}
	if mod != nil {
		mod(&cfg)
	}
	c, err := bedrock.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, script
}

// wireBody decodes a recorded request's Converse body.
func wireBody(t *testing.T, r fakeopenai.Request) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("recorded body %q: %v", r.Body, err)
	}
	return m
}

func collect(deltas *[]string) func(string) error {
	return func(s string) error {
		*deltas = append(*deltas, s)
		return nil
	}
}

func TestChatStreamsText(t *testing.T) {
	t.Parallel()
	c, script := newClient(t, func(c *bedrock.Config) { c.MaxTokens = 1234 })
	script.Enqueue(fakeopenai.TextChunks("Hello", ", ", "world.").WithUsage(40, 3))
	var deltas []string
	res, err := c.Chat(context.Background(), ports.ChatRequest{Messages: []ports.Message{
		{Role: ports.MessageSystem, Content: "You are terse."},
		{Role: ports.MessageUser, Content: "Say hello."},
	}}, collect(&deltas))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(deltas, "|") != "Hello|, |world." || res.Content != "Hello, world." {
		t.Fatalf("deltas %q, content %q", deltas, res.Content)
	}
	if res.FinishReason != ports.FinishStop || res.Model != model || res.Provider != bedrock.ProviderName || res.ID == "" {
		t.Fatalf("result %+v", res)
	}
	if res.Usage.PromptTokens != 40 || res.Usage.CompletionTokens != 3 {
		t.Fatalf("usage %+v", res.Usage)
	}
	reqs := script.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Model != model || !r.Stream || r.MaxTokens != 1234 || !strings.HasSuffix(r.Path, "/converse-stream") {
		t.Fatalf("request %+v", r)
	}
	if len(r.Messages) != 2 || r.Messages[0].Role != "system" || r.Messages[0].Content != "You are terse." ||
		r.Messages[1].Role != "user" || r.Messages[1].Content != "Say hello." {
		t.Fatalf("messages %+v", r.Messages)
	}
	if !strings.Contains(r.Header.Get("Authorization"), "Credential=AKIDFAKEBEDROCK/") {
		t.Fatalf("authorization %q", r.Header.Get("Authorization"))
	}
}

func TestChatToolCallsAndResults(t *testing.T) {
	t.Parallel()
	c, script := newClient(t, nil)
	script.Enqueue(
		fakeopenai.Text("Let me look.").WithToolCalls(
			fakeopenai.Call{ID: "tooluse_a", Name: "list_repos", Arguments: `{"org":"acme"}`},
			fakeopenai.Call{ID: "tooluse_b", Name: "get_costs", Arguments: `{}`},
		),
		fakeopenai.Text("You have 2 repos and spent $3."),
	)
	tools := []ports.ToolDefinition{
		{Name: "list_repos", Description: "Lists repositories.", Parameters: json.RawMessage(`{"type":"object","properties":{"org":{"type":"string"}},"required":["org"]}`)},
		{Name: "get_costs", Description: "Costs.", Parameters: json.RawMessage(`{"type":"object","properties":{}}`)},
	}
	msgs := []ports.Message{{Role: ports.MessageSystem, Content: "sys"}, {Role: ports.MessageUser, Content: "repos and costs?"}}
	res, err := c.Chat(context.Background(), ports.ChatRequest{Messages: msgs, Tools: tools}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.FinishReason != ports.FinishToolCalls || res.Content != "Let me look." || len(res.ToolCalls) != 2 ||
		res.ToolCalls[0] != (ports.ToolCall{ID: "tooluse_a", Name: "list_repos", Arguments: `{"org":"acme"}`}) ||
		res.ToolCalls[1] != (ports.ToolCall{ID: "tooluse_b", Name: "get_costs", Arguments: `{}`}) {
		t.Fatalf("result %+v", res)
	}
	msgs = append(msgs,
		ports.Message{Role: ports.MessageAssistant, Content: res.Content, ToolCalls: res.ToolCalls},
		ports.Message{Role: ports.MessageTool, ToolCallID: "tooluse_a", Name: "list_repos", Content: `{"repos":["a","b"]}`},
		ports.Message{Role: ports.MessageTool, ToolCallID: "tooluse_b", Name: "get_costs", Content: ""},
	)
	res, err = c.Chat(context.Background(), ports.ChatRequest{Messages: msgs, Tools: tools}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Content != "You have 2 repos and spent $3." || res.FinishReason != ports.FinishStop {
		t.Fatalf("result %+v", res)
	}
	r := script.Requests()[1]
	if len(r.Tools) != 2 || r.Tools[0].Name != "list_repos" || string(r.Tools[0].Parameters) != string(tools[0].Parameters) {
		t.Fatalf("tools %+v", r.Tools)
	}
	want := []fakeopenai.Message{
		{Role: "system", Content: "sys"},
		{Role: "user", Content: "repos and costs?"},
		{Role: "assistant", Content: "Let me look.", ToolCalls: []fakeopenai.Call{
			{ID: "tooluse_a", Name: "list_repos", Arguments: `{"org":"acme"}`}, {ID: "tooluse_b", Name: "get_costs", Arguments: `{}`}}},
		{Role: "tool", ToolCallID: "tooluse_a", Name: "list_repos", Content: `{"repos":["a","b"]}`},
		{Role: "tool", ToolCallID: "tooluse_b", Name: "get_costs", Content: "(no output)"},
	}
	if got, _ := json.Marshal(r.Messages); string(got) != mustJSON(t, want) {
		t.Fatalf("messages\n got %s\nwant %s", got, mustJSON(t, want))
	}
	// Both results in ONE user message, as Bedrock requires.
	body := wireBody(t, r)
	wire := body["messages"].([]any)
	if len(wire) != 3 || len(wire[2].(map[string]any)["content"].([]any)) != 2 {
		t.Fatalf("wire messages %v", wire)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestChatStructuredOutput(t *testing.T) {
	t.Parallel()
	c, script := newClient(t, nil)
	answer := `{"title":"Dark mode","items":["a","b"]}`
	script.Enqueue(fakeopenai.Text(answer).WithChunkSize(7))
	schema := json.RawMessage(`{"type":"object","properties":{"title":{"type":"string"},"items":{"type":"array","items":{"type":"string"}}},"required":["title","items"],"additionalProperties":false}`)
	var deltas []string
	res, err := c.Chat(context.Background(), ports.ChatRequest{
		Messages:       []ports.Message{{Role: ports.MessageSystem, Content: "Write a stage."}, {Role: ports.MessageUser, Content: "go"}},
		ResponseFormat: &ports.JSONSchemaFormat{Name: "spec_scope", Schema: schema, Strict: true},
	}, collect(&deltas))
	if err != nil {
		t.Fatal(err)
	}
	if res.Content != answer || len(res.ToolCalls) != 0 || res.FinishReason != ports.FinishStop || strings.Join(deltas, "") != answer || len(deltas) < 2 {
		t.Fatalf("result %+v, deltas %q", res, deltas)
	}
	r := script.Requests()[0]
	if r.ResponseSchemaName() != "spec_scope" || string(r.ResponseFormat.JSONSchema.Schema) != string(schema) || len(r.Tools) != 0 {
		t.Fatalf("request format %+v tools %+v", r.ResponseFormat, r.Tools)
	}
	tc := wireBody(t, r)["toolConfig"].(map[string]any)
	if choice := mustJSON(t, tc["toolChoice"]); choice != `{"tool":{"name":"spec_scope"}}` {
		t.Fatalf("toolChoice %s", choice)
	}
}

func TestChatCachePointsAndCacheUsage(t *testing.T) {
	t.Parallel()
	c, script := newClient(t, nil)
	script.Enqueue(fakeopenai.Text("one"), fakeopenai.Text("two"))
	req := ports.ChatRequest{
		Messages: []ports.Message{
			{Role: ports.MessageSystem, Content: strings.Repeat("The static system prompt of the assistant. ", 40)},
			{Role: ports.MessageSystem, Content: "(3 earlier messages were left out.)"},
			{Role: ports.MessageUser, Content: "first question with several words in it"},
		},
		Tools: []ports.ToolDefinition{{Name: "list_repos", Description: "Lists repositories.", Parameters: json.RawMessage(`{"type":"object"}`)}},
	}
	first, err := c.Chat(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Messages[2].Content = "second question with other words in it"
	second, err := c.Chat(context.Background(), req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if first.Usage.CacheWriteTokens == 0 || first.Usage.CacheReadTokens != 0 ||
		second.Usage.CacheReadTokens != first.Usage.CacheWriteTokens || second.Usage.CacheWriteTokens != 0 {
		t.Fatalf("usage %+v then %+v", first.Usage, second.Usage)
	}
	if second.Usage.PromptTokens < second.Usage.CacheReadTokens {
		t.Fatalf("prompt tokens %d do not count the %d read from the cache", second.Usage.PromptTokens, second.Usage.CacheReadTokens)
	}
	body := wireBody(t, script.Requests()[0])
	system := mustJSON(t, body["system"])
	if !strings.HasPrefix(system, `[{"text":"The static`) || !strings.Contains(system, `"},{"cachePoint":{"type":"default"}},{"text":"(3 earlier`) {
		t.Fatalf("system %s", system)
	}
	tools := body["toolConfig"].(map[string]any)["tools"].([]any)
	if len(tools) != 2 || mustJSON(t, tools[1]) != `{"cachePoint":{"type":"default"}}` {
		t.Fatalf("tools %s", mustJSON(t, tools))
	}
}

func TestChatInferenceProfileARN(t *testing.T) {
	t.Parallel()
	arn := "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3d4e5"
	c, script := newClient(t, func(c *bedrock.Config) { c.Model = arn })
	script.Enqueue(fakeopenai.Text("ok"))
	res, err := c.Chat(context.Background(), ports.ChatRequest{Messages: []ports.Message{{Role: ports.MessageUser, Content: "hi"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := script.Requests()[0]
	if res.Model != arn || r.Model != arn {
		t.Fatalf("result model %q, request model %q", res.Model, r.Model)
	}
	// A turn of another model (a prompt router's choice; the sandbox's
	// demo model) is named by it.
	script.Enqueue(fakeopenai.Text("ok").WithModel(ports.SandboxModel))
	if res, err = c.Chat(context.Background(), ports.ChatRequest{Messages: []ports.Message{{Role: ports.MessageUser, Content: "hi"}}}, nil); err != nil || res.Model != ports.SandboxModel {
		t.Fatalf("result %+v, err %v", res, err)
	}
	// The request overrides the model.
	script.Enqueue(fakeopenai.Text("ok"))
	if _, err := c.Chat(context.Background(), ports.ChatRequest{Model: "amazon.nova-pro-v1:0", Messages: []ports.Message{{Role: ports.MessageUser, Content: "hi"}}}, nil); err != nil {
		t.Fatal(err)
	}
	if got := script.Requests()[2].Model; got != "amazon.nova-pro-v1:0" {
		t.Fatalf("model %q", got)
	}
}

func TestChatErrors(t *testing.T) {
	t.Parallel()
	user := []ports.Message{{Role: ports.MessageUser, Content: "hi"}}
	tests := []struct {
		name       string
		resp       fakeopenai.Response
		kind       ports.Kind
		code       string
		retryAfter time.Duration
		partial    string
	}{
		{"throttling", fakeopenai.RateLimited(3 * time.Second), ports.KindUnavailable, "", 3 * time.Second, ""},
		{"overloaded 529", fakeopenai.Error(529, `{"error":{"message":"Overloaded","type":"overloaded_error"}}`), ports.KindUnavailable, "", 0, ""},
		{"service unavailable", fakeopenai.Overloaded(), ports.KindUnavailable, "", 0, ""},
		{"internal server error", fakeopenai.ServerError(), ports.KindUnavailable, "", 0, ""},
		{"model timeout", fakeopenai.Error(http.StatusRequestTimeout, `{}`), ports.KindTimeout, "", 0, ""},
		{"context length", fakeopenai.ContextLengthExceeded(), ports.KindInvalid, ports.CodeContextLength, 0, ""},
		{"validation", fakeopenai.APIError(http.StatusBadRequest, "invalid_request_error", "", "messages.0: bad"), ports.KindInvalid, ports.CodeInvalidRequest, 0, ""},
		{"access denied", fakeopenai.Unauthorized(), ports.KindUpstream, "", 0, ""},
		{"stream cut", fakeopenai.TextChunks("a", "b", "c").TruncatedAfter(2), ports.KindUpstream, ports.CodeTruncated, 0, "ab"},
		{"connection dropped mid-stream", fakeopenai.TextChunks("a", "b", "c").AbortedAfter(1), ports.KindUpstream, ports.CodeTruncated, 0, "a"},
		{"exception event", fakeopenai.TextChunks("a", "b").FailAfter(1, fakeopenai.RateLimited(0)), ports.KindUnavailable, "", 0, "a"},
		{"exception event, server", fakeopenai.TextChunks("a", "b").FailAfter(1, fakeopenai.ServerError()), ports.KindUnavailable, "", 0, "a"},
		{"hangup", fakeopenai.Hangup(), ports.KindUnavailable, "", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, script := newClient(t, nil)
			script.Enqueue(tt.resp)
			res, err := c.Chat(context.Background(), ports.ChatRequest{Messages: user}, nil)
			e, ok := ports.AsError(err)
			if !ok {
				t.Fatalf("error %v (%T), want a ports.Error", err, err)
			}
			if e.Kind != tt.kind || (tt.code != "" && e.Code != tt.code) || e.RetryAfter != tt.retryAfter {
				t.Fatalf("error %+v (%v), want kind %s code %q retry after %s", e, err, tt.kind, tt.code, tt.retryAfter)
			}
			if res.Content != tt.partial {
				t.Fatalf("partial content %q, want %q", res.Content, tt.partial)
			}
			if tt.code == ports.CodeContextLength && !errors.Is(err, ports.ErrContextLength) {
				t.Fatalf("%v is not ErrContextLength", err)
			}
		})
	}
}
