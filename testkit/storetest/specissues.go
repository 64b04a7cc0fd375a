package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// issueExportStores are the export store under test and the specification
// stores that hold the sessions the exports belong to.
type issueExportStores struct {
	Exports ports.IssueExportStore
	Spec    specStores
}

// TestIssueExports runs the contract of ports.IssueExportStore. newStores
// is called by every subtest (subtests run in parallel) and may return
// stores over a shared database.
//
// Where the port leaves a case open, the suite expects times back to the
// millisecond and in UTC.
func TestIssueExports(t *testing.T, newStores Factory) {
	runSuite(t, view(newStores, Stores.issueExport, needIssueExport), []suiteCase[issueExportStores]{
		{"IssueExportRoundTrip", testIssueExportRoundTrip},
		{"IssueExportOwnerOnly", testIssueExportOwnerOnly},
		{"IssueExportOneActive", testIssueExportOneActive},
		{"IssueExportUnknown", testIssueExportUnknown},
		{"ExportedIssuesUpsert", testExportedIssuesUpsert},
		{"RaceCreateIssueExport", testRaceCreateIssueExport},
		{"IssueExportsDeletedWithSession", testIssueExportsDeletedWithSession},
	})
}

func newIssueExport(owner ports.Owner, sessionID, repoID string) ports.IssueExport {
	return ports.IssueExport{ID: newID(), SessionID: sessionID, OrgID: owner.OrgID, UserID: owner.UserID, RepoID: repoID,
		IncludePRPs: true, Status: ports.IssueExportQueued, CreatedAt: base, UpdatedAt: base}
}

func checkIssueExport(t *testing.T, what string, got, want ports.IssueExport) {
	t.Helper()
	checkUTC(t, what, &got.CreatedAt, &got.UpdatedAt)
	got.CreatedAt, got.UpdatedAt = ms(got.CreatedAt), ms(got.UpdatedAt)
	want.CreatedAt, want.UpdatedAt = ms(want.CreatedAt), ms(want.UpdatedAt)
	checkEqual(t, what, got, want)
}

func testIssueExportRoundTrip(t *testing.T, s issueExportStores) {
	owner, ss := newSpec(t, s.Spec)
	e := newIssueExport(owner, ss.ID, newID())
	if err := s.Exports.CreateIssueExport(t.Context(), e); err != nil {
		t.Fatalf("CreateIssueExport: %v", err)
	}
	got, err := s.Exports.GetIssueExport(t.Context(), owner, ss.ID, e.ID)
	if err != nil {
		t.Fatalf("GetIssueExport: %v", err)
	}
	checkIssueExport(t, "created", got, e)

	at := base.Add(time.Minute)
	p := ports.IssueExportProgress{Status: ports.IssueExportFailed, Total: 7, Done: 3, Error: "GitHub said no — ✓ 日本"}
	if err := s.Exports.SaveIssueExportProgress(t.Context(), e.ID, p, at); err != nil {
		t.Fatalf("SaveIssueExportProgress: %v", err)
	}
	got, err = s.Exports.GetIssueExport(t.Context(), owner, ss.ID, e.ID)
	if err != nil {
		t.Fatalf("GetIssueExport: %v", err)
	}
	e.Status, e.Total, e.Done, e.Error, e.UpdatedAt = p.Status, p.Total, p.Done, p.Error, at
	checkIssueExport(t, "after progress", got, e)
}

func testIssueExportOwnerOnly(t *testing.T, s issueExportStores) {
	owner, ss := newSpec(t, s.Spec)
	e := newIssueExport(owner, ss.ID, newID())
	if err := s.Exports.CreateIssueExport(t.Context(), e); err != nil {
		t.Fatalf("CreateIssueExport: %v", err)
	}
	other := seedOwner(t, s.Spec.Identity)
	colleague := ports.Owner{OrgID: owner.OrgID, UserID: other.UserID}
	for name, o := range map[string]ports.Owner{"another org": other, "another user": colleague} {
		if _, err := s.Exports.GetIssueExport(t.Context(), o, ss.ID, e.ID); !errors.Is(err, ports.ErrNotFound) {
			t.Errorf("GetIssueExport as %s = %v, want not_found", name, err)
		}
	}
	_, ss2 := newSpec(t, s.Spec)
	if _, err := s.Exports.GetIssueExport(t.Context(), owner, ss2.ID, e.ID); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("GetIssueExport under another session = %v, want not_found", err)
	}
}

func testIssueExportOneActive(t *testing.T, s issueExportStores) {
	owner, ss := newSpec(t, s.Spec)
	repo := newID()
	first := newIssueExport(owner, ss.ID, repo)
	if err := s.Exports.CreateIssueExport(t.Context(), first); err != nil {
		t.Fatalf("CreateIssueExport: %v", err)
	}
	if err := s.Exports.CreateIssueExport(t.Context(), newIssueExport(owner, ss.ID, repo)); !errors.Is(err, ports.ErrConflict) {
		t.Fatalf("a second queued export = %v, want conflict", err)
	}
	if err := s.Exports.CreateIssueExport(t.Context(), newIssueExport(owner, ss.ID, newID())); err != nil {
		t.Fatalf("an export to another repository: %v", err)
	}
	if err := s.Exports.SaveIssueExportProgress(t.Context(), first.ID, ports.IssueExportProgress{Status: ports.IssueExportDone, Total: 1, Done: 1}, base); err != nil {
		t.Fatalf("SaveIssueExportProgress: %v", err)
	}
	if err := s.Exports.CreateIssueExport(t.Context(), newIssueExport(owner, ss.ID, repo)); err != nil {
		t.Fatalf("an export after the first is done: %v", err)
	}
}

func testIssueExportUnknown(t *testing.T, s issueExportStores) {
	owner, _ := newSpec(t, s.Spec)
	if err := s.Exports.CreateIssueExport(t.Context(), newIssueExport(owner, newID(), newID())); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("CreateIssueExport of an unknown session = %v, want not_found", err)
	}
	if err := s.Exports.SaveIssueExportProgress(t.Context(), newID(), ports.IssueExportProgress{Status: ports.IssueExportDone}, base); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("SaveIssueExportProgress of an unknown export = %v, want not_found", err)
	}
	if err := s.Exports.RecordExportedIssue(t.Context(), ports.ExportedIssue{SessionID: newID(), RepoID: newID(), Ref: "ST-1.1", Kind: "story",
		Number: 1, CreatedAt: base, UpdatedAt: base}); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("RecordExportedIssue of an unknown session = %v, want not_found", err)
	}
}

func testExportedIssuesUpsert(t *testing.T, s issueExportStores) {
	_, ss := newSpec(t, s.Spec)
	repo, other := newID(), newID()
	rec := func(ref, kind string, n int, at time.Time) ports.ExportedIssue {
		i := ports.ExportedIssue{SessionID: ss.ID, RepoID: repo, Ref: ref, Kind: kind, Number: n,
			HTMLURL: fmt.Sprintf("https://github.example/o/r/issues/%d", n), CreatedAt: at, UpdatedAt: at}
		if err := s.Exports.RecordExportedIssue(t.Context(), i); err != nil {
			t.Fatalf("RecordExportedIssue(%s): %v", ref, err)
		}
		return i
	}
	a := rec("ST-1.2", "story", 2, base.Add(time.Second))
	b := rec("ST-1.1", "story", 1, base.Add(time.Second))
	c := rec("EP-1", "epic", 3, base.Add(2*time.Second))
	later := base.Add(time.Hour)
	a2 := rec("ST-1.2", "story", 5, later)
	a2.CreatedAt = a.CreatedAt
	if err := s.Exports.RecordExportedIssue(t.Context(), ports.ExportedIssue{SessionID: ss.ID, RepoID: other, Ref: "ST-1.1", Kind: "story",
		Number: 9, CreatedAt: base, UpdatedAt: base}); err != nil {
		t.Fatalf("RecordExportedIssue in another repository: %v", err)
	}
	got, err := s.Exports.ListExportedIssues(t.Context(), ss.ID, repo)
	if err != nil {
		t.Fatalf("ListExportedIssues: %v", err)
	}
	want := []ports.ExportedIssue{b, a2, c}
	if len(got) != len(want) {
		t.Fatalf("ListExportedIssues = %+v, want %+v", got, want)
	}
	for i := range got {
		checkUTC(t, "exported issue", &got[i].CreatedAt, &got[i].UpdatedAt)
		got[i].CreatedAt, got[i].UpdatedAt = ms(got[i].CreatedAt), ms(got[i].UpdatedAt)
		want[i].CreatedAt, want[i].UpdatedAt = ms(want[i].CreatedAt), ms(want[i].UpdatedAt)
	}
	checkEqual(t, "exported issues", got, want)
	if none, err := s.Exports.ListExportedIssues(t.Context(), ss.ID, newID()); err != nil || len(none) != 0 {
		t.Errorf("ListExportedIssues of an unexported repository = %v, %v; want none", none, err)
	}
}

func testRaceCreateIssueExport(t *testing.T, s issueExportStores) {
	owner, ss := newSpec(t, s.Spec)
	repo := newID()
	const n = 6
	ok := 0
	for i, err := range race(n, func(int) error { return s.Exports.CreateIssueExport(t.Context(), newIssueExport(owner, ss.ID, repo)) }) {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, ports.ErrConflict):
			t.Errorf("create %d: %v, want nil or conflict", i, err)
		}
	}
	if ok != 1 {
		t.Errorf("%d of %d concurrent exports were created, want 1", ok, n)
	}
}

// testIssueExportsDeletedWithSession checks a deleted session's exports
// and the record of the issues they created go with it, and another
// session's stay.
func testIssueExportsDeletedWithSession(t *testing.T, s issueExportStores) {
	ctx := t.Context()
	owner, a := newSpec(t, s.Spec)
	b := mustCreateSpecSession(t, s.Spec, newSpecSession(owner))
	repo := newID()
	exports := map[string]ports.IssueExport{}
	for _, id := range []string{a.ID, b.ID} {
		e := newIssueExport(owner, id, repo)
		if err := s.Exports.CreateIssueExport(ctx, e); err != nil {
			t.Fatalf("CreateIssueExport: %v", err)
		}
		exports[id] = e
		if err := s.Exports.RecordExportedIssue(ctx, ports.ExportedIssue{SessionID: id, RepoID: repo, Ref: "EP-1", Kind: "epic",
			Number: 1, HTMLURL: "https://github.example/o/r/issues/1", CreatedAt: base, UpdatedAt: base}); err != nil {
			t.Fatalf("RecordExportedIssue: %v", err)
		}
	}
	// A queued export holds the session: its job would write into a
	// deleted one.
	_, err := s.Spec.Specs.DeleteSpecSession(ctx, owner, a.ID)
	checkConflict(t, "DeleteSpecSession with a queued export", err)
	if !errors.Is(err, ports.ErrSpecExportRunning) {
		t.Errorf("DeleteSpecSession with a queued export = %v, want code %s", err, ports.CodeSpecExportRunning)
	}
	for _, status := range []string{ports.IssueExportRunning, ports.IssueExportDone} {
		if err := s.Exports.SaveIssueExportProgress(ctx, exports[a.ID].ID, ports.IssueExportProgress{Status: status, Total: 1, Done: 1}, base.Add(time.Minute)); err != nil {
			t.Fatalf("SaveIssueExportProgress(%s): %v", status, err)
		}
		_, err = s.Spec.Specs.DeleteSpecSession(ctx, owner, a.ID)
		if status == ports.IssueExportRunning && !errors.Is(err, ports.ErrSpecExportRunning) {
			t.Errorf("DeleteSpecSession with a running export = %v, want code %s", err, ports.CodeSpecExportRunning)
		}
	}
	if err != nil {
		t.Fatalf("DeleteSpecSession once the export is done: %v", err)
	}
	if _, err := s.Exports.GetIssueExport(ctx, owner, a.ID, exports[a.ID].ID); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("GetIssueExport of a deleted session = %v, want not_found", err)
	}
	if got, err := s.Exports.ListExportedIssues(ctx, a.ID, repo); err != nil || len(got) != 0 {
		t.Errorf("ListExportedIssues of a deleted session = %+v, %v; want none", got, err)
	}
	got, err := s.Exports.GetIssueExport(ctx, owner, b.ID, exports[b.ID].ID)
	if err != nil {
		t.Fatalf("GetIssueExport of the other session: %v", err)
	}
	checkIssueExport(t, "the other session's export", got, exports[b.ID])
	if issues, err := s.Exports.ListExportedIssues(ctx, b.ID, repo); err != nil || len(issues) != 1 {
		t.Errorf("ListExportedIssues of the other session = %+v, %v; want one", issues, err)
	}
}
