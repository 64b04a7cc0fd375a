package spec_test

import (
	"encoding/csv"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/ports"
)

// traceLines are a traceability's rows as traceability.csv writes them:
// ids joined with ">", then the status and the note.
func traceLines(tr spec.Traceability) []string {
	out := make([]string, len(tr.Rows))
	for i, r := range tr.Rows {
		out[i] = strings.Join([]string{r.Requirement.ID, r.Epic.ID, r.Story.ID, r.PRP.ID}, ">") + " " + r.Status + " " + r.Note
	}
	return out
}

// TestOneTraceabilityRelation holds the export's files, the GitHub issues
// an export plans and Service.Traceability (the API's answer) to one
// relation: a story is listed under the requirements it cites, never under
// every requirement of its epic; one citing none of its epic's is listed
// once, under its epic.
func TestOneTraceabilityRelation(t *testing.T) {
	t.Parallel()
	e, sid := newIssueEnv(t)
	// EP-2 lists REQ-2 and REQ-3; ST-2.1 cites REQ-2, ST-2.2 REQ-3, and a
	// new ST-2.3 cites neither.
	e.seedData(sid, ports.StageStories, edit(t, ports.StageStories, func(doc map[string]any) {
		stories := doc["stories"].([]any)
		third := map[string]any{}
		for k, v := range stories[2].(map[string]any) {
			third[k] = v
		}
		third["id"], third["title"], third["requirement_ids"] = "ST-2.3", "Archive old expenses", []any{}
		doc["stories"] = append(stories, third)
	}))
	tr, err := e.svc.Traceability(as(alice), sid)
	if err != nil {
		t.Fatalf("Traceability: %v", err)
	}
	want := []string{
		"REQ-1>EP-1>ST-1.1>PRP-1.1 complete ",
		"REQ-2>EP-2>ST-2.1>PRP-2.1 complete ",
		"REQ-3>EP-2>ST-2.2>PRP-2.2 complete ",
		">EP-2>ST-2.3> orphan ST-2.3 cites no requirement of its epic EP-2",
	}
	if got := traceLines(tr); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !tr.PRD || !tr.Epics || tr.Requirements != 3 || len(tr.Uncovered) != 0 || strings.Join(tr.Orphans, ",") != "ST-2.3" || len(tr.Dangling) != 0 {
		t.Errorf("summary %+v", tr)
	}
	if len(tr.Stale) != 1 || tr.Stale[0] != ports.StagePRPs { // the stories changed after the PRPs
		t.Errorf("stale %v", tr.Stale)
	}

	// traceability.csv has the same rows.
	_, files, _ := unzip(t, e.export(alice, sid, spec.ExportZip))
	recs, err := csv.NewReader(strings.NewReader(files["traceability.csv"])).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	var fromCSV []string
	for _, r := range recs[1:] {
		fromCSV = append(fromCSV, strings.Join([]string{r[0], r[2], r[4], r[6]}, ">")+" "+r[8]+" "+r[9])
	}
	if strings.Join(fromCSV, "\n") != strings.Join(want, "\n") {
		t.Errorf("traceability.csv rows:\n%s\nwant:\n%s", strings.Join(fromCSV, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(files["traceability.md"], "Orphans (reached from no requirement): ST-2.3") {
		t.Errorf("traceability.md:\n%s", files["traceability.md"])
	}

	// The issues name the same requirements.
	job := e.start(sid, false)
	if err := e.svc.RunIssueExport(t.Context(), job, false); err != nil {
		t.Fatalf("RunIssueExport: %v", err)
	}
	bodies := map[string]string{}
	for _, is := range e.hub.snapshot() {
		bodies[strings.Trim(strings.Fields(is.Title)[0], "[]")] = is.Body
	}
	for ref, reqs := range map[string][2][]string{
		"ST-2.1": {{"- Requirement: REQ-2 — "}, {"REQ-3"}},
		"ST-2.2": {{"- Requirement: REQ-3 — "}, {"REQ-2"}},
		"ST-2.3": {{"- Requirement: none — ST-2.3 cites no requirement of its epic EP-2"}, {"REQ-2", "REQ-3"}},
	} {
		for _, s := range reqs[0] {
			if !strings.Contains(bodies[ref], s) {
				t.Errorf("%s's issue lacks %q:\n%s", ref, s, bodies[ref])
			}
		}
		for _, s := range reqs[1] {
			if strings.Contains(bodies[ref], s) {
				t.Errorf("%s's issue names %s, which it does not trace to:\n%s", ref, s, bodies[ref])
			}
		}
	}

	// Another user's session is not found.
	if _, err := e.svc.Traceability(as(bob), sid); ports.KindOf(err) != ports.KindNotFound {
		t.Errorf("bob's Traceability: %v, want not_found", err)
	}
}

// TestTraceabilityBeforeThePRD is empty until the PRD is generated, and
// pending before the epics.
func TestTraceabilityBeforeThePRD(t *testing.T) {
	t.Parallel()
	e := newEnv(t, spec.Config{})
	sid := e.newSession(alice)
	tr, err := e.svc.Traceability(as(alice), sid)
	if err != nil || tr.PRD || len(tr.Rows) != 0 {
		t.Fatalf("before the PRD: %+v, %v", tr, err)
	}
	e.seed(sid, ports.StageScope, ports.StagePRD)
	tr, err = e.svc.Traceability(as(alice), sid)
	if err != nil || !tr.PRD || tr.Epics || len(tr.Rows) != 3 || tr.Rows[0].Status != spec.TracePending || len(tr.Uncovered) != 0 {
		t.Fatalf("before the epics: %+v, %v", tr, err)
	}
	if _, err := e.svc.Traceability(as(alice), "not-an-id"); ports.KindOf(err) != ports.KindNotFound {
		t.Errorf("a bad id: %v", err)
	}
}
