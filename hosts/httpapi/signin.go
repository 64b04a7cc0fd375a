package httpapi

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	"golang.org/x/oauth2"

	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/ports"
)

// SignIn signs console users in through an OpenID Connect provider and out
// again; *identity.Service implements it.
type SignIn interface {
	// SignInEnabled reports whether an identity provider is configured.
	SignInEnabled() bool
	// SignInURL returns the provider's authorization URL for one attempt.
	SignInURL(ctx context.Context, state, nonce, verifier string) (string, error)
	// CompleteSignIn redeems the provider's code and opens a session.
	CompleteSignIn(ctx context.Context, code, verifier, nonce string) (identity.SignedIn, error)
	// VerifyEmailURL is SignInURL for the caller proving their email; it
	// returns the caller's user id too.
	VerifyEmailURL(ctx context.Context, state, nonce, verifier string) (string, string, error)
	// CompleteEmailVerification redeems the provider's code for the user
	// who started the attempt, verifies their email and opens a session.
	CompleteEmailVerification(ctx context.Context, code, verifier, nonce, userID string) (identity.SignedIn, error)
	// SignOut revokes the caller's session.
	SignOut(ctx context.Context) error
}

const (
	// sessionCookie carries a console session's secret. __Host- makes the
	// browser keep it only when Secure, for this host, on every path.
	sessionCookie = "__Host-devpilot_session"
	// signInCookie carries a sign-in attempt (state, nonce, PKCE verifier),
	// sealed, from the login redirect to the provider's callback. Like the
	// session cookie it is always Secure, and __Host- (which needs Path=/
	// and forbids Domain) keeps a sibling subdomain, or a page of this host
	// served over http, from planting an attempt of its own in a browser
	// (a login CSRF).
	signInCookie = "__Host-devpilot_signin"
	signInTTL    = 10 * time.Minute
	// csrfHeader carries the CSRF token of a cookie-authenticated write.
	csrfHeader = "X-CSRF-Token"
	// consoleHome is where a sign-in lands without redirect_after.
	consoleHome = "/"
)

// signInAAD binds sealed sign-in attempts to their purpose.
var signInAAD = []byte("devpilot oidc sign-in attempt")

func (s *Server) signInRoutes() {
	s.handle(http.MethodGet, "/auth/config", s.authConfig, public)
	s.handle(http.MethodGet, "/auth/oidc/login", s.oidcLogin, public)
	s.handle(http.MethodGet, "/auth/oidc/callback", s.oidcCallback, public)
	s.handle(http.MethodPost, "/auth/oidc/verify", s.oidcVerify)
	s.handle(http.MethodGet, "/auth/session", s.authSession)
	s.handle(http.MethodPost, "/auth/logout", s.logout)
}

// signInAttempt is what the sealed sign-in cookie holds.
type signInAttempt struct {
	State    string    `json:"s"`
	Nonce    string    `json:"n"`
	Verifier string    `json:"v"`
	After    string    `json:"a,omitempty"`
	Expires  time.Time `json:"e"`
	// User is, for an attempt to prove a user's email, that user's id: the
	// callback then verifies their email rather than signing anyone in.
	User string `json:"u,omitempty"`
}

func (s *Server) authConfig(w http.ResponseWriter, _ *http.Request) error {
	out := map[string]any{"oidc": s.d.SignIn.SignInEnabled()}
	if s.d.SignIn.SignInEnabled() {
		out["login_url"] = "/auth/oidc/login"
	}
	return writeJSON(w, http.StatusOK, out)
}

// oidcLogin starts a sign-in: it seals a fresh state, nonce and PKCE
// verifier into the __Host- sign-in cookie and sends the browser to the
// provider (or, asked for JSON, answers {"authorize_url"}).
func (s *Server) oidcLogin(w http.ResponseWriter, r *http.Request) error {
	after := r.URL.Query().Get("redirect_after")
	if !localPath(after) {
		return ports.FieldsError(ports.KindInvalid, ports.FieldError{Field: "redirect_after", Reason: "must be a path on this site, such as /#/specs"})
	}
	a := newSignInAttempt(after)
	to, err := s.d.SignIn.SignInURL(r.Context(), a.State, a.Nonce, a.Verifier)
	if err != nil {
		return err
	}
	if err := s.setSignInAttempt(w, a); err != nil {
		return err
	}
	if acceptsJSON(r) {
		return writeJSON(w, http.StatusOK, map[string]string{"authorize_url": to})
	}
	http.Redirect(w, r, to, http.StatusFound)
	return nil
}

// newSignInAttempt is a fresh attempt: its state, nonce and PKCE verifier.
func newSignInAttempt(after string) signInAttempt {
	return signInAttempt{State: rand.Text(), Nonce: rand.Text(), Verifier: oauth2.GenerateVerifier(), After: after,
		Expires: time.Now().Add(signInTTL)}
}

// setSignInAttempt seals a into the sign-in cookie.
func (s *Server) setSignInAttempt(w http.ResponseWriter, a signInAttempt) error {
	plain, _ := json.Marshal(a)
	sealed, err := s.d.SignInSeal.Seal(plain, signInAAD)
	if err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{Name: signInCookie, Value: sealed, Path: "/", MaxAge: int(signInTTL / time.Second),
		HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode})
	return nil
}

// oidcVerify starts, for the authenticated caller, a sign-in that proves
// their email theirs (a user who joined through an invitation, whose
// address nothing proved): the attempt, bound to the caller and to this
// browser by the sealed sign-in cookie, ends at the same callback, which
// marks their email verified and links them to the provider's identity
// when the provider signs in that same address. It answers
// {"authorize_url"}, for the browser to go to.
func (s *Server) oidcVerify(w http.ResponseWriter, r *http.Request) error {
	after := r.URL.Query().Get("redirect_after")
	if !localPath(after) {
		return ports.FieldsError(ports.KindInvalid, ports.FieldError{Field: "redirect_after", Reason: "must be a path on this site, such as /#/specs"})
	}
	a := newSignInAttempt(after)
	to, userID, err := s.d.SignIn.VerifyEmailURL(r.Context(), a.State, a.Nonce, a.Verifier)
	if err != nil {
		return err
	}
	a.User = userID
	if err := s.setSignInAttempt(w, a); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]string{"authorize_url": to})
}

// oidcCallback finishes a sign-in in the browser that started it: the state
// must match the sealed attempt, which is cleared whatever the outcome. On
// success the session cookie is set and the browser goes to redirect_after
// (the console by default). A browser is sent back to the console's
// sign-in page with the reason on failure; other clients get the problem.
func (s *Server) oidcCallback(w http.ResponseWriter, r *http.Request) error {
	http.SetCookie(w, &http.Cookie{Name: signInCookie, Path: "/", MaxAge: -1, HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode})
	in, err := s.completeSignIn(r)
	if err != nil {
		if acceptsJSON(r) || !mediaTypeAccepted(r, "text/html") {
			return err
		}
		reason := "sign-in failed"
		if pe, ok := errors.AsType[*ports.Error](err); ok && pe.Kind != ports.KindInternal {
			reason = pe.Message
		}
		http.Redirect(w, r, consoleHome+"#/signin/failed/"+url.PathEscape(reason), http.StatusSeeOther)
		return nil
	}
	http.SetCookie(w, sessionCookieFor(in.secret, *in.Session.ExpiresAt))
	if acceptsJSON(r) {
		return writeJSON(w, http.StatusOK, signedInOut{meResponse: meOut(in.User, in.Org), CSRFToken: csrfToken(in.secret)})
	}
	to := in.after
	if to == "" {
		to = consoleHome
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
	return nil
}

type completed struct {
	identity.SignedIn
	secret string
	after  string
}

func (s *Server) completeSignIn(r *http.Request) (completed, error) {
	q := r.URL.Query()
	bad := func(msg string) error {
		return &ports.Error{Kind: ports.KindMalformed, Code: "invalid_state", Message: msg}
	}
	c, err := r.Cookie(signInCookie)
	if err != nil {
		return completed{}, bad("no sign-in was started in this browser, or it took over 10 minutes: sign in again")
	}
	plain, err := s.d.SignInSeal.Open(c.Value, signInAAD)
	var a signInAttempt
	if err != nil || json.Unmarshal(plain, &a) != nil || time.Now().After(a.Expires) {
		return completed{}, bad("the sign-in attempt expired or is not valid: sign in again")
	}
	if subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(a.State)) != 1 {
		return completed{}, bad("the sign-in state does not match this browser's: sign in again")
	}
	if e := q.Get("error"); e != "" {
		return completed{}, &ports.Error{Kind: ports.KindForbidden, Message: "the identity provider refused the sign-in (" + clip(e, 64) + ")"}
	}
	if q.Get("code") == "" {
		return completed{}, bad("the identity provider sent no code")
	}
	var in identity.SignedIn
	if a.User != "" {
		in, err = s.d.SignIn.CompleteEmailVerification(r.Context(), q.Get("code"), a.Verifier, a.Nonce, a.User)
	} else {
		in, err = s.d.SignIn.CompleteSignIn(r.Context(), q.Get("code"), a.Verifier, a.Nonce)
	}
	if err != nil {
		return completed{}, err
	}
	return completed{SignedIn: in, secret: in.Secret, after: a.After}, nil
}

// authSession describes the caller's console session: who they are and the
// CSRF token their writes must carry in X-CSRF-Token.
func (s *Server) authSession(w http.ResponseWriter, r *http.Request) error {
	me, err := s.d.Identity.Me(r.Context())
	if err != nil {
		return err
	}
	out := signedInOut{meResponse: meOut(me.User, me.Org)}
	if c, err := r.Cookie(sessionCookie); err == nil && r.Header.Get("Authorization") == "" {
		out.CSRFToken = csrfToken(c.Value)
	}
	return writeJSON(w, http.StatusOK, out)
}

// signedInOut is the caller with the CSRF token of their console session
// (none for an API token).
type signedInOut struct {
	meResponse
	CSRFToken string `json:"csrf_token,omitempty"`
}

// logout ends the caller's console session and clears its cookie.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) error {
	if err := s.d.SignIn.SignOut(r.Context()); err != nil {
		return err
	}
	http.SetCookie(w, sessionCookieFor("", time.Time{}))
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// sessionCookieFor is the session cookie carrying secret until expires, or
// one that deletes it for "".
func sessionCookieFor(secret string, expires time.Time) *http.Cookie {
	c := &http.Cookie{Name: sessionCookie, Value: secret, Path: "/", HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode}
	if secret == "" {
		c.MaxAge = -1
	} else {
		c.Expires = expires
	}
	return c
}

// csrfToken is the CSRF token of the session whose secret is given: an HMAC
// of a fixed label under the secret, so it is checked without storing it
// and is worthless without the cookie, which scripts cannot read.
func csrfToken(secret string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte("devpilot csrf"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkCSRF guards a cookie-authenticated request: a write must come from
// this origin (or a CORS origin) by the browser's Sec-Fetch-Site and Origin
// headers, and carry the session's CSRF token.
func (s *Server) checkCSRF(r *http.Request, secret string) error {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return nil
	}
	if err := s.crossOrigin.Check(r); err != nil {
		return &ports.Error{Kind: ports.KindForbidden, Code: "csrf", Message: "cross-origin request refused"}
	}
	if !hmac.Equal([]byte(r.Header.Get(csrfHeader)), []byte(csrfToken(secret))) {
		return &ports.Error{Kind: ports.KindForbidden, Code: "csrf", Message: "missing or wrong " + csrfHeader + " header"}
	}
	return nil
}

// localPath reports whether p is "" or a path on this site that no browser
// reads as another origin.
func localPath(p string) bool {
	if p == "" {
		return true
	}
	return len(p) <= 2048 && strings.HasPrefix(p, "/") && !strings.HasPrefix(p, "//") &&
		!strings.ContainsFunc(p, func(r rune) bool { return r == '\\' || unicode.IsSpace(r) || unicode.IsControl(r) })
}

func clip(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return -1
		}
		return r
	}, s)
	if len(s) > n {
		s = s[:n]
	}
	return s
}
