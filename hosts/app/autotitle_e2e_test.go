package app_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/app"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// titleWait bounds how long a test waits for a session's title, which
// comes after the turn's done.
const titleWait = 20 * time.Second

// waitTitle polls the session until it has a title, and returns it.
func waitTitle(t *testing.T, get func() (int, []byte), session string) string {
	t.Helper()
	deadline := time.Now().Add(titleWait)
	for {
		code, body := get()
		var s struct {
			Title string `json:"title"`
		}
		if code != 200 || json.Unmarshal(body, &s) != nil {
			t.Fatalf("session %s: %d %s", session, code, body)
		}
		if s.Title != "" {
			return s.Title
		}
		if time.Now().After(deadline) {
			t.Fatalf("session %s has no title after %s", session, titleWait)
		}
		time.Sleep(50 * time.Millisecond) // polling an outcome of another goroutine
	}
}

// TestAutoTitleEndToEnd: a chat's first answer titles its session without
// a request for it, with one model call charged to the title feature; a
// later turn makes none; with DEVPILOT_AUTO_TITLE=0 no session is titled.
func TestAutoTitleEndToEnd(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startStackWith(t, string(d), map[string]string{app.EnvAutoTitle: "1"})
			alice := st.token("alice@example.com")
			st.model.Enqueue(fakeopenai.Text("Checkout runs 3 tasks.").WithUsage(100, 6), fakeopenai.Text("Checkout task count").WithUsage(40, 3))
			code, body, evs := st.call(alice, "POST", "/api/v1/agent/chat", map[string]any{"message": "how many tasks does checkout run?"})
			if code != 200 || find(evs, "done").Data["finish_reason"] != "stop" {
				t.Fatalf("chat: %d %s", code, body)
			}
			session := find(evs, "done").Data["session_id"].(string)
			get := func() (int, []byte) {
				code, body, _ := st.call(alice, "GET", "/api/v1/agent/sessions/"+session, nil)
				return code, body
			}
			if title := waitTitle(t, get, session); title != "Checkout task count" {
				t.Errorf("title %q", title)
			}
			if req := st.model.Requests()[1]; !strings.Contains(req.Messages[0].Content, "You name conversations") {
				t.Errorf("the second model call is not the title's: %s", req.Body)
			}
			code, r := st.usage(alice, "?group_by=feature")
			if code != 200 || len(r.Groups) != 2 || r.Groups[1].Key != "title" || r.Groups[1].CompletionTokens != 3 {
				t.Errorf("usage by feature: %d %+v", code, r.Groups)
			}

			// A later turn: no title call (the script would run dry).
			st.model.Enqueue(fakeopenai.Text("Still 3."))
			if code, body, _ := st.call(alice, "POST", "/api/v1/agent/chat", map[string]any{"message": "and now?", "session_id": session}); code != 200 {
				t.Fatalf("second chat: %d %s", code, body)
			}

			// Off: an answered chat stays untitled.
			off := startStack(t, string(d)) // DEVPILOT_AUTO_TITLE=0
			bob := off.token("bob@example.com")
			off.model.Enqueue(fakeopenai.Text("Hi."))
			_, _, evs = off.call(bob, "POST", "/api/v1/agent/chat", map[string]any{"message": "hello"})
			session = find(evs, "done").Data["session_id"].(string)
			if code, body, _ := off.call(bob, "GET", "/api/v1/agent/sessions/"+session, nil); code != 200 || !strings.Contains(string(body), `"title":""`) {
				t.Errorf("with titles off: %d %s", code, body)
			}
		})
	}
}

// TestSandboxAutoTitle: the sandbox's demo model titles a chat after its
// first answer.
func TestSandboxAutoTitle(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			h := startSandboxOn(t, d)
			token, _, _ := h.checkSeed()
			h.chat(token, "what runs in production?")
			var list struct {
				Items []struct {
					ID string `json:"id"`
				} `json:"items"`
			}
			h.get(token, "/api/v1/agent/sessions", &list)
			if len(list.Items) != 1 {
				t.Fatalf("sessions %+v", list.Items)
			}
			id := list.Items[0].ID
			title := waitTitle(t, func() (int, []byte) { return h.send(token, "GET", "/api/v1/agent/sessions/"+id, nil) }, id)
			if strings.HasPrefix(title, "Untitled") {
				t.Errorf("title %q", title)
			}
		})
	}
}
