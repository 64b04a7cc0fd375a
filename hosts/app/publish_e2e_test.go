package app_test

import (
	"context"
	"crypto/hmac"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/devpilot/devpilot/adapters/publish"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/app"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeaws"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fakewordpress"
	"github.com/devpilot/devpilot/testkit/fixture"
)

// receiver is a webhook target: it checks each delivery's signature, answers
// the first failures with 500 and records what it accepted.
type receiver struct {
	t   *testing.T
	srv *httptest.Server
	mu  sync.Mutex
	// secret is the target's signing secret, known once it is created.
	secret   string
	failures int
	got      []delivery
	arrived  chan delivery
}

type delivery struct {
	id, signature string
	body          map[string]any
	valid         bool
}

func newReceiver(t *testing.T, failures int) *receiver {
	rc := &receiver{t: t, failures: failures, arrived: make(chan delivery, 16)}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		d := delivery{id: r.Header.Get(publish.HeaderDelivery), signature: r.Header.Get(publish.HeaderSignature)}
		d.valid = hmac.Equal([]byte(d.signature), []byte(publish.Sign(rc.secret, raw)))
		_ = json.Unmarshal(raw, &d.body)
		rc.got = append(rc.got, d)
		fail := rc.failures > 0
		if fail {
			rc.failures--
		}
		rc.mu.Unlock()
		if fail {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		rc.arrived <- d
		w.Header().Set("Location", "https://hooks.example.com/posts/"+d.id)
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) deliveries() []delivery {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]delivery(nil), rc.got...)
}

// startApp starts devpilot on env (over startStackWith's defaults) and
// returns it with a stop function, for tests that restart it.
func startApp(t *testing.T, env map[string]string) (*stack, func()) {
	t.Helper()
	skipShort(t)
	st := &stack{t: t, model: fakeopenai.New(t, fakeopenai.WithOfferedToolsOnly()), aws: fakeaws.New(t)}
	full := map[string]string{
		app.EnvAWSEndpoint: st.aws.URL(), app.EnvDatabaseConns: strconv.Itoa(sqlstoretest.TestMaxConns),
		app.EnvHTTPAddr: "127.0.0.1:0", app.EnvOpenAIKey: "sk-test", app.EnvOpenAIBaseURL: st.model.URL(), app.EnvAutoTitle: "0",
		app.EnvLLMStructured: "strict", app.EnvPublishAllowPrivate: "1",
	}
	maps.Copy(full, env)
	cfg, err := app.Load(app.ModeRun, func(k string) string { return full[k] })
	if err != nil {
		t.Fatal(err)
	}
	logs := &addrWatch{addr: make(chan string, 1)}
	fxApp := fx.New(app.Options(cfg, app.NewLogger(cfg, logs)), fx.Populate(&st.id, &st.reg))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := fxApp.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := fxApp.Stop(ctx); err != nil {
				t.Errorf("stop: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	select {
	case st.base = <-logs.addr:
	case <-time.After(10 * time.Second):
		t.Fatal("no listening line")
	}
	return st, stop
}

// approvedItem generates a draft in project web and moves it to approved.
func (st *stack) approvedItem(token string) string {
	st.t.Helper()
	code, body, _ := st.call(token, "POST", "/content/briefs", map[string]any{"project_id": "web", "title": "Launch"})
	var brief struct{ ID string }
	if err := json.Unmarshal(body, &brief); code != 201 || err != nil {
		st.t.Fatalf("create brief: %d %s", code, body)
	}
	st.model.Enqueue(fakeopenai.Text(`{"title":"We launched","body":"Today we launch the new plans."}`))
	id := st.generate(token, brief.ID)
	v := st.waitDrafted(token, id)
	for _, status := range []string{"in_review", "approved"} {
		code, next, body := st.update(token, id, v.Version, map[string]any{"status": status})
		if code != 200 {
			st.t.Fatalf("move to %s: %d %s", status, code, body)
		}
		v = next
	}
	return id
}

func (st *stack) createTarget(token string, in map[string]any) map[string]any {
	st.t.Helper()
	code, body, _ := st.call(token, "POST", "/content/targets", in)
	var out map[string]any
	if err := json.Unmarshal(body, &out); code != 201 || err != nil {
		st.t.Fatalf("create target: %d %s", code, body)
	}
	return out
}

type publicationView struct {
	ID        string
	Status    string
	RemoteURL string `json:"remote_url"`
	Error     string
	Attempts  []struct {
		At        time.Time
		Outcome   string
		RemoteURL string `json:"remote_url"`
		Error     string
	}
}

// waitPublished polls an item's publications until pubID has finished.
func (st *stack) waitPublished(token, itemID, pubID string) publicationView {
	st.t.Helper()
	deadline := time.Now().Add(40 * time.Second)
	for {
		code, body, _ := st.call(token, "GET", "/content/"+itemID+"/publications", nil)
		var out struct{ Items []publicationView }
		if err := json.Unmarshal(body, &out); code != 200 || err != nil {
			st.t.Fatalf("list publications: %d %s", code, body)
		}
		for _, p := range out.Items {
			if p.ID == pubID && (p.Status == "succeeded" || p.Status == "failed") {
				return p
			}
		}
		if time.Now().After(deadline) {
			st.t.Fatalf("publication %s not finished after 40s: %s", pubID, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (st *stack) publish(token, itemID string, req map[string]any) (int, map[string]any, []byte) {
	st.t.Helper()
	code, body, _ := st.call(token, "POST", "/content/"+itemID+"/publish", req)
	var out map[string]any
	_ = json.Unmarshal(body, &out)
	return code, out, body
}

func TestPublishEndToEnd(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st, _ := startApp(t, map[string]string{app.EnvDatabaseURL: stackDBURL(t, sqlstoreDialect(string(d))), app.EnvDataDir: t.TempDir()})
			member := st.operator("publisher@example.com")
			rc := newReceiver(t, 2)

			target := st.createTarget(member, map[string]any{"project_id": "web", "name": "hook", "kind": "webhook",
				"config": map[string]string{"url": rc.srv.URL + "/in"}})
			secret, _ := target["secret"].(string)
			if !strings.HasPrefix(secret, "whsec_") || target["has_secret"] != true {
				t.Fatalf("target %v", target)
			}
			rc.mu.Lock()
			rc.secret = secret
			rc.mu.Unlock()
			targetID := target["id"].(string)
			code, body, _ := st.call(member, "GET", "/content/targets?project_id=web", nil)
			if code != 200 || !containsAll(body, targetID) || strings.Contains(string(body), secret) {
				t.Fatalf("list targets: %d %s", code, body)
			}

			// A draft cannot be published.
			code, body, _ = st.call(member, "POST", "/content/briefs", map[string]any{"project_id": "web", "title": "Draft"})
			var brief struct{ ID string }
			if err := json.Unmarshal(body, &brief); code != 201 || err != nil {
				t.Fatalf("create brief: %d %s", code, body)
			}
			st.model.Enqueue(fakeopenai.Text(`{"title":"Draft","body":"Not yet."}`))
			draft := st.generate(member, brief.ID)
			st.waitDrafted(member, draft)
			if code, _, body := st.publish(member, draft, map[string]any{"target_id": targetID}); code != 409 {
				t.Fatalf("publish a draft: %d %s", code, body)
			}

			// An approved item is delivered once, signed, after two 500s.
			item := st.approvedItem(member)
			code, out, body := st.publish(member, item, map[string]any{"target_id": targetID})
			if code != 202 || out["status"] != "queued" {
				t.Fatalf("publish: %d %s", code, body)
			}
			pubID := out["publication_id"].(string)
			pub := st.waitPublished(member, item, pubID)
			if pub.Status != "succeeded" || len(pub.Attempts) != 3 || pub.Attempts[0].Outcome != "failed" || pub.Attempts[2].Outcome != "ok" ||
				pub.RemoteURL != "https://hooks.example.com/posts/"+pubID {
				t.Fatalf("publication %+v", pub)
			}
			got := rc.deliveries()
			if len(got) != 3 {
				t.Fatalf("%d requests, want 3 (two failures, one success)", len(got))
			}
			for i, dl := range got {
				if dl.id != pubID || !dl.valid || dl.body["delivery_id"] != pubID {
					t.Errorf("request %d: delivery %q, signature valid %v, body %v", i, dl.id, dl.valid, dl.body)
				}
			}
			if it, _ := got[2].body["item"].(map[string]any); it["id"] != item || it["title"] != "We launched" {
				t.Errorf("delivered item %v", got[2].body["item"])
			}
			code, body, _ = st.call(member, "GET", "/content/"+item, nil)
			var v contentView
			if err := json.Unmarshal(body, &v); code != 200 || err != nil || v.Status != "published" || !containsAll(body, `"published_at":"`, `"published_via":"target"`, `"published_url":"https://hooks.example.com/posts/`+pubID+`"`) {
				t.Fatalf("item after publishing: %d %s", code, body)
			}

			// WordPress, with an application password.
			wp := fakewordpress.New("editor", "abcd efgh ijkl mnop")
			defer wp.Close()
			wpTarget := st.createTarget(member, map[string]any{"project_id": "web", "name": "blog", "kind": "wordpress",
				"config": map[string]string{"site_url": wp.URL(), "username": "editor", "application_password": "abcd efgh ijkl mnop"}})
			if _, ok := wpTarget["secret"]; ok || strings.Contains(string(mustJSON(wpTarget)), "abcd") {
				t.Fatalf("wordpress target shows its password: %v", wpTarget)
			}
			item2 := st.approvedItem(member)
			_, out, body = st.publish(member, item2, map[string]any{"target_id": wpTarget["id"]})
			pubID, _ = out["publication_id"].(string)
			if pub := st.waitPublished(member, item2, pubID); pub.Status != "succeeded" || pub.RemoteURL != wp.URL()+"/?p=1" {
				t.Fatalf("wordpress publication %+v (%s)", pub, body)
			}
			if posts := wp.Posts(); len(posts) != 1 || posts[0].Title != "We launched" || posts[0].Status != "publish" {
				t.Fatalf("posts %+v", posts)
			}

			// A scheduled publication cancelled before it runs is never
			// delivered: a later one arrives alone.
			item3 := st.approvedItem(member)
			when := time.Now().Add(time.Minute) // as issue 24 asks: a minute ahead
			at := when.UTC().Format(time.RFC3339Nano)
			code, out, body = st.publish(member, item3, map[string]any{"target_id": targetID, "at": at})
			if code != 202 || out["status"] != "scheduled" {
				t.Fatalf("schedule: %d %s", code, body)
			}
			cancelled := out["publication_id"].(string)
			if code, body, _ := st.call(member, "DELETE", "/content/"+item3+"/publications/"+cancelled, nil); code != 200 || !containsAll(body, `"cancelled"`) {
				t.Fatalf("cancel: %d %s", code, body)
			}
			if code, body, _ := st.call(member, "DELETE", "/content/"+item3+"/publications/"+cancelled, nil); code != 409 {
				t.Fatalf("cancel again: %d %s", code, body)
			}
			later := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339Nano)
			_, out, _ = st.publish(member, item3, map[string]any{"target_id": targetID, "at": later})
			second := out["publication_id"].(string)
			if pub := st.waitPublished(member, item3, second); pub.Status != "succeeded" {
				t.Fatalf("the later publication %+v", pub)
			}
			for _, dl := range rc.deliveries() {
				if dl.id == cancelled {
					t.Fatal("the cancelled publication was delivered")
				}
			}

			// Hostile input is 4xx problem+json.
			for _, tc := range []struct {
				name string
				path string
				body any
				want int
			}{
				{"NUL in a name", "/content/targets", map[string]any{"project_id": "web", "name": "a\x00b", "kind": "webhook", "config": map[string]string{"url": "https://a.example"}}, 422},
				{"bad URL", "/content/targets", map[string]any{"project_id": "web", "name": "x", "kind": "webhook", "config": map[string]string{"url": "javascript:alert(1)"}}, 422},
				{"unknown kind", "/content/targets", map[string]any{"project_id": "web", "name": "x", "kind": "ftp", "config": map[string]string{}}, 422},
				{"huge config", "/content/targets", map[string]any{"project_id": "web", "name": "x", "kind": "webhook", "config": map[string]string{"url": "https://a.example/" + strings.Repeat("a", 5000)}}, 422},
				{"huge body", "/content/targets", map[string]any{"project_id": "web", "name": strings.Repeat("n", 2<<20), "kind": "webhook"}, 413},
				{"unknown field", "/content/targets", map[string]any{"project_id": "web", "name": "x", "kind": "webhook", "secret": "s"}, 400},
				{"at in the past", "/content/" + item3 + "/publish", map[string]any{"target_id": targetID, "at": "2020-01-01T00:00:00Z"}, 422},
				{"at not a time", "/content/" + item3 + "/publish", map[string]any{"target_id": targetID, "at": "tomorrow"}, 422},
				{"at without an offset", "/content/" + item3 + "/publish", map[string]any{"target_id": targetID, "at": "2030-01-02T15:04:05"}, 422},
				{"no target", "/content/" + item3 + "/publish", map[string]any{}, 400},
			} {
				code, body, _ := st.call(member, "POST", tc.path, tc.body)
				if code != tc.want && !(tc.want == 400 && code == 422) {
					t.Errorf("%s: %d %s, want %d", tc.name, code, body, tc.want)
				}
			}
			if code, _, _ := st.call(member, "DELETE", "/content/targets/"+targetID, nil); code != 204 {
				t.Errorf("delete target: %d", code)
			}
			if code, _, _ := st.call(member, "DELETE", "/content/targets/"+targetID, nil); code != 404 {
				t.Errorf("delete target again: %d", code)
			}
		})
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// TestPublishScheduledSurvivesRestart: a publish scheduled a minute ahead
// is delivered once, signed, no earlier than its time, by a new process
// started on the same database after the first one stopped.
func TestPublishScheduledSurvivesRestart(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			env := map[string]string{app.EnvDatabaseURL: stackDBURL(t, sqlstoreDialect(string(d))), app.EnvDataDir: t.TempDir()}
			st, stop := startApp(t, env)
			member := st.operator("scheduler@example.com")
			rc := newReceiver(t, 0)
			target := st.createTarget(member, map[string]any{"project_id": "web", "name": "hook", "kind": "webhook",
				"config": map[string]string{"url": rc.srv.URL}})
			rc.mu.Lock()
			rc.secret = target["secret"].(string)
			rc.mu.Unlock()
			item := st.approvedItem(member)
			when := time.Now().Add(time.Minute) // as issue 24 asks: a minute ahead
			at := when.UTC().Format(time.RFC3339Nano)
			code, out, body := st.publish(member, item, map[string]any{"target_id": target["id"], "at": at})
			if code != 202 || out["status"] != "scheduled" || out["at"] == nil {
				t.Fatalf("schedule: %d %s", code, body)
			}
			pubID := out["publication_id"].(string)
			stop()
			if n := len(rc.deliveries()); n != 0 {
				t.Fatalf("%d deliveries before the restart", n)
			}

			st2, _ := startApp(t, env)
			select {
			case dl := <-rc.arrived:
				if early := time.Until(when); early > 0 {
					t.Fatalf("delivered %s before its time", early)
				}
				if dl.id != pubID || !dl.valid {
					t.Fatalf("delivery %q, signature valid %v", dl.id, dl.valid)
				}
			case <-time.After(time.Until(when) + 60*time.Second):
				t.Fatal("the scheduled publication did not arrive after the restart")
			}
			if pub := st2.waitPublished(member, item, pubID); pub.Status != "succeeded" || len(pub.Attempts) != 1 {
				t.Fatalf("publication %+v", pub)
			}
			if n := len(rc.deliveries()); n != 1 {
				t.Fatalf("%d deliveries, want 1", n)
			}
		})
	}
}

func TestPublishGitHubFileEndToEnd(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startSCMStack(t, string(d))
			st.gh.AddUser("octo-alice", 101)
			site := st.gh.AddRepo("octo-alice", "site")
			site.Files(map[string]string{"README.md": "site\n"})
			alice := st.operator("alice@example.com")
			st.connect(alice, "octo-alice")
			var repoID string
			for _, r := range list[repoJSON](st, alice, "/scm/repos").Items {
				if r.FullName == "octo-alice/site" {
					repoID = r.ID
				}
			}
			if repoID == "" {
				t.Fatal("octo-alice/site is not listed")
			}
			if code, body, _ := st.call(alice, "POST", "/content/targets", map[string]any{"project_id": "web", "name": "x", "kind": "github_file",
				"config": map[string]string{"repo_id": "01a22116-0000-7000-8000-000000000000", "path_template": "content/{slug}.md"}}); code != 422 {
				t.Fatalf("a target in an unknown repository: %d %s", code, body)
			}
			target := st.createTarget(alice, map[string]any{"project_id": "web", "name": "site", "kind": "github_file",
				"config": map[string]string{"repo_id": repoID, "path_template": "content/{slug}.md"}})
			item := st.approvedItem(alice)
			code, out, body := st.publish(alice, item, map[string]any{"target_id": target["id"]})
			if code != 202 {
				t.Fatalf("publish: %d %s", code, body)
			}
			pub := st.waitPublished(alice, item, out["publication_id"].(string))
			if pub.Status != "succeeded" || !strings.HasSuffix(pub.RemoteURL, "/octo-alice/site/blob/main/content/we-launched.md") {
				t.Fatalf("publication %+v", pub)
			}
			commits := site.FileCommits()
			if len(commits) != 1 || commits[0].Path != "content/we-launched.md" || !strings.Contains(commits[0].Content, "Today we launch the new plans.") {
				t.Fatalf("commits %+v", commits)
			}

			// The target commits with alice's connection: another member may
			// neither publish through it nor delete it (403
			// target_creator_only); an admin may publish through it.
			bob := st.operator("bob@example.com")
			admin, _ := st.cloudUser("dana@example.com", "acme", ports.RoleAdmin)
			bobItem := st.approvedItem(bob)
			for _, tc := range []struct{ method, path string }{{"POST", "/content/" + bobItem + "/publish"}, {"DELETE", "/content/targets/" + target["id"].(string)}} {
				var body any
				if tc.method == "POST" {
					body = map[string]any{"target_id": target["id"]}
				}
				code, resp, _ := st.call(bob, tc.method, tc.path, body)
				if code != 403 || !containsAll(resp, `"code":"target_creator_only"`) {
					t.Errorf("another member: %s %s: %d %s, want 403 target_creator_only", tc.method, tc.path, code, resp)
				}
			}
			code, out, body = st.publish(admin, bobItem, map[string]any{"target_id": target["id"]})
			if code != 202 {
				t.Fatalf("an admin publishes: %d %s", code, body)
			}
			if pub := st.waitPublished(admin, bobItem, out["publication_id"].(string)); pub.Status != "succeeded" {
				t.Fatalf("the admin's publication %+v", pub)
			}

			// No template writes into .git or .github.
			for _, tpl := range []string{".github/workflows/{slug}.yml", "docs/.GIT/hooks/{slug}", "a/../.github/x.md"} {
				code, resp, _ := st.call(alice, "POST", "/content/targets", map[string]any{"project_id": "web", "name": "ci", "kind": "github_file",
					"config": map[string]string{"repo_id": repoID, "path_template": tpl}})
				if code != 422 || !containsAll(resp, `"field":"config.path_template"`) {
					t.Errorf("path_template %s: %d %s, want 422 naming config.path_template", tpl, code, resp)
				}
			}
			if code, resp, _ := st.call(alice, "DELETE", "/content/targets/"+target["id"].(string), nil); code != 204 {
				t.Errorf("the creator deletes the target: %d %s", code, resp)
			}
		})
	}
}

// Without DEVPILOT_PUBLISH_ALLOW_PRIVATE, a webhook or WordPress target at
// any spelling of a local or non-public address is 422 problem+json
// naming the field, and nothing is stored.
func TestPublishTargetAddressGuardEndToEnd(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st, _ := startApp(t, map[string]string{app.EnvDatabaseURL: stackDBURL(t, sqlstoreDialect(string(d))), app.EnvDataDir: t.TempDir(),
				app.EnvPublishAllowPrivate: "0"})
			tok := st.operator("publisher@example.com")
			for _, host := range fixture.LocalHostSpellings {
				for _, tc := range []struct {
					kind, field string
					cfg         map[string]string
				}{
					{"webhook", "config.url", map[string]string{"url": "http://" + host + "/in"}},
					{"wordpress", "config.site_url", map[string]string{"site_url": "https://" + host, "username": "u", "application_password": "p"}},
				} {
					code, body, _ := st.call(tok, "POST", "/content/targets", map[string]any{"project_id": "web", "name": "x", "kind": tc.kind, "config": tc.cfg})
					var p struct {
						Code   string `json:"code"`
						Errors []struct{ Field string }
					}
					if err := json.Unmarshal(body, &p); err != nil || code != 422 || len(p.Errors) != 1 || p.Errors[0].Field != tc.field {
						t.Errorf("%s at %s: %d %s, want 422 naming %s", tc.kind, host, code, body, tc.field)
					}
				}
			}
			code, body, _ := st.call(tok, "GET", "/content/targets?project_id=web", nil)
			if code != 200 || !containsAll(body, `"items":[]`) {
				t.Errorf("targets after the refusals: %d %s", code, body)
			}
			if code, body, _ := st.call(tok, "POST", "/content/targets", map[string]any{"project_id": "web", "name": "ok", "kind": "webhook",
				"config": map[string]string{"url": "https://hooks.example.com/in"}}); code != 201 {
				t.Errorf("a public webhook: %d %s", code, body)
			}
		})
	}
}
