package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/hosts/sandbox"
	"github.com/devpilot/devpilot/ports"
)

// TestConsolePermissions: a member's scale of a production service from
// the Cloud page is refused in the dialog with the permission's name; the
// member sees the policy read-only; the admin gives members cloud.scale on
// the Permissions page, and the member's scale then goes through. The page
// is looked at 1440 and 390 px wide.
func TestConsolePermissions(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := startBrowser(t, d, 1440, 900)
			tok, err := b.h.id.IssueToken(t.Context(), identity.IssueTokenInput{Email: "dev@example.com", OrgName: sandbox.Org, Role: ports.RoleMember})
			if err != nil {
				t.Fatal(err)
			}
			// The member signs in with their token.
			b.do(chromedp.SendKeys(chromedp.CSS(`input[name="token"]`), tok.Token+"\n", chromedp.NodeVisible),
				chromedp.WaitVisible(chromedp.CSS(`#nav a[href="#/chat"]`)))

			checkout := `article.service[data-service="checkout"]`
			scaleTo := func(n string) {
				t.Helper()
				b.goTo("#/cloud/containers/production")
				b.waitFor("the services of production", `document.querySelector('`+checkout+` button[data-action="scale"]')`, 20*time.Second)
				b.click(checkout + ` button[data-action="scale"]`)
				b.waitFor("the scale dialog", `document.querySelector('#scale-dialog[open]')`, 10*time.Second)
				b.typeInto(`#scale-dialog input[name=desired_count]`, n)
				b.click(`#scale-dialog button[type=submit]`)
			}
			// Checkout wants 3 tasks in the sandbox; 4 is a small change (no name to type).
			scaleTo("4")
			b.waitFor("the refusal", `document.querySelector('#scale-dialog .error')`, 15*time.Second)
			if msg := b.text("#scale-dialog .error"); !strings.Contains(msg, "cloud.scale needs the admin or operator role") {
				t.Fatalf("the refusal reads %q, want it to name cloud.scale", msg)
			}
			if got := b.text(checkout + " .desired"); got != "3" {
				t.Errorf("checkout desired %q after a refused scale, want 3", got)
			}

			// The member sees the policy, read-only.
			b.goTo("#/permissions")
			row := `.permissions tr[data-permission="cloud.scale"]`
			b.waitFor("the policy", `document.querySelector('`+row+`')`, 10*time.Second)
			if !eval[bool](b, `[...document.querySelectorAll('.permissions input[type=checkbox]')].every(c => c.disabled)`) {
				t.Errorf("a member may tick the policy's boxes")
			}
			if got := b.text(row + " .perm-yours"); got != "not you" {
				t.Errorf("cloud.scale says %q to a member, want 'not you'", got)
			}

			// The admin, in another browser, lets members scale.
			a := b.newContext()
			a.do(chromedp.Navigate(a.base + "/"))
			a.signInDemo()
			a.goTo("#/permissions")
			a.waitFor("the policy", `document.querySelector('`+row+` input[data-role=member]:not([disabled])')`, 10*time.Second)
			if !eval[bool](a, `document.querySelector('.permissions tr[data-permission="policy.permissions"] input[data-role=admin]').disabled`) {
				t.Errorf("the admin may untick admin on policy.permissions")
			}
			a.look("permissions-1440")
			a.readmeShot("permissions")
			a.click(row + ` input[data-role=member]`)
			a.waitFor("the saved change", `document.querySelector('`+row+` .perm-changed') && document.querySelector('`+row+` input[data-role=member]').checked`, 10*time.Second)
			var pol struct {
				Data []struct {
					Name  string   `json:"name"`
					Roles []string `json:"roles"`
				} `json:"data"`
			}
			b.apiGet("/api/v1/permissions", &pol)
			for _, p := range pol.Data {
				if p.Name == "cloud.scale" && strings.Join(p.Roles, ",") != "admin,operator,member" {
					t.Errorf("the API says cloud.scale allows %v", p.Roles)
				}
			}
			a.do(chromedp.EmulateViewport(390, 844))
			a.waitFor("a narrow layout", `window.innerWidth === 390`, 10*time.Second)
			if right := eval[float64](a, `document.querySelector('.perm-list').getBoundingClientRect().right`); right > 390 {
				t.Errorf("the permissions reach %.0f px at 390 px wide", right)
			}
			a.noneOffScreen("the permissions page")
			a.look("permissions-390")

			// Now the member's scale goes through.
			scaleTo("4")
			b.waitFor("the dialog to close", `!document.querySelector('#scale-dialog')`, 15*time.Second)
			b.waitFor("the new desired count", `document.querySelector('`+checkout+` .desired')?.textContent === '4'`, 15*time.Second)
		})
	}
}
