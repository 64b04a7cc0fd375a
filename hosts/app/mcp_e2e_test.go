package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/core/identity"
)

// bearer adds a token to every request an MCP client sends.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// mcpClient connects the Go SDK's client to st's /mcp as token; with
// elicit, the client answers elicitations with it.
func (st *stack) mcpClient(token string, elicit func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error)) *mcp.ClientSession {
	st.t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "go-test-agent", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: elicit})
	cs, err := c.Connect(st.t.Context(), &mcp.StreamableClientTransport{Endpoint: st.base + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}, DisableStandaloneSSE: true}, nil)
	if err != nil {
		st.t.Fatalf("connect MCP client: %v", err)
	}
	st.t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// mcpConfirmationView is the JSON a write's tool result and get_confirmation give.
type mcpConfirmationView struct {
	Status         string `json:"status"`
	ConfirmationID string `json:"confirmation_id"`
	SessionID      string `json:"session_id"`
	ApproveAt      string `json:"approve_at"`
	Message        string `json:"message"`
	Result         *struct {
		OK     bool            `json:"ok"`
		Result json.RawMessage `json:"result"`
		Error  string          `json:"error"`
	} `json:"result"`
}

func toolText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) == 0 {
		t.Fatalf("tool result without content: %+v", res)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("tool result content %T", res.Content[0])
	}
	return tc.Text
}

func confirmationOf(t *testing.T, res *mcp.CallToolResult) mcpConfirmationView {
	t.Helper()
	var v mcpConfirmationView
	if err := json.Unmarshal([]byte(toolText(t, res)), &v); err != nil || v.ConfirmationID == "" {
		t.Fatalf("not a confirmation (%v): %s", err, toolText(t, res))
	}
	return v
}

// specThroughPRPs generates a session through the PRPs with the fake model.
func (st *stack) specThroughPRPs(token string) string {
	st.t.Helper()
	id := st.noteSession(token, "Checkout revamp", "One-click checkout for returning customers.")
	for _, stage := range []string{"scope", "prd", "epics", "stories", "stories", "prps", "prps", "prps"} {
		st.model.Enqueue(stageOutput(st.t, stage))
	}
	if code, body, _ := st.call(token, "POST", "/pse/sessions/"+id+"/generate", map[string]string{"through": "prps"}); code != 202 {
		st.t.Fatalf("generate through prps: %d %s", code, body)
	}
	if v := st.waitReady(token, id); v.Status != "ready" || v.NextStage != nil {
		st.t.Fatalf("after the chain: %+v", v)
	}
	return id
}

// TestMCPServerEndToEnd drives /mcp with the Go SDK's client, on both
// databases, across replicas on PostgreSQL: resources (list, templates,
// read a PRP), the implement_prp prompt, a read tool, a write that waits
// and is approved through the API on another replica, and the outcome
// through get_confirmation.
func TestMCPServerEndToEnd(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			replicas := 1
			if d == sqlstore.DialectPostgres {
				replicas = 2
			}
			stacks := startReplicas(t, d, replicas, nil)
			one, other := stacks[0], stacks[len(stacks)-1]
			dev := one.token("dev@example.com")
			id := one.specThroughPRPs(dev)
			cs := other.mcpClient(dev, nil)
			ctx := t.Context()

			list, err := cs.ListResources(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			prpURI := "devpilot://specs/" + id + "/prps/PRP-1.1"
			want := map[string]bool{"devpilot://specs/" + id: false, prpURI: false, "devpilot://specs/" + id + "/stories/ST-1.1": false,
				"devpilot://specs/" + id + "/traceability": false, "devpilot://specs/" + id + "/prd": false}
			for _, r := range list.Resources {
				if _, ok := want[r.URI]; ok {
					want[r.URI] = true
				}
			}
			for uri, seen := range want {
				if !seen {
					t.Errorf("resources/list lacks %s", uri)
				}
			}
			tmpl, err := cs.ListResourceTemplates(ctx, nil)
			if err != nil || len(tmpl.ResourceTemplates) != 6 {
				t.Fatalf("templates: %v %+v", err, tmpl)
			}
			read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: prpURI})
			if err != nil {
				t.Fatal(err)
			}
			if c := read.Contents[0]; c.MIMEType != "text/markdown" || !strings.Contains(c.Text, "PRP-1.1") ||
				!strings.Contains(c.Text, "Acceptance criteria") || !strings.Contains(c.Text, "Validation") {
				t.Errorf("PRP resource: %s %.400s", c.MIMEType, c.Text)
			}
			if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "devpilot://specs/" + id + "/prps/PRP-9.9"}); err == nil {
				t.Error("reading an absent PRP succeeded")
			}
			// Another user's session is not found.
			eve := other.mcpClient(one.token("eve@example.com"), nil)
			if _, err := eve.ReadResource(ctx, &mcp.ReadResourceParams{URI: prpURI}); err == nil {
				t.Error("another user read the PRP")
			}

			prompt, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "implement_prp", Arguments: map[string]string{"session": id, "prp": "PRP-1.1"}})
			if err != nil {
				t.Fatal(err)
			}
			if txt := prompt.Messages[0].Content.(*mcp.TextContent).Text; !strings.Contains(txt, "PRP-1.1") || !strings.Contains(txt, "Implementation tasks") {
				t.Errorf("implement_prp: %.400s", txt)
			}
			review, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "review_against_story",
				Arguments: map[string]string{"session": id, "story": "ST-1.1", "diff": "--- a/x\n+++ b/x\n"}})
			if err != nil || !strings.Contains(review.Messages[0].Content.(*mcp.TextContent).Text, "ST-1.1") {
				t.Fatalf("review_against_story: %v %+v", err, review)
			}

			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			byName := map[string]*mcp.Tool{}
			for _, tl := range tools.Tools {
				byName[tl.Name] = tl
			}
			if tl := byName["list_widgets"]; tl == nil || !tl.Annotations.ReadOnlyHint {
				t.Errorf("list_widgets: %+v", tl)
			}
			if tl := byName["resize_widget"]; tl == nil || tl.Annotations.ReadOnlyHint {
				t.Errorf("resize_widget: %+v", tl)
			}
			if tl := byName["delete_content"]; tl == nil || tl.Annotations.DestructiveHint == nil || !*tl.Annotations.DestructiveHint {
				t.Errorf("delete_content: %+v", tl)
			}
			if tl := byName["get_confirmation"]; tl == nil || !tl.Annotations.ReadOnlyHint {
				t.Errorf("get_confirmation: %+v", tl)
			}

			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_widgets", Arguments: map[string]any{}})
			if err != nil || res.IsError || !strings.Contains(toolText(t, res), "checkout") {
				t.Fatalf("list_widgets: %v %+v", err, res)
			}

			// A write waits; the client has no elicitation: the console's link.
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "resize_widget", Arguments: map[string]any{"service": "checkout", "desired_count": 3}})
			if err != nil || res.IsError {
				t.Fatalf("resize_widget: %v %+v", err, res)
			}
			conf := confirmationOf(t, res)
			if conf.Status != "pending" || !strings.Contains(conf.ApproveAt, "/#/chat/"+conf.SessionID) || ran(stacks) != 0 {
				t.Fatalf("pending write: %+v (ran %d)", conf, ran(stacks))
			}
			// The session is the client's, for the console.
			code, body, _ := one.call(dev, "GET", "/api/v1/agent/sessions/"+conf.SessionID, nil)
			if code != 200 || !strings.Contains(string(body), "MCP: go-test-agent") {
				t.Fatalf("the MCP chat session: %d %.300s", code, body)
			}
			// Approved through the API on the other replica.
			code, body, _ = one.call(dev, "POST", "/api/v1/agent/confirm", map[string]any{"session_id": conf.SessionID,
				"confirmation_id": conf.ConfirmationID, "approved": true})
			if code != 200 {
				t.Fatalf("confirm: %d %s", code, body)
			}
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_confirmation", Arguments: map[string]any{"confirmation_id": conf.ConfirmationID}})
			if err != nil {
				t.Fatal(err)
			}
			if got := confirmationOf(t, res); got.Status != "approved" || got.Result == nil || !got.Result.OK || ran(stacks) != 1 {
				t.Fatalf("after approval: %+v (ran %d)", got, ran(stacks))
			}
			// Another user cannot read it.
			res, err = eve.CallTool(ctx, &mcp.CallToolParams{Name: "get_confirmation", Arguments: map[string]any{"confirmation_id": conf.ConfirmationID}})
			if err != nil || !res.IsError {
				t.Fatalf("another user's confirmation: %v %+v", err, res)
			}
		})
	}
}

// TestMCPServerElicitation approves and rejects writes through the
// client's elicitation (the multi round-trip of protocol 2026-07-28: the
// server answers with an input request and a sealed requestState, the
// client retries with its answer, on any replica), and races an
// elicitation's approval with the API's: the write runs once.
func TestMCPServerElicitation(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			replicas := 1
			if d == sqlstore.DialectPostgres {
				replicas = 2
			}
			stacks := startReplicas(t, d, replicas, nil)
			one, other := stacks[0], stacks[len(stacks)-1]
			dev := one.token("dev@example.com")
			ctx := t.Context()
			answer := func(action string) func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					if !strings.Contains(req.Params.Message, "Scale checkout to 4 tasks") {
						t.Errorf("elicitation message: %q", req.Params.Message)
					}
					return &mcp.ElicitResult{Action: action}, nil
				}
			}
			resize := map[string]any{"service": "checkout", "desired_count": 4}

			accept := other.mcpClient(dev, answer("accept"))
			res, err := accept.CallTool(ctx, &mcp.CallToolParams{Name: "resize_widget", Arguments: resize})
			if err != nil {
				t.Fatal(err)
			}
			if v := confirmationOf(t, res); v.Status != "approved" || v.Result == nil || !v.Result.OK || ran(stacks) != 1 {
				t.Fatalf("accepted: %+v (ran %d)", v, ran(stacks))
			}

			decline := other.mcpClient(dev, answer("decline"))
			res, err = decline.CallTool(ctx, &mcp.CallToolParams{Name: "resize_widget", Arguments: resize})
			if err != nil {
				t.Fatal(err)
			}
			if v := confirmationOf(t, res); v.Status != "rejected" || ran(stacks) != 1 {
				t.Fatalf("declined: %+v (ran %d)", v, ran(stacks))
			}

			// The elicitation's approval and the API's at once: one decision.
			var apiCode int
			var wg sync.WaitGroup
			racer := other.mcpClient(dev, func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				sessID, confID := one.pendingMCPConfirmation(dev)
				wg.Go(func() {
					apiCode, _, _ = one.call(dev, "POST", "/api/v1/agent/confirm", map[string]any{"session_id": sessID,
						"confirmation_id": confID, "approved": true})
				})
				return &mcp.ElicitResult{Action: "accept"}, nil
			})
			res, err = racer.CallTool(ctx, &mcp.CallToolParams{Name: "resize_widget", Arguments: resize})
			wg.Wait()
			if err != nil {
				t.Fatal(err)
			}
			v := confirmationOf(t, res)
			if v.Status != "approved" || ran(stacks) != 2 || (apiCode != 200 && apiCode != 409) {
				t.Fatalf("raced approvals: %+v, API %d, ran %d times in all", v, apiCode, ran(stacks))
			}

			// A write of the specification area approved in the call tells the
			// client, on the call's own stream, that the resource list changed.
			id := one.noteSession(dev, "Notes", "A first note.")
			changed := make(chan struct{}, 4)
			c := mcp.NewClient(&mcp.Implementation{Name: "go-test-agent", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					return &mcp.ElicitResult{Action: "accept"}, nil
				},
				ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { changed <- struct{}{} },
			})
			watcher, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: other.base + "/mcp",
				HTTPClient: &http.Client{Transport: bearer{dev, http.DefaultTransport}}, DisableStandaloneSSE: true}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer watcher.Close()
			res, err = watcher.CallTool(ctx, &mcp.CallToolParams{Name: "add_spec_input", Arguments: map[string]any{
				"session_id": id, "kind": "note", "title": "More", "content": "A second note."}})
			if err != nil {
				t.Fatal(err)
			}
			if v := confirmationOf(t, res); v.Status != "approved" || v.Result == nil || !v.Result.OK {
				t.Fatalf("add_spec_input: %+v", v)
			}
			select {
			case <-changed:
			case <-time.After(10 * time.Second): // notifications are handled apart from the response
				t.Error("no notifications/resources/list_changed on the call's stream")
			}

			// A forged requestState is refused, and nothing runs.
			raw := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"resize_widget","arguments":{"service":"x","desired_count":1},` +
				`"requestState":"forged","inputResponses":{"approval":{"action":"accept"}},` +
				`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}}}`
			code, _, body := one.mcpRaw(dev, []byte(raw))
			if code != 200 || !strings.Contains(string(body), "invalid requestState") || ran(stacks) != 2 {
				t.Fatalf("forged state: %d %s (ran %d)", code, body, ran(stacks))
			}
		})
	}
}

// ran is how many times the stacks' resize_widget ran, in all.
func ran(stacks []*stack) int32 {
	var n int32
	for _, st := range stacks {
		n += st.scales.Load()
	}
	return n
}

// pendingMCPConfirmation finds token's pending confirmation in its MCP
// chat session through the API.
func (st *stack) pendingMCPConfirmation(token string) (sessionID, confirmationID string) {
	st.t.Helper()
	_, body, _ := st.call(token, "GET", "/api/v1/agent/sessions", nil)
	var list struct{ Items []struct{ ID, Title string } }
	_ = json.Unmarshal(body, &list)
	for _, s := range list.Items {
		if !strings.HasPrefix(s.Title, "MCP: ") {
			continue
		}
		_, body, _ := st.call(token, "GET", "/api/v1/agent/sessions/"+s.ID, nil)
		var sess struct {
			Confirmations []struct{ ID, Status string } `json:"confirmations"`
		}
		_ = json.Unmarshal(body, &sess)
		for _, c := range sess.Confirmations {
			if c.Status == "pending" {
				return s.ID, c.ID
			}
		}
	}
	st.t.Fatal("no pending MCP confirmation")
	return "", ""
}

// mcpRaw POSTs one raw JSON-RPC body to /mcp as token.
func (st *stack) mcpRaw(token string, body []byte) (int, http.Header, []byte) {
	st.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, st.base+"/mcp", bytes.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
			URI  string `json:"uri"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &msg) == nil && msg.Method != "" {
		req.Header.Set("Mcp-Method", msg.Method)
		if name := msg.Params.Name + msg.Params.URI; name != "" && !strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 }) {
			req.Header.Set("Mcp-Name", name)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		st.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// TestMCPServerAuthAndHostileInput: a 401 names the protected-resource
// metadata, which describes the token; a token without the scope a
// resource or tool needs is refused; a refused write is audited; huge
// bodies, invalid JSON-RPC and NUL in arguments answer errors, never a 500.
func TestMCPServerAuthAndHostileInput(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			stacks := startReplicas(t, d, 1, nil)
			st := stacks[0]
			ping := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)

			code, h, body := st.mcpRaw("", ping)
			wantMeta := `resource_metadata="` + st.base + `/.well-known/oauth-protected-resource/mcp"`
			if code != 401 || !strings.Contains(h.Get("WWW-Authenticate"), wantMeta) {
				t.Fatalf("no token: %d %q %s", code, h.Get("WWW-Authenticate"), body)
			}
			code, h, _ = st.mcpRaw("dp_nope", ping)
			if code != 401 || !strings.Contains(h.Get("WWW-Authenticate"), `error="invalid_token", `+wantMeta) {
				t.Fatalf("bad token: %d %q", code, h.Get("WWW-Authenticate"))
			}
			resp, err := http.Get(st.base + "/.well-known/oauth-protected-resource/mcp")
			if err != nil {
				t.Fatal(err)
			}
			var meta struct {
				Resource               string   `json:"resource"`
				AuthorizationServers   []string `json:"authorization_servers"`
				BearerMethodsSupported []string `json:"bearer_methods_supported"`
				ScopesSupported        []string `json:"scopes_supported"`
				ResourceDocumentation  string   `json:"resource_documentation"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&meta)
			resp.Body.Close()
			if resp.StatusCode != 200 || meta.Resource != st.base+"/mcp" || len(meta.AuthorizationServers) != 1 ||
				!strings.Contains(strings.Join(meta.ScopesSupported, " "), "spec:read") || meta.ResourceDocumentation != st.base+"/#/tokens" {
				t.Fatalf("metadata: %d %+v", resp.StatusCode, meta)
			}

			dev := st.token("dev@example.com")
			id := st.specThroughPRPs(dev)
			scoped, err := st.id.IssueToken(t.Context(), identity.IssueTokenInput{Email: "dev@example.com", OrgName: "acme", Scopes: []string{"content:read"}})
			if err != nil {
				t.Fatal(err)
			}
			narrow := st.mcpClient(scoped.Token, nil)
			if _, err := narrow.ReadResource(t.Context(), &mcp.ReadResourceParams{URI: "devpilot://specs/" + id + "/prps/PRP-1.1"}); err == nil ||
				!strings.Contains(err.Error(), "spec:read") {
				t.Errorf("a content:read token read a PRP: %v", err)
			}
			res, err := narrow.CallTool(t.Context(), &mcp.CallToolParams{Name: "list_widgets", Arguments: map[string]any{}})
			if err != nil || !res.IsError || !strings.Contains(toolText(t, res), "assistant:read") {
				t.Errorf("a content:read token ran a tool: %v %+v", err, res)
			}

			// A member may not scale a service (cloud.write is the operators'):
			// refused, nothing stored, and the refusal is in the audit log.
			member := st.mcpClient(dev, nil)
			res, err = member.CallTool(t.Context(), &mcp.CallToolParams{Name: "scale_service",
				Arguments: map[string]any{"service": "checkout", "desired_count": 2}})
			if err != nil || !res.IsError || !strings.Contains(toolText(t, res), "cloud.scale") {
				t.Fatalf("member scale_service: %v %s", err, toolText(t, res))
			}
			lead := st.admin("lead@example.com")
			code, body, _ = st.call(lead, "GET", "/api/v1/audit", nil)
			if code != 200 || !strings.Contains(string(body), "scale_service") {
				t.Errorf("audit: %d %.600s", code, body)
			}

			// Hostile input.
			huge := append([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_widgets","arguments":{"x":"`),
				bytes.Repeat([]byte("a"), 2<<20)...)
			huge = append(huge, `"}}}`...)
			if code, _, body := st.mcpRaw(dev, huge); code != 413 {
				t.Errorf("huge body: %d %.200s", code, body)
			}
			for name, raw := range map[string]string{
				"not json":      `{"jsonrpc":`,
				"not json-rpc":  `[1,2,3]`,
				"no method":     `{"jsonrpc":"2.0","id":1}`,
				"unknown":       `{"jsonrpc":"2.0","id":1,"method":"nope/nope","params":{}}`,
				"nul in args":   `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"resize_widget","arguments":{"service":"a\u0000b","desired_count":1},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
				"nul in uri":    `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"devpilot://specs/\u0000","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
				"bad arguments": `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_confirmation","arguments":{"confirmation_id":7},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			} {
				if code, _, body := st.mcpRaw(dev, []byte(raw)); code >= 500 {
					t.Errorf("%s: %d %.300s", name, code, body)
				}
			}
			if code, body, _ := st.call(dev, "GET", "/mcp", nil); code != 405 {
				t.Errorf("GET /mcp: %d %s", code, body)
			}
		})
	}
}
