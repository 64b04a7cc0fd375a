package oidc_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/devpilot/devpilot/adapters/oidc"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fakeoidc"
)

const (
	clientID    = "devpilot-console"
	secret      = "s3cret"
	redirectURI = "https://devpilot.test/auth/oidc/callback"
)

func newProvider(t *testing.T) (*oidc.Provider, *fakeoidc.Server) {
	t.Helper()
	idp := fakeoidc.New(t, clientID, secret, redirectURI)
	p, err := oidc.New(oidc.Config{IssuerURL: idp.Issuer(), ClientID: clientID, ClientSecret: secret, RedirectURL: redirectURI, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return p, idp
}

// authorize plays the browser: it follows the provider's authorization URL
// and returns the code the provider sends back, checking the state.
func authorize(t *testing.T, p *oidc.Provider, nonce, verifier string) string {
	t.Helper()
	u, err := p.AuthURL(t.Context(), "state-1", nonce, verifier)
	if err != nil {
		t.Fatalf("AuthURL: %v", err)
	}
	if !strings.Contains(u, "code_challenge_method=S256") || !strings.Contains(u, "nonce="+nonce) {
		t.Fatalf("authorization URL %s lacks PKCE or the nonce", u)
	}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || resp.StatusCode != http.StatusFound {
		t.Fatalf("authorize: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	if loc.Query().Get("state") != "state-1" || loc.Query().Get("code") == "" {
		t.Fatalf("authorize redirected to %s", loc)
	}
	return loc.Query().Get("code")
}

func TestSignIn(t *testing.T) {
	p, idp := newProvider(t)
	idp.SignInAs(fakeoidc.User{Email: "ada@example.com", EmailVerified: true, Groups: []string{"eng", "devpilot-admins"}})
	verifier := oauth2.GenerateVerifier()
	code := authorize(t, p, "nonce-1", verifier)
	id, err := p.Exchange(t.Context(), code, verifier, "nonce-1")
	if err != nil {
		t.Fatalf("Exchange: %v", err)
	}
	if id.Email != "ada@example.com" || !id.EmailVerified || id.Subject != "sub-ada@example.com" || id.Issuer != idp.Issuer() ||
		strings.Join(id.Groups, ",") != "eng,devpilot-admins" {
		t.Fatalf("identity = %+v", id)
	}
	// The code is single use.
	if _, err := p.Exchange(t.Context(), code, verifier, "nonce-1"); !ports.IsKind(err, ports.KindUnauthenticated) {
		t.Fatalf("second Exchange of one code: %v, want unauthenticated", err)
	}
}

// TestSignInRefused: every ID token or exchange devpilot must not accept is
// unauthenticated, never a signed-in identity.
func TestSignInRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault func(*fakeoidc.Server)
		nonce string // given to Exchange; "" means the one authorized
		wrong string // a verifier other than the authorized one
	}{
		{name: "wrong audience", fault: func(s *fakeoidc.Server) {
			s.NextToken(func(c map[string]any) { c["aud"] = "another-client" })
		}},
		{name: "expired", fault: func(s *fakeoidc.Server) {
			s.NextToken(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Minute).Unix() })
		}},
		{name: "bad nonce in the token", fault: func(s *fakeoidc.Server) {
			s.NextToken(func(c map[string]any) { c["nonce"] = "someone-elses" })
		}},
		{name: "no nonce in the token", fault: func(s *fakeoidc.Server) {
			s.NextToken(func(c map[string]any) { delete(c, "nonce") })
		}},
		{name: "another issuer", fault: func(s *fakeoidc.Server) {
			s.NextToken(func(c map[string]any) { c["iss"] = "https://evil.example" })
		}},
		{name: "foreign signature", fault: func(s *fakeoidc.Server) { s.SignNextWithForeignKey(t) }},
		{name: "nonce of another sign-in", nonce: "nonce-2"},
		{name: "wrong PKCE verifier", wrong: oauth2.GenerateVerifier()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, idp := newProvider(t)
			idp.SignInAs(fakeoidc.User{Email: "ada@example.com", EmailVerified: true})
			verifier := oauth2.GenerateVerifier()
			code := authorize(t, p, "nonce-1", verifier)
			if tc.fault != nil {
				tc.fault(idp)
			}
			nonce := "nonce-1"
			if tc.nonce != "" {
				nonce = tc.nonce
			}
			if tc.wrong != "" {
				verifier = tc.wrong
			}
			id, err := p.Exchange(t.Context(), code, verifier, nonce)
			if !ports.IsKind(err, ports.KindUnauthenticated) {
				t.Fatalf("Exchange = %+v, %v; want unauthenticated", id, err)
			}
		})
	}
}

func TestProviderDown(t *testing.T) {
	p, err := oidc.New(oidc.Config{IssuerURL: "http://127.0.0.1:1", ClientID: clientID, RedirectURL: redirectURI, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := p.AuthURL(ctx, "s", "n", oauth2.GenerateVerifier()); !ports.IsKind(err, ports.KindUpstream) {
		t.Fatalf("AuthURL with the provider down: %v, want upstream", err)
	}
	if _, err := p.Exchange(ctx, "code", "v", "n"); !ports.IsKind(err, ports.KindUpstream) {
		t.Fatalf("Exchange with the provider down: %v, want upstream", err)
	}
}

func TestConfigStringHidesSecret(t *testing.T) {
	s := oidc.Config{ClientID: "c", ClientSecret: "hunter2"}.String()
	if strings.Contains(s, "hunter2") {
		t.Fatalf("Config.String shows the secret: %s", s)
	}
}
