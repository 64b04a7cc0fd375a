package scm_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/core/scm"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
)

// authorizeURL is what the provider mock's AuthorizeURL builds.
func (e *env) expectAuthorizeURL() {
	e.prov.EXPECT().AuthorizeURL(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(state, challenge, redirectURI string) (string, error) {
			q := url.Values{"state": {state}, "code_challenge": {challenge}, "code_challenge_method": {"S256"}, "redirect_uri": {redirectURI}}
			return "https://github.example/login/oauth/authorize?" + q.Encode(), nil
		})
}

// authorize starts a flow for p and returns the state; the browser binding
// is kept for cb.
func (e *env) authorize(p ports.Principal, redirectAfter string) string {
	e.t.Helper()
	e.expectAuthorizeURL()
	a, err := e.svc.Authorize(as(p), redirectAfter)
	if err != nil {
		e.t.Fatalf("Authorize: %v", err)
	}
	u, err := url.Parse(a.URL)
	if err != nil {
		e.t.Fatal(err)
	}
	state := u.Query().Get("state")
	e.bindings.Store(state, a.Binding)
	return state
}

// cb is the callback of the browser that started the flow of state.
func (e *env) cb(code, state string) scm.CallbackInput {
	b, _ := e.bindings.Load(state)
	binding, _ := b.(string)
	return scm.CallbackInput{Code: code, State: state, Binding: binding}
}

func s256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func TestAuthorize(t *testing.T) {
	t.Parallel()
	random := bytes.Repeat([]byte{1}, 32)
	random = append(random, bytes.Repeat([]byte{2}, 32)...)
	random = append(random, bytes.Repeat([]byte{3}, 32)...)
	e := newEnv(t, scm.Config{})
	e.svc = scm.New(scm.Config{PublicURL: publicURL + "/"}, depsOf(e, bytes.NewReader(random)))
	e.expectAuthorizeURL()

	a, err := e.svc.Authorize(as(alice), "/settings/integrations")
	if err != nil {
		t.Fatal(err)
	}
	wantBinding := base64.RawURLEncoding.EncodeToString(random[64:])
	if a.Binding != wantBinding || a.CallbackURL != callbackURL || a.TTL != 10*time.Minute {
		t.Errorf("authorization %+v", a)
	}
	bindingSum := sha256.Sum256([]byte(wantBinding))
	u, _ := url.Parse(a.URL)
	q := u.Query()
	wantState := base64.RawURLEncoding.EncodeToString(random[:32])
	wantVerifier := base64.RawURLEncoding.EncodeToString(random[32:64])
	if q.Get("state") != wantState || len(wantState) != 43 {
		t.Errorf("state %q, want %q", q.Get("state"), wantState)
	}
	st, ok := e.state(wantState)
	if !ok {
		t.Fatal("state not stored")
	}
	want := ports.OAuthState{State: wantState, OrgID: alice.OrgID, UserID: alice.UserID, CodeVerifier: wantVerifier,
		RedirectAfter: "/settings/integrations", BindingHash: hex.EncodeToString(bindingSum[:]),
		CreatedAt: fixture.Epoch, ExpiresAt: fixture.Epoch.Add(10 * time.Minute)}
	if st != want {
		t.Errorf("stored %+v\nwant   %+v", st, want)
	}
	if len(st.CodeVerifier) != 43 || q.Get("code_challenge") != s256(st.CodeVerifier) {
		t.Errorf("challenge %q is not S256 of the stored verifier %q", q.Get("code_challenge"), st.CodeVerifier)
	}
	if q.Get("redirect_uri") != callbackURL {
		t.Errorf("redirect_uri %q, want %q", q.Get("redirect_uri"), callbackURL)
	}

	// Each authorisation has its own random state and verifier.
	e2 := newEnv(t, scm.Config{StateTTL: time.Minute})
	x, y := e2.authorize(alice, ""), e2.authorize(alice, "")
	sx, _ := e2.state(x)
	sy, _ := e2.state(y)
	if x == y || sx.CodeVerifier == sy.CodeVerifier || sx.CodeVerifier == x || sx.BindingHash == sy.BindingHash ||
		e2.cb("", x).Binding == x || sx.ExpiresAt != fixture.Epoch.Add(time.Minute) {
		t.Errorf("states %+v and %+v", sx, sy)
	}
}

func TestAuthorizeFails(t *testing.T) {
	t.Parallel()
	e := newEnv(t, scm.Config{})
	_, err := e.svc.Authorize(context.Background(), "")
	wantErr(t, "no principal", err, ports.KindUnauthenticated, "")

	e.svc = scm.New(scm.Config{PublicURL: "devpilot.example.com"}, depsOf(e, nil))
	_, err = e.svc.Authorize(as(alice), "")
	wantErr(t, "no public URL", err, ports.KindUnavailable, "")

	e.svc = scm.New(scm.Config{PublicURL: publicURL}, depsOf(e, strings.NewReader("short")))
	_, err = e.svc.Authorize(as(alice), "")
	wantErr(t, "no randomness", err, ports.KindInternal, "")

	// A provider that is not configured says what to set, and no state is
	// stored.
	e.svc = scm.New(scm.Config{PublicURL: publicURL}, depsOf(e, nil))
	notConfigured := &ports.Error{Kind: ports.KindUnavailable, Code: "not_configured", Message: "GitHub is not configured: set GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET"}
	e.prov.EXPECT().AuthorizeURL(gomock.Any(), gomock.Any(), callbackURL).Return("", notConfigured)
	_, err = e.svc.Authorize(as(alice), "")
	if pe := wantErr(t, "provider not configured", err, ports.KindUnavailable, "not_configured"); pe.Message != notConfigured.Message {
		t.Errorf("message %q", pe.Message)
	}
	if n := e.statesCreated(); n != 0 {
		t.Errorf("%d states stored", n)
	}
}

func TestAuthorizeRedirectAfter(t *testing.T) {
	t.Parallel()
	tests := []struct {
		redirect string
		ok       bool
	}{
		{"", true},
		{"/", true},
		{"/settings", true},
		{"/specs/1?tab=prd#top", true},
		{publicURL, true},
		{publicURL + "/settings?x=1", true},
		{"HTTPS://DevPilot.Example.com/settings", true},
		{"//evil.example.com/", false},
		{"/\\evil.example.com", false},
		{"\\\\evil.example.com", false},
		{"/\t/evil.example.com", false},
		{"https://evil.example.com/", false},
		{"https://devpilot.example.com.evil.example.com/", false},
		{"https://devpilot.example.com:8443/", false},
		{"http://devpilot.example.com/", false},
		{"https://user@devpilot.example.com/", false},
		{"https:devpilot.example.com/", false},
		{"javascript:alert(1)", false},
		{"settings", false},
		{"../settings", false},
		{"/" + strings.Repeat("a", 2048), false},
	}
	for _, tt := range tests {
		e := newEnv(t, scm.Config{})
		e.expectAuthorizeURL()
		_, err := e.svc.Authorize(as(alice), tt.redirect)
		if tt.ok {
			if err != nil {
				t.Errorf("%q: %v", tt.redirect, err)
			}
			continue
		}
		wantErr(t, tt.redirect, err, ports.KindInvalid, "")
		if f := fieldsOf(err); len(f) != 1 || f[0] != "redirect_after" {
			t.Errorf("%q: fields %v", tt.redirect, f)
		}
		if e.statesCreated() != 0 {
			t.Errorf("%q: state stored", tt.redirect)
		}
	}
}

// expectConnect makes the provider answer one successful callback: the code
// for the token, the user, and pages of repositories.
func (e *env) expectConnect(code, token, login string, pages ...[]ports.SCMRepo) {
	e.prov.EXPECT().Exchange(gomock.Any(), code, gomock.Any(), callbackURL).Return(ports.SCMToken{AccessToken: token, TokenType: "bearer", Scope: "repo"}, nil)
	e.prov.EXPECT().User(gomock.Any(), token).Return(ports.SCMUser{ID: 7, Login: login}, nil)
	for i, p := range pages {
		cursor, next := "", ""
		if i > 0 {
			cursor = fmt.Sprint("page", i)
		}
		if i < len(pages)-1 {
			next = fmt.Sprint("page", i+1)
		}
		e.prov.EXPECT().ListRepos(gomock.Any(), token, ports.Page{Limit: 100, Cursor: cursor}).Return(p, next, nil)
	}
}

func TestCallbackConnects(t *testing.T) {
	t.Parallel()
	e := newEnv(t, scm.Config{})
	state := e.authorize(alice, "/settings")
	st, _ := e.state(state)
	e.prov.EXPECT().Exchange(gomock.Any(), "code-1", st.CodeVerifier, callbackURL).Return(ports.SCMToken{AccessToken: "gho_token1"}, nil)
	e.prov.EXPECT().User(gomock.Any(), "gho_token1").Return(ports.SCMUser{ID: 7, Login: "alice-gh"}, nil)
	e.prov.EXPECT().ListRepos(gomock.Any(), "gho_token1", ports.Page{Limit: 100}).Return([]ports.SCMRepo{webRepo}, "p2", nil)
	e.prov.EXPECT().ListRepos(gomock.Any(), "gho_token1", ports.Page{Limit: 100, Cursor: "p2"}).Return([]ports.SCMRepo{apiRepo}, "", nil)

	res, err := e.svc.Callback(context.Background(), e.cb("code-1", state))
	if err != nil {
		t.Fatal(err)
	}
	conn := e.conn(alice)
	if conn.ID == "" || conn.Status != ports.SCMActive || conn.Login != "alice-gh" || conn.Provider != "github" || conn.SealedToken != seal("gho_token1", conn.ID) {
		t.Errorf("stored connection %+v", conn)
	}
	if len(e.seals) != 1 || e.seals[0] != (sealCall{"gho_token1", conn.ID}) {
		t.Errorf("seals %+v, want the token bound to the connection id", e.seals)
	}
	if res.Repositories != 2 || res.RedirectAfter != "/settings" || res.Connection.ID != conn.ID || res.Connection.SealedToken != "" {
		t.Errorf("result %+v", res)
	}
	if strings.Contains(fmt.Sprintf("%+v", res), "gho_token1") {
		t.Errorf("the token leaks in %+v", res)
	}
	repos, _, err := e.svc.ListRepos(as(alice), ports.Page{})
	if err != nil || len(repos) != 2 || repos[0].FullName != "acme/api" || repos[0].ConnectionID != conn.ID || repos[1].ProviderID != 101 {
		t.Errorf("repositories %+v, %v", repos, err)
	}
	if _, ok := e.state(state); ok {
		t.Errorf("the state was not consumed")
	}

	// The state works once.
	_, err = e.svc.Callback(context.Background(), e.cb("code-1", state))
	if pe := wantErr(t, "replayed state", err, ports.KindMalformed, scm.CodeInvalidState); pe.Message != "unknown, used or expired state" {
		t.Errorf("message %q", pe.Message)
	}
}

func TestCallbackReconnectKeepsTheConnection(t *testing.T) {
	t.Parallel()
	e := newEnv(t, scm.Config{})
	e.expectConnect("code-1", "gho_old", "alice-gh", []ports.SCMRepo{webRepo})
	if _, err := e.svc.Callback(context.Background(), e.cb("code-1", e.authorize(alice, ""))); err != nil {
		t.Fatal(err)
	}
	first := e.conn(alice)
	repos, _, _ := e.svc.ListRepos(as(alice), ports.Page{})

	// The token stops working; reconnecting mends the same connection.
	if err := e.store.MarkConnectionBroken(t.Context(), first.ID, "revoked", e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	first = e.conn(alice)
	e.clock.Advance(time.Hour)
	e.expectConnect("code-2", "gho_new", "alice-gh", []ports.SCMRepo{webRepo, apiRepo})
	res, err := e.svc.Callback(context.Background(), e.cb("code-2", e.authorize(alice, "")))
	if err != nil {
		t.Fatal(err)
	}
	again := e.conn(alice)
	if again.ID != first.ID || res.Connection.ID != first.ID || again.Status != ports.SCMActive || again.Error != "" ||
		again.SealedToken != seal("gho_new", first.ID) || !again.CreatedAt.Equal(first.CreatedAt) || !again.UpdatedAt.After(first.UpdatedAt) {
		t.Errorf("reconnected %+v\nfirst       %+v", again, first)
	}
	if n := len(e.conns()); n != 1 {
		t.Errorf("%d connections", n)
	}
	after, _, _ := e.svc.ListRepos(as(alice), ports.Page{})
	if res.Repositories != 2 || len(after) != 2 || after[1].ID != repos[0].ID {
		t.Errorf("repositories before %+v, after %+v", repos, after)
	}

	// Later the token sees only the api repository: the web one goes.
	e.clock.Advance(time.Hour)
	e.expectConnect("code-3", "gho_newer", "alice-gh", []ports.SCMRepo{apiRepo})
	if res, err = e.svc.Callback(context.Background(), e.cb("code-3", e.authorize(alice, ""))); err != nil {
		t.Fatal(err)
	}
	last, _, _ := e.svc.ListRepos(as(alice), ports.Page{})
	if res.Repositories != 1 || len(last) != 1 || last[0].ID != after[0].ID || last[0].FullName != apiRepo.FullName {
		t.Errorf("repositories after the web one went: %+v", last)
	}
}

func TestCallbackFollowsAtMostTenPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, scm.Config{})
	e.prov.EXPECT().Exchange(gomock.Any(), "code", gomock.Any(), callbackURL).Return(ports.SCMToken{AccessToken: "gho_t"}, nil)
	e.prov.EXPECT().User(gomock.Any(), "gho_t").Return(ports.SCMUser{Login: "alice-gh"}, nil)
	calls := 0
	e.prov.EXPECT().ListRepos(gomock.Any(), "gho_t", gomock.Any()).Times(10).DoAndReturn(
		func(_ context.Context, _ string, p ports.Page) ([]ports.SCMRepo, string, error) {
			want := ""
			if calls > 0 {
				want = fmt.Sprint(calls)
			}
			if p.Limit != 100 || p.Cursor != want {
				t.Errorf("page %+v on call %d", p, calls)
			}
			calls++
			r := webRepo
			r.ProviderID, r.FullName = int64(calls), fmt.Sprint("acme/r", calls)
			return []ports.SCMRepo{r}, fmt.Sprint(calls), nil
		})
	res, err := e.svc.Callback(context.Background(), e.cb("code", e.authorize(alice, "")))
	if err != nil || res.Repositories != 10 {
		t.Errorf("Callback = %+v, %v", res, err)
	}
}

// TestCallbackBrowserBinding completes a flow alice started from browsers
// without her binding, as when she sends the callback link (her code and
// state) to bob: it is refused before the code is exchanged, nothing is
// connected, and the state is spent.
func TestCallbackBrowserBinding(t *testing.T) {
	t.Parallel()
	e := newEnv(t, scm.Config{})
	bobsState := e.authorize(bob, "")
	bobs := e.cb("c", bobsState).Binding
	for _, tt := range []struct{ name, binding string }{
		{"no cookie", ""},
		{"a forged cookie", "x"},
		{"another flow's cookie", bobs},
		{"the hash of alice's cookie", "hash"},
		{"an oversize cookie", strings.Repeat("b", 4096)},
	} {
		state := e.authorize(alice, "")
		binding := tt.binding
		if binding == "hash" {
			st, _ := e.state(state)
			binding = st.BindingHash
		}
		// The provider mock fails the test should the code be exchanged.
		_, err := e.svc.Callback(context.Background(), scm.CallbackInput{Code: "c", State: state, Binding: binding})
		if pe := wantErr(t, tt.name, err, ports.KindMalformed, scm.CodeBrowserMismatch); !strings.Contains(pe.Message, "/scm-oauth/authorize") {
			t.Errorf("%s: message %q", tt.name, pe.Message)
		}
		if _, ok := e.state(state); ok {
			t.Errorf("%s: the state was not spent", tt.name)
		}
		_, err = e.svc.Callback(context.Background(), e.cb("c", state))
		wantErr(t, tt.name+", then alice's own browser", err, ports.KindMalformed, scm.CodeInvalidState)
	}
	if c := e.conns(); len(c) != 0 {
		t.Errorf("connections stored: %+v", c)
	}
	// A state stored without a binding (before browsers were bound) binds
	// no browser.
	state := e.authorize(alice, "")
	st, err := e.store.ConsumeOAuthState(t.Context(), state, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	st.BindingHash = ""
	if err := e.store.CreateOAuthState(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.Callback(context.Background(), e.cb("c", state))
	wantErr(t, "a state without a binding", err, ports.KindMalformed, scm.CodeBrowserMismatch)
}

func TestCallbackFails(t *testing.T) {
	t.Parallel()
	e := newEnv(t, scm.Config{})

	// The provider says why it sent the user back without a code.
	_, err := e.svc.Callback(context.Background(), scm.CallbackInput{State: "s", Error: "access_denied",
		ErrorDescription: "The user has denied your application access.\n"})
	if pe := wantErr(t, "denied", err, ports.KindMalformed, ""); pe.Message != "GitHub: access_denied: The user has denied your application access." {
		t.Errorf("message %q", pe.Message)
	}

	for _, in := range []scm.CallbackInput{{State: "s"}, {Code: "c"}, {}} {
		_, err := e.svc.Callback(context.Background(), in)
		wantErr(t, fmt.Sprintf("%+v", in), err, ports.KindMalformed, "")
	}

	// Unknown, used or expired states are bad requests.
	_, err = e.svc.Callback(context.Background(), e.cb("c", "unknown"))
	wantErr(t, "unknown state", err, ports.KindMalformed, scm.CodeInvalidState)
	_, err = e.svc.Callback(context.Background(), e.cb("c", strings.Repeat("s", 300)))
	wantErr(t, "long state", err, ports.KindMalformed, scm.CodeInvalidState)
	expired := e.authorize(alice, "")
	e.clock.Advance(10 * time.Minute)
	_, err = e.svc.Callback(context.Background(), e.cb("c", expired))
	wantErr(t, "expired state", err, ports.KindMalformed, scm.CodeInvalidState)

	// A code the provider refuses (a PKCE mismatch) is a bad request too,
	// and the state is spent.
	state := e.authorize(alice, "")
	e.prov.EXPECT().Exchange(gomock.Any(), "stolen", gomock.Any(), callbackURL).
		Return(ports.SCMToken{}, &ports.Error{Kind: ports.KindInvalid, Code: "bad_verification_code", Message: "GitHub: the code is incorrect or expired"})
	_, err = e.svc.Callback(context.Background(), e.cb("stolen", state))
	if pe := wantErr(t, "refused code", err, ports.KindMalformed, "bad_verification_code"); pe.Message != "GitHub: the code is incorrect or expired" {
		t.Errorf("message %q", pe.Message)
	}
	_, err = e.svc.Callback(context.Background(), e.cb("stolen", state))
	wantErr(t, "state after a refused code", err, ports.KindMalformed, scm.CodeInvalidState)

	// Other provider failures keep their kinds.
	e.prov.EXPECT().Exchange(gomock.Any(), "c", gomock.Any(), callbackURL).Return(ports.SCMToken{}, &ports.Error{Kind: ports.KindTimeout, Message: "slow"})
	_, err = e.svc.Callback(context.Background(), e.cb("c", e.authorize(alice, "")))
	wantErr(t, "timeout", err, ports.KindTimeout, "")
	e.prov.EXPECT().Exchange(gomock.Any(), "c", gomock.Any(), callbackURL).Return(ports.SCMToken{AccessToken: "gho_x"}, nil)
	e.prov.EXPECT().User(gomock.Any(), "gho_x").Return(ports.SCMUser{}, errors.New("dial tcp: gho_x refused"))
	_, err = e.svc.Callback(context.Background(), e.cb("c", e.authorize(alice, "")))
	if pe := wantErr(t, "user", err, ports.KindInternal, ""); strings.Contains(err.Error(), "gho_x") || pe.Message != "internal error" {
		t.Errorf("the token leaks: %v", err)
	}
	if c := e.conns(); len(c) != 0 {
		t.Errorf("connections stored: %+v", c)
	}

	// The rate limit while listing repositories passes through.
	e.prov.EXPECT().Exchange(gomock.Any(), "c", gomock.Any(), callbackURL).Return(ports.SCMToken{AccessToken: "gho_y"}, nil)
	e.prov.EXPECT().User(gomock.Any(), "gho_y").Return(ports.SCMUser{Login: "alice-gh"}, nil)
	e.prov.EXPECT().ListRepos(gomock.Any(), "gho_y", gomock.Any()).Return(nil, "", &ports.Error{Kind: ports.KindRateLimited, RetryAfter: time.Minute})
	_, err = e.svc.Callback(context.Background(), e.cb("c", e.authorize(alice, "")))
	if pe := wantErr(t, "rate limited", err, ports.KindRateLimited, ""); pe.RetryAfter != time.Minute {
		t.Errorf("retry after %v", pe.RetryAfter)
	}
}
