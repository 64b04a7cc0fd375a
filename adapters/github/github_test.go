package github_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/github"
	"github.com/devpilot/devpilot/hosts/sandbox/fakegithub"
	"github.com/devpilot/devpilot/ports"
)

const (
	clientID     = "Iv1.0123456789abcdef"
	clientSecret = "0123456789abcdef0123456789abcdef01234567"
	aliceToken   = "gho_aliceAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	bobToken     = "gho_bobBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"
	redirect     = "https://devpilot.example/scm-oauth/callback"
)

// fixture is a fake GitHub with alice (who can read everything seeded) and
// bob, and a Client configured for it in the GHES shape.
type fixture struct {
	fake   *fakegithub.Server
	client *github.Client
	alice  *fakegithub.User
}

func newFixture(t *testing.T, mutate ...func(*github.Config)) *fixture {
	t.Helper()
	fake := fakegithub.New(t)
	fake.RegisterApp(clientID, clientSecret)
	alice := fake.AddUser("alice", 101).Token(aliceToken)
	fake.AddUser("bob", 102).Token(bobToken)
	cfg := github.Config{ClientID: clientID, ClientSecret: clientSecret, WebURL: fake.URL(), APIURL: fake.APIURL()}
	for _, m := range mutate {
		m(&cfg)
	}
	c, err := github.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{fake: fake, client: c, alice: alice}
}

func TestNew(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  github.Config
		ok   bool
	}{
		{"defaults", github.Config{ClientID: "id", ClientSecret: "s"}, true},
		{"no client id", github.Config{ClientSecret: "s"}, false},
		{"no secret", github.Config{ClientID: "id"}, false},
		{"relative web URL", github.Config{ClientID: "id", ClientSecret: "s", WebURL: "github.example"}, false},
		{"ftp API URL", github.Config{ClientID: "id", ClientSecret: "s", APIURL: "ftp://ghe.example/api/v3/"}, false},
	}
	for _, tt := range tests {
		_, err := github.New(tt.cfg)
		if (err == nil) != tt.ok {
			t.Errorf("%s: New error %v", tt.name, err)
		}
		if err != nil && ports.KindOf(err) != ports.KindInternal {
			t.Errorf("%s: kind %s", tt.name, ports.KindOf(err))
		}
	}
	cfg := github.Config{ClientID: "id", ClientSecret: "hunter2"}
	if s := fmt.Sprintf("%v %#v %+v", cfg, cfg, cfg); strings.Contains(s, "hunter2") {
		t.Fatalf("Config printed its secret: %s", s)
	}
}

func TestUser(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	u, err := f.client.User(context.Background(), aliceToken)
	if err != nil {
		t.Fatal(err)
	}
	if u != (ports.SCMUser{ID: 101, Login: "alice"}) {
		t.Fatalf("User = %+v", u)
	}
	req := f.fake.RequestsTo("/user")[0]
	if req.Header.Get("Authorization") != "Bearer "+aliceToken || !strings.Contains(req.Header.Get("User-Agent"), "devpilot") {
		t.Fatalf("request headers %v", req.Header)
	}
	if _, err := f.client.User(context.Background(), ""); ports.KindOf(err) != ports.KindInternal {
		t.Fatalf("no token: %v", err)
	}
}

func TestListRepos(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.fake.AddRepo("alice", "mine", fakegithub.Description("my things"), fakegithub.RepoID(555)).
		Commit(fakegithub.Commit{Message: "init", Date: time.Date(2026, 2, 1, 10, 0, 0, 0, time.UTC)})
	f.fake.AddRepo("acme", "platform", fakegithub.Private(), fakegithub.VisibleTo("alice"), fakegithub.DefaultBranch("trunk"))
	f.fake.AddRepo("acme", "other", fakegithub.Private())

	repos, next, err := f.client.ListRepos(context.Background(), aliceToken, ports.Page{})
	if err != nil {
		t.Fatal(err)
	}
	if next != "" || len(repos) != 2 {
		t.Fatalf("ListRepos = %+v, next %q", repos, next)
	}
	pushed := time.Date(2026, 2, 1, 10, 0, 0, 0, time.UTC)
	mine := ports.SCMRepo{ProviderID: 555, FullName: "alice/mine", Owner: "alice", Name: "mine", Description: "my things",
		DefaultBranch: "main", HTMLURL: f.fake.URL() + "/alice/mine", PushedAt: &pushed}
	got := repos[0]
	if got.PushedAt == nil || !got.PushedAt.Equal(pushed) {
		t.Fatalf("PushedAt = %v", got.PushedAt)
	}
	got.PushedAt = mine.PushedAt
	if got != mine {
		t.Errorf("repos[0] = %+v, want %+v", got, mine)
	}
	if r := repos[1]; r.FullName != "acme/platform" || !r.Private || r.DefaultBranch != "trunk" || r.PushedAt != nil {
		t.Errorf("repos[1] = %+v", r)
	}
	q := f.fake.RequestsTo("/user/repos")[0].Query
	if q.Get("affiliation") != "owner,collaborator,organization_member" || q.Get("sort") != "updated" ||
		q.Get("direction") != "desc" || q.Get("per_page") != "30" || q.Has("page") {
		t.Errorf("query %v", q)
	}
}

func TestListCommits(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := f.fake.AddRepo("acme", "api", fakegithub.Private(), fakegithub.VisibleTo("alice"))
	first := r.Commit(fakegithub.Commit{Message: "first", Author: "alice"})
	second := r.Commit(fakegithub.Commit{Message: "second\n\nbody", AuthorName: "Outside Contributor", AuthorEmail: "oc@example.com"})
	f.fake.AddRepo("acme", "empty", fakegithub.VisibleTo("alice"))

	commits, next, err := f.client.ListCommits(context.Background(), aliceToken, "acme", "api", ports.Page{})
	if err != nil {
		t.Fatal(err)
	}
	want := []ports.SCMCommit{
		{SHA: second.SHA, Repo: "acme/api", Message: "second\n\nbody", AuthorName: "Outside Contributor", AuthorEmail: "oc@example.com",
			HTMLURL: f.fake.URL() + "/acme/api/commit/" + second.SHA, CommittedAt: second.Date},
		{SHA: first.SHA, Repo: "acme/api", Message: "first", AuthorName: "alice", AuthorEmail: "101+alice@users.noreply.github.com",
			AuthorLogin: "alice", HTMLURL: f.fake.URL() + "/acme/api/commit/" + first.SHA, CommittedAt: first.Date},
	}
	if next != "" || len(commits) != 2 || commits[0] != want[0] || commits[1] != want[1] {
		t.Fatalf("ListCommits = %+v, next %q\nwant %+v", commits, next, want)
	}

	commits, next, err = f.client.ListCommits(context.Background(), aliceToken, "acme", "empty", ports.Page{})
	if err != nil || len(commits) != 0 || commits == nil || next != "" {
		t.Fatalf("empty repository: %v %v %q", commits, err, next)
	}
	if _, _, err := f.client.ListCommits(context.Background(), bobToken, "acme", "api", ports.Page{}); !errors.Is(err, ports.ErrNotFound) {
		t.Fatalf("another user's private repository: %v", err)
	}
}

func TestListPulls(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := f.fake.AddRepo("acme", "api", fakegithub.VisibleTo("alice"))
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r.Pull(fakegithub.Pull{Title: "Open one", Author: "bob", Head: "feat", Draft: true, CreatedAt: t0, UpdatedAt: t0.Add(time.Hour)})
	r.Pull(fakegithub.Pull{Title: "Merged one", Author: "alice", Merged: true, CreatedAt: t0, UpdatedAt: t0.Add(3 * time.Hour)})
	r.Pull(fakegithub.Pull{Title: "Closed one", State: "closed", CreatedAt: t0, UpdatedAt: t0.Add(2 * time.Hour)})

	pulls, _, err := f.client.ListPulls(context.Background(), aliceToken, "acme", "api", ports.Page{})
	if err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, p := range pulls {
		titles = append(titles, p.Title)
	}
	if strings.Join(titles, ",") != "Merged one,Closed one,Open one" {
		t.Fatalf("order %v", titles)
	}
	merged, closed, open := pulls[0], pulls[1], pulls[2]
	mergedAt := t0.Add(3 * time.Hour)
	if merged.Number != 2 || merged.State != "closed" || !merged.Merged || merged.MergedAt == nil || !merged.MergedAt.Equal(mergedAt) ||
		merged.ClosedAt == nil || merged.AuthorLogin != "alice" || merged.HTMLURL != f.fake.URL()+"/acme/api/pull/2" || merged.BaseRef != "main" {
		t.Errorf("merged = %+v", merged)
	}
	if closed.Merged || closed.MergedAt != nil || closed.ClosedAt == nil || closed.State != "closed" || closed.AuthorLogin != "" {
		t.Errorf("closed = %+v", closed)
	}
	if open.State != "open" || !open.Draft || open.HeadRef != "feat" || open.ClosedAt != nil || !open.CreatedAt.Equal(t0) ||
		!open.UpdatedAt.Equal(t0.Add(time.Hour)) || open.AuthorLogin != "bob" {
		t.Errorf("open = %+v", open)
	}
	q := f.fake.RequestsTo("/repos/*/*/pulls")[0].Query
	if q.Get("state") != "all" || q.Get("sort") != "updated" || q.Get("direction") != "desc" {
		t.Errorf("query %v", q)
	}
}

func TestSearchCommits(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	a := f.fake.AddRepo("alice", "api")
	b := f.fake.AddRepo("acme", "web", fakegithub.Private(), fakegithub.VisibleTo("alice"))
	ca := a.Commit(fakegithub.Commit{Message: "fix login", Author: "alice"})
	cb := b.Commit(fakegithub.Commit{Message: "fix logout"})
	b.Commit(fakegithub.Commit{Message: "unrelated"})

	commits, next, err := f.client.SearchCommits(context.Background(), aliceToken, "  fix  ", ports.Page{})
	if err != nil {
		t.Fatal(err)
	}
	if next != "" || len(commits) != 2 || commits[0].SHA != cb.SHA || commits[0].Repo != "acme/web" ||
		commits[1].SHA != ca.SHA || commits[1].Repo != "alice/api" || commits[1].AuthorLogin != "alice" || commits[1].Message != "fix login" {
		t.Fatalf("SearchCommits = %+v", commits)
	}
	if q := f.fake.RequestsTo("/search/commits")[0].Query; q.Get("q") != "fix" {
		t.Errorf("q = %q", q.Get("q"))
	}

	tests := []struct {
		name, query string
	}{
		{"empty", "   "},
		{"too long", strings.Repeat("x", 257)},
		{"a repository the user cannot see", "fix repo:acme/secret"},
	}
	for _, tt := range tests {
		_, _, err := f.client.SearchCommits(context.Background(), aliceToken, tt.query, ports.Page{})
		e, ok := ports.AsError(err)
		if !ok || e.Kind != ports.KindInvalid || len(e.Fields) != 1 || e.Fields[0].Field != "q" {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}

func TestListActivity(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := f.fake.AddRepo("acme", "api", fakegithub.VisibleTo("alice"))
	at := time.Date(2026, 4, 2, 8, 0, 0, 0, time.UTC)
	tests := []struct {
		act     fakegithub.Activity
		summary string
		url     func(a fakegithub.Activity) string
	}{
		{fakegithub.Activity{Type: "push", Actor: "alice"}, "alice pushed to branch main",
			func(a fakegithub.Activity) string { return "/acme/api/compare/" + a.Before[:12] + "..." + a.After[:12] }},
		{fakegithub.Activity{Type: "force_push", Actor: "bob", Ref: "refs/heads/dev"}, "bob force-pushed branch dev",
			func(a fakegithub.Activity) string { return "/acme/api/compare/" + a.Before[:12] + "..." + a.After[:12] }},
		{fakegithub.Activity{Type: "branch_creation", Actor: "alice", Ref: "refs/heads/feature-x"}, "alice created branch feature-x",
			func(fakegithub.Activity) string { return "/acme/api/tree/feature-x" }},
		{fakegithub.Activity{Type: "branch_deletion", Actor: "alice", Ref: "refs/heads/old"}, "alice deleted branch old",
			func(fakegithub.Activity) string { return "/acme/api/branches" }},
		{fakegithub.Activity{Type: "pr_merge", Actor: "bob"}, "bob merged a pull request into branch main",
			func(a fakegithub.Activity) string { return "/acme/api/commit/" + a.After }},
		{fakegithub.Activity{Type: "merge_queue_merge"}, "the merge queue merged into branch main",
			func(a fakegithub.Activity) string { return "/acme/api/commit/" + a.After }},
	}
	var seeded []fakegithub.Activity
	for i, tt := range tests {
		a := tt.act
		a.At = at.Add(-time.Duration(i) * time.Minute)
		seeded = append(seeded, r.Activity(a))
	}
	acts, next, err := f.client.ListActivity(context.Background(), aliceToken, "acme", "api", ports.Page{})
	if err != nil {
		t.Fatal(err)
	}
	if next != "" || len(acts) != len(tests) {
		t.Fatalf("ListActivity = %+v, next %q", acts, next)
	}
	for i, tt := range tests {
		a, s := acts[i], seeded[i]
		actor := s.Actor
		if actor == "" {
			actor = "ghost"
		}
		want := ports.SCMActivity{
			ID: fmt.Sprintf("api:%d", s.ID), Kind: s.Type, Actor: actor, Ref: strings.TrimPrefix(s.Ref, "refs/heads/"), Summary: tt.summary,
			URL: f.fake.URL() + tt.url(s), At: s.At, Source: "api",
		}
		if a != want {
			t.Errorf("activity %d = %+v\nwant %+v", i, a, want)
		}
	}
	if q := f.fake.RequestsTo("/repos/*/*/activity")[0].Query; q.Get("direction") != "desc" || q.Get("per_page") != "30" {
		t.Errorf("query %v", q)
	}
}

// collect pages through a list with Limit 2 and returns the items' keys,
// the cursors it was given and the number of requests.
func TestPagination(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := f.fake.AddRepo("alice", "api")
	for i := range 5 {
		f.fake.AddRepo("alice", fmt.Sprintf("r%d", i))
		r.Commit(fakegithub.Commit{Message: fmt.Sprintf("fix %d", i)})
		r.Pull(fakegithub.Pull{Title: fmt.Sprintf("pr %d", i)})
		r.Activity(fakegithub.Activity{Actor: "alice"})
	}
	ctx := context.Background()
	lists := []struct {
		name  string
		path  string
		total int
		list  func(p ports.Page) (int, string, error)
	}{
		{"repos", "/user/repos", 6, func(p ports.Page) (int, string, error) {
			v, n, err := f.client.ListRepos(ctx, aliceToken, p)
			return len(v), n, err
		}},
		{"commits", "/repos/*/*/commits", 5, func(p ports.Page) (int, string, error) {
			v, n, err := f.client.ListCommits(ctx, aliceToken, "alice", "api", p)
			return len(v), n, err
		}},
		{"pulls", "/repos/*/*/pulls", 5, func(p ports.Page) (int, string, error) {
			v, n, err := f.client.ListPulls(ctx, aliceToken, "alice", "api", p)
			return len(v), n, err
		}},
		{"search", "/search/commits", 5, func(p ports.Page) (int, string, error) {
			v, n, err := f.client.SearchCommits(ctx, aliceToken, "fix", p)
			return len(v), n, err
		}},
		{"activity", "/repos/*/*/activity", 5, func(p ports.Page) (int, string, error) {
			v, n, err := f.client.ListActivity(ctx, aliceToken, "alice", "api", p)
			return len(v), n, err
		}},
	}
	for _, l := range lists {
		t.Run(l.name, func(t *testing.T) {
			total, pages := 0, 0
			var cursors []string
			for p := (ports.Page{Limit: 2}); ; pages++ {
				if pages > 10 {
					t.Fatal("pagination does not end")
				}
				n, next, err := l.list(p)
				if err != nil {
					t.Fatal(err)
				}
				total += n
				if next == "" {
					break
				}
				cursors = append(cursors, next)
				p.Cursor = next
			}
			if total != l.total || len(cursors) != (l.total-1)/2 {
				t.Fatalf("%d items over cursors %v, want %d", total, cursors, l.total)
			}
			if l.name != "activity" && strings.Join(cursors, ",") != map[int]string{6: "2,3", 5: "2,3"}[l.total] {
				t.Errorf("cursors %v", cursors)
			}
			for _, req := range f.fake.RequestsTo(l.path) {
				if req.Query.Get("per_page") != "2" {
					t.Errorf("per_page = %q", req.Query.Get("per_page"))
				}
			}
		})
	}
}

func TestPageValidation(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	r := f.fake.AddRepo("alice", "api")
	r.Commit(fakegithub.Commit{Message: "x"})
	ctx := context.Background()
	limits := []struct{ limit, perPage int }{{0, 30}, {-3, 30}, {1, 1}, {100, 100}, {500, 100}}
	for _, tt := range limits {
		f.fake.ResetRequests()
		if _, _, err := f.client.ListCommits(ctx, aliceToken, "alice", "api", ports.Page{Limit: tt.limit}); err != nil {
			t.Fatal(err)
		}
		if got := f.fake.Requests()[0].Query.Get("per_page"); got != fmt.Sprint(tt.perPage) {
			t.Errorf("Limit %d: per_page %s, want %d", tt.limit, got, tt.perPage)
		}
	}
	f.fake.ResetRequests()
	for _, cursor := range []string{"abc", "0", "-1", "01", "+2", "2.0", " 2"} {
		_, _, err := f.client.ListCommits(ctx, aliceToken, "alice", "api", ports.Page{Cursor: cursor})
		e, ok := ports.AsError(err)
		if !ok || e.Kind != ports.KindInvalid || len(e.Fields) != 1 || e.Fields[0].Field != "cursor" {
			t.Errorf("cursor %q: %v", cursor, err)
		}
	}
	for _, cursor := range []string{"not a cursor!", strings.Repeat("a", 600)} {
		if _, _, err := f.client.ListActivity(ctx, aliceToken, "alice", "api", ports.Page{Cursor: cursor}); !errors.Is(err, ports.ErrInvalid) {
			t.Errorf("activity cursor %q: %v", cursor, err)
		}
	}
	if n := len(f.fake.Requests()); n != 0 {
		t.Errorf("malformed cursors reached GitHub %d times", n)
	}
	if _, _, err := f.client.ListActivity(ctx, aliceToken, "alice", "api", ports.Page{Cursor: "djE6OTk5OTk"}); !errors.Is(err, ports.ErrInvalid) {
		t.Errorf("a cursor GitHub rejects: %v", err)
	}
}

func TestRepoNames(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	for _, tt := range []struct{ owner, repo string }{
		{"", "api"}, {"acme", ""}, {"ac/me", "api"}, {"acme", "a/b"}, {"acme", ".."}, {"-acme", "api"}, {"acme", "api?x=1"},
	} {
		_, _, err := f.client.ListPulls(ctx, aliceToken, tt.owner, tt.repo, ports.Page{})
		if !errors.Is(err, ports.ErrInvalid) {
			t.Errorf("%q/%q: %v", tt.owner, tt.repo, err)
		}
	}
	if n := len(f.fake.Requests()); n != 0 {
		t.Errorf("bad names reached GitHub %d times", n)
	}
}

func pkce(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

const verifier = "M25iVXpKU3puUjFaYWg3T1NDTDQtcW1ROUY5YXlwalNoc0hhakxifmZHag"

// authorize follows AuthorizeURL to the fake and returns the code it
// redirects back with.
func authorize(t *testing.T, f *fixture, state, redirectURI string) string {
	t.Helper()
	resp, err := f.fake.Client().Get(must(f.client.AuthorizeURL(state, pkce(verifier), redirectURI)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusFound || err != nil || loc.Query().Get("state") != state {
		t.Fatalf("authorize: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	return loc.Query().Get("code")
}

func TestOAuthRoundTrip(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.fake.AuthorizeAs("alice")

	raw := must(f.client.AuthorizeURL("st4te", pkce(verifier), redirect))
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got := u.Scheme + "://" + u.Host + u.Path; got != f.fake.URL()+"/login/oauth/authorize" {
		t.Errorf("authorize endpoint %s", got)
	}
	want := url.Values{
		"client_id": {clientID}, "response_type": {"code"}, "redirect_uri": {redirect}, "state": {"st4te"},
		"scope": {"repo read:user"}, "code_challenge": {pkce(verifier)}, "code_challenge_method": {"S256"},
	}
	if u.Query().Encode() != want.Encode() {
		t.Errorf("authorize params %v\nwant %v", u.Query(), want)
	}

	code := authorize(t, f, "st4te", redirect)
	tok, err := f.client.Exchange(context.Background(), code, verifier, redirect)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok.AccessToken, "gho_") || tok.TokenType != "bearer" || tok.Scope != "repo,read:user" || tok.Expiry != nil {
		t.Fatalf("token %#v (%s)", tok, tok.AccessToken)
	}
	form := f.fake.RequestsTo("/login/oauth/access_token")[0].Form
	if form.Get("code_verifier") != verifier || form.Get("redirect_uri") != redirect || form.Get("client_id") != clientID ||
		form.Get("grant_type") != "authorization_code" {
		t.Errorf("token request %v", form)
	}
	me, err := f.client.User(context.Background(), tok.AccessToken)
	if err != nil || me.Login != "alice" {
		t.Fatalf("User with the new token: %+v %v", me, err)
	}
}

// acceptJSON makes the token request ask for JSON, as some clients do; the
// oauth2 package asks for nothing and GitHub then answers form-encoded.
type acceptJSON struct{}

func (acceptJSON) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Accept", "application/json")
	return http.DefaultTransport.RoundTrip(r)
}

func TestExchangeErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		setup   func(f *fixture)
		code    func(t *testing.T, f *fixture) string
		verify  string
		redir   string
		kind    ports.Kind
		errCode string
		field   string
	}{
		{name: "reused code", code: func(t *testing.T, f *fixture) string {
			c := authorize(t, f, "s", redirect)
			if _, err := f.client.Exchange(context.Background(), c, verifier, redirect); err != nil {
				t.Fatal(err)
			}
			return c
		}, kind: ports.KindInvalid, errCode: github.CodeBadVerificationCode, field: "code"},
		{name: "unknown code", code: func(*testing.T, *fixture) string { return "deadbeef" },
			kind: ports.KindInvalid, errCode: github.CodeBadVerificationCode, field: "code"},
		{name: "wrong verifier", verify: strings.Repeat("v", 43),
			kind: ports.KindInvalid, errCode: github.CodePKCEFailed, field: "code_verifier"},
		{name: "malformed verifier", verify: "short",
			kind: ports.KindInvalid, errCode: github.CodePKCEFailed, field: "code_verifier"},
		{name: "other redirect URI", redir: "https://devpilot.example/elsewhere",
			kind: ports.KindInvalid, errCode: github.CodeRedirectMismatch, field: "redirect_uri"},
		{name: "wrong client secret", setup: func(f *fixture) { f.fake.RegisterApp(clientID, "rotated") },
			kind: ports.KindInvalid, errCode: github.CodeClientCredentials, field: "client_id"},
		{name: "token endpoint down", setup: func(f *fixture) { f.fake.Fail("/login/oauth/access_token", 503) },
			kind: ports.KindUnavailable},
		{name: "token endpoint rate limited", setup: func(f *fixture) {
			f.fake.Inject("/login/oauth/access_token", fakegithub.Error(429, "").WithRetryAfter(7*time.Second))
		}, kind: ports.KindRateLimited},
		{name: "no code", code: func(*testing.T, *fixture) string { return "" }, kind: ports.KindInvalid, field: "code"},
	}
	for _, transport := range []http.RoundTripper{nil, acceptJSON{}} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s/json=%v", tt.name, transport != nil), func(t *testing.T) {
				t.Parallel()
				f := newFixture(t, func(c *github.Config) { c.HTTPClient = &http.Client{Transport: transport} })
				f.fake.AuthorizeAs("alice")
				code := ""
				if tt.code != nil {
					code = tt.code(t, f)
				} else {
					code = authorize(t, f, "s", redirect)
				}
				if tt.setup != nil {
					tt.setup(f)
				}
				_, err := f.client.Exchange(context.Background(), code, cmpOr(tt.verify, verifier), cmpOr(tt.redir, redirect))
				e, ok := ports.AsError(err)
				if !ok || e.Kind != tt.kind || tt.errCode != "" && e.Code != tt.errCode {
					t.Fatalf("Exchange error %v (%#v), want %s %s", err, e, tt.kind, tt.errCode)
				}
				if tt.field != "" && (len(e.Fields) != 1 || e.Fields[0].Field != tt.field) {
					t.Errorf("fields %+v, want %s", e.Fields, tt.field)
				}
				if e.Message == "" || strings.Contains(e.Message, clientSecret) || strings.Contains(err.Error(), clientSecret) {
					t.Errorf("message %q / %q", e.Message, err)
				}
				if tt.kind == ports.KindRateLimited && e.RetryAfter != 7*time.Second {
					t.Errorf("RetryAfter %s", e.RetryAfter)
				}
			})
		}
	}
}

func cmpOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func TestEnterpriseURLs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		apiURL func(f *fakegithub.Server) string
	}{
		{"API URL in the GHES shape", func(f *fakegithub.Server) string { return f.APIURL() }},
		{"API URL without /api/v3/", func(f *fakegithub.Server) string { return f.URL() }},
		{"API URL with a trailing slash", func(f *fakegithub.Server) string { return f.URL() + "/" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := fakegithub.New(t)
			fake.AddUser("alice", 1).Token(aliceToken)
			fake.RegisterApp(clientID, clientSecret)
			c, err := github.New(github.Config{ClientID: clientID, ClientSecret: clientSecret, WebURL: fake.URL() + "/", APIURL: tt.apiURL(fake)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.User(context.Background(), aliceToken); err != nil {
				t.Fatal(err)
			}
			if p := fake.Requests()[0].Path; p != "/api/v3/user" {
				t.Errorf("request path %s", p)
			}
			if u := must(c.AuthorizeURL("s", "c", "")); !strings.HasPrefix(u, fake.URL()+"/login/oauth/authorize?") || strings.Contains(u, "redirect_uri") {
				t.Errorf("AuthorizeURL %s", u)
			}
		})
	}
}

// recorder answers every request with an error after noting its URL, so
// the default configuration can be checked without reaching GitHub.
type recorder struct{ urls chan string }

func (r recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.urls <- req.URL.String()
	return nil, errors.New("offline")
}

func TestDefaultURLs(t *testing.T) {
	t.Parallel()
	rec := recorder{urls: make(chan string, 2)}
	c, err := github.New(github.Config{ClientID: "id", ClientSecret: "s", HTTPClient: &http.Client{Transport: rec}})
	if err != nil {
		t.Fatal(err)
	}
	if u := must(c.AuthorizeURL("s", "c", redirect)); !strings.HasPrefix(u, "https://github.com/login/oauth/authorize?") {
		t.Errorf("AuthorizeURL %s", u)
	}
	_, err = c.User(context.Background(), aliceToken)
	if got := <-rec.urls; got != "https://api.github.com/user" {
		t.Errorf("REST request to %s", got)
	}
	if !errors.Is(err, ports.ErrUnavailable) {
		t.Errorf("offline: %v", err)
	}
	_, _ = c.Exchange(context.Background(), "code", verifier, redirect)
	if got := <-rec.urls; got != "https://github.com/login/oauth/access_token" {
		t.Errorf("token request to %s", got)
	}
}

func TestErrorMapping(t *testing.T) {
	t.Parallel()
	reset := time.Now().Add(time.Hour).Truncate(time.Second)
	tests := []struct {
		name       string
		setup      func(f *fixture)
		timeout    time.Duration
		repo       string
		kind       ports.Kind
		code       string
		retryAfter time.Duration
		message    string
	}{
		{name: "primary rate limit", setup: func(f *fixture) { f.fake.RateLimit(reset) },
			kind: ports.KindRateLimited, retryAfter: 90 * time.Second, message: "rate limit"},
		{name: "secondary rate limit", setup: func(f *fixture) { f.fake.SecondaryRateLimit(2 * time.Minute) },
			kind: ports.KindRateLimited, retryAfter: 2 * time.Minute, message: "secondary rate limit"},
		{name: "429 with Retry-After", setup: func(f *fixture) {
			f.fake.Inject("", fakegithub.Error(429, "").WithRetryAfter(30*time.Second))
		}, kind: ports.KindRateLimited, retryAfter: 30 * time.Second},
		{name: "403 with Retry-After", setup: func(f *fixture) {
			f.fake.Inject("", fakegithub.Error(403, "slow down").WithHeader("Retry-After", "12"))
		}, kind: ports.KindRateLimited, retryAfter: 12 * time.Second},
		{name: "revoked token", setup: func(f *fixture) { f.fake.RevokeToken(aliceToken) },
			kind: ports.KindUpstream, code: github.CodeTokenRevoked, message: "the GitHub token was revoked or expired; reconnect GitHub"},
		{name: "unknown repository", repo: "nope", kind: ports.KindNotFound, message: "GitHub repository acme/nope not found"},
		{name: "500", setup: func(f *fixture) { f.fake.Fail("/repos/*/*/commits", 500) }, kind: ports.KindUnavailable},
		{name: "502", setup: func(f *fixture) { f.fake.Fail("", 502) }, kind: ports.KindUnavailable},
		{name: "503", setup: func(f *fixture) { f.fake.Fail("", 503) }, kind: ports.KindUnavailable},
		{name: "plain 403", setup: func(f *fixture) {
			f.fake.Inject("", fakegithub.Error(403, "Resource protected by organization SAML enforcement."))
		},
			kind: ports.KindUpstream, message: "GitHub answered HTTP 403: Resource protected by organization SAML enforcement."},
		{name: "422", setup: func(f *fixture) { f.fake.Fail("", 422) }, kind: ports.KindUpstream, message: "HTTP 422"},
		{name: "hang", setup: func(f *fixture) { f.fake.Inject("", fakegithub.Hang()) }, timeout: 50 * time.Millisecond,
			kind: ports.KindTimeout, message: "GitHub did not answer in time"},
		{name: "server gone", setup: func(f *fixture) { f.fake.Close() }, kind: ports.KindUnavailable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, func(c *github.Config) { c.Timeout = tt.timeout })
			github.SetNow(f.client, func() time.Time { return reset.Add(-90 * time.Second) })
			f.fake.AddRepo("acme", "api", fakegithub.VisibleTo("alice")).Commit(fakegithub.Commit{Message: "x"})
			if tt.setup != nil {
				tt.setup(f)
			}
			_, _, err := f.client.ListCommits(context.Background(), aliceToken, "acme", cmpOr(tt.repo, "api"), ports.Page{})
			e, ok := ports.AsError(err)
			if !ok {
				t.Fatalf("error %v is not a ports.Error", err)
			}
			if e.Kind != tt.kind || tt.code != "" && e.ErrorCode() != tt.code || e.RetryAfter != tt.retryAfter {
				t.Errorf("got %s/%s retry %s (%v), want %s/%s retry %s", e.Kind, e.ErrorCode(), e.RetryAfter, err, tt.kind, tt.code, tt.retryAfter)
			}
			if !strings.Contains(e.Message, tt.message) {
				t.Errorf("message %q, want it to contain %q", e.Message, tt.message)
			}
			if e.Err == nil {
				t.Error("no cause kept")
			}
			if strings.Contains(err.Error(), aliceToken) || strings.Contains(fmt.Sprintf("%+v", e), aliceToken) {
				t.Errorf("the token leaked: %v", err)
			}
		})
	}
}

func TestMalformedAnswer(t *testing.T) {
	t.Parallel()
	for _, body := range []string{`{"login": }`, `{"login": 12}`, `[]`} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(body))
		}))
		c, err := github.New(github.Config{ClientID: "id", ClientSecret: "s", WebURL: srv.URL, APIURL: srv.URL})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.User(context.Background(), aliceToken)
		if e, ok := ports.AsError(err); !ok || e.Kind != ports.KindUpstream || e.Message != "GitHub sent an answer devpilot cannot read" {
			t.Errorf("%s: %v", body, err)
		}
		srv.Close()
	}
}

func TestCallerCancels(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.fake.Inject("", fakegithub.Hang())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := f.client.User(ctx, aliceToken)
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled call: %v", err)
	}
}

// must is v, panicking on err: a test's mistake.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
