package fakebedrock_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/devpilot/devpilot/hosts/sandbox/fakebedrock"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

const sigv4 = "AWS4-HMAC-SHA256 Credential=AKIDTEST/20260101/us-east-1/bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature=" +
	"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// post sends body to the fake's converse-stream path for model and returns
// the status, the error type header and the body.
func post(t *testing.T, fake *fakebedrock.Server, auth, model, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, fake.URL()+"/model/"+model+"/converse-stream", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	typ, _, _ := strings.Cut(resp.Header.Get("X-Amzn-Errortype"), ":")
	return resp.StatusCode, typ, string(b)
}

func TestRefusesWhatBedrockRefuses(t *testing.T) {
	t.Parallel()
	script := fakeopenai.New(t)
	fake := fakebedrock.New(t, script)
	const tools = `"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":{"type":"object"}}}}]}`
	tests := []struct {
		name, auth, body string
		status           int
		typ, message     string
	}{
		{"no signature", "", `{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`, 403, "MissingAuthenticationTokenException", ""},
		{"not SigV4", "Bearer abc", `{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`, 403, "IncompleteSignatureException", ""},
		{"another service", strings.Replace(sigv4, "/bedrock/", "/s3/", 1), `{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`, 403, "InvalidSignatureException", ""},
		{"not JSON", sigv4, `{`, 400, "ValidationException", "Malformed input request"},
		{"no messages", sigv4, `{"messages":[]}`, 400, "ValidationException", "start with a user message"},
		{"assistant first", sigv4, `{"messages":[{"role":"assistant","content":[{"text":"hi"}]}]}`, 400, "ValidationException", "start with a user message"},
		{"not alternating", sigv4, `{"messages":[{"role":"user","content":[{"text":"a"}]},{"role":"user","content":[{"text":"b"}]}]}`, 400, "ValidationException", "alternate"},
		{"unknown role", sigv4, `{"messages":[{"role":"user","content":[{"text":"a"}]},{"role":"system","content":[{"text":"b"}]}]}`, 400, "ValidationException", "enum value set"},
		{"empty content", sigv4, `{"messages":[{"role":"user","content":[]}]}`, 400, "ValidationException", "is empty"},
		{"blank text", sigv4, `{"messages":[{"role":"user","content":[{"text":"  "}]}]}`, 400, "ValidationException", "is blank"},
		{"blank system", sigv4, `{"system":[{"text":""}],"messages":[{"role":"user","content":[{"text":"a"}]}]}`, 400, "ValidationException", "is blank"},
		{"tool blocks without toolConfig", sigv4, `{"messages":[{"role":"user","content":[{"text":"a"}]},{"role":"assistant","content":[{"toolUse":{"toolUseId":"t1","name":"f","input":{}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"t1","content":[{"text":"r"}]}}]}]}`, 400, "ValidationException", "toolConfig"},
		{"result answering nothing", sigv4, `{` + tools + `,"messages":[{"role":"user","content":[{"text":"a"}]},{"role":"assistant","content":[{"toolUse":{"toolUseId":"t1","name":"f","input":{}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"t2","content":[{"text":"r"}]}}]}]}`, 400, "ValidationException", "does not match"},
		{"unanswered call", sigv4, `{` + tools + `,"messages":[{"role":"user","content":[{"text":"a"}]},{"role":"assistant","content":[{"toolUse":{"toolUseId":"t1","name":"f","input":{}}}]},{"role":"user","content":[{"text":"and?"}]}]}`, 400, "ValidationException", "Expected toolResult"},
		{"forced tool not offered", sigv4, `{"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":{"type":"object"}}}}],"toolChoice":{"tool":{"name":"g"}}},"messages":[{"role":"user","content":[{"text":"a"}]}]}`, 400, "ValidationException", "not in toolConfig"},
		{"cachePoint first", sigv4, `{"system":[{"cachePoint":{"type":"default"}}],"messages":[{"role":"user","content":[{"text":"a"}]}]}`, 400, "ValidationException", "cachePoint"},
		{"forced tool on Llama", sigv4, `{"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":{"type":"object"}}}}],"toolChoice":{"tool":{"name":"f"}}},"messages":[{"role":"user","content":[{"text":"a"}]}]}`, 400, "ValidationException", "toolChoice"},
		{"prompt caching on Llama", sigv4, `{"system":[{"text":"s"},{"cachePoint":{"type":"default"}}],"messages":[{"role":"user","content":[{"text":"a"}]}]}`, 400, "ValidationException", "prompt caching"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			model := "anthropic.claude-3-5-haiku-20241022-v1:0"
			if strings.Contains(tt.name, "Llama") {
				model = "meta.llama3-3-70b-instruct-v1:0"
			}
			status, typ, body := post(t, fake, tt.auth, model, tt.body)
			if status != tt.status || typ != tt.typ || !strings.Contains(body, tt.message) {
				t.Fatalf("answer %d %s %s", status, typ, body)
			}
		})
	}
	if n := len(script.Requests()); n != 0 {
		t.Fatalf("%d refused requests reached the script", n)
	}
}

// client is the SDK's client of the fake.
func client(t *testing.T, fake *fakebedrock.Server) *bedrockruntime.Client {
	t.Helper()
	return bedrockruntime.New(bedrockruntime.Options{
		Region:           "us-east-1",
		BaseEndpoint:     sdkaws.String(fake.URL()),
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
		RetryMaxAttempts: 1,
	})
}

func TestConverse(t *testing.T) {
	t.Parallel()
	script := fakeopenai.New(t)
	fake := fakebedrock.New(t, script)
	c := client(t, fake)
	script.Enqueue(
		fakeopenai.Text("Looking.").WithToolCalls(fakeopenai.Call{ID: "tooluse_1", Name: "f", Arguments: `{"a":1}`}).WithUsage(10, 4),
		fakeopenai.Text(`{"answer":42}`),
		fakeopenai.RateLimited(0),
	)
	tools := &types.ToolConfiguration{Tools: []types.Tool{&types.ToolMemberToolSpec{Value: types.ToolSpecification{
		Name: sdkaws.String("f"), InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(map[string]any{"type": "object"})},
	}}}}
	user := []types.Message{{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "hi"}}}}
	out, err := c.Converse(context.Background(), &bedrockruntime.ConverseInput{ModelId: sdkaws.String("amazon.nova-pro-v1:0"), Messages: user, ToolConfig: tools})
	if err != nil {
		t.Fatal(err)
	}
	msg := out.Output.(*types.ConverseOutputMemberMessage).Value
	if out.StopReason != types.StopReasonToolUse || len(msg.Content) != 2 || *out.Usage.InputTokens != 10 || *out.Usage.OutputTokens != 4 {
		t.Fatalf("output %+v %+v", out, msg)
	}
	if tu := msg.Content[1].(*types.ContentBlockMemberToolUse).Value; *tu.ToolUseId != "tooluse_1" || *tu.Name != "f" {
		t.Fatalf("tool use %+v", tu)
	}
	if r := script.Requests()[0]; r.Stream || r.Model != "amazon.nova-pro-v1:0" || len(r.Tools) != 1 {
		t.Fatalf("request %+v", r)
	}

	// Structured: the forced tool's input is the answer.
	tools.ToolChoice = &types.ToolChoiceMemberTool{Value: types.SpecificToolChoice{Name: sdkaws.String("f")}}
	out, err = c.Converse(context.Background(), &bedrockruntime.ConverseInput{ModelId: sdkaws.String("amazon.nova-pro-v1:0"), Messages: user, ToolConfig: tools})
	if err != nil {
		t.Fatal(err)
	}
	tu := out.Output.(*types.ConverseOutputMemberMessage).Value.Content[0].(*types.ContentBlockMemberToolUse).Value
	var input map[string]any
	if err := tu.Input.UnmarshalSmithyDocument(&input); err != nil || *tu.Name != "f" || fmt.Sprint(input["answer"]) != "42" {
		t.Fatalf("structured answer %+v (%v): %v", input, err, tu)
	}
	if r := script.Requests()[1]; r.ResponseSchemaName() != "f" || len(r.Tools) != 0 {
		t.Fatalf("request %+v", r)
	}

	_, err = c.Converse(context.Background(), &bedrockruntime.ConverseInput{ModelId: sdkaws.String("amazon.nova-pro-v1:0"), Messages: user})
	var throttled *types.ThrottlingException
	if !errors.As(err, &throttled) {
		t.Fatalf("err %v", err)
	}
}

func TestConverseStreamEvents(t *testing.T) {
	t.Parallel()
	script := fakeopenai.New(t)
	fake := fakebedrock.New(t, script)
	c := client(t, fake)
	script.Enqueue(fakeopenai.TextChunks("a", "b").WithToolCalls(fakeopenai.Call{ID: "t1", Name: "f", Arguments: `{}`}).WithUsage(5, 2))
	arn := "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-sonnet-4-5-20250929-v1:0"
	out, err := c.ConverseStream(context.Background(), &bedrockruntime.ConverseStreamInput{ModelId: sdkaws.String(arn),
		Messages: []types.Message{{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "hi"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for ev := range out.GetStream().Events() {
		switch e := ev.(type) {
		case *types.ConverseStreamOutputMemberMessageStart:
			kinds = append(kinds, "start")
		case *types.ConverseStreamOutputMemberContentBlockStart:
			kinds = append(kinds, "blockStart")
		case *types.ConverseStreamOutputMemberContentBlockDelta:
			kinds = append(kinds, "delta")
		case *types.ConverseStreamOutputMemberContentBlockStop:
			kinds = append(kinds, "blockStop")
		case *types.ConverseStreamOutputMemberMessageStop:
			kinds = append(kinds, "stop:"+string(e.Value.StopReason))
		case *types.ConverseStreamOutputMemberMetadata:
			kinds = append(kinds, "metadata")
		}
	}
	if err := out.GetStream().Err(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(kinds, " "); got != "start delta delta blockStop blockStart delta blockStop stop:tool_use metadata" {
		t.Fatalf("events %s", got)
	}
	if r := script.Requests()[0]; r.Model != arn || !r.Stream {
		t.Fatalf("request model %q", r.Model)
	}
}
