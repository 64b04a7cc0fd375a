package identity_test

import (
	"context"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/mocks"
)

// newSignInEnv is newEnv whose Service signs in through a mock provider
// that answers every exchange with who, under the given policy.
func newSignInEnv(t *testing.T, pol identity.SignInPolicy, who ports.ExternalIdentity) env {
	t.Helper()
	idp := mocks.NewMockSignInProvider(gomock.NewController(t))
	idp.EXPECT().Exchange(gomock.Any(), "code", "verifier", "nonce").Return(who, nil).AnyTimes()
	return newEnvWith(t, func(d *identity.Deps) {
		d.SignIn, d.SignInPolicy = idp, pol
		d.Random = nil                      // crypto/rand: some tests sign in many times
		d.Audit = d.Orgs.(ports.AuditStore) // the memstore
		d.Links = d.Orgs.(ports.IdentityLinkStore)
	})
}

func TestSignInPolicy(t *testing.T) {
	t.Parallel()
	pol := identity.SignInPolicy{Org: "acme", Domains: []string{"Example.org"}, Groups: []string{"eng"}, AdminGroups: []string{"ops"}}
	for _, tc := range []struct {
		name     string
		who      ports.ExternalIdentity
		wantRole ports.Role
		wantKind ports.Kind // "" for a sign-in
	}{
		{"known user signs in as themselves", ports.ExternalIdentity{Email: "U1@example.com", EmailVerified: true, Groups: []string{"ops"}}, ports.RoleMember, ""},
		{"allowed domain joins as member", ports.ExternalIdentity{Email: "ada@example.ORG", EmailVerified: true}, ports.RoleMember, ""},
		{"allowed group joins as member", ports.ExternalIdentity{Email: "bob@elsewhere.net", EmailVerified: true, Groups: []string{"x", "eng"}}, ports.RoleMember, ""},
		{"admin group joins as admin", ports.ExternalIdentity{Email: "cy@elsewhere.net", EmailVerified: true, Groups: []string{"ops"}}, ports.RoleAdmin, ""},
		{"other domain refused", ports.ExternalIdentity{Email: "eve@example.org.evil.net", EmailVerified: true}, "", ports.KindForbidden},
		{"unverified email refused", ports.ExternalIdentity{Email: "u1@example.com"}, "", ports.KindForbidden},
		{"no email refused", ports.ExternalIdentity{EmailVerified: true, Groups: []string{"ops"}}, "", ports.KindForbidden},
		{"hostile email refused", ports.ExternalIdentity{Email: "a\x00b@example.org", EmailVerified: true}, "", ports.KindForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newSignInEnv(t, pol, tc.who)
			got, err := e.svc.CompleteSignIn(t.Context(), "code", "verifier", "nonce")
			if tc.wantKind != "" {
				if !ports.IsKind(err, tc.wantKind) {
					t.Fatalf("CompleteSignIn = %+v, %v; want %s", got.User, err, tc.wantKind)
				}
				if recs := e.storedTokens(t); len(recs) != 0 {
					t.Fatalf("a refused sign-in stored %d tokens", len(recs))
				}
				return
			}
			if err != nil {
				t.Fatalf("CompleteSignIn: %v", err)
			}
			if got.User.Role != tc.wantRole || got.Org.Name != "acme" || !got.Session.IsSession() {
				t.Fatalf("signed in as %+v in %+v with %+v", got.User, got.Org, got.Session)
			}
			if exp := got.Session.ExpiresAt; exp == nil || !exp.Equal(e.clock.Now().Add(identity.DefaultSessionTTL)) {
				t.Fatalf("session expires at %v", exp)
			}
			p, err := e.svc.Authenticate(t.Context(), got.Secret)
			if err != nil || !p.Session || p.UserID != got.User.ID || p.Role != tc.wantRole {
				t.Fatalf("Authenticate(session) = %+v, %v", p, err)
			}
		})
	}
}

// TestSignInRemovedUser: a removed member cannot come back through the
// identity provider, even from an allowed domain.
func TestSignInRemovedUser(t *testing.T) {
	t.Parallel()
	e := newSignInEnv(t, identity.SignInPolicy{Org: "acme", Domains: []string{"example.com"}},
		ports.ExternalIdentity{Email: "u1@example.com", EmailVerified: true})
	if err := e.store.RemoveUser(t.Context(), "o1", "u1", e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.CompleteSignIn(t.Context(), "code", "verifier", "nonce"); !ports.IsKind(err, ports.KindForbidden) {
		t.Fatalf("removed user signing in: %v, want forbidden", err)
	}
}

func TestSignOut(t *testing.T) {
	t.Parallel()
	e := newSignInEnv(t, identity.SignInPolicy{}, ports.ExternalIdentity{Email: "u1@example.com", EmailVerified: true})
	in, err := e.svc.CompleteSignIn(t.Context(), "code", "verifier", "nonce")
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.svc.Authenticate(t.Context(), in.Secret)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ports.WithPrincipal(t.Context(), p)
	if err := e.svc.SignOut(ctx); err != nil {
		t.Fatalf("SignOut: %v", err)
	}
	if _, err := e.svc.Authenticate(t.Context(), in.Secret); !ports.IsKind(err, ports.KindUnauthenticated) {
		t.Fatalf("Authenticate after sign-out: %v", err)
	}
	if err := e.svc.SignOut(ctx); err != nil {
		t.Fatalf("second SignOut: %v", err)
	}
	entries, _, err := e.store.ListAudit(t.Context(), "o1", "", ports.Page{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, a := range entries {
		actions = append(actions, a.Action)
	}
	if len(actions) != 2 || actions[0] != identity.AuditSignOut || actions[1] != identity.AuditSignIn {
		t.Fatalf("audit = %v", actions)
	}
	// An API token does not sign out.
	api := ports.WithPrincipal(t.Context(), ports.Principal{UserID: "u1", OrgID: "o1", Role: ports.RoleMember, TokenID: "t"})
	if err := e.svc.SignOut(api); !ports.IsKind(err, ports.KindInvalid) {
		t.Fatalf("SignOut with an API token: %v", err)
	}
}

// TestSessionsDoNotCountAsTokens: console sessions are listed with the
// caller's tokens (to be revoked alike) but do not count against
// MaxOwnTokens.
func TestSessionsDoNotCountAsTokens(t *testing.T) {
	t.Parallel()
	e := newSignInEnv(t, identity.SignInPolicy{}, ports.ExternalIdentity{Email: "u1@example.com", EmailVerified: true})
	var p ports.Principal
	for range identity.MaxOwnTokens + 1 {
		in, err := e.svc.CompleteSignIn(t.Context(), "code", "verifier", "nonce")
		if err != nil {
			t.Fatal(err)
		}
		p = ports.Principal{UserID: in.User.ID, OrgID: in.User.OrgID, Role: in.User.Role}
	}
	if _, err := e.svc.CreateOwnToken(ports.WithPrincipal(t.Context(), p), "ci", 24*time.Hour, nil); err != nil {
		t.Fatalf("CreateOwnToken beside %d sessions: %v", identity.MaxOwnTokens+1, err)
	}
}

func TestSignInNotConfigured(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if e.svc.SignInEnabled() {
		t.Fatal("SignInEnabled without a provider")
	}
	if _, err := e.svc.SignInURL(context.Background(), "s", "n", "v"); !ports.IsKind(err, ports.KindNotFound) {
		t.Fatalf("SignInURL: %v", err)
	}
	if _, err := e.svc.CompleteSignIn(context.Background(), "c", "v", "n"); !ports.IsKind(err, ports.KindNotFound) {
		t.Fatalf("CompleteSignIn: %v", err)
	}
}
