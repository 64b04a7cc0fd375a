// Package fakeoidc is an OpenID Connect provider on a loopback port, speaking
// the parts of the protocol a relying party uses, so that the real
// golang.org/x/oauth2 and github.com/coreos/go-oidc clients are tested over
// real HTTP:
//
//   - discovery: GET /.well-known/openid-configuration;
//   - GET /authorize, where the user set with SignInAs approves at once and
//     is redirected (302) back with a single-use code and the state; the
//     request must name the registered client and redirect URI, ask for
//     response_type=code and scope openid, and carry a nonce and an S256
//     PKCE challenge;
//   - POST /token, which checks the client's credentials (HTTP Basic or
//     form), the code, its redirect URI and the PKCE verifier, and answers
//     with an ES256-signed ID token (iss, sub, aud, exp, iat, nonce, email,
//     email_verified, groups), errors in RFC 6749's shape;
//   - GET /jwks: the public key set.
//
// Faults for the relying party to refuse: NextToken changes the claims of
// the next ID token (a wrong audience, an expired token, a bad nonce);
// SignNextWith signs it with a key not in the key set.
package fakeoidc

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// User is who signs in at the provider.
type User struct {
	Subject       string
	Email         string
	EmailVerified bool
	Groups        []string
}

// Server is the fake provider.
type Server struct {
	srv          *httptest.Server
	clientID     string
	clientSecret string
	redirectURI  string
	key          *ecdsa.PrivateKey
	keyID        string

	mu      sync.Mutex
	user    *User
	codes   map[string]*grant
	tamper  func(claims map[string]any)
	foreign *ecdsa.PrivateKey
	tokens  int // ID tokens issued
	now     func() time.Time
}

type grant struct {
	user      User
	nonce     string
	challenge string
	redirect  string
}

// New starts a provider for one client, whose redirect URI must be given to
// every authorization request, and closes it when the test ends.
func New(t testing.TB, clientID, clientSecret, redirectURI string) *Server {
	t.Helper()
	s := &Server{clientID: clientID, clientSecret: clientSecret, redirectURI: redirectURI,
		codes: map[string]*grant{}, now: time.Now, keyID: "fake-key-1"}
	s.key = newKey(t)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", s.discovery)
	mux.HandleFunc("GET /authorize", s.authorize)
	mux.HandleFunc("POST /token", s.token)
	mux.HandleFunc("GET /jwks", s.jwks)
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.srv.Close)
	return s
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("fakeoidc: %v", err)
	}
	return key
}

// Issuer is the provider's issuer URL (and base URL).
func (s *Server) Issuer() string { return s.srv.URL }

// SetRedirectURI changes the registered redirect URI, for a relying party
// whose address is known only after the provider started.
func (s *Server) SetRedirectURI(uri string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.redirectURI = uri
}

// SignInAs makes u the user who approves the next authorization requests;
// until it is called, /authorize answers access_denied.
func (s *Server) SignInAs(u User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if u.Subject == "" {
		u.Subject = "sub-" + u.Email
	}
	s.user = &u
}

// NextToken has f change the claims of the next ID token issued (set "aud",
// "exp", "nonce", …; delete one to leave it out).
func (s *Server) NextToken(f func(claims map[string]any)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tamper = f
}

// SignNextWithForeignKey signs the next ID token with a key the key set does
// not hold.
func (s *Server) SignNextWithForeignKey(t testing.TB) {
	key := newKey(t)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.foreign = key
}

// Issued is how many ID tokens the provider has issued.
func (s *Server) Issued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokens
}

func (s *Server) discovery(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer":                                s.srv.URL,
		"authorization_endpoint":                s.srv.URL + "/authorize",
		"token_endpoint":                        s.srv.URL + "/token",
		"jwks_uri":                              s.srv.URL + "/jwks",
		"response_types_supported":              []string{"code"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{"ES256"},
		"scopes_supported":                      []string{"openid", "email", "profile", "groups"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
		"code_challenge_methods_supported":      []string{"S256"},
		"claims_supported":                      []string{"sub", "email", "email_verified", "groups", "nonce"},
	})
}

func (s *Server) jwks(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{
		Key: s.key.Public(), KeyID: s.keyID, Algorithm: string(jose.ES256), Use: "sig"}}})
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case q.Get("client_id") != s.clientID:
		http.Error(w, "unknown client_id", http.StatusBadRequest)
		return
	case q.Get("redirect_uri") != s.redirectURI:
		http.Error(w, "redirect_uri is not registered", http.StatusBadRequest)
		return
	}
	back, _ := url.Parse(s.redirectURI)
	v := url.Values{}
	if st := q.Get("state"); st != "" {
		v.Set("state", st)
	}
	fail := func(code, desc string) {
		v.Set("error", code)
		v.Set("error_description", desc)
		back.RawQuery = v.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	}
	switch {
	case q.Get("response_type") != "code":
		fail("unsupported_response_type", "only the code flow")
	case !slices.Contains(strings.Fields(q.Get("scope")), "openid"):
		fail("invalid_scope", "scope must include openid")
	case q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
		fail("invalid_request", "PKCE S256 is required")
	case q.Get("nonce") == "":
		fail("invalid_request", "a nonce is required")
	case s.user == nil:
		fail("access_denied", "nobody is signed in")
	default:
		code := rand.Text()
		s.codes[code] = &grant{user: *s.user, nonce: q.Get("nonce"), challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri")}
		v.Set("code", code)
		back.RawQuery = v.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	}
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "bad form")
		return
	}
	id, secret, basic := r.BasicAuth()
	if basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	if id != s.clientID || subtle.ConstantTimeCompare([]byte(secret), []byte(s.clientSecret)) != 1 {
		oauthError(w, http.StatusUnauthorized, "invalid_client", "bad client credentials")
		return
	}
	if r.PostForm.Get("grant_type") != "authorization_code" {
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "only authorization_code")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	code := r.PostForm.Get("code")
	g, ok := s.codes[code]
	delete(s.codes, code) // single use, even when the rest fails
	sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
	switch {
	case !ok:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "unknown or used code")
		return
	case r.PostForm.Get("redirect_uri") != g.redirect:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "redirect_uri differs from the authorization request's")
		return
	case base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge:
		oauthError(w, http.StatusBadRequest, "invalid_grant", "PKCE verifier does not match")
		return
	}
	now := s.now()
	claims := map[string]any{
		"iss": s.srv.URL, "sub": g.user.Subject, "aud": s.clientID,
		"iat": now.Unix(), "exp": now.Add(10 * time.Minute).Unix(), "nonce": g.nonce,
		"email": g.user.Email, "email_verified": g.user.EmailVerified,
	}
	if g.user.Groups != nil {
		claims["groups"] = g.user.Groups
	}
	if s.tamper != nil {
		s.tamper(claims)
		s.tamper = nil
	}
	key := s.key
	if s.foreign != nil {
		key, s.foreign = s.foreign, nil
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: jose.JSONWebKey{Key: key, KeyID: s.keyID}},
		(&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		oauthError(w, http.StatusInternalServerError, "server_error", err.Error())
		return
	}
	payload, _ := json.Marshal(claims)
	jws, err := signer.Sign(payload)
	if err != nil {
		oauthError(w, http.StatusInternalServerError, "server_error", err.Error())
		return
	}
	idToken, _ := jws.CompactSerialize()
	s.tokens++
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": rand.Text(), "token_type": "Bearer", "expires_in": 600, "id_token": idToken,
	})
}

func oauthError(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
