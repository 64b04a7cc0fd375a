package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/app"
	"github.com/devpilot/devpilot/hosts/sandbox"
	"github.com/devpilot/devpilot/testkit/fakeoidc"
)

// startSSOBrowser starts a console whose sign-in goes through a fake
// identity provider that admits example.com into the sandbox's org.
func startSSOBrowser(t *testing.T, d string) (*browser, *fakeoidc.Server) {
	t.Helper()
	idp := fakeoidc.New(t, "devpilot-console", "console-secret", "")
	b := startBrowserWith(t, sqlstoreDialect(d), map[string]string{
		app.EnvOIDCIssuer:       idp.Issuer(),
		app.EnvOIDCClientID:     "devpilot-console",
		app.EnvOIDCClientSecret: "console-secret",
		app.EnvOIDCOrg:          sandbox.Org,
		app.EnvOIDCDomains:      "example.com",
	})
	idp.SetRedirectURI(b.base + "/auth/oidc/callback")
	return b, idp
}

// ssoSignIn clicks "Sign in with your identity provider" on the sign-in
// page and waits to be back in the console.
func (b *browser) ssoSignIn() {
	b.t.Helper()
	b.do(chromedp.Click(chromedp.ID("sso-signin"), chromedp.NodeVisible),
		chromedp.WaitVisible(chromedp.CSS(`#nav a[href="#/chat"]`)))
}

// TestConsoleSSO: the console signs in through the identity provider with
// one click — no token pasted, none in the page's storage, the session in
// an HttpOnly cookie — makes writes (their CSRF token is the console's
// business), shows the sign-in among the user's tokens, and signs out,
// after which the cookie no longer works; a refused sign-in comes back to
// the sign-in page with the reason.
func TestConsoleSSO(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b, idp := startSSOBrowser(t, string(d))
			idp.SignInAs(fakeoidc.User{Email: "ada@example.com", EmailVerified: true})

			b.waitFor("the single sign-on button", `document.getElementById('sso-signin')`, 10*time.Second)
			b.readmeShot("signin-sso")
			b.ssoSignIn()
			if who := b.text("#who"); !strings.Contains(who, "ada@example.com") {
				t.Fatalf("signed in as %q", who)
			}
			if tok := eval[*string](b, `sessionStorage.getItem('devpilot.token')`); tok != nil {
				t.Errorf("a token in sessionStorage after single sign-on: %q", *tok)
			}
			if c := eval[string](b, `document.cookie`); strings.Contains(c, "devpilot_session") {
				t.Errorf("the session cookie is readable by scripts: %q", c)
			}

			// A write through the console: a token, created on the Tokens page.
			b.goTo("#/tokens")
			b.do(chromedp.SendKeys(chromedp.ID("token-name"), "laptop", chromedp.NodeVisible),
				chromedp.Click(chromedp.ID("token-create")))
			b.waitFor("the new token's secret", `document.getElementById('token-secret')`, 10*time.Second)
			b.waitFor("the sign-in listed", `[...document.querySelectorAll('.tokens tbody tr')].some(r => r.textContent.includes('sign-in'))`, 10*time.Second)

			// Sign out: back to sign-in, and the session is over on the server.
			b.do(chromedp.Click(chromedp.ID("signout"), chromedp.NodeVisible))
			b.waitFor("sign-in after signing out", `document.querySelector('form.signin')`, 10*time.Second)
			code, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`fetch('/api/v1/me').then(r => r.status)`, chromedp.EvalAwaitPromise))
			if err != nil || code != 401 {
				t.Errorf("GET /api/v1/me after signing out: %d %v, want 401", code, err)
			}

			// A user the provider vouches for but the policy does not admit.
			idp.SignInAs(fakeoidc.User{Email: "eve@elsewhere.net", EmailVerified: true})
			b.do(chromedp.Click(chromedp.ID("sso-signin"), chromedp.NodeVisible))
			b.waitFor("the refusal", `location.hash.startsWith('#/signin/failed/') && document.querySelector('form.signin .notice')`, 10*time.Second)
			if got := b.text("form.signin .notice"); !strings.Contains(got, "not allowed") {
				t.Errorf("refusal shown: %q", got)
			}
		})
	}
}

// TestConsoleVerifyEmail: a teammate who joined through an invitation is
// told on the Tokens page that their address is unverified, proves it with
// one click through the identity provider, and comes back verified (and
// signed in by the session cookie too); from then on the provider's
// sign-in reaches them.
func TestConsoleVerifyEmail(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b, idp := startSSOBrowser(t, string(d))
			b.waitFor("the sign-in page", `document.getElementById('demo-signin')`, 10*time.Second)
			b.signInDemo()
			joinURL, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`import('/console/js/api.js').then(m => m.api('POST', '/api/v1/invitations', {})).then(r => r.join_url)`,
				chromedp.EvalAwaitPromise))
			if err != nil || !strings.HasPrefix(joinURL, "/#/join/") {
				t.Fatalf("invitation: %q %v", joinURL, err)
			}

			mate := b.newContext()
			mate.do(chromedp.Navigate(b.base + joinURL))
			mate.do(chromedp.SendKeys(chromedp.ID("join-email"), "carol@partner.test", chromedp.NodeVisible),
				chromedp.Click(chromedp.ID("join-submit")),
				chromedp.WaitVisible(chromedp.CSS(`#nav a[href="#/chat"]`)))
			mate.goTo("#/tokens")
			mate.waitFor("the offer to verify", `document.getElementById('verify-email-start')`, 10*time.Second)

			idp.SignInAs(fakeoidc.User{Email: "carol@partner.test", EmailVerified: true})
			mate.do(chromedp.Click(chromedp.ID("verify-email-start"), chromedp.NodeVisible))
			mate.waitFor("back on the Tokens page, verified",
				`location.hash === '#/tokens' && document.querySelector('.tokens') && !document.getElementById('verify-email')`, 15*time.Second)
			verified, err := chromedp.Run(mate.ctx, chromedp.Evaluate[bool](`fetch('/api/v1/me', {headers: {}}).then(r => r.json()).then(m => m.user.email_verified && m.user.email === 'carol@partner.test')`,
				chromedp.EvalAwaitPromise))
			if err != nil || !verified {
				t.Fatalf("GET /api/v1/me by the session cookie after verifying: %v %v", verified, err)
			}
		})
	}
}
