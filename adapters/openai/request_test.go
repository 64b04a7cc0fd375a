package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
	"github.com/devpilot/devpilot/ports"
)

var weatherSchema = json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)

func toolsRequest(tools []ports.ToolDefinition) ports.ChatRequest {
	return ports.ChatRequest{
		Messages: []ports.Message{{Role: ports.MessageSystem, Content: "You are devpilot."}, {Role: ports.MessageUser, Content: "Weather?"}},
		Tools:    tools,
	}
}

// goOpenAIBody is the body go-openai sends for req when it is given the tools
// itself.
func goOpenAIBody(t *testing.T, c *Client, req ports.ChatRequest) []byte {
	t.Helper()
	cl, err := c.buildRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	full := cl.req
	for _, d := range req.Tools {
		params := d.Parameters
		if len(params) == 0 {
			params = emptyObjectSchema
		}
		full.Tools = append(full.Tools, goopenai.Tool{Type: goopenai.ToolTypeFunction,
			Function: &goopenai.FunctionDefinition{Name: d.Name, Description: d.Description, Parameters: params}})
	}
	b, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestToolsAreEncodedOncePerToolSet(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	c, _ := newTestClient(t, f)
	tools := []ports.ToolDefinition{
		{Name: "get_weather", Description: "Current weather of a city.", Parameters: weatherSchema},
		{Name: "get_time", Description: "The time now."},
	}
	calls := []struct {
		name  string
		tools []ports.ToolDefinition
		reuse bool
	}{
		{"first", tools, false},
		{"same tools in another slice", slices.Clone(tools), true},
		{"fewer tools", tools[:1], false},
		{"other description", []ports.ToolDefinition{{Name: "get_weather", Description: "Weather.", Parameters: weatherSchema}}, false},
		{"no tools", nil, true},
	}
	for i, tt := range calls {
		before := c.lastTools.Load()
		f.Enqueue(fakeopenai.Text("ok"))
		req := toolsRequest(tt.tools)
		if _, err := c.Chat(t.Context(), req, nil); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := f.Requests()[i].Body; !jsonEqual(t, got, goOpenAIBody(t, c, req)) {
			t.Errorf("%s: body\n %s\nwant what go-openai sends\n %s", tt.name, got, goOpenAIBody(t, c, req))
		}
		if reused := c.lastTools.Load() == before; reused != tt.reuse {
			t.Errorf("%s: encoding reused %v, want %v", tt.name, reused, tt.reuse)
		}
	}
}

func TestResentBodyIsTheSentBody(t *testing.T) {
	t.Parallel()
	bodies := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies <- b
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	c, err := New(Config{BaseURL: srv.URL, Model: "gpt-test"})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := c.buildRequest(toolsRequest([]ports.ToolDefinition{{Name: "get_weather", Parameters: weatherSchema}}))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(cl.req) // as go-openai encodes it
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.WithValue(t.Context(), responseInfoKey{}, &responseInfo{call: cl})
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, bytes.NewBuffer(raw))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := recordingDoer{hc: srv.Client()}.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	sent := <-bodies
	if int64(len(sent)) != r.ContentLength || !bytes.Contains(sent, cl.tools.json) || !json.Valid(sent) {
		t.Fatalf("sent %d bytes for a Content-Length of %d: %s", len(sent), r.ContentLength, sent)
	}
	again, err := r.GetBody()
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(again); !bytes.Equal(b, sent) {
		t.Errorf("resent\n %s\nsent\n %s", b, sent)
	}
}

type countingCloser struct {
	io.Reader
	closes int
}

func (c *countingCloser) Close() error {
	c.closes++
	return nil
}

func TestSentBodyLetsGoOnceRead(t *testing.T) {
	t.Parallel()
	for _, closeFirst := range []bool{false, true} {
		under := &countingCloser{Reader: strings.NewReader("{}")}
		b := &sentBody{r: under, c: under}
		if closeFirst {
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
		} else if got, err := io.ReadAll(b); err != nil || string(got) != "{}" {
			t.Fatalf("read %q, %v", got, err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if b.r != nil || b.c != nil || under.closes != 1 {
			t.Errorf("close first %v: reader %v closer %v, closed %d times", closeFirst, b.r, b.c, under.closes)
		}
		if n, err := b.Read(make([]byte, 1)); n != 0 || err != io.EOF {
			t.Errorf("read after close: %d, %v", n, err)
		}
	}
}

func TestAwaitFirstByteKeepsTheBody(t *testing.T) {
	t.Parallel()
	cut := errors.New("connection reset")
	tests := []struct {
		name string
		body io.Reader
		want string
		err  error
	}{
		{"stream", strings.NewReader("data: {}\n\n"), "data: {}\n\n", nil},
		{"a byte at a time", iotest.OneByteReader(strings.NewReader("data")), "data", nil},
		{"first byte with the end", iotest.DataErrReader(strings.NewReader("d")), "d", nil},
		{"empty", strings.NewReader(""), "", nil},
		{"cut before a byte", iotest.ErrReader(cut), "", cut},
		{"cut after some", io.MultiReader(strings.NewReader("da"), iotest.ErrReader(cut)), "da", cut},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := io.ReadAll(awaitFirstByte(io.NopCloser(tt.body)))
			if string(got) != tt.want || !errors.Is(err, tt.err) {
				t.Errorf("read %q, %v; want %q, %v", got, err, tt.want, tt.err)
			}
		})
	}
}
