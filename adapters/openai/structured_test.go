package openai

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
	"github.com/devpilot/devpilot/ports"
)

func TestLenientSchema(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"an unanchored pattern goes",
			`{"type":"string","pattern":"\\S","description":"d"}`,
			`{"type":"string","description":"d"}`},
		{"an anchored pattern stays",
			`{"type":"string","pattern":"^ST-[1-9][0-9]*\\.[1-9][0-9]*$"}`,
			`{"type":"string","pattern":"^ST-[1-9][0-9]*\\.[1-9][0-9]*$"}`},
		{"an anchored pattern with a class escape goes",
			`{"type":"string","pattern":"^\\d+$"}`,
			`{"type":"string"}`},
		{"an anchored pattern with a lookahead goes",
			`{"type":"string","pattern":"^(?!x).*$"}`,
			`{"type":"string"}`},
		{"the anchored form of some non-blank character goes",
			`{"type":"string","pattern":"^[\\s\\S]*\\S[\\s\\S]*$"}`,
			`{"type":"string"}`},
		{"escapes GBNF knows stay",
			`{"type":"string","pattern":"^[\\x41-\\u005A\\t\\n]+\\.$"}`,
			`{"type":"string","pattern":"^[\\x41-\\u005A\\t\\n]+\\.$"}`},
		{"an escaped backslash is no class escape",
			`{"type":"string","pattern":"^a\\\\d$"}`,
			`{"type":"string","pattern":"^a\\\\d$"}`},
		{"format and lengths go",
			`{"type":"string","format":"date-time","minLength":1,"maxLength":80}`,
			`{"type":"string"}`},
		{"unsupported keywords go, the supported stay",
			`{"type":"array","uniqueItems":true,"minItems":1,"maxItems":3,"contains":{"type":"string"},"items":{"type":"integer","minimum":1,"multipleOf":2,"enum":[2,4]}}`,
			`{"type":"array","minItems":1,"maxItems":3,"items":{"type":"integer","minimum":1,"enum":[2,4]}}`},
		{"properties named like keywords stay, in their order",
			`{"type":"object","properties":{"pattern":{"type":"string","pattern":"\\S"},"format":{"type":"string","format":"email"},"a":{"type":"string"}},"required":["pattern","format","a"],"additionalProperties":false}`,
			`{"type":"object","properties":{"pattern":{"type":"string"},"format":{"type":"string"},"a":{"type":"string"}},"required":["pattern","format","a"],"additionalProperties":false}`},
		{"subschemas everywhere",
			`{"$defs":{"t":{"type":"string","pattern":"\\S"}},"anyOf":[{"$ref":"#/$defs/t"},{"type":"string","maxLength":3}],"prefixItems":[{"format":"uuid"}],"additionalProperties":{"type":"string","minLength":2},"not":{"type":"null"}}`,
			`{"$defs":{"t":{"type":"string"}},"anyOf":[{"$ref":"#/$defs/t"},{"type":"string"}],"prefixItems":[{}],"additionalProperties":{"type":"string"}}`},
		{"tuple items and boolean schemas",
			`{"items":[{"type":"string","pattern":"x"},true],"additionalProperties":false}`,
			`{"items":[{"type":"string"},true],"additionalProperties":false}`},
		{"values that are not schemas are copied as they are",
			`{"enum":[{"pattern":"\\S"}],"const":{"format":"x"},"default":{"maxLength":1},"minimum":1e2}`,
			`{"enum":[{"pattern":"\\S"}],"const":{"format":"x"},"default":{"maxLength":1},"minimum":1e2}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := LenientSchema(json.RawMessage(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
	for _, bad := range []string{`{"type":`, `{"properties":{"a":[}}`, `nope`} {
		if _, err := LenientSchema(json.RawMessage(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		} else {
			wantError(t, err, ports.KindInvalid, ports.CodeInvalidRequest)
		}
	}
}

// stageSchemas are the stage schemas of core/spec, read from the tree (the
// core has no exported accessor and keeps them beside its code), so the
// modes are tested with what the spec engine really sends.
func stageSchemas(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "core", "spec", "schemas", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no stage schemas found: %v", err)
	}
	out := make(map[string]json.RawMessage, len(files))
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, raw); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out["spec_"+strings.TrimSuffix(filepath.Base(f), ".json")] = compact.Bytes()
	}
	return out
}

// patterns lists the values of the pattern keys in schema.
func patterns(t *testing.T, schema json.RawMessage) []string {
	t.Helper()
	var doc any
	if err := json.Unmarshal(schema, &doc); err != nil {
		t.Fatal(err)
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, sub := range v {
				if p, ok := sub.(string); ok && k == "pattern" {
					out = append(out, p)
				}
				walk(sub)
			}
		case []any:
			for _, sub := range v {
				walk(sub)
			}
		}
	}
	walk(doc)
	return out
}

// stageRequest is a spec stage's call: a system prompt, the inputs, and the
// stage's schema, strict, as core/spec asks for it.
func stageRequest(name string, schema json.RawMessage) ports.ChatRequest {
	return ports.ChatRequest{
		Messages: []ports.Message{
			{Role: ports.MessageSystem, Content: "You write specifications."},
			{Role: ports.MessageUser, Content: "Inputs: a todo app."},
		},
		ResponseFormat: &ports.JSONSchemaFormat{Name: name, Schema: schema, Strict: true},
	}
}

// Each mode is accepted by the kind of provider it is for, with every stage
// schema; each kind of provider refuses the modes it cannot take, which
// proves the fake enforces what the mode works around.
func TestStructuredOutputAgainstProviders(t *testing.T) {
	t.Parallel()
	schemas := stageSchemas(t)
	tests := []struct {
		mode     StructuredOutput
		provider fakeopenai.StructuredOutput
		ok       bool
		message  string
	}{
		{StructuredStrict, fakeopenai.StructuredOutputOpenAI, true, ""},
		{StructuredLenient, fakeopenai.StructuredOutputOpenAI, true, ""},
		{StructuredJSONObject, fakeopenai.StructuredOutputOpenAI, true, ""},
		{StructuredLenient, fakeopenai.StructuredOutputLlamaCpp, true, ""},
		{StructuredJSONObject, fakeopenai.StructuredOutputLlamaCpp, true, ""},
		{StructuredJSONObject, fakeopenai.StructuredOutputJSONObject, true, ""},
		// Unanchored or not, the stage schemas' "some non-blank character"
		// patterns are beyond llama.cpp.
		{StructuredStrict, fakeopenai.StructuredOutputLlamaCpp, false, "Pattern must start with '^' and end with '$'|Failed to parse grammar"},
		{StructuredStrict, fakeopenai.StructuredOutputJSONObject, false, "This response_format type is unavailable now"},
		{StructuredLenient, fakeopenai.StructuredOutputJSONObject, false, "This response_format type is unavailable now"},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode)+" on "+string(tt.provider), func(t *testing.T) {
			t.Parallel()
			f := fakeopenai.New(t, fakeopenai.WithStructuredOutput(tt.provider))
			c, _ := newTestClient(t, f, func(cfg *Config) { cfg.StructuredOutput = tt.mode })
			for name, schema := range schemas {
				if tt.ok {
					f.Enqueue(fakeopenai.Text(`{"ok":true}`))
				}
				res, err := c.Chat(t.Context(), stageRequest(name, schema), nil)
				if !tt.ok {
					e := wantError(t, err, ports.KindInvalid, ports.CodeInvalidRequest)
					if !slices.ContainsFunc(strings.Split(tt.message, "|"), func(m string) bool { return strings.Contains(e.Message, m) }) {
						t.Errorf("%s: message %q, want it to say %q", name, e.Message, tt.message)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if res.Content != `{"ok":true}` {
					t.Errorf("%s: content %q", name, res.Content)
				}
			}
			if f.Pending() != 0 {
				t.Errorf("%d responses left", f.Pending())
			}
		})
	}
}

// What each mode puts on the wire.
func TestStructuredOutputWire(t *testing.T) {
	t.Parallel()
	schemas := stageSchemas(t)
	schema := schemas["spec_stories"]
	if schema == nil {
		t.Fatal("no stories schema")
	}
	var dropped []string
	for _, p := range patterns(t, schema) {
		if !grammarPattern(p) {
			dropped = append(dropped, p)
		}
	}
	if len(dropped) == 0 {
		t.Fatal("the stories schema has no pattern lenient mode drops any more: choose another for this test")
	}
	lenient, err := LenientSchema(schema)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		mode  StructuredOutput
		check func(t *testing.T, r fakeopenai.Request)
	}{
		{StructuredStrict, func(t *testing.T, r fakeopenai.Request) {
			rf := r.ResponseFormat
			if rf == nil || rf.Type != "json_schema" || rf.JSONSchema == nil || !rf.JSONSchema.Strict ||
				rf.JSONSchema.Name != "spec_stories" || !bytes.Equal(rf.JSONSchema.Schema, schema) {
				t.Errorf("response_format %+v", rf)
			}
			if len(r.Messages) != 2 || r.Messages[0].Content != "You write specifications." {
				t.Errorf("messages %+v", r.Messages)
			}
		}},
		{StructuredLenient, func(t *testing.T, r fakeopenai.Request) {
			rf := r.ResponseFormat
			if rf == nil || rf.Type != "json_schema" || rf.JSONSchema == nil || rf.JSONSchema.Strict ||
				rf.JSONSchema.Name != "spec_stories" || !bytes.Equal(rf.JSONSchema.Schema, lenient) {
				t.Errorf("response_format %+v", rf)
			}
			wire := patterns(t, rf.JSONSchema.Schema)
			for _, p := range dropped {
				if slices.Contains(wire, p) {
					t.Errorf("pattern %q is on the wire", p)
				}
			}
			if !slices.Contains(wire, `^ST-[1-9][0-9]*\.[1-9][0-9]*$`) {
				t.Errorf("patterns on the wire %q: the story id's is missing", wire)
			}
			if len(r.Messages) != 2 || r.Messages[0].Content != "You write specifications." {
				t.Errorf("messages %+v", r.Messages)
			}
		}},
		{StructuredJSONObject, func(t *testing.T, r fakeopenai.Request) {
			if rf := r.ResponseFormat; rf == nil || rf.Type != "json_object" || rf.JSONSchema != nil {
				t.Errorf("response_format %+v", rf)
			}
			if len(r.Messages) != 2 {
				t.Fatalf("messages %+v", r.Messages)
			}
			sys := r.Messages[0].Content
			head, body, ok := strings.Cut(sys, "\n\n")
			line, schemaText, ok2 := strings.Cut(body, "\n")
			if !ok || !ok2 || head != "You write specifications." ||
				line != "Answer with one JSON object, and nothing else, that matches this JSON Schema (spec_stories):" ||
				schemaText != string(schema) {
				t.Errorf("system message %q", sys)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode), func(t *testing.T) {
			t.Parallel()
			f := fakeopenai.New(t)
			f.Enqueue(fakeopenai.Text(`{}`))
			c, _ := newTestClient(t, f, func(cfg *Config) { cfg.StructuredOutput = tt.mode })
			if _, err := c.Chat(t.Context(), stageRequest("spec_stories", schema), nil); err != nil {
				t.Fatal(err)
			}
			tt.check(t, f.Requests()[0])
		})
	}
}

// The capability follows the model a request goes to; a json_object request
// without a system message gets one.
func TestStructuredOutputPerModel(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	c, _ := newTestClient(t, f, func(cfg *Config) {
		cfg.Model = "gpt-4o"
		cfg.StructuredOutputByModel = map[string]StructuredOutput{"llama-3.1": StructuredJSONObject, "qwen": StructuredLenient}
	})
	schema := json.RawMessage(`{"type":"object","properties":{"a":{"type":"string","pattern":"\\S"}},"required":["a"],"additionalProperties":false}`)
	tests := []struct {
		model, wantType string
		wantStrict      bool
		wantMessages    int
	}{
		{"", "json_schema", true, 1},
		{"gpt-4o", "json_schema", true, 1},
		{"llama-3.1", "json_object", false, 2},
		{"qwen", "json_schema", false, 1},
	}
	for _, tt := range tests {
		f.Enqueue(fakeopenai.Text(`{"a":"x"}`))
		req := userSays("go")
		req.Model = tt.model
		req.ResponseFormat = &ports.JSONSchemaFormat{Name: "n", Schema: schema, Strict: true}
		if _, err := c.Chat(t.Context(), req, nil); err != nil {
			t.Fatalf("%q: %v", tt.model, err)
		}
		reqs := f.Requests()
		r := reqs[len(reqs)-1]
		rf := r.ResponseFormat
		if rf == nil || rf.Type != tt.wantType || (rf.JSONSchema != nil && rf.JSONSchema.Strict != tt.wantStrict) {
			t.Errorf("%q: response_format %+v", tt.model, rf)
		}
		if len(r.Messages) != tt.wantMessages {
			t.Errorf("%q: %d messages, want %d", tt.model, len(r.Messages), tt.wantMessages)
		}
		if tt.wantType == "json_object" && (r.Messages[0].Role != "system" || !strings.HasPrefix(r.Messages[0].Content, "Answer with one JSON object")) {
			t.Errorf("%q: first message %+v", tt.model, r.Messages[0])
		}
	}
}

func TestStructuredOutputConfig(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  func(*Config)
		ok   bool
	}{
		{"default", func(*Config) {}, true},
		{"each mode", func(c *Config) {
			c.StructuredOutput = StructuredLenient
			c.StructuredOutputByModel = map[string]StructuredOutput{"a": StructuredStrict, "b": StructuredJSONObject}
		}, true},
		{"unknown default", func(c *Config) { c.StructuredOutput = "loose" }, false},
		{"unknown for a model", func(c *Config) { c.StructuredOutputByModel = map[string]StructuredOutput{"a": ""} }, false},
	}
	for _, tt := range tests {
		cfg := Config{APIKey: testKey, BaseURL: "http://127.0.0.1:1/v1", Model: "m"}
		tt.cfg(&cfg)
		_, err := New(cfg)
		if tt.ok != (err == nil) {
			t.Errorf("%s: error %v", tt.name, err)
		}
		if err != nil {
			wantError(t, err, ports.KindInternal, string(ports.KindInternal))
		}
	}
}

// Tools follow the provider's structured output mode too: only a strict
// provider gets the strict flag, and the others get the lenient wire schema.
func TestToolsFollowStructuredOutput(t *testing.T) {
	t.Parallel()
	schema := json.RawMessage(`{"type":"object","properties":{"service":{"type":"string","pattern":"\\S","maxLength":64}},"required":["service"],"additionalProperties":false}`)
	for _, tt := range []struct {
		mode       StructuredOutput
		strict     bool
		keepsLimit bool
	}{
		{StructuredStrict, true, true},
		{StructuredLenient, false, false},
		{StructuredJSONObject, false, false},
	} {
		f := fakeopenai.New(t)
		f.Enqueue(fakeopenai.Text("ok"))
		c, _ := newTestClient(t, f, func(cfg *Config) { cfg.StructuredOutput = tt.mode })
		req := userSays("scale it")
		req.Tools = []ports.ToolDefinition{{Name: "scale", Description: "Scales.", Parameters: schema, Strict: true}}
		if _, err := c.Chat(t.Context(), req, nil); err != nil {
			t.Fatalf("%s: %v", tt.mode, err)
		}
		sent := f.Requests()[0].Tools
		if len(sent) != 1 || sent[0].Strict != tt.strict || bytes.Contains(sent[0].Parameters, []byte("maxLength")) != tt.keepsLimit ||
			bytes.Contains(sent[0].Parameters, []byte("pattern")) != tt.keepsLimit {
			t.Errorf("%s: tool sent %+v (%s)", tt.mode, sent, sent[0].Parameters)
		}
	}
}
