package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/sandbox"
)

// TestConsoleInvite: the demo user, an admin, invites a teammate on the
// Members page and copies the join link, shown once; in another browser
// context (no shared storage) the teammate opens the link signed out,
// joins, and lands in the console signed in as the new member; the
// invitation is no longer pending and the teammate is a member.
func TestConsoleInvite(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := startBrowser(t, d)
			b.signInDemo()
			b.goTo("#/members")
			b.waitFor("the invite form", `document.querySelector('#invite-create') && document.querySelector('.invitations-list .empty')`, 10*time.Second)

			b.do(chromedp.SendKeys(chromedp.ID("invite-email"), "newbie@example.com", chromedp.NodeVisible),
				chromedp.Click(chromedp.ID("invite-create")))
			b.waitFor("the join link", `document.querySelector('#invite-link') && document.querySelector('.invitations tbody tr')`, 10*time.Second)
			link := eval[string](b, `document.querySelector('#invite-link').value`)
			if !strings.HasPrefix(link, b.base+"/#/join/dpi_") {
				t.Fatalf("join link %q", link)
			}
			if row := b.text(".invitations tbody tr"); !strings.Contains(row, "newbie@example.com") || !strings.Contains(row, "member") {
				t.Errorf("pending invitation shown as %q", row)
			}
			b.readmeShot("invite")

			// The teammate, in a browser context of their own: signed out.
			mate := b.newContext()
			mate.do(chromedp.Navigate(link))
			mate.waitFor("the join form", `document.querySelector('form.join #join-email') && document.getElementById('nav').hidden`, 10*time.Second)
			if tok := eval[*string](mate, `sessionStorage.getItem('devpilot.token')`); tok != nil {
				t.Fatalf("the teammate's context has a token already: %q", *tok)
			}
			mate.readmeShot("join")

			// The wrong email is refused, on the page.
			mate.do(chromedp.SendKeys(chromedp.ID("join-email"), "eve@example.com", chromedp.NodeVisible),
				chromedp.Click(chromedp.ID("join-submit")))
			mate.waitFor("the refusal", `document.querySelector('form.join .error')`, 10*time.Second)
			if got := mate.text("form.join .error"); !strings.Contains(got, "422") {
				t.Errorf("refusal shown as %q", got)
			}

			mate.do(chromedp.Evaluate[chromedp.Void](`document.getElementById('join-email').value = ''`),
				chromedp.SendKeys(chromedp.ID("join-email"), "newbie@example.com"),
				chromedp.SendKeys(chromedp.ID("join-token-name"), "my laptop"),
				chromedp.Click(chromedp.ID("join-submit")),
				chromedp.WaitVisible(chromedp.CSS(`#nav a[href="#/chat"]`)))
			mate.waitFor("signed in as the teammate", `location.hash === '#/chat' && document.getElementById('who').textContent.includes('newbie@example.com')`, 10*time.Second)
			if who := mate.text("#who"); !strings.Contains(who, sandbox.Org) {
				t.Errorf("the teammate is signed in as %q, want a member of %s", who, sandbox.Org)
			}
			// Their address is unverified, and their Tokens page says so.
			mate.goTo("#/tokens")
			mate.waitFor("the unverified-email notice", `document.querySelector('#verify-email') && document.querySelector('#verify-email').textContent.includes('not verified')`, 10*time.Second)
			tok := eval[string](mate, `sessionStorage.getItem('devpilot.token')`)
			p, err := b.h.id.Authenticate(context.Background(), tok)
			if err != nil || p.Role != "member" {
				t.Fatalf("the teammate's kept token: %+v %v", p, err)
			}
			mate.goTo("#/members")
			mate.waitFor("the members page for a member", `document.querySelector('main .empty') && !document.querySelector('#invite-create')`, 10*time.Second)

			// The admin is still the demo user, and sees the new member and
			// no pending invitation.
			if who := b.text("#who"); !strings.Contains(who, sandbox.Email) {
				t.Errorf("the admin's tab is now %q", who)
			}
			b.goTo("#/chat")
			b.goTo("#/members")
			// The new member joined through an invitation: their address is
			// marked unverified.
			b.waitFor("the new member listed as unverified, nothing pending",
				`[...document.querySelectorAll('.members tbody tr')].some(r => r.textContent.includes('newbie@example.com') && r.querySelector('.badge.unverified')) && document.querySelector('.invitations-list .empty')`,
				10*time.Second)
		})
	}
}
