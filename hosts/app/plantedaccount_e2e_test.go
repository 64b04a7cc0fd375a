package app_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fakeoidc"
)

// TestOIDCSignInInvitationCannotPlantAccount is issue 30's item 1, as the
// review ran it: an admin of another organisation invites no one in
// particular, accepts the invitation with "victim@example.com" and keeps
// the token. When the owner of that address signs in through the identity
// provider (verified email, a domain the policy admits to acme) they land
// in a user of their own in acme, and the planted token reads nothing of
// theirs; the planted user stays in the other organisation, listed for its
// admins as unverified. Inviting (and joining with) the email of another
// organisation's user answers as for any new email (item 8). On both
// databases.
func TestOIDCSignInInvitationCannotPlantAccount(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			replicas, idp := startSignInReplicas(t, d)
			st := replicas[0]
			lead := st.admin("lead@example.com")
			issued, err := st.id.IssueToken(t.Context(), identity.IssueTokenInput{Email: "mallory@evil.test", OrgName: "evil", Role: ports.RoleAdmin})
			if err != nil {
				t.Fatal(err)
			}
			mallory := issued.Token

			// Another organisation's user's email is invited as any new one.
			st.invite(mallory, map[string]any{"email": "lead@example.com"})

			inv := st.invite(mallory, map[string]any{})
			code, planted, raw := st.accept(map[string]any{"secret": inv.Secret, "email": "victim@example.com"})
			if code != 201 || planted.Org.Name != "evil" || !strings.Contains(string(raw), `"email_verified":false`) {
				t.Fatalf("accept: %d %s", code, raw)
			}

			idp.SignInAs(fakeoidc.User{Email: "victim@example.com", EmailVerified: true})
			victim := signIn(t, st, replicas[1])
			code, body, _ := st.cookieCall(victim, "GET", "/api/v1/me", nil)
			var me struct {
				User struct {
					ID            string
					EmailVerified bool `json:"email_verified"`
				}
				Org struct{ Name string }
			}
			if err := json.Unmarshal(body, &me); code != 200 || err != nil || me.Org.Name != "acme" || me.User.ID == planted.User.ID || !me.User.EmailVerified {
				t.Fatalf("the victim signed in as %d %s; the planted user is %s", code, body, planted.User.ID)
			}
			// Signing in again finds the same user.
			if again := signIn(t, replicas[1], st); true {
				if code, body, _ := st.cookieCall(again, "GET", "/api/v1/me", nil); code != 200 || !strings.Contains(string(body), me.User.ID) {
					t.Fatalf("second sign-in: %d %s, want user %s", code, body, me.User.ID)
				}
			}

			// What the victim makes, the planted token cannot read.
			code, body, _ = st.cookieCall(victim, "POST", "/api/v1/tokens", map[string]any{"name": "cli", "expires_in_days": 7}, "Sec-Fetch-Site", "same-origin")
			var tok struct{ Token string }
			if err := json.Unmarshal(body, &tok); code != 201 || err != nil || tok.Token == "" {
				t.Fatalf("the victim's token: %d %s", code, body)
			}
			spec := st.noteSession(tok.Token, "Secret plan", "Acquire the competitor.")
			for _, path := range []string{"/pse/sessions/" + spec, "/api/v1/pse/sessions/" + spec} {
				if code, body, _ := st.call(planted.Token, "GET", path, nil); code != 404 {
					t.Errorf("the planted token reads the victim's session at %s: %d %s", path, code, body)
				}
			}
			for _, path := range []string{"/pse/sessions", "/api/v1/tokens", "/api/v1/me"} {
				for _, token := range []string{planted.Token, mallory} {
					if code, body, _ := st.call(token, "GET", path, nil); code != 200 || strings.Contains(string(body), spec) ||
						strings.Contains(string(body), me.User.ID) || strings.Contains(string(body), "Secret plan") {
						t.Errorf("GET %s as the other organisation: %d %s", path, code, body)
					}
				}
			}

			// The planted user stays in evil, unverified; acme has the victim.
			code, body, _ = st.call(mallory, "GET", "/api/v1/members", nil)
			if code != 200 || !strings.Contains(string(body), `"id":"`+planted.User.ID+`","email":"victim@example.com","email_verified":false`) ||
				strings.Contains(string(body), me.User.ID) {
				t.Fatalf("evil's members: %d %s", code, body)
			}
			code, body, _ = st.call(lead, "GET", "/api/v1/members", nil)
			if code != 200 || !strings.Contains(string(body), `"id":"`+me.User.ID+`","email":"victim@example.com","email_verified":true`) {
				t.Fatalf("acme's members: %d %s", code, body)
			}
		})
	}
}

// TestOIDCVerifyInvitedEmail: a user who joined through an invitation is
// not reached by signing in through the provider until they prove the
// address theirs: POST /auth/oidc/verify with their token starts a sign-in
// bound to them and to their browser; when the provider signs in that
// address, their email is verified and linked, and signing in reaches them
// from then on. The attempt does not finish in another browser (the one a
// planter could send the link to). On both databases.
func TestOIDCVerifyInvitedEmail(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			replicas, idp := startSignInReplicas(t, d)
			st := replicas[0]
			lead := st.admin("lead@example.com")
			inv := st.invite(lead, map[string]any{"email": "newbie@partner.test"})
			code, joined, raw := st.accept(map[string]any{"secret": inv.Secret, "email": "newbie@partner.test"})
			if code != 201 {
				t.Fatalf("accept: %d %s", code, raw)
			}

			// Before: the provider's sign-in does not reach the invited user
			// (partner.test is not admitted, so it is refused).
			idp.SignInAs(fakeoidc.User{Email: "newbie@partner.test", EmailVerified: true})
			callback, attempt := startSignIn(t, st, st)
			if code, _, c, body := finishSignIn(t, callback, attempt, true); code != 403 || c != nil {
				t.Fatalf("sign-in before verifying: %d %s", code, body)
			}

			verify := func() (string, *http.Cookie) {
				t.Helper()
				req, _ := http.NewRequest("POST", st.base+"/auth/oidc/verify", nil)
				req.Header.Set("Authorization", "Bearer "+joined.Token)
				resp, err := noRedirects.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var out struct {
					AuthorizeURL string `json:"authorize_url"`
				}
				var attempt *http.Cookie
				for _, c := range resp.Cookies() {
					if c.Name == "__Host-devpilot_signin" {
						attempt = c
					}
				}
				if err := json.NewDecoder(resp.Body).Decode(&out); resp.StatusCode != 200 || err != nil || attempt == nil {
					t.Fatalf("POST /auth/oidc/verify: %d %v %+v", resp.StatusCode, err, attempt)
				}
				resp, err = noRedirects.Get(out.AuthorizeURL)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				loc, err := url.Parse(resp.Header.Get("Location"))
				if err != nil || resp.StatusCode != http.StatusFound {
					t.Fatalf("provider: %d %s", resp.StatusCode, loc)
				}
				return st.base + loc.Path + "?" + loc.RawQuery, attempt
			}
			// In another browser (without the attempt's cookie): refused.
			callback, _ = verify()
			if code, _, c, body := finishSignIn(t, callback, nil, true); code != 400 || c != nil {
				t.Fatalf("verifying in another browser: %d %s", code, body)
			}
			if code, body, _ := st.call(joined.Token, "GET", "/api/v1/me", nil); code != 200 || !strings.Contains(string(body), `"email_verified":false`) {
				t.Fatalf("me before verifying: %d %s", code, body)
			}
			// In the browser that started it: verified and signed in.
			callback, attempt = verify()
			code, _, c, body := finishSignIn(t, callback, attempt, true)
			if code != 200 || c == nil || !strings.Contains(string(body), `"id":"`+joined.User.ID+`"`) || !strings.Contains(string(body), `"email_verified":true`) {
				t.Fatalf("verifying: %d %s", code, body)
			}
			if code, body, _ := st.call(joined.Token, "GET", "/api/v1/me", nil); code != 200 || !strings.Contains(string(body), `"email_verified":true`) {
				t.Fatalf("me after verifying: %d %s", code, body)
			}
			// From then on the provider's sign-in reaches them.
			s := signIn(t, st, replicas[1])
			if code, body, _ := st.cookieCall(s, "GET", "/api/v1/me", nil); code != 200 || !strings.Contains(string(body), `"id":"`+joined.User.ID+`"`) {
				t.Fatalf("sign-in after verifying: %d %s", code, body)
			}
			if code, body, _ := st.call(lead, "GET", "/api/v1/audit", nil); code != 200 || !strings.Contains(string(body), identity.AuditVerifyEmail) {
				t.Errorf("audit: %d %s", code, body)
			}
		})
	}
}
