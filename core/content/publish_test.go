package content_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/core/content"
	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
	"github.com/devpilot/devpilot/testkit/mocks"
)

// plainCipher "seals" by prefixing the aad, so tests can see what is stored.
type plainCipher struct{}

func (plainCipher) Seal(p, aad []byte) (string, error) {
	return "sealed:" + string(aad) + ":" + string(p), nil
}
func (plainCipher) Open(s string, aad []byte) ([]byte, error) {
	rest, ok := strings.CutPrefix(s, "sealed:"+string(aad)+":")
	if !ok {
		return nil, ports.Errorf(ports.KindInternal, "bad seal")
	}
	return []byte(rest), nil
}

// fakePublisher answers each call with the next of its errors (nil: success).
type fakePublisher struct {
	mu       sync.Mutex
	errs     []error
	webhooks []ports.WebhookPost
	posts    []ports.WordPressPost
}

func (f *fakePublisher) next() error {
	if len(f.errs) == 0 {
		return nil
	}
	err := f.errs[0]
	f.errs = f.errs[1:]
	return err
}

func (f *fakePublisher) Webhook(_ context.Context, p ports.WebhookPost) (ports.PublishResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.webhooks = append(f.webhooks, p)
	if err := f.next(); err != nil {
		return ports.PublishResult{}, err
	}
	return ports.PublishResult{RemoteURL: "https://example.com/posts/1"}, nil
}

func (f *fakePublisher) WordPress(_ context.Context, p ports.WordPressPost) (ports.PublishResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.posts = append(f.posts, p)
	if err := f.next(); err != nil {
		return ports.PublishResult{}, err
	}
	return ports.PublishResult{RemoteURL: "https://blog.example.com/?p=7"}, nil
}

// fakeRepos is every repository but absent, and records the files written.
type fakeRepos struct {
	mu     sync.Mutex
	writes []ports.RepoFileWrite
	owners []ports.Owner
}

func (f *fakeRepos) CheckRepo(_ context.Context, _ ports.Owner, repoID string) (ports.Repository, error) {
	if repoID == absent {
		return ports.Repository{}, ports.NotFound("repository", repoID)
	}
	return ports.Repository{ID: repoID}, nil
}

func (f *fakeRepos) WriteFile(_ context.Context, o ports.Owner, w ports.RepoFileWrite) (ports.PublishResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes, f.owners = append(f.writes, w), append(f.owners, o)
	return ports.PublishResult{RemoteURL: "https://github.example/blob/main/" + w.Path}, nil
}

type publishEnv struct {
	*env
	pub   *fakePublisher
	repos *fakeRepos
	audit []ports.AuditEntry
}

func newPublishEnv(t *testing.T) *publishEnv {
	t.Helper()
	e := newEnv(t, content.Config{})
	pe := &publishEnv{env: e, pub: &fakePublisher{}, repos: &fakeRepos{}}
	ctrl := gomock.NewController(t)
	jobs := mocks.NewMockJobQueue(ctrl)
	jobs.EXPECT().Enqueue(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(ctx context.Context, args ports.JobArgs, opts ports.EnqueueOptions) error {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.queued = append(e.queued, enqueued{args: args, opts: opts, inTx: inTx(ctx)})
			return nil
		})
	audit := mocks.NewMockAuditStore(ctrl)
	audit.EXPECT().RecordAudit(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(func(_ context.Context, a ports.AuditEntry) error {
		e.mu.Lock()
		defer e.mu.Unlock()
		pe.audit = append(pe.audit, a)
		return nil
	})
	e.svc = content.New(content.Config{PublishBackoff: time.Millisecond}, content.Deps{Store: e.content, Tx: marked{e.store, e},
		Jobs: jobs, Clock: e.clock, IDs: e.ids, Publish: e.store, Cipher: plainCipher{}, Publisher: pe.pub, Repos: pe.repos, Audit: audit})
	return pe
}

func (e *publishEnv) webhookTarget(p ports.Principal) content.NewTarget {
	e.t.Helper()
	nt, err := e.svc.CreateTarget(as(p), content.TargetInput{ProjectID: project, Name: "hook", Kind: ports.TargetWebhook,
		Config: map[string]string{"url": "https://hooks.example.com/in"}})
	if err != nil {
		e.t.Fatalf("CreateTarget: %v", err)
	}
	return nt
}

func (e *publishEnv) lastPublishJob() content.PublishContentArgs {
	e.t.Helper()
	jobs := e.jobs()
	for i := len(jobs) - 1; i >= 0; i-- {
		if a, ok := jobs[i].args.(content.PublishContentArgs); ok {
			if !jobs[i].inTx {
				e.t.Error("the publish job was enqueued outside the transaction")
			}
			return a
		}
	}
	e.t.Fatal("no publish job enqueued")
	return content.PublishContentArgs{}
}

func TestCreateTargetValidates(t *testing.T) {
	t.Parallel()
	e := newPublishEnv(t)
	for _, tc := range []struct {
		name  string
		in    content.TargetInput
		field string
	}{
		{"unknown kind", content.TargetInput{ProjectID: project, Name: "x", Kind: "ftp"}, "kind"},
		{"no name", content.TargetInput{ProjectID: project, Kind: "webhook", Config: map[string]string{"url": "https://a.example"}}, "name"},
		{"bad project", content.TargetInput{ProjectID: "a b", Name: "x", Kind: "webhook", Config: map[string]string{"url": "https://a.example"}}, "project_id"},
		{"ftp url", content.TargetInput{ProjectID: project, Name: "x", Kind: "webhook", Config: map[string]string{"url": "ftp://a.example"}}, "config.url"},
		{"loopback", content.TargetInput{ProjectID: project, Name: "x", Kind: "webhook", Config: map[string]string{"url": "http://127.0.0.1:9/x"}}, "config.url"},
		{"metadata", content.TargetInput{ProjectID: project, Name: "x", Kind: "webhook", Config: map[string]string{"url": "http://169.254.169.254/"}}, "config.url"},
		{"private", content.TargetInput{ProjectID: project, Name: "x", Kind: "wordpress", Config: map[string]string{"site_url": "http://10.0.0.1", "username": "u", "application_password": "p"}}, "config.site_url"},
		{"localhost", content.TargetInput{ProjectID: project, Name: "x", Kind: "webhook", Config: map[string]string{"url": "http://localhost:8080"}}, "config.url"},
		{"unknown key", content.TargetInput{ProjectID: project, Name: "x", Kind: "webhook", Config: map[string]string{"url": "https://a.example", "secret": "s"}}, "config.secret"},
		{"no password", content.TargetInput{ProjectID: project, Name: "x", Kind: "wordpress", Config: map[string]string{"site_url": "https://blog.example", "username": "u"}}, "config.application_password"},
		{"huge", content.TargetInput{ProjectID: project, Name: "x", Kind: "webhook", Config: map[string]string{"url": "https://a.example/" + strings.Repeat("a", 3000)}}, "config.url"},
		{"path escapes", content.TargetInput{ProjectID: project, Name: "x", Kind: "github_file", Config: map[string]string{"repo_id": absent, "path_template": "../x.md"}}, "config.path_template"},
	} {
		_, err := e.svc.CreateTarget(as(alice), tc.in)
		if !errors.Is(err, ports.ErrInvalid) || !strings.Contains(strings.Join(fieldsOf(err), ","), tc.field) {
			t.Errorf("%s: %v (fields %v), want invalid naming %s", tc.name, err, fieldsOf(err), tc.field)
		}
	}
}

// Every spelling of a local or non-public address is refused as a webhook
// URL and a WordPress site, naming the field; public names and addresses
// are not.
func TestCreateTargetRefusesEverySpellingOfALocalAddress(t *testing.T) {
	t.Parallel()
	e := newPublishEnv(t)
	for _, host := range fixture.LocalHostSpellings {
		for _, tc := range []struct {
			kind, field string
			cfg         map[string]string
		}{
			{"webhook", "config.url", map[string]string{"url": "http://" + host + ":8080/in"}},
			{"wordpress", "config.site_url", map[string]string{"site_url": "https://" + host, "username": "u", "application_password": "p"}},
		} {
			_, err := e.svc.CreateTarget(as(alice), content.TargetInput{ProjectID: project, Name: "x", Kind: tc.kind, Config: tc.cfg})
			if !errors.Is(err, ports.ErrInvalid) || strings.Join(fieldsOf(err), ",") != tc.field {
				t.Errorf("%s at %s: %v (fields %v), want invalid naming %s", tc.kind, host, err, fieldsOf(err), tc.field)
			}
		}
	}
	for i, u := range []string{"https://hooks.example.com/in", "http://93.184.216.34/in", "https://[2606:4700::1111]:8443/in", "https://xn--bcher-kva.example/"} {
		if _, err := e.svc.CreateTarget(as(alice), content.TargetInput{ProjectID: project, Name: fmt.Sprint("ok", i), Kind: "webhook",
			Config: map[string]string{"url": u}}); err != nil {
			t.Errorf("webhook at %s: %v", u, err)
		}
	}
}

func TestCreateTargetSealsItsSecret(t *testing.T) {
	t.Parallel()
	e := newPublishEnv(t)
	nt := e.webhookTarget(alice)
	if !strings.HasPrefix(nt.Secret, "whsec_") || len(nt.Secret) != 6+64 {
		t.Errorf("secret %q, want whsec_ and 64 hex digits", nt.Secret)
	}
	stored, err := e.store.GetTarget(t.Context(), alice.OrgID, nt.Target.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.SealedSecret != "sealed:"+nt.Target.ID+":"+nt.Secret {
		t.Errorf("sealed secret %q", stored.SealedSecret)
	}
	if _, err := e.svc.CreateTarget(as(alice), content.TargetInput{ProjectID: project, Name: "hook", Kind: "webhook",
		Config: map[string]string{"url": "https://a.example"}}); !errors.Is(err, ports.ErrConflict) {
		t.Errorf("a second target named hook: %v, want conflict", err)
	}
	wp, err := e.svc.CreateTarget(as(alice), content.TargetInput{ProjectID: project, Name: "blog", Kind: "wordpress",
		Config: map[string]string{"site_url": "https://blog.example/", "username": "ed", "application_password": "abcd efgh"}})
	if err != nil || wp.Secret != "" || wp.Target.Config["site_url"] != "https://blog.example" || wp.Target.Config["application_password"] != "" {
		t.Errorf("wordpress target %+v, %v", wp, err)
	}
	list, err := e.svc.Targets(as(alice), project)
	if err != nil || len(list) != 2 {
		t.Errorf("Targets = %v, %v", list, err)
	}
	if list, _ := e.svc.Targets(as(olga), project); len(list) != 0 {
		t.Errorf("another org sees %v", list)
	}
}

func TestPublishOnlyApproved(t *testing.T) {
	t.Parallel()
	e := newPublishEnv(t)
	nt := e.webhookTarget(alice)
	draft := e.seedItem(alice, ports.ContentDraft)
	if _, err := e.svc.Publish(as(alice), draft.ID, nt.Target.ID, nil, nil); errCode(err) != content.CodeNotApproved {
		t.Errorf("Publish(draft) = %v, want not_approved", err)
	}
	ok := e.seedItem(alice, ports.ContentApproved)
	past := e.clock.Now().Add(-time.Minute)
	if _, err := e.svc.Publish(as(alice), ok.ID, nt.Target.ID, &past, nil); !errors.Is(err, ports.ErrInvalid) {
		t.Errorf("Publish(at in the past) = %v, want invalid", err)
	}
	far := e.clock.Now().Add(400 * 24 * time.Hour)
	if _, err := e.svc.Publish(as(alice), ok.ID, nt.Target.ID, &far, nil); !errors.Is(err, ports.ErrInvalid) {
		t.Errorf("Publish(at in 400 days) = %v, want invalid", err)
	}
	if _, err := e.svc.Publish(as(olga), ok.ID, nt.Target.ID, nil, nil); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("Publish(another org's item) = %v, want not_found", err)
	}
	if _, err := e.svc.Publish(as(alice), ok.ID, absent, nil, nil); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("Publish(unknown target) = %v, want not_found", err)
	}
}

func TestPublishRetriesAndRecordsEveryAttempt(t *testing.T) {
	t.Parallel()
	e := newPublishEnv(t)
	nt := e.webhookTarget(alice)
	it := e.seedItem(alice, ports.ContentApproved)
	pub, err := e.svc.Publish(as(alice), it.ID, nt.Target.ID, nil, nil)
	if err != nil || pub.Status != ports.PublicationQueued {
		t.Fatalf("Publish = %+v, %v", pub, err)
	}
	e.pub.errs = []error{ports.Errorf(ports.KindUnavailable, "HTTP 500"), ports.Errorf(ports.KindTimeout, "no answer")}
	args := e.lastPublishJob()
	if err := e.svc.RunPublication(t.Context(), args, false); err != nil {
		t.Fatalf("RunPublication: %v", err)
	}
	got, _ := e.store.GetPublication(t.Context(), alice.OrgID, pub.ID)
	if got.Status != ports.PublicationSucceeded || len(got.Attempts) != 3 || got.RemoteURL != "https://example.com/posts/1" {
		t.Errorf("publication %+v", got)
	}
	for i, w := range e.pub.webhooks {
		if w.DeliveryID != pub.ID || w.Secret != nt.Secret {
			t.Errorf("delivery %d: id %s secret %s", i, w.DeliveryID, w.Secret)
		}
	}
	if st := e.mustItem(it.ID); st.Status != ports.ContentPublished || st.Version != it.Version+1 || st.PublishedAt == nil {
		t.Errorf("item %s v%d, want published v%d", st.Status, st.Version, it.Version+1)
	}
	// A run again (a retried job) publishes nothing twice.
	if err := e.svc.RunPublication(t.Context(), args, true); err != nil || len(e.pub.webhooks) != 3 {
		t.Errorf("a second run: %v, %d deliveries", err, len(e.pub.webhooks))
	}
}

func TestPublishFailureLeavesItemApproved(t *testing.T) {
	t.Parallel()
	e := newPublishEnv(t)
	nt := e.webhookTarget(alice)
	it := e.seedItem(alice, ports.ContentApproved)
	pub, _ := e.svc.Publish(as(alice), it.ID, nt.Target.ID, nil, nil)
	e.pub.errs = []error{ports.Errorf(ports.KindUnavailable, "HTTP 503"), ports.Errorf(ports.KindUnavailable, "HTTP 503"),
		ports.Errorf(ports.KindUnavailable, "HTTP 503"), ports.Errorf(ports.KindUpstream, "HTTP 410 gone")}
	args := e.lastPublishJob()
	if err := e.svc.RunPublication(t.Context(), args, false); err == nil {
		t.Fatal("a run that tried thrice without success returned nil; want an error so the job retries")
	}
	if err := e.svc.RunPublication(t.Context(), args, false); err != nil {
		t.Fatalf("a permanent failure: %v", err)
	}
	got, _ := e.store.GetPublication(t.Context(), alice.OrgID, pub.ID)
	if got.Status != ports.PublicationFailed || len(got.Attempts) != 4 || !strings.Contains(got.Error, "410") {
		t.Errorf("publication %+v", got)
	}
	if st := e.mustItem(it.ID); st.Status != ports.ContentApproved {
		t.Errorf("item %s, want approved", st.Status)
	}
}

func TestCancelScheduledPublication(t *testing.T) {
	t.Parallel()
	e := newPublishEnv(t)
	nt := e.webhookTarget(alice)
	it := e.seedItem(alice, ports.ContentApproved)
	at := e.clock.Now().Add(time.Hour)
	pub, err := e.svc.Publish(as(alice), it.ID, nt.Target.ID, &at, nil)
	if err != nil || pub.Status != ports.PublicationScheduled {
		t.Fatalf("Publish = %+v, %v", pub, err)
	}
	if j := e.jobs(); !j[len(j)-1].opts.RunAt.Equal(at) {
		t.Errorf("job runs at %v, want %v", j[len(j)-1].opts.RunAt, at)
	}
	if _, err := e.svc.CancelPublication(as(olga), it.ID, pub.ID); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("another org cancels: %v", err)
	}
	if _, err := e.svc.CancelPublication(as(alice), it.ID, pub.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.RunPublication(t.Context(), e.lastPublishJob(), false); err != nil || len(e.pub.webhooks) != 0 {
		t.Errorf("the cancelled publication ran: %v, %d deliveries", err, len(e.pub.webhooks))
	}
	if _, err := e.svc.CancelPublication(as(alice), it.ID, pub.ID); errCode(err) != content.CodeStarted {
		t.Errorf("cancel again: %v, want publication_started", err)
	}
	list, err := e.svc.Publications(as(alice), it.ID)
	if err != nil || len(list) != 1 || list[0].Status != ports.PublicationCancelled {
		t.Errorf("Publications = %+v, %v", list, err)
	}
	var actions []string
	for _, a := range e.audit {
		actions = append(actions, a.Action)
	}
	if got := strings.Join(actions, ","); got != "content.create_target,content.publish,content.cancel_publication,content.cancel_publication" {
		t.Errorf("audit %s", got)
	}
}

func TestFilePath(t *testing.T) {
	t.Parallel()
	it := ports.ContentItem{ID: "id-1", Title: "Hello, «World» — 2026!"}
	if got := content.FilePath("content/{date}-{slug}.md", it, time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)); got != "content/2026-11-28-hello-world-2026.md" {
		t.Errorf("FilePath = %q", got)
	}
}

func TestPublishContentTool(t *testing.T) {
	t.Parallel()
	e := newPublishEnv(t)
	nt := e.webhookTarget(alice)
	it := e.seedItem(alice, ports.ContentApproved)
	var publish, list tool.Tool
	for _, tl := range e.svc.Tools() {
		switch tl.Name {
		case "publish_content":
			publish = tl
		case "list_publish_targets":
			list = tl
		}
	}
	if publish.Effect != tool.EffectWrite || publish.Summary == nil {
		t.Fatalf("publish_content is %+v, want a write tool with a summary", publish)
	}
	res, err := list.Run(as(alice), json.RawMessage(`{"project_id":"`+project+`"}`))
	if b, _ := json.Marshal(res); err != nil || !strings.Contains(string(b), nt.Target.ID) || strings.Contains(string(b), "sealed") {
		t.Errorf("list_publish_targets = %s, %v", b, err)
	}
	args := json.RawMessage(`{"content_id":"` + it.ID + `","target_id":"` + nt.Target.ID + `","at":"` + e.clock.Now().Add(time.Hour).Format(time.RFC3339) + `"}`)
	if got := publish.Summary(args); !strings.Contains(got, it.ID) || !strings.Contains(got, "at ") {
		t.Errorf("summary %q", got)
	}
	res, err = publish.Run(as(alice), args)
	if b, _ := json.Marshal(res); err != nil || !strings.Contains(string(b), `"status":"scheduled"`) {
		t.Errorf("publish_content = %s, %v", b, err)
	}
}

// A github_file target commits with its creator's GitHub connection: only
// its creator or an admin may publish through it or delete it; another
// member is refused (forbidden: the target is listed to every member, so
// its existence is no secret). Webhook targets stay the organisation's.
func TestGitHubFileTargetIsItsCreatorsOrAnAdmins(t *testing.T) {
	t.Parallel()
	e := newPublishEnv(t)
	admin := alice
	admin.Role = ports.RoleAdmin
	nt, err := e.svc.CreateTarget(as(bob), content.TargetInput{ProjectID: project, Name: "site", Kind: ports.TargetGitHubFile,
		Config: map[string]string{"repo_id": "00000000-0000-7000-8000-0000000000aa", "path_template": "content/{slug}.md"}})
	if err != nil {
		t.Fatal(err)
	}
	it := e.seedItem(alice, ports.ContentApproved)
	if _, err := e.svc.Publish(as(alice), it.ID, nt.Target.ID, nil, nil); !errors.Is(err, ports.ErrForbidden) || ports.Public(err).Code != content.CodeTargetCreatorOnly {
		t.Errorf("another member publishes through bob's github_file target: %v, want forbidden", err)
	}
	if err := e.svc.DeleteTarget(as(alice), nt.Target.ID); !errors.Is(err, ports.ErrForbidden) {
		t.Errorf("another member deletes bob's github_file target: %v, want forbidden", err)
	}
	if _, err := e.svc.Publish(as(olga), it.ID, nt.Target.ID, nil, nil); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("another org's admin: %v, want not_found", err)
	}
	for _, p := range []ports.Principal{bob, admin} {
		it := e.seedItem(alice, ports.ContentApproved)
		pub, err := e.svc.Publish(as(p), it.ID, nt.Target.ID, nil, nil)
		if err != nil {
			t.Fatalf("%s publishes: %v", p.UserID, err)
		}
		if err := e.svc.RunPublication(t.Context(), e.lastPublishJob(), true); err != nil {
			t.Fatal(err)
		}
		if got, _ := e.store.GetPublication(t.Context(), alice.OrgID, pub.ID); got.Status != ports.PublicationSucceeded {
			t.Errorf("%s's publication %+v", p.UserID, got)
		}
	}
	if len(e.repos.owners) == 0 || e.repos.owners[0].UserID != bob.UserID {
		t.Errorf("files written as %+v, want bob", e.repos.owners)
	}
	// A webhook target is anyone's in the organisation.
	hook := e.webhookTarget(bob)
	if _, err := e.svc.Publish(as(alice), it.ID, hook.Target.ID, nil, nil); err != nil {
		t.Errorf("publish through bob's webhook: %v", err)
	}
	if err := e.svc.DeleteTarget(as(alice), hook.Target.ID); err != nil {
		t.Errorf("delete bob's webhook: %v", err)
	}
	if err := e.svc.DeleteTarget(as(admin), nt.Target.ID); err != nil {
		t.Errorf("an admin deletes bob's github_file target: %v", err)
	}
}

// A path template may not write into .git or .github (any segment, any
// case, once cleaned), nor leave the repository; a template that fills to
// such a path fails its publication without writing.
func TestGitHubFilePathTemplateStaysOutOfGit(t *testing.T) {
	t.Parallel()
	e := newPublishEnv(t)
	for _, tpl := range []string{".github/workflows/{slug}.yml", ".git/hooks/post-checkout", "docs/.GitHub/x.md", "a/.Git/config",
		"docs/./.github/{slug}.md", ".gitmodules", "docs/.git./x", "docs/.g\u200bit/x", "../{slug}.md", "a/../../b.md", "/abs/{slug}.md",
		"docs/../.github/x.md", "a\\b.md", "", "."} {
		_, err := e.svc.CreateTarget(as(bob), content.TargetInput{ProjectID: project, Name: "x", Kind: ports.TargetGitHubFile,
			Config: map[string]string{"repo_id": "00000000-0000-7000-8000-0000000000aa", "path_template": tpl}})
		if !errors.Is(err, ports.ErrInvalid) || strings.Join(fieldsOf(err), ",") != "config.path_template" {
			t.Errorf("path_template %q: %v (fields %v), want invalid naming config.path_template", tpl, err, fieldsOf(err))
		}
	}
	for _, tpl := range []string{"content/{slug}.md", "docs/github/{date}-{id}.md", "git/{slug}.md", ".well-known/{slug}.txt"} {
		if reason := content.CheckFilePath(tpl); reason != "" {
			t.Errorf("CheckFilePath(%q) = %q", tpl, reason)
		}
	}
	// ".gi{slug}" with the title "t" fills to ".git": refused when it is filled.
	nt, err := e.svc.CreateTarget(as(bob), content.TargetInput{ProjectID: project, Name: "sneaky", Kind: ports.TargetGitHubFile,
		Config: map[string]string{"repo_id": "00000000-0000-7000-8000-0000000000aa", "path_template": ".gi{slug}/config"}})
	if err != nil {
		t.Fatal(err)
	}
	it := e.seedItem(bob, ports.ContentApproved, func(it *ports.ContentItem) { it.Title = "T" })
	pub, err := e.svc.Publish(as(bob), it.ID, nt.Target.ID, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.svc.RunPublication(t.Context(), e.lastPublishJob(), false); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.store.GetPublication(t.Context(), bob.OrgID, pub.ID); got.Status != ports.PublicationFailed || !strings.Contains(got.Error, ".git") {
		t.Errorf("publication %+v, want failed naming .git", got)
	}
	if len(e.repos.writes) != 0 {
		t.Errorf("files written: %+v", e.repos.writes)
	}
}
