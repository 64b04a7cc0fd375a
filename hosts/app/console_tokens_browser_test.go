package app_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
)

// TestConsoleTokens: on the Tokens page a user creates a named, expiring
// token, sees its secret once, finds it listed (without the secret), and
// revokes it; the token works between the two, and is refused after.
func TestConsoleTokens(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := startBrowser(t, d)
			b.signInDemo()
			b.goTo("#/tokens")
			b.waitFor("the tokens page", `document.querySelector('#token-name') && !document.querySelector('.tokens-list .loading')`, 10*time.Second)

			b.do(chromedp.SendKeys(chromedp.ID("token-name"), "CI deploys", chromedp.NodeVisible),
				chromedp.SetValue(chromedp.ID("token-expiry"), "7"),
				chromedp.Click(chromedp.ID("token-create"), chromedp.NodeVisible))
			b.waitFor("the new token's secret", `(i => i && i.value.startsWith('dp_'))(document.querySelector('#token-secret'))`, 10*time.Second)
			secret := eval[string](b, `document.querySelector('#token-secret').value`)
			b.waitFor("the token listed", `[...document.querySelectorAll('.tokens tbody tr')].some(r => r.textContent.includes('CI deploys') && r.dataset.status === 'active')`, 10*time.Second)
			if list := b.text(".tokens tbody"); strings.Contains(list, secret) {
				t.Error("the list shows the secret")
			}
			me := func() int {
				req, _ := http.NewRequest(http.MethodGet, b.base+"/api/v1/me", nil)
				req.Header.Set("Authorization", "Bearer "+secret)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			if code := me(); code != 200 {
				t.Fatalf("the new token: %d", code)
			}
			b.readmeShot("tokens")

			b.do(chromedp.Evaluate[chromedp.Void](`[...document.querySelectorAll('.tokens tbody tr')].find(r => r.textContent.includes('CI deploys')).querySelector('button.revoke').click()`))
			b.confirmInPage()
			b.waitFor("the token revoked", `[...document.querySelectorAll('.tokens tbody tr')].some(r => r.textContent.includes('CI deploys') && r.dataset.status === 'revoked')`, 10*time.Second)
			if code := me(); code != 401 {
				t.Fatalf("the revoked token: %d, want 401", code)
			}
			if eval[bool](b, `!!document.querySelector("#token-secret")`) {
				t.Error("the revoked token's secret is still shown")
			}
		})
	}
}
