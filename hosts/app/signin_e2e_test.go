package app_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/hosts/app"
	"github.com/devpilot/devpilot/testkit/fakeoidc"
)

// The callback the fake provider knows devpilot by; tests play the browser,
// so they take the provider's redirect to whichever replica they choose.
const oidcRedirect = "https://devpilot.test/auth/oidc/callback"

// startSignInReplicas starts two serve processes on one fresh database,
// signing in through a fake OpenID Connect provider that admits
// example.com and the group "ops" (as admins) into acme.
func startSignInReplicas(t *testing.T, d sqlstore.Dialect) ([]*stack, *fakeoidc.Server) {
	t.Helper()
	idp := fakeoidc.New(t, "devpilot", "oidc-secret", oidcRedirect)
	vars := map[string]string{
		app.EnvSecretKey:        validKey,
		app.EnvDatabaseURL:      sqlstoretest.URL(t, d),
		app.EnvDataDir:          t.TempDir(),
		app.EnvHTTPAddr:         "127.0.0.1:0",
		app.EnvOIDCIssuer:       idp.Issuer(),
		app.EnvOIDCClientID:     "devpilot",
		app.EnvOIDCClientSecret: "oidc-secret",
		app.EnvOIDCRedirectURL:  oidcRedirect,
		app.EnvOIDCOrg:          "acme",
		app.EnvOIDCDomains:      "example.com",
		app.EnvOIDCAdminGroups:  "ops",
	}
	migrateDB(t, vars)
	var id *identity.Service
	one := &stack{t: t}
	one.base = startProcess(t, app.ModeServe, vars, fx.Populate(&id))
	one.id = id
	two := &stack{t: t, id: id, base: startProcess(t, app.ModeServe, vars)}
	return []*stack{one, two}, idp
}

// browserSession is what a browser holds after signing in.
type browserSession struct {
	cookie string // the session cookie's value
	csrf   string
}

var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// startSignIn plays a browser up to the provider's redirect back: it asks
// start for the login, follows it to the provider, and returns the callback
// URL on back's address and the sign-in cookie.
func startSignIn(t *testing.T, start, back *stack) (callback string, attempt *http.Cookie) {
	t.Helper()
	resp, err := noRedirects.Get(start.base + "/auth/oidc/login?redirect_after=" + url.QueryEscape("/#/specs"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		if c.Name == "__Host-devpilot_signin" {
			attempt = c
		}
	}
	// __Host-: Secure, Path=/, no Domain, so that no sibling subdomain can
	// plant an attempt of its own.
	if resp.StatusCode != http.StatusFound || attempt == nil || !attempt.HttpOnly || !attempt.Secure || attempt.Path != "/" || attempt.Domain != "" {
		t.Fatalf("login: %d, sign-in cookie %+v", resp.StatusCode, attempt)
	}
	resp, err = noRedirects.Get(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound || loc.String() == "" {
		t.Fatalf("provider: %d %s", resp.StatusCode, loc)
	}
	return back.base + loc.Path + "?" + loc.RawQuery, attempt
}

// finishSignIn takes the provider's redirect back as a browser would (or,
// with asJSON, as an API client) and returns the status, the Location, the
// session cookie set (nil for none) and the body.
func finishSignIn(t *testing.T, callback string, attempt *http.Cookie, asJSON bool) (int, string, *http.Cookie, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", callback, nil)
	req.Header.Set("Accept", "text/html,application/xhtml+xml")
	if asJSON {
		req.Header.Set("Accept", "application/json")
	}
	if attempt != nil {
		req.AddCookie(attempt)
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var session *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "__Host-devpilot_session" && c.MaxAge >= 0 && c.Value != "" {
			session = c
		}
	}
	return resp.StatusCode, resp.Header.Get("Location"), session, body
}

// signIn signs the provider's current user in through start and back and
// returns the browser's session.
func signIn(t *testing.T, start, back *stack) browserSession {
	t.Helper()
	callback, attempt := startSignIn(t, start, back)
	code, loc, c, body := finishSignIn(t, callback, attempt, false)
	if code != http.StatusSeeOther || loc != "/#/specs" || c == nil {
		t.Fatalf("callback: %d %s %+v %s", code, loc, c, body)
	}
	if !c.HttpOnly || !c.Secure || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Expires.IsZero() {
		t.Fatalf("session cookie %+v: want HttpOnly, Secure, SameSite=Lax, Path=/, an expiry", c)
	}
	s := browserSession{cookie: c.Value}
	code, body, _ = back.cookieCall(s, "GET", "/auth/session", nil)
	var out struct {
		CSRF string `json:"csrf_token"`
		User struct{ Email string }
	}
	if err := json.Unmarshal(body, &out); code != 200 || err != nil || out.CSRF == "" {
		t.Fatalf("GET /auth/session: %d %s", code, body)
	}
	s.csrf = out.CSRF
	return s
}

// cookieCall sends a request authenticated by the session cookie, with its
// CSRF token on writes unless header overrides X-CSRF-Token; header adds
// headers.
func (st *stack) cookieCall(s browserSession, method, path string, body any, header ...string) (int, []byte, http.Header) {
	st.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, st.base+path, rd)
	req.AddCookie(&http.Cookie{Name: "__Host-devpilot_session", Value: s.cookie})
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if method != "GET" && s.csrf != "" {
		req.Header.Set("X-CSRF-Token", s.csrf)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	code, h, raw := st.send(req)
	return code, raw, h
}

// TestOIDCSignIn: a console user signs in through the identity provider on
// one replica and back on the other, and the session cookie works on both;
// cookie writes need the CSRF token and this origin; a session's secret is
// no bearer token and an API token no session; bearer tokens keep working;
// removing the member, or signing out, ends the session on both replicas.
// On both databases.
func TestOIDCSignIn(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			replicas, idp := startSignInReplicas(t, d)
			one, two := replicas[0], replicas[1]
			lead := one.admin("lead@example.com")

			code, body, _ := one.call(lead, "GET", "/auth/config", nil)
			if code != 200 || !strings.Contains(string(body), `"oidc":true`) {
				t.Fatalf("/auth/config: %d %s", code, body)
			}

			idp.SignInAs(fakeoidc.User{Email: "Ada@Example.com", EmailVerified: true})
			ada := signIn(t, one, two) // started on one, finished on two
			for i, st := range replicas {
				code, body, _ := st.cookieCall(ada, "GET", "/api/v1/me", nil)
				if code != 200 || !strings.Contains(string(body), `"email":"ada@example.com"`) || !strings.Contains(string(body), `"role":"member"`) {
					t.Fatalf("ada on replica %d: %d %s", i+1, code, body)
				}
			}

			// Writes by cookie: the CSRF token and this origin, or 403.
			newToken := map[string]any{"name": "laptop", "expires_in_days": 7}
			for _, bad := range []struct {
				name   string
				header []string
			}{
				{"no CSRF token", []string{"X-CSRF-Token", ""}},
				{"a wrong CSRF token", []string{"X-CSRF-Token", "forged"}},
				{"from another site", []string{"Sec-Fetch-Site", "cross-site"}},
				{"from another origin", []string{"Origin", "https://evil.example"}},
			} {
				if code, body, _ := one.cookieCall(ada, "POST", "/api/v1/tokens", newToken, bad.header...); code != 403 || !strings.Contains(string(body), `"code":"csrf"`) {
					t.Errorf("a cookie write with %s: %d %s, want 403 csrf", bad.name, code, body)
				}
			}
			if code, body, _ := two.cookieCall(ada, "POST", "/api/v1/tokens", newToken, "Sec-Fetch-Site", "same-origin"); code != 201 {
				t.Fatalf("a cookie write with the CSRF token: %d %s", code, body)
			}
			// A session's secret is no bearer token; an API token no session.
			if code, _, _ := one.call(ada.cookie, "GET", "/api/v1/me", nil); code != 401 {
				t.Errorf("the session's secret as a bearer token: %d, want 401", code)
			}
			if code, _, _ := one.cookieCall(browserSession{cookie: lead}, "GET", "/api/v1/me", nil); code != 401 {
				t.Errorf("an API token as the session cookie: %d, want 401", code)
			}
			if code, _, _ := one.call(lead, "GET", "/api/v1/me", nil); code != 200 {
				t.Errorf("a bearer token: %d", code)
			}
			// The sign-in is audited.
			if code, body, _ := one.call(lead, "GET", "/api/v1/audit", nil); code != 200 || !strings.Contains(string(body), identity.AuditSignIn) {
				t.Errorf("audit: %d %s", code, body)
			}

			// An admin group makes a new user an admin.
			idp.SignInAs(fakeoidc.User{Email: "ops@elsewhere.net", EmailVerified: true, Groups: []string{"ops"}})
			ops := signIn(t, two, one)
			if code, body, _ := one.cookieCall(ops, "GET", "/api/v1/me", nil); code != 200 || !strings.Contains(string(body), `"role":"admin"`) {
				t.Fatalf("ops: %d %s", code, body)
			}

			// Sign-out ends the session on both replicas.
			if code, body, _ := two.cookieCall(ops, "POST", "/auth/logout", nil); code != 204 {
				t.Fatalf("logout: %d %s", code, body)
			}
			waitStatus(t, d, replicas, ops, 401)

			// Removing ada ends her session on both replicas.
			code, body, _ = one.call(lead, "GET", "/api/v1/members", nil)
			var members struct{ Items []struct{ ID, Email string } }
			if err := json.Unmarshal(body, &members); code != 200 || err != nil {
				t.Fatalf("members: %d %s", code, body)
			}
			for _, m := range members.Items {
				if m.Email == "ada@example.com" {
					if code, body, _ := two.call(lead, "DELETE", "/api/v1/members/"+m.ID, nil); code != 204 {
						t.Fatalf("remove ada: %d %s", code, body)
					}
				}
			}
			waitStatus(t, d, replicas, ada, 401)
			// … and she cannot sign in again.
			idp.SignInAs(fakeoidc.User{Email: "ada@example.com", EmailVerified: true})
			callback, attempt := startSignIn(t, one, one)
			if code, _, c, body := finishSignIn(t, callback, attempt, true); code != 403 || c != nil {
				t.Fatalf("a removed member signing in: %d %s", code, body)
			}
		})
	}
}

// waitStatus waits until s's GET /api/v1/me answers want on every replica:
// at once on PostgreSQL (NOTIFY), within the auth cache's 5 s on SQLite.
func waitStatus(t *testing.T, d sqlstore.Dialect, replicas []*stack, s browserSession, want int) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	if d == sqlstore.DialectSQLite {
		deadline = time.Now().Add(10 * time.Second)
	}
	for i, st := range replicas {
		for {
			code, _, _ := st.cookieCall(s, "GET", "/api/v1/me", nil)
			if code == want {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("replica %d: %d, want %d", i+1, code, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// TestOIDCSignInRefused: every sign-in devpilot must not accept ends without
// a session cookie, with a clear 4xx — an ID token for another audience, an
// expired one, one with another nonce or signed by another key, a replayed
// or forged callback, an unverified email, a user the policy does not
// admit — and a browser is sent back to the console with the reason.
func TestOIDCSignInRefused(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			replicas, idp := startSignInReplicas(t, d)
			st := replicas[0]
			for _, tc := range []struct {
				name  string
				user  fakeoidc.User
				fault func()
				edit  func(callback string, attempt *http.Cookie) (string, *http.Cookie)
				want  int
			}{
				{name: "wrong audience", want: 401, fault: func() { idp.NextToken(func(c map[string]any) { c["aud"] = "someone-else" }) }},
				{name: "expired token", want: 401, fault: func() {
					idp.NextToken(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Hour).Unix() })
				}},
				{name: "bad nonce", want: 401, fault: func() { idp.NextToken(func(c map[string]any) { c["nonce"] = "replayed" }) }},
				{name: "foreign key", want: 401, fault: func() { idp.SignNextWithForeignKey(t) }},
				{name: "unverified email", want: 403, user: fakeoidc.User{Email: "eve@example.com"}},
				{name: "domain not admitted", want: 403, user: fakeoidc.User{Email: "eve@example.org", EmailVerified: true}},
				{name: "no sign-in cookie", want: 400, edit: func(cb string, _ *http.Cookie) (string, *http.Cookie) { return cb, nil }},
				{name: "forged sign-in cookie", want: 400, edit: func(cb string, c *http.Cookie) (string, *http.Cookie) {
					return cb, &http.Cookie{Name: c.Name, Value: "v1.AAAA"}
				}},
				// What a sibling subdomain could plant: the attempt under a
				// name without the __Host- prefix is not read.
				{name: "sign-in cookie without its prefix", want: 400, edit: func(cb string, c *http.Cookie) (string, *http.Cookie) {
					return cb, &http.Cookie{Name: "devpilot_signin", Value: c.Value}
				}},
				{name: "another state", want: 400, edit: func(cb string, c *http.Cookie) (string, *http.Cookie) {
					return replaceQuery(cb, "state", "not-the-state"), c
				}},
				{name: "hostile state", want: 400, edit: func(cb string, c *http.Cookie) (string, *http.Cookie) {
					return replaceQuery(cb, "state", "\x00\x1b[31m"+strings.Repeat("é", 3000)), c
				}},
				{name: "provider error", want: 403, edit: func(cb string, c *http.Cookie) (string, *http.Cookie) {
					return replaceQuery(replaceQuery(cb, "code", ""), "error", "access_denied\x00"), c
				}},
				{name: "forged code", want: 401, edit: func(cb string, c *http.Cookie) (string, *http.Cookie) {
					return replaceQuery(cb, "code", "forged"), c
				}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					user := tc.user
					if user.Email == "" {
						user = fakeoidc.User{Email: "ada@example.com", EmailVerified: true}
					}
					idp.SignInAs(user)
					callback, attempt := startSignIn(t, st, st)
					if tc.fault != nil {
						tc.fault()
					}
					if tc.edit != nil {
						callback, attempt = tc.edit(callback, attempt)
					}
					if code, _, c, body := finishSignIn(t, callback, attempt, true); code != tc.want || c != nil {
						t.Fatalf("callback: %d %s (session cookie %v), want %d and none", code, body, c != nil, tc.want)
					}
				})
			}

			// A browser is sent back to the console's sign-in page with the reason.
			idp.SignInAs(fakeoidc.User{Email: "eve@example.org", EmailVerified: true})
			callback, attempt := startSignIn(t, st, st)
			if code, loc, c, _ := finishSignIn(t, callback, attempt, false); code != 303 || !strings.HasPrefix(loc, "/#/signin/failed/") || c != nil {
				t.Fatalf("a refused browser: %d %s", code, loc)
			}

			// A callback replayed with its cookie: the code is used, nothing signs in.
			idp.SignInAs(fakeoidc.User{Email: "ada@example.com", EmailVerified: true})
			callback, attempt = startSignIn(t, st, st)
			if code, _, c, _ := finishSignIn(t, callback, attempt, true); code != 200 || c == nil {
				t.Fatalf("the first callback: %d", code)
			}
			if code, _, c, body := finishSignIn(t, callback, attempt, true); code != 401 || c != nil {
				t.Fatalf("the replayed callback: %d %s", code, body)
			}

			// Only local paths to land on.
			for _, bad := range []string{"//evil.example/", "https://evil.example/", "/\\evil.example", "/a\x00b"} {
				resp, err := noRedirects.Get(st.base + "/auth/oidc/login?redirect_after=" + url.QueryEscape(bad))
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != 422 {
					t.Errorf("redirect_after %q: %d, want 422", bad, resp.StatusCode)
				}
			}
		})
	}
}

func replaceQuery(raw, key, value string) string {
	u, _ := url.Parse(raw)
	q := u.Query()
	if value == "" {
		q.Del(key)
	} else {
		q.Set(key, value)
	}
	u.RawQuery = q.Encode()
	return u.String()
}
