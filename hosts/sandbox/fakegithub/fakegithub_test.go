package fakegithub_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	gh "github.com/google/go-github/v84/github"
	"github.com/google/uuid"

	"github.com/devpilot/devpilot/hosts/sandbox/fakegithub"
)

// get sends a GET to the fake with an optional token and decodes a JSON
// answer into out (when not nil).
func get(t *testing.T, s *fakegithub.Server, path, token string, out any) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.URL()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			t.Fatalf("GET %s: %v in %s", path, err, body)
		}
	}
	return resp
}

func TestSign(t *testing.T) {
	t.Parallel()
	// The example of GitHub's "Validating webhook deliveries".
	got := fakegithub.Sign([]byte("It's a Secret to Everybody"), []byte("Hello, World!"))
	want := "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	if got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
}

func TestDeliveries(t *testing.T) {
	t.Parallel()
	repo := fakegithub.HookRepo{ID: 42, Owner: fakegithub.HookUser{Login: "acme", ID: 7, Organization: true}, Name: "api"}
	alice := fakegithub.HookUser{Login: "alice", ID: 1}
	secret := []byte("s3cret")
	tests := []struct {
		event fakegithub.Event
		check func(t *testing.T, parsed any)
	}{
		{
			fakegithub.PushEvent{Repo: repo, Sender: alice, Commits: []fakegithub.HookCommit{
				{ID: strings.Repeat("a", 40), Message: "first", AuthorName: "Alice", AuthorEmail: "a@example.com", AuthorLogin: "alice"},
				{ID: strings.Repeat("b", 40), Message: "second", AuthorName: "Alice", AuthorEmail: "a@example.com"},
			}},
			func(t *testing.T, parsed any) {
				e := parsed.(*gh.PushEvent)
				if e.GetRef() != "refs/heads/main" || e.GetAfter() != strings.Repeat("b", 40) || len(e.Commits) != 2 ||
					e.Commits[0].GetMessage() != "first" || e.Commits[0].GetAuthor().GetLogin() != "alice" ||
					e.GetHeadCommit().GetID() != strings.Repeat("b", 40) || e.GetRepo().GetID() != 42 ||
					e.GetRepo().GetFullName() != "acme/api" || e.GetSender().GetLogin() != "alice" ||
					e.GetRepo().GetCreatedAt().IsZero() {
					t.Errorf("push = %+v", e)
				}
			},
		},
		{
			fakegithub.PullRequestEvent{Repo: repo, Sender: alice, Number: 12, Title: "Add X"},
			func(t *testing.T, parsed any) {
				e := parsed.(*gh.PullRequestEvent)
				p := e.GetPullRequest()
				if e.GetAction() != "opened" || p.GetNumber() != 12 || p.GetTitle() != "Add X" || p.GetState() != "open" ||
					p.GetMerged() || p.GetHTMLURL() != "https://github.com/acme/api/pull/12" || p.GetUser().GetLogin() != "alice" {
					t.Errorf("pull_request = %+v", p)
				}
			},
		},
		{
			fakegithub.PullRequestEvent{Action: "closed", Repo: repo, Sender: alice, Number: 3, Title: "Fix", Merged: true},
			func(t *testing.T, parsed any) {
				p := parsed.(*gh.PullRequestEvent).GetPullRequest()
				if p.GetState() != "closed" || !p.GetMerged() || p.MergedAt == nil || p.GetMergedBy().GetLogin() != "alice" {
					t.Errorf("merged pull_request = %+v", p)
				}
			},
		},
		{
			fakegithub.CreateEvent{Repo: repo, Sender: alice, Ref: "feature-x"},
			func(t *testing.T, parsed any) {
				e := parsed.(*gh.CreateEvent)
				if e.GetRef() != "feature-x" || e.GetRefType() != "branch" || e.GetRepo().GetID() != 42 {
					t.Errorf("create = %+v", e)
				}
			},
		},
		{
			fakegithub.DeleteEvent{Repo: repo, Sender: alice, Ref: "v1.0", RefType: "tag"},
			func(t *testing.T, parsed any) {
				e := parsed.(*gh.DeleteEvent)
				if e.GetRef() != "v1.0" || e.GetRefType() != "tag" {
					t.Errorf("delete = %+v", e)
				}
			},
		},
		{
			fakegithub.ReleaseEvent{Repo: repo, Sender: alice, TagName: "v1.2.0"},
			func(t *testing.T, parsed any) {
				r := parsed.(*gh.ReleaseEvent).GetRelease()
				if r.GetTagName() != "v1.2.0" || r.GetHTMLURL() != "https://github.com/acme/api/releases/tag/v1.2.0" {
					t.Errorf("release = %+v", r)
				}
			},
		},
		{
			fakegithub.IssueCommentEvent{Repo: repo, Sender: alice, IssueNumber: 9, Body: "LGTM", OnPullRequest: true},
			func(t *testing.T, parsed any) {
				e := parsed.(*gh.IssueCommentEvent)
				if e.GetIssue().GetNumber() != 9 || !e.GetIssue().IsPullRequest() || e.GetComment().GetBody() != "LGTM" ||
					!strings.HasPrefix(e.GetComment().GetHTMLURL(), "https://github.com/acme/api/pull/9#issuecomment-") {
					t.Errorf("issue_comment = %+v", e)
				}
			},
		},
		{
			fakegithub.StarEvent{Repo: repo, Sender: alice},
			func(t *testing.T, parsed any) {
				if e := parsed.(*gh.StarEvent); e.GetAction() != "created" || e.StarredAt == nil {
					t.Errorf("star = %+v", e)
				}
			},
		},
		{
			fakegithub.PingEvent{Repo: repo, Sender: alice, URL: "https://devpilot.example/webhooks/scm"},
			func(t *testing.T, parsed any) {
				if e := parsed.(*gh.PingEvent); e.GetHookID() != fakegithub.HookID || e.GetZen() == "" {
					t.Errorf("ping = %+v", e)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.event.EventName(), func(t *testing.T) {
			t.Parallel()
			d := fakegithub.NewEventDelivery(tt.event).Signed(secret)
			h := d.Header
			if _, err := uuid.Parse(h.Get("X-GitHub-Delivery")); err != nil || h.Get("X-GitHub-Delivery") != d.ID {
				t.Errorf("X-GitHub-Delivery = %q (ID %q): %v", h.Get("X-GitHub-Delivery"), d.ID, err)
			}
			if h.Get("X-GitHub-Event") != tt.event.EventName() || h.Get("Content-Type") != "application/json" ||
				!strings.HasPrefix(h.Get("User-Agent"), "GitHub-Hookshot/") ||
				h.Get("X-GitHub-Hook-Installation-Target-ID") != "42" {
				t.Errorf("headers = %v", h)
			}
			if err := gh.ValidateSignature(h.Get("X-Hub-Signature-256"), d.Body, secret); err != nil {
				t.Errorf("X-Hub-Signature-256: %v", err)
			}
			if err := gh.ValidateSignature(h.Get("X-Hub-Signature"), d.Body, secret); err != nil {
				t.Errorf("X-Hub-Signature: %v", err)
			}
			parsed, err := gh.ParseWebHook(d.Event, d.Body)
			if err != nil {
				t.Fatalf("ParseWebHook: %v", err)
			}
			tt.check(t, parsed)
		})
	}
}

func TestDeliveryRequest(t *testing.T) {
	t.Parallel()
	secret := []byte("k")
	var got *http.Request
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		body, _ = io.ReadAll(r.Body)
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	d := fakegithub.NewDelivery("star", map[string]any{"action": "created"}).Signed(secret).WithID("dup-1")
	req, err := d.Request(context.Background(), srv.URL+"/webhooks/scm")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got.Method != http.MethodPost || got.Header.Get("X-GitHub-Delivery") != "dup-1" ||
		got.Header.Get("X-Hub-Signature-256") != fakegithub.Sign(secret, body) || string(body) != `{"action":"created"}` {
		t.Fatalf("received %s %v %s", got.Method, got.Header, body)
	}
	raw := fakegithub.NewDelivery("ping", []byte(`{"zen":"x"}`))
	if string(raw.Body) != `{"zen":"x"}` || raw.Header.Get("X-Hub-Signature-256") != "" {
		t.Fatalf("raw delivery = %s %v", raw.Body, raw.Header)
	}
}

// TestDeliveryForm sends a delivery form-encoded, as GitHub does for a
// webhook of content type application/x-www-form-urlencoded: the JSON is the
// payload field and the signature covers the form.
func TestDeliveryForm(t *testing.T) {
	t.Parallel()
	secret := []byte("k")
	d := fakegithub.NewDelivery("push", []byte(`{"ref":"refs/heads/main","x":"a&b=c +%"}`)).Signed(secret)
	f := d.Form()
	if f.Header.Get("X-Hub-Signature-256") != "" || d.Header.Get("X-Hub-Signature-256") == "" {
		t.Fatalf("Form kept the JSON's signature, or changed the original: %v / %v", f.Header, d.Header)
	}
	f = f.Signed(secret)
	form, err := url.ParseQuery(string(f.Body))
	if err != nil || form.Get("payload") != string(d.Body) || len(form) != 1 {
		t.Fatalf("form body %s: %v %v", f.Body, form, err)
	}
	if f.Header.Get("Content-Type") != "application/x-www-form-urlencoded" || f.ID != d.ID ||
		f.Header.Get("X-Hub-Signature-256") != fakegithub.Sign(secret, f.Body) || f.Header.Get("X-GitHub-Event") != "push" {
		t.Fatalf("form delivery headers %v", f.Header)
	}
}

func challenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

const verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"

// authorize runs the authorize step and returns the redirect's query.
func authorize(t *testing.T, s *fakegithub.Server, params url.Values) (*http.Response, url.Values) {
	t.Helper()
	resp := get(t, s, "/login/oauth/authorize?"+params.Encode(), "", nil)
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return resp, loc.Query()
}

// exchange posts to the token endpoint.
func exchange(t *testing.T, s *fakegithub.Server, form url.Values, accept string) (string, url.Values) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/login/oauth/access_token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("token endpoint answered %d: %s", resp.StatusCode, body)
	}
	ct := resp.Header.Get("Content-Type")
	if strings.HasPrefix(ct, "application/json") {
		var m map[string]string
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
		v := url.Values{}
		for k, x := range m {
			v.Set(k, x)
		}
		return ct, v
	}
	v, err := url.ParseQuery(string(body))
	if err != nil {
		t.Fatal(err)
	}
	return ct, v
}

func TestOAuthFlow(t *testing.T) {
	t.Parallel()
	s := fakegithub.New(t)
	s.AddUser("alice", 1)
	s.RegisterApp("cid", "csecret")
	s.AuthorizeAs("alice")
	const redirect = "https://devpilot.example/scm-oauth/callback"
	start := func() string {
		t.Helper()
		resp, q := authorize(t, s, url.Values{
			"client_id": {"cid"}, "redirect_uri": {redirect}, "state": {"st"}, "scope": {"repo read:user"},
			"code_challenge": {challenge(verifier)}, "code_challenge_method": {"S256"},
		})
		if resp.StatusCode != http.StatusFound || q.Get("state") != "st" || q.Get("code") == "" ||
			!strings.HasPrefix(resp.Header.Get("Location"), redirect+"?") {
			t.Fatalf("authorize: %d %s", resp.StatusCode, resp.Header.Get("Location"))
		}
		return q.Get("code")
	}
	good := func(code string) url.Values {
		return url.Values{"client_id": {"cid"}, "client_secret": {"csecret"}, "code": {code},
			"redirect_uri": {redirect}, "code_verifier": {verifier}}
	}

	for _, accept := range []string{"", "application/json"} {
		ct, v := exchange(t, s, good(start()), accept)
		if want := map[string]string{"": "application/x-www-form-urlencoded", "application/json": "application/json"}[accept]; !strings.HasPrefix(ct, want) {
			t.Errorf("Accept %q: Content-Type %q", accept, ct)
		}
		if !strings.HasPrefix(v.Get("access_token"), "gho_") || v.Get("token_type") != "bearer" || v.Get("scope") != "repo,read:user" {
			t.Fatalf("Accept %q: token answer %v", accept, v)
		}
		var me struct{ Login string }
		if resp := get(t, s, "/user", v.Get("access_token"), &me); resp.StatusCode != 200 || me.Login != "alice" ||
			resp.Header.Get("X-OAuth-Scopes") != "repo, read:user" {
			t.Fatalf("GET /user with the issued token: %d %+v %v", resp.StatusCode, me, resp.Header)
		}
	}

	tests := []struct {
		name  string
		form  func(code string) url.Values
		error string
	}{
		{"wrong secret", func(c string) url.Values { f := good(c); f.Set("client_secret", "x"); return f }, "incorrect_client_credentials"},
		{"unknown code", func(string) url.Values { return good("nope") }, "bad_verification_code"},
		{"wrong verifier", func(c string) url.Values {
			f := good(c)
			f.Set("code_verifier", strings.Repeat("x", 43))
			return f
		}, "invalid_grant"},
		{"no verifier", func(c string) url.Values { f := good(c); f.Del("code_verifier"); return f }, "invalid_request"},
		{"other redirect", func(c string) url.Values { f := good(c); f.Set("redirect_uri", "https://evil.example/"); return f }, "redirect_uri_mismatch"},
	}
	for _, tt := range tests {
		_, v := exchange(t, s, tt.form(start()), "application/json")
		if v.Get("error") != tt.error || v.Get("error_description") == "" || v.Get("access_token") != "" {
			t.Errorf("%s: answer %v, want error %s", tt.name, v, tt.error)
		}
	}

	code := start()
	if _, v := exchange(t, s, good(code), ""); v.Get("access_token") == "" {
		t.Fatalf("first exchange: %v", v)
	}
	if _, v := exchange(t, s, good(code), ""); v.Get("error") != "bad_verification_code" {
		t.Fatalf("second exchange of one code: %v", v)
	}

	code = start()
	form := good(code)
	form.Del("client_id")
	form.Del("client_secret")
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/login/oauth/access_token", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth("cid", "csecret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var basic map[string]string
	_ = json.NewDecoder(resp.Body).Decode(&basic)
	resp.Body.Close()
	if basic["access_token"] == "" {
		t.Fatalf("client credentials in Basic auth: %v", basic)
	}
}

func TestAuthorizeRefusals(t *testing.T) {
	t.Parallel()
	s := fakegithub.New(t)
	s.AddUser("alice", 1)
	s.RegisterApp("cid", "cs").CallbackURL("https://devpilot.example/scm-oauth")
	s.AuthorizeAs("alice")
	base := url.Values{"client_id": {"cid"}, "state": {"st"}, "code_challenge": {challenge(verifier)}, "code_challenge_method": {"S256"}}
	with := func(k, v string) url.Values {
		q := url.Values{}
		for key, vs := range base {
			q[key] = vs
		}
		q.Set(k, v)
		return q
	}

	if _, q := authorize(t, s, with("redirect_uri", "https://devpilot.example/scm-oauth/callback")); q.Get("code") == "" {
		t.Errorf("a redirect below the callback URL: %v", q)
	}
	if _, q := authorize(t, s, base); q.Get("code") == "" {
		t.Errorf("no redirect_uri (the registered callback is used): %v", q)
	}
	resp, q := authorize(t, s, with("redirect_uri", "https://evil.example/cb"))
	if q.Get("error") != "redirect_uri_mismatch" || !strings.HasPrefix(resp.Header.Get("Location"), "https://devpilot.example/scm-oauth?") {
		t.Errorf("a foreign redirect_uri: %s", resp.Header.Get("Location"))
	}
	if _, q := authorize(t, s, with("code_challenge_method", "plain")); q.Get("error") != "invalid_request" {
		t.Errorf("plain PKCE: %v", q)
	}
	if resp := get(t, s, "/login/oauth/authorize?"+with("client_id", "other").Encode(), "", nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown client_id: %d", resp.StatusCode)
	}
	s.DenyAuthorization()
	if _, q := authorize(t, s, base); q.Get("error") != "access_denied" || q.Get("state") != "st" {
		t.Errorf("denied: %v", q)
	}
	s.AuthorizeAs("nobody")
	if resp := get(t, s, "/login/oauth/authorize?"+base.Encode(), "", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no seeded approver: %d", resp.StatusCode)
	}
}

func TestRESTAccess(t *testing.T) {
	t.Parallel()
	s := fakegithub.New(t)
	s.AddUser("alice", 1).Token("ta")
	s.AddUser("bob", 2).Token("tb")
	s.AddRepo("acme", "secret", fakegithub.Private(), fakegithub.VisibleTo("alice")).Commit(fakegithub.Commit{Message: "x"})
	s.AddRepo("acme", "open").Commit(fakegithub.Commit{Message: "y"})
	s.AddRepo("acme", "empty")
	tests := []struct {
		path, token string
		status      int
		message     string
	}{
		{"/user", "", 401, "Requires authentication"},
		{"/user", "nope", 401, "Bad credentials"},
		{"/user", "ta", 200, ""},
		{"/repos/acme/secret/commits", "ta", 200, ""},
		{"/repos/acme/secret/commits", "tb", 404, "Not Found"},
		{"/repos/acme/secret/commits", "", 404, "Not Found"},
		{"/repos/acme/open/commits", "", 200, ""},
		{"/repos/acme/empty/commits", "ta", 409, "Git Repository is empty."},
		{"/repos/acme/missing/pulls", "ta", 404, "Not Found"},
		{"/api/v3/repos/ACME/Open/commits", "tb", 200, ""},
		{"/nothing/here", "ta", 404, "Not Found"},
		{"/search/commits", "ta", 422, "Validation Failed"},
		{"/search/commits?q=x+repo:acme/secret", "tb", 422, "Validation Failed"},
		{"/search/commits?q=x&page=11&per_page=100", "ta", 422, "Validation Failed"},
	}
	for _, tt := range tests {
		var body struct {
			Message string `json:"message"`
			Status  string `json:"status"`
		}
		var out any = &body
		if tt.status == 200 {
			out = nil
		}
		resp := get(t, s, tt.path, tt.token, out)
		if resp.StatusCode != tt.status || body.Message != tt.message {
			t.Errorf("GET %s as %q: %d %q, want %d %q", tt.path, tt.token, resp.StatusCode, body.Message, tt.status, tt.message)
		}
		if tt.status != 200 && body.Status != strconv.Itoa(tt.status) {
			t.Errorf("GET %s: status field %q", tt.path, body.Status)
		}
	}
}

func TestPaginationLinks(t *testing.T) {
	t.Parallel()
	s := fakegithub.New(t)
	s.AddUser("alice", 1).Token("ta")
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		s.AddRepo("alice", n)
	}
	tests := []struct {
		query string
		names []string
		rels  []string
	}{
		{"per_page=2", []string{"a", "b"}, []string{"next", "last"}},
		{"per_page=2&page=2", []string{"c", "d"}, []string{"prev", "next", "last", "first"}},
		{"per_page=2&page=3", []string{"e"}, []string{"prev", "first"}},
		{"per_page=500", []string{"a", "b", "c", "d", "e"}, nil},
		{"per_page=2&page=9", nil, []string{"prev", "first"}},
	}
	for _, tt := range tests {
		var repos []struct{ Name string }
		resp := get(t, s, "/api/v3/user/repos?"+tt.query, "ta", &repos)
		var names []string
		for _, r := range repos {
			names = append(names, r.Name)
		}
		if strings.Join(names, ",") != strings.Join(tt.names, ",") {
			t.Errorf("%s: repos %v, want %v", tt.query, names, tt.names)
		}
		var rels []string
		for _, l := range strings.Split(resp.Header.Get("Link"), ", ") {
			if l == "" {
				continue
			}
			target, rel, _ := strings.Cut(l, "; rel=")
			rels = append(rels, strings.Trim(rel, `"`))
			if !strings.HasPrefix(target, "<"+s.URL()+"/api/v3/user/repos?") || !strings.Contains(target, "per_page=") {
				t.Errorf("%s: link %s", tt.query, l)
			}
		}
		if strings.Join(rels, ",") != strings.Join(tt.rels, ",") {
			t.Errorf("%s: rels %v, want %v", tt.query, rels, tt.rels)
		}
		if resp.Header.Get("X-RateLimit-Limit") != "5000" || resp.Header.Get("X-RateLimit-Resource") != "core" ||
			resp.Header.Get("X-RateLimit-Remaining") == "" || resp.Header.Get("X-RateLimit-Reset") == "" {
			t.Errorf("%s: rate headers %v", tt.query, resp.Header)
		}
	}
}

func TestUserRepos(t *testing.T) {
	t.Parallel()
	s := fakegithub.New(t)
	s.AddUser("alice", 1).Token("ta")
	s.AddUser("bob", 2)
	s.AddRepo("alice", "mine")
	s.AddRepo("bob", "shared", fakegithub.Private(), fakegithub.VisibleTo("alice"))
	s.AddRepo("acme", "org", fakegithub.VisibleTo("alice"))
	s.AddRepo("bob", "public")
	tests := []struct {
		query string
		want  string
	}{
		{"", "acme/org,alice/mine,bob/shared"},
		{"sort=updated", "acme/org,bob/shared,alice/mine"},
		{"sort=created&direction=asc", "alice/mine,bob/shared,acme/org"},
		{"affiliation=owner", "alice/mine"},
		{"affiliation=collaborator", "bob/shared"},
		{"affiliation=organization_member", "acme/org"},
		{"visibility=private", "bob/shared"},
		{"type=member", "acme/org,bob/shared"},
	}
	for _, tt := range tests {
		q := tt.query
		var repos []struct {
			FullName    string `json:"full_name"`
			Permissions struct{ Admin bool }
		}
		get(t, s, "/user/repos?"+q, "ta", &repos)
		var names []string
		for _, r := range repos {
			names = append(names, r.FullName)
			if r.Permissions.Admin != (r.FullName == "alice/mine") {
				t.Errorf("%s: %s permissions %+v", q, r.FullName, r.Permissions)
			}
		}
		if got := strings.Join(names, ","); got != tt.want {
			t.Errorf("%s: %s, want %s", q, got, tt.want)
		}
	}
}

func TestActivityCursors(t *testing.T) {
	t.Parallel()
	s := fakegithub.New(t)
	s.AddUser("alice", 1).Token("ta")
	r := s.AddRepo("alice", "api")
	var ids []int64
	for range 5 {
		ids = append(ids, r.Activity(fakegithub.Activity{Actor: "alice"}).ID)
	}
	path := "/repos/alice/api/activity?per_page=2"
	var seen []int64
	for page := 0; path != ""; page++ {
		if page > 5 {
			t.Fatal("too many pages")
		}
		var acts []struct {
			ID           int64  `json:"id"`
			ActivityType string `json:"activity_type"`
			Actor        struct{ Login string }
		}
		resp := get(t, s, path, "ta", &acts)
		for _, a := range acts {
			seen = append(seen, a.ID)
			if a.ActivityType != "push" || a.Actor.Login != "alice" {
				t.Errorf("activity %+v", a)
			}
		}
		path = ""
		for _, l := range strings.Split(resp.Header.Get("Link"), ", ") {
			if target, ok := strings.CutSuffix(l, `; rel="next"`); ok {
				path = strings.TrimPrefix(strings.Trim(target, "<>"), s.URL())
				if !strings.Contains(path, "after=djE6") {
					t.Errorf("next link %s", target)
				}
			}
		}
	}
	want := []int64{ids[4], ids[3], ids[2], ids[1], ids[0]}
	if len(seen) != 5 || seen[0] != want[0] || seen[4] != want[4] {
		t.Fatalf("activity ids %v, want %v", seen, want)
	}
	if resp := get(t, s, "/repos/alice/api/activity?after=bogus", "ta", nil); resp.StatusCode != 422 {
		t.Fatalf("bad cursor: %d", resp.StatusCode)
	}
}

func TestSearch(t *testing.T) {
	t.Parallel()
	s := fakegithub.New(t)
	s.AddUser("alice", 1).Token("ta")
	a := s.AddRepo("alice", "api")
	b := s.AddRepo("acme", "web", fakegithub.Private(), fakegithub.VisibleTo("alice"))
	c := s.AddRepo("acme", "hidden", fakegithub.Private())
	a.Commit(fakegithub.Commit{Message: "Fix login bug", Author: "alice"})
	b.Commit(fakegithub.Commit{Message: "fix: logout redirect", AuthorName: "Bob Builder"})
	c.Commit(fakegithub.Commit{Message: "fix secret"})
	tests := []struct {
		q    string
		want []string
	}{
		{"fix", []string{"fix: logout redirect", "Fix login bug"}},
		{"fix repo:alice/api", []string{"Fix login bug"}},
		{"fix org:acme", []string{"fix: logout redirect"}},
		{"author:alice", []string{"Fix login bug"}},
		{`"logout redirect"`, []string{"fix: logout redirect"}},
		{"author-name:bob", []string{"fix: logout redirect"}},
		{"secret", nil},
	}
	for _, tt := range tests {
		var res struct {
			TotalCount int `json:"total_count"`
			Items      []struct {
				Commit     struct{ Message string }
				Repository struct {
					FullName string `json:"full_name"`
				}
			}
		}
		resp := get(t, s, "/search/commits?q="+url.QueryEscape(tt.q), "ta", &res)
		var got []string
		for _, it := range res.Items {
			got = append(got, it.Commit.Message)
			if it.Repository.FullName == "" {
				t.Errorf("%s: item without repository", tt.q)
			}
		}
		if strings.Join(got, "|") != strings.Join(tt.want, "|") || res.TotalCount != len(tt.want) {
			t.Errorf("q=%s: %v (total %d), want %v", tt.q, got, res.TotalCount, tt.want)
		}
		if resp.Header.Get("X-RateLimit-Resource") != "search" || resp.Header.Get("X-RateLimit-Limit") != "30" {
			t.Errorf("q=%s: rate headers %v", tt.q, resp.Header)
		}
	}
}

func TestFaults(t *testing.T) {
	t.Parallel()
	s := fakegithub.New(t)
	s.AddUser("alice", 1).Token("ta")
	s.AddRepo("alice", "api").Commit(fakegithub.Commit{Message: "x"})

	s.Inject("/repos/*/*/commits", fakegithub.Error(http.StatusBadGateway, "").Times(1))
	if resp := get(t, s, "/api/v3/repos/alice/api/commits", "ta", nil); resp.StatusCode != http.StatusBadGateway {
		t.Errorf("first call with Times(1): %d", resp.StatusCode)
	}
	if resp := get(t, s, "/repos/alice/api/commits", "ta", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("second call with Times(1): %d", resp.StatusCode)
	}

	reset := time.Now().Add(time.Hour).Truncate(time.Second)
	s.RateLimit(reset)
	var body struct {
		Message          string `json:"message"`
		DocumentationURL string `json:"documentation_url"`
	}
	resp := get(t, s, "/user", "ta", &body)
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("X-RateLimit-Remaining") != "0" ||
		resp.Header.Get("X-RateLimit-Reset") != strconv.FormatInt(reset.Unix(), 10) ||
		!strings.HasPrefix(body.Message, "API rate limit exceeded for user ID 1.") {
		t.Errorf("rate limited: %d %v %+v", resp.StatusCode, resp.Header, body)
	}
	s.ClearFaults()

	s.SecondaryRateLimit(90 * time.Second)
	resp = get(t, s, "/user", "ta", &body)
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("Retry-After") != "90" ||
		!strings.HasSuffix(body.DocumentationURL, "secondary-rate-limits") {
		t.Errorf("secondary rate limit: %d %v %+v", resp.StatusCode, resp.Header, body)
	}
	s.ClearFaults()

	s.RevokeToken("ta")
	if resp := get(t, s, "/user", "ta", &body); resp.StatusCode != http.StatusUnauthorized || body.Message != "Bad credentials" {
		t.Errorf("revoked: %d %+v", resp.StatusCode, body)
	}
	s.ClearFaults()
	if resp := get(t, s, "/user", "ta", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("ClearFaults restored a revoked token: %d", resp.StatusCode)
	}

	s.Fail("/login/oauth/access_token", http.StatusServiceUnavailable)
	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/login/oauth/access_token", nil)
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("Fail on the token endpoint: %d", r2.StatusCode)
	}

	recs := s.RequestsTo("/repos/*/*/commits")
	if len(recs) != 2 || recs[0].Path != "/api/v3/repos/alice/api/commits" || recs[0].APIPath != "/repos/alice/api/commits" ||
		recs[0].Status != http.StatusBadGateway || recs[1].Login != "alice" || recs[1].Status != http.StatusOK {
		t.Errorf("recorded %+v", recs)
	}
}

func TestHang(t *testing.T) {
	t.Parallel()
	s := fakegithub.New(t)
	s.Inject("/user", fakegithub.Hang())
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL()+"/user", nil)
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a hung request answered")
	}
}

func TestNewHandler(t *testing.T) {
	t.Parallel()
	h := fakegithub.NewHandler(fakegithub.WithEpoch(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)))
	h.AddUser("alice", 1).Token("ta")
	r := h.AddRepo("alice", "api")
	cm := r.Commit(fakegithub.Commit{Message: "hello", Author: "alice"})
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/repos/alice/api/commits", nil)
	req.Header.Set("Authorization", "token ta")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var commits []struct {
		SHA     string `json:"sha"`
		HTMLURL string `json:"html_url"`
		Commit  struct {
			Author struct{ Date string }
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&commits); err != nil {
		t.Fatal(err)
	}
	if len(commits) != 1 || commits[0].SHA != cm.SHA || commits[0].HTMLURL != srv.URL+"/alice/api/commit/"+cm.SHA ||
		commits[0].Commit.Author.Date != "2030-01-01T00:01:00Z" {
		t.Fatalf("commits %+v", commits)
	}
	if h.URL() != "" || r.Hook().WebURL != "" {
		t.Fatalf("a NewHandler fake has no URL: %q %q", h.URL(), r.Hook().WebURL)
	}
}

func TestSeedToWebhook(t *testing.T) {
	t.Parallel()
	s := fakegithub.New(t)
	alice := s.AddUser("alice", 1).Token("ta").Profile("Alice Liddell", "alice@example.com")
	s.AddUser("bob", 2).Token("tb")
	r := s.AddRepo("acme", "api", fakegithub.Private(), fakegithub.RepoID(77)).Grant("bob")
	cm := r.Commit(fakegithub.Commit{Message: "ship it", Author: "alice"})
	if cm.AuthorName != "Alice Liddell" || cm.AuthorEmail != "alice@example.com" || len(cm.SHA) != 40 {
		t.Fatalf("commit defaults %+v", cm)
	}
	if resp := get(t, s, "/repos/acme/api/commits", "tb", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("Grant: %d", resp.StatusCode)
	}
	d := fakegithub.NewEventDelivery(fakegithub.PushEvent{Repo: r.Hook(), Sender: alice.Hook(), Commits: []fakegithub.HookCommit{cm.Hook()}})
	parsed, err := gh.ParseWebHook(d.Event, d.Body)
	if err != nil {
		t.Fatal(err)
	}
	e := parsed.(*gh.PushEvent)
	if e.GetRepo().GetID() != r.ID() || e.GetRepo().GetFullName() != r.FullName() || !e.GetRepo().GetPrivate() ||
		e.GetRepo().GetHTMLURL() != s.URL()+"/acme/api" || e.GetRepo().GetURL() != s.APIURL()+"repos/acme/api" ||
		e.GetHeadCommit().GetID() != cm.SHA || e.GetHeadCommit().GetAuthor().GetLogin() != alice.Login() ||
		e.GetSender().GetID() != alice.ID() || e.GetRepo().GetOwner().GetLogin() != r.Owner() || r.Name() != "api" {
		t.Fatalf("push from seeded state: %+v", e)
	}
}

// put sends a JSON PUT to the fake with a token and returns the status and
// the decoded answer.
func put(t *testing.T, s *fakegithub.Server, path, token string, body any) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(http.MethodPut, s.URL()+path, strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func TestPutContents(t *testing.T) {
	t.Parallel()
	s := fakegithub.New(t)
	s.AddUser("alice", 1).Token("ta")
	s.AddUser("carol", 3).Token("tc")
	r := s.AddRepo("alice", "site")
	path := "/repos/alice/site/contents/posts/a.md"
	content := base64.StdEncoding.EncodeToString([]byte("# A\n"))

	code, out := put(t, s, path, "ta", map[string]any{"message": "add a", "content": content})
	file, _ := out["content"].(map[string]any)
	commit, _ := out["commit"].(map[string]any)
	if code != http.StatusCreated || file["path"] != "posts/a.md" || file["sha"] == "" || commit["sha"] == "" ||
		!strings.HasSuffix(file["html_url"].(string), "/alice/site/blob/main/posts/a.md") {
		t.Fatalf("create: %d %v", code, out)
	}
	if code, out := put(t, s, path, "ta", map[string]any{"message": "again", "content": content}); code != http.StatusUnprocessableEntity {
		t.Errorf("update without sha: %d %v", code, out)
	}
	if code, out := put(t, s, path, "ta", map[string]any{"message": "again", "content": content, "sha": "0000"}); code != http.StatusConflict {
		t.Errorf("update with a stale sha: %d %v", code, out)
	}
	if code, out := put(t, s, path, "tc", map[string]any{"message": "carol", "content": content, "sha": file["sha"]}); code != http.StatusForbidden {
		t.Errorf("update by a user who may only read the public repository: %d %v", code, out)
	}
	next := base64.StdEncoding.EncodeToString([]byte("# A, again\n"))
	if code, out := put(t, s, path, "ta", map[string]any{"message": "update a", "content": next, "sha": file["sha"]}); code != http.StatusOK {
		t.Errorf("update: %d %v", code, out)
	}
	var got struct{ Content, Encoding string }
	get(t, s, path, "ta", &got)
	if raw, _ := base64.StdEncoding.DecodeString(strings.ReplaceAll(got.Content, "\n", "")); string(raw) != "# A, again\n" {
		t.Errorf("GET after the update: %q", raw)
	}
	if commits := r.FileCommits(); len(commits) != 2 || commits[1].Message != "update a" || commits[1].Login != "alice" {
		t.Errorf("commits %+v", commits)
	}
}
