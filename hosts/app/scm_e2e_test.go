package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/app"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeaws"
	"github.com/devpilot/devpilot/hosts/sandbox/fakegithub"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
	"github.com/devpilot/devpilot/ports"
)

// The OAuth app and webhook secret the SCM stacks are configured with.
const (
	scmClientID     = "Iv1.devpilot0test"
	scmClientSecret = "devpilot-client-secret"
)

var scmWebhookSecret = []byte("whsec-devpilot-test")

// shiftClock is the system clock moved forward by an offset a test sets,
// to expire what devpilot stamped with the clock (OAuth states).
type shiftClock struct {
	base   ports.Clock
	offset atomic.Int64
}

func (c *shiftClock) Now() time.Time { return c.base.Now().Add(time.Duration(c.offset.Load())) }

// scmStack is a running devpilot (HTTP + worker) on a fresh database with
// GitHub served by fakegithub, whose OAuth app's callback is devpilot's.
type scmStack struct {
	*stack
	gh     *fakegithub.Server
	public string // DEVPILOT_PUBLIC_URL, the origin of st.base
	clock  *shiftClock
	// bindings are the devpilot_scm_oauth cookies authorize set, by state:
	// what the browser that started each flow keeps.
	bindings sync.Map
}

// freeAddr returns a loopback address no one listens on right now: the
// public URL, and so the OAuth redirect URI, must be known before start.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// startSCMStack starts the stack; edits change its environment first.
func startSCMStack(t *testing.T, dialect string, edits ...func(env map[string]string)) *scmStack {
	t.Helper()
	skipShort(t)
	st := &scmStack{stack: &stack{t: t, model: fakeopenai.New(t, fakeopenai.WithOfferedToolsOnly()), aws: fakeaws.New(t)}, gh: fakegithub.New(t)}
	addr := freeAddr(t)
	st.public = "http://" + addr
	st.gh.RegisterApp(scmClientID, scmClientSecret).CallbackURL(st.public + "/scm-oauth/callback")
	env := map[string]string{
		app.EnvAWSEndpoint:    st.aws.URL(),
		app.EnvDatabaseURL:    stackDBURL(t, sqlstoreDialect(dialect)),
		app.EnvDataDir:        t.TempDir(),
		app.EnvHTTPAddr:       addr,
		app.EnvPublicURL:      st.public,
		app.EnvOpenAIKey:      "sk-test",
		app.EnvOpenAIBaseURL:  st.model.URL(),
		app.EnvAutoTitle:      "0", // the script holds the chat's model calls only
		app.EnvGitHubClientID: scmClientID,
		app.EnvGitHubSecret:   scmClientSecret,
		app.EnvGitHubURL:      st.gh.URL(),
		app.EnvGitHubAPIURL:   st.gh.APIURL(),
		app.EnvGitHubWebhook:  string(scmWebhookSecret),
	}
	for _, edit := range edits {
		edit(env)
	}
	cfg, err := app.Load(app.ModeRun, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	logs := &addrWatch{addr: make(chan string, 1)}
	fxApp := fx.New(
		app.Options(cfg, app.NewLogger(cfg, logs)),
		fx.Decorate(func(c ports.Clock) ports.Clock {
			st.clock = &shiftClock{base: c}
			return st.clock
		}),
		fx.Populate(&st.id),
	)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := fxApp.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := fxApp.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	})
	select {
	case st.base = <-logs.addr:
	case <-time.After(10 * time.Second):
		t.Fatal("no listening line")
	}
	if st.base != st.public {
		t.Fatalf("listening on %s, want %s", st.base, st.public)
	}
	return st
}

// authorize starts connecting GitHub as the devpilot user and returns the
// provider's authorize URL; the binding cookie it sets is kept for
// callback.
func (st *scmStack) authorize(token, redirectAfter string) *url.URL {
	st.t.Helper()
	path := "/scm-oauth/authorize"
	if redirectAfter != "" {
		path += "?redirect_after=" + url.QueryEscape(redirectAfter)
	}
	resp, body := st.browse("GET", st.base+path, nil, http.Header{"Authorization": {"Bearer " + token}, "Accept": {"application/json"}})
	var out struct {
		AuthorizeURL string `json:"authorize_url"`
	}
	if err := json.Unmarshal(body, &out); resp.StatusCode != 200 || err != nil || out.AuthorizeURL == "" {
		st.t.Fatalf("authorize: %d %s", resp.StatusCode, body)
	}
	u, err := url.Parse(out.AuthorizeURL)
	if err != nil {
		st.t.Fatal(err)
	}
	c := bindingCookie(st.t, resp)
	if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/scm-oauth/callback" || c.Secure || c.MaxAge != 600 || len(c.Value) < 43 {
		st.t.Fatalf("binding cookie %+v", c)
	}
	st.bindings.Store(u.Query().Get("state"), c.Value)
	return u
}

// bindingCookie is the devpilot_scm_oauth cookie a response sets.
func bindingCookie(t *testing.T, resp *http.Response) *http.Cookie {
	t.Helper()
	for _, c := range resp.Cookies() {
		if c.Name == "devpilot_scm_oauth" {
			return c
		}
	}
	t.Fatalf("no devpilot_scm_oauth cookie: %v", resp.Header)
	return nil
}

// callback follows GitHub's redirect back to devpilot in the browser that
// started the flow: with the binding cookie authorize set for its state.
func (st *scmStack) callback(cb *url.URL, header http.Header) (*http.Response, []byte) {
	st.t.Helper()
	header = header.Clone()
	if header == nil {
		header = http.Header{}
	}
	if v, ok := st.bindings.Load(cb.Query().Get("state")); ok {
		header.Add("Cookie", (&http.Cookie{Name: "devpilot_scm_oauth", Value: v.(string)}).String())
	}
	return st.browse("GET", cb.String(), nil, header)
}

// approve has GitHub's user login approve the authorization and returns
// the callback URL GitHub redirects the browser to.
func (st *scmStack) approve(login string, authorize *url.URL) *url.URL {
	st.t.Helper()
	st.gh.AuthorizeAs(login)
	resp, err := st.gh.Client().Get(authorize.String())
	if err != nil {
		st.t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		st.t.Fatalf("GitHub authorize: %d %s", resp.StatusCode, body)
	}
	u, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		st.t.Fatal(err)
	}
	return u
}

// browse sends an unauthenticated request that does not follow redirects,
// as the browser's first hop.
func (st *scmStack) browse(method, target string, body io.Reader, header http.Header) (*http.Response, []byte) {
	st.t.Helper()
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		st.t.Fatal(err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	resp, err := st.gh.Client().Do(req)
	if err != nil {
		st.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	st.conform(st.t, resp, raw)
	return resp, raw
}

type callbackOut struct {
	Connection struct {
		Provider, Login, Status string
	}
	Repositories int
}

// connect runs the whole OAuth round trip for the devpilot user as GitHub's
// login, and returns the callback's answer.
func (st *scmStack) connect(token, login string) callbackOut {
	st.t.Helper()
	cb := st.approve(login, st.authorize(token, ""))
	resp, body := st.callback(cb, nil)
	var out callbackOut
	if err := json.Unmarshal(body, &out); resp.StatusCode != 200 || err != nil {
		st.t.Fatalf("callback: %d %s", resp.StatusCode, body)
	}
	return out
}

// deliver POSTs a webhook delivery and returns the status and body.
func (st *scmStack) deliver(d fakegithub.Delivery) (int, []byte) {
	st.t.Helper()
	req, err := d.Request(context.Background(), st.base+"/webhooks/scm")
	if err != nil {
		st.t.Fatal(err)
	}
	code, _, raw := st.send(req)
	return code, raw
}

// withHeader returns a copy of d with a header set, or removed when value
// is "".
func withHeader(d fakegithub.Delivery, key, value string) fakegithub.Delivery {
	d.Header = d.Header.Clone()
	if value == "" {
		d.Header.Del(key)
	} else {
		d.Header.Set(key, value)
	}
	return d
}

// wantDelivered posts d and expects 202 with the status.
func (st *scmStack) wantDelivered(d fakegithub.Delivery, status string) {
	st.t.Helper()
	code, body := st.deliver(d)
	if code != http.StatusAccepted || !bytes.Contains(body, []byte(`"status":"`+status+`"`)) {
		st.t.Fatalf("delivery %s (%s): %d %s, want 202 %s", d.ID, d.Event, code, body, status)
	}
}

type listOut[T any] struct {
	Items      []T
	NextCursor *string `json:"next_cursor"`
}

type repoJSON struct {
	ID            string `json:"id"`
	ProviderID    int64  `json:"provider_id"`
	FullName      string `json:"full_name"`
	Owner         string `json:"owner"`
	Name          string `json:"name"`
	DefaultBranch string `json:"default_branch"`
	Private       bool   `json:"private"`
}

type commitJSON struct {
	SHA         string `json:"sha"`
	Message     string `json:"message"`
	AuthorLogin string `json:"author_login"`
	Repository  string `json:"repository"`
}

type pullJSON struct {
	Number int    `json:"number"`
	Title  string `json:"title"`
	State  string `json:"state"`
}

type activityJSON struct {
	ID      string `json:"id"`
	Kind    string `json:"kind"`
	Action  string `json:"action"`
	Actor   string `json:"actor"`
	Ref     string `json:"ref"`
	Summary string `json:"summary"`
	URL     string `json:"url"`
	SHA     string `json:"sha"`
	Source  string `json:"source"`
}

// list GETs a list route and decodes it, failing unless it is 200.
func list[T any](st *scmStack, token, path string) listOut[T] {
	st.t.Helper()
	code, body, _ := st.call(token, "GET", path, nil)
	var out listOut[T]
	if err := json.Unmarshal(body, &out); code != 200 || err != nil {
		st.t.Fatalf("GET %s: %d %s", path, code, body)
	}
	return out
}

// waitActivity polls a repository's activity until it shows every summary
// wanted, for up to 10 s: the worker processes deliveries asynchronously.
func (st *scmStack) waitActivity(token, repoID string, want ...string) []activityJSON {
	st.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := list[activityJSON](st, token, "/scm/repos/"+repoID+"/activity?limit=100").Items
		seen := map[string]bool{}
		for _, a := range got {
			seen[a.Summary] = true
		}
		missing := 0
		for _, w := range want {
			if !seen[w] {
				missing++
			}
		}
		if missing == 0 {
			return got
		}
		if time.Now().After(deadline) {
			st.t.Fatalf("after 10s the activity lacks %d of %q: %+v", missing, want, got)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// wantProblem checks a problem answer's status and code.
func wantProblem(t *testing.T, what string, code int, body []byte, status int, errCode string) map[string]any {
	t.Helper()
	var p map[string]any
	if err := json.Unmarshal(body, &p); code != status || err != nil || p["code"] != errCode {
		t.Fatalf("%s: %d %s, want %d %s", what, code, body, status, errCode)
	}
	return p
}

// githubToken is the access token GitHub issued for login at its latest
// authorization, read off the requests devpilot made with it.
func (st *scmStack) githubToken(login string) string {
	st.t.Helper()
	reqs := st.gh.RequestsTo("/user")
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].Login == login {
			f := strings.Fields(reqs[i].Header.Get("Authorization"))
			return f[len(f)-1]
		}
	}
	st.t.Fatalf("no GET /user as %s", login)
	return ""
}

func TestSCMEndToEnd(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startSCMStack(t, string(d))
			gh := st.gh
			octo := gh.AddUser("octo-alice", 101)
			gh.AddUser("octo-bob", 102)
			api := gh.AddRepo("octo-alice", "api", fakegithub.Description("The API"))
			gh.AddRepo("acme", "web", fakegithub.VisibleTo("octo-alice", "octo-bob"))
			gh.AddRepo("acme", "vault", fakegithub.Private(), fakegithub.VisibleTo("octo-bob"))
			first := api.Commit(fakegithub.Commit{Message: "Add the health check", Author: "octo-alice"})
			second := api.Commit(fakegithub.Commit{Message: "Add a rate limiter to the API", Author: "octo-alice"})
			api.Pull(fakegithub.Pull{Title: "Rate limiting", Author: "octo-alice"})
			api.Activity(fakegithub.Activity{Actor: "octo-alice"})
			alice, bob := st.token("alice@example.com"), st.token("bob@example.com")

			// Before connecting: no repositories, and reads say how to connect.
			if got := list[repoJSON](st, alice, "/scm/repos"); len(got.Items) != 0 || got.NextCursor != nil {
				t.Fatalf("repos before connecting: %+v", got)
			}
			code, body, _ := st.call(alice, "GET", "/scm/commits/search?q=rate", nil)
			wantProblem(t, "search before connecting", code, body, 412, "not_connected")

			// The OAuth round trip.
			authURL := st.authorize(alice, "")
			q := authURL.Query()
			if !strings.HasPrefix(authURL.String(), gh.URL()+"/login/oauth/authorize?") || q.Get("client_id") != scmClientID ||
				q.Get("redirect_uri") != st.public+"/scm-oauth/callback" || len(q.Get("state")) != 43 ||
				q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43 {
				t.Fatalf("authorize_url = %s", authURL)
			}
			// Without Accept: application/json the browser is redirected.
			resp, _ := st.browse("GET", st.base+"/scm-oauth/authorize", nil, http.Header{"Authorization": {"Bearer " + alice}})
			if loc := resp.Header.Get("Location"); resp.StatusCode != 302 || !strings.HasPrefix(loc, gh.URL()+"/login/oauth/authorize?") {
				t.Fatalf("authorize without Accept: %d Location %q", resp.StatusCode, loc)
			}
			cb := st.approve("octo-alice", authURL)
			if !strings.HasPrefix(cb.String(), st.public+"/scm-oauth/callback?") || cb.Query().Get("code") == "" || cb.Query().Get("state") != q.Get("state") {
				t.Fatalf("GitHub redirected to %s", cb)
			}
			resp, body = st.callback(cb, nil)
			var connected callbackOut
			if err := json.Unmarshal(body, &connected); resp.StatusCode != 200 || err != nil ||
				connected.Connection.Login != "octo-alice" || connected.Connection.Status != "active" ||
				connected.Connection.Provider != "github" || connected.Repositories != 2 {
				t.Fatalf("callback: %d %s", resp.StatusCode, body)
			}
			if bytes.Contains(body, []byte("gho_")) {
				t.Fatalf("the callback answer carries the token: %s", body)
			}
			// Replaying the callback: the state was used.
			resp, body = st.callback(cb, nil)
			wantProblem(t, "replayed callback", resp.StatusCode, body, 400, "invalid_state")

			// PKCE: the first authorization's code with the second's state
			// (and so its verifier) is refused.
			cb1 := st.approve("octo-alice", st.authorize(alice, ""))
			cb2 := st.authorize(alice, "")
			mixed := cb1.Query()
			mixed.Set("state", cb2.Query().Get("state"))
			cb1.RawQuery = mixed.Encode()
			resp, body = st.callback(cb1, nil)
			wantProblem(t, "PKCE mismatch", resp.StatusCode, body, 400, "pkce_failed")

			// redirect_after: the callback redirects there (the browser asks
			// for HTML); the connection is kept.
			cb = st.approve("octo-alice", st.authorize(alice, "/settings/integrations"))
			resp, body = st.callback(cb, http.Header{"Accept": {"text/html"}})
			if resp.StatusCode != 302 || resp.Header.Get("Location") != "/settings/integrations" {
				t.Fatalf("callback with redirect_after: %d %q %s", resp.StatusCode, resp.Header.Get("Location"), body)
			}

			// Reads.
			repos := list[repoJSON](st, alice, "/scm/repos")
			if len(repos.Items) != 2 || repos.Items[0].FullName != "acme/web" || repos.Items[1].FullName != "octo-alice/api" || repos.NextCursor != nil {
				t.Fatalf("repos: %+v", repos)
			}
			apiRepo := repos.Items[1]
			if apiRepo.ProviderID != api.ID() || apiRepo.Owner != "octo-alice" || apiRepo.Name != "api" || apiRepo.DefaultBranch != "main" {
				t.Fatalf("api repo: %+v", apiRepo)
			}
			page1 := list[repoJSON](st, alice, "/scm/repos?limit=1")
			if len(page1.Items) != 1 || page1.NextCursor == nil {
				t.Fatalf("repos page 1: %+v", page1)
			}
			page2 := list[repoJSON](st, alice, "/scm/repos?limit=1&cursor="+url.QueryEscape(*page1.NextCursor))
			if len(page2.Items) != 1 || page2.Items[0].ID != apiRepo.ID {
				t.Fatalf("repos page 2: %+v", page2)
			}

			commits := list[commitJSON](st, alice, "/scm/repos/"+apiRepo.ID+"/commits")
			if len(commits.Items) != 2 || commits.Items[0].SHA != second.SHA || commits.Items[1].SHA != first.SHA ||
				commits.Items[0].Message != second.Message || commits.Items[0].AuthorLogin != "octo-alice" {
				t.Fatalf("commits: %+v", commits)
			}
			c1 := list[commitJSON](st, alice, "/scm/repos/"+apiRepo.ID+"/commits?limit=1")
			if len(c1.Items) != 1 || c1.NextCursor == nil || c1.Items[0].SHA != second.SHA {
				t.Fatalf("commits page 1: %+v", c1)
			}
			c2 := list[commitJSON](st, alice, "/scm/repos/"+apiRepo.ID+"/commits?limit=1&cursor="+url.QueryEscape(*c1.NextCursor))
			if len(c2.Items) != 1 || c2.Items[0].SHA != first.SHA {
				t.Fatalf("commits page 2: %+v", c2)
			}
			pulls := list[pullJSON](st, alice, "/scm/repos/"+apiRepo.ID+"/pulls")
			if len(pulls.Items) != 1 || pulls.Items[0].Number != 1 || pulls.Items[0].Title != "Rate limiting" || pulls.Items[0].State != "open" {
				t.Fatalf("pulls: %+v", pulls)
			}
			found := list[commitJSON](st, alice, "/scm/commits/search?q="+url.QueryEscape("rate limiter"))
			if len(found.Items) != 1 || found.Items[0].SHA != second.SHA || found.Items[0].Repository != "octo-alice/api" {
				t.Fatalf("search: %+v", found)
			}
			act := list[activityJSON](st, alice, "/scm/repos/"+apiRepo.ID+"/activity")
			if len(act.Items) != 1 || act.Items[0].Source != "api" || act.Items[0].Actor != "octo-alice" {
				t.Fatalf("activity before webhooks: %+v", act)
			}
			// The same reads under /api/v1.
			if got := list[repoJSON](st, alice, "/api/v1/scm/repos"); len(got.Items) != 2 {
				t.Fatalf("/api/v1/scm/repos: %+v", got)
			}

			// Bob connects his own GitHub account; neither sees the other's
			// repositories by id.
			if out := st.connect(bob, "octo-bob"); out.Connection.Login != "octo-bob" || out.Repositories != 2 {
				t.Fatalf("bob's callback: %+v", out)
			}
			bobRepos := list[repoJSON](st, bob, "/scm/repos")
			if len(bobRepos.Items) != 2 || bobRepos.Items[0].FullName != "acme/vault" {
				t.Fatalf("bob's repos: %+v", bobRepos)
			}
			for _, r := range bobRepos.Items {
				if r.ID == repos.Items[0].ID {
					t.Fatal("bob and alice share a repository id")
				}
			}
			for _, route := range []string{"commits", "pulls", "activity"} {
				code, body, _ := st.call(bob, "GET", "/scm/repos/"+apiRepo.ID+"/"+route, nil)
				wantProblem(t, "bob reading alice's "+route, code, body, 404, "not_found")
				code, body, _ = st.call(alice, "GET", "/scm/repos/"+bobRepos.Items[0].ID+"/"+route, nil)
				wantProblem(t, "alice reading bob's "+route, code, body, 404, "not_found")
			}

			// Webhooks: a push and a pull request become activity; a repeat
			// is accepted and not processed again; an unknown kind is
			// stored and ignored.
			hookRepo, sender := api.Hook(), octo.Hook()
			push := fakegithub.NewEventDelivery(fakegithub.PushEvent{Repo: hookRepo, Sender: sender, Commits: []fakegithub.HookCommit{
				first.Hook(), second.Hook(),
			}}).Signed(scmWebhookSecret)
			pr := fakegithub.NewEventDelivery(fakegithub.PullRequestEvent{Repo: hookRepo, Sender: sender, Number: 7, Title: "Add rate limiting"}).Signed(scmWebhookSecret)
			star := fakegithub.NewEventDelivery(fakegithub.StarEvent{Repo: hookRepo, Sender: sender}).Signed(scmWebhookSecret)
			st.wantDelivered(push, "accepted")
			st.wantDelivered(pr, "accepted")
			st.wantDelivered(push, "duplicate")
			st.wantDelivered(star, "accepted")
			st.wantDelivered(star, "duplicate")
			// The same signed body under a new delivery id is a replay.
			st.wantDelivered(push.WithID("replayed-"+push.ID), "duplicate")
			// So is the same signed body under another event's name: the
			// signature does not cover X-GitHub-Event.
			st.wantDelivered(withHeader(push.WithID("as-release-"+push.ID), "X-GitHub-Event", "release"), "duplicate")
			pushSummary, prSummary := "octo-alice pushed 2 commits to main", "octo-alice opened pull request #7: Add rate limiting"
			st.waitActivity(alice, apiRepo.ID, pushSummary, prSummary)
			// Redelivering after processing is still a duplicate.
			st.wantDelivered(push, "duplicate")
			time.Sleep(200 * time.Millisecond) // a wrongly enqueued repeat would land by now
			got := list[activityJSON](st, alice, "/scm/repos/"+apiRepo.ID+"/activity?limit=100").Items
			bySummary := map[string][]activityJSON{}
			for _, a := range got {
				bySummary[a.Summary] = append(bySummary[a.Summary], a)
			}
			if len(got) != 3 || len(bySummary[pushSummary]) != 1 || len(bySummary[prSummary]) != 1 {
				t.Fatalf("activity after webhooks: %+v", got)
			}
			if p := bySummary[pushSummary][0]; p.ID != "delivery:"+push.ID || p.Kind != "push" || p.Source != "webhook" || p.Ref != "main" ||
				p.SHA != second.SHA || !strings.HasPrefix(p.URL, gh.URL()+"/octo-alice/api/compare/") {
				t.Fatalf("push entry: %+v", p)
			}
			if p := bySummary[prSummary][0]; p.ID != "delivery:"+pr.ID || p.Kind != "pull_request" || p.Action != "opened" || p.Ref != "feature-7" ||
				!strings.HasSuffix(p.URL, "/octo-alice/api/pull/7") {
				t.Fatalf("pull request entry: %+v", p)
			}
			if got[0].Source != "webhook" || got[2].Source != "api" {
				t.Fatalf("activity is not newest first: %+v", got)
			}
			// GitHub's default content type: the JSON in a form's payload
			// field, the signature over the form.
			third := api.Commit(fakegithub.Commit{Message: "Sent as a form", Author: "octo-alice"})
			form := fakegithub.NewEventDelivery(fakegithub.PushEvent{Repo: hookRepo, Sender: sender, Ref: "refs/heads/forms",
				Commits: []fakegithub.HookCommit{third.Hook()}}).Form()
			code, body = st.deliver(form.Signed([]byte("not-the-secret")))
			wantProblem(t, "a form signed with another secret", code, body, 401, "unauthenticated")
			st.wantDelivered(form.Signed(scmWebhookSecret), "accepted")
			st.wantDelivered(form.Signed(scmWebhookSecret), "duplicate")
			formEntry := st.waitActivity(alice, apiRepo.ID, "octo-alice pushed 1 commit to forms")[0]
			if formEntry.Source != "webhook" || formEntry.SHA != third.SHA || formEntry.Ref != "forms" || !strings.Contains(formEntry.URL, "/compare/") {
				t.Fatalf("form push entry: %+v", formEntry)
			}
			// A revoked token: the connection is marked broken, reads answer
			// 502 saying so without asking GitHub again, and reconnecting
			// repairs it.
			gh.RevokeToken(st.githubToken("octo-alice"))
			code, body, _ = st.call(alice, "GET", "/scm/repos/"+apiRepo.ID+"/commits", nil)
			p := wantProblem(t, "commits with a revoked token", code, body, 502, "connection_broken")
			if detail, _ := p["detail"].(string); !strings.Contains(detail, "revoked") || !strings.Contains(detail, "/scm-oauth/authorize") {
				t.Fatalf("detail = %q", detail)
			}
			gh.ResetRequests()
			for _, path := range []string{"/scm/repos/" + apiRepo.ID + "/pulls", "/scm/repos/" + apiRepo.ID + "/activity", "/scm/commits/search?q=rate"} {
				code, body, _ := st.call(alice, "GET", path, nil)
				wantProblem(t, path+" on a broken connection", code, body, 502, "connection_broken")
			}
			if n := len(gh.Requests()); n != 0 {
				t.Fatalf("a broken connection made %d GitHub requests", n)
			}
			if got := list[repoJSON](st, alice, "/scm/repos"); len(got.Items) != 2 {
				t.Fatalf("stored repos on a broken connection: %+v", got)
			}
			if got := list[commitJSON](st, bob, "/scm/repos/"+bobRepos.Items[1].ID+"/commits"); got.Items == nil {
				t.Fatalf("bob's connection suffered from alice's: %+v", got)
			}
			if out := st.connect(alice, "octo-alice"); out.Connection.Status != "active" {
				t.Fatalf("reconnect: %+v", out)
			}
			if got := list[commitJSON](st, alice, "/scm/repos/"+apiRepo.ID+"/commits"); len(got.Items) != 3 {
				t.Fatalf("commits after reconnecting: %+v", got)
			}
		})
	}
}

// TestSCMNotConfigured starts devpilot without a GitHub OAuth app: starting
// to connect is 503 naming the variables to set (as the README says), in
// both of authorize's forms, and sends no one anywhere.
func TestSCMNotConfigured(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startSCMStack(t, string(d), func(env map[string]string) {
				delete(env, app.EnvGitHubClientID)
				delete(env, app.EnvGitHubSecret)
			})
			token := st.token("erin@example.com")
			for _, accept := range []string{"application/json", "text/html", ""} {
				h := http.Header{"Authorization": {"Bearer " + token}}
				if accept != "" {
					h.Set("Accept", accept)
				}
				resp, body := st.browse("GET", st.base+"/scm-oauth/authorize?redirect_after=%2Fsettings", nil, h)
				p := wantProblem(t, "authorize, Accept "+accept, resp.StatusCode, body, 503, "not_configured")
				detail, _ := p["detail"].(string)
				if !strings.Contains(detail, "GITHUB_CLIENT_ID") || !strings.Contains(detail, "GITHUB_CLIENT_SECRET") ||
					resp.Header.Get("Location") != "" || resp.Header.Get("Set-Cookie") != "" ||
					resp.Header.Get("Content-Type") != "application/problem+json" {
					t.Fatalf("authorize, Accept %s: %d %v %s", accept, resp.StatusCode, resp.Header, body)
				}
			}
		})
	}
}

func TestSCMBadInputAndFaults(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startSCMStack(t, string(d))
			gh := st.gh
			octo := gh.AddUser("octo-carol", 201)
			repo := gh.AddRepo("octo-carol", "svc")
			repo.Commit(fakegithub.Commit{Message: "init"})
			carol := st.token("carol@example.com")
			hook := repo.Hook()
			push := fakegithub.NewEventDelivery(fakegithub.PushEvent{Repo: hook, Sender: octo.Hook(),
				Commits: []fakegithub.HookCommit{{Message: "one"}}})

			t.Run("webhooks", func(t *testing.T) {
				signed := push.Signed(scmWebhookSecret)
				wrong := push.Signed([]byte("not-the-secret"))
				truncated := signed
				truncated.Body = signed.Body[:len(signed.Body)/2]
				huge := fakegithub.NewDelivery("push", append(append([]byte(`{"pad":"`), bytes.Repeat([]byte("x"), 25<<20)...), `"}`...)).Signed(scmWebhookSecret)
				notJSON := fakegithub.NewDelivery("push", []byte(`{"ref": "refs/heads/main", `)).Signed(scmWebhookSecret)
				noID := signed.WithID("")
				badID := signed.WithID("not a/delivery id")
				noEvent := withHeader(signed, fakegithub.HeaderEvent, "")
				for _, tt := range []struct {
					name   string
					d      fakegithub.Delivery
					status int
					code   string
				}{
					{"unsigned", push, 401, "unauthenticated"},
					{"wrongly signed", wrong, 401, "unauthenticated"},
					{"signature not hex", withHeader(signed, fakegithub.HeaderSignature, "sha256=zz"), 401, "unauthenticated"},
					{"truncated", truncated, 401, "unauthenticated"},
					{"oversize", huge, 413, "payload_too_large"},
					{"not JSON", notJSON, 400, "malformed"},
					{"no delivery id", noID, 400, "malformed"},
					{"odd delivery id", badID, 400, "malformed"},
					{"no event", noEvent, 400, "malformed"},
				} {
					code, body := st.deliver(tt.d)
					wantProblem(t, tt.name, code, body, tt.status, tt.code)
				}
				// None of them was stored: the valid delivery and the
				// not-JSON one's id are new.
				st.wantDelivered(signed, "accepted")
				st.wantDelivered(fakegithub.NewDelivery("ping", map[string]any{"zen": "Keep it logically awesome."}).WithID(notJSON.ID).Signed(scmWebhookSecret), "accepted")
			})

			t.Run("oauth", func(t *testing.T) {
				// The provider refused (the user denied access).
				u := st.authorize(carol, "")
				gh.DenyAuthorization()
				resp, body := st.browse("GET", u.String(), nil, nil)
				gh.AuthorizeAs("octo-carol")
				cb, err := url.Parse(resp.Header.Get("Location"))
				if err != nil || resp.StatusCode != 302 || cb.Query().Get("error") != "access_denied" {
					t.Fatalf("denied authorize: %d %v %s", resp.StatusCode, err, body)
				}
				resp, body = st.callback(cb, nil)
				p := wantProblem(t, "callback with error=access_denied", resp.StatusCode, body, 400, "malformed")
				if detail, _ := p["detail"].(string); !strings.Contains(detail, "denied") {
					t.Fatalf("detail = %q", detail)
				}

				for _, tt := range []struct {
					name, query string
					code        string
				}{
					{"no code", "state=abc", "malformed"},
					{"no state", "code=abc", "malformed"},
					{"unknown state", "code=abc&state=" + strings.Repeat("s", 43), "invalid_state"},
					{"oversize state", "code=abc&state=" + strings.Repeat("s", 300), "invalid_state"},
				} {
					resp, body := st.browse("GET", st.base+"/scm-oauth/callback?"+tt.query, nil, nil)
					wantProblem(t, tt.name, resp.StatusCode, body, 400, tt.code)
				}

				// Forced linking: carol starts a flow and sends the link to
				// dave, who approves it with his GitHub account; his browser,
				// without carol's cookie, is refused, the state is spent, and
				// no token is stored under carol.
				gh.AddUser("octo-dave", 202)
				crafted := st.approve("octo-dave", st.authorize(carol, ""))
				for _, cookie := range []string{"", "devpilot_scm_oauth=forged", "devpilot_scm_oauth="} {
					h := http.Header{}
					if cookie != "" {
						h.Set("Cookie", cookie)
					}
					resp, body = st.browse("GET", crafted.String(), nil, h)
					if cookie == "" {
						wantProblem(t, "crafted link in another browser", resp.StatusCode, body, 400, "browser_mismatch")
						if c := bindingCookie(t, resp); c.MaxAge >= 0 {
							t.Fatalf("the callback kept the cookie: %+v", c)
						}
					} else {
						wantProblem(t, "crafted link again, "+cookie, resp.StatusCode, body, 400, "invalid_state")
					}
				}
				resp, body = st.callback(crafted, nil)
				wantProblem(t, "crafted link in carol's browser after dave's", resp.StatusCode, body, 400, "invalid_state")
				code, body, _ := st.call(carol, "GET", "/scm/commits/search?q=x", nil)
				wantProblem(t, "carol after the crafted link", code, body, 412, "not_connected")
				if got := list[repoJSON](st, carol, "/scm/repos"); len(got.Items) != 0 {
					t.Fatalf("carol sees dave's repositories: %+v", got)
				}
				// The redirect form of authorize sets the cookie too.
				resp, _ = st.browse("GET", st.base+"/scm-oauth/authorize", nil, http.Header{"Authorization": {"Bearer " + carol}})
				if c := bindingCookie(t, resp); resp.StatusCode != 302 || !c.HttpOnly || c.Path != "/scm-oauth/callback" || c.Value == "" {
					t.Fatalf("authorize redirect: %d cookie %+v", resp.StatusCode, c)
				}

				// An expired state: eleven minutes later.
				cb = st.approve("octo-carol", st.authorize(carol, ""))
				st.clock.offset.Store(int64(11 * time.Minute))
				resp, body = st.callback(cb, nil)
				st.clock.offset.Store(0)
				wantProblem(t, "expired state", resp.StatusCode, body, 400, "invalid_state")

				// redirect_after must stay on devpilot's origin.
				for _, ra := range []string{"https://evil.example/", "//evil.example/x", "/\\evil.example"} {
					code, body, _ = st.call(carol, "GET", "/scm-oauth/authorize?redirect_after="+url.QueryEscape(ra), nil, "Accept", "application/json")
					wantProblem(t, "redirect_after "+ra, code, body, 422, "invalid")
				}
				code, body, _ = st.call("", "GET", "/scm-oauth/authorize", nil, "Accept", "application/json")
				wantProblem(t, "authorize without a token", code, body, 401, "unauthenticated")
			})

			t.Run("reads", func(t *testing.T) {
				if out := st.connect(carol, "octo-carol"); out.Repositories != 1 {
					t.Fatalf("connect: %+v", out)
				}
				id := list[repoJSON](st, carol, "/scm/repos").Items[0].ID
				for _, tt := range []struct {
					name, path string
					status     int
					code       string
				}{
					{"not a repo id", "/scm/repos/nope/commits", 404, "not_found"},
					{"unknown repo id", "/scm/repos/0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b/pulls", 404, "not_found"},
					{"bad limit", "/scm/repos/" + id + "/commits?limit=500", 422, "invalid"},
					{"bad activity cursor", "/scm/repos/" + id + "/activity?cursor=bm90LWEtY3Vyc29y", 422, "invalid"},
					{"search without q", "/scm/commits/search", 400, "malformed"},
					{"search with blank q", "/scm/commits/search?q=%20%20", 400, "malformed"},
					{"search q too long", "/scm/commits/search?q=" + strings.Repeat("a", 257), 422, "invalid"},
				} {
					code, body, _ := st.call(carol, "GET", tt.path, nil)
					wantProblem(t, tt.name, code, body, tt.status, tt.code)
				}

				// GitHub's rate limit: 429 with Retry-After; the connection
				// stays usable.
				gh.RateLimit(time.Now().Add(time.Minute))
				req, _ := http.NewRequest("GET", st.base+"/scm/repos/"+id+"/commits", nil)
				req.Header.Set("Authorization", "Bearer "+carol)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				st.conform(t, resp, body)
				wantProblem(t, "rate limited", resp.StatusCode, body, 429, "rate_limited")
				if resp.Header.Get("Retry-After") == "" {
					t.Fatalf("no Retry-After: %v", resp.Header)
				}
				gh.ClearFaults()
				if got := list[commitJSON](st, carol, "/scm/repos/"+id+"/commits"); len(got.Items) != 1 {
					t.Fatalf("commits after the rate limit: %+v", got)
				}
			})
		})
	}
}
