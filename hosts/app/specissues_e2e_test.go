package app_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/hosts/sandbox/fakegithub"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

type issueExportOut struct {
	ExportID string `json:"export_id"`
	RepoID   string `json:"repo_id"`
	Status   string
	Total    int
	Done     int
	Error    string
	Issues   []struct {
		Kind, Ref string
		Number    int
		HTMLURL   string `json:"html_url"`
	}
}

// startIssueExport POSTs an export and returns its id.
func (st *scmStack) startIssueExport(token, sid string, body any) string {
	st.t.Helper()
	code, raw, _ := st.call(token, "POST", "/pse/sessions/"+sid+"/export/github", body)
	var out issueExportOut
	if err := json.Unmarshal(raw, &out); code != 202 || err != nil || out.Status != "queued" || out.ExportID == "" {
		st.t.Fatalf("start export: %d %s", code, raw)
	}
	return out.ExportID
}

// waitExport polls an export until it is done or failed.
func (st *scmStack) waitExport(token, sid, id string) issueExportOut {
	st.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		code, raw, _ := st.call(token, "GET", "/pse/sessions/"+sid+"/export/github/"+id, nil)
		var out issueExportOut
		if err := json.Unmarshal(raw, &out); code != 200 || err != nil {
			st.t.Fatalf("GET export: %d %s", code, raw)
		}
		if out.Status == "done" || out.Status == "failed" {
			return out
		}
		if time.Now().After(deadline) {
			st.t.Fatalf("export %s still %s (%d/%d) after a minute", id, out.Status, out.Done, out.Total)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var (
	issueRef    = regexp.MustCompile(`^\[((?:EP|ST|PRP)-[0-9.]+)\] `)
	epicTaskRef = regexp.MustCompile(`(?m)^- \[ \] #(\d+) (ST-\d+\.\d+) `)
)

// issuesByRef maps the fake repository's issues by the ref in their title,
// failing on a duplicate.
func issuesByRef(t *testing.T, repo *fakegithub.Repo) map[string]fakegithub.Issue {
	t.Helper()
	out := map[string]fakegithub.Issue{}
	for _, is := range repo.Issues() {
		m := issueRef.FindStringSubmatch(is.Title)
		if m == nil {
			t.Fatalf("issue #%d has no ref: %q", is.Number, is.Title)
		}
		if prev, dup := out[m[1]]; dup {
			t.Fatalf("%s is both #%d and #%d", m[1], prev.Number, is.Number)
		}
		out[m[1]] = is
	}
	return out
}

// TestSpecIssueExportEndToEnd generates a session through every stage,
// exports it to a connected repository of the fake GitHub, exports it again
// after its stories changed, and once more with PRPs under a secondary rate
// limit; on both databases.
func TestSpecIssueExportEndToEnd(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startSCMStack(t, string(d))
			st.gh.AddUser("octo-alice", 101)
			st.gh.AddUser("octo-bob", 102)
			shop := st.gh.AddRepo("octo-alice", "shop", fakegithub.Private())
			shop.Pull(fakegithub.Pull{Title: "An earlier pull request", Author: "octo-alice"})
			st.gh.AddRepo("acme", "vault", fakegithub.Private(), fakegithub.VisibleTo("octo-bob"))
			alice, bob := st.token("alice@example.com"), st.token("bob@example.com")
			st.connect(alice, "octo-alice")
			st.connect(bob, "octo-bob")
			repoID := list[repoJSON](st, alice, "/scm/repos").Items[0].ID
			bobRepo := list[repoJSON](st, bob, "/scm/repos").Items[0].ID

			sid := st.noteSession(alice, "Expense approvals", "Employees wait three weeks for reimbursements.")
			// Before the stories exist there is nothing to export.
			code, body, _ := st.call(alice, "POST", "/pse/sessions/"+sid+"/export/github", map[string]any{"repo_id": repoID})
			wantProblem(t, "export before stories", code, body, 409, spec.CodeStageNotReady)
			for _, stage := range []string{"scope", "prd", "epics", "stories", "stories", "prps", "prps", "prps"} {
				st.model.Enqueue(stageOutput(t, stage))
			}
			if code, body, _ := st.call(alice, "POST", "/pse/sessions/"+sid+"/generate", map[string]string{"through": "prps"}); code != 202 {
				t.Fatalf("generate through prps: %d %s", code, body)
			}
			if v := st.waitReady(alice, sid); v.Status != "ready" {
				t.Fatalf("after the chain: %+v", v)
			}

			// The first export: stories, then the epics' tracking issues.
			id := st.startIssueExport(alice, sid, map[string]any{"repo_id": repoID})
			out := st.waitExport(alice, sid, id)
			if out.Status != "done" || out.Total != 5 || out.Done != 5 || len(out.Issues) != 5 || out.RepoID != repoID {
				t.Fatalf("first export: %+v", out)
			}
			first := issuesByRef(t, shop)
			if len(first) != 5 {
				t.Fatalf("%d issues in the fake, want 5", len(first))
			}
			for _, ref := range []string{"ST-1.1", "ST-2.1", "ST-2.2"} {
				is := first[ref]
				if is.Number >= first["EP-1"].Number || is.Number < 2 {
					t.Errorf("%s is #%d: stories come first, after the pull request #1", ref, is.Number)
				}
				if !strings.Contains(is.Body, spec.IssueMarker(sid, ref)) || !strings.Contains(is.Body, "REQ-") || !strings.Contains(is.Body, "### Acceptance criteria") {
					t.Errorf("%s body:\n%s", ref, is.Body)
				}
			}
			if l := first["ST-2.1"].Labels; len(l) != 2 || l[0] != "devpilot" || l[1] != "epic:EP-2" {
				t.Errorf("ST-2.1 labels %v", l)
			}
			tasks := epicTaskRef.FindAllStringSubmatch(first["EP-2"].Body, -1)
			if len(tasks) != 2 || tasks[0][1] != fmt.Sprint(first["ST-2.1"].Number) || tasks[0][2] != "ST-2.1" ||
				tasks[1][1] != fmt.Sprint(first["ST-2.2"].Number) || tasks[1][2] != "ST-2.2" {
				t.Errorf("EP-2 task list %v:\n%s", tasks, first["EP-2"].Body)
			}
			labels := map[string]bool{}
			for _, l := range shop.Labels() {
				labels[l.Name] = true
			}
			if !labels["devpilot"] || !labels["epic:EP-1"] || !labels["epic:EP-2"] {
				t.Errorf("labels %v", shop.Labels())
			}

			// The stories change; a second export updates the same issues.
			changed := strings.Replace(stageOutputText(t, "stories"), "Submit an expense with a receipt", "Submit an expense, receipt attached", 1)
			st.model.Enqueue(fakeopenai.Text(changed), fakeopenai.Text(changed))
			if code, body, _ := st.call(alice, "POST", "/pse/sessions/"+sid+"/generate", map[string]string{"stage": "stories"}); code != 202 {
				t.Fatalf("regenerate stories: %d %s", code, body)
			}
			st.waitReady(alice, sid)
			id2 := st.startIssueExport(alice, sid, map[string]any{"repo_id": repoID, "include_prps": false})
			if out := st.waitExport(alice, sid, id2); out.Status != "done" || out.Done != 5 {
				t.Fatalf("second export: %+v", out)
			}
			second := issuesByRef(t, shop)
			if len(second) != 5 {
				t.Fatalf("%d issues after the second export, want 5", len(second))
			}
			for ref, is := range first {
				if second[ref].Number != is.Number {
					t.Errorf("%s moved from #%d to #%d", ref, is.Number, second[ref].Number)
				}
			}
			if got := second["ST-1.1"].Title; got != "[ST-1.1] Submit an expense, receipt attached" {
				t.Errorf("ST-1.1 title not updated: %q", got)
			}

			// A third export, with PRPs, meets GitHub's secondary rate limit
			// part way; it waits it out and completes without duplicates.
			st.gh.Inject("/repos/*/*/issues", fakegithub.SecondaryRateLimitFault(time.Second).Times(2))
			st.model.Enqueue(stageOutput(t, "prps"), stageOutput(t, "prps"), stageOutput(t, "prps"))
			code, body, _ = st.call(alice, "POST", "/pse/sessions/"+sid+"/generate", map[string]string{"stage": "prps"})
			if code != 202 {
				t.Fatalf("regenerate prps: %d %s", code, body)
			}
			st.waitReady(alice, sid)
			id3 := st.startIssueExport(alice, sid, map[string]any{"repo_id": repoID, "include_prps": true})
			out = st.waitExport(alice, sid, id3)
			if out.Status != "done" || out.Total != 8 || out.Done != 8 || len(out.Issues) != 8 {
				t.Fatalf("third export: %+v", out)
			}
			third := issuesByRef(t, shop)
			if len(third) != 8 || third["PRP-2.1"].Number == 0 {
				t.Fatalf("%d issues after the third export, want 8", len(third))
			}
			for ref, is := range first {
				if third[ref].Number != is.Number {
					t.Errorf("%s moved from #%d to #%d", ref, is.Number, third[ref].Number)
				}
			}
			limited := 0
			for _, r := range st.gh.RequestsTo("/repos/*/*/issues") {
				if r.Status == http.StatusForbidden {
					limited++
				}
			}
			if limited != 2 {
				t.Errorf("%d requests met the secondary rate limit, want 2", limited)
			}
			if !strings.Contains(third["PRP-2.1"].Body, fmt.Sprintf("Implements #%d", first["ST-2.1"].Number)) {
				t.Errorf("PRP-2.1 does not reference its story's issue:\n%s", third["PRP-2.1"].Body)
			}

			// Another user's session, export or repository is 404.
			code, body, _ = st.call(bob, "POST", "/pse/sessions/"+sid+"/export/github", map[string]any{"repo_id": bobRepo})
			wantProblem(t, "bob exports alice's session", code, body, 404, "not_found")
			code, body, _ = st.call(bob, "GET", "/pse/sessions/"+sid+"/export/github/"+id, nil)
			wantProblem(t, "bob reads alice's export", code, body, 404, "not_found")
			code, body, _ = st.call(alice, "POST", "/pse/sessions/"+sid+"/export/github", map[string]any{"repo_id": bobRepo})
			wantProblem(t, "alice exports to bob's repository", code, body, 404, "not_found")
		})
	}
}

// stageOutputText is the sample output of a stage as text.
func stageOutputText(t *testing.T, stage string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "core", "spec", "testdata", stage+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSpecIssueExportHostile sends bad ids and bodies to the export routes.
func TestSpecIssueExportHostile(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startSCMStack(t, string(d))
			alice := st.token("alice@example.com")
			sid := st.noteSession(alice, "Hostile", "Anything.")
			const unknown = "01890a5d-ac96-774b-bcce-b302099a8057"
			cases := []struct {
				name, method, path string
				body               any
				status             int
			}{
				{"NUL in repo_id", "POST", "/pse/sessions/" + sid + "/export/github", map[string]any{"repo_id": "a\x00b"}, 422},
				{"no repo_id", "POST", "/pse/sessions/" + sid + "/export/github", map[string]any{}, 400},
				{"unknown field", "POST", "/pse/sessions/" + sid + "/export/github", map[string]any{"repo_id": unknown, "close": true}, 422},
				{"include_prps not a bool", "POST", "/pse/sessions/" + sid + "/export/github", map[string]any{"repo_id": unknown, "include_prps": "yes"}, 422},
				{"unknown repository", "POST", "/pse/sessions/" + sid + "/export/github", map[string]any{"repo_id": unknown}, 404},
				{"bad session id", "POST", "/pse/sessions/not-an-id/export/github", map[string]any{"repo_id": unknown}, 404},
				{"unknown session", "POST", "/pse/sessions/" + unknown + "/export/github", map[string]any{"repo_id": unknown}, 404},
				{"bad export id", "GET", "/pse/sessions/" + sid + "/export/github/..%2F..", nil, 404},
				{"unknown export", "GET", "/pse/sessions/" + sid + "/export/github/" + unknown, nil, 404},
			}
			for _, c := range cases {
				code, body, _ := st.call(alice, c.method, c.path, c.body)
				if code != c.status {
					t.Errorf("%s: %d %s, want %d", c.name, code, body, c.status)
				}
			}
			code, body, _ := st.call("", "POST", "/pse/sessions/"+sid+"/export/github", map[string]any{"repo_id": unknown})
			if code != 401 {
				t.Errorf("without a token: %d %s", code, body)
			}
		})
	}
}
