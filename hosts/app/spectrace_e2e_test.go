package app_test

import (
	"archive/zip"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/core/identity"
)

// traceAnswer is GET /pse/sessions/{id}/traceability.
type traceAnswer struct {
	SessionID      string `json:"session_id"`
	PRDGenerated   bool   `json:"prd_generated"`
	EpicsGenerated bool   `json:"epics_generated"`
	Rows           []struct {
		Requirement, Epic, Story, PRP *struct{ ID, Title string }
		Status, Note                  string
	}
	Summary struct {
		Requirements int
		Uncovered    []string
		Orphans      []string
		Dangling     []struct{ From, Ref, Note string }
		Stale        []string
	}
}

// lines are the answer's rows as "REQ-1>EP-1>ST-1.1>PRP-1.1 status note".
func (a traceAnswer) lines() []string {
	id := func(it *struct{ ID, Title string }) string {
		if it == nil {
			return ""
		}
		return it.ID
	}
	out := make([]string, len(a.Rows))
	for i, r := range a.Rows {
		out[i] = strings.Join([]string{id(r.Requirement), id(r.Epic), id(r.Story), id(r.PRP)}, ">") + " " + r.Status + " " + r.Note
	}
	return out
}

// csvTraceLines are traceability.csv's rows, as traceAnswer.lines has them.
func csvTraceLines(t *testing.T, archive []byte) []string {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(archive), int64(len(archive)))
	if err != nil {
		t.Fatalf("export: %v", err)
	}
	for _, f := range zr.File {
		if f.Name != "traceability.csv" {
			continue
		}
		rc, _ := f.Open()
		b, _ := io.ReadAll(rc)
		rc.Close()
		recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range recs[1:] {
			out = append(out, strings.Join([]string{r[0], r[2], r[4], r[6]}, ">")+" "+r[8]+" "+r[9])
		}
		return out
	}
	t.Fatal("the export has no traceability.csv")
	return nil
}

// TestSpecTraceabilityEndToEnd: GET /pse/sessions/{id}/traceability (and
// under /api/v1) answers the rows of the export's traceability.csv, empty
// before the PRD; 404 for another user's or organisation's session; on both
// databases.
func TestSpecTraceabilityEndToEnd(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startStack(t, string(d))
			member, colleague := st.token("dev@example.com"), st.token("eve@example.com")
			stranger, err := st.id.IssueToken(t.Context(), identity.IssueTokenInput{Email: "mal@example.org", OrgName: "globex"})
			if err != nil {
				t.Fatal(err)
			}
			id := st.noteSession(member, "Checkout revamp", "One-click checkout for returning customers.")
			get := func(tok, prefix string) (int, traceAnswer, []byte) {
				t.Helper()
				code, body, _ := st.call(tok, "GET", prefix+"/pse/sessions/"+id+"/traceability", nil)
				var a traceAnswer
				if code == 200 {
					if err := json.Unmarshal(body, &a); err != nil {
						t.Fatalf("traceability: %v %s", err, body)
					}
				}
				return code, a, body
			}
			if code, a, body := get(member, ""); code != 200 || a.PRDGenerated || len(a.Rows) != 0 || a.SessionID != id {
				t.Fatalf("before the PRD: %d %s", code, body)
			}

			// One call per stage, per epic for the stories, per story for the PRPs.
			for _, stage := range []string{"scope", "prd", "epics", "stories", "stories", "prps", "prps", "prps"} {
				st.model.Enqueue(stageOutput(t, stage))
			}
			if code, body, _ := st.call(member, "POST", "/pse/sessions/"+id+"/generate", map[string]string{"through": "prps"}); code != 202 {
				t.Fatalf("generate through prps: %d %s", code, body)
			}
			if v := st.waitReady(member, id); v.Status != "ready" || v.NextStage != nil {
				t.Fatalf("after the chain: %+v", v)
			}

			code, a, body := get(member, "")
			if code != 200 || !a.PRDGenerated || !a.EpicsGenerated {
				t.Fatalf("traceability: %d %s", code, body)
			}
			// EP-2 lists REQ-2 and REQ-3; ST-2.1 cites REQ-2 alone, so it is
			// not under REQ-3.
			want := []string{"REQ-1>EP-1>ST-1.1>PRP-1.1 complete ", "REQ-2>EP-2>ST-2.1>PRP-2.1 complete ", "REQ-3>EP-2>ST-2.2>PRP-2.2 complete "}
			if got := a.lines(); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if a.Summary.Requirements != 3 || len(a.Summary.Uncovered)+len(a.Summary.Orphans)+len(a.Summary.Dangling)+len(a.Summary.Stale) != 0 {
				t.Errorf("summary %+v", a.Summary)
			}
			if a.Rows[0].Requirement.Title == "" || a.Rows[0].PRP.Title == "" {
				t.Errorf("a row without titles: %s", body)
			}
			code, _, archive := st.download(member, "/pse/sessions/"+id+"/export")
			if code != 200 {
				t.Fatalf("export: %d", code)
			}
			if got := csvTraceLines(t, archive); strings.Join(got, "\n") != strings.Join(a.lines(), "\n") {
				t.Errorf("traceability.csv:\n%s\nthe API:\n%s", strings.Join(got, "\n"), strings.Join(a.lines(), "\n"))
			}
			if code, v1, _ := get(member, "/api/v1"); code != 200 || strings.Join(v1.lines(), "\n") != strings.Join(a.lines(), "\n") {
				t.Errorf("under /api/v1: %d %v", code, v1.lines())
			}

			// Regenerating the epics makes the stories and PRPs stale.
			st.model.Enqueue(stageOutput(t, "epics"))
			if code, body, _ := st.call(member, "POST", "/pse/sessions/"+id+"/generate", map[string]string{"stage": "epics"}); code != 202 {
				t.Fatalf("regenerate epics: %d %s", code, body)
			}
			st.waitReady(member, id)
			if _, a, _ := get(member, ""); strings.Join(a.Summary.Stale, ",") != "stories,prps" {
				t.Errorf("stale %v, want stories,prps", a.Summary.Stale)
			}

			for name, tok := range map[string]string{"a colleague": colleague, "another organisation": stranger.Token} {
				if code, _, body := get(tok, ""); code != 404 {
					t.Errorf("%s's GET: %d %s", name, code, body)
				}
			}
			if code, body, _ := st.call(member, "GET", "/pse/sessions/not-a-session/traceability", nil); code != 404 {
				t.Errorf("an id that is none: %d %s", code, body)
			}
		})
	}
}
