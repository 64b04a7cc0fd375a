package fakeanthropic_test

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeanthropic"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

func post(t *testing.T, url string, header map[string]string, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/v1/messages", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

var good = map[string]string{"X-Api-Key": "k", "Anthropic-Version": "2023-06-01"}

// TestRefusesWhatTheAPIRefuses sends requests the real API refuses and
// expects its error JSON, without the script being consulted.
func TestRefusesWhatTheAPIRefuses(t *testing.T) {
	t.Parallel()
	script := fakeopenai.New(t)
	fake := fakeanthropic.New(t, script)
	const tools = `"tools":[{"name":"t","input_schema":{"type":"object"}}]`
	tests := []struct {
		name   string
		header map[string]string
		body   string
		status int
		typ    string
		says   string
	}{
		{"no key", map[string]string{"Anthropic-Version": "2023-06-01"}, `{}`, 401, "authentication_error", "x-api-key"},
		{"no version", map[string]string{"X-Api-Key": "k"}, `{}`, 400, "invalid_request_error", "anthropic-version"},
		{"not JSON", good, `{`, 400, "invalid_request_error", "request body"},
		{"no max_tokens", good, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, 400, "invalid_request_error", "max_tokens"},
		{"no messages", good, `{"model":"m","max_tokens":5,"messages":[]}`, 400, "invalid_request_error", "messages"},
		{"unknown role", good, `{"model":"m","max_tokens":5,"messages":[{"role":"system","content":"hi"}]}`, 400, "invalid_request_error", "role"},
		{"not alternating", good, `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"a"},{"role":"user","content":"b"}]}`, 400, "invalid_request_error", "alternate"},
		{"assistant first", good, `{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":"a"},{"role":"user","content":"b"}]}`, 400, "invalid_request_error", "first message"},
		{"empty content", good, `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[]}]}`, 400, "invalid_request_error", "non-empty content"},
		{"empty text", good, `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":""}]}`, 400, "invalid_request_error", "non-empty"},
		{"orphan tool_result", good, `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"x","content":"r"}]}]}`, 400, "invalid_request_error", "tool_use_id"},
		{"unanswered tool_use", good, `{"model":"m","max_tokens":5,` + tools + `,"messages":[{"role":"user","content":"a"},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"x","name":"t","input":{}}]},{"role":"user","content":"b"}]}`, 400, "invalid_request_error", "without `tool_result`"},
		{"result after text", good, `{"model":"m","max_tokens":5,` + tools + `,"messages":[{"role":"user","content":"a"},` +
			`{"role":"assistant","content":[{"type":"tool_use","id":"x","name":"t","input":{}}]},` +
			`{"role":"user","content":[{"type":"text","text":"b"},{"type":"tool_result","tool_use_id":"x"}]}]}`, 400, "invalid_request_error", "at the start"},
		{"forced unknown tool", good, `{"model":"m","max_tokens":5,` + tools + `,"tool_choice":{"type":"tool","name":"u"},` +
			`"messages":[{"role":"user","content":"a"}]}`, 400, "invalid_request_error", "not found"},
		{"schema not object", good, `{"model":"m","max_tokens":5,"tools":[{"name":"t","input_schema":{"type":"array"}}],` +
			`"messages":[{"role":"user","content":"a"}]}`, 400, "invalid_request_error", "input_schema"},
	}
	for _, tt := range tests {
		resp, body := post(t, fake.URL(), tt.header, tt.body)
		var e struct {
			Type  string `json:"type"`
			Error struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(body, &e); err != nil || resp.StatusCode != tt.status || e.Type != "error" ||
			e.Error.Type != tt.typ || !strings.Contains(e.Error.Message, tt.says) {
			t.Errorf("%s: %d %s", tt.name, resp.StatusCode, body)
		}
	}
	if n := len(script.Requests()); n != 0 {
		t.Errorf("the script was consulted %d times", n)
	}
}

// TestStreamsAndAnswersJSON checks the wire of a turn: the events of a
// stream, and the message of a request that does not stream.
func TestStreamsAndAnswersJSON(t *testing.T) {
	t.Parallel()
	script := fakeopenai.New(t)
	fake := fakeanthropic.New(t, script)
	script.Enqueue(
		fakeopenai.Text("hi there").WithToolCalls(fakeopenai.Call{ID: "toolu_9", Name: "t", Arguments: `{"a":1}`}),
		fakeopenai.Text("plain"),
	)
	body := `{"model":"m","max_tokens":5,"stream":true,"tools":[{"name":"t","input_schema":{"type":"object"}}],` +
		`"messages":[{"role":"user","content":"a"}]}`
	resp, b := post(t, fake.URL(), good, body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var events []string
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		if ev, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			events = append(events, ev)
		}
	}
	want := "message_start ping content_block_start content_block_delta content_block_delta content_block_stop " +
		"content_block_start content_block_delta content_block_stop message_delta message_stop"
	if got := strings.Join(events, " "); got != want {
		t.Errorf("events:\n%s\nwant\n%s", got, want)
	}
	if !strings.Contains(string(b), `"stop_reason":"tool_use"`) || !strings.Contains(string(b), `"partial_json":"{\"a\":1}"`) {
		t.Errorf("stream = %s", b)
	}
	resp, b = post(t, fake.URL(), good, `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"a"}]}`)
	var msg struct {
		Type    string `json:"type"`
		Content []struct {
			Type, Text string
		} `json:"content"`
		StopReason string `json:"stop_reason"`
	}
	if err := json.Unmarshal(b, &msg); err != nil || resp.StatusCode != 200 || msg.Type != "message" ||
		len(msg.Content) != 1 || msg.Content[0].Text != "plain" || msg.StopReason != "end_turn" {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
}

// TestErrorsOnTheWire checks that a turn's errors are Anthropic's.
func TestErrorsOnTheWire(t *testing.T) {
	t.Parallel()
	script := fakeopenai.New(t)
	fake := fakeanthropic.New(t, script)
	tests := []struct {
		resp   fakeopenai.Response
		status int
		typ    string
		says   string
		header string
	}{
		{fakeopenai.RateLimited(4 * time.Second), 429, "rate_limit_error", "", "4"},
		{fakeopenai.Overloaded(), 529, "overloaded_error", "Overloaded", ""},
		{fakeopenai.ServerError(), 500, "api_error", "", ""},
		{fakeopenai.Unauthorized(), 401, "authentication_error", "invalid x-api-key", ""},
		{fakeopenai.ContextLengthExceeded(), 400, "invalid_request_error", "prompt is too long: 130412 tokens > 128000 maximum", ""},
	}
	for _, tt := range tests {
		script.Enqueue(tt.resp)
		resp, b := post(t, fake.URL(), good, `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"a"}]}`)
		var e struct {
			Error struct{ Type, Message string } `json:"error"`
		}
		if err := json.Unmarshal(b, &e); err != nil || resp.StatusCode != tt.status || e.Error.Type != tt.typ ||
			!strings.Contains(e.Error.Message, tt.says) || resp.Header.Get("Retry-After") != tt.header {
			t.Errorf("%d %v %s, want %d %s", resp.StatusCode, resp.Header, b, tt.status, tt.typ)
		}
	}
}
