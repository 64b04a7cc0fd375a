package app_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// A turn outlives the page that asked for it, and the page can stop it.
// The sandbox's demo model answers at once, so these tests script the next
// model call ahead of it (sandbox.Model().Enqueue): a long answer in many
// deltas with a pause between them.

// slowAnswer is a scripted answer of n deltas, whose text starts with head;
// it returns the response and its whole text.
func slowAnswer(head string, n int, delay time.Duration) (fakeopenai.Response, string) {
	parts := []string{head}
	for i := range n {
		parts = append(parts, fmt.Sprintf(" part %d of the slow answer;", i))
	}
	return fakeopenai.TextChunks(parts...).WithTokenDelay(delay), strings.Join(parts, "")
}

// stopShown is a JavaScript condition: the Stop button shows.
const stopShown = `(e => !!e && !e.hidden && e.getClientRects().length > 0)(document.getElementById('chat-stop'))`

// storedChat is the open chat as the API has it.
func storedChat(b *browser, id string) chatSessionDetail {
	b.t.Helper()
	var s chatSessionDetail
	b.h.get(b.h.sb.Token(), "/api/v1/agent/sessions/"+url.PathEscape(id), &s)
	return s
}

// roles counts a stored chat's messages by role.
func roles(s chatSessionDetail) map[string]int {
	n := map[string]int{}
	for _, m := range s.Messages {
		n[m.Role]++
	}
	return n
}

func TestConsoleChatReopen(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := startBrowser(t, d)
			b.openNewChat()
			resp, want := slowAnswer("Reopened answer:", 60, 100*time.Millisecond)
			b.h.sb.Model().Enqueue(resp)
			b.chat("tell me slowly")
			b.waitFor("the first content", lastTurn+`?.querySelector('.msg-text')`, chatWait)
			b.waitFor("the Stop button", stopShown, chatWait)
			id := b.openSessionID()

			// The page goes away mid-answer (its connection with it), and
			// comes back a second later at the chat's address.
			b.do(chromedp.Navigate("about:blank"))
			time.Sleep(time.Second)
			b.do(chromedp.Navigate(b.base + "/#/chat/" + url.PathEscape(id)))
			b.waitFor("the chat again", `document.querySelector('.chat-log .msg.user')`, chatWait)
			b.waitFor("Stop on the turn followed", stopShown, chatWait)
			b.waitFor("the whole answer", lastTurn+`?.dataset.finish === 'stop' && !document.querySelector('#chat-send').disabled`, chatWait)
			if got := strings.TrimSpace(eval[string](b, lastTurn+`.querySelector('.msg-body').innerText`)); got != want {
				t.Errorf("the reopened page shows\n%q\nwant\n%q", got, want)
			}
			if eval[bool](b, stopShown) {
				t.Error("Stop still shows after the answer")
			}
			if n := eval[int](b, `document.querySelectorAll('.chat-log .msg.user').length`); n != 1 {
				t.Errorf("%d questions shown, want 1", n)
			}
			// The chat was sent once: the reopened page followed the
			// stream route, and the session holds one question and the
			// whole answer.
			paths := eval[[]string](b, `performance.getEntriesByType('resource').map(e => new URL(e.name).pathname)`)
			if contains(paths, "/api/v1/agent/chat") || !contains(paths, "/api/v1/agent/sessions/"+id+"/stream") {
				t.Errorf("the reopened page called %q, want the stream route and not the chat", paths)
			}
			s := storedChat(b, id)
			if n := roles(s); n["user"] != 1 || n["assistant"] != 1 {
				t.Errorf("the stored chat has %v messages, want one question and one answer", n)
			}
			for _, m := range s.Messages {
				if m.Role == "assistant" && m.Content != want {
					t.Errorf("the stored answer is\n%q\nwant\n%q", m.Content, want)
				}
			}
		})
	}
}

func TestConsoleChatStop(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := startBrowser(t, d)
			b.openNewChat()
			if eval[bool](b, stopShown) {
				t.Error("Stop shows with no turn running")
			}
			resp, whole := slowAnswer("Stopped answer:", 300, 50*time.Millisecond)
			b.h.sb.Model().Enqueue(resp)
			b.chat("talk for a long time")
			b.waitFor("the first content", lastTurn+`?.querySelector('.msg-text')`, chatWait)
			b.waitFor("the Stop button", stopShown, chatWait)
			if got := eval[string](b, `(e => e.tagName + ' ' + e.type + ' ' + e.getAttribute('aria-label') + ' ' + e.textContent)(document.getElementById('chat-stop'))`); got != "BUTTON button Stop the answer Stop" {
				t.Errorf("the Stop button is %q", got)
			}
			for _, w := range []int{1440, 390} {
				b.do(chromedp.EmulateViewport(int64(w), 900))
				if !eval[bool](b, stopShown) {
					t.Errorf("Stop is not shown at %d px", w)
				}
				if sw := eval[int](b, `document.documentElement.scrollWidth`); sw > w {
					t.Errorf("the page is %d px wide at %d", sw, w)
				}
				if dir := shotDir(); dir != "" {
					b.saveScreenshot(dir, fmt.Sprintf("chat-stop-%d", w))
				}
			}
			id := b.openSessionID()

			// Stop, at 390 px.
			b.do(chromedp.Evaluate[chromedp.Void](`document.getElementById('toast').textContent = ''`),
				chromedp.Click(chromedp.ID("chat-stop"), chromedp.NodeVisible))
			b.waitFor("the stopped turn", lastTurn+`.dataset.finish === 'stopped' && !document.querySelector('#chat-send').disabled`, chatWait)
			if got := eval[string](b, lastTurn+`.querySelector('.turn-status').textContent`); !strings.Contains(got, "stopped") {
				t.Errorf("the stopped turn says %q", got)
			}
			if got := eval[string](b, `document.getElementById('toast').textContent`); got != "You stopped the answer." {
				t.Errorf("toast %q after Stop", got)
			}
			if n := eval[int](b, lastTurn+`.querySelectorAll('.error').length`); n != 0 {
				t.Errorf("%d errors on the stopped turn", n)
			}
			if eval[bool](b, stopShown) {
				t.Error("Stop still shows after the turn stopped")
			}
			if dir := shotDir(); dir != "" {
				b.saveScreenshot(dir, "chat-stopped-390")
			}
			if got := eval[string](b, lastTurn+`.querySelector('.msg-body').innerText`); got == "" || len(got) >= len(whole) {
				t.Errorf("the stopped turn shows %d characters of %d", len(got), len(whole))
			}

			// The stored turn ended stopped, and nothing runs now.
			code, body := b.h.send(b.h.sb.Token(), "GET", "/api/v1/agent/sessions/"+url.PathEscape(id)+"/stream?after=0", nil)
			if code != http.StatusOK {
				t.Fatalf("the stored events: %d %s", code, body)
			}
			events := strings.Split(strings.TrimSpace(string(body)), "\n\n")
			if last := events[len(events)-1]; !strings.Contains(last, "event: done") || !strings.Contains(last, `"finish_reason":"stopped"`) {
				t.Errorf("the stored turn ends with %q, want done stopped", last)
			}
			if code, body := b.h.send(b.h.sb.Token(), "POST", "/api/v1/agent/sessions/"+url.PathEscape(id)+"/stop", nil); code != http.StatusConflict || !strings.Contains(string(body), "no_turn_running") {
				t.Errorf("stop after the turn ended: %d %s, want 409 no_turn_running", code, body)
			}

			// The chat goes on.
			b.chat("hello there")
			b.waitFor("the next answer", `document.querySelectorAll('.chat-log .msg.assistant').length === 2 && `+lastTurn+`.dataset.finish === 'stop'`, chatWait)
			if got := eval[string](b, lastTurn+`.innerText`); !strings.Contains(got, "demo model") {
				t.Errorf("the answer after the stop is %q", got)
			}
			if eval[bool](b, stopShown) {
				t.Error("Stop shows after the next answer")
			}

			// Stop also stops a turn the page follows after a reload, and
			// the stored history it shows then keeps the note.
			resp, _ = slowAnswer("Followed answer:", 300, 50*time.Millisecond)
			b.h.sb.Model().Enqueue(resp)
			b.chat("talk again for a long time")
			b.waitFor("the third turn's content", `document.querySelectorAll('.chat-log .msg.assistant').length === 3 && `+lastTurn+`.querySelector('.msg-text')`, chatWait)
			b.do(chromedp.Reload())
			b.waitFor("Stop on the turn followed", stopShown, chatWait)
			b.do(chromedp.Evaluate[chromedp.Void](`document.getElementById('toast').textContent = ''`),
				chromedp.Click(chromedp.ID("chat-stop"), chromedp.NodeVisible))
			b.waitFor("the followed turn stopped", `document.getElementById('toast').textContent === 'You stopped the answer.'`, chatWait)
			if got := eval[string](b, lastTurn+`.dataset.finish + ': ' + `+lastTurn+`.querySelector('.turn-status').textContent`); !strings.HasPrefix(got, "stopped: ") {
				t.Errorf("after stopping the followed turn, the last turn is %q", got)
			}
			if eval[bool](b, stopShown) {
				t.Error("Stop still shows after the followed turn stopped")
			}
		})
	}
}
