package app_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/testkit/fakeoidc"
)

// TestConsoleTeammateJourney is issue 23's walkthrough in a browser: an
// admin invites a teammate whose email domain the identity provider policy
// does not admit; the teammate is refused single sign-on until they join
// through the invitation and prove their address with the provider (issue
// 30), then signs in with the (fake) identity provider — no token pasted —
// and watches a specification generate through all five
// stages from one click, with no page refresh; the admin removes them and
// their next request is refused. (That a removal ends a session on every
// replica at once is TestOIDCSignIn's.)
func TestConsoleTeammateJourney(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b, idp := startSSOBrowser(t, string(d))
			b.signInDemo()
			b.goTo("#/members")
			b.waitFor("the invite form", `document.querySelector('#invite-create')`, 10*time.Second)
			b.do(chromedp.SendKeys(chromedp.ID("invite-email"), "nia@partner.net", chromedp.NodeVisible),
				chromedp.Click(chromedp.ID("invite-create")))
			b.waitFor("the join link", `document.querySelector('#invite-link')`, 10*time.Second)
			link := eval[string](b, `document.querySelector('#invite-link').value`)

			mate := b.newContext()
			idp.SignInAs(fakeoidc.User{Email: "nia@partner.net", EmailVerified: true})

			// Not admitted by the policy: single sign-on is refused for now.
			mate.do(chromedp.Navigate(b.base + "/"))
			mate.do(chromedp.Click(chromedp.ID("sso-signin"), chromedp.NodeVisible))
			mate.waitFor("the refusal", `location.hash.startsWith('#/signin/failed/') && document.querySelector('form.signin .notice')`, 10*time.Second)
			if got := mate.text("form.signin .notice"); !strings.Contains(got, "invitation") {
				t.Errorf("refusal shown: %q", got)
			}

			// The teammate joins through the invitation, proves the address
			// theirs with the identity provider (the invitation proves only
			// that they had the link: issue 30) …
			mate.do(chromedp.Navigate(link))
			mate.do(chromedp.SendKeys(chromedp.ID("join-email"), "nia@partner.net", chromedp.NodeVisible),
				chromedp.Click(chromedp.ID("join-submit")),
				chromedp.WaitVisible(chromedp.CSS(`#nav a[href="#/chat"]`)))
			mate.goTo("#/tokens")
			mate.do(chromedp.Click(chromedp.ID("verify-email-start"), chromedp.NodeVisible))
			mate.waitFor("the address verified", `location.hash === '#/tokens' && document.querySelector('.tokens') && !document.getElementById('verify-email')`, 15*time.Second)
			mate.do(chromedp.Click(chromedp.ID("signout"), chromedp.NodeVisible))
			mate.waitFor("signed out", `document.querySelector('form.signin') && sessionStorage.getItem('devpilot.token') === null`, 10*time.Second)

			// … and from then on signs in with the identity provider.
			mate.ssoSignIn()
			if who := mate.text("#who"); !strings.Contains(who, "nia@partner.net") {
				t.Fatalf("signed in as %q", who)
			}
			if tok := eval[*string](mate, `sessionStorage.getItem('devpilot.token')`); tok != nil {
				t.Fatalf("a token in the page after single sign-on: %q", *tok)
			}

			// A specification of theirs, through all five stages from one
			// click, with no refresh: the page stays the same document.
			id, err := chromedp.Run(mate.ctx, chromedp.Evaluate[string](`import('/console/js/api.js').then(m => m.api('POST', '/pse/sessions',
				{name: 'Referrals', inputs: [{kind: 'note', title: 'Kickoff', content: '- Users invite friends\n- Users earn credit'}]})).then(s => s.id)`,
				chromedp.EvalAwaitPromise))
			if err != nil || id == "" {
				t.Fatalf("creating a session through the console's client: %q %v", id, err)
			}
			mate.goTo("#/specs/" + id)
			mate.waitFor("generate all offered", `(n => n && n.textContent === 'Referrals')(document.querySelector('.spec-name')) && (b => b && !b.disabled)(document.querySelector('#spec-generate-all'))`, 10*time.Second)
			mate.do(chromedp.Evaluate[chromedp.Void](`window.__samePage = true`))
			mate.do(chromedp.Click(chromedp.ID("spec-generate-all"), chromedp.NodeVisible))
			for _, stage := range []string{"scope", "prd", "epics", "stories", "prps"} {
				mate.waitFor(stage+" done", fmt.Sprintf(`document.querySelector('.step[data-stage=%q]').dataset.state === 'done'`, stage), 60*time.Second)
			}
			mate.waitFor("all five stages", `document.querySelector('.spec-status').textContent.includes('All five stages')`, 10*time.Second)
			if !eval[bool](mate, `window.__samePage === true`) {
				t.Error("the page was reloaded")
			}

			// The admin removes the teammate: their next request is refused.
			b.goTo("#/chat")
			b.goTo("#/members")
			row := `[...document.querySelectorAll('.members tbody tr')].find(r => r.textContent.includes('nia@partner.net'))`
			b.waitFor("the teammate listed", row, 10*time.Second)
			b.do(chromedp.Evaluate[chromedp.Void](row + `.querySelector('button.remove').click()`))
			b.confirmInPage()
			b.waitFor("the teammate removed", `!`+row, 10*time.Second)
			mate.goTo("#/tokens")
			mate.waitFor("back at sign-in", `location.hash === '#/signin' && document.querySelector('form.signin')`, 10*time.Second)
		})
	}
}
