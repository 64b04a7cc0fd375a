package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"go.uber.org/fx"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/hosts/app"
	"github.com/devpilot/devpilot/hosts/sandbox"
	"github.com/devpilot/devpilot/ports"
)

// sandboxWithoutGitHub, set in startSandboxWith's extra, has the sandbox
// start as usual (the demo user connects its fake GitHub) and then answer
// as a server with no GitHub OAuth app configured.
const sandboxWithoutGitHub = "TEST_SANDBOX_WITHOUT_GITHUB"

// unconfiguredGitHubOnce makes the GitHub provider answer as an
// unconfigured one (unavailable, not_configured, naming what to set) once
// gone is set.
func unconfiguredGitHubOnce(gone *atomic.Bool) fx.Option {
	return fx.Decorate(func(p ports.SCMProvider) ports.SCMProvider { return goneGitHub{SCMProvider: p, gone: gone} })
}

type goneGitHub struct {
	ports.SCMProvider
	gone *atomic.Bool
}

func (g goneGitHub) AuthorizeURL(state, challenge, redirectURI string) (string, error) {
	if g.gone.Load() {
		return "", &ports.Error{Kind: ports.KindUnavailable, Code: "not_configured",
			Message: "GitHub is not configured: set " + app.EnvGitHubClientID + " and " + app.EnvGitHubSecret}
	}
	return g.SCMProvider.AuthorizeURL(state, challenge, redirectURI)
}

// look saves the page as name.png where DEVPILOT_LOOK asks (see shotDir).
func (b *browser) look(name string) {
	if dir := shotDir(); dir != "" {
		b.saveScreenshot(dir, name)
	}
}

// lookAtWidths shows the page 1440 and 390 px wide, saving each as
// name-<width>.png where DEVPILOT_LOOK asks; at 390 px nothing may stick
// out sideways (wide tables scroll inside their box).
func (b *browser) lookAtWidths(name string) {
	b.t.Helper()
	for _, w := range []int{1440, 390} {
		b.do(chromedp.EmulateViewport(int64(w), 900))
		b.waitFor("the viewport", `window.innerWidth === `+itoa(w), 10*time.Second)
		if w == 390 {
			b.noneOffScreen(name)
		}
		b.look(name + "-" + itoa(w))
	}
	b.do(chromedp.EmulateViewport(1280, 900))
}

// issueMember issues a token for a new member of the sandbox's
// organisation.
func issueMember(b *browser, email string) string {
	b.t.Helper()
	tok, err := b.h.id.IssueToken(b.t.Context(), identity.IssueTokenInput{Email: email, OrgName: sandbox.Org})
	if err != nil {
		b.t.Fatal(err)
	}
	return tok.Token
}

// signInToken signs the browser in with an API token through the sign-in
// form.
func (b *browser) signInToken(tok string) {
	b.t.Helper()
	b.do(chromedp.Navigate(b.base + "/#/signin"))
	b.do(chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), tok, chromedp.NodeVisible),
		chromedp.Click(chromedp.CSS(`form.signin button[type="submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#nav a[href="#/chat"]`)))
}

// callAs calls the sandbox's API with a token and returns the status and
// the whole body (a chat's whole stream).
func callAs(b *browser, tok, method, path string, body any) (int, []byte) {
	b.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	ctx, cancel := context.WithTimeout(b.t.Context(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, b.base+path, rd)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// ghState waits for the Repositories page's connection card to settle in
// state, and checks it shows exactly one badge, reading want, and no error
// box; it returns the card's text.
func (b *browser) ghState(state, want string) string {
	b.t.Helper()
	b.waitFor("the GitHub state "+state, `document.querySelector('.gh-state')?.dataset.state === '`+state+`'`, 20*time.Second)
	if n := eval[int](b, `document.querySelectorAll('.gh-connection .badge').length`); n != 1 {
		b.t.Errorf("%s: %d badges in the connection card, want exactly one", state, n)
	}
	if got := b.text("#gh-badge"); got != want {
		b.t.Errorf("%s: the badge reads %q, want %q", state, got, want)
	}
	if eval[bool](b, `!!document.querySelector('.gh-connection .error, .gh-connection .problem, .gh-connection [role="alert"]')`) {
		b.t.Errorf("%s: an error shows beside the state: %q", state, b.text(".gh-connection"))
	}
	return b.text(".gh-connection")
}

// clickWebLink clicks the link sel (which opens in a new tab, as the
// console's links to GitHub do), checks that the tab opened an HTML page
// that exists, and returns the page's heading.
func (b *browser) clickWebLink(what, sel string) string {
	b.t.Helper()
	url := eval[string](b, `document.querySelector('`+sel+`').href`)
	resp, err := http.Get(url)
	if err != nil {
		b.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" {
		b.t.Errorf("GET %s (%s) = %d %s, want 200 text/html", url, what, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	opened := chromedp.WaitNewTarget(b.ctx, func(info *target.Info) bool { return strings.HasPrefix(info.URL, url) })
	b.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('` + sel + `').click()`))
	var id target.ID
	select {
	case id = <-opened:
	case <-time.After(10 * time.Second):
		b.t.Fatalf("clicking %s opened no tab", what)
	}
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithTargetID(id))
	defer cancel()
	tab := &browser{t: b.t, h: b.h, ctx: ctx, base: b.base}
	tab.waitFor(what+" page", `location.href === `+jsString(url)+` && document.readyState === 'complete'`, 10*time.Second)
	if ct := eval[string](tab, `document.contentType`); ct != "text/html" {
		b.t.Errorf("%s opened as %s", what, ct)
	}
	if status := eval[int](tab, `performance.getEntriesByType('navigation')[0].responseStatus`); status != 200 {
		b.t.Errorf("the tab opened %s (%s) with status %d", url, what, status)
	}
	heading := tab.text("h1")
	return heading
}

// TestConsoleRepoStates shows the Repositories page connected (the sandbox's
// demo user: login, scopes, three repositories) and not connected (a member
// who never connected GitHub: Connect, never a green "Connected: 0
// repositories"), each with exactly one badge; the sandbox's commit and
// pull request links open HTML pages of its fake GitHub. A member's menu
// has no Members or Admin entry, and #/admin tells them plainly.
func TestConsoleRepoStates(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := startBrowser(t, d)
			nora := issueMember(b, "nora@example.com")
			b.signInDemo()
			b.goTo("#/repos")
			got := b.ghState("connected", "Connected")
			if !strings.Contains(got, "GitHub as "+sandbox.GitHubLogin) || !strings.Contains(got, "3 repositories") || !strings.Contains(got, "repo") {
				t.Errorf("connected shown as %q", got)
			}
			b.waitFor("the commits", `document.querySelector('#commits .commit a[href]') && document.querySelector('#pulls .pull a[href]')`, 20*time.Second)
			commitMsg := eval[string](b, `document.querySelector('#commits .commit .message').textContent`)
			pullTitle := eval[string](b, `document.querySelector('#pulls .pull .message').textContent`)
			b.do(chromedp.EmulateViewport(1440, 900))
			b.look("repos-connected-1440-" + string(d))
			b.do(chromedp.EmulateViewport(390, 844))
			b.waitFor("the phone's viewport", `window.innerWidth === 390`, 10*time.Second)
			b.noneOffScreen("repositories, connected")
			b.look("repos-connected-390-" + string(d))
			b.do(chromedp.EmulateViewport(1280, 900))

			// The links open pages that exist: the commit's and the pull
			// request's, in the sandbox's fake GitHub.
			if h := b.clickWebLink("the commit", "#commits .commit a[href]"); h != commitMsg {
				t.Errorf("the commit page's heading is %q, want %q", h, commitMsg)
			}
			if h := b.clickWebLink("the pull request", "#pulls .pull a[href]"); h != pullTitle {
				t.Errorf("the pull request page's heading is %q, want %q", h, pullTitle)
			}

			// A member who never connected GitHub.
			m := b.newContext()
			m.signInToken(nora)
			m.goTo("#/repos")
			got = m.ghState("not-connected", "Not connected")
			if strings.Contains(got, "Connected to") || regexp.MustCompile(`\d+ repositor`).MatchString(got) ||
				!eval[bool](m, `!!document.querySelector('#gh-connect') && document.querySelector('#gh-connect').textContent === 'Connect GitHub'`) ||
				eval[bool](m, `!!document.querySelector('.gh-connection .badge.ok')`) {
				t.Errorf("not connected shown as %q", got)
			}
			m.do(chromedp.EmulateViewport(390, 844))
			m.waitFor("the phone's viewport", `window.innerWidth === 390`, 10*time.Second)
			m.noneOffScreen("repositories, not connected")
			m.look("repos-not-connected-390-" + string(d))

			// The member's menu has neither Members nor Admin; #/admin says why.
			nav := eval[[]string](m, `[...document.querySelectorAll('#nav a')].map(a => a.getAttribute('href'))`)
			for _, href := range nav {
				if href == "#/members" || href == "#/admin" {
					t.Errorf("a member's menu offers %s: %v", href, nav)
				}
			}
			if !strings.Contains(strings.Join(nav, " "), "#/repos") {
				t.Errorf("a member's menu: %v", nav)
			}
			m.goTo("#/admin")
			if got := m.text("#admin-refused"); !strings.Contains(got, "Only an organisation admin") {
				t.Errorf("#/admin for a member: %q", got)
			}
			m.noneOffScreen("the admin page, refused to a member")
			m.look("admin-member-390-" + string(d))
		})
	}
}

// TestConsoleReposNotConfigured shows the Repositories page on a server with
// no GitHub OAuth app: one badge, what an admin must set, no Connect button
// and no green "Connected" however the demo user was once connected.
func TestConsoleReposNotConfigured(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := startBrowserWith(t, d, map[string]string{sandboxWithoutGitHub: "1"})
			b.signInDemo()
			b.goTo("#/repos")
			got := b.ghState("not-configured", "Not configured")
			if !strings.Contains(got, "GitHub is not configured on this server") || !strings.Contains(got, "GITHUB_CLIENT_ID") ||
				!strings.Contains(got, "GITHUB_CLIENT_SECRET") {
				t.Errorf("not configured shown as %q", got)
			}
			if eval[bool](b, `!!document.querySelector('#gh-connect') || !!document.querySelector('.gh-connection .badge.ok') || !!document.querySelector('.repo-list')`) {
				t.Errorf("not configured offers a connection or repositories: %q", b.text("main"))
			}
			b.do(chromedp.EmulateViewport(390, 844))
			b.waitFor("the phone's viewport", `window.innerWidth === 390`, 10*time.Second)
			b.noneOffScreen("repositories, not configured")
			b.look("repos-not-configured-390-" + string(d))
		})
	}
}

// TestConsoleAdmin has the demo admin read the month's usage by user and
// by feature beside the budget and what is left of it, set the budget, and
// mark a read tool "always confirm", at 1440 and 390 px.
func TestConsoleAdmin(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := startBrowser(t, d)
			demo := b.h.sb.Token()
			ana := issueMember(b, "ana@example.com")
			// Usage: a chat turn each.
			for _, tok := range []string{demo, ana} {
				if code, body := callAs(b, tok, "POST", "/api/v1/agent/chat", map[string]any{"message": "What can you do?"}); code != 200 {
					t.Fatalf("chat: %d %s", code, body)
				}
			}
			b.signInDemo()
			for _, href := range []string{"#/members", "#/admin"} {
				if !eval[bool](b, `!!document.querySelector('#nav a[href="`+href+`"]')`) {
					t.Errorf("the admin's menu lacks %s", href)
				}
			}
			b.goTo("#/admin")
			b.waitFor("the usage by user", `document.querySelectorAll('#usage-by-user tbody tr').length === 2`, 20*time.Second)
			users := b.text("#usage-by-user")
			if !strings.Contains(users, sandbox.Email) || !strings.Contains(users, "ana@example.com") {
				t.Errorf("usage by user: %q", users)
			}
			if got := b.text("#usage-by-feature"); !strings.Contains(got, "chat") {
				t.Errorf("usage by feature: %q", got)
			}
			if got := b.text("#budget-left"); got == "" || !strings.Contains(b.text(".budget-figures"), "Used") {
				t.Errorf("budget left: %q", got)
			}

			// Set the budget.
			b.do(chromedp.SetValue(chromedp.ID("budget-tokens"), "", chromedp.NodeVisible),
				chromedp.SendKeys(chromedp.ID("budget-tokens"), "5000000"),
				chromedp.Click(chromedp.ID("budget-save")))
			b.waitFor("the new budget", `document.querySelector('#budget-limit')?.textContent.startsWith('5,000,000 tokens')`, 10*time.Second)
			var budget struct {
				MonthlyTokens *int64 `json:"monthly_tokens"`
				Used          int64  `json:"used"`
				Source        string `json:"source"`
			}
			code, body := crAPI(b, "GET", "/api/v1/usage/budget", nil)
			if err := json.Unmarshal(body, &budget); code != 200 || err != nil || budget.MonthlyTokens == nil || *budget.MonthlyTokens != 5000000 || budget.Source != "org" {
				t.Fatalf("the budget after saving: %d %s", code, body)
			}
			if budget.Used <= 0 {
				t.Errorf("the budget's used tokens: %d", budget.Used)
			}
			left := b.text("#budget-left")
			if !strings.HasSuffix(left, " tokens") || left == "5,000,000 tokens" {
				t.Errorf("left of the budget: %q (used %d)", left, budget.Used)
			}
			b.waitFor("the usage beside the new budget", `document.querySelector('#usage-total')?.textContent.includes('left of the budget')`, 10*time.Second)

			// Mark a read tool "always confirm".
			var tools struct {
				Items []struct {
					Name          string `json:"name"`
					Effect        string `json:"effect"`
					AlwaysConfirm bool   `json:"always_confirm"`
				} `json:"items"`
			}
			code, body = crAPI(b, "GET", "/api/v1/agent/tools", nil)
			if err := json.Unmarshal(body, &tools); code != 200 || err != nil {
				t.Fatalf("tools: %d %s", code, body)
			}
			name := ""
			for _, tl := range tools.Items {
				if tl.Effect == "read" && !tl.AlwaysConfirm {
					name = tl.Name
					break
				}
			}
			if name == "" {
				t.Fatalf("no read tool to mark: %s", body)
			}
			row := `document.querySelector('#tool-policies tr[data-name="` + name + `"]')`
			if !eval[bool](b, `[...document.querySelectorAll('#tool-policies tr[data-effect="write"] input')].every(i => i.disabled && i.checked)`) {
				t.Error("a write's box can be unticked")
			}
			b.do(chromedp.Evaluate[chromedp.Void](row + `.querySelector('input.always-confirm').click()`))
			b.waitFor("the tool marked", `(() => { const r = `+row+`; return r && r.textContent.includes('yes') && !r.querySelector('input').disabled; })()`, 10*time.Second)
			code, body = crAPI(b, "GET", "/api/v1/agent/tools", nil)
			if err := json.Unmarshal(body, &tools); code != 200 || err != nil {
				t.Fatalf("tools: %d %s", code, body)
			}
			for _, tl := range tools.Items {
				if tl.Name == name && !tl.AlwaysConfirm {
					t.Errorf("%s is not always_confirm after ticking it", name)
				}
			}

			b.do(chromedp.EmulateViewport(1440, 900))
			b.look("admin-1440-" + string(d))
			b.readmeShot("admin")
			b.do(chromedp.EmulateViewport(390, 844))
			b.waitFor("the phone layout", `window.innerWidth === 390`, 5*time.Second)
			if off := eval[[]string](b, `[...document.querySelectorAll('main *')].filter(e => {
					const r = e.getBoundingClientRect();
					return r.width > 0 && !e.closest('.table-wrap') && (r.right > window.innerWidth + 1 || r.left < -1);
				}).map(e => e.tagName + (e.id ? '#' + e.id : '') + '.' + e.className)`); len(off) > 0 {
				t.Errorf("off-screen at 390 px: %v", off)
			}
			if eval[bool](b, `document.querySelector('main').scrollWidth > document.querySelector('main').clientWidth + 1`) {
				t.Error("the admin page scrolls sideways at 390 px")
			}
			b.noneOffScreen("the admin page")
			b.look("admin-390-" + string(d))
		})
	}
}
