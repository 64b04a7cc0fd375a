package app_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/hosts/sandbox"
)

// confirmInPage confirms the console's one in-page confirmation dialog
// (ui.js confirmAction), waiting for it to open.
func (b *browser) confirmInPage() {
	b.t.Helper()
	b.waitFor("the confirmation dialog", `document.querySelector('dialog.confirm-dialog[open]')`, 10*time.Second)
	b.do(chromedp.Click(chromedp.CSS(`dialog.confirm-dialog[open] button.confirm-ok`), chromedp.NodeVisible))
	b.waitFor("the confirmation dialog closed", `!document.querySelector('dialog.confirm-dialog')`, 10*time.Second)
}

// offScreen lists (up to ten) elements whose right edge is beyond the
// viewport's, outside any box that scrolls or clips sideways, and the
// document's width when wider than the viewport: "" when nothing is off
// screen.
const offScreen = `(() => {
  const W = window.innerWidth, bad = [];
  if (document.documentElement.scrollWidth > W) bad.push('the document is ' + document.documentElement.scrollWidth + ' px wide');
  const clips = (a) => { const o = getComputedStyle(a).overflowX; return o === 'auto' || o === 'scroll' || o === 'hidden' || o === 'clip'; };
  for (const el of document.body.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0 || r.right <= W + 1) continue;
    let inside = false;
    for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) if (clips(a)) { inside = true; break; }
    if (!inside) bad.push(el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\s+/).join('.') : '') + ' reaches ' + Math.round(r.right));
  }
  return bad.slice(0, 10).join('; ');
})()`

// noneOffScreen fails the test when the page, as shown now, has an
// element off screen (see offScreen), naming what and where.
func (b *browser) noneOffScreen(what string) {
	b.t.Helper()
	if bad := eval[string](b, offScreen); bad != "" {
		b.t.Errorf("%s at %d px: off screen: %s", what, eval[int](b, `window.innerWidth`), bad)
	}
}

// regexpStatus matches a status prefix such as "Error 409" or "HTTP 422".
var regexpStatus = regexp.MustCompile(`(?i)\b(error|http)\s*:?\s*\d{3}\b`)

// shown is a JavaScript expression: whether the element sel matches is drawn.
func shown(sel string) string {
	return fmt.Sprintf(`(e => !!e && e.getClientRects().length > 0)(document.querySelector(%q))`, sel)
}

// The console's shell on a phone (issue 34): signed out it shows no menu;
// signed in, the header is one row with a Menu button that opens the
// navigation; no main page reaches beyond the screen's width, the chat's
// message box is in the first screen; a token is revoked through the
// in-page confirmation dialog (never the browser's confirm()), a toast
// shows above that dialog; an error box says the server's detail without
// a status prefix and goes on the next success. The favicon and manifest
// are served.
func TestConsoleShell(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := startBrowser(t, d)
			// A phone's screen (a headless window is at least 500 px wide).
			b.do(chromedp.EmulateViewport(390, 844))
			b.waitFor("the phone's viewport", `window.innerWidth === 390 && window.innerHeight === 844`, 10*time.Second)

			// The icons and the manifest are served, with their types.
			for path, ct := range map[string]string{
				"/console/favicon.svg":          "image/svg+xml",
				"/console/manifest.webmanifest": "application/manifest+json",
				"/console/icon-192.png":         "image/png",
				"/console/favicon-32.png":       "image/png",
			} {
				resp, err := http.Get(b.base + path)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != ct {
					t.Errorf("GET %s: %d %q, want 200 %q", path, resp.StatusCode, resp.Header.Get("Content-Type"), ct)
				}
			}
			if !eval[bool](b, `!!document.querySelector('link[rel="icon"][href^="/console/favicon."][href$=".svg"]') && !!document.querySelector('link[rel="manifest"]')`) {
				t.Error("the page links no favicon or no manifest")
			}

			// Signed out: no menu at all.
			b.waitFor("the sign-in form", `document.querySelector('form.signin #demo-signin')`, 10*time.Second)
			for _, sel := range []string{"#nav", "#nav a", "#menu-toggle", "#signout"} {
				if eval[bool](b, shown(sel)) {
					t.Errorf("signed out, %s is shown", sel)
				}
			}

			// Signed in at 390 px: the header is one row, the navigation
			// behind the Menu button.
			b.do(chromedp.Click(chromedp.ID("demo-signin"), chromedp.NodeVisible))
			b.waitFor("signed in", shown("#menu-toggle")+` && document.querySelector('#nav a[href="#/chat"]')`, 10*time.Second)
			if hgt := eval[float64](b, `document.querySelector('header.top').getBoundingClientRect().height`); hgt >= 70 {
				t.Errorf("the header is %.0f px tall at 390 px", hgt)
			}
			if eval[bool](b, shown(`#nav a[href="#/chat"]`)) {
				t.Error("the navigation is open before the Menu button is pressed")
			}
			b.click("#menu-toggle")
			b.waitFor("the menu open", shown(`#nav a[href="#/tokens"]`)+` && document.querySelector('#menu-toggle').getAttribute('aria-expanded') === 'true'`, 5*time.Second)
			if !eval[bool](b, `document.activeElement && document.activeElement.closest('#nav') !== null`) {
				t.Error("opening the menu did not move focus into it")
			}
			if !eval[bool](b, shown("#signout")) {
				t.Error("the open menu has no Sign out")
			}
			b.readmeShot("phone-menu")
			b.do(chromedp.KeyEvent(kb.Escape))
			b.waitFor("the menu closed", `!(`+shown(`#nav a[href="#/tokens"]`)+`) && document.activeElement === document.querySelector('#menu-toggle')`, 5*time.Second)

			// No main page reaches beyond the screen.
			for _, page := range []string{"chat", "specs", "cloud", "content", "repos", "tokens", "members", "permissions", "admin"} {
				b.goTo("#/" + page)
				b.waitFor(page+" drawn", fmt.Sprintf(`document.title.startsWith(document.querySelector('#nav a[href="#/%s"]').textContent) && document.querySelector('#main h1, #main h2')`, page), 15*time.Second)
				// Let what the page loads after its heading arrive (no
				// failure if some part keeps loading).
				deadline := time.Now().Add(5 * time.Second)
				for time.Now().Before(deadline) && eval[bool](b, `!!document.querySelector('#main .loading')`) {
					time.Sleep(100 * time.Millisecond)
				}
				if bad := eval[string](b, offScreen); bad != "" {
					t.Errorf("#/%s at 390 px: off screen: %s", page, bad)
				}
				if page == "chat" {
					b.do(chromedp.Evaluate[chromedp.Void](`window.scrollTo(0, 0)`))
					if !eval[bool](b, `(r => r.top >= 0 && r.bottom <= window.innerHeight)(document.querySelector('#chat-input').getBoundingClientRect())`) {
						t.Errorf("the message box is not in the first screen: %s", eval[string](b, `JSON.stringify(document.querySelector('#chat-input').getBoundingClientRect())`))
					}
				}
				if dir := shotDir(); dir != "" {
					b.saveScreenshot(dir, "shell-390-"+page)
				}
			}

			// The tokens page: revoke asks in the page; the browser's
			// confirm() would fail the test.
			b.goTo("#/tokens")
			b.waitFor("the tokens page", `document.querySelector('#token-create')`, 10*time.Second)
			b.do(chromedp.Evaluate[chromedp.Void](`window.confirm = () => { window.__nativeConfirm = true; return true; }`))

			// A name the server refuses: its detail, as a sentence.
			b.typeInto("#token-name", "   ")
			b.click("#token-create")
			b.waitFor("the refusal", `document.querySelector('#main .error')`, 10*time.Second)
			msg := b.text("#main .error")
			if regexpStatus.MatchString(msg) {
				t.Errorf("the error box has a status prefix: %q", msg)
			}
			if !eval[bool](b, `(e => e.querySelector('.error-text').textContent.length > 10)(document.querySelector('#main .error'))`) {
				t.Errorf("the error box says no detail: %q", msg)
			}
			b.typeInto("#token-name", "Shell check")
			b.click("#token-create")
			b.waitFor("the token listed", `[...document.querySelectorAll('.tokens tbody tr')].some(r => r.textContent.includes('Shell check'))`, 10*time.Second)
			if eval[bool](b, `!!document.querySelector('#main .error')`) {
				t.Errorf("the error box stayed after a success: %q", b.text("#main .error"))
			}
			// The page put focus on the new secret on purpose: it stays.
			b.waitFor("focus on the secret", `document.activeElement && document.activeElement.id === 'token-secret'`, 5*time.Second)

			// The table scrolls inside its box: Revoke can be reached.
			row := `[...document.querySelectorAll('.tokens tbody tr')].find(r => r.textContent.includes('Shell check'))`
			b.do(chromedp.Evaluate[chromedp.Void](row + `.querySelector('button.revoke').scrollIntoView()`))
			if !eval[bool](b, `(r => r.left >= 0 && r.right <= window.innerWidth)(`+row+`.querySelector('button.revoke').getBoundingClientRect())`) {
				t.Error("the token's Revoke cannot be brought on screen")
			}
			if bad := eval[string](b, offScreen); bad != "" {
				t.Errorf("tokens with a table at 390 px: off screen: %s", bad)
			}

			// Revoke: the dialog names the token, Cancel has focus, Escape
			// cancels and focus returns to Revoke.
			b.do(chromedp.Evaluate[chromedp.Void](row + `.querySelector('button.revoke').focus(); ` + row + `.querySelector('button.revoke').click()`))
			b.waitFor("the confirmation dialog", `document.querySelector('dialog.confirm-dialog[open]')`, 10*time.Second)
			if got := b.text("dialog.confirm-dialog"); !strings.Contains(got, "Shell check") {
				t.Errorf("the dialog does not name the token: %q", got)
			}
			if !eval[bool](b, `document.activeElement && document.activeElement.matches('dialog.confirm-dialog .confirm-cancel')`) {
				t.Error("Cancel does not have the focus first")
			}

			// A toast while the dialog is open is drawn above it and lets
			// clicks through.
			b.do(chromedp.Evaluate[chromedp.Void](`import('/console/js/ui.js').then(m => m.toast('Shown above the dialog.'))`))
			b.waitFor("the toast", `document.getElementById('toast').textContent === 'Shown above the dialog.'`, 5*time.Second)
			if got := eval[string](b, `getComputedStyle(document.getElementById('toast')).pointerEvents`); got != "none" {
				t.Errorf("the toast catches clicks: pointer-events %q", got)
			}
			// elementFromPoint skips what lets clicks through: let the toast
			// take them for the look.
			if !eval[bool](b, `(() => {
				const t = document.getElementById('toast'); t.style.pointerEvents = 'auto';
				const r = t.getBoundingClientRect();
				const top = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
				t.style.pointerEvents = '';
				return r.width > 0 && (top === t || t.contains(top));
			})()`) {
				t.Error("the toast is drawn under the open dialog")
			}
			b.readmeShot("phone-confirm")
			b.do(chromedp.KeyEvent(kb.Escape))
			b.waitFor("the dialog cancelled", `!document.querySelector('dialog.confirm-dialog')`, 5*time.Second)
			b.waitFor("focus back on Revoke", `document.activeElement === `+row+`.querySelector('button.revoke')`, 5*time.Second)
			if !eval[bool](b, row+`.dataset.status === 'active'`) {
				t.Error("Escape revoked the token")
			}

			b.do(chromedp.Evaluate[chromedp.Void](row + `.querySelector('button.revoke').click()`))
			b.confirmInPage()
			b.waitFor("the token revoked", row+`.dataset.status === 'revoked'`, 10*time.Second)
			b.waitFor("focus kept on a control", `document.activeElement && document.activeElement !== document.body`, 5*time.Second)
			if eval[bool](b, `window.__nativeConfirm === true`) {
				t.Error("the browser's confirm() was called")
			}

			// A form drawn anew after its write: focus goes to its first
			// field, not to the page's body.
			b.goTo("#/specs/standards")
			b.waitFor("the standards form", `document.querySelector('.std-form input[name="std-title"]')`, 10*time.Second)
			b.typeInto(`.std-form input[name="std-title"]`, "Focus check")
			b.typeInto(`.std-form textarea[name="std-body"]`, "Name an owner.")
			b.click(`.std-form button[type="submit"]`)
			b.waitFor("the standard listed", `document.querySelector('#main').textContent.includes('Focus check') && document.querySelector('.std-form input[name="std-title"]').value === ''`, 10*time.Second)
			b.waitFor("focus on the new form's first field", `document.activeElement === document.querySelector('.std-form input[name="std-title"]')`, 5*time.Second)

			// Members: the only admin may not make themself a member; the
			// refusal is the server's sentence, and it goes when the next
			// role change succeeds.
			if _, err := b.h.id.IssueToken(t.Context(), identity.IssueTokenInput{Email: "ana@example.com", OrgName: sandbox.Org}); err != nil {
				t.Fatal(err)
			}
			b.goTo("#/members")
			member := func(email string) string {
				return `[...document.querySelectorAll('.members tbody tr')].find(r => r.textContent.includes('` + email + `'))`
			}
			b.waitFor("ana listed", member("ana@example.com"), 10*time.Second)
			b.do(chromedp.Evaluate[chromedp.Void](member("demo@example.com") + `.querySelector('button.set-role').click()`))
			b.waitFor("the refusal", `document.querySelector('#main .error')`, 10*time.Second)
			if msg := b.text("#main .error"); regexpStatus.MatchString(msg) || len(msg) < 12 {
				t.Errorf("the refusal reads %q", msg)
			}
			b.do(chromedp.Evaluate[chromedp.Void](member("ana@example.com") + `.querySelector('button.set-role').click()`))
			b.waitFor("ana an admin", `(r => r && r.dataset.role === 'admin')(`+member("ana@example.com")+`)`, 10*time.Second)
			b.waitFor("the refusal gone", `!document.querySelector('#main .error')`, 5*time.Second)

			// Sign out: the menu goes.
			b.click("#menu-toggle")
			b.click("#signout")
			b.waitFor("signed out", `document.querySelector('form.signin')`, 10*time.Second)
			for _, sel := range []string{"#nav", "#nav a", "#menu-toggle", "#signout"} {
				if eval[bool](b, shown(sel)) {
					t.Errorf("after Sign out, %s is shown", sel)
				}
			}

			// At 1440 px the header is one row with the navigation in it.
			b.do(chromedp.EmulateViewport(1440, 900))
			b.do(chromedp.Click(chromedp.ID("demo-signin"), chromedp.NodeVisible),
				chromedp.WaitVisible(chromedp.CSS(`#nav a[href="#/chat"]`)))
			if eval[bool](b, shown("#menu-toggle")) {
				t.Error("the Menu button shows at 1440 px")
			}
			if hgt := eval[float64](b, `document.querySelector('header.top').getBoundingClientRect().height`); hgt >= 70 {
				t.Errorf("the header is %.0f px tall at 1440 px", hgt)
			}
		})
	}
}
