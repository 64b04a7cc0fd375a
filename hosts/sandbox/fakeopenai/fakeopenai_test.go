package fakeopenai_test

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

const chatBody = `{"model":"gpt-test","stream":%t,"stream_options":%s,"messages":[{"role":"user","content":"say hello please"}]}`

func post(t *testing.T, url, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url+"/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func streamBody(usage bool) string {
	opts := "null"
	if usage {
		opts = `{"include_usage":true}`
	}
	return fmt.Sprintf(chatBody, true, opts)
}

// chunk is the part of a chat.completion.chunk the tests look at.
type chunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Role      string            `json:"role"`
			Content   *string           `json:"content"`
			ToolCalls []json.RawMessage `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
}

// events reads a stream's data lines; each must be followed by a blank line.
func events(t *testing.T, body io.Reader) (datas []string, readErr error) {
	t.Helper()
	r := bufio.NewReader(body)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			if line != "" {
				t.Errorf("unterminated line %q", line)
			}
			if errors.Is(err, io.EOF) {
				return datas, nil
			}
			return datas, err
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("line %q is not a data line", line)
		}
		datas = append(datas, strings.TrimSuffix(data, "\n"))
		if blank, err := r.ReadString('\n'); err != nil || blank != "\n" {
			t.Fatalf("data line not followed by a blank line: %q, %v", blank, err)
		}
	}
}

func decodeChunks(t *testing.T, datas []string) []chunk {
	t.Helper()
	var out []chunk
	for _, d := range datas {
		if d == "[DONE]" {
			continue
		}
		var c chunk
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			t.Fatalf("chunk %q: %v", d, err)
		}
		out = append(out, c)
	}
	return out
}

func TestStreamWireFormat(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	f.Enqueue(fakeopenai.Text("hello big world"))
	resp := post(t, f.URL(), streamBody(true))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	datas, err := events(t, resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if last := datas[len(datas)-1]; last != "[DONE]" {
		t.Fatalf("last event %q, want [DONE]", last)
	}
	chunks := decodeChunks(t, datas)
	var text strings.Builder
	var deltas []string
	for i, c := range chunks {
		if c.Object != "chat.completion.chunk" || c.ID == "" || c.Model != "gpt-test" {
			t.Errorf("chunk %d: object %q id %q model %q", i, c.Object, c.ID, c.Model)
		}
		for _, ch := range c.Choices {
			if ch.Delta.Content != nil && *ch.Delta.Content != "" {
				deltas = append(deltas, *ch.Delta.Content)
				text.WriteString(*ch.Delta.Content)
			}
		}
	}
	if got, want := strings.Join(deltas, "|"), "hello| big| world"; got != want {
		t.Errorf("deltas %q, want %q", got, want)
	}
	if chunks[0].Choices[0].Delta.Role != "assistant" {
		t.Errorf("first chunk has role %q", chunks[0].Choices[0].Delta.Role)
	}
	fin := chunks[len(chunks)-2]
	if fr := fin.Choices[0].FinishReason; fr == nil || *fr != "stop" {
		t.Errorf("finish chunk %+v", fin)
	}
	usage := chunks[len(chunks)-1]
	if len(usage.Choices) != 0 || usage.Usage == nil {
		t.Fatalf("usage chunk %+v", usage)
	}
	if u := usage.Usage; u.PromptTokens != 3 || u.CompletionTokens != 3 || u.TotalTokens != 6 {
		t.Errorf("usage %+v", *u)
	}
	for _, c := range chunks[:len(chunks)-1] {
		if c.Usage != nil {
			t.Errorf("usage in a chunk other than the last: %+v", c)
		}
	}
}

func TestStreamWithoutUsage(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	f.Enqueue(fakeopenai.TextChunks("a", "b").WithUsage(7, 9).WithFinishReason("length"))
	resp := post(t, f.URL(), streamBody(false))
	datas, err := events(t, resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range datas {
		if strings.Contains(d, `"usage"`) {
			t.Errorf("usage sent though not asked for: %s", d)
		}
	}
	chunks := decodeChunks(t, datas)
	if fr := chunks[len(chunks)-1].Choices[0].FinishReason; fr == nil || *fr != "length" {
		t.Errorf("finish reason %v", fr)
	}
}

func TestToolCallShapes(t *testing.T) {
	t.Parallel()
	calls := []fakeopenai.Call{
		{ID: "call_a", Name: "get_weather", Arguments: `{"city":"Paris"}`},
		{ID: "call_b", Name: "get_time", Arguments: `{"tz":"UTC"}`},
	}
	tests := []struct {
		name string
		resp fakeopenai.Response
		want []string // the tool_calls array of each chunk that carries one
	}{
		{
			name: "openai",
			resp: fakeopenai.ToolCalls(calls...),
			want: []string{
				`[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}}]`,
				`[{"index":0,"function":{"arguments":"{\"city\":\"Paris\"}"}}]`,
				`[{"index":1,"id":"call_b","type":"function","function":{"name":"get_time","arguments":""}}]`,
				`[{"index":1,"function":{"arguments":"{\"tz\":\"UTC\"}"}}]`,
			},
		},
		{
			name: "ollama without index",
			resp: fakeopenai.ToolCalls(calls...).WholeToolCalls().OmitToolCallIndex(),
			want: []string{
				`[{"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]`,
				`[{"id":"call_b","type":"function","function":{"name":"get_time","arguments":"{\"tz\":\"UTC\"}"}}]`,
			},
		},
		{
			name: "same index in one chunk",
			resp: fakeopenai.ToolCalls(calls...).ToolCallsInOneChunk().SameToolCallIndex(),
			want: []string{
				`[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},` +
					`{"index":0,"id":"call_b","type":"function","function":{"name":"get_time","arguments":"{\"tz\":\"UTC\"}"}}]`,
			},
		},
		{
			name: "first index 3, split, duplicate entries",
			resp: fakeopenai.ToolCalls(calls[0]).FirstToolCallIndex(3).SplitArguments(8).DuplicateToolCallEntries(),
			want: []string{
				`[{"index":3,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}},` +
					`{"index":3,"function":{"arguments":"{\"city\":"}}]`,
				`[{"index":3,"function":{"arguments":"\"Paris\"}"}}]`,
			},
		},
		{
			name: "interleaved without ids",
			resp: fakeopenai.ToolCalls(calls...).InterleaveToolCalls().OmitToolCallIDs(),
			want: []string{
				`[{"index":0,"type":"function","function":{"name":"get_weather","arguments":""}}]`,
				`[{"index":1,"type":"function","function":{"name":"get_time","arguments":""}}]`,
				`[{"index":0,"function":{"arguments":"{\"city\":\"Paris\"}"}}]`,
				`[{"index":1,"function":{"arguments":"{\"tz\":\"UTC\"}"}}]`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := fakeopenai.New(t)
			f.Enqueue(tt.resp)
			datas, err := events(t, post(t, f.URL(), streamBody(false)).Body)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			var finish string
			for _, c := range decodeChunks(t, datas) {
				for _, ch := range c.Choices {
					if ch.Delta.ToolCalls != nil {
						b, err := json.Marshal(ch.Delta.ToolCalls)
						if err != nil {
							t.Fatal(err)
						}
						got = append(got, string(b))
					}
					if ch.FinishReason != nil {
						finish = *ch.FinishReason
					}
				}
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("tool call chunks:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			if finish != "tool_calls" {
				t.Errorf("finish_reason %q", finish)
			}
		})
	}
}

func TestStreamFaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		resp     fakeopenai.Response
		wantErr  bool   // the body ends with an error rather than EOF
		wantLast string // prefix of the last data line
		done     bool
	}{
		{"truncated", fakeopenai.Text("one two").Truncated(), false, `{"id"`, false},
		{"truncated after 1", fakeopenai.Text("one two").TruncatedAfter(1), false, `{"id"`, false},
		{"aborted", fakeopenai.Text("one two").AbortedAfter(1), true, `{"id"`, false},
		{"malformed", fakeopenai.Text("one two").MalformedAfter(1), false, "[DONE]", true},
		{"error event", fakeopenai.Text("one two").FailAfter(1, fakeopenai.RateLimited(0)), false, `{"error":{`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := fakeopenai.New(t)
			f.Enqueue(tt.resp)
			datas, err := events(t, post(t, f.URL(), streamBody(false)).Body)
			if (err != nil) != tt.wantErr {
				t.Fatalf("read error %v, want error %v", err, tt.wantErr)
			}
			last := datas[len(datas)-1]
			if !strings.HasPrefix(last, tt.wantLast) {
				t.Errorf("last event %q, want prefix %q", last, tt.wantLast)
			}
			sawFinish, sawDone, malformed := false, false, 0
			for _, d := range datas {
				sawDone = sawDone || d == "[DONE]"
				sawFinish = sawFinish || strings.Contains(d, `"finish_reason":"`)
				if d != "[DONE]" && !json.Valid([]byte(d)) {
					malformed++
				}
			}
			if sawDone != tt.done || sawFinish != tt.done {
				t.Errorf("[DONE] %v, finish_reason %v; want %v", sawDone, sawFinish, tt.done)
			}
			if want := map[bool]int{true: 1}[tt.name == "malformed"]; malformed != want {
				t.Errorf("%d malformed chunks, want %d", malformed, want)
			}
		})
	}
}

func TestNonStreamingCompletion(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	f.Enqueue(
		fakeopenai.Text(`{"title":"Hi"}`),
		fakeopenai.ToolCalls(fakeopenai.Call{Name: "list_repos", Arguments: `{}`}),
	)
	body := `{"model":"gpt-test","messages":[{"role":"user","content":"t"}],` +
		`"response_format":{"type":"json_schema","json_schema":{"name":"title","schema":{"type":"object"},"strict":true}}}`
	var got struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct {
				Role      string  `json:"role"`
				Content   *string `json:"content"`
				ToolCalls []struct {
					ID       string `json:"id"`
					Type     string `json:"type"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			TotalTokens int `json:"total_tokens"`
		} `json:"usage"`
	}
	resp := post(t, f.URL(), body)
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if m := got.Choices[0].Message; got.Object != "chat.completion" || m.Content == nil || *m.Content != `{"title":"Hi"}` ||
		got.Choices[0].FinishReason != "stop" || got.Usage.TotalTokens == 0 {
		t.Errorf("completion %+v", got)
	}
	rf := f.Requests()[0].ResponseFormat
	if rf == nil || rf.Type != "json_schema" || rf.JSONSchema == nil || rf.JSONSchema.Name != "title" ||
		!rf.JSONSchema.Strict || string(rf.JSONSchema.Schema) != `{"type":"object"}` {
		t.Errorf("recorded response_format %+v", rf)
	}

	got.Choices = nil
	if err := json.NewDecoder(post(t, f.URL(), body).Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	m := got.Choices[0].Message
	if m.Content != nil || len(m.ToolCalls) != 1 || m.ToolCalls[0].ID != "call_0" || m.ToolCalls[0].Type != "function" ||
		m.ToolCalls[0].Function.Name != "list_repos" || got.Choices[0].FinishReason != "tool_calls" {
		t.Errorf("tool call completion %+v", got)
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		resp       fakeopenai.Response
		status     int
		retryAfter string
		code       any
	}{
		{"rate limited", fakeopenai.RateLimited(1500 * time.Millisecond), 429, "2", "rate_limit_exceeded"},
		{"quota", fakeopenai.QuotaExceeded(), 429, "", "insufficient_quota"},
		{"server error", fakeopenai.ServerError(), 500, "", nil},
		{"overloaded", fakeopenai.Overloaded(), 503, "", nil},
		{"context length", fakeopenai.ContextLengthExceeded(), 400, "", "context_length_exceeded"},
		{"unauthorized", fakeopenai.Unauthorized(), 401, "", "invalid_api_key"},
		{"custom", fakeopenai.APIError(422, "invalid_request_error", "bad", "nope").WithHeader("X-Extra", "1"), 422, "", "bad"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := fakeopenai.New(t)
			f.Enqueue(tt.resp)
			resp := post(t, f.URL(), streamBody(true))
			if resp.StatusCode != tt.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if got := resp.Header.Get("Retry-After"); got != tt.retryAfter {
				t.Errorf("Retry-After %q, want %q", got, tt.retryAfter)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			var body struct {
				Error *struct {
					Message string `json:"message"`
					Type    string `json:"type"`
					Param   any    `json:"param"`
					Code    any    `json:"code"`
				} `json:"error"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || body.Error == nil {
				t.Fatalf("error body: %v %+v", err, body)
			}
			if body.Error.Message == "" || body.Error.Type == "" || body.Error.Code != tt.code {
				t.Errorf("error %+v", *body.Error)
			}
		})
	}
}

func TestHangup(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	f.Enqueue(fakeopenai.Hangup())
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, f.URL()+"/chat/completions", strings.NewReader(streamBody(false)))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("got status %d, want a connection error", resp.StatusCode)
	}
}

// errorRecorder is a testing.TB whose Errorf is noted instead of failing.
type errorRecorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *errorRecorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func TestNothingScripted(t *testing.T) {
	t.Parallel()
	rec := &errorRecorder{TB: t}
	f := fakeopenai.New(rec)
	resp := post(t, f.URL(), streamBody(false))
	if resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("status %d", resp.StatusCode)
	}
	b, _ := io.ReadAll(resp.Body)
	if !bytes.Contains(b, []byte("no response scripted")) || !json.Valid(b) {
		t.Errorf("body %s", b)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.errors) != 1 || !strings.Contains(rec.errors[0], "no response scripted") {
		t.Errorf("test failures %q", rec.errors)
	}
}

func TestRecordsRequests(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	f.Enqueue(fakeopenai.Text("ok"))
	body := `{"model":"m","stream":true,"stream_options":{"include_usage":true},"max_completion_tokens":50,` +
		`"messages":[{"role":"system","content":"be brief"},` +
		`{"role":"user","content":[{"type":"text","text":"hi "},{"type":"image_url","image_url":{"url":"x"}},{"type":"text","text":"there"}]},` +
		`{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"c1","content":"42"}],` +
		`"tools":[{"type":"function","function":{"name":"f","description":"does f","parameters":{"type":"object"},"strict":true}}]}`
	resp := post(t, f.URL(), body)
	_, _ = io.Copy(io.Discard, resp.Body)
	post(t, f.URL()+"/unknown", `{}`)

	reqs := f.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests recorded", len(reqs))
	}
	r := reqs[0]
	if r.Method != "POST" || r.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-test" ||
		r.Model != "m" || !r.Stream || !r.IncludeUsage || r.MaxCompletionTokens != 50 || string(r.Body) != body {
		t.Errorf("request %+v", r)
	}
	want := []fakeopenai.Message{
		{Role: "system", Content: "be brief"},
		{Role: "user", Content: "hi there"},
		{Role: "assistant", ToolCalls: []fakeopenai.Call{{ID: "c1", Name: "f", Arguments: "{}"}}},
		{Role: "tool", Content: "42", ToolCallID: "c1"},
	}
	if fmt.Sprint(r.Messages) != fmt.Sprint(want) {
		t.Errorf("messages %+v\nwant %+v", r.Messages, want)
	}
	if len(r.Tools) != 1 || r.Tools[0].Name != "f" || r.Tools[0].Description != "does f" || r.Tools[0].Type != "function" ||
		string(r.Tools[0].Parameters) != `{"type":"object"}` || !r.Tools[0].Strict {
		t.Errorf("tools %+v", r.Tools)
	}
	if reqs[1].Path != "/v1/unknown/chat/completions" {
		t.Errorf("second request path %q", reqs[1].Path)
	}
	if f.Pending() != 0 {
		t.Errorf("%d responses pending", f.Pending())
	}
}

func TestBadJSONIsRejected(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	f.Enqueue(fakeopenai.Text("never sent"))
	resp := post(t, f.URL(), `{"model":`)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("status %d", resp.StatusCode)
	}
	if f.Pending() != 1 {
		t.Errorf("a bad request consumed a scripted response")
	}
}

func TestDelaysFollowTheClient(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	f.Enqueue(fakeopenai.Text("slow").WithFirstTokenDelay(time.Hour))
	resp := post(t, f.URL(), streamBody(false))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	// Closing the body mid-wait must end the handler, or the server's
	// cleanup would wait for the hour.
	resp.Body.Close()
}

func TestNewTLSServesHTTP2(t *testing.T) {
	t.Parallel()
	s := fakeopenai.NewTLS(t)
	s.Enqueue(fakeopenai.Text("over h2"))
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.CACertPEM()) {
		t.Fatal("CACertPEM is not a PEM certificate")
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}}
	resp, err := client.Post(s.URL()+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","stream":false,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "over h2") {
		t.Fatalf("%s %d %s", resp.Proto, resp.StatusCode, body)
	}
	if fakeopenai.New(t).CACertPEM() != nil {
		t.Error("a plain HTTP fake has a certificate")
	}
}
