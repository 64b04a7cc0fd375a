package identity_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
	"github.com/devpilot/devpilot/testkit/mocks"
)

type env struct {
	svc    *identity.Service
	orgs   *mocks.MockOrgStore
	users  *mocks.MockUserStore
	tokens *mocks.MockTokenStore
	clock  *fixture.Clock
}

func newEnv(t *testing.T) env { return newEnvWith(t, nil) }

// newEnvWith is newEnv with the service's Deps amended by amend.
func newEnvWith(t *testing.T, amend func(*identity.Deps)) env {
	t.Helper()
	ctrl := gomock.NewController(t)
	e := env{
		orgs:   mocks.NewMockOrgStore(ctrl),
		users:  mocks.NewMockUserStore(ctrl),
		tokens: mocks.NewMockTokenStore(ctrl),
		clock:  fixture.NewClock(),
	}
	tx := mocks.NewMockTransactor(ctrl)
	tx.EXPECT().WithinTx(gomock.Any(), gomock.Any()).DoAndReturn(
		func(ctx context.Context, fn func(context.Context) error) error { return fn(ctx) }).AnyTimes()
	d := identity.Deps{
		Orgs: e.orgs, Users: e.users, Tokens: e.tokens, Tx: tx,
		Clock: e.clock, IDs: &fixture.IDs{},
		Random: bytes.NewReader(bytes.Repeat([]byte{0xAB}, 64)),
	}
	if amend != nil {
		amend(&d)
	}
	e.svc = identity.New(d)
	return e
}

func TestIssueTokenCreatesOrgUserAndHashedToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.orgs.EXPECT().GetOrgByName(gomock.Any(), "acme").Return(ports.Org{}, ports.NotFound("org", "acme"))
	e.orgs.EXPECT().CreateOrg(gomock.Any(), gomock.Any()).Return(nil)
	e.users.EXPECT().GetUserByEmail(gomock.Any(), "ada@example.com").Return(ports.User{}, ports.NotFound("user", "ada"))
	e.users.EXPECT().CreateUser(gomock.Any(), gomock.Any()).Return(nil)
	var stored ports.APIToken
	e.tokens.EXPECT().CreateToken(gomock.Any(), gomock.Any()).DoAndReturn(func(_ context.Context, tok ports.APIToken) error {
		stored = tok
		return nil
	})

	got, err := e.svc.IssueToken(context.Background(), identity.IssueTokenInput{
		Email: "Ada@Example.com", OrgName: " acme ", Role: ports.RoleAdmin, TTL: time.Hour,
	})
	if err != nil {
		t.Fatalf("IssueToken: %v", err)
	}
	if !strings.HasPrefix(got.Token, "dp_") || len(got.Token) != 46 {
		t.Errorf("token %q: want dp_ and 43 base62 digits", got.Token)
	}
	sum := sha256.Sum256([]byte(got.Token))
	if !bytes.Equal(stored.Hash, sum[:]) {
		t.Error("stored hash is not the SHA-256 of the token")
	}
	if strings.Contains(string(stored.Hash), got.Token) || stored.Prefix != got.Token[:9] {
		t.Errorf("stored prefix %q, want %q", stored.Prefix, got.Token[:9])
	}
	if got.User.Role != ports.RoleAdmin || got.User.Email != "ada@example.com" || got.Org.Name != "acme" {
		t.Errorf("user %+v org %+v", got.User, got.Org)
	}
	if want := e.clock.Now().Add(time.Hour); stored.ExpiresAt == nil || !stored.ExpiresAt.Equal(want) {
		t.Errorf("expires_at = %v, want %v", stored.ExpiresAt, want)
	}
}

func TestIssueTokenRejectsBadInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		in    identity.IssueTokenInput
		field string
	}{
		{"bad email", identity.IssueTokenInput{Email: "not-an-email", OrgName: "acme"}, "email"},
		{"display name email", identity.IssueTokenInput{Email: "Ada <ada@example.com>", OrgName: "acme"}, "email"},
		{"no org", identity.IssueTokenInput{Email: "ada@example.com", OrgName: "  "}, "org"},
		{"bad role", identity.IssueTokenInput{Email: "ada@example.com", OrgName: "acme", Role: "owner"}, "role"},
		{"negative ttl", identity.IssueTokenInput{Email: "ada@example.com", OrgName: "acme", TTL: -time.Second}, "ttl"},
		{"control character in the org", identity.IssueTokenInput{Email: "ada@example.com", OrgName: "ac\x1bme"}, "org"},
		{"bidi override in the token name", identity.IssueTokenInput{Email: "ada@example.com", OrgName: "acme", Name: "ci\u202eimda"}, "name"},
		{"invalid UTF-8 in the token name", identity.IssueTokenInput{Email: "ada@example.com", OrgName: "acme", Name: "ci\xff"}, "name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := newEnv(t).svc.IssueToken(context.Background(), tt.in)
			e, ok := ports.AsError(err)
			if !ok || e.Kind != ports.KindInvalid || len(e.Fields) == 0 || e.Fields[0].Field != tt.field {
				t.Fatalf("err = %#v, want invalid on field %s", err, tt.field)
			}
		})
	}
}

func TestIssueTokenRefusesUserOfAnotherOrg(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.orgs.EXPECT().GetOrgByName(gomock.Any(), "acme").Return(ports.Org{ID: "org-1", Name: "acme"}, nil)
	e.users.EXPECT().GetUserByEmail(gomock.Any(), "ada@example.com").Return(ports.User{ID: "u", OrgID: "org-2"}, nil)
	_, err := e.svc.IssueToken(context.Background(), identity.IssueTokenInput{Email: "ada@example.com", OrgName: "acme"})
	if !errors.Is(err, ports.ErrConflict) {
		t.Fatalf("err = %v, want conflict", err)
	}
}

func TestAuthenticate(t *testing.T) {
	t.Parallel()
	const token = "dp_0000000000000000000000000000000000000000abc"
	hash := sha256.Sum256([]byte(token))
	user := ports.User{ID: "u1", OrgID: "o1", Role: ports.RoleMember}
	past := fixture.Epoch.Add(-time.Hour)
	recent := fixture.Epoch.Add(-time.Second)

	tests := []struct {
		name      string
		token     string
		rec       ports.APIToken
		lookupErr error
		touch     bool
		wantErr   error
	}{
		{name: "valid, touched", token: token, rec: ports.APIToken{ID: "t1", UserID: "u1"}, touch: true},
		{name: "valid, used recently: no write", token: token, rec: ports.APIToken{ID: "t1", UserID: "u1", LastUsedAt: &recent}},
		{name: "malformed", token: "dp_short", wantErr: ports.ErrUnauthenticated},
		{name: "wrong prefix", token: "xx" + token[2:], wantErr: ports.ErrUnauthenticated},
		{name: "unknown", token: token, lookupErr: ports.NotFound("token", "x"), wantErr: ports.ErrUnauthenticated},
		{name: "revoked", token: token, rec: ports.APIToken{ID: "t1", UserID: "u1", RevokedAt: &past}, wantErr: ports.ErrUnauthenticated},
		{name: "expired", token: token, rec: ports.APIToken{ID: "t1", UserID: "u1", ExpiresAt: &past}, wantErr: ports.ErrUnauthenticated},
		{name: "store down", token: token, lookupErr: errors.New("db down"), wantErr: errors.New("db down")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			if strings.HasPrefix(tt.token, "dp_") && len(tt.token) == len(token) {
				var u ports.User
				if tt.lookupErr == nil {
					u = user
				}
				e.tokens.EXPECT().GetTokenByHash(gomock.Any(), hash[:]).Return(tt.rec, u, tt.lookupErr)
			}
			if tt.touch {
				now := e.clock.Now()
				e.tokens.EXPECT().TouchToken(gomock.Any(), "t1", now, now.Add(-time.Minute)).Return(nil)
			}
			p, err := e.svc.Authenticate(context.Background(), tt.token)
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("Authenticate: %v", err)
			case tt.wantErr == nil:
				if p != (ports.Principal{UserID: "u1", OrgID: "o1", Role: ports.RoleMember, TokenID: "t1"}) {
					t.Fatalf("principal = %+v", p)
				}
			case errors.Is(tt.wantErr, ports.ErrUnauthenticated) && !errors.Is(err, ports.ErrUnauthenticated):
				t.Fatalf("err = %v, want unauthenticated", err)
			case err == nil:
				t.Fatalf("err = nil, want %v", tt.wantErr)
			}
		})
	}
}

// With CacheFor, a verified token is not read again for that long (nor past
// its expiry); failures are never kept; a revocation through the service is
// seen at once; last_used_at is still recorded every TouchEvery.
func TestAuthenticateCache(t *testing.T) {
	t.Parallel()
	const token = "dp_0000000000000000000000000000000000000000abc"
	hash := sha256.Sum256([]byte(token))
	user := ports.User{ID: "u1", OrgID: "o1", Role: ports.RoleMember}
	want := ports.Principal{UserID: "u1", OrgID: "o1", Role: ports.RoleMember, TokenID: "t1"}
	cached := func(t *testing.T, cacheFor time.Duration) env {
		return newEnvWith(t, func(d *identity.Deps) { d.CacheFor = cacheFor })
	}
	auth := func(t *testing.T, e env, wantErr error) {
		t.Helper()
		p, err := e.svc.Authenticate(context.Background(), token)
		switch {
		case wantErr != nil && !errors.Is(err, wantErr):
			t.Fatalf("Authenticate: %v, want %v", err, wantErr)
		case wantErr == nil && err != nil:
			t.Fatalf("Authenticate: %v", err)
		case wantErr == nil && p != want:
			t.Fatalf("principal = %+v", p)
		}
	}
	lookup := func(e env, rec ports.APIToken, err error) *mocks.MockTokenStoreGetTokenByHashCall {
		return e.tokens.EXPECT().GetTokenByHash(gomock.Any(), hash[:]).Return(rec, user, err)
	}
	touch := func(e env) *mocks.MockTokenStoreTouchTokenCall {
		now := e.clock.Now()
		return e.tokens.EXPECT().TouchToken(gomock.Any(), "t1", now, now.Add(-time.Minute)).Return(nil)
	}

	t.Run("hits until the deadline", func(t *testing.T) {
		t.Parallel()
		e := cached(t, 5*time.Second)
		lookup(e, ports.APIToken{ID: "t1"}, nil).Times(1)
		touch(e)
		auth(t, e, nil)
		e.clock.Advance(4 * time.Second)
		auth(t, e, nil) // no read: gomock fails a second GetTokenByHash
		e.clock.Advance(time.Second)
		recent := e.clock.Now()
		lookup(e, ports.APIToken{ID: "t1", LastUsedAt: &recent}, nil).Times(1)
		auth(t, e, nil)
	})
	t.Run("never past the token's expiry", func(t *testing.T) {
		t.Parallel()
		e := cached(t, time.Minute)
		expires := e.clock.Now().Add(2 * time.Second)
		lookup(e, ports.APIToken{ID: "t1", ExpiresAt: &expires}, nil).Times(2)
		touch(e)
		auth(t, e, nil)
		e.clock.Advance(2 * time.Second)
		auth(t, e, ports.ErrUnauthenticated)
	})
	t.Run("revoked through the service: forgotten at once", func(t *testing.T) {
		t.Parallel()
		e := cached(t, time.Minute)
		lookup(e, ports.APIToken{ID: "t1"}, nil)
		touch(e)
		auth(t, e, nil)
		e.tokens.EXPECT().GetToken(gomock.Any(), "t1").Return(ports.APIToken{ID: "t1", OrgID: "o1"}, nil)
		e.tokens.EXPECT().RevokeToken(gomock.Any(), "o1", "t1", e.clock.Now()).Return(nil)
		if err := e.svc.RevokeToken(context.Background(), "t1"); err != nil {
			t.Fatal(err)
		}
		revoked := e.clock.Now()
		lookup(e, ports.APIToken{ID: "t1", RevokedAt: &revoked}, nil)
		auth(t, e, ports.ErrUnauthenticated)
	})
	t.Run("failures are not kept", func(t *testing.T) {
		t.Parallel()
		e := cached(t, time.Minute)
		lookup(e, ports.APIToken{}, ports.NotFound("token", "x")).Times(2)
		auth(t, e, ports.ErrUnauthenticated)
		auth(t, e, ports.ErrUnauthenticated)
	})
	t.Run("last use still recorded every minute", func(t *testing.T) {
		t.Parallel()
		e := cached(t, time.Hour)
		lookup(e, ports.APIToken{ID: "t1"}, nil).Times(1)
		touch(e)
		auth(t, e, nil)
		e.clock.Advance(59 * time.Second)
		auth(t, e, nil)
		e.clock.Advance(time.Second)
		touch(e)
		auth(t, e, nil)
		auth(t, e, nil)
	})
	t.Run("off", func(t *testing.T) {
		t.Parallel()
		e := cached(t, 0)
		recent := e.clock.Now()
		lookup(e, ports.APIToken{ID: "t1", LastUsedAt: &recent}, nil).Times(2)
		auth(t, e, nil)
		auth(t, e, nil)
	})
}

// WatchRevocations drops a token from the cache when the store reports it
// revoked, and the whole cache when the store may have missed some; a store
// that cannot watch leaves the TTL to bound the cache.
func TestWatchRevocations(t *testing.T) {
	t.Parallel()
	tokens := map[string]string{ // id → token
		"t1": "dp_0000000000000000000000000000000000000000ab1",
		"t2": "dp_0000000000000000000000000000000000000000ab2",
	}
	e := newEnvWith(t, func(d *identity.Deps) { d.CacheFor = time.Hour })
	recent := e.clock.Now()
	lookups := map[string]int{}
	for id, tok := range tokens {
		hash := sha256.Sum256([]byte(tok))
		e.tokens.EXPECT().GetTokenByHash(gomock.Any(), hash[:]).AnyTimes().DoAndReturn(
			func(context.Context, []byte) (ports.APIToken, ports.User, error) {
				lookups[id]++
				return ports.APIToken{ID: id, LastUsedAt: &recent}, ports.User{ID: "u1", OrgID: "o1"}, nil
			})
	}
	authAll := func() {
		t.Helper()
		for _, id := range []string{"t1", "t2"} {
			if _, err := e.svc.Authenticate(context.Background(), tokens[id]); err != nil {
				t.Fatalf("Authenticate %s: %v", id, err)
			}
		}
	}
	var revoked func(string)
	var lost func()
	watching := make(chan struct{})
	e.tokens.EXPECT().WatchRevocations(gomock.Any(), gomock.Any(), gomock.Any()).DoAndReturn(
		func(ctx context.Context, r func(string), l func()) error {
			revoked, lost = r, l
			close(watching)
			<-ctx.Done()
			return ctx.Err()
		})
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- e.svc.WatchRevocations(ctx) }()
	<-watching

	authAll()
	authAll()
	if lookups["t1"] != 1 || lookups["t2"] != 1 {
		t.Fatalf("lookups %v, want one each (then cached)", lookups)
	}
	revoked("t1")
	authAll()
	if lookups["t1"] != 2 || lookups["t2"] != 1 {
		t.Fatalf("lookups %v after t1 was revoked elsewhere, want t1 read again only", lookups)
	}
	lost()
	authAll()
	if lookups["t1"] != 3 || lookups["t2"] != 2 {
		t.Fatalf("lookups %v after the watch lost revocations, want both read again", lookups)
	}
	cancel()
	if err := <-stopped; !errors.Is(err, context.Canceled) {
		t.Fatalf("WatchRevocations = %v, want the context's error", err)
	}

	t.Run("unsupported", func(t *testing.T) {
		e := newEnvWith(t, func(d *identity.Deps) { d.CacheFor = time.Hour })
		e.tokens.EXPECT().WatchRevocations(gomock.Any(), gomock.Any(), gomock.Any()).Return(errors.ErrUnsupported)
		if err := e.svc.WatchRevocations(context.Background()); err != nil {
			t.Fatalf("WatchRevocations on a store that cannot watch = %v, want nil", err)
		}
	})
	t.Run("no cache", func(t *testing.T) {
		e := newEnv(t) // gomock fails a call to the store's WatchRevocations
		if err := e.svc.WatchRevocations(context.Background()); err != nil {
			t.Fatalf("WatchRevocations without a cache = %v, want nil", err)
		}
	})
}

func TestMeNeedsPrincipal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if _, err := e.svc.Me(context.Background()); !errors.Is(err, ports.ErrUnauthenticated) {
		t.Fatalf("Me without principal: %v, want unauthenticated", err)
	}
	e.users.EXPECT().GetUser(gomock.Any(), "u1").Return(ports.User{ID: "u1", OrgID: "o1"}, nil)
	e.orgs.EXPECT().GetOrg(gomock.Any(), "o1").Return(ports.Org{ID: "o1", Name: "acme"}, nil)
	ctx := ports.WithPrincipal(context.Background(), ports.Principal{UserID: "u1", OrgID: "o1"})
	me, err := e.svc.Me(ctx)
	if err != nil || me.Org.Name != "acme" {
		t.Fatalf("Me = %+v, %v", me, err)
	}
}

func TestRevokeAndPrune(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.tokens.EXPECT().GetToken(gomock.Any(), "t1").Return(ports.APIToken{ID: "t1", OrgID: "o1"}, nil)
	e.tokens.EXPECT().RevokeToken(gomock.Any(), "o1", "t1", e.clock.Now()).Return(nil)
	if err := e.svc.RevokeToken(context.Background(), "t1"); err != nil {
		t.Fatalf("RevokeToken: %v", err)
	}
	e.tokens.EXPECT().DeleteExpiredTokens(gomock.Any(), e.clock.Now().Add(-30*24*time.Hour)).Return(3, nil)
	if n, err := e.svc.PruneTokens(context.Background()); n != 3 || err != nil {
		t.Fatalf("PruneTokens = %d, %v", n, err)
	}
}
