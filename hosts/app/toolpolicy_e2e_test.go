package app_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

type toolView struct {
	Name          string `json:"name"`
	Description   string `json:"description"`
	Effect        string `json:"effect"`
	AlwaysConfirm bool   `json:"always_confirm"`
}

// listTools returns the tools token's caller sees, by name.
func (st *stack) listTools(token string) map[string]toolView {
	st.t.Helper()
	code, body, _ := st.call(token, "GET", "/api/v1/agent/tools", nil)
	var page struct {
		Items      []toolView `json:"items"`
		NextCursor *string    `json:"next_cursor"`
	}
	if err := json.Unmarshal(body, &page); code != 200 || err != nil || page.NextCursor != nil {
		st.t.Fatalf("GET tools: %d %s", code, body)
	}
	out := map[string]toolView{}
	for _, tv := range page.Items {
		out[tv.Name] = tv
	}
	return out
}

// chatListingWidgets runs a chat in which the model calls list_widgets, and
// answers when the tool runs at once.
func (st *stack) chatListingWidgets(token string, runs bool) []sse {
	st.t.Helper()
	st.model.Enqueue(fakeopenai.ToolCalls(fakeopenai.Call{ID: "call_lw", Name: "list_widgets", Arguments: `{}`}))
	if runs {
		st.model.Enqueue(fakeopenai.Text("checkout and search."))
	}
	code, body, evs := st.call(token, "POST", "/api/v1/agent/chat", map[string]any{"message": "which widgets?"})
	if code != 200 {
		st.t.Fatalf("chat: %d %s", code, body)
	}
	return evs
}

func TestToolPolicyEndToEnd(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startStack(t, string(d))
			admin, member := st.admin("lead@example.com"), st.token("dev@example.com")
			outsider, _ := st.cloudUser("eve@globex.example", "globex", "")

			// The catalogue: writes always confirm, reads not until marked.
			tools := st.listTools(member)
			if lw, rw := tools["list_widgets"], tools["resize_widget"]; lw.Effect != "read" || lw.AlwaysConfirm || lw.Description != "Lists the widgets." ||
				rw.Effect != "write" || !rw.AlwaysConfirm {
				t.Fatalf("tools before: %+v", tools)
			}

			// Only an admin may mark; a write cannot be unmarked; an unknown tool is 404.
			for _, tc := range []struct {
				token, tool string
				body        any
				code        int
				problem     string
			}{
				{member, "list_widgets", map[string]any{"always_confirm": true}, 403, `"code":"forbidden"`},
				{admin, "resize_widget", map[string]any{"always_confirm": false}, 422, `"code":"write_always_confirms"`},
				{admin, "drop_tables", map[string]any{"always_confirm": true}, 404, `"code":"not_found"`},
				{admin, "list_widgets", map[string]any{}, 400, `"field":"always_confirm"`},
				{admin, "list_widgets", map[string]any{"always_confirm": "yes"}, 422, `"code":"invalid"`},
			} {
				code, body, _ := st.call(tc.token, "PUT", "/api/v1/agent/tools/"+tc.tool, tc.body)
				if code != tc.code || !bytes.Contains(body, []byte(tc.problem)) {
					t.Errorf("PUT %s %v: %d %s, want %d with %s", tc.tool, tc.body, code, body, tc.code, tc.problem)
				}
			}
			if !st.listTools(admin)["resize_widget"].AlwaysConfirm || st.listTools(admin)["list_widgets"].AlwaysConfirm {
				t.Fatal("a refused PUT changed a policy")
			}

			// The admin marks list_widgets; everyone in the org sees it.
			code, body, _ := st.call(admin, "PUT", "/api/v1/agent/tools/list_widgets", map[string]any{"always_confirm": true})
			var marked toolView
			if err := json.Unmarshal(body, &marked); code != 200 || err != nil ||
				marked != (toolView{Name: "list_widgets", Description: "Lists the widgets.", Effect: "read", AlwaysConfirm: true}) {
				t.Fatalf("PUT list_widgets: %d %s", code, body)
			}
			if !st.listTools(member)["list_widgets"].AlwaysConfirm {
				t.Fatal("the member does not see the mark")
			}
			if st.listTools(outsider)["list_widgets"].AlwaysConfirm {
				t.Fatal("another org sees the mark")
			}
			// Marking a write is allowed, and changes nothing.
			if code, body, _ := st.call(admin, "PUT", "/api/v1/agent/tools/resize_widget", map[string]any{"always_confirm": true}); code != 200 ||
				!bytes.Contains(body, []byte(`"always_confirm":true`)) {
				t.Fatalf("PUT resize_widget true: %d %s", code, body)
			}

			// In chat the marked read waits for a confirmation; nothing runs until it is approved.
			evs := st.chatListingWidgets(member, false)
			if got := names(evs); got != "tool_call,confirmation_required,done" {
				t.Fatalf("events = %s", got)
			}
			conf := find(evs, "confirmation_required").Data
			if evs[len(evs)-1].Data["finish_reason"] != "confirmation_required" || conf["name"] != "list_widgets" || conf["summary"] == "" {
				t.Fatalf("confirmation %v, done %v", conf, evs[len(evs)-1].Data)
			}
			session, confID := conf["session_id"].(string), conf["confirmation_id"].(string)
			code, body, _ = st.call(member, "POST", "/api/v1/agent/confirm", map[string]any{"session_id": session, "confirmation_id": confID, "approved": true})
			if code != 200 || !bytes.Contains(body, []byte(`"status":"approved"`)) || !bytes.Contains(body, []byte(`"checkout"`)) {
				t.Fatalf("confirm: %d %s", code, body)
			}
			if code, body, _ := st.call(member, "POST", "/api/v1/agent/confirm", map[string]any{"session_id": session, "confirmation_id": confID, "approved": true}); code != 409 {
				t.Fatalf("second confirm: %d %s", code, body)
			}

			// Another org's chat runs the same read at once.
			if got := names(st.chatListingWidgets(outsider, true)); !strings.HasPrefix(got, "tool_call,tool_result,") || strings.Contains(got, "confirmation_required") {
				t.Fatalf("the outsider's events = %s", got)
			}

			// By voice the marked read is pending, decided like any other.
			code, body, _ = st.call(member, "POST", "/api/v1/voice/tool-calls", map[string]any{"name": "list_widgets", "arguments": "{}", "call_id": "call_voice"})
			var pending struct {
				ConfirmationID string `json:"confirmation_id"`
				SessionID      string `json:"session_id"`
				Status         string `json:"status"`
			}
			if err := json.Unmarshal(body, &pending); code != 200 || err != nil || pending.Status != "pending" || bytes.Contains(body, []byte(`"output"`)) {
				t.Fatalf("voice read: %d %s", code, body)
			}
			code, body, _ = st.call(member, "POST", "/api/v1/agent/confirm", map[string]any{"session_id": pending.SessionID, "confirmation_id": pending.ConfirmationID, "approved": true})
			if code != 200 || !bytes.Contains(body, []byte(`"checkout"`)) {
				t.Fatalf("voice confirm: %d %s", code, body)
			}

			// Unmarked again, the read runs at once.
			if code, body, _ := st.call(admin, "PUT", "/api/v1/agent/tools/list_widgets", map[string]any{"always_confirm": false}); code != 200 ||
				!bytes.Contains(body, []byte(`"always_confirm":false`)) {
				t.Fatalf("unmark: %d %s", code, body)
			}
			if st.listTools(member)["list_widgets"].AlwaysConfirm {
				t.Fatal("still marked")
			}
			if got := names(st.chatListingWidgets(member, true)); !strings.HasPrefix(got, "tool_call,tool_result,") {
				t.Fatalf("events after unmarking = %s", got)
			}
		})
	}
}
