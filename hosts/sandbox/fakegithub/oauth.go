package fakegithub

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// codeLifetime is how long an authorization code can be exchanged, as on
// GitHub.
const codeLifetime = 10 * time.Minute

// Where GitHub's OAuth error answers point.
const (
	docTokenErrors = "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/"
	docAuthErrors  = "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-authorization-request-errors/"
)

// App is an OAuth app registered with RegisterApp.
type App struct {
	s        *Server
	clientID string
	secret   string
	callback string
}

// grant is an authorization code waiting to be exchanged.
type grant struct {
	app         *App
	user        *User
	redirectURI string // as the authorize request gave it, "" when it gave none
	challenge   string
	scope       string
	expires     time.Time
}

// RegisterApp registers an OAuth app; registering a client id again
// replaces its secret.
func (s *Server) RegisterApp(clientID, clientSecret string) *App {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := &App{s: s, clientID: clientID, secret: clientSecret}
	s.apps[clientID] = a
	return a
}

// CallbackURL sets the app's registered callback URL. The authorize endpoint
// then accepts only redirect URIs on its host whose path is the callback's
// or below it, as GitHub does, and redirects with
// error=redirect_uri_mismatch otherwise; without one, any redirect URI is
// accepted.
func (a *App) CallbackURL(u string) *App {
	a.s.mu.Lock()
	defer a.s.mu.Unlock()
	a.callback = u
	return a
}

// AuthorizeAs makes the authorize endpoint approve every request as the
// seeded user login, as if that user were signed in and clicked
// "Authorize"; it undoes DenyAuthorization.
func (s *Server) AuthorizeAs(login string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.approver, s.deny = login, false
}

// DenyAuthorization makes the authorize endpoint redirect with
// error=access_denied, as when the user clicks "Cancel", until AuthorizeAs is
// called again.
func (s *Server) DenyAuthorization() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.deny = true
}

// handleAuthorize is GET /login/oauth/authorize.
func (s *Server) handleAuthorize(c *call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := c.r.URL.Query()
	app := s.apps[q.Get("client_id")]
	if app == nil {
		http.Error(c.w, "fakegithub: no OAuth app has client_id "+q.Get("client_id"), http.StatusNotFound)
		return
	}
	redirect, state := q.Get("redirect_uri"), q.Get("state")
	if redirect == "" && app.callback == "" {
		http.Error(c.w, "fakegithub: no redirect_uri and no registered callback URL", http.StatusBadRequest)
		return
	}
	target := redirect
	if target == "" {
		target = app.callback
	}
	if u, err := url.Parse(target); err != nil || !u.IsAbs() {
		http.Error(c.w, "fakegithub: redirect_uri is not an absolute URL", http.StatusBadRequest)
		return
	}
	if redirect != "" && app.callback != "" && !underCallback(redirect, app.callback) {
		redirectTo(c, app.callback, url.Values{
			"error":             {"redirect_uri_mismatch"},
			"error_description": {"The redirect_uri MUST match the registered callback URL for this application."},
			"error_uri":         {docAuthErrors + "#redirect-uri-mismatch"},
			"state":             {state},
		})
		return
	}
	challenge, method := q.Get("code_challenge"), q.Get("code_challenge_method")
	if challenge != "" && method != "S256" || challenge == "" && method != "" {
		redirectTo(c, target, url.Values{
			"error":             {"invalid_request"},
			"error_description": {"code_challenge_method must be S256 and needs a code_challenge."},
			"state":             {state},
		})
		return
	}
	if s.deny {
		redirectTo(c, target, url.Values{
			"error":             {"access_denied"},
			"error_description": {"The user has denied your application access."},
			"error_uri":         {docAuthErrors + "#access-denied"},
			"state":             {state},
		})
		return
	}
	user := s.lookupUser(s.approver)
	if user == nil {
		http.Error(c.w, "fakegithub: nobody is signed in; call Server.AuthorizeAs with a seeded user", http.StatusUnauthorized)
		return
	}
	c.rec.Login = user.login
	code := randomHex(10)
	s.grants[code] = &grant{
		app: app, user: user, redirectURI: redirect, challenge: challenge,
		scope: q.Get("scope"), expires: time.Now().Add(codeLifetime),
	}
	redirectTo(c, target, url.Values{"code": {code}, "state": {state}})
}

// underCallback reports whether redirect is allowed by the registered
// callback: same scheme and host, and a path at or below the callback's.
func underCallback(redirect, callback string) bool {
	r, err1 := url.Parse(redirect)
	cb, err2 := url.Parse(callback)
	if err1 != nil || err2 != nil || r.Scheme != cb.Scheme || !strings.EqualFold(r.Host, cb.Host) {
		return false
	}
	base := strings.TrimSuffix(cb.Path, "/")
	return r.Path == cb.Path || r.Path == base || strings.HasPrefix(r.Path, base+"/")
}

// redirectTo answers 302 to target with params added to its query (empty
// ones left out).
func redirectTo(c *call, target string, params url.Values) {
	u, _ := url.Parse(target)
	q := u.Query()
	for k, vs := range params {
		if len(vs) > 0 && vs[0] != "" {
			q.Set(k, vs[0])
		}
	}
	u.RawQuery = q.Encode()
	http.Redirect(c.w, c.r, u.String(), http.StatusFound)
}

// verifierShape is RFC 7636's code_verifier: 43 to 128 unreserved characters.
var verifierShape = regexp.MustCompile(`^[A-Za-z0-9._~-]{43,128}$`)

// handleAccessToken is POST /login/oauth/access_token.
func (s *Server) handleAccessToken(c *call) {
	defer drain(c.r)
	if err := c.r.ParseForm(); err != nil {
		http.Error(c.w, "fakegithub: bad form: "+err.Error(), http.StatusBadRequest)
		return
	}
	c.rec.Form = c.r.PostForm
	form := c.r.Form
	clientID, secret := form.Get("client_id"), form.Get("client_secret")
	if id, sec, ok := c.r.BasicAuth(); ok {
		clientID, secret = id, sec
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fail := func(code, description, anchor string) {
		tokenAnswer(c, url.Values{
			"error": {code}, "error_description": {description}, "error_uri": {docTokenErrors + anchor},
		})
	}
	app := s.apps[clientID]
	if app == nil || subtle.ConstantTimeCompare([]byte(app.secret), []byte(secret)) != 1 {
		fail("incorrect_client_credentials", "The client_id and/or client_secret passed are incorrect.", "#incorrect-client-credentials")
		return
	}
	if gt := form.Get("grant_type"); gt != "" && gt != "authorization_code" {
		fail("unsupported_grant_type", "The grant type is not supported.", "")
		return
	}
	code := form.Get("code")
	g := s.grants[code]
	delete(s.grants, code)
	if g == nil || g.app != app || time.Now().After(g.expires) {
		fail("bad_verification_code", "The code passed is incorrect or expired.", "#bad-verification-code")
		return
	}
	if r := form.Get("redirect_uri"); r != "" && g.redirectURI != "" && r != g.redirectURI {
		fail("redirect_uri_mismatch", "The redirect_uri MUST match the registered callback URL for this application.", "#redirect-uri-mismatch2")
		return
	}
	if g.challenge != "" {
		verifier := form.Get("code_verifier")
		if !verifierShape.MatchString(verifier) {
			fail("invalid_request", "The code_verifier is missing or malformed.", "")
			return
		}
		sum := sha256.Sum256([]byte(verifier))
		if base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
			fail("invalid_grant", "The code_verifier does not match the code_challenge.", "")
			return
		}
	}
	value := "gho_" + randomAlnum(36)
	scopes := grantedScopes(g.scope)
	s.tokens[value] = &token{value: value, user: g.user, scopes: strings.ReplaceAll(scopes, ",", ", ")}
	c.rec.Login = g.user.login
	tokenAnswer(c, url.Values{"access_token": {value}, "token_type": {"bearer"}, "scope": {scopes}})
}

// grantedScopes is the scope list GitHub answers with: the requested scopes
// (space- or comma-separated) joined by commas.
func grantedScopes(requested string) string {
	return strings.Join(strings.FieldsFunc(requested, func(r rune) bool { return r == ' ' || r == ',' }), ",")
}

// tokenAnswer writes an access-token answer as GitHub does: status 200
// always, JSON when the client accepts it and form encoding otherwise.
func tokenAnswer(c *call, v url.Values) {
	if strings.Contains(c.r.Header.Get("Accept"), "application/json") {
		m := map[string]string{}
		for k := range v {
			m[k] = v.Get(k)
		}
		body, _ := json.Marshal(m)
		c.w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_, _ = c.w.Write(body)
		return
	}
	c.w.Header().Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	_, _ = c.w.Write([]byte(v.Encode()))
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func randomAlnum(n int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}
