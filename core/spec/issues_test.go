package spec_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/ports"
)

// plainCipher seals by prefixing the aad, enough to tell a token opened
// with the wrong record.
type plainCipher struct{}

func (plainCipher) Seal(p, aad []byte) (string, error) { return string(aad) + ":" + string(p), nil }
func (plainCipher) Open(s string, aad []byte) ([]byte, error) {
	rest, ok := strings.CutPrefix(s, string(aad)+":")
	if !ok {
		return nil, ports.Errorf(ports.KindInternal, "tampered")
	}
	return []byte(rest), nil
}

// issueHub is a provider holding one repository's issues and labels, with
// faults to inject.
type issueHub struct {
	ports.SCMProvider
	mu     sync.Mutex
	issues []ports.SCMIssue
	labels []string
	// rateLimitCreate answers the create calls numbered here (1-based) with
	// a rate limit.
	rateLimitCreate map[int]bool
	creates         int
	token           string
	revoked         bool
}

func (h *issueHub) check(token, owner, repo string) error {
	if token != h.token {
		return ports.Errorf(ports.KindUpstream, "bad token")
	}
	if owner != "acme" || repo != "shop" {
		return ports.NotFound("repository", owner+"/"+repo)
	}
	return nil
}

func (h *issueHub) CreateIssue(_ context.Context, token, owner, repo string, in ports.SCMIssueInput) (ports.SCMIssue, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.check(token, owner, repo); err != nil {
		return ports.SCMIssue{}, err
	}
	h.creates++
	if h.revoked {
		return ports.SCMIssue{}, &ports.Error{Kind: ports.KindUpstream, Code: "token_revoked", Message: "bad credentials"}
	}
	if h.rateLimitCreate[h.creates] {
		return ports.SCMIssue{}, &ports.Error{Kind: ports.KindRateLimited, RetryAfter: time.Second, Message: "secondary rate limit"}
	}
	n := len(h.issues) + 1
	is := ports.SCMIssue{Number: n, Title: in.Title, Body: in.Body, State: "open", Labels: in.Labels, HTMLURL: fmt.Sprintf("https://gh.example/acme/shop/issues/%d", n)}
	h.issues = append(h.issues, is)
	return is, nil
}

func (h *issueHub) UpdateIssue(_ context.Context, token, owner, repo string, number int, in ports.SCMIssueInput) (ports.SCMIssue, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.check(token, owner, repo); err != nil {
		return ports.SCMIssue{}, err
	}
	if number < 1 || number > len(h.issues) {
		return ports.SCMIssue{}, ports.NotFound("issue", fmt.Sprint(number))
	}
	is := &h.issues[number-1]
	is.Title, is.Body, is.Labels = in.Title, in.Body, in.Labels
	return *is, nil
}

func (h *issueHub) ListIssuesByLabel(_ context.Context, token, owner, repo, label string, _ ports.Page) ([]ports.SCMIssue, string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.check(token, owner, repo); err != nil {
		return nil, "", err
	}
	var out []ports.SCMIssue
	for _, is := range h.issues {
		for _, l := range is.Labels {
			if l == label {
				out = append(out, is)
				break
			}
		}
	}
	return out, "", nil
}

func (h *issueHub) ListLabels(_ context.Context, token, owner, repo string, _ ports.Page) ([]ports.SCMLabel, string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.check(token, owner, repo); err != nil {
		return nil, "", err
	}
	var out []ports.SCMLabel
	for _, l := range h.labels {
		out = append(out, ports.SCMLabel{Name: l})
	}
	return out, "", nil
}

func (h *issueHub) CreateLabel(_ context.Context, token, owner, repo string, l ports.SCMLabel) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.check(token, owner, repo); err != nil {
		return err
	}
	h.labels = append(h.labels, l.Name)
	return nil
}

func (h *issueHub) snapshot() []ports.SCMIssue {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]ports.SCMIssue(nil), h.issues...)
}

// failRecord fails the next RecordExportedIssue, as a job killed right
// after creating an issue would.
type failRecord struct {
	ports.IssueExportStore
	mu   sync.Mutex
	fail bool
	// forget makes ListExportedIssues return none, as if every export had
	// stopped before recording its issues.
	forget bool
}

func (f *failRecord) ListExportedIssues(ctx context.Context, sessionID, repoID string) ([]ports.ExportedIssue, error) {
	f.mu.Lock()
	forget := f.forget
	f.mu.Unlock()
	if forget {
		return nil, nil
	}
	return f.IssueExportStore.ListExportedIssues(ctx, sessionID, repoID)
}

func (f *failRecord) RecordExportedIssue(ctx context.Context, i ports.ExportedIssue) error {
	f.mu.Lock()
	fail := f.fail
	f.fail = false
	f.mu.Unlock()
	if fail {
		return ports.Errorf(ports.KindUnavailable, "killed")
	}
	return f.IssueExportStore.RecordExportedIssue(ctx, i)
}

type issueEnv struct {
	*env
	hub     *issueHub
	exports *failRecord
	repoID  string
}

// newIssueEnv is an env whose alice has a GitHub connection seeing
// acme/shop, and a session with every stage.
func newIssueEnv(t *testing.T) (*issueEnv, string) {
	e := newEnv(t, spec.Config{})
	hub := &issueHub{token: "gho_alice"}
	ctx := t.Context()
	conn, err := e.store.SaveConnection(ctx, ports.SCMConnection{ID: e.ids.NewID(), OrgID: alice.OrgID, UserID: alice.UserID, Provider: "github",
		Login: "alice", Status: ports.SCMActive, CreatedAt: e.clock.Now(), UpdatedAt: e.clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	conn.SealedToken, _ = plainCipher{}.Seal([]byte(hub.token), []byte(conn.ID))
	if conn, err = e.store.SaveConnection(ctx, conn); err != nil {
		t.Fatal(err)
	}
	repos, err := e.store.SaveRepositories(ctx, conn.ID, []ports.Repository{{ID: e.ids.NewID(), OrgID: alice.OrgID, UserID: alice.UserID,
		ConnectionID: conn.ID, SCMRepo: ports.SCMRepo{ProviderID: 7, FullName: "acme/shop", Owner: "acme", Name: "shop"}}}, e.clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	ie := &issueEnv{env: e, hub: hub, exports: &failRecord{IssueExportStore: e.store}, repoID: repos[0].ID}
	e.rewire(func(d *spec.Deps) {
		d.Repos, d.SCM, d.Cipher, d.Exports = e.store, hub, plainCipher{}, ie.exports
	})
	sid := e.newSession(alice)
	e.seed(sid, ports.StageScope, ports.StagePRD, ports.StageEpics, ports.StageStories, ports.StagePRPs)
	return ie, sid
}

// start starts an export and returns its job.
func (e *issueEnv) start(sid string, prps bool) spec.ExportIssuesArgs {
	e.t.Helper()
	before := len(e.jobs())
	x, err := e.svc.StartIssueExport(as(alice), sid, e.repoID, prps)
	if err != nil {
		e.t.Fatalf("StartIssueExport: %v", err)
	}
	if x.Status != ports.IssueExportQueued {
		e.t.Errorf("status = %q, want queued", x.Status)
	}
	jobs := e.jobs()
	if len(jobs) != before+1 || !jobs[len(jobs)-1].inTx {
		e.t.Fatalf("StartIssueExport enqueued %d jobs (in a transaction: %v), want 1 in one", len(jobs)-before, jobs[len(jobs)-1].inTx)
	}
	return jobs[len(jobs)-1].args.(spec.ExportIssuesArgs)
}

func (e *issueEnv) view(sid, id string) spec.IssueExportView {
	e.t.Helper()
	v, err := e.svc.GetIssueExport(as(alice), sid, id)
	if err != nil {
		e.t.Fatalf("GetIssueExport: %v", err)
	}
	return v
}

var taskLine = regexp.MustCompile(`(?m)^- \[ \] #(\d+) (ST-\d+\.\d+) `)

func TestIssueExportCreatesThenUpdates(t *testing.T) {
	t.Parallel()
	e, sid := newIssueEnv(t)
	job := e.start(sid, false)
	if err := e.svc.RunIssueExport(t.Context(), job, false); err != nil {
		t.Fatalf("RunIssueExport: %v", err)
	}
	v := e.view(sid, job.ExportID)
	if v.Status != ports.IssueExportDone || v.Total != 5 || v.Done != 5 || len(v.Issues) != 5 {
		t.Fatalf("export = %+v, want done 5/5 with 5 issues", v)
	}
	issues := e.hub.snapshot()
	wantTitles := []string{"[ST-1.1] ", "[ST-2.1] ", "[ST-2.2] ", "[EP-1] ", "[EP-2] "}
	if len(issues) != len(wantTitles) {
		t.Fatalf("%d issues, want %d", len(issues), len(wantTitles))
	}
	byRef := map[string]ports.SCMIssue{}
	for i, is := range issues {
		if !strings.HasPrefix(is.Title, wantTitles[i]) {
			t.Errorf("issue %d title %q, want prefix %q (stories before epics)", i+1, is.Title, wantTitles[i])
		}
		ref := strings.TrimSuffix(strings.TrimPrefix(strings.Fields(is.Title)[0], "["), "]")
		byRef[ref] = is
		if !strings.Contains(is.Body, spec.IssueMarker(sid, ref)) {
			t.Errorf("issue %s body lacks its marker", ref)
		}
	}
	st := byRef["ST-1.1"]
	for _, want := range []string{"**As a** employee", "### Acceptance criteria", "- [ ] **Given** I am signed in", "REQ-"} {
		if !strings.Contains(st.Body, want) {
			t.Errorf("story body lacks %q:\n%s", want, st.Body)
		}
	}
	if fmt.Sprint(st.Labels) != "[devpilot epic:EP-1]" {
		t.Errorf("story labels = %v", st.Labels)
	}
	ep2 := byRef["EP-2"]
	got := taskLine.FindAllStringSubmatch(ep2.Body, -1)
	if len(got) != 2 || got[0][1] != fmt.Sprint(byRef["ST-2.1"].Number) || got[0][2] != "ST-2.1" || got[1][2] != "ST-2.2" {
		t.Errorf("EP-2 task list = %v in\n%s", got, ep2.Body)
	}
	if e.hub.labels == nil || len(e.hub.labels) != 3 {
		t.Errorf("labels created = %v, want devpilot, epic:EP-1, epic:EP-2", e.hub.labels)
	}

	// A second export updates the same issues, a changed title included.
	e.seedData(sid, ports.StageStories, edit(t, ports.StageStories, func(doc map[string]any) {
		doc["stories"].([]any)[0].(map[string]any)["title"] = "Submit an expense, receipt attached"
	}))
	job2 := e.start(sid, false)
	if err := e.svc.RunIssueExport(t.Context(), job2, false); err != nil {
		t.Fatalf("RunIssueExport again: %v", err)
	}
	after := e.hub.snapshot()
	if len(after) != 5 {
		t.Fatalf("%d issues after the second export, want 5", len(after))
	}
	if after[0].Title != "[ST-1.1] Submit an expense, receipt attached" {
		t.Errorf("the changed title was not updated: %q", after[0].Title)
	}
	if v := e.view(sid, job2.ExportID); v.Status != ports.IssueExportDone || len(v.Issues) != 5 {
		t.Errorf("second export = %+v", v)
	}
}

func TestIssueExportResumesWithoutDuplicates(t *testing.T) {
	t.Parallel()
	e, sid := newIssueEnv(t)
	e.hub.rateLimitCreate = map[int]bool{3: true}
	job := e.start(sid, true)
	err := e.svc.RunIssueExport(t.Context(), job, false)
	if ports.KindOf(err) != ports.KindRateLimited {
		t.Fatalf("RunIssueExport under a rate limit = %v, want rate_limited", err)
	}
	if v := e.view(sid, job.ExportID); v.Status != ports.IssueExportRunning || v.Done != 2 || v.Total != 8 {
		t.Fatalf("progress = %s %d/%d, want running 2/8", v.Status, v.Done, v.Total)
	}
	// The next attempt is killed after creating an issue, before recording it.
	e.exports.mu.Lock()
	e.exports.fail = true
	e.exports.mu.Unlock()
	if err := e.svc.RunIssueExport(t.Context(), job, false); err == nil {
		t.Fatal("RunIssueExport with a failing record succeeded")
	}
	if err := e.svc.RunIssueExport(t.Context(), job, false); err != nil {
		t.Fatalf("RunIssueExport resumed: %v", err)
	}
	issues := e.hub.snapshot()
	seen := map[string]bool{}
	for _, is := range issues {
		if seen[is.Title] {
			t.Errorf("duplicate issue %q", is.Title)
		}
		seen[is.Title] = true
	}
	if len(issues) != 8 {
		t.Errorf("%d issues, want 8 (3 stories, 3 PRPs, 2 epics)", len(issues))
	}
	if v := e.view(sid, job.ExportID); v.Status != ports.IssueExportDone || v.Done != 8 {
		t.Errorf("export = %s %d/%d, want done 8/8", v.Status, v.Done, v.Total)
	}
}

func TestIssueExportRefusals(t *testing.T) {
	t.Parallel()
	e, sid := newIssueEnv(t)
	cases := []struct {
		name     string
		p        ports.Principal
		sid, rid string
		kind     ports.Kind
	}{
		{"another user's session", bob, sid, e.repoID, ports.KindNotFound},
		{"another org's session", other, sid, e.repoID, ports.KindNotFound},
		{"a bad session id", alice, "../etc", e.repoID, ports.KindNotFound},
		{"an unknown repository", alice, sid, "01890a5d-ac96-774b-bcce-b302099a8057", ports.KindNotFound},
		{"a bad repository id", alice, sid, "x\x00y", ports.KindNotFound},
	}
	for _, c := range cases {
		if _, err := e.svc.StartIssueExport(as(c.p), c.sid, c.rid, false); ports.KindOf(err) != c.kind {
			t.Errorf("%s: %v, want %s", c.name, err, c.kind)
		}
	}
	bare := e.newSession(alice)
	if _, err := e.svc.StartIssueExport(as(alice), bare, e.repoID, false); errCode(err) != spec.CodeStageNotReady {
		t.Errorf("a session without stories: %v, want stage_not_ready", err)
	}
	job := e.start(sid, false)
	if _, err := e.svc.StartIssueExport(as(alice), sid, e.repoID, false); errCode(err) != spec.CodeExportRunning {
		t.Errorf("a second export while one is queued: %v, want export_running", err)
	}
	if _, err := e.svc.GetIssueExport(as(bob), sid, job.ExportID); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("GetIssueExport as another user: %v, want not_found", err)
	}
}

func TestExportToolStartsAnExport(t *testing.T) {
	t.Parallel()
	e, sid := newIssueEnv(t)
	var exp tool.Tool
	for _, tl := range e.svc.Tools() {
		if tl.Name == "export_spec_to_github" {
			exp = tl
		}
	}
	if exp.Effect != tool.EffectWrite || exp.Summary == nil {
		t.Fatalf("export_spec_to_github = %+v, want a write with a summary", exp)
	}
	args := []byte(fmt.Sprintf(`{"session_id":%q,"repo_id":%q,"include_prps":true}`, sid, e.repoID))
	if sum := exp.Summary(args); !strings.Contains(sum, sid) || !strings.Contains(sum, "PRPs") {
		t.Errorf("summary %q", sum)
	}
	out, err := exp.Run(as(alice), args)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	id := out.(map[string]any)["export_id"].(string)
	if v := e.view(sid, id); v.Status != ports.IssueExportQueued || !v.IncludePRPs {
		t.Errorf("export = %+v", v)
	}
	if _, err := exp.Run(as(bob), []byte(fmt.Sprintf(`{"session_id":%q,"repo_id":%q}`, sid, e.repoID))); ports.KindOf(err) != ports.KindNotFound {
		t.Errorf("Run as another user: %v, want not_found", err)
	}
}

func TestIssueExportRevokedTokenAndMentions(t *testing.T) {
	t.Parallel()
	e, sid := newIssueEnv(t)
	e.seedData(sid, ports.StageStories, edit(t, ports.StageStories, func(doc map[string]any) {
		doc["stories"].([]any)[0].(map[string]any)["i_want"] = "to ping @octocat and @acme/owners <!-- devpilot:spec=" + sid + ":ref=ST-9.9 -->"
	}))
	job := e.start(sid, false)
	if err := e.svc.RunIssueExport(t.Context(), job, false); err != nil {
		t.Fatalf("RunIssueExport: %v", err)
	}
	body := e.hub.snapshot()[0].Body
	if strings.Contains(body, "@octocat") || strings.Contains(body, "@acme/owners") || strings.Contains(body, "ref=ST-9.9 -->") {
		t.Errorf("the body mentions users or forges a marker:\n%s", body)
	}

	e.hub.mu.Lock()
	e.hub.revoked = true
	e.hub.issues = nil // gone: every issue must be created again
	e.hub.mu.Unlock()
	job = e.start(sid, false)
	if err := e.svc.RunIssueExport(t.Context(), job, false); err != nil {
		t.Fatalf("RunIssueExport with a revoked token: %v, want the export failed and nil", err)
	}
	v := e.view(sid, job.ExportID)
	if v.Status != ports.IssueExportFailed || !strings.Contains(v.Error, "reconnect") {
		t.Errorf("export = %s %q, want failed, saying to reconnect", v.Status, v.Error)
	}
	conn, err := e.store.GetConnection(t.Context(), alice.Owner(), "github")
	if err != nil || conn.Status != ports.SCMBroken {
		t.Errorf("connection = %+v, %v; want broken", conn, err)
	}
	if _, err := e.svc.StartIssueExport(as(alice), sid, e.repoID, false); errCode(err) != spec.CodeNotConnected {
		t.Errorf("an export over a broken connection: %v, want not_connected", err)
	}
}

// TestIssueExportTitlesAndForgedMarkers: a title mentions no one, and a
// marker inside a PRP task's path (or any other text of the specification)
// neither shows in the body nor is taken for the export's own: an export
// that finds its issues by their markers updates each in place.
func TestIssueExportTitlesAndForgedMarkers(t *testing.T) {
	t.Parallel()
	e, sid := newIssueEnv(t)
	forged := "<!-- devpilot:spec=" + sid + ":ref=EP-1 -->"
	e.seedData(sid, ports.StageStories, edit(t, ports.StageStories, func(doc map[string]any) {
		doc["stories"].([]any)[0].(map[string]any)["title"] = "Ping @octocat and @acme/owners"
	}))
	e.seedData(sid, ports.StageEpics, edit(t, ports.StageEpics, func(doc map[string]any) {
		doc["epics"].([]any)[0].(map[string]any)["title"] = "Epic for @octocat"
	}))
	e.seedData(sid, ports.StagePRPs, edit(t, ports.StagePRPs, func(doc map[string]any) {
		task := doc["prps"].([]any)[0].(map[string]any)["tasks"].([]any)[0].(map[string]any)
		task["path"] = forged
	}))
	job := e.start(sid, true)
	if err := e.svc.RunIssueExport(t.Context(), job, false); err != nil {
		t.Fatalf("RunIssueExport: %v", err)
	}
	first := e.hub.snapshot()
	titles := map[string]bool{}
	for _, is := range first {
		if strings.Contains(is.Title, "@octocat") || strings.Contains(is.Title, "@acme/owners") {
			t.Errorf("a title mentions: %q", is.Title)
		}
		if strings.HasPrefix(is.Title, "[PRP-") && strings.Contains(is.Body, forged) {
			t.Errorf("a PRP's body holds the forged marker:\n%s", is.Body)
		}
		titles[is.Title] = true
	}
	if len(first) != 8 || len(titles) != 8 {
		t.Fatalf("%d issues with %d titles, want 8 and 8", len(first), len(titles))
	}

	// The records are lost: the next export finds each issue by its marker.
	e.exports.mu.Lock()
	e.exports.forget = true
	e.exports.mu.Unlock()
	job = e.start(sid, true)
	if err := e.svc.RunIssueExport(t.Context(), job, false); err != nil {
		t.Fatalf("RunIssueExport again: %v", err)
	}
	after := e.hub.snapshot()
	if len(after) != len(first) {
		t.Fatalf("%d issues after the second export, want %d", len(after), len(first))
	}
	for i, is := range after {
		if is.Title != first[i].Title {
			t.Errorf("issue #%d was %q, is now %q", is.Number, first[i].Title, is.Title)
		}
	}
}
