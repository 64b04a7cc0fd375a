package demomodel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/hosts/sandbox/demomodel"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
)

// titlePrompt is core/assistant's (title.go) with its length filled in.
const titlePrompt = `You name conversations. Reply with a title for the conversation below: at most 80 characters, in the language of the conversation, no quotes, no trailing period, nothing else.`

func TestTitle(t *testing.T) {
	t.Parallel()
	c := llm(t)
	tests := []struct {
		transcript, want string
	}{
		{"User: what runs in production?\n\nAssistant: In production there are 2 clusters.", "What runs in production"},
		{"User: Please scale the api service to 3. It is slow today.", "Please scale the api service to 3"},
		{"User: \"hello\"", "Hello"},
		{"User: " + strings.Repeat("a very long request about many things ", 10), "A very long request about many things a very long request"},
		{"User: ...", "New conversation"},
	}
	for _, tt := range tests {
		res, err := c.Chat(context.Background(), ports.ChatRequest{Messages: []ports.Message{
			{Role: ports.MessageSystem, Content: titlePrompt},
			{Role: ports.MessageUser, Content: tt.transcript},
		}, MaxTokens: 60}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.Content != tt.want || len([]rune(res.Content)) > 80 {
			t.Errorf("title of %q = %q, want %q", tt.transcript, res.Content, tt.want)
		}
	}
}

func TestGenericAnswers(t *testing.T) {
	t.Parallel()
	c := llm(t)
	res, err := c.Chat(context.Background(), ports.ChatRequest{Messages: []ports.Message{{Role: ports.MessageUser, Content: "Tell me a joke"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Content, "demo model") || res.FinishReason != ports.FinishStop {
		t.Errorf("answer %+v", res)
	}

	// Tools the model has no rule for: the generic answer, no call.
	res, err = c.Chat(context.Background(), ports.ChatRequest{
		Messages: []ports.Message{{Role: ports.MessageUser, Content: "what runs in production?"}},
		Tools:    []ports.ToolDefinition{{Name: "get_weather", Description: "d", Parameters: json.RawMessage(`{"type":"object"}`)}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ToolCalls) != 0 || !strings.Contains(res.Content, "cloud accounts") {
		t.Errorf("answer with foreign tools %+v", res)
	}

	// A structured output the model does not know: a value of its schema.
	schema := `{"type":"object","additionalProperties":false,"required":["name","tags","count","kind","nested"],"properties":{
"name":{"type":"string"},"tags":{"type":"array","minItems":2,"items":{"type":"string"}},"count":{"type":"integer","minimum":1},
"kind":{"type":"string","enum":["a","b"]},"nested":{"type":"object","required":["ok"],"properties":{"ok":{"type":"boolean"}}}}}`
	res, err = c.Chat(context.Background(), ports.ChatRequest{
		Messages:       []ports.Message{{Role: ports.MessageUser, Content: "x"}},
		ResponseFormat: &ports.JSONSchemaFormat{Name: "something_else", Schema: json.RawMessage(schema), Strict: true},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sch := compile(t, schema)
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(res.Content))
	if err != nil {
		t.Fatalf("%q: %v", res.Content, err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("%s: %v", res.Content, err)
	}
}

func compile(t *testing.T, schema string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("urn:x", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("urn:x")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestRobustness: requests the model cannot make much sense of get a text,
// never a panic or a bad call.
func TestRobustness(t *testing.T) {
	t.Parallel()
	reg := registry(t)
	var tools []fakeopenai.Tool
	for _, d := range reg.Definitions() {
		tools = append(tools, fakeopenai.Tool{Type: "function", Name: d.Name, Description: d.Description, Parameters: d.Parameters})
	}
	m := newModel()
	for i, req := range []*fakeopenai.Request{
		{},
		{Tools: tools},
		{Tools: tools, Messages: []fakeopenai.Message{{Role: "tool", Content: "not json", ToolCallID: "nope"}}},
		{Tools: tools, Messages: []fakeopenai.Message{
			{Role: "user", Content: "what runs in production"},
			{Role: "assistant", ToolCalls: []fakeopenai.Call{{ID: "c1", Name: "list_cloud_accounts", Arguments: "{bad"}}},
			{Role: "tool", ToolCallID: "c1", Content: `{"ok":true,"result":{"items":[{"id":"not-a-uuid","name":"x"}, 5, null]}}`},
		}},
		{Tools: tools, Messages: []fakeopenai.Message{
			{Role: "user", Content: "scale api to 3"},
			{Role: "assistant", ToolCalls: []fakeopenai.Call{{ID: "c1", Name: "list_services", Arguments: `{"account_id":"01900000-0000-7000-8000-0000000000a1","cluster":"c"}`}}},
			{Role: "tool", ToolCallID: "c1", Content: `{"ok":true,"result":{"items":[{"name":"api","desired":"two"}]}}`},
		}},
		{ResponseFormat: &fakeopenai.ResponseFormat{Type: "json_schema", JSONSchema: &fakeopenai.JSONSchema{Name: "spec_prps"}}},
		{ResponseFormat: &fakeopenai.ResponseFormat{Type: "json_schema", JSONSchema: &fakeopenai.JSONSchema{Name: "spec_unknown", Schema: json.RawMessage(`[`)}}},
		{ResponseFormat: &fakeopenai.ResponseFormat{Type: "json_schema", JSONSchema: &fakeopenai.JSONSchema{Name: "content_draft"}}},
	} {
		got := m.Respond(req)
		if reflect.DeepEqual(got, fakeopenai.Response{}) {
			t.Errorf("request %d: no response", i)
		}
	}
	// The account id the model was given is not a UUID: it asks rather than
	// make a call the schema refuses.
	res := respondText(t, m, &fakeopenai.Request{Tools: tools, Messages: []fakeopenai.Message{
		{Role: "user", Content: "what runs in production"},
		{Role: "assistant", ToolCalls: []fakeopenai.Call{{ID: "c1", Name: "list_cloud_accounts", Arguments: "{}"}}},
		{Role: "tool", ToolCallID: "c1", Content: `{"ok":true,"result":{"items":[{"id":"not-a-uuid","name":"x"}]}}`},
	}})
	if !strings.Contains(res, "could not put together valid arguments for list_clusters") {
		t.Errorf("answer %q", res)
	}
}

// respondText serves one request over a fake and returns the answer's text.
func respondText(t *testing.T, m *demomodel.Model, req *fakeopenai.Request) string {
	t.Helper()
	f := fakeopenai.New(t)
	f.Enqueue(m.Respond(req))
	resp := post(t, f.URL())
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(resp).Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out.Choices[0].Message.Content
}

// recorded collects the requests core's services and the assistant's loop
// send, as the fake received them.
func recorded(t *testing.T) []fakeopenai.Request {
	t.Helper()
	var all []fakeopenai.Request

	c, fake := serve(t)
	store, jobs := newMemSpecs(), &jobList{}
	svc := spec.New(spec.Config{}, spec.Deps{Specs: store, Standards: store, Tx: noTx{}, Jobs: jobs, LLM: c, Clock: fixture.NewClock(), IDs: &fixture.IDs{}})
	ctx := ports.WithPrincipal(context.Background(), alice)
	v, err := svc.CreateSession(ctx, "Demo", []spec.NewInput{{Kind: ports.InputDocument, Title: "expenses.md", Content: expenseDoc}})
	if err != nil {
		t.Fatal(err)
	}
	for range ports.Stages {
		if _, err := svc.Generate(ctx, v.Session.ID, ""); err != nil {
			t.Fatal(err)
		}
		if err := svc.RunGeneration(context.Background(), jobs.last().(spec.GenerateStageArgs), true); err != nil {
			t.Fatal(err)
		}
	}
	all = append(all, fake.Requests()...)

	ch := newChat(t, sandbox{})
	ch.llm, fake = serve(t)
	for _, msg := range []string{"what runs in production", "scale api to 3", "list my repos", "hello"} {
		ch.say(msg)
	}
	all = append(all, fake.Requests()...)
	all = append(all,
		fakeopenai.Request{Messages: []fakeopenai.Message{{Role: "system", Content: titlePrompt}, {Role: "user", Content: "User: hi there"}}},
		fakeopenai.Request{
			Messages: []fakeopenai.Message{
				{Role: "system", Content: "# Brand\nNever use these words or phrases: \"synergy\""},
				{Role: "user", Content: "# Brief\n<brief>\nTitle: Launch\nKeywords to work in: synergy, speed\nLength: 100 to 200 words\n</brief>"},
			},
			ResponseFormat: &fakeopenai.ResponseFormat{Type: "json_schema", JSONSchema: &fakeopenai.JSONSchema{Name: "content_draft", Schema: json.RawMessage(`{}`)}},
		})
	return all
}

// TestDeterministic: the same request gets the same answer, from the same
// model or another one.
func TestDeterministic(t *testing.T) {
	t.Parallel()
	reqs := recorded(t)
	if len(reqs) < 15 {
		t.Fatalf("only %d requests recorded", len(reqs))
	}
	m1, m2 := newModel(), newModel()
	for i := range reqs {
		a, b, c := m1.Respond(&reqs[i]), m1.Respond(&reqs[i]), m2.Respond(&reqs[i])
		if !reflect.DeepEqual(a, b) || !reflect.DeepEqual(a, c) {
			t.Errorf("request %d: answers differ:\n%+v\n%+v\n%+v", i, a, b, c)
		}
	}
}

// TestConcurrent answers many requests at once from one model (run with
// -race), each as it is answered alone.
func TestConcurrent(t *testing.T) {
	t.Parallel()
	reqs := recorded(t)
	m := newModel()
	want := make([]fakeopenai.Response, len(reqs))
	for i := range reqs {
		want[i] = newModel().Respond(&reqs[i])
	}
	var wg sync.WaitGroup
	for round := range 4 {
		for i := range reqs {
			wg.Go(func() {
				if got := m.Respond(&reqs[i]); !reflect.DeepEqual(got, want[i]) {
					t.Errorf("round %d, request %d: a different answer", round, i)
				}
			})
		}
	}
	wg.Wait()
}

// TestOverHTTPConcurrently has several conversations at once through one
// served model.
func TestOverHTTPConcurrently(t *testing.T) {
	t.Parallel()
	c, _ := serve(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			ch := newChat(t, sandbox{})
			ch.llm = c
			tr := ch.say(fmt.Sprintf("scale worker to %d", i+1))
			if a := tr.args("scale_service"); a["desired_count"] != float64(i+1) {
				t.Errorf("conversation %d: scale arguments %v", i, a)
			}
		})
	}
	wg.Wait()
}

func post(t *testing.T, base string) *bytes.Reader {
	t.Helper()
	resp, err := httpPost(base+"/chat/completions", `{"model":"m","messages":[{"role":"user","content":"x"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.NewReader(resp)
}
