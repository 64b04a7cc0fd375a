package app_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
)

// TestConsoleTokenScopes: on the Tokens page a user creates a read-only
// token and a per-area one, sees their scopes listed, and the read-only
// token reads but is refused a write, 403 insufficient_scope; per area
// with no area chosen says so and creates nothing. The page is looked at
// 1440 and 390 px wide. On both databases.
func TestConsoleTokenScopes(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := startBrowser(t, d)
			b.signInDemo()
			b.goTo("#/tokens")
			b.waitFor("the tokens page", `document.querySelector('#token-name') && !document.querySelector('.tokens-list .loading')`, 10*time.Second)

			// Read only.
			b.do(chromedp.SendKeys(chromedp.ID("token-name"), "Dashboards", chromedp.NodeVisible),
				chromedp.Click(chromedp.ID("token-scope-read"), chromedp.NodeVisible),
				chromedp.Click(chromedp.ID("token-create"), chromedp.NodeVisible))
			b.waitFor("the new token's secret", `(i => i && i.value.startsWith('dp_'))(document.querySelector('#token-secret'))`, 10*time.Second)
			secret := eval[string](b, `document.querySelector('#token-secret').value`)
			b.waitFor("its scopes listed", `[...document.querySelectorAll('.tokens tbody tr')].some(r => r.textContent.includes('Dashboards') && r.querySelector('.token-scopes-cell').textContent.includes('read only'))`, 10*time.Second)

			// Per area: none chosen is refused in the page; cloud read and specs read and write.
			b.do(chromedp.SendKeys(chromedp.ID("token-name"), "Spec bot", chromedp.NodeVisible),
				chromedp.Click(chromedp.ID("token-scope-areas"), chromedp.NodeVisible),
				chromedp.Click(chromedp.ID("token-create"), chromedp.NodeVisible))
			b.waitFor("the note that an area is needed", `document.querySelector('.token-areas-note').textContent.includes('at least one area')`, 5*time.Second)
			if eval[bool](b, `[...document.querySelectorAll('.tokens tbody tr')].some(r => r.textContent.includes('Spec bot'))`) {
				t.Fatal("a token with no area was created")
			}
			b.do(chromedp.SetValue(chromedp.ID("token-scope-spec"), "spec:write"),
				chromedp.SetValue(chromedp.ID("token-scope-cloud"), "cloud:read"))
			b.do(chromedp.WaitVisible(chromedp.ID("token-scope-content")))
			b.lookAtWidths("tokenscopes-form")
			b.do(chromedp.Click(chromedp.ID("token-create"), chromedp.NodeVisible))
			b.waitFor("the per-area token listed", `[...document.querySelectorAll('.tokens tbody tr')].some(r => r.textContent.includes('Spec bot') && r.querySelector('.token-scopes-cell').textContent.includes('spec:write') && r.querySelector('.token-scopes-cell').textContent.includes('cloud:read'))`, 10*time.Second)
			b.lookAtWidths("tokenscopes-list")

			call := func(method, path, body string) (int, http.Header, string) {
				t.Helper()
				req, _ := http.NewRequestWithContext(t.Context(), method, b.base+path, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+secret)
				if body != "" {
					req.Header.Set("Content-Type", "application/json")
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var out bytes.Buffer
				_, _ = out.ReadFrom(resp.Body)
				return resp.StatusCode, resp.Header, out.String()
			}
			if code, _, body := call("GET", "/api/v1/pse/sessions", ""); code != 200 {
				t.Fatalf("the read-only token reading specs: %d %s", code, body)
			}
			code, _, body := call("POST", "/api/v1/tokens", `{"name":"escalate","expires_in_days":1}`)
			if code != 403 || !strings.Contains(body, `"code":"insufficient_scope"`) {
				t.Fatalf("the read-only token making a token: %d %s", code, body)
			}
			code, h, body := call("POST", "/api/v1/pse/standards", `{"title":"T","body":"B","applies_to":["prd"]}`)
			if code != 403 || !strings.Contains(body, `"code":"insufficient_scope"`) || !strings.Contains(body, "spec:write") ||
				h.Get("WWW-Authenticate") != `Bearer error="insufficient_scope", scope="spec:write"` {
				t.Fatalf("the read-only token writing a standard: %d %s (%s)", code, body, h.Get("WWW-Authenticate"))
			}
			// The console's own sign-in still does everything.
			if code, body := crAPI(b, "POST", "/api/v1/pse/standards", map[string]any{"title": "Owners", "body": "Name an owner.", "applies_to": []string{"prd"}}); code != 201 {
				t.Fatalf("the console's token writing a standard: %d %s", code, body)
			}
		})
	}
}
