package fakeopenai_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// TestOfferedToolsOnly: a fake that can call only offered tools answers
// text for a scripted call of a tool the request does not offer, and makes
// the call when it is offered.
func TestOfferedToolsOnly(t *testing.T) {
	t.Parallel()
	s := fakeopenai.New(t, fakeopenai.WithOfferedToolsOnly())
	s.Enqueue(
		fakeopenai.ToolCalls(fakeopenai.Call{Name: "add_note", Arguments: `{}`}),
		fakeopenai.ToolCalls(fakeopenai.Call{Name: "add_note", Arguments: `{}`}),
	)
	body := func(tools ...string) string {
		var defs []map[string]any
		for _, n := range tools {
			defs = append(defs, map[string]any{"type": "function", "function": map[string]any{"name": n, "parameters": map[string]any{"type": "object"}}})
		}
		m := map[string]any{"model": "gpt-test", "messages": []map[string]any{{"role": "user", "content": "add one"}}}
		if defs != nil {
			m["tools"] = defs
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	type answer struct {
		Choices []struct {
			Message struct {
				Content   *string           `json:"content"`
				ToolCalls []json.RawMessage `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	ask := func(b string) answer {
		resp, err := http.Post(s.URL()+"/chat/completions", "application/json", strings.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		var a answer
		if err := json.Unmarshal(raw, &a); err != nil || len(a.Choices) != 1 {
			t.Fatalf("answer %s: %v", raw, err)
		}
		return a
	}
	a := ask(body("list_notes"))
	if c := a.Choices[0]; len(c.Message.ToolCalls) != 0 || c.FinishReason != "stop" || c.Message.Content == nil ||
		!strings.HasPrefix(*c.Message.Content, fakeopenai.CannotCallPrefix+"add_note") {
		t.Errorf("without add_note offered: %+v", c)
	}
	a = ask(body("list_notes", "add_note"))
	if c := a.Choices[0]; len(c.Message.ToolCalls) != 1 || c.FinishReason != "tool_calls" {
		t.Errorf("with add_note offered: %+v", c)
	}
}
