package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
)

// recordChatBodies wraps the page's fetch to keep the body of every
// POST /api/v1/agent/chat in window.__chatBodies, as it left the page.
const recordChatBodies = `(() => {
  const orig = window.fetch;
  window.__chatBodies = [];
  window.fetch = (input, init = {}) => {
    const url = typeof input === 'string' ? input : input.url;
    if (url.endsWith('/api/v1/agent/chat')) window.__chatBodies.push(String(init.body));
    return orig(input, init);
  };
})()`

// TestConsoleChatSendsPage: a chat opened from a specification's page sends
// that page as context.current_page and the session as
// selected_project_id, on the first message and on a follow-up.
func TestConsoleChatSendsPage(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := startBrowser(t, d)
			b.signInDemo()
			raw, _ := json.Marshal(map[string]any{"name": "Checkout"})
			req, _ := http.NewRequest(http.MethodPost, b.base+"/pse/sessions", bytes.NewReader(raw))
			req.Header.Set("Authorization", "Bearer "+b.h.sb.Token())
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			answer, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var spec struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(answer, &spec); resp.StatusCode != http.StatusCreated || err != nil {
				t.Fatalf("create spec session: %d %s", resp.StatusCode, answer)
			}

			b.do(chromedp.Evaluate[chromedp.Void](recordChatBodies))
			b.goTo("#/specs/" + spec.ID)
			b.waitFor("the specification", fmt.Sprintf(`document.querySelector('.spec-list li[data-id=%q] a[aria-current="true"]')`, spec.ID), chatWait)
			b.do(chromedp.Click(chromedp.CSS(`#nav a[href="#/chat"]`), chromedp.NodeVisible))
			b.chat("what is in it?")
			b.waitFor("the answer", lastTurn+` && `+lastTurn+`.dataset.finish`, chatWait)
			b.chat("and what comes next?")
			b.waitFor("the second answer", `document.querySelectorAll('.chat-log .msg.assistant').length === 2 && `+lastTurn+`.dataset.finish`, chatWait)

			bodies := eval[[]string](b, `window.__chatBodies`)
			if len(bodies) != 2 {
				t.Fatalf("%d chat requests: %v", len(bodies), bodies)
			}
			for i, raw := range bodies {
				var body struct {
					SessionID string `json:"session_id"`
					Context   struct {
						CurrentPage       string `json:"current_page"`
						SelectedProjectID string `json:"selected_project_id"`
					} `json:"context"`
				}
				if err := json.Unmarshal([]byte(raw), &body); err != nil {
					t.Fatalf("chat body %s: %v", raw, err)
				}
				if body.Context.CurrentPage != "#/specs/"+spec.ID || body.Context.SelectedProjectID != spec.ID || (i == 1) != (body.SessionID != "") {
					t.Errorf("chat %d sent %s", i+1, raw)
				}
			}
		})
	}
}
