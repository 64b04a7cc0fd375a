package spec_test

import (
	"archive/zip"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/ports"
)

// seedData stores data as the next version of stage st of the session, as
// if it had been generated.
func (e *env) seedData(sessionID string, st ports.Stage, data string) {
	e.t.Helper()
	owner := e.session(sessionID)
	genID := "seed-" + string(st) + e.ids.NewID()
	if _, err := e.store.StartGeneration(e.t.Context(), ports.Owner{OrgID: owner.OrgID, UserID: owner.UserID}, sessionID, st, genID, e.clock.Now()); err != nil {
		e.t.Fatal(err)
	}
	a := ports.SpecArtifact{ID: e.ids.NewID(), SessionID: sessionID, Stage: st, Format: "markdown", Content: "# " + string(st) + " document",
		Data: json.RawMessage(compact(e.t, data)), Checks: []string{}, Model: "model-x", GenerationID: genID, CreatedAt: e.clock.Now(),
		PromptVersion: spec.PromptVersion(st)}
	if err := e.complete(a); err != nil {
		e.t.Fatal(err)
	}
}

// export writes the caller's export of the session in format.
func (e *env) export(p ports.Principal, sessionID string, format spec.ExportFormat) []byte {
	e.t.Helper()
	x, err := e.svc.ExportSession(as(p), sessionID, format)
	if err != nil {
		e.t.Fatalf("ExportSession(%q): %v", format, err)
	}
	var b bytes.Buffer
	if err := x.Write(&b); err != nil {
		e.t.Fatal(err)
	}
	return b.Bytes()
}

// unzip returns an archive's file names in order and their contents.
func unzip(t *testing.T, b []byte) ([]string, map[string]string, *zip.Reader) {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("not a zip archive: %v", err)
	}
	var names []string
	files := map[string]string{}
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, f.Name)
		files[f.Name] = string(body)
	}
	return names, files, zr
}

// traceRows reads traceability.csv as rows keyed by their ids joined with
// ">" ("REQ-1>EP-1>ST-1.1>PRP-1.1"), each mapped to its status.
func traceRows(t *testing.T, text string) map[string]string {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(text)).ReadAll()
	if err != nil {
		t.Fatalf("traceability.csv: %v", err)
	}
	if len(recs) == 0 || strings.Join(recs[0], ",") != "requirement_id,requirement,epic_id,epic,story_id,story,prp_id,prp,status,note" {
		t.Fatalf("traceability.csv header: %v", recs)
	}
	out := map[string]string{}
	for _, r := range recs[1:] {
		out[r[0]+">"+r[2]+">"+r[4]+">"+r[6]] = r[8]
	}
	return out
}

func TestExportZipHasEveryStageInOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t, spec.Config{})
	sid := e.newSession(alice)
	for _, st := range ports.Stages {
		e.clock.Advance(time.Minute)
		e.seedData(sid, st, sample(t, st))
	}
	names, files, zr := unzip(t, e.export(alice, sid, spec.ExportZip))
	want := []string{"README.md", "01-scope.md", "02-prd.md", "03-epics.md", "04-stories.md", "05-prps.md",
		"data/scope.json", "data/prd.json", "data/epics.json", "data/stories.json", "data/prps.json",
		"traceability.md", "traceability.csv"}
	if !slices.Equal(names, want) {
		t.Fatalf("files %v, want %v", names, want)
	}
	updated := e.session(sid).UpdatedAt
	for _, f := range zr.File {
		if !f.Modified.Equal(updated.Truncate(time.Second)) {
			t.Errorf("%s modified %v, want the session's updated time %v", f.Name, f.Modified, updated)
		}
	}
	readme := files["README.md"]
	for _, s := range []string{"# Expense approvals", "`" + sid + "`", "| 2 | PRD | current | 1 | 2026-01-02T03:06:05Z | [02-prd.md](02-prd.md) |", "Orphans: none", "Uncovered requirements: none"} {
		if !strings.Contains(readme, s) {
			t.Errorf("README.md lacks %q:\n%s", s, readme)
		}
	}
	if strings.Contains(readme, "stale") {
		t.Errorf("README.md marks a stage stale:\n%s", readme)
	}
	if got := files["02-prd.md"]; !strings.HasPrefix(got, "> PRD · version 1 · generated 2026-01-02T03:06:05Z · model model-x · prompt "+spec.PromptVersion(ports.StagePRD)+"\n\n# prd document\n") {
		t.Errorf("02-prd.md = %q", got)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(files["data/prd.json"]), &doc); err != nil || !strings.Contains(files["data/prd.json"], "\n  \"title\": ") {
		t.Errorf("data/prd.json is not pretty JSON (%v):\n%.200s", err, files["data/prd.json"])
	}
	rows := traceRows(t, files["traceability.csv"])
	for _, chain := range []string{"REQ-1>EP-1>ST-1.1>PRP-1.1", "REQ-2>EP-2>ST-2.1>PRP-2.1", "REQ-3>EP-2>ST-2.2>PRP-2.2"} {
		if rows[chain] != "complete" {
			t.Errorf("chain %s: %q, want complete (rows %v)", chain, rows[chain], rows)
		}
	}
	if len(rows) != 3 {
		t.Errorf("rows %v, want the three chains", rows)
	}
	if !strings.Contains(files["traceability.md"], "| REQ-1: ") || !strings.Contains(files["traceability.md"], "| complete |") {
		t.Errorf("traceability.md:\n%s", files["traceability.md"])
	}
}

func TestExportMarksStaleStages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, spec.Config{})
	sid := e.newSession(alice)
	for _, st := range []ports.Stage{ports.StageScope, ports.StagePRD, ports.StageEpics} {
		e.seedData(sid, st, sample(t, st))
	}
	e.clock.Advance(time.Hour)
	e.seedData(sid, ports.StagePRD, sample(t, ports.StagePRD)) // epics now stale
	names, files, _ := unzip(t, e.export(alice, sid, ""))
	want := []string{"README.md", "01-scope.md", "02-prd.md", "03-epics.md", "data/scope.json", "data/prd.json", "data/epics.json", "traceability.md", "traceability.csv"}
	if !slices.Equal(names, want) {
		t.Fatalf("files %v, want %v", names, want)
	}
	if !strings.Contains(files["03-epics.md"], spec.StaleNote) {
		t.Errorf("03-epics.md is not marked stale:\n%s", files["03-epics.md"])
	}
	if strings.Contains(files["02-prd.md"], "Stale") || !strings.Contains(files["02-prd.md"], "version 2") {
		t.Errorf("02-prd.md:\n%s", files["02-prd.md"])
	}
	for _, s := range []string{"| 3 | Epics | **stale** — regenerate | 1 |", "| 2 | PRD | current | 2 |", "| 4 | Stories | not generated | — |", "Stale: Epics."} {
		if !strings.Contains(files["README.md"], s) {
			t.Errorf("README.md lacks %q:\n%s", s, files["README.md"])
		}
	}
	if !strings.Contains(files["traceability.md"], "Derived from stale stages: Epics") {
		t.Errorf("traceability.md does not say it comes from a stale stage:\n%s", files["traceability.md"])
	}
	// Without stories, the chains stop at the epics.
	if rows := traceRows(t, files["traceability.csv"]); rows["REQ-1>EP-1>>"] != "partial" {
		t.Errorf("rows %v", rows)
	}
}

func TestExportTraceabilityOrphansAndUncovered(t *testing.T) {
	t.Parallel()
	e := newEnv(t, spec.Config{})
	sid := e.newSession(alice)
	e.seedData(sid, ports.StageScope, sample(t, ports.StageScope))
	e.seedData(sid, ports.StagePRD, sample(t, ports.StagePRD))
	e.seedData(sid, ports.StageEpics, edit(t, ports.StageEpics, func(doc map[string]any) {
		epics := doc["epics"].([]any)
		epics[1].(map[string]any)["requirement_ids"] = []any{"REQ-2"} // REQ-3 uncovered
		third := map[string]any{}
		for k, v := range epics[0].(map[string]any) {
			third[k] = v
		}
		third["id"], third["title"], third["requirement_ids"], third["order"] = "EP-3", "=HYPERLINK(\"x\")", []any{"REQ-9"}, 3
		doc["epics"] = append(epics, third)
	}))
	e.seedData(sid, ports.StageStories, edit(t, ports.StageStories, func(doc map[string]any) {
		stories := doc["stories"].([]any)
		stray := map[string]any{}
		for k, v := range stories[0].(map[string]any) {
			stray[k] = v
		}
		stray["id"], stray["epic_id"], stray["title"] = "ST-7.1", "EP-7", "Stray | story"
		doc["stories"] = append(stories, stray)
	}))
	e.seedData(sid, ports.StagePRPs, edit(t, ports.StagePRPs, func(doc map[string]any) {
		prps := doc["prps"].([]any)
		stray := map[string]any{}
		for k, v := range prps[0].(map[string]any) {
			stray[k] = v
		}
		stray["id"], stray["story_id"] = "PRP-8.1", "ST-8.1"
		doc["prps"] = append(prps, stray)
	}))
	_, files, _ := unzip(t, e.export(alice, sid, spec.ExportZip))
	rows := traceRows(t, files["traceability.csv"])
	want := map[string]string{
		"REQ-1>EP-1>ST-1.1>PRP-1.1": "complete",
		"REQ-2>EP-2>ST-2.1>PRP-2.1": "complete",
		"REQ-3>>>":                  "uncovered",
		">EP-3>>":                   "orphan",
		">EP-7>ST-7.1>":             "orphan",
		">>ST-8.1>PRP-8.1":          "orphan",
	}
	for chain, status := range want {
		if rows[chain] != status {
			t.Errorf("chain %s: %q, want %q", chain, rows[chain], status)
		}
	}
	// ST-2.2 cites REQ-3, which its epic no longer lists: it is listed
	// once, under its epic and no requirement — not under REQ-2.
	if rows[">EP-2>ST-2.2>PRP-2.2"] != "orphan" || rows["REQ-2>EP-2>ST-2.2>PRP-2.2"] != "" {
		t.Errorf("ST-2.2 is not under EP-2 alone: %v", rows)
	}
	for _, s := range []string{"Uncovered requirements (no epic): REQ-3", "Orphans (reached from no requirement): ST-2.2, EP-3, ST-7.1, PRP-8.1",
		"Dangling references: EP-3 names unknown requirement REQ-9; ST-7.1 names unknown epic EP-7; PRP-8.1 names unknown story ST-8.1"} {
		if !strings.Contains(files["README.md"], s) || !strings.Contains(files["traceability.md"], s) {
			t.Errorf("README.md or traceability.md lacks %q:\n%s", s, files["traceability.md"])
		}
	}
	if !strings.Contains(files["traceability.md"], "| orphan | ST-2.2 cites no requirement of its epic EP-2 (it cites REQ-3) |") {
		t.Errorf("traceability.md does not say why ST-2.2 is an orphan:\n%s", files["traceability.md"])
	}
	if !strings.Contains(files["traceability.csv"], `'=HYPERLINK`) {
		t.Errorf("a formula reached the CSV unescaped:\n%s", files["traceability.csv"])
	}
	if !strings.Contains(files["traceability.md"], `ST-7.1: Stray \| story`) {
		t.Errorf("a pipe in a title broke the table:\n%s", files["traceability.md"])
	}
}

func TestExportIsDeterministic(t *testing.T) {
	t.Parallel()
	e := newEnv(t, spec.Config{})
	sid := e.newSession(alice)
	for _, st := range ports.Stages {
		e.seedData(sid, st, sample(t, st))
	}
	for _, f := range []spec.ExportFormat{spec.ExportZip, spec.ExportMarkdown} {
		first := e.export(alice, sid, f)
		e.clock.Advance(time.Hour) // the time of the export is in neither
		if second := e.export(alice, sid, f); !bytes.Equal(first, second) {
			t.Errorf("two %s exports of the same session differ", f)
		}
	}
	a, _ := e.svc.ExportSession(as(alice), sid, spec.ExportZip)
	b, _ := e.svc.ExportSession(as(alice), sid, spec.ExportZip)
	m, _ := e.svc.ExportSession(as(alice), sid, spec.ExportMarkdown)
	if a.Tag() != b.Tag() || a.Tag() == m.Tag() {
		t.Errorf("tags: zip %s and %s, md %s", a.Tag(), b.Tag(), m.Tag())
	}
	e.seedData(sid, ports.StagePRPs, sample(t, ports.StagePRPs))
	if c, _ := e.svc.ExportSession(as(alice), sid, spec.ExportZip); c.Tag() == a.Tag() {
		t.Error("the tag did not change with a new version of a stage")
	}
	if got := a.FileName(); got != "spec-"+sid[len(sid)-8:]+".zip" || m.FileName() != strings.TrimSuffix(got, "zip")+"md" {
		t.Errorf("file names %q, %q", got, m.FileName())
	}
}

func TestExportMarkdown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, spec.Config{})
	sid := e.newSession(alice)
	for _, st := range []ports.Stage{ports.StageScope, ports.StagePRD, ports.StageEpics} {
		e.seedData(sid, st, sample(t, st))
	}
	e.seedData(sid, ports.StageScope, sample(t, ports.StageScope))
	doc := string(e.export(alice, sid, spec.ExportMarkdown))
	order := []string{"# Expense approvals", "## Stages", "| 1 | Scope | current | 2 |", "## Traceability",
		"> Scope · version 2", "# scope document", "> PRD · version 1", spec.StaleNote, "# prd document", "> Epics · version 1", spec.StaleNote, "# epics document", "# Traceability", "| REQ-1: "}
	at := 0
	for _, s := range order {
		i := strings.Index(doc[at:], s)
		if i < 0 {
			t.Fatalf("%q missing or out of order after byte %d:\n%s", s, at, doc)
		}
		at += i + len(s)
	}
	if strings.Contains(doc, "](") {
		t.Errorf("the single document links to files:\n%s", doc)
	}
}

func TestExportAccessAndErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, spec.Config{})
	sid := e.newSession(alice)
	e.seedData(sid, ports.StageScope, sample(t, ports.StageScope))
	for _, p := range []ports.Principal{other, bob} {
		if _, err := e.svc.ExportSession(as(p), sid, spec.ExportZip); !errors.Is(err, ports.ErrNotFound) {
			t.Errorf("%s exporting alice's session: %v, want not_found", p.UserID, err)
		}
	}
	if _, err := e.svc.ExportSession(as(alice), "not-an-id", spec.ExportZip); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("a bad id: %v", err)
	}
	if _, err := e.svc.ExportSession(t.Context(), sid, spec.ExportZip); !errors.Is(err, ports.ErrUnauthenticated) {
		t.Errorf("without a principal: %v", err)
	}
	_, err := e.svc.ExportSession(as(alice), sid, "pdf")
	if pe, ok := ports.AsError(err); !ok || pe.Kind != ports.KindInvalid || len(pe.Fields) != 1 || pe.Fields[0].Field != "format" {
		t.Errorf("an unknown format: %#v", err)
	}

	// A session without any stage exports its index alone.
	empty := e.newSession(alice)
	names, files, _ := unzip(t, e.export(alice, empty, spec.ExportZip))
	if !slices.Equal(names, []string{"README.md"}) || !strings.Contains(files["README.md"], "No stage is generated yet.") ||
		!strings.Contains(files["README.md"], "| 5 | PRPs | not generated | — | — | — |") {
		t.Errorf("an empty session: %v\n%s", names, files["README.md"])
	}
}
