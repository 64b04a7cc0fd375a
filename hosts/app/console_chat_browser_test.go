package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
)

// The Assistant page in a real browser, against the sandbox's scripted demo
// model (hosts/sandbox/demomodel): "scale checkout to 3" makes it list the cloud
// accounts, the clusters and their services (read tools, run at once), then
// ask to run scale_service (a write, which waits for approval).

const chatWait = 30 * time.Second

// chat types message into the message box and presses Enter.
func (b *browser) chat(message string) {
	b.t.Helper()
	b.waitFor("the message box", `document.querySelector('#chat-input') && !document.querySelector('#chat-send').disabled`, chatWait)
	b.do(chromedp.SendKeys(chromedp.CSS("#chat-input"), message+kb.Enter, chromedp.NodeVisible))
}

// newChat opens an empty chat with the "New chat" link.
func (b *browser) newChat() {
	b.t.Helper()
	b.do(chromedp.Click(chromedp.ID("chat-new"), chromedp.NodeVisible))
	b.waitFor("a new chat", `location.hash === '#/chat' && document.querySelector('.chat-welcome')`, chatWait)
}

// openSessionID is the id of the chat the page shows (from its fragment).
func (b *browser) openSessionID() string {
	b.t.Helper()
	return eval[string](b, `decodeURIComponent(location.hash.replace(/^#\/chat\/?/, ''))`)
}

// lastTurn is a JavaScript expression for the last assistant bubble.
const lastTurn = `[...document.querySelectorAll('.chat-log .msg.assistant')].pop()`

// checkoutDesired is the desired count of checkout in cluster production,
// as the API tells it.
func checkoutDesired(b *browser) int {
	b.t.Helper()
	var out struct {
		Items []struct {
			Name         string `json:"name"`
			DesiredCount int    `json:"desired_count"`
		} `json:"items"`
	}
	b.h.get(b.h.sb.Token(), "/infrastructure/containers/clusters/production/services?account_id="+b.h.sb.CloudAccountID(), &out)
	for _, s := range out.Items {
		if s.Name == "checkout" {
			return s.DesiredCount
		}
	}
	b.t.Fatalf("no checkout service in production: %+v", out.Items)
	return 0
}

type chatSessionDetail struct {
	Title    string `json:"title"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	Confirmations []struct {
		Name   string `json:"name"`
		Status string `json:"status"`
		Reason string `json:"reason"`
	} `json:"confirmations"`
}

func TestConsoleChat(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := startBrowser(t, d)
			b.signInDemo()
			b.goTo("#/chat")
			b.waitFor("the chat page", `document.querySelector('.chat-welcome') && document.querySelector('.chat-sessions-body .empty')`, chatWait)
			if got := eval[string](b, `document.querySelector('label[for="chat-input"]').textContent`); got != "Message" {
				t.Errorf("the message box is labelled %q", got)
			}
			before := checkoutDesired(b)
			// Nothing the page does breaks the console's Content-Security-Policy.
			b.do(chromedp.Evaluate[chromedp.Void](`window.__csp = []; document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI))`))

			// Approve: the tool cards stream in, then the confirmation card
			// with its live countdown; approving continues the answer in place.
			b.chat("scale checkout to 3")
			b.waitFor("the confirmation card", lastTurn+`.querySelector('.confirm[data-status="pending"] button.approve')`, chatWait)
			b.waitFor("the end of the turn", lastTurn+`.dataset.finish === 'confirmation_required'`, chatWait)
			tools := eval[[]string](b, `[...document.querySelectorAll('.chat-log details.tool')].map(d => d.querySelector('.tool-name').textContent + ':' + d.querySelector('.badge').textContent)`)
			for _, want := range []string{"list_cloud_accounts:ok", "list_clusters:ok", "list_services:ok", "scale_service:needs approval"} {
				if !contains(tools, want) {
					t.Errorf("tool cards %v lack %s", tools, want)
				}
			}
			if s := b.text(".confirm .confirm-summary"); !strings.Contains(s, "checkout") {
				t.Errorf("confirmation summary %q", s)
			}
			if args := eval[string](b, `document.querySelector('.confirm .confirm-args pre').textContent`); !strings.Contains(args, `"desired_count": 3`) {
				t.Errorf("confirmation arguments %s", args)
			}
			// The countdown runs: its text changes within a few seconds.
			first := b.text(".confirm .countdown")
			if !strings.HasPrefix(first, "Expires in 1") { // 15 minutes by default
				t.Errorf("countdown %q", first)
			}
			b.waitFor("the countdown to tick", fmt.Sprintf(`document.querySelector('.confirm .countdown').textContent !== %q`, first), 5*time.Second)
			b.waitFor("the session in the list", `document.querySelector('.chat-session-list a[aria-current="true"] .badge.warn')`, chatWait)

			// Generate title names the session, in the heading and the list.
			b.do(chromedp.Click(chromedp.ID("chat-title-gen"), chromedp.NodeVisible))
			b.waitFor("a generated title", `!document.querySelector('#chat-title').textContent.startsWith('Untitled') && document.querySelector('.chat-session-list a[aria-current="true"] .chat-session-title').textContent === document.querySelector('#chat-title').textContent`, chatWait)
			b.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('.chat-log').scrollTop = 1e6; document.getElementById('toast').textContent = ''`))
			b.readmeShot("assistant")

			// A tool card expands to its arguments and result.
			b.do(chromedp.Click(chromedp.CSS(".chat-log details.tool summary"), chromedp.NodeVisible))
			b.waitFor("an open tool card", `document.querySelector('.chat-log details.tool[open] .tool-result pre')`, 5*time.Second)

			approvedID := b.openSessionID()
			b.do(chromedp.Click(chromedp.CSS(".confirm button.approve"), chromedp.NodeVisible))
			b.waitFor("the answer after approving", lastTurn+`.dataset.finish === 'stop' && document.querySelector('.confirm[data-status="approved"]')`, chatWait)
			if got := b.text(".chat-log .msg.assistant:last-of-type .msg-text:last-of-type"); !strings.Contains(got, "Done: checkout in cluster production is set to 3 tasks") {
				t.Errorf("after approving, the answer says %q", got)
			}
			if n := eval[int](b, `document.querySelectorAll('.chat-log .msg.assistant').length`); n != 1 {
				t.Errorf("%d assistant bubbles: approving should continue the same one", n)
			}
			if got := eval[string](b, `document.querySelector('.chat-log details.tool[data-ok="true"] .tool-name') && [...document.querySelectorAll('.chat-log details.tool')].pop().querySelector('.badge').textContent`); got != "ok" {
				t.Errorf("scale_service card says %q after approving", got)
			}
			if got := checkoutDesired(b); got != 3 {
				t.Errorf("checkout desired count %d after approving (was %d), want 3", got, before)
			}

			// Reject: nothing runs; the model is told, and the API records it.
			b.newChat()
			b.chat("scale checkout to 5")
			b.waitFor("the second confirmation", lastTurn+`.querySelector('.confirm[data-status="pending"] button.reject')`, chatWait)
			b.do(chromedp.SendKeys(chromedp.CSS(".confirm .confirm-reason"), "not during the sale", chromedp.NodeVisible),
				chromedp.Click(chromedp.CSS(".confirm button.reject"), chromedp.NodeVisible))
			b.waitFor("the answer after rejecting", lastTurn+`.dataset.finish === 'stop' && document.querySelector('.confirm[data-status="rejected"]')`, chatWait)
			if got := b.text(".chat-log .msg.assistant:last-of-type .msg-text:last-of-type"); !strings.Contains(got, "as you rejected it") {
				t.Errorf("after rejecting, the answer says %q", got)
			}
			rejectedID := b.openSessionID()
			var rejected chatSessionDetail
			b.h.get(b.h.sb.Token(), "/api/v1/agent/sessions/"+rejectedID, &rejected)
			if len(rejected.Confirmations) != 1 || rejected.Confirmations[0].Status != "rejected" || rejected.Confirmations[0].Reason != "not during the sale" {
				t.Errorf("confirmations after rejecting: %+v", rejected.Confirmations)
			}
			if got := checkoutDesired(b); got != 3 {
				t.Errorf("checkout desired count %d after rejecting, want 3 (unchanged)", got)
			}

			// Several pending approvals in one session are each decided on
			// their own. The demo model asks for one write per turn, so the
			// test makes two through the voice tool-call endpoint, which
			// records them in a chat session as the chat loop does.
			acct := b.h.sb.CloudAccountID()
			var scale, deploy struct {
				SessionID      string `json:"session_id"`
				ConfirmationID string `json:"confirmation_id"`
			}
			postJSON(b, "/api/v1/voice/tool-calls", map[string]any{"name": "scale_service",
				"arguments": map[string]any{"account_id": acct, "cluster": "production", "service": "checkout", "desired_count": 4}}, &scale)
			postJSON(b, "/api/v1/voice/tool-calls", map[string]any{"session_id": scale.SessionID, "name": "deploy_service",
				"arguments": map[string]any{"account_id": acct, "cluster": "production", "service": "search"}}, &deploy)
			if scale.ConfirmationID == "" || deploy.ConfirmationID == "" || deploy.SessionID != scale.SessionID {
				t.Fatalf("voice tool calls: %+v %+v", scale, deploy)
			}
			b.goTo("#/chat/" + scale.SessionID)
			card := func(id string) string {
				return fmt.Sprintf(`document.querySelector('.confirm[data-confirmation-id=%q]')`, id)
			}
			b.waitFor("two pending confirmations", card(scale.ConfirmationID)+`.dataset.status === 'pending' && `+card(deploy.ConfirmationID)+`.dataset.status === 'pending'`, chatWait)
			b.do(chromedp.Click(chromedp.CSS(fmt.Sprintf(`.confirm[data-confirmation-id=%q] button.approve`, scale.ConfirmationID)), chromedp.NodeVisible))
			b.waitFor("the first decided, the second still asked", card(scale.ConfirmationID)+`.dataset.status === 'approved' && !document.querySelector('#chat-send').disabled && !`+card(deploy.ConfirmationID)+`.querySelector('button.reject').disabled`, chatWait)
			if got := eval[string](b, lastTurn+`.dataset.finish`); got != "confirmation_required" {
				t.Errorf("after the first of two decisions the turn ended with %q, want it waiting", got)
			}
			// The keyboard moved on to the approval still asked.
			b.waitFor("the focus on the next approval", card(deploy.ConfirmationID)+`.querySelector('button.approve') === document.activeElement`, chatWait)
			if got := checkoutDesired(b); got != 4 {
				t.Errorf("checkout desired count %d after approving the first of two, want 4", got)
			}
			b.do(chromedp.Click(chromedp.CSS(fmt.Sprintf(`.confirm[data-confirmation-id=%q] button.reject`, deploy.ConfirmationID)), chromedp.NodeVisible))
			b.waitFor("the second decided", card(deploy.ConfirmationID)+`.dataset.status === 'rejected' && `+lastTurn+`.dataset.finish === 'stop'`, chatWait)
			var both chatSessionDetail
			b.h.get(b.h.sb.Token(), "/api/v1/agent/sessions/"+scale.SessionID, &both)
			if len(both.Confirmations) != 2 {
				t.Errorf("confirmations: %+v", both.Confirmations)
			}
			for _, c := range both.Confirmations {
				if want := map[string]string{"scale_service": "approved", "deploy_service": "rejected"}[c.Name]; c.Status != want {
					t.Errorf("%s is %s, want %s", c.Name, c.Status, want)
				}
			}

			// The stored session renders the same: open the approved one again.
			b.do(chromedp.Click(chromedp.CSS(fmt.Sprintf(`.chat-session-list a[data-session-id=%q]`, approvedID)), chromedp.NodeVisible))
			b.waitFor("the approved session's history", `document.querySelector('.confirm[data-status="approved"]') && document.querySelectorAll('.chat-log details.tool').length >= 4`, chatWait)
			if got := b.text(".chat-log"); !strings.Contains(got, "Done: checkout in cluster production is set to 3 tasks") || !strings.Contains(got, "scale checkout to 3") {
				t.Errorf("the stored session shows %q", got)
			}

			// At 390 px wide, the conversation with its cards does not
			// overflow sideways.
			b.do(chromedp.EmulateViewport(390, 844))
			b.waitFor("a narrow layout", `window.innerWidth === 390`, chatWait)
			if w := eval[int](b, `document.documentElement.scrollWidth`); w > 390 {
				t.Errorf("the page is %d px wide at 390", w)
			}
			b.do(chromedp.EmulateViewport(1280, 900))

			// Memory: add an instruction and save it.
			b.do(chromedp.Click(chromedp.ID("chat-memory"), chromedp.NodeVisible))
			b.waitFor("the memory dialog", `document.querySelector('dialog.memory[open] .memory-add') && !document.querySelector('dialog.memory .loading')`, chatWait)
			b.do(chromedp.Click(chromedp.CSS("dialog.memory .memory-add"), chromedp.NodeVisible),
				chromedp.SendKeys(chromedp.CSS("dialog.memory textarea"), "Answer briefly", chromedp.NodeVisible),
				chromedp.Click(chromedp.CSS("dialog.memory button.primary"), chromedp.NodeVisible))
			b.waitFor("the dialog to close", `!document.querySelector('dialog.memory')`, chatWait)
			var prefs struct {
				Preferences []struct {
					Instruction string `json:"instruction"`
				} `json:"preferences"`
			}
			b.h.get(b.h.sb.Token(), "/api/v1/agent/memory/preferences", &prefs)
			if len(prefs.Preferences) != 1 || prefs.Preferences[0].Instruction != "Answer briefly" {
				t.Errorf("preferences after saving: %+v", prefs.Preferences)
			}
			if v := eval[[]string](b, `window.__csp`); len(v) != 0 {
				t.Errorf("Content-Security-Policy violations: %v", v)
			}
		})
	}
}

// postJSON posts body as the demo user and decodes a 200 answer into out.
func postJSON(b *browser, path string, body, out any) {
	b.t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, b.base+path, bytes.NewReader(raw))
	req.Header.Set("Authorization", "Bearer "+b.h.sb.Token())
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		b.t.Fatalf("POST %s = %d %s", path, resp.StatusCode, answer)
	}
	if err := json.Unmarshal(answer, out); err != nil {
		b.t.Fatalf("POST %s: %v in %s", path, err, answer)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// cutStream is the test's own script (trusted) that wraps window.fetch: the
// next chat stream is cut with a network error right after its first content
// event, while the test keeps reading the real response so the server's turn
// runs to its end. The resume request the page then makes is recorded, and
// its Last-Event-ID replaced by 0, so the server replays every event of the
// turn, the ones already shown included: the page must drop those (ids at or
// below the last it saw) and show each piece of text once. Cutting at an
// event boundary chosen by the script makes this deterministic, where a
// timed network outage would not be.
const cutStream = `(() => {
  const orig = window.fetch;
  const rec = window.__cut = { cutAfter: 0, lastEventId: null, resumes: 0 };
  let armed = true;
  window.fetch = async (input, init = {}) => {
    const url = typeof input === 'string' ? input : input.url;
    if (/\/api\/v1\/agent\/sessions\/[^/]+\/stream$/.test(url)) {
      const hd = new Headers(init.headers);
      rec.lastEventId = hd.get('Last-Event-ID');
      rec.resumes++;
      hd.set('Last-Event-ID', '0');
      const r = await orig(input, { ...init, headers: hd });
      r.clone().text().then((t) => { rec.replayedContent = (t.match(/^event: content$/gm) || []).length; });
      return r;
    }
    const resp = await orig(input, init);
    if (!armed || !url.endsWith('/api/v1/agent/chat') || !resp.ok) return resp;
    armed = false;
    const reader = resp.body.getReader();
    const dec = new TextDecoder(), enc = new TextEncoder();
    let buf = '', cut = false;
    const body = new ReadableStream({
      async pull(c) {
        if (cut) {
          // A moment first: an error reaching the page's decoder at once
          // would discard the content event still queued in it.
          await new Promise((ok) => setTimeout(ok, 200));
          c.error(new TypeError('network error (cut by the test)'));
          return;
        }
        for (;;) {
          let i, sent = false;
          while ((i = buf.indexOf('\n\n')) >= 0) {
            const block = buf.slice(0, i + 2);
            buf = buf.slice(i + 2);
            c.enqueue(enc.encode(block));
            sent = true;
            if (/^event: content$/m.test(block)) {
              rec.cutAfter = Number((block.match(/^id: *(\d+)$/m) || [])[1]);
              cut = true;
              (async () => { while (!(await reader.read()).done) {} })();
              return;
            }
          }
          if (sent) return;
          const { value, done } = await reader.read();
          if (done) { c.close(); return; }
          buf += dec.decode(value, { stream: true });
        }
      },
    });
    return new Response(body, { status: resp.status, headers: resp.headers });
  };
})()`

func TestConsoleChatResumeXSSMic(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := startBrowser(t, d)
			b.openNewChat()

			// Resume: the demo model's help is a long answer, streamed as
			// several content events; the connection drops after the first.
			b.do(chromedp.Evaluate[chromedp.Void](cutStream))
			b.chat("hello there")
			b.waitFor("the resumed answer", lastTurn+`.dataset.finish === 'stop'`, chatWait)
			cutAfter := eval[int](b, `window.__cut.cutAfter`)
			if cutAfter == 0 || eval[int](b, `window.__cut.resumes`) != 1 || eval[string](b, `window.__cut.lastEventId`) != fmt.Sprint(cutAfter) {
				t.Errorf("resume: %s", eval[string](b, `JSON.stringify(window.__cut)`))
			}
			// The replay held the content event shown before the cut, and
			// more: the cut was mid-answer, and a duplicate was dropped.
			b.waitFor("the replay's end", `window.__cut.replayedContent !== undefined`, chatWait)
			if n := eval[int](b, `window.__cut.replayedContent`); n < 2 {
				t.Errorf("the replay had %d content events, want the one shown and more", n)
			}
			var s chatSessionDetail
			b.h.get(b.h.sb.Token(), "/api/v1/agent/sessions/"+b.openSessionID(), &s)
			answer := ""
			for _, m := range s.Messages {
				if m.Role == "assistant" {
					answer += m.Content
				}
			}
			shown := eval[string](b, lastTurn+`.querySelector('.msg-body').innerText`)
			if !strings.Contains(answer, "demo model") {
				t.Fatalf("the stored answer is %q", answer)
			}
			for _, line := range strings.Split(answer, "\n") {
				line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "- "))
				if line == "" {
					continue
				}
				if n := strings.Count(shown, line); n != 1 {
					t.Errorf("%q is shown %d times in %q", line, n, shown)
				}
			}

			// XSS: the demo model repeats the search words in its answer, so
			// the payload comes back as model output, and shows as text.
			b.newChat()
			b.do(chromedp.Evaluate[chromedp.Void](`window.__alerts = 0; window.alert = () => { window.__alerts++; }`))
			payload := `<script>alert(1)</script> <img src=x onerror=alert(1)> [x](javascript:alert(1))`
			b.chat("search commits for " + payload)
			b.waitFor("the answer with the payload", lastTurn+`.dataset.finish === 'stop'`, chatWait)
			checkXSS := func(when string) {
				t.Helper()
				text := eval[string](b, lastTurn+`.querySelector('.msg-text').textContent`)
				for _, want := range []string{"<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "javascript:alert(1)"} {
					if !strings.Contains(text, want) {
						t.Errorf("%s: the answer %q does not show %s as text", when, text, want)
					}
				}
				if n := eval[int](b, `document.querySelectorAll('.chat-log script, .chat-log img, .chat-log a[href^="javascript"], .chat-log [onerror]').length`); n != 0 {
					t.Errorf("%s: %d elements made from the payload", when, n)
				}
				if n := eval[int](b, `window.__alerts`); n != 0 {
					t.Errorf("%s: alert ran %d times", when, n)
				}
			}
			checkXSS("streamed")
			b.do(chromedp.Reload())
			b.waitFor("the stored answer", `document.querySelector('.chat-log .msg.assistant .msg-text')`, chatWait)
			b.do(chromedp.Evaluate[chromedp.Void](`window.__alerts = 0; window.alert = () => { window.__alerts++; }`))
			checkXSS("stored")

			// Delete the chat: the in-page confirmation dialog asks first
			// (Escape keeps the chat), and it leaves the list.
			xssID := b.openSessionID()
			b.do(chromedp.Click(chromedp.ID("chat-delete"), chromedp.NodeVisible))
			b.waitFor("the delete confirmation", `document.querySelector('dialog.confirm-dialog[open]')`, chatWait)
			b.do(chromedp.KeyEvent(kb.Escape))
			b.waitFor("the confirmation cancelled", `!document.querySelector('dialog.confirm-dialog') && document.activeElement === document.querySelector('#chat-delete')`, chatWait)
			if !eval[bool](b, fmt.Sprintf(`!!document.querySelector('.chat-session-list a[data-session-id=%q]')`, xssID)) {
				t.Error("cancelling the delete removed the chat")
			}
			b.do(chromedp.Click(chromedp.ID("chat-delete"), chromedp.NodeVisible))
			b.confirmInPage()
			b.waitFor("the chat gone", fmt.Sprintf(`location.hash === '#/chat' && document.querySelector('.chat-session-list') && !document.querySelector('.chat-session-list a[data-session-id=%q]')`, xssID), chatWait)
			req, _ := http.NewRequest(http.MethodGet, b.base+"/api/v1/agent/sessions/"+xssID, nil)
			req.Header.Set("Authorization", "Bearer "+b.h.sb.Token())
			if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNotFound {
				t.Errorf("GET the deleted session: %v %v", resp, err)
			} else {
				resp.Body.Close()
			}

			// The microphone: record a second of Chromium's fake audio, stop,
			// and the sandbox's transcription lands in the message box.
			b.waitFor("the chat page", `document.querySelector('.chat-welcome') && document.querySelector('button.mic')`, chatWait)
			b.do(chromedp.Click(chromedp.CSS("button.mic"), chromedp.NodeVisible))
			b.waitFor("a second of recording", `document.querySelector('button.mic').getAttribute('aria-pressed') === 'true' && /[1-9]$/.test(document.querySelector('.mic-time').textContent)`, chatWait)
			if got := b.text(".mic-status"); !strings.Contains(got, "Recording") {
				t.Errorf("recording state: %q", got)
			}
			b.do(chromedp.Click(chromedp.CSS("button.mic"), chromedp.NodeVisible))
			b.waitFor("the transcription", `document.querySelector('#chat-input').value === 'hello from devpilot'`, chatWait)
			if got := eval[string](b, `document.querySelector('button.mic').getAttribute('aria-pressed')`); got != "false" {
				t.Errorf("aria-pressed %q after stopping", got)
			}

			// Shift+Enter adds a line; it does not send.
			b.do(chromedp.Evaluate[chromedp.Void](`(() => { const i = document.querySelector('#chat-input'); i.focus(); i.setSelectionRange(i.value.length, i.value.length); })()`),
				chromedp.KeyEvent(kb.Enter, chromedp.KeyModifiers(chromedp.ModifierShift)),
				chromedp.KeyEvent("ok"))
			if got := eval[string](b, `document.querySelector('#chat-input').value`); got != "hello from devpilot\nok" {
				t.Errorf("after Shift+Enter the message box holds %q", got)
			}
			if n := eval[int](b, `document.querySelectorAll('.chat-log .msg').length`); n != 0 {
				t.Errorf("Shift+Enter sent the message (%d bubbles)", n)
			}

			// At 390 px wide nothing overflows sideways.
			b.do(chromedp.EmulateViewport(390, 844))
			b.waitFor("a narrow layout", `window.innerWidth === 390`, chatWait)
			if w := eval[int](b, `document.documentElement.scrollWidth`); w > 390 {
				t.Errorf("the page is %d px wide at 390", w)
			}
		})
	}
}
