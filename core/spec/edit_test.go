package spec_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/ports"
)

func version(n int) *int { return &n }

func TestEditStage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, spec.Config{})
	sid := e.newSession(alice)
	e.seed(sid, ports.StageScope, ports.StagePRD, ports.StageEpics, ports.StageStories)

	// A PRD whose new requirement no epic covers: valid, with a finding.
	data := edit(t, ports.StagePRD, func(doc map[string]any) {
		doc["summary"] = "Edited by hand."
		reqs := doc["functional_requirements"].([]any)
		doc["functional_requirements"] = append(reqs, map[string]any{
			"id": "REQ-99", "title": "Export approvals", "description": "Approvals export to CSV.", "priority": "should",
			"sources": []any{},
		})
	})
	got, err := e.svc.EditStage(as(alice), sid, ports.StagePRD, json.RawMessage(data), version(1))
	if err != nil {
		t.Fatalf("EditStage: %v", err)
	}
	if got.Version != 2 || got.EditedBy != alice.UserID || got.Model != "" || got.Stale {
		t.Errorf("EditStage = version %d edited by %q model %q stale %v, want 2 by %q, no model, fresh",
			got.Version, got.EditedBy, got.Model, got.Stale, alice.UserID)
	}
	if !strings.Contains(got.Content, "Edited by hand.") || !strings.Contains(got.Content, "REQ-99") {
		t.Errorf("the edited version's Markdown was not rendered from its data:\n%s", got.Content)
	}
	for _, a := range e.artifacts(sid) {
		later := a.Stage == ports.StageEpics || a.Stage == ports.StageStories
		if a.Stale != later {
			t.Errorf("%s v%d stale = %v, want %v", a.Stage, a.Version, a.Stale, later)
		}
	}
	if s := e.session(sid); s.CurrentStage != ports.StagePRD {
		t.Errorf("after the edit the session's current stage is %q, want prd", s.CurrentStage)
	}

	versions, err := e.svc.StageVersions(as(alice), sid, ports.StagePRD)
	if err != nil {
		t.Fatalf("StageVersions: %v", err)
	}
	if len(versions) != 2 || versions[0].Version != 2 || versions[1].Version != 1 {
		t.Fatalf("StageVersions = %d versions, want 2 and 1, newest first", len(versions))
	}

	d, err := e.svc.DiffVersions(as(alice), sid, ports.StagePRD, 1, 2)
	if err != nil {
		t.Fatalf("DiffVersions: %v", err)
	}
	if len(d.Added) != 1 || d.Added[0].ID != "REQ-99" || d.Added[0].Section != "functional_requirements" || len(d.Removed) != 0 {
		t.Errorf("DiffVersions added %+v removed %+v, want REQ-99 added alone", d.Added, d.Removed)
	}
	if len(d.Changed) != 1 || d.Changed[0].Section != "document" || !slices.Equal(d.Changed[0].Fields, []string{"summary"}) {
		t.Errorf("DiffVersions changed %+v, want the document's summary", d.Changed)
	}
	if !strings.Contains(d.TextDiff, "--- prd v1\n+++ prd v2\n") || !strings.Contains(d.TextDiff, "\n+") {
		t.Errorf("DiffVersions text diff:\n%s", d.TextDiff)
	}
}

// TestEditStageNamesEditor: a version edited by hand names its editor (the
// email of a user of the caller's org) wherever versions are read, and in
// the export's header; without a user store it names no one.
func TestEditStageNamesEditor(t *testing.T) {
	t.Parallel()
	e := newEnv(t, spec.Config{})
	sid := e.newSession(alice)
	e.seed(sid, ports.StageScope, ports.StagePRD)
	data := edit(t, ports.StagePRD, func(doc map[string]any) { doc["summary"] = "Edited by hand." })
	got, err := e.svc.EditStage(as(alice), sid, ports.StagePRD, json.RawMessage(data), version(1))
	if err != nil {
		t.Fatalf("EditStage: %v", err)
	}
	if got.EditorName != "" {
		t.Errorf("without a user store the editor is named %q", got.EditorName)
	}
	e.rewire(func(d *spec.Deps) { d.Users = e.store })
	want := alice.UserID + "@example.com"
	versions, err := e.svc.StageVersions(as(alice), sid, ports.StagePRD)
	if err != nil || len(versions) != 2 || versions[0].EditorName != want || versions[1].EditorName != "" {
		t.Fatalf("StageVersions = %+v, %v; want v2 named %s, v1 (a model's) not", versions, err, want)
	}
	v, err := e.svc.GetSession(as(alice), sid)
	if err != nil {
		t.Fatal(err)
	}
	named := 0
	for _, a := range v.Artifacts {
		if a.EditedBy != "" && a.EditorName == want {
			named++
		}
	}
	if named != 1 {
		t.Errorf("GetSession names %d edited versions, want 1", named)
	}
	ex, err := e.svc.ExportSession(as(alice), sid, spec.ExportMarkdown)
	if err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	if err := ex.Write(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "> PRD · version 2 · edited by hand ") || !strings.Contains(buf.String(), " by "+want) {
		t.Errorf("the export does not say who edited the PRD:\n%s", buf.String())
	}
}

func TestDiffVersionsItems(t *testing.T) {
	t.Parallel()
	e := newEnv(t, spec.Config{})
	sid := e.newSession(alice)
	e.seed(sid, ports.StageScope, ports.StagePRD, ports.StageEpics)
	var first string
	data := edit(t, ports.StageEpics, func(doc map[string]any) {
		epics := doc["epics"].([]any)
		ep := epics[0].(map[string]any)
		first = ep["id"].(string)
		ep["title"], ep["goal"] = "Renamed", "A new goal"
		ep["requirement_ids"] = append(ep["requirement_ids"].([]any), "REQ-404")
		doc["epics"] = epics[:len(epics)-1]
	})
	art, err := e.svc.EditStage(as(alice), sid, ports.StageEpics, json.RawMessage(data), version(1))
	if err != nil {
		t.Fatalf("EditStage: %v", err)
	}
	// Traceability is re-run against the current PRD.
	if !slices.ContainsFunc(art.Checks, func(c string) bool { return strings.Contains(c, "REQ-404") }) ||
		!strings.Contains(art.Content, "REQ-404") {
		t.Errorf("traceability was not re-run: checks %q name no REQ-404", art.Checks)
	}
	d, err := e.svc.DiffVersions(as(alice), sid, ports.StageEpics, 1, 2)
	if err != nil {
		t.Fatalf("DiffVersions: %v", err)
	}
	if len(d.Removed) != 1 || len(d.Added) != 0 {
		t.Errorf("removed %+v added %+v, want the last epic removed", d.Removed, d.Added)
	}
	if len(d.Changed) != 1 || d.Changed[0].ID != first || !slices.Equal(d.Changed[0].Fields, []string{"goal", "requirement_ids", "title"}) {
		t.Errorf("changed %+v, want %s's goal and title", d.Changed, first)
	}
	// The scope's lists are sets of strings.
	scope := edit(t, ports.StageScope, func(doc map[string]any) {
		doc["goals"] = append(doc["goals"].([]any), "A new goal")
	})
	if _, err := e.svc.EditStage(as(alice), sid, ports.StageScope, json.RawMessage(scope), version(1)); err != nil {
		t.Fatalf("EditStage(scope): %v", err)
	}
	d, err = e.svc.DiffVersions(as(alice), sid, ports.StageScope, 1, 2)
	if err != nil {
		t.Fatalf("DiffVersions(scope): %v", err)
	}
	if len(d.Added) != 1 || d.Added[0].ID != "A new goal" || d.Added[0].Section != "goals" || len(d.Changed) != 0 {
		t.Errorf("scope diff added %+v changed %+v, want the goal added", d.Added, d.Changed)
	}
	if _, err := e.svc.DiffVersions(as(alice), sid, ports.StageScope, 1, 3); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("DiffVersions to a missing version = %v, want not_found", err)
	}
}

func TestEditStageErrors(t *testing.T) {
	t.Parallel()
	valid := func(t *testing.T) json.RawMessage { return json.RawMessage(sample(t, ports.StagePRD)) }
	tests := []struct {
		name  string
		setup func(e *env) (ports.Principal, string)
		data  func(t *testing.T) json.RawMessage
		base  *int
		kind  ports.Kind
		code  string
	}{
		{name: "missing If-Match", data: valid, kind: ports.KindPreconditionRequired, code: spec.CodeVersionRequired,
			setup: func(e *env) (ports.Principal, string) { return alice, seeded(e) }},
		{name: "stale version", data: valid, base: version(2), kind: ports.KindPreconditionFailed, code: spec.CodeStaleVersion,
			setup: func(e *env) (ports.Principal, string) { return alice, seeded(e) }},
		{name: "invalid document", base: version(1), kind: ports.KindInvalid, code: spec.CodeInvalidDocument,
			data: func(t *testing.T) json.RawMessage {
				return json.RawMessage(edit(t, ports.StagePRD, func(doc map[string]any) { delete(doc, "summary") }))
			},
			setup: func(e *env) (ports.Principal, string) { return alice, seeded(e) }},
		{name: "duplicate ids", base: version(1), kind: ports.KindInvalid, code: spec.CodeInvalidDocument,
			data: func(t *testing.T) json.RawMessage {
				return json.RawMessage(edit(t, ports.StagePRD, func(doc map[string]any) {
					reqs := doc["functional_requirements"].([]any)
					doc["functional_requirements"] = append(reqs, reqs[0])
				}))
			},
			setup: func(e *env) (ports.Principal, string) { return alice, seeded(e) }},
		{name: "generating", data: valid, base: version(1), kind: ports.KindConflict, code: spec.CodeGenerationRunning,
			setup: func(e *env) (ports.Principal, string) {
				sid := seeded(e)
				e.generate(alice, sid, ports.StageEpics)
				return alice, sid
			}},
		{name: "no version yet", data: valid, base: version(0), kind: ports.KindConflict, code: spec.CodeStageNotReady,
			setup: func(e *env) (ports.Principal, string) {
				sid := e.newSession(alice)
				e.seed(sid, ports.StageScope)
				return alice, sid
			}},
		{name: "another's session", data: valid, base: version(1), kind: ports.KindNotFound, code: "not_found",
			setup: func(e *env) (ports.Principal, string) { return bob, seeded(e) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, spec.Config{})
			p, sid := tt.setup(e)
			before := len(e.artifacts(sid))
			_, err := e.svc.EditStage(as(p), sid, ports.StagePRD, tt.data(t), tt.base)
			if !ports.IsKind(err, tt.kind) || errCode(err) != tt.code {
				t.Fatalf("EditStage = %v (code %q), want %s (%s)", err, errCode(err), tt.kind, tt.code)
			}
			if tt.kind == ports.KindInvalid {
				pe, _ := ports.AsError(err)
				if len(pe.Fields) == 0 || pe.Fields[0].Field != "data" || pe.Fields[0].Reason == "" {
					t.Errorf("the invalid document's error lists no problems: %+v", pe.Fields)
				}
			}
			if n := len(e.artifacts(sid)); n != before {
				t.Errorf("a refused edit stored an artifact: %d, had %d", n, before)
			}
		})
	}
}

// seeded is a session of alice's with a scope and a PRD, version 1 each.
func seeded(e *env) string {
	sid := e.newSession(alice)
	e.seed(sid, ports.StageScope, ports.StagePRD)
	return sid
}
