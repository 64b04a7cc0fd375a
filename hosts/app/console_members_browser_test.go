package app_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/hosts/sandbox"
)

// TestConsoleMembers: the demo user, an admin, sees the organisation's
// members on the Members page, makes one an admin, and removes another,
// whose token is refused at once.
func TestConsoleMembers(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := startBrowser(t, d)
			issue := func(email string) string {
				tok, err := b.h.id.IssueToken(t.Context(), identity.IssueTokenInput{Email: email, OrgName: sandbox.Org})
				if err != nil {
					t.Fatal(err)
				}
				return tok.Token
			}
			issue("ana@example.com")
			dan := issue("dan@example.com")
			b.signInDemo()
			b.goTo("#/members")
			b.waitFor("three members", `document.querySelectorAll('.members tbody tr').length === 3`, 10*time.Second)

			row := func(email string) string {
				return `[...document.querySelectorAll('.members tbody tr')].find(r => r.textContent.includes('` + email + `'))`
			}
			b.do(chromedp.Evaluate[chromedp.Void](row("ana@example.com") + `.querySelector('button.set-role').click()`))
			b.waitFor("ana an admin", `(r => r && r.dataset.role === 'admin')(`+row("ana@example.com")+`)`, 10*time.Second)

			b.do(chromedp.Evaluate[chromedp.Void](row("dan@example.com") + `.querySelector('button.remove').click()`))
			b.confirmInPage()
			b.waitFor("dan removed", `document.querySelectorAll('.members tbody tr').length === 2 && !`+row("dan@example.com"), 10*time.Second)
			req, _ := http.NewRequest(http.MethodGet, b.base+"/api/v1/me", nil)
			req.Header.Set("Authorization", "Bearer "+dan)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 401 {
				t.Fatalf("the removed member's token: %d, want 401", resp.StatusCode)
			}
			if eval[bool](b, row(sandbox.Email)+`.querySelector('button.remove') !== null`) {
				t.Error("the page offers the admin to remove themselves")
			}
			b.readmeShot("members")
		})
	}
}
