package anthropic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/devpilot/devpilot/adapters/anthropic"
	"github.com/devpilot/devpilot/hosts/sandbox/demomodel"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeanthropic"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
	"github.com/devpilot/devpilot/ports"
)

// demo is a client of a fake Anthropic API answered by the sandbox's demo
// model, as the sandbox serves it (fakeopenai.NewHandler with the model as
// responder).
func demo(t *testing.T) *anthropic.Client {
	t.Helper()
	script := fakeopenai.NewHandler()
	script.SetResponder(demomodel.New().Respond)
	script.SetModel(ports.SandboxModel)
	fake := fakeanthropic.New(t, script)
	c, err := anthropic.New(anthropic.Config{APIKey: "sk-ant-demo", BaseURL: fake.URL(), Model: "claude-demo"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestDemoModelWritesSpecStage asks the demo model for the scope stage with
// the specification engine's schema, through the fake's forced tool, and
// checks the answer against that schema.
func TestDemoModelWritesSpecStage(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../core/spec/schemas/scope.json")
	if err != nil {
		t.Fatal(err)
	}
	res, err := demo(t).Chat(context.Background(), ports.ChatRequest{
		Messages: []ports.Message{
			system("Write the scope of the initiative from the material."),
			user("<input kind=\"note\" title=\"Idea\">Employees submit expenses with a photo of the receipt; managers approve them.</input>"),
		},
		ResponseFormat: &ports.JSONSchemaFormat{Name: "spec_scope", Schema: raw, Strict: true},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.FinishReason != ports.FinishStop || len(res.ToolCalls) != 0 || res.Model != ports.SandboxModel {
		t.Fatalf("result = %+v", res)
	}
	schema, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	comp := jsonschema.NewCompiler()
	if err := comp.AddResource("scope.json", schema); err != nil {
		t.Fatal(err)
	}
	sch, err := comp.Compile("scope.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(res.Content)))
	if err != nil {
		t.Fatalf("the answer is not JSON: %v\n%s", err, res.Content)
	}
	if err := sch.Validate(doc); err != nil {
		t.Errorf("the answer does not match the scope schema: %v\n%s", err, res.Content)
	}
}

// TestDemoModelCallsTools has the demo model pick a tool offered through
// the fake and summarise its result on the next turn.
func TestDemoModelCallsTools(t *testing.T) {
	t.Parallel()
	c := demo(t)
	tools := []ports.ToolDefinition{{Name: "list_repos", Description: "List the organisation's repositories.",
		Parameters: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)}}
	msgs := []ports.Message{system("You are devpilot's assistant."), user("Which repos do we have?")}
	res, err := c.Chat(context.Background(), ports.ChatRequest{Messages: msgs, Tools: tools}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.FinishReason != ports.FinishToolCalls || len(res.ToolCalls) != 1 || res.ToolCalls[0].Name != "list_repos" {
		t.Fatalf("result = %+v", res)
	}
	msgs = append(msgs, ports.Message{Role: ports.MessageAssistant, Content: res.Content, ToolCalls: res.ToolCalls},
		ports.Message{Role: ports.MessageTool, ToolCallID: res.ToolCalls[0].ID, Name: "list_repos",
			Content: `{"items":[{"full_name":"acme/api"},{"full_name":"acme/web"}]}`})
	res, err = c.Chat(context.Background(), ports.ChatRequest{Messages: msgs, Tools: tools}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.FinishReason != ports.FinishStop || res.Content == "" {
		t.Errorf("summary = %+v", res)
	}
}
