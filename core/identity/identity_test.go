package identity_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/memstore"
	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
)

type env struct {
	svc    *identity.Service
	store  *memstore.Store
	tokens *tokenSpy
	clock  *fixture.Clock
}

// tokenSpy passes the token store on to the memstore, counting what the
// ports cannot tell: the lookups by hash (by the id of the token found, ""
// for none), the touches and the watches. It can fail the lookups, and
// stand in for a store that watches revocations.
type tokenSpy struct {
	ports.TokenStore
	mu      sync.Mutex
	lookups map[string]int
	touches int
	watches int
	fail    error                                             // when set, every GetTokenByHash fails with it
	watch   func(context.Context, func(string), func()) error // when set, WatchRevocations runs it
}

func (s *tokenSpy) GetTokenByHash(ctx context.Context, hash []byte) (ports.APIToken, ports.User, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		s.lookups[""]++
		return ports.APIToken{}, ports.User{}, s.fail
	}
	rec, u, err := s.TokenStore.GetTokenByHash(ctx, hash)
	s.lookups[rec.ID]++
	return rec, u, err
}

func (s *tokenSpy) TouchToken(ctx context.Context, id string, at, notBefore time.Time) error {
	s.mu.Lock()
	s.touches++
	s.mu.Unlock()
	return s.TokenStore.TouchToken(ctx, id, at, notBefore)
}

func (s *tokenSpy) WatchRevocations(ctx context.Context, revoked func(string), lost func()) error {
	s.mu.Lock()
	s.watches++
	watch := s.watch
	s.mu.Unlock()
	if watch != nil {
		return watch(ctx, revoked, lost)
	}
	return s.TokenStore.WatchRevocations(ctx, revoked, lost)
}

// counts returns the lookups of the token id and the touches so far.
func (s *tokenSpy) counts(id string) (lookups, touches int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lookups[id], s.touches
}

func newEnv(t *testing.T) env { return newEnvWith(t, nil) }

// newEnvWith is newEnv with the service's Deps amended by amend. The store
// holds user u1, a member of org o1 (acme).
func newEnvWith(t *testing.T, amend func(*identity.Deps)) env {
	t.Helper()
	store := memstore.New()
	e := env{store: store, tokens: &tokenSpy{TokenStore: store, lookups: map[string]int{}}, clock: fixture.NewClock()}
	err := errors.Join(
		store.CreateOrg(context.Background(), ports.Org{ID: "o1", Name: "acme", CreatedAt: e.clock.Now()}),
		store.CreateUser(context.Background(), ports.User{ID: "u1", OrgID: "o1", Email: "u1@example.com", EmailVerified: true, Role: ports.RoleMember, CreatedAt: e.clock.Now()}))
	if err != nil {
		t.Fatal(err)
	}
	d := identity.Deps{
		Orgs: store, Users: store, Tokens: e.tokens, Tx: store,
		Clock: e.clock, IDs: &fixture.IDs{},
		Random: bytes.NewReader(bytes.Repeat([]byte{0xAB}, 64)),
	}
	if amend != nil {
		amend(&d)
	}
	e.svc = identity.New(d)
	return e
}

// token stores rec as u1's token, hashed from raw.
func (e env) token(t *testing.T, raw string, rec ports.APIToken) {
	t.Helper()
	hash := sha256.Sum256([]byte(raw))
	rec.UserID, rec.OrgID, rec.Hash, rec.Prefix, rec.CreatedAt = "u1", "o1", hash[:], raw[:9], e.clock.Now().Add(-48*time.Hour)
	if err := e.store.CreateToken(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
}

// storedTokens returns every stored token.
func (e env) storedTokens(t *testing.T) []ports.APIToken {
	t.Helper()
	recs, err := e.store.ListTokens(context.Background(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func TestIssueTokenCreatesOrgUserAndHashedToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	got, err := e.svc.IssueToken(context.Background(), identity.IssueTokenInput{
		Email: "Ada@Example.com", OrgName: " Initech ", Role: ports.RoleAdmin, TTL: time.Hour,
	})
	if err != nil {
		t.Fatalf("IssueToken: %v", err)
	}
	org, err := e.store.GetOrgByName(context.Background(), "Initech")
	if err != nil || org != got.Org {
		t.Fatalf("stored org %+v, %v; issued %+v", org, err, got.Org)
	}
	user, err := e.store.GetVerifiedUserByEmail(context.Background(), "ada@example.com")
	if err != nil || user != got.User || user.OrgID != org.ID {
		t.Fatalf("stored user %+v, %v; issued %+v", user, err, got.User)
	}
	recs, err := e.store.ListTokens(context.Background(), org.ID, user.ID)
	if err != nil || len(recs) != 1 {
		t.Fatalf("stored tokens %+v, %v", recs, err)
	}
	stored := recs[0]
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
	if got.User.Role != ports.RoleAdmin || got.User.Email != "ada@example.com" || got.Org.Name != "Initech" {
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
			e := newEnv(t)
			_, err := e.svc.IssueToken(context.Background(), tt.in)
			pe, ok := ports.AsError(err)
			if !ok || pe.Kind != ports.KindInvalid || len(pe.Fields) == 0 || pe.Fields[0].Field != tt.field {
				t.Fatalf("err = %#v, want invalid on field %s", err, tt.field)
			}
			if _, err := e.store.GetVerifiedUserByEmail(context.Background(), "ada@example.com"); !errors.Is(err, ports.ErrNotFound) || len(e.storedTokens(t)) != 0 {
				t.Errorf("stored a user (%v) or tokens %+v", err, e.storedTokens(t))
			}
		})
	}
}

func TestIssueTokenRefusesUserOfAnotherOrg(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	err := errors.Join(
		e.store.CreateOrg(context.Background(), ports.Org{ID: "o2", Name: "other"}),
		e.store.CreateUser(context.Background(), ports.User{ID: "u2", OrgID: "o2", Email: "ada@example.com", EmailVerified: true, Role: ports.RoleMember}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.IssueToken(context.Background(), identity.IssueTokenInput{Email: "ada@example.com", OrgName: "acme"})
	if !errors.Is(err, ports.ErrConflict) {
		t.Fatalf("err = %v, want conflict", err)
	}
	if recs := e.storedTokens(t); len(recs) != 0 {
		t.Errorf("stored %+v", recs)
	}
}

func TestAuthenticate(t *testing.T) {
	t.Parallel()
	const token = "dp_0000000000000000000000000000000000000000abc"
	past := fixture.Epoch.Add(-time.Hour)
	recent := fixture.Epoch.Add(-time.Second)

	tests := []struct {
		name    string
		token   string
		rec     ports.APIToken // stored when it has an id
		fail    error          // the lookup's, when set
		touch   bool
		wantErr error
	}{
		{name: "valid, touched", token: token, rec: ports.APIToken{ID: "t1"}, touch: true},
		{name: "valid, used recently: no write", token: token, rec: ports.APIToken{ID: "t1", LastUsedAt: &recent}},
		{name: "malformed", token: "dp_short", rec: ports.APIToken{ID: "t1"}, wantErr: ports.ErrUnauthenticated},
		{name: "wrong prefix", token: "xx" + token[2:], rec: ports.APIToken{ID: "t1"}, wantErr: ports.ErrUnauthenticated},
		{name: "unknown", token: token, wantErr: ports.ErrUnauthenticated},
		{name: "revoked", token: token, rec: ports.APIToken{ID: "t1", RevokedAt: &past}, wantErr: ports.ErrUnauthenticated},
		{name: "expired", token: token, rec: ports.APIToken{ID: "t1", ExpiresAt: &past}, wantErr: ports.ErrUnauthenticated},
		{name: "store down", token: token, rec: ports.APIToken{ID: "t1"}, fail: errors.New("db down"), wantErr: errors.New("db down")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			if tt.rec.ID != "" {
				e.token(t, token, tt.rec)
			}
			e.tokens.fail = tt.fail
			p, err := e.svc.Authenticate(context.Background(), tt.token)
			e.tokens.mu.Lock()
			lookups, touches := 0, e.tokens.touches
			for _, n := range e.tokens.lookups {
				lookups += n
			}
			e.tokens.mu.Unlock()
			if wellFormed := strings.HasPrefix(tt.token, "dp_") && len(tt.token) == len(token); lookups != map[bool]int{true: 1}[wellFormed] {
				t.Errorf("%d lookups", lookups)
			}
			if want := map[bool]int{true: 1}[tt.touch]; touches != want {
				t.Errorf("%d touches, want %d", touches, want)
			}
			if tt.touch {
				if rec, err := e.store.GetToken(context.Background(), "t1"); err != nil || rec.LastUsedAt == nil || !rec.LastUsedAt.Equal(e.clock.Now()) {
					t.Errorf("last used at %v (%v), want now", rec.LastUsedAt, err)
				}
			}
			switch {
			case tt.wantErr == nil && err != nil:
				t.Fatalf("Authenticate: %v", err)
			case tt.wantErr == nil:
				if want := (ports.Principal{UserID: "u1", OrgID: "o1", Role: ports.RoleMember, TokenID: "t1", Scopes: ports.DefaultScopes}); !reflect.DeepEqual(p, want) {
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
	want := ports.Principal{UserID: "u1", OrgID: "o1", Role: ports.RoleMember, TokenID: "t1", Scopes: ports.DefaultScopes}
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
		case wantErr == nil && !reflect.DeepEqual(p, want):
			t.Fatalf("principal = %+v", p)
		}
	}
	// counts checks the lookups of id and the touches so far.
	counts := func(t *testing.T, e env, id string, lookups, touches int) {
		t.Helper()
		if l, n := e.tokens.counts(id); l != lookups || n != touches {
			t.Fatalf("%d lookups, %d touches; want %d, %d", l, n, lookups, touches)
		}
	}

	t.Run("hits until the deadline", func(t *testing.T) {
		t.Parallel()
		e := cached(t, 5*time.Second)
		e.token(t, token, ports.APIToken{ID: "t1"})
		auth(t, e, nil)
		counts(t, e, "t1", 1, 1)
		e.clock.Advance(4 * time.Second)
		auth(t, e, nil)
		counts(t, e, "t1", 1, 1)
		e.clock.Advance(time.Second)
		auth(t, e, nil) // read again; used five seconds ago, so not touched
		counts(t, e, "t1", 2, 1)
	})
	t.Run("never past the token's expiry", func(t *testing.T) {
		t.Parallel()
		e := cached(t, time.Minute)
		expires := e.clock.Now().Add(2 * time.Second)
		e.token(t, token, ports.APIToken{ID: "t1", ExpiresAt: &expires})
		auth(t, e, nil)
		e.clock.Advance(2 * time.Second)
		auth(t, e, ports.ErrUnauthenticated)
		counts(t, e, "t1", 2, 1)
	})
	t.Run("revoked through the service: forgotten at once", func(t *testing.T) {
		t.Parallel()
		e := cached(t, time.Minute)
		e.token(t, token, ports.APIToken{ID: "t1"})
		auth(t, e, nil)
		if err := e.svc.RevokeToken(context.Background(), "t1"); err != nil {
			t.Fatal(err)
		}
		auth(t, e, ports.ErrUnauthenticated)
		counts(t, e, "t1", 2, 1)
	})
	t.Run("failures are not kept", func(t *testing.T) {
		t.Parallel()
		e := cached(t, time.Minute)
		auth(t, e, ports.ErrUnauthenticated)
		auth(t, e, ports.ErrUnauthenticated)
		counts(t, e, "", 2, 0)
	})
	t.Run("last use still recorded every minute", func(t *testing.T) {
		t.Parallel()
		e := cached(t, time.Hour)
		e.token(t, token, ports.APIToken{ID: "t1"})
		auth(t, e, nil)
		e.clock.Advance(59 * time.Second)
		auth(t, e, nil)
		counts(t, e, "t1", 1, 1)
		e.clock.Advance(time.Second)
		auth(t, e, nil)
		auth(t, e, nil)
		counts(t, e, "t1", 1, 2)
	})
	t.Run("off", func(t *testing.T) {
		t.Parallel()
		e := cached(t, 0)
		recent := e.clock.Now()
		e.token(t, token, ports.APIToken{ID: "t1", LastUsedAt: &recent})
		auth(t, e, nil)
		auth(t, e, nil)
		counts(t, e, "t1", 2, 0)
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
	for id, tok := range tokens {
		e.token(t, tok, ports.APIToken{ID: id, LastUsedAt: &recent})
	}
	lookups := func() map[string]int {
		e.tokens.mu.Lock()
		defer e.tokens.mu.Unlock()
		return maps.Clone(e.tokens.lookups)
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
	e.tokens.watch = func(ctx context.Context, r func(string), l func()) error {
		revoked, lost = r, l
		close(watching)
		<-ctx.Done()
		return ctx.Err()
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- e.svc.WatchRevocations(ctx) }()
	<-watching

	authAll()
	authAll()
	if l := lookups(); l["t1"] != 1 || l["t2"] != 1 {
		t.Fatalf("lookups %v, want one each (then cached)", l)
	}
	revoked("t1")
	authAll()
	if l := lookups(); l["t1"] != 2 || l["t2"] != 1 {
		t.Fatalf("lookups %v after t1 was revoked elsewhere, want t1 read again only", l)
	}
	lost()
	authAll()
	if l := lookups(); l["t1"] != 3 || l["t2"] != 2 {
		t.Fatalf("lookups %v after the watch lost revocations, want both read again", l)
	}
	cancel()
	if err := <-stopped; !errors.Is(err, context.Canceled) {
		t.Fatalf("WatchRevocations = %v, want the context's error", err)
	}

	t.Run("unsupported", func(t *testing.T) {
		e := newEnvWith(t, func(d *identity.Deps) { d.CacheFor = time.Hour }) // memstore cannot watch
		if err := e.svc.WatchRevocations(context.Background()); err != nil {
			t.Fatalf("WatchRevocations on a store that cannot watch = %v, want nil", err)
		}
	})
	t.Run("no cache", func(t *testing.T) {
		e := newEnv(t)
		if err := e.svc.WatchRevocations(context.Background()); err != nil {
			t.Fatalf("WatchRevocations without a cache = %v, want nil", err)
		}
		if e.tokens.watches != 0 {
			t.Error("the store was asked to watch")
		}
	})
}

func TestMeNeedsPrincipal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if _, err := e.svc.Me(context.Background()); !errors.Is(err, ports.ErrUnauthenticated) {
		t.Fatalf("Me without principal: %v, want unauthenticated", err)
	}
	ctx := ports.WithPrincipal(context.Background(), ports.Principal{UserID: "u1", OrgID: "o1"})
	me, err := e.svc.Me(ctx)
	if err != nil || me.Org.Name != "acme" {
		t.Fatalf("Me = %+v, %v", me, err)
	}
}

func TestRevokeAndPrune(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	now := e.clock.Now()
	month, longAgo, lately := now.Add(-30*24*time.Hour), now.Add(-31*24*time.Hour), now.Add(-29*24*time.Hour)
	const raw = "dp_0000000000000000000000000000000000000000ab"
	e.token(t, raw+"1", ports.APIToken{ID: "t1"})
	e.token(t, raw+"2", ports.APIToken{ID: "gone-revoked", RevokedAt: &longAgo})
	e.token(t, raw+"3", ports.APIToken{ID: "gone-expired", ExpiresAt: &longAgo})
	e.token(t, raw+"4", ports.APIToken{ID: "gone-both", ExpiresAt: &longAgo, RevokedAt: &longAgo})
	e.token(t, raw+"5", ports.APIToken{ID: "kept-expired", ExpiresAt: &lately})
	e.token(t, raw+"6", ports.APIToken{ID: "kept-revoked", RevokedAt: &month})
	if err := e.svc.RevokeToken(context.Background(), "t1"); err != nil {
		t.Fatalf("RevokeToken: %v", err)
	}
	if rec, err := e.store.GetToken(context.Background(), "t1"); err != nil || rec.RevokedAt == nil || !rec.RevokedAt.Equal(now) {
		t.Errorf("revoked at %v, %v", rec.RevokedAt, err)
	}
	if n, err := e.svc.PruneTokens(context.Background()); n != 3 || err != nil {
		t.Fatalf("PruneTokens = %d, %v", n, err)
	}
	var kept []string
	for _, rec := range e.storedTokens(t) {
		kept = append(kept, rec.ID)
	}
	if slices.Sort(kept); !slices.Equal(kept, []string{"kept-expired", "kept-revoked", "t1"}) {
		t.Errorf("kept %v", kept)
	}
}
