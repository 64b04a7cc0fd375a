package fakeopenai_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// formatBody is a chat request with response_format rf (JSON) and, when
// tools is not "", those tools; system is the system message.
func formatBody(system, rf, tools string) string {
	b := `{"model":"m","messages":[{"role":"system","content":` + quote(system) + `},{"role":"user","content":"go"}]`
	if rf != "" {
		b += `,"response_format":` + rf
	}
	if tools != "" {
		b += `,"tools":` + tools
	}
	return b + "}"
}

func quote(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func schemaFormat(schema string, strict bool) string {
	s := "false"
	if strict {
		s = "true"
	}
	return `{"type":"json_schema","json_schema":{"name":"spec_scope","schema":` + schema + `,"strict":` + s + `}}`
}

const (
	strictSchema     = `{"type":"object","additionalProperties":false,"required":["id","title"],"properties":{"id":{"type":"string","pattern":"^ST-[1-9][0-9]*$"},"title":{"type":"string","pattern":"\\S"}}}`
	anchoredSchema   = `{"type":"object","additionalProperties":false,"required":["id","title"],"properties":{"id":{"type":"string","pattern":"^ST-[1-9][0-9]*$"},"title":{"type":"string"}}}`
	notRequired      = `{"type":"object","additionalProperties":false,"required":["id"],"properties":{"id":{"type":"string"},"title":{"type":"string"}}}`
	openNested       = `{"type":"object","additionalProperties":false,"required":["items"],"properties":{"items":{"type":"array","items":{"type":"object","required":["a"],"properties":{"a":{"type":"string"}}}}}}`
	withMaxLength    = `{"type":"object","additionalProperties":false,"required":["a"],"properties":{"a":{"type":"string","maxLength":5}}}`
	arrayRoot        = `{"type":"array","items":{"type":"string"}}`
	anchoredClasses  = `{"type":"object","additionalProperties":false,"required":["title"],"properties":{"title":{"type":"string","pattern":"^[\\s\\S]*\\S[\\s\\S]*$"}}}`
	patternAsName    = `{"type":"object","additionalProperties":false,"required":["pattern"],"properties":{"pattern":{"type":"string"}}}`
	jsonObjectFormat = `{"type":"json_object"}`
)

func TestStructuredOutputModes(t *testing.T) {
	t.Parallel()
	strictTool := `[{"type":"function","function":{"name":"list_things","parameters":` + notRequired + `,"strict":true}}]`
	looseTool := `[{"type":"function","function":{"name":"list_things","parameters":` + notRequired + `}}]`
	tests := []struct {
		name    string
		mode    fakeopenai.StructuredOutput
		body    string
		status  int
		message string // a part of the error message
		param   string
	}{
		{"any accepts everything", fakeopenai.StructuredOutputAny, formatBody("x", schemaFormat(notRequired, true), strictTool), 200, "", ""},

		{"openai: a strict schema", fakeopenai.StructuredOutputOpenAI, formatBody("x", schemaFormat(strictSchema, true), ""), 200, "", ""},
		{"openai: a property not required", fakeopenai.StructuredOutputOpenAI, formatBody("x", schemaFormat(notRequired, true), ""), 400,
			"Invalid schema for response_format 'spec_scope': In context=(), 'required' is required to be supplied and to be an array including every key in properties. Missing 'title'.", "response_format"},
		{"openai: a nested object without additionalProperties", fakeopenai.StructuredOutputOpenAI, formatBody("x", schemaFormat(openNested, true), ""), 400,
			"In context=('properties', 'items', 'items'), 'additionalProperties' is required to be supplied and to be false.", "response_format"},
		{"openai: maxLength", fakeopenai.StructuredOutputOpenAI, formatBody("x", schemaFormat(withMaxLength, true), ""), 400,
			"In context=('properties', 'a'), 'maxLength' is not permitted.", "response_format"},
		{"openai: an array at the root", fakeopenai.StructuredOutputOpenAI, formatBody("x", schemaFormat(arrayRoot, true), ""), 400,
			`schema must be a JSON Schema of 'type: "object"', got 'type: "array"'.`, "response_format"},
		{"openai: anything goes without strict", fakeopenai.StructuredOutputOpenAI, formatBody("x", schemaFormat(openNested, false), ""), 200, "", ""},
		{"openai: a strict tool", fakeopenai.StructuredOutputOpenAI, formatBody("x", "", strictTool), 400,
			"Invalid schema for function 'list_things': In context=(), 'required' is required", "tools[0].function.parameters"},
		{"openai: a tool without strict", fakeopenai.StructuredOutputOpenAI, formatBody("x", "", looseTool), 200, "", ""},
		{"openai: json_object with JSON in the prompt", fakeopenai.StructuredOutputOpenAI, formatBody("Answer in JSON.", jsonObjectFormat, ""), 200, "", ""},
		{"openai: json_object without", fakeopenai.StructuredOutputOpenAI, formatBody("x", jsonObjectFormat, ""), 400,
			"'messages' must contain the word 'json' in some form", "messages"},

		{"llama.cpp: anchored patterns", fakeopenai.StructuredOutputLlamaCpp, formatBody("x", schemaFormat(anchoredSchema, false), ""), 200, "", ""},
		{"llama.cpp: a property named pattern", fakeopenai.StructuredOutputLlamaCpp, formatBody("x", schemaFormat(patternAsName, false), ""), 200, "", ""},
		{"llama.cpp: an unanchored pattern", fakeopenai.StructuredOutputLlamaCpp, formatBody("x", schemaFormat(strictSchema, false), ""), 400,
			"JSON schema conversion failed:\nPattern must start with '^' and end with '$'", ""},
		{"llama.cpp: an anchored pattern with escapes GBNF does not know", fakeopenai.StructuredOutputLlamaCpp, formatBody("x", schemaFormat(anchoredClasses, false), ""), 400,
			"Failed to parse grammar", ""},
		{"openai: the same pattern", fakeopenai.StructuredOutputOpenAI, formatBody("x", schemaFormat(anchoredClasses, true), ""), 200, "", ""},
		{"llama.cpp: strict is no excuse", fakeopenai.StructuredOutputLlamaCpp, formatBody("x", schemaFormat(strictSchema, true), ""), 400,
			"Pattern must start with '^' and end with '$'", ""},
		{"llama.cpp: json_object", fakeopenai.StructuredOutputLlamaCpp, formatBody("x", jsonObjectFormat, ""), 200, "", ""},

		{"json_object: json_schema", fakeopenai.StructuredOutputJSONObject, formatBody("json", schemaFormat(anchoredSchema, false), ""), 400,
			"This response_format type is unavailable now", ""},
		{"json_object: json_object", fakeopenai.StructuredOutputJSONObject, formatBody("Reply with JSON.", jsonObjectFormat, ""), 200, "", ""},
		{"json_object: without JSON in the prompt", fakeopenai.StructuredOutputJSONObject, formatBody("x", jsonObjectFormat, ""), 400,
			"Prompt must contain the word 'json'", ""},
		{"json_object: plain text", fakeopenai.StructuredOutputJSONObject, formatBody("x", "", ""), 200, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := fakeopenai.New(t, fakeopenai.WithStructuredOutput(tt.mode))
			if tt.status == http.StatusOK {
				f.Enqueue(fakeopenai.Text(`{}`))
			}
			resp := post(t, f.URL(), tt.body)
			raw, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, raw)
			}
			if len(f.Requests()) != 1 {
				t.Errorf("%d requests recorded, want 1", len(f.Requests()))
			}
			if tt.status == http.StatusOK {
				return
			}
			var e struct {
				Error struct {
					Message string `json:"message"`
					Type    string `json:"type"`
					Param   any    `json:"param"`
				} `json:"error"`
			}
			if err := json.Unmarshal(raw, &e); err != nil {
				t.Fatalf("error body %s: %v", raw, err)
			}
			if !strings.Contains(e.Error.Message, tt.message) || e.Error.Type != "invalid_request_error" {
				t.Errorf("error %+v, want a message containing %q", e.Error, tt.message)
			}
			if tt.param != "" && e.Error.Param != tt.param {
				t.Errorf("param %v, want %s", e.Error.Param, tt.param)
			}
		})
	}
}

// A rejected request consumes no scripted response, and the mode can be
// changed on a running fake.
func TestSetStructuredOutput(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	f.SetStructuredOutput(fakeopenai.StructuredOutputJSONObject)
	f.Enqueue(fakeopenai.Text(`{"ok":true}`))
	body := formatBody("x", schemaFormat(anchoredSchema, true), "")
	if resp := post(t, f.URL(), body); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d, want 400", resp.StatusCode)
	}
	if f.Pending() != 1 {
		t.Fatalf("%d responses pending, want 1", f.Pending())
	}
	f.SetStructuredOutput(fakeopenai.StructuredOutputOpenAI)
	if resp := post(t, f.URL(), body); resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
}
