package app_test

import (
	"fmt"
	"maps"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/app"
)

// The console keeps the user's place: a reload, a refused send, a dropped
// stream, a decision or a server restart leaves the user where they were.
// The reload, search and restart checks run on both databases; the expired
// approval's card, a check of the page alone, on SQLite.

// holdStream is the test's own script (trusted): the next chat request
// reaches the server, but its events are held back from the page, as if the
// model had not answered yet.
const holdStream = `(() => {
  const orig = window.fetch;
  let armed = true;
  window.fetch = async (input, init = {}) => {
    const url = typeof input === 'string' ? input : input.url;
    const resp = await orig(input, init);
    if (!armed || !url.endsWith('/api/v1/agent/chat')) return resp;
    armed = false;
    return new Response(new ReadableStream({ start() {} }), { status: resp.status, headers: resp.headers });
  };
})()`

// failedTurn is the test's own script: the next chat request is answered,
// without reaching the server, by a stream that ends on an error.
const failedTurn = `(() => {
  const orig = window.fetch;
  let armed = true;
  window.fetch = async (input, init = {}) => {
    const url = typeof input === 'string' ? input : input.url;
    if (!armed || !url.endsWith('/api/v1/agent/chat')) return orig(input, init);
    armed = false;
    const body = 'id: 1\nevent: error\ndata: {"code":"model_unavailable","message":"the model is down","retryable":true}\n\n' +
      'id: 2\nevent: done\ndata: {"finish_reason":"error"}\n\n';
    return new Response(body, { status: 200, headers: { 'Content-Type': 'text/event-stream' } });
  };
})()`

// slowResume is the test's own script, on top of cutStream: the resume
// request waits 1.5 s, so the reconnecting banner can be seen.
const slowResume = `(() => {
  const inner = window.fetch;
  window.fetch = async (input, init = {}) => {
    const url = typeof input === 'string' ? input : input.url;
    if (/\/stream$/.test(url)) await new Promise((ok) => setTimeout(ok, 1500));
    return inner(input, init);
  };
})()`

// openNewChat signs the demo user in and waits for the Assistant's empty
// new chat.
func (b *browser) openNewChat() {
	b.t.Helper()
	b.signInDemo()
	b.goTo("#/chat")
	b.waitFor("the chat page", `document.querySelector('.chat-welcome')`, chatWait)
}

// bannerShown is a JavaScript condition: the reconnecting banner shows.
const bannerShown = `(e => e && !e.hidden && e.getClientRects().length > 0 && e.textContent === 'Reconnecting…')(document.getElementById('reconnecting'))`

func TestConsoleChatKeepsPlace(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := startBrowser(t, d)
			b.openNewChat()

			// A reload before the first event lands on the new chat: its id is in
			// the URL as soon as the server answers.
			b.do(chromedp.Evaluate[chromedp.Void](holdStream))
			b.chat("hello there")
			b.waitFor("the new chat's id in the URL", `/^#\/chat\/[0-9a-f-]{36}$/.test(location.hash)`, chatWait)
			if n := eval[int](b, `document.querySelectorAll('.chat-log .msg.assistant .msg-text').length`); n != 0 {
				t.Fatalf("%d answers shown: the events were not held back", n)
			}
			first := b.openSessionID()
			b.do(chromedp.Reload())
			b.waitFor("the chat after the reload", `document.querySelector('.chat-log .msg.user') && !document.querySelector('.chat-log .loading')`, chatWait)
			if got := b.openSessionID(); got != first {
				t.Errorf("after the reload the page shows chat %q, want %s", got, first)
			}
			if got := b.text(".chat-log .msg.user .msg-body"); got != "hello there" {
				t.Errorf("after the reload the chat shows %q", got)
			}
			if got := b.text("#chat-title"); got == "New chat" {
				t.Errorf("after the reload the heading is %q", got)
			}
			b.waitFor("the rest of the answer", lastTurn+`?.innerText.includes('demo model') && !document.querySelector('#chat-send').disabled`, chatWait)
			// The page asked the stream route for the rest (it never sends the chat again).
			requests := `performance.getEntriesByType('resource').map(e => new URL(e.name).pathname)`
			if got := eval[[]string](b, requests+`.filter(p => p.startsWith('/api/v1/agent/'))`); !contains(got, "/api/v1/agent/sessions/"+first+"/stream") || contains(got, "/api/v1/agent/chat") {
				t.Errorf("after the reload the page called %q, want the stream route and not the chat", got)
			}

			// A refused send keeps the text, shows the server's reason, and Retry.
			b.newChat()
			long := strings.Repeat("x", 32001)
			b.do(chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector('#chat-input').value = %q; document.getElementById('toast').textContent = ''`, long)),
				chromedp.Click(chromedp.ID("chat-send"), chromedp.NodeVisible))
			b.waitFor("the Retry button", `document.querySelector('#chat-retry')`, chatWait)
			if dir := shotDir(); dir != "" {
				b.saveScreenshot(dir, "chat-refused")
			}
			if got := b.text(".chat-send-error"); !strings.Contains(got, "must be at most 32000 characters") {
				t.Errorf("the refusal shows %q, want the server's reason", got)
			}
			if n := eval[int](b, `document.querySelector('#chat-input').value.length`); n != len(long) {
				t.Errorf("the message box holds %d characters after the refusal, want the %d sent", n, len(long))
			}
			if n := eval[int](b, `document.querySelectorAll('.chat-log .msg').length`); n != 0 {
				t.Errorf("%d bubbles after a refused send", n)
			}
			if got := eval[string](b, `document.getElementById('toast').textContent`); strings.Contains(got, "answered") {
				t.Errorf("toast %q after a refusal", got)
			}
			// Retry sends what the box holds now.
			b.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('#chat-input').value = 'hello again'`),
				chromedp.Click(chromedp.ID("chat-retry"), chromedp.NodeVisible))
			b.waitFor("the answer after Retry", lastTurn+`?.dataset.finish === 'stop'`, chatWait)
			if got := eval[string](b, `document.querySelector('.chat-send-error').textContent + document.querySelector('#chat-input').value`); got != "" {
				t.Errorf("after Retry the error and box hold %q", got)
			}

			// Copy, Regenerate and Edit.
			b.do(chromedp.Evaluate[chromedp.Void](`window.__copied = null; navigator.clipboard.writeText = async (t) => { window.__copied = t; }`),
				chromedp.Click(chromedp.CSS(".chat-log .msg.assistant .msg-actions button.copy"), chromedp.NodeVisible))
			b.waitFor("the copied answer", `window.__copied !== null`, chatWait)
			if got := eval[string](b, `window.__copied`); !strings.Contains(got, "demo model") {
				t.Errorf("Copy copied %q", got)
			}
			b.do(chromedp.Click(chromedp.CSS(".chat-log .msg.assistant .msg-actions button.regen"), chromedp.NodeVisible))
			b.waitFor("the regenerated answer", `document.querySelectorAll('.chat-log .msg.assistant').length === 2 && `+lastTurn+`.dataset.finish === 'stop'`, chatWait)
			if got := eval[[]string](b, `[...document.querySelectorAll('.chat-log .msg.user .msg-body')].map(e => e.textContent)`); len(got) != 2 || got[1] != "hello again" {
				t.Errorf("after Regenerate the questions are %q", got)
			}
			if n := eval[int](b, `document.querySelectorAll('.chat-log .msg.assistant .msg-actions button.copy').length`); n != 2 {
				t.Errorf("%d Copy buttons on 2 answers", n)
			}
			if n := eval[int](b, `document.querySelectorAll('.chat-log button.regen').length + document.querySelectorAll('.chat-log button.edit').length`); n != 2 {
				t.Errorf("%d Regenerate and Edit buttons, want one each (the last answer, the last question)", n)
			}
			b.do(chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll('.chat-log .msg.user')].pop().querySelector('button.edit').click()`))
			if got := eval[string](b, `document.activeElement.id + ':' + document.querySelector('#chat-input').value`); got != "chat-input:hello again" {
				t.Errorf("after Edit: %q", got)
			}

			// An answer that ends on an error is not announced as answered.
			b.newChat()
			b.do(chromedp.Evaluate[chromedp.Void](failedTurn))
			b.chat("hello there")
			b.waitFor("the failed turn", lastTurn+`?.dataset.finish === 'error'`, chatWait)
			if got := eval[string](b, `document.getElementById('toast').textContent`); got != "The answer stopped on an error." {
				t.Errorf("toast %q after an error", got)
			}

			// A dropped stream shows the reconnecting banner while it resumes.
			// (The failed turn made no session: the page is still on #/chat.)
			b.do(chromedp.Reload())
			b.waitFor("a new chat", `document.querySelector('.chat-welcome')`, chatWait)
			b.do(chromedp.Evaluate[chromedp.Void](cutStream), chromedp.Evaluate[chromedp.Void](slowResume))
			b.chat("hello there")
			b.waitFor("the reconnecting banner", bannerShown, chatWait)
			b.waitFor("the resumed answer", lastTurn+`.dataset.finish === 'stop'`, chatWait)
			if eval[bool](b, bannerShown) {
				t.Errorf("the banner still shows after the resume")
			}

			// Rejecting marks the tool card, and the keyboard moves on.
			b.newChat()
			b.chat("scale checkout to 5")
			b.waitFor("the confirmation", lastTurn+`.querySelector('.confirm[data-status="pending"] button.reject')`, chatWait)
			b.do(chromedp.Click(chromedp.CSS(".confirm button.reject"), chromedp.NodeVisible))
			b.waitFor("the answer after rejecting", lastTurn+`.dataset.finish === 'stop' && document.querySelector('.confirm[data-status="rejected"]')`, chatWait)
			scaleCard := `[...document.querySelectorAll('.chat-log details.tool')].find(d => d.querySelector('.tool-name').textContent === 'scale_service').querySelector('.badge').textContent`
			if got := eval[string](b, scaleCard); got != "rejected" {
				t.Errorf("the scale_service card says %q after rejecting", got)
			}
			if got := eval[string](b, `document.activeElement.id`); got != "chat-input" {
				t.Errorf("after Reject the focus is on %q, want the message box", got)
			}
			rejectedID := b.openSessionID()
			b.do(chromedp.Reload())
			b.waitFor("the stored rejection", `document.querySelector('.confirm[data-status="rejected"]')`, chatWait)
			if got := eval[string](b, scaleCard); got != "rejected" {
				t.Errorf("the stored scale_service card says %q", got)
			}

			// Search finds the chat by a word only its answer has.
			word := onlyWord(b, rejectedID)
			b.do(chromedp.SendKeys(chromedp.ID("chat-search"), word, chromedp.NodeVisible))
			b.waitFor("the search result", fmt.Sprintf(`(l => l && l.length === 1 && l[0].dataset.sessionId === %q)(document.querySelectorAll('.chat-session-list a'))`, rejectedID), chatWait)
			b.do(chromedp.SendKeys(chromedp.ID("chat-search"), "zzqx", chromedp.NodeVisible))
			b.waitFor("no match", `document.querySelector('.chat-sessions-body .empty')?.textContent.startsWith('No chat mentions')`, chatWait)

			for _, w := range []int{1440, 390} {
				b.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('#chat-search').value = ''; document.querySelector('#chat-search').dispatchEvent(new Event('input'))`),
					chromedp.EmulateViewport(int64(w), 900))
				b.waitFor("the whole list", `document.querySelectorAll('.chat-session-list a').length >= 4`, chatWait)
				if sw := eval[int](b, `document.documentElement.scrollWidth`); sw > w {
					t.Errorf("the page is %d px wide at %d", sw, w)
				}
				if dir := shotDir(); dir != "" {
					b.saveScreenshot(dir, fmt.Sprintf("chat-place-%d", w))
				}
			}
		})
	}
}

// shotDir is where DEVPILOT_LOOK asks the tests to save pages to look at
// ("" for nowhere).
func shotDir() string { return os.Getenv("DEVPILOT_LOOK") }

// onlyWord is a word of at least five letters that session id's answers
// have and no other chat of the demo user says.
func onlyWord(b *browser, id string) string {
	b.t.Helper()
	var list struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	b.h.get(b.h.sb.Token(), "/api/v1/agent/sessions?limit=200", &list)
	said := map[string]string{}
	for _, it := range list.Items {
		var s chatSessionDetail
		b.h.get(b.h.sb.Token(), "/api/v1/agent/sessions/"+url.PathEscape(it.ID), &s)
		for _, m := range s.Messages {
			if m.Role == "user" || m.Role == "assistant" {
				said[it.ID] += " " + strings.ToLower(m.Content)
			}
		}
		said[it.ID] += " " + strings.ToLower(s.Title)
	}
	for _, w := range regexp.MustCompile(`[a-z]{5,}`).FindAllString(said[id], -1) {
		unique := true
		for other, text := range said {
			if other != id && strings.Contains(text, w) {
				unique = false
				break
			}
		}
		if unique {
			return w
		}
	}
	b.t.Fatalf("no word only chat %s says: %q", id, said[id])
	return ""
}

func TestConsoleChatExpiredApproval(t *testing.T) {
	t.Parallel()
	b := startBrowserWith(t, sqlstore.DialectSQLite, map[string]string{app.EnvConfirmTTL: "3s"})
	b.openNewChat()
	b.chat("scale checkout to 3")
	b.waitFor("the confirmation", lastTurn+`.querySelector('.confirm button.approve')`, chatWait)
	scaleCard := `[...document.querySelectorAll('.chat-log details.tool')].find(d => d.querySelector('.tool-name').textContent === 'scale_service').querySelector('.badge').textContent`
	b.waitFor("the approval to expire", `document.querySelector('.confirm[data-status="expired"]')`, chatWait)
	if got := eval[string](b, scaleCard); got != "expired, nothing ran" {
		t.Errorf("the scale_service card says %q once its approval expired", got)
	}
	b.do(chromedp.Reload())
	b.waitFor("the stored expired approval", `document.querySelector('.confirm[data-status="expired"]')`, chatWait)
	if got := eval[string](b, scaleCard); got != "expired, nothing ran" {
		t.Errorf("the stored scale_service card says %q", got)
	}
	if got := b.text(".confirm .countdown"); got != "This approval expired; nothing ran." {
		t.Errorf("the expired card says %q", got)
	}
}

// restart stops the stack and starts it again on the same database, data
// directory and port, as a deploy or a crash and restart would.
func (b *browser) restart(whileDown func()) {
	b.t.Helper()
	u, err := url.Parse(b.base)
	if err != nil {
		b.t.Fatal(err)
	}
	b.h.stop()
	if whileDown != nil {
		whileDown()
	}
	extra := maps.Clone(b.extra)
	if extra == nil {
		extra = map[string]string{}
	}
	extra[app.EnvHTTPAddr] = u.Host
	b.h = startSandboxWith(b.t, b.dataDir, b.dbURL, extra)
	if b.h.base != b.base {
		b.t.Fatalf("restarted on %s, was %s", b.h.base, b.base)
	}
}

func TestConsoleRecoversAfterRestart(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := startBrowser(t, d)
			b.signInDemo()
			b.goTo("#/cloud/costs")
			b.waitFor("the costs chart", `document.querySelector('svg.cost-chart g.period rect.mark')`, chatWait)
			chat := b.newContext()
			chat.do(chromedp.Navigate(chat.base + "/"))
			chat.signInDemo()
			chat.goTo("#/chat")
			chat.waitFor("the chat list", `document.querySelector('.chat-sessions-body .empty')`, chatWait)

			b.restart(func() {
				// While the server is down, both pages ask it for something.
				b.goTo("#/cloud/containers/production")
				chat.goTo("#/chat/")
				b.waitFor("the banner on Cloud", bannerShown, chatWait)
				chat.waitFor("the banner on Chat", bannerShown, chatWait)
				time.Sleep(time.Second) // a few tries fail
				if dir := shotDir(); dir != "" {
					b.saveScreenshot(dir, "down-cloud")
				}
			})
			b.waitFor("the services of production", `document.querySelector('article.service[data-service="checkout"] .desired')`, chatWait)
			chat.waitFor("the chat list", `document.querySelector('.chat-sessions-body .empty')?.textContent === 'No chats yet.' && document.querySelector('.chat-welcome')`, chatWait)
			for _, p := range []*browser{b, chat} {
				if n := eval[int](p, `document.querySelectorAll('#main .error').length`); n != 0 {
					t.Errorf("%d errors shown after the restart: %s", n, eval[string](p, `document.querySelector('#main .error').innerText`))
				}
				p.waitFor("the banner gone", `!(`+bannerShown+`)`, chatWait)
			}
			// The chat works on the restarted server.
			chat.chat("hello there")
			chat.waitFor("the answer", lastTurn+`?.dataset.finish === 'stop'`, chatWait)
			if dir := shotDir(); dir != "" {
				b.saveScreenshot(dir, "recovered-cloud")
				chat.saveScreenshot(dir, "recovered-chat")
			}
		})
	}
}
