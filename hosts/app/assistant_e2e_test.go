package app_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/hosts/app"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeaws"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

func TestMain(m *testing.M) { sqlstoretest.Main(m) }

var listening = regexp.MustCompile(`listening on (http://[^\s"]+)`)

// addrWatch is a log writer that hands out the address of the first
// listening line; slog writes one record per Write.
type addrWatch struct {
	once sync.Once
	addr chan string
}

func (w *addrWatch) Write(p []byte) (int, error) {
	if m := listening.FindSubmatch(p); m != nil {
		w.once.Do(func() { w.addr <- string(m[1]) })
	}
	return len(p), nil
}

// stack is a running devpilot (HTTP + worker) on a fresh database, with the
// model served by fakeopenai and two test tools registered.
type stack struct {
	t      *testing.T
	base   string
	model  *fakeopenai.Server
	aws    *fakeaws.Server
	scales atomic.Int32
	id     *identity.Service
	reg    *tool.Registry
	// h2c, when set, sends call's requests over HTTP/2 without TLS, and
	// call insists that they are answered so; else http.DefaultClient.
	h2c *http.Client
	// stop, set by startReplicas, stops the replica (once: the test's
	// cleanup calls it too).
	stop func() error
}

func startStack(t *testing.T, dialect string) *stack {
	t.Helper()
	return startStackWith(t, dialect, nil)
}

// startStackWith starts a stack whose environment also has extra.
func startStackWith(t *testing.T, dialect string, extra map[string]string) *stack {
	t.Helper()
	return startStackOn(t, stackCase{dialect: sqlstoreDialect(dialect), provider: onOpenAI}, extra)
}

// startStackOn starts a stack on c's database and model provider (see
// providerEnv) whose environment also has extra.
func startStackOn(t *testing.T, c stackCase, extra map[string]string) *stack {
	t.Helper()
	skipShort(t)
	dialect := string(c.dialect)
	st := &stack{t: t, model: fakeopenai.New(t, fakeopenai.WithOfferedToolsOnly()), aws: fakeaws.New(t)}
	env := map[string]string{
		app.EnvAWSEndpoint:   st.aws.URL(),
		app.EnvDatabaseURL:   stackDBURL(t, sqlstoreDialect(dialect)),
		app.EnvDatabaseConns: strconv.Itoa(sqlstoretest.TestMaxConns),
		app.EnvDataDir:       t.TempDir(),
		app.EnvHTTPAddr:      "127.0.0.1:0",
		app.EnvOpenAIKey:     "sk-test",
		app.EnvOpenAIBaseURL: st.model.URL(),
		// The fake plays OpenAI, which enforces schemas (another base URL
		// defaults to lenient).
		app.EnvLLMStructured: "strict",
		// The scripts hold the chat's model calls only: a test of titles
		// after the first answer turns them on in extra.
		app.EnvAutoTitle: "0",
	}
	maps.Copy(env, c.modelEnv(t, st.model))
	maps.Copy(env, extra)
	cfg, err := app.Load(app.ModeRun, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	logs := &addrWatch{addr: make(chan string, 1)}
	fxApp := fx.New(
		app.Options(cfg, app.NewLogger(cfg, logs)),
		fx.Invoke(func(r *tool.Registry) error { return r.Register(st.tools()...) }),
		fx.Populate(&st.id, &st.reg),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := fxApp.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := fxApp.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	select {
	case st.base = <-logs.addr:
	case <-time.After(10 * time.Second):
		t.Fatal("no listening line")
	}
	return st
}

func (st *stack) tools() []tool.Tool {
	return []tool.Tool{
		{
			Name: "list_widgets", Description: "Lists the widgets.", Effect: tool.EffectRead,
			Schema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
			Run: func(context.Context, json.RawMessage) (any, error) {
				return map[string]any{"services": []string{"checkout", "search"}}, nil
			},
		},
		{
			Name: "resize_widget", Description: "Resizes a widget.", Effect: tool.EffectWrite,
			Schema: json.RawMessage(`{"type":"object","properties":{"service":{"type":"string"},
				"desired_count":{"type":"integer","minimum":0,"maximum":1000}},
				"required":["service","desired_count"],"additionalProperties":false}`),
			Summary: func(args json.RawMessage) string {
				var a struct {
					Service      string `json:"service"`
					DesiredCount int    `json:"desired_count"`
				}
				_ = json.Unmarshal(args, &a)
				return fmt.Sprintf("Scale %s to %d tasks", a.Service, a.DesiredCount)
			},
			Run: func(context.Context, json.RawMessage) (any, error) {
				return map[string]int{"desired_count": int(st.scales.Add(1)) + 2}, nil
			},
		},
	}
}

// operator issues a token for email in acme with the operator role, whom
// the default permission policy lets run cloud writes and publish.
func (st *stack) operator(email string) string {
	st.t.Helper()
	tok, err := st.id.IssueToken(context.Background(), identity.IssueTokenInput{Email: email, OrgName: "acme", Role: "operator"})
	if err != nil {
		st.t.Fatal(err)
	}
	return tok.Token
}

func (st *stack) token(email string) string {
	st.t.Helper()
	tok, err := st.id.IssueToken(context.Background(), identity.IssueTokenInput{Email: email, OrgName: "acme"})
	if err != nil {
		st.t.Fatal(err)
	}
	return tok.Token
}

type sse struct {
	ID   int64
	Name string
	Data map[string]any
}

// call sends a request and returns the status, the body, and the body's SSE
// events when it is an event stream.
func (st *stack) call(token, method, path string, body any, header ...string) (int, []byte, []sse) {
	st.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, st.base+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	client := http.DefaultClient
	if st.h2c != nil {
		client = st.h2c
	}
	resp, err := client.Do(req)
	if err != nil {
		st.t.Fatal(err)
	}
	defer resp.Body.Close()
	if st.h2c != nil && resp.ProtoMajor != 2 {
		st.t.Fatalf("%s %s answered over %s, want HTTP/2", method, path, resp.Proto)
	}
	raw, _ := io.ReadAll(resp.Body)
	st.conform(st.t, resp, raw)
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		return resp.StatusCode, raw, nil
	}
	return resp.StatusCode, raw, parseSSE(st.t, raw)
}

func parseSSE(t *testing.T, raw []byte) []sse {
	t.Helper()
	var out []sse
	var cur sse
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.Name != "" {
				out = append(out, cur)
			}
			cur = sse{}
		case strings.HasPrefix(line, "id: "):
			cur.ID, _ = strconv.ParseInt(line[4:], 10, 64)
		case strings.HasPrefix(line, "event: "):
			cur.Name = line[7:]
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(line[6:]), &cur.Data); err != nil {
				t.Fatalf("data is not one line of JSON: %q", line)
			}
		}
	}
	for i := 1; i < len(out); i++ {
		if out[i].ID <= out[i-1].ID {
			t.Fatalf("event ids not increasing: %d after %d", out[i].ID, out[i-1].ID)
		}
	}
	if n := len(out); n == 0 || out[n-1].Name != "done" {
		t.Fatalf("stream does not end with done: %s", raw)
	}
	return out
}

func names(evs []sse) string {
	var s []string
	for _, e := range evs {
		s = append(s, e.Name)
	}
	return strings.Join(s, ",")
}

func find(evs []sse, name string) sse {
	for _, e := range evs {
		if e.Name == name {
			return e
		}
	}
	return sse{}
}

func TestAssistantEndToEnd(t *testing.T) {
	t.Parallel()
	for _, c := range stackCases() {
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			st := startStackOn(t, c, nil)
			alice, bob := st.token("alice@example.com"), st.token("bob@example.com")

			// Preferences reach the system prompt of later turns.
			if code, body, _ := st.call(alice, "POST", "/api/v1/agent/memory/preferences",
				map[string]any{"preferences": []map[string]string{{"instruction": "Answer in one sentence."}}}); code != 200 {
				t.Fatalf("set preferences: %d %s", code, body)
			}

			// A chat that reads, then asks to write.
			st.model.Enqueue(
				fakeopenai.ToolCalls(fakeopenai.Call{ID: "call_1", Name: "list_widgets", Arguments: `{}`}),
				fakeopenai.Text("Scaling checkout now.").WithToolCalls(fakeopenai.Call{ID: "call_2", Name: "resize_widget", Arguments: `{"service":"checkout","desired_count":3}`}),
			)
			code, body, evs := st.call(alice, "POST", "/api/v1/agent/chat", map[string]any{"message": "scale checkout to 3", "context": map[string]string{"current_page": "/cloud"}})
			if code != 200 {
				t.Fatalf("chat: %d %s", code, body)
			}
			if got := names(evs); !strings.Contains(got, "tool_call,tool_result") || !strings.HasSuffix(got, "confirmation_required,done") {
				t.Fatalf("events = %s", got)
			}
			if r := find(evs, "tool_result"); r.Data["ok"] != true || r.Data["name"] != "list_widgets" {
				t.Fatalf("tool_result = %v", r.Data)
			}
			conf := find(evs, "confirmation_required").Data
			done := evs[len(evs)-1].Data
			if done["finish_reason"] != "confirmation_required" || conf["summary"] != "Scale checkout to 3 tasks" || conf["name"] != "resize_widget" {
				t.Fatalf("confirmation %v, done %v", conf, done)
			}
			session, confID := conf["session_id"].(string), conf["confirmation_id"].(string)
			if st.scales.Load() != 0 {
				t.Fatal("the write ran before approval")
			}
			// The request the model got: the date and the preferences in the
			// system prompt, the page in the last user message, at most 20
			// strict tools chosen for the page (issue 20, item 7).
			first := st.model.Requests()[0]
			sys, lastMsg := first.Messages[0], first.Messages[len(first.Messages)-1]
			if sys.Role != "system" || !strings.Contains(sys.Content, "Answer in one sentence.") || !strings.Contains(sys.Content, "Today is ") ||
				strings.Contains(sys.Content, "current_page: /cloud") {
				t.Fatalf("system prompt = %q", sys.Content)
			}
			if lastMsg.Role != "user" || !strings.Contains(lastMsg.Content, "current_page: /cloud\n") || !strings.HasSuffix(lastMsg.Content, "scale checkout to 3") {
				t.Fatalf("last user message = %q", lastMsg.Content)
			}
			if n := len(first.Tools); n == 0 || n > tool.DefaultMaxTools {
				t.Fatalf("%d tools offered", n)
			}
			for _, tl := range first.Tools {
				// Strict function calling is OpenAI's; the other wires
				// carry the same schema without the flag.
				if (c.provider == onOpenAI && !tl.Strict) || tool.StrictProblem(tl.Parameters) != "" {
					t.Fatalf("tool %s is not strict: %s", tl.Name, tl.Parameters)
				}
			}

			// Someone else cannot see or decide it.
			if code, _, _ := st.call(bob, "POST", "/api/v1/agent/confirm", map[string]any{"session_id": session, "confirmation_id": confID, "approved": true}); code != 404 {
				t.Fatalf("bob confirming: %d", code)
			}
			if code, _, _ := st.call(bob, "GET", "/api/v1/agent/sessions/"+session, nil); code != 404 {
				t.Fatalf("bob reading the session: %d", code)
			}

			// Approve: the write runs once; deciding again is 409.
			code, body, _ = st.call(alice, "POST", "/api/v1/agent/confirm", map[string]any{"session_id": session, "confirmation_id": confID, "approved": true})
			var decided struct {
				ConfirmationID, Status string
				Result                 struct{ OK bool }
			}
			if err := json.Unmarshal(body, &decided); code != 200 || err != nil || decided.Status != "approved" || !decided.Result.OK {
				t.Fatalf("confirm: %d %s", code, body)
			}
			if code, body, _ := st.call(alice, "POST", "/api/v1/agent/confirm", map[string]any{"session_id": session, "confirmation_id": confID, "approved": true}); code != 409 || !bytes.Contains(body, []byte("approved")) {
				t.Fatalf("second confirm: %d %s", code, body)
			}
			if n := st.scales.Load(); n != 1 {
				t.Fatalf("the write ran %d times", n)
			}

			// A second chat whose write is rejected never runs.
			st.model.Enqueue(fakeopenai.ToolCalls(fakeopenai.Call{ID: "call_3", Name: "resize_widget", Arguments: `{"service":"search","desired_count":0}`}))
			_, _, evs = st.call(alice, "POST", "/api/v1/agent/chat", map[string]any{"message": "scale search to zero"})
			conf2 := find(evs, "confirmation_required").Data
			session2 := conf2["session_id"].(string)
			if session2 == session {
				t.Fatal("a chat without session_id reused a session")
			}
			code, body, _ = st.call(alice, "POST", "/api/v1/agent/confirm", map[string]any{"session_id": session2, "confirmation_id": conf2["confirmation_id"], "approved": false, "reason": "not today"})
			if code != 200 || !bytes.Contains(body, []byte(`"status":"rejected"`)) || st.scales.Load() != 1 {
				t.Fatalf("reject: %d %s (scales %d)", code, body, st.scales.Load())
			}

			// The streaming confirm continues the first session's conversation.
			st.model.Enqueue(fakeopenai.ToolCalls(fakeopenai.Call{ID: "call_4", Name: "resize_widget", Arguments: `{"service":"checkout","desired_count":4}`}))
			_, _, evs = st.call(alice, "POST", "/api/v1/agent/chat", map[string]any{"message": "make it 4", "session_id": session})
			conf3 := find(evs, "confirmation_required").Data
			st.model.Enqueue(fakeopenai.Text("Checkout now runs 4 tasks."))
			code, body, evs = st.call(alice, "POST", "/api/v1/agent/confirm",
				map[string]any{"session_id": session, "confirmation_id": conf3["confirmation_id"], "approved": true}, "Accept", "text/event-stream")
			if code != 200 || !strings.Contains(names(evs), "content") || evs[len(evs)-1].Data["finish_reason"] != "stop" {
				t.Fatalf("streaming confirm: %d %s", code, body)
			}
			if n := st.scales.Load(); n != 2 {
				t.Fatalf("writes ran %d times, want 2", n)
			}

			// The title, the list and the detail read back what happened.
			st.model.Enqueue(fakeopenai.Text(`"Scaling checkout"`))
			code, body, _ = st.call(alice, "POST", "/api/v1/agent/generate-title", map[string]any{"session_id": session})
			if code != 200 || !bytes.Contains(body, []byte(`"title":"Scaling checkout"`)) {
				t.Fatalf("generate-title: %d %s", code, body)
			}
			code, body, _ = st.call(alice, "GET", "/api/v1/agent/sessions?limit=1", nil)
			var page struct {
				Items []struct {
					ID, Title                          string
					MessageCount, PendingConfirmations int `json:"-"`
				}
				NextCursor *string `json:"next_cursor"`
			}
			if err := json.Unmarshal(body, &page); code != 200 || err != nil || len(page.Items) != 1 || page.NextCursor == nil {
				t.Fatalf("sessions page: %d %s", code, body)
			}
			code, body, _ = st.call(alice, "GET", "/api/v1/agent/sessions?cursor="+*page.NextCursor, nil)
			if code != 200 || !bytes.Contains(body, []byte(`"next_cursor":null`)) {
				t.Fatalf("second page: %d %s", code, body)
			}
			code, body, _ = st.call(alice, "GET", "/api/v1/agent/sessions/"+session, nil)
			var detail struct {
				Title         string
				Messages      []struct{ Role string }
				Confirmations []struct {
					Status string
					Result *struct{ OK bool }
				}
			}
			if err := json.Unmarshal(body, &detail); code != 200 || err != nil || detail.Title != "Scaling checkout" ||
				len(detail.Confirmations) != 2 || detail.Confirmations[0].Status != "approved" || detail.Confirmations[0].Result == nil {
				t.Fatalf("detail: %d %s", code, body)
			}
			roles := map[string]int{}
			for _, m := range detail.Messages {
				roles[m.Role]++
			}
			if roles["user"] != 2 || roles["assistant"] < 3 || roles["tool"] < 3 {
				t.Fatalf("messages by role: %v", roles)
			}
			code, body, _ = st.call(alice, "GET", "/api/v1/agent/memory/preferences", nil)
			if code != 200 || !bytes.Contains(body, []byte("Answer in one sentence.")) {
				t.Fatalf("preferences: %d %s", code, body)
			}

			// Resume: replay after an id, and 204 when nothing is left.
			_, _, evs = st.call(alice, "GET", "/api/v1/agent/sessions/"+session+"/stream", nil, "Last-Event-ID", "2")
			if len(evs) == 0 || evs[0].ID != 3 {
				t.Fatalf("replay after 2 starts at %v", evs)
			}
			last := evs[len(evs)-1].ID
			if code, _, _ := st.call(alice, "GET", fmt.Sprintf("/api/v1/agent/sessions/%s/stream?after=%d", session, last), nil); code != 204 {
				t.Fatalf("resume with nothing left: %d", code)
			}

			// Delete.
			if code, _, _ := st.call(alice, "DELETE", "/api/v1/agent/sessions/"+session2, nil); code != 204 {
				t.Fatalf("delete: %d", code)
			}
			if code, _, _ := st.call(alice, "GET", "/api/v1/agent/sessions/"+session2, nil); code != 404 {
				t.Fatalf("deleted session: %d", code)
			}
		})
	}
}

// A chat and its confirmation work over HTTP/2 without TLS, as a proxy
// multiplexing its upstream connections sends them.
func TestAssistantOverCleartextHTTP2(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startStack(t, string(d))
			tr := &http.Transport{Protocols: new(http.Protocols)}
			tr.Protocols.SetUnencryptedHTTP2(true)
			t.Cleanup(tr.CloseIdleConnections)
			st.h2c = &http.Client{Transport: tr}
			alice := st.token("alice@example.com")

			st.model.Enqueue(
				fakeopenai.ToolCalls(fakeopenai.Call{ID: "call_1", Name: "list_widgets", Arguments: `{}`}),
				fakeopenai.Text("Scaling.").WithToolCalls(fakeopenai.Call{ID: "call_2", Name: "resize_widget", Arguments: `{"service":"checkout","desired_count":3}`}),
				fakeopenai.Text("Done: checkout runs 3 tasks."),
			)
			code, body, evs := st.call(alice, "POST", "/api/v1/agent/chat", map[string]any{"message": "scale checkout to 3"})
			if got := names(evs); code != 200 || !strings.Contains(got, "tool_call,tool_result") || !strings.HasSuffix(got, "confirmation_required,done") {
				t.Fatalf("chat: %d %s", code, body)
			}
			conf := find(evs, "confirmation_required").Data
			code, body, evs = st.call(alice, "POST", "/api/v1/agent/confirm", map[string]any{
				"session_id": conf["session_id"], "confirmation_id": conf["confirmation_id"], "approved": true,
			}, "Accept", "text/event-stream")
			if got := names(evs); code != 200 || !strings.Contains(got, "tool_result") || !strings.HasSuffix(got, "content,done") {
				t.Fatalf("streaming confirm: %d %s", code, body)
			}
			if n := st.scales.Load(); n != 1 {
				t.Fatalf("the write ran %d times, want once", n)
			}
		})
	}
}

func TestAssistantBadInput(t *testing.T) {
	t.Parallel()
	st := startStack(t, "sqlite")
	tok := st.token("carol@example.com")
	tests := []struct {
		name   string
		method string
		path   string
		body   any
		status int
		code   string
	}{
		{"no message", "POST", "/api/v1/agent/chat", map[string]any{}, 400, "malformed"},
		{"empty message", "POST", "/api/v1/agent/chat", map[string]any{"message": "  "}, 422, "invalid"},
		{"oversize message", "POST", "/api/v1/agent/chat", map[string]any{"message": strings.Repeat("x", 32001)}, 422, "invalid"},
		{"unknown field", "POST", "/api/v1/agent/chat", map[string]any{"message": "hi", "mood": "happy"}, 422, "invalid"},
		{"malformed context", "POST", "/api/v1/agent/chat", map[string]any{"message": "hi", "context": "home"}, 422, "invalid"},
		{"bad project id", "POST", "/api/v1/agent/chat", map[string]any{"message": "hi", "context": map[string]string{"selected_project_id": "nope"}}, 422, "invalid"},
		{"unknown session", "POST", "/api/v1/agent/chat", map[string]any{"message": "hi", "session_id": "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"}, 404, "not_found"},
		{"confirm without fields", "POST", "/api/v1/agent/confirm", map[string]any{"approved": true}, 400, "malformed"},
		{"unknown confirmation", "POST", "/api/v1/agent/confirm", map[string]any{"session_id": "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", "confirmation_id": "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5c", "approved": true}, 404, "not_found"},
		{"bad limit", "GET", "/api/v1/agent/sessions?limit=500", nil, 422, "invalid"},
		{"bad cursor", "GET", "/api/v1/agent/sessions?cursor=bm90LWEtY3Vyc29y", nil, 422, "invalid"},
		{"bad Last-Event-ID", "GET", "/api/v1/agent/sessions/0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b/stream?after=-3", nil, 400, "malformed"},
		{"too many preferences", "POST", "/api/v1/agent/memory/preferences", map[string]any{"preferences": make([]map[string]string, 51)}, 422, "invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body, _ := st.call(tok, tt.method, tt.path, tt.body)
			if code != tt.status || !bytes.Contains(body, []byte(`"code":"`+tt.code+`"`)) {
				t.Fatalf("%s %s = %d %s, want %d %s", tt.method, tt.path, code, body, tt.status, tt.code)
			}
		})
	}
}

func sqlstoreDialect(s string) sqlstore.Dialect { return sqlstore.Dialect(s) }
