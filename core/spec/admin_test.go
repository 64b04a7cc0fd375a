package spec_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/ports"
)

// withAudit rewires e's service to record audit entries in its store.
func withAudit(e *env) *env {
	e.rewire(func(d *spec.Deps) { d.Audit = e.store })
	return e
}

func auditEntries(t *testing.T, e *env, orgID string) []ports.AuditEntry {
	t.Helper()
	entries, _, err := e.store.ListAudit(t.Context(), orgID, "", ports.Page{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return entries
}

func TestRenameSession(t *testing.T) {
	t.Parallel()
	e := withAudit(newEnv(t, spec.Config{}))
	v, err := e.svc.CreateSession(as(alice), "Draft", []spec.NewInput{{Kind: ports.InputNote, Title: "n", Content: "text"}})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(1)
	got, err := e.svc.RenameSession(as(alice), v.Session.ID, "  Expense approvals  ")
	if err != nil {
		t.Fatal(err)
	}
	if got.Session.Name != "Expense approvals" || len(got.Inputs) != 1 || !got.Session.UpdatedAt.After(v.Session.UpdatedAt) {
		t.Errorf("renamed view %+v", got)
	}
	if stored := e.session(v.Session.ID); stored.Name != "Expense approvals" {
		t.Errorf("stored name %q", stored.Name)
	}
	entries := auditEntries(t, e, alice.OrgID)
	if len(entries) != 1 || entries[0].Action != spec.AuditSpecRename || entries[0].Resource != "spec_session/"+v.Session.ID ||
		entries[0].UserID != alice.UserID || !strings.Contains(string(entries[0].Arguments), `"from":"Draft"`) {
		t.Errorf("audit entries %+v", entries)
	}

	tests := []struct {
		name  string
		as    ports.Principal
		id    string
		sname string
		want  error
		field string
	}{
		{"another's", bob, v.Session.ID, "Mine", ports.ErrNotFound, ""},
		{"another org's", other, v.Session.ID, "Mine", ports.ErrNotFound, ""},
		{"unknown", alice, "00000000-0000-4000-8000-000000000000", "x", ports.ErrNotFound, ""},
		{"not an id", alice, "../etc", "x", ports.ErrNotFound, ""},
		{"empty", alice, v.Session.ID, " \t", ports.ErrInvalid, "name"},
		{"too long", alice, v.Session.ID, strings.Repeat("n", spec.MaxNameLen+1), ports.ErrInvalid, "name"},
		{"NUL", alice, v.Session.ID, "a\x00b", ports.ErrInvalid, "name"},
		{"control character", alice, v.Session.ID, "a\x07b", ports.ErrInvalid, "name"},
		{"not UTF-8", alice, v.Session.ID, "a\xffb", ports.ErrInvalid, "name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.svc.RenameSession(as(tt.as), tt.id, tt.sname)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if pe, _ := ports.AsError(err); tt.field != "" && (len(pe.Fields) != 1 || pe.Fields[0].Field != tt.field) {
				t.Errorf("fields %+v, want %s", pe.Fields, tt.field)
			}
		})
	}
	if stored := e.session(v.Session.ID); stored.Name != "Expense approvals" {
		t.Errorf("name after the refused renames %q", stored.Name)
	}
	if n := len(auditEntries(t, e, alice.OrgID)); n != 1 {
		t.Errorf("%d audit entries after the refused renames, want 1", n)
	}
}

func TestDeleteSession(t *testing.T) {
	t.Parallel()
	e := withAudit(newEnv(t, spec.Config{}))
	note := []spec.NewInput{{Kind: ports.InputNote, Title: "n", Content: "text"}}
	doomed, err := e.svc.CreateSession(as(alice), "Doomed", note)
	if err != nil {
		t.Fatal(err)
	}
	kept, err := e.svc.CreateSession(as(alice), "Kept", note)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []ports.Principal{bob, other} {
		if err := e.svc.DeleteSession(as(p), doomed.Session.ID); !errors.Is(err, ports.ErrNotFound) {
			t.Errorf("delete by %s = %v, want not_found", p.UserID, err)
		}
	}
	if err := e.svc.DeleteSession(as(alice), "not-an-id"); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("delete of a malformed id = %v, want not_found", err)
	}
	if err := e.svc.DeleteSession(as(alice), doomed.Session.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.GetSession(as(alice), doomed.Session.ID); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("GetSession after the delete = %v, want not_found", err)
	}
	if in := e.inputs(doomed.Session.ID); len(in) != 0 {
		t.Errorf("inputs after the delete %+v", in)
	}
	if err := e.svc.DeleteSession(as(alice), doomed.Session.ID); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("second delete = %v, want not_found", err)
	}
	if got := e.sessions(alice); len(got) != 1 || got[0].ID != kept.Session.ID {
		t.Errorf("sessions after the delete %+v", got)
	}
	entries := auditEntries(t, e, alice.OrgID)
	if len(entries) != 1 || entries[0].Action != spec.AuditSpecDelete || entries[0].Resource != "spec_session/"+doomed.Session.ID ||
		entries[0].Outcome != ports.AuditOK {
		t.Fatalf("audit entries %+v", entries)
	}
	var args map[string]string
	if err := json.Unmarshal(entries[0].Arguments, &args); err != nil || args["name"] != "Doomed" {
		t.Errorf("audit arguments %s (%v)", entries[0].Arguments, err)
	}
	if err := e.svc.DeleteSession(t.Context(), kept.Session.ID); !errors.Is(err, ports.ErrUnauthenticated) {
		t.Errorf("delete without a principal = %v", err)
	}
}

// TestDeleteSessionGenerating checks a generating session is not deleted,
// and that its job, run after the session is deleted, drops quietly
// without asking the model (the mock fails on any call) or storing
// anything.
func TestDeleteSessionGenerating(t *testing.T) {
	t.Parallel()
	e := withAudit(newEnv(t, spec.Config{}))
	sid := e.newSession(alice)
	job := e.generate(alice, sid, "")
	err := e.svc.DeleteSession(as(alice), sid)
	if !errors.Is(err, ports.ErrConflict) || errCode(err) != spec.CodeGenerationRunning {
		t.Fatalf("delete while generating = %v, want conflict %s", err, spec.CodeGenerationRunning)
	}
	if s := e.session(sid); s.Status != ports.SpecGenerating || len(e.inputs(sid)) != 1 {
		t.Fatalf("session after the refused delete %+v", s)
	}
	if n := len(auditEntries(t, e, alice.OrgID)); n != 0 {
		t.Errorf("%d audit entries for a refused delete", n)
	}
	// The worker's process stopped: the generation is given up, the session
	// is deleted, and then the job runs again.
	if err := e.svc.AbandonGeneration(t.Context(), job); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.DeleteSession(as(alice), sid); err != nil {
		t.Fatalf("delete once the generation ended: %v", err)
	}
	for _, final := range []bool{false, true} {
		if err := e.svc.RunGeneration(t.Context(), job, final); err != nil {
			t.Errorf("RunGeneration(final=%v) of a deleted session = %v, want nil", final, err)
		}
	}
	if err := e.svc.AbandonGeneration(t.Context(), job); err != nil {
		t.Errorf("AbandonGeneration of a deleted session = %v, want nil", err)
	}
	if completes, fails := e.counts(); completes != 0 || fails != 1 {
		t.Errorf("completes %d, fails %d; want 0 and the one abandon", completes, fails)
	}
	if arts := e.artifacts(sid); len(arts) != 0 {
		t.Errorf("artifacts of the deleted session %+v", arts)
	}
	if e.session(sid).ID != "" {
		t.Error("the deleted session came back")
	}
}

func TestDeriveTitle(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("word ", 30)
	tests := []struct {
		name    string
		kind    ports.InputKind
		content string
		want    string
	}{
		{"first line", ports.InputNote, "Kick-off notes\nsecond line", "Kick-off notes"},
		{"first line with text", ports.InputNote, "\n  \n\t Budget review  \nmore", "Budget review"},
		{"heading", ports.InputNote, "## Goals for Q3\nbody", "Goals for Q3"},
		{"closed heading", ports.InputNote, "# Goals #\nbody", "Goals"},
		{"hash in the text", ports.InputNote, "# Issue #42\nbody", "Issue #42"},
		{"marks only, then text", ports.InputNote, "#\n###   \nReal title", "Real title"},
		{"CRLF", ports.InputNote, "Windows note\r\nbody", "Windows note"},
		{"control characters", ports.InputNote, "a\x00b\x1bc\x07\tcd", "a b c cd"},
		{"spaces collapsed", ports.InputNote, "many    spaces   here", "many spaces here"},
		{"long, cut on a word", ports.InputNote, long, strings.TrimSpace(strings.Repeat("word ", 16)) + "…"},
		{"long word, cut hard", ports.InputNote, strings.Repeat("x", 100), strings.Repeat("x", 80) + "…"},
		{"exactly 80", ports.InputNote, strings.Repeat("y", 80), strings.Repeat("y", 80)},
		{"cut on a space at 80", ports.InputNote, strings.Repeat("z", 80) + " tail", strings.Repeat("z", 80) + "…"},
		{"runes, not bytes", ports.InputNote, strings.Repeat("é", 80), strings.Repeat("é", 80)},
		{"no text", ports.InputNote, "#\n  ##  \n", "Untitled note"},
		{"no text, document", ports.InputDocument, "###", "Untitled document"},
		{"no text, transcript", ports.InputTranscript, "\t", "Untitled transcript"},
		{"no text, unknown kind", "", "", "Untitled note"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := spec.DeriveTitle(tt.kind, tt.content); got != tt.want {
				t.Errorf("DeriveTitle(%q) = %q, want %q", tt.content, got, tt.want)
			}
		})
	}
}

// TestInputTitleOptional checks an input sent without a title, on create
// and on add, is titled from its content.
func TestInputTitleOptional(t *testing.T) {
	t.Parallel()
	e := newEnv(t, spec.Config{})
	v, err := e.svc.CreateSession(as(alice), "Notes", []spec.NewInput{
		{Kind: ports.InputNote, Content: "# Kick-off\nWe met."},
		{Kind: ports.InputNote, Title: "  ", Content: "   \nSecond note"},
		{Kind: ports.InputNote, Title: "Given", Content: "# Ignored"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, in := range v.Inputs {
		titles = append(titles, in.Title)
	}
	if strings.Join(titles, "|") != "Kick-off|Second note|Given" {
		t.Errorf("titles %q", titles)
	}
	added, err := e.svc.AddInput(as(alice), v.Session.ID, spec.NewInput{Kind: ports.InputDocument, Content: "## Budget\n…"})
	if err != nil || added.Title != "Budget" {
		t.Errorf("added %+v, %v", added, err)
	}
	if stored := e.inputs(v.Session.ID); len(stored) != 4 || stored[3].Title != "Budget" {
		t.Errorf("stored %+v", stored)
	}
	// A title is not made up for an input refused for its content.
	_, err = e.svc.AddInput(as(alice), v.Session.ID, spec.NewInput{Kind: ports.InputNote, Content: " "})
	if pe, ok := ports.AsError(err); !ok || len(pe.Fields) != 1 || pe.Fields[0].Field != "content" {
		t.Errorf("blank content = %v", err)
	}
}
