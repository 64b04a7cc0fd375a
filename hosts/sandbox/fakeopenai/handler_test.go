package fakeopenai_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// serve serves a NewHandler fake the way a sandbox does and returns its
// OpenAI base URL.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// completion posts a non-streaming chat request and returns the status and
// the message content of the answer ("" for an error).
func completion(t *testing.T, base, body string) (int, string) {
	t.Helper()
	resp := post(t, base, body)
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		return resp.StatusCode, string(raw)
	}
	var got struct {
		Choices []struct {
			Message struct {
				Content *string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(raw, &got); err != nil || len(got.Choices) != 1 || got.Choices[0].Message.Content == nil {
		t.Fatalf("completion %s: %v", raw, err)
	}
	return resp.StatusCode, *got.Choices[0].Message.Content
}

func userBody(text string) string {
	b, err := json.Marshal(map[string]any{
		"model":    "gpt-test",
		"messages": []map[string]any{{"role": "system", "content": "be nice"}, {"role": "user", "content": text}},
	})
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestNewHandlerWithoutResponder(t *testing.T) {
	t.Parallel()
	f := fakeopenai.NewHandler()
	if f.URL() != "" || f.AzureURL() != "" || f.CACertPEM() != nil {
		t.Errorf("URL %q, AzureURL %q, CACertPEM %v for a fake that is not listening", f.URL(), f.AzureURL(), f.CACertPEM())
	}
	base := serve(t, f)

	// Unscripted: a 500, and no test to fail (the fake has no testing.TB).
	status, body := completion(t, base, userBody("hi"))
	if status != http.StatusInternalServerError || !strings.Contains(body, `"no_response_scripted"`) {
		t.Errorf("unscripted request: %d %s", status, body)
	}

	f.Enqueue(fakeopenai.Text("scripted answer"))
	if status, text := completion(t, base, userBody("hi")); status != http.StatusOK || text != "scripted answer" {
		t.Errorf("scripted request: %d %q", status, text)
	}

	resp := post(t, strings.TrimSuffix(base, "/v1")+"/v2", userBody("hi"))
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown path: status %d", resp.StatusCode)
	}
	if n := len(f.Requests()); n != 3 {
		t.Errorf("%d requests recorded, want 3", n)
	}
}

func TestSetResponder(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		fake func(*testing.T) (*fakeopenai.Server, string)
	}{
		{"New", func(t *testing.T) (*fakeopenai.Server, string) { f := fakeopenai.New(t); return f, f.URL() }},
		{"NewHandler", func(t *testing.T) (*fakeopenai.Server, string) { f := fakeopenai.NewHandler(); return f, serve(t, f) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, base := tt.fake(t)
			f.SetResponder(func(r *fakeopenai.Request) fakeopenai.Response {
				return fakeopenai.Text(fmt.Sprintf("echo %s (%d messages)", r.LastMessage().Content, len(r.Messages)))
			})
			f.Enqueue(fakeopenai.Text("scripted first"))

			if _, text := completion(t, base, userBody("one")); text != "scripted first" {
				t.Errorf("first answer %q, want the scripted one", text)
			}
			if _, text := completion(t, base, userBody("two")); text != "echo two (2 messages)" {
				t.Errorf("second answer %q, want the responder's", text)
			}

			// The responder's answers stream like scripted ones.
			datas, err := events(t, post(t, base, strings.Replace(userBody("three"), `"model"`, `"stream":true,"model"`, 1)).Body)
			if err != nil {
				t.Fatal(err)
			}
			var streamed strings.Builder
			for _, c := range decodeChunks(t, datas) {
				for _, ch := range c.Choices {
					if ch.Delta.Content != nil {
						streamed.WriteString(*ch.Delta.Content)
					}
				}
			}
			if got := streamed.String(); got != "echo three (2 messages)" {
				t.Errorf("streamed answer %q", got)
			}

			f.SetResponder(nil)
			if tt.name == "NewHandler" { // a New fake would fail the test
				if status, _ := completion(t, base, userBody("four")); status != http.StatusInternalServerError {
					t.Errorf("without a responder: status %d, want 500", status)
				}
			}
		})
	}
}

func TestResponderConcurrent(t *testing.T) {
	t.Parallel()
	f := fakeopenai.NewHandler()
	base := serve(t, f)
	var mu sync.Mutex
	seen := map[string]bool{}
	f.SetResponder(func(r *fakeopenai.Request) fakeopenai.Response {
		mu.Lock()
		seen[r.LastMessage().Content] = true
		mu.Unlock()
		return fakeopenai.Text("re: " + r.LastMessage().Content)
	})
	const n = 20
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			msg := fmt.Sprintf("message %d", i)
			if f.Pending() != 0 {
				t.Error("script not empty")
			}
			if _, text := completion(t, base, userBody(msg)); text != "re: "+msg {
				t.Errorf("answer %q to %q", text, msg)
			}
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Errorf("responder saw %d distinct requests, want %d", len(seen), n)
	}
}

func TestHandlerHistory(t *testing.T) {
	t.Parallel()
	f := fakeopenai.NewHandler()
	base := serve(t, f)
	f.SetResponder(func(*fakeopenai.Request) fakeopenai.Response { return fakeopenai.Text("ok") })
	total := fakeopenai.HandlerHistory + 5
	for i := range total {
		completion(t, base, userBody(fmt.Sprint(i)))
	}
	reqs := f.Requests()
	if len(reqs) != fakeopenai.HandlerHistory {
		t.Fatalf("%d requests kept, want %d", len(reqs), fakeopenai.HandlerHistory)
	}
	if first, last := reqs[0].LastMessage().Content, reqs[len(reqs)-1].LastMessage().Content; first != "5" || last != fmt.Sprint(total-1) {
		t.Errorf("kept requests %s..%s, want the newest", first, last)
	}
}

func TestRequestAccessors(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	seen := make(chan fakeopenai.Request, 1)
	f.SetResponder(func(r *fakeopenai.Request) fakeopenai.Response {
		seen <- *r
		return fakeopenai.Text("{}")
	})
	body := `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}],` +
		`"tools":[{"type":"function","function":{"name":"list_repos","description":"d","parameters":{"type":"object"}}}],` +
		`"response_format":{"type":"json_schema","json_schema":{"name":"spec_prd","schema":{"type":"object"},"strict":true}}}`
	completion(t, f.URL(), body)
	got := <-seen
	if name := got.ResponseSchemaName(); name != "spec_prd" {
		t.Errorf("ResponseSchemaName %q", name)
	}
	if tool, ok := got.Tool("list_repos"); !ok || tool.Description != "d" || string(tool.Parameters) != `{"type":"object"}` {
		t.Errorf("Tool(list_repos) = %+v, %v", tool, ok)
	}
	if _, ok := got.Tool("nope"); ok {
		t.Error("Tool(nope) found")
	}
	if m := got.LastMessage(); m.Role != "assistant" || m.Content != "b" {
		t.Errorf("LastMessage %+v", m)
	}
	var empty fakeopenai.Request
	if empty.ResponseSchemaName() != "" || empty.LastMessage().Role != "" {
		t.Error("accessors of an empty request")
	}
}
