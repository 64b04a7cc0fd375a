package app_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// TestChatRoutingFollowsConversation: a model that can call only the tools
// it is offered adds a note to a spec, the user approves it, and "great, add
// another one" — a follow-up that names no area — still raises a
// confirmation: the spec area stays in play because the conversation called
// its write.
func TestChatRoutingFollowsConversation(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startStack(t, string(d))
			st.model.SetOfferedToolsOnly(true)
			alice := st.token("alice@example.com")
			code, body, _ := st.call(alice, "POST", "/pse/sessions", map[string]any{"name": "Checkout"})
			var spec struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(body, &spec); code != 201 || err != nil {
				t.Fatalf("create spec session: %d %s", code, body)
			}
			note := func(title string) fakeopenai.Response {
				return fakeopenai.ToolCalls(fakeopenai.Call{Name: "add_spec_input",
					Arguments: fmt.Sprintf(`{"session_id":%q,"kind":"note","title":%q,"content":"Returning customers pay in one click.","content_type":null}`, spec.ID, title)})
			}

			// Turn 1: the message names the spec, which offers its write.
			st.model.Enqueue(note("One click"))
			code, body, evs := st.call(alice, "POST", "/api/v1/agent/chat", map[string]any{"message": "add a note to my spec: one-click checkout"})
			conf := find(evs, "confirmation_required")
			if code != 200 || conf.Name == "" {
				t.Fatalf("turn 1: %d %s", code, body)
			}
			session := conf.Data["session_id"].(string)
			// The spec is named as people know it, never by its bare id.
			if sum := fmt.Sprint(conf.Data["summary"]); !strings.Contains(sum, "specification session “Checkout” ("+spec.ID[:8]+"…)") || strings.Contains(sum, spec.ID) {
				t.Errorf("summary %q", sum)
			}

			// Turn 2: the user approves it.
			if code, body, _ := st.call(alice, "POST", "/api/v1/agent/confirm", map[string]any{"session_id": session,
				"confirmation_id": conf.Data["confirmation_id"], "approved": true}); code != 200 {
				t.Fatalf("confirm: %d %s", code, body)
			}

			// Turn 3: a follow-up that names no area.
			st.model.Enqueue(note("Saved cards"))
			code, body, evs = st.call(alice, "POST", "/api/v1/agent/chat", map[string]any{"message": "great, add another one", "session_id": session})
			if code != 200 || find(evs, "confirmation_required").Name == "" {
				t.Errorf("turn 3 raised no confirmation: %d %s", code, body)
			}
			reqs := st.model.Requests()
			last := reqs[len(reqs)-1]
			var offered []string
			for _, tl := range last.Tools {
				offered = append(offered, tl.Name)
			}
			if !slices.Contains(offered, "add_spec_input") || len(offered) > 20 {
				t.Errorf("turn 3 offered %v", offered)
			}
		})
	}
}
