package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// The content project cases of TestContent. Where the port leaves a case
// open, the suite expects: CreateContentProject's conflict for a taken name
// has the message `a content project named "N" exists already` and for a
// taken id `content project X exists already`; GetContentProject's
// not_found is "content project X not found"; UpdateContentProject is
// precondition_failed with the message "content project X is at version N,
// not M".
var contentProjectCases = []suiteCase[contentStores]{
	{"ContentProjectRoundTrip", testContentProjectRoundTrip},
	{"ContentProjectNamesUnique", testContentProjectNamesUnique},
	{"RaceCreateContentProject", testRaceCreateContentProject},
	{"EnsureContentProject", testEnsureContentProject},
	{"ListContentProjectsPages", testListContentProjectsPages},
	{"ListContentProjectsMalformedCursor", testListContentProjectsMalformedCursor},
	{"UpdateContentProject", testUpdateContentProject},
	{"RaceUpdateContentProject", testRaceUpdateContentProject},
	{"ContentProjectTxRollback", testContentProjectTxRollback},
}

func newContentProject(o contentOwner, name string) ports.ContentProject {
	return ports.ContentProject{
		ID: newID(), OrgID: o.org.ID, Name: name, Description: "For the «shop» ✓\nsecond line",
		CreatedBy: o.user.ID, CreatedAt: base,
	}
}

func mustCreateContentProject(t *testing.T, s contentStores, p ports.ContentProject) ports.ContentProject {
	t.Helper()
	if err := s.Content.CreateContentProject(t.Context(), p); err != nil {
		t.Fatalf("CreateContentProject(%q): %v", p.Name, err)
	}
	if p.Version == 0 {
		p.Version = 1
	}
	if p.UpdatedAt.IsZero() {
		p.UpdatedAt = p.CreatedAt
	}
	return p
}

func checkContentProject(t *testing.T, what string, got, want ports.ContentProject) {
	t.Helper()
	checkUTC(t, what, &got.CreatedAt, &got.UpdatedAt)
	got.CreatedAt, got.UpdatedAt = ms(got.CreatedAt), ms(got.UpdatedAt)
	want.CreatedAt, want.UpdatedAt = ms(want.CreatedAt), ms(want.UpdatedAt)
	checkEqual(t, what, got, want)
}

func mustGetContentProject(t *testing.T, s contentStores, orgID, id string) ports.ContentProject {
	t.Helper()
	p, err := s.Content.GetContentProject(t.Context(), orgID, id)
	if err != nil {
		t.Fatalf("GetContentProject(%s): %v", id, err)
	}
	return p
}

func testContentProjectRoundTrip(t *testing.T, s contentStores) {
	ctx := t.Context()
	o := newContentOwner(t, s)
	p := mustCreateContentProject(t, s, newContentProject(o, "Launch — «Checkout» ✓"))
	checkContentProject(t, "GetContentProject", mustGetContentProject(t, s, o.org.ID, p.ID), p)

	other := newContentOwner(t, s)
	_, err := s.Content.GetContentProject(ctx, other.org.ID, p.ID)
	checkNotFound(t, "GetContentProject(another org)", err, "content project", p.ID)
	_, err = s.Content.GetContentProject(ctx, o.org.ID, "project-"+newID())
	checkKind(t, "GetContentProject(absent)", err, ports.KindNotFound)
	// Another org may use the same id and the same name.
	same := newContentProject(other, p.Name)
	same.ID = p.ID
	mustCreateContentProject(t, s, same)
	checkContentProject(t, "GetContentProject(first org) after another org's", mustGetContentProject(t, s, o.org.ID, p.ID), p)

	missing := newContentProject(o, "Orphan")
	missing.OrgID = newID()
	err = s.Content.CreateContentProject(ctx, missing)
	checkKind(t, "CreateContentProject(missing org)", err, ports.KindNotFound)
}

func testContentProjectNamesUnique(t *testing.T, s contentStores) {
	ctx := t.Context()
	o := newContentOwner(t, s)
	p := mustCreateContentProject(t, s, newContentProject(o, "Spring Launch"))
	for _, name := range []string{"Spring Launch", "spring launch", "SPRING  LAUNCH", " spring\tlaunch "} {
		dup := newContentProject(o, name)
		err := s.Content.CreateContentProject(ctx, dup)
		checkError(t, fmt.Sprintf("CreateContentProject(%q)", name), err, ports.KindConflict,
			fmt.Sprintf("a content project named %q exists already", name))
	}
	again := newContentProject(o, "Another name")
	again.ID = p.ID
	err := s.Content.CreateContentProject(ctx, again)
	checkError(t, "CreateContentProject(taken id)", err, ports.KindConflict, "content project "+p.ID+" exists already")
	// Nothing of the refused creates is stored.
	all, _ := listAllContentProjects(t, s, o.org.ID, 0)
	if len(all) != 1 || all[0].Name != p.Name {
		t.Errorf("ListContentProjects after refused creates = %+v, want only %q", all, p.Name)
	}
}

// Of concurrent creates of one name (in different cases) exactly one
// succeeds: the database's unique index decides.
func testRaceCreateContentProject(t *testing.T, s contentStores) {
	o := newContentOwner(t, s)
	const n = 20
	projects := make([]ports.ContentProject, n)
	for i := range projects {
		name := "Race project"
		if i%2 == 1 {
			name = "RACE PROJECT"
		}
		projects[i] = newContentProject(o, name)
	}
	errs := race(n, func(i int) error { return s.Content.CreateContentProject(t.Context(), projects[i]) })
	winner := oneWinner(t, "CreateContentProject", errs, ports.ErrConflict)
	if winner < 0 {
		t.FailNow()
	}
	all, _ := listAllContentProjects(t, s, o.org.ID, 0)
	if len(all) != 1 || all[0].ID != projects[winner].ID {
		t.Errorf("ListContentProjects after the race = %+v, want the winner %s only", all, projects[winner].ID)
	}
}

func testEnsureContentProject(t *testing.T, s contentStores) {
	ctx := t.Context()
	o := newContentOwner(t, s)
	id := newProjectID()
	p := ports.ContentProject{ID: id, OrgID: o.org.ID, Name: id, CreatedBy: o.user.ID, CreatedAt: base}
	for i, want := range []bool{true, false} {
		created, err := s.Content.EnsureContentProject(ctx, p)
		if err != nil || created != want {
			t.Fatalf("EnsureContentProject #%d = %v, %v; want %v", i+1, created, err, want)
		}
	}
	p.Version, p.UpdatedAt = 1, p.CreatedAt
	checkContentProject(t, "GetContentProject after ensure", mustGetContentProject(t, s, o.org.ID, id), p)
	// An ensure of a stored id keeps what is stored, whatever its name.
	renamed := p
	renamed.Name = "Something else"
	if created, err := s.Content.EnsureContentProject(ctx, renamed); err != nil || created {
		t.Errorf("EnsureContentProject(stored id, other name) = %v, %v; want false, nil", created, err)
	}
	checkContentProject(t, "GetContentProject after a second ensure", mustGetContentProject(t, s, o.org.ID, id), p)
	// A new id whose name is taken is a conflict and stores nothing.
	clash := ports.ContentProject{ID: newProjectID(), OrgID: o.org.ID, Name: id, CreatedAt: base}
	created, err := s.Content.EnsureContentProject(ctx, clash)
	if created {
		t.Errorf("EnsureContentProject(taken name) created it")
	}
	checkKind(t, "EnsureContentProject(taken name)", err, ports.KindConflict)
	_, err = s.Content.GetContentProject(ctx, o.org.ID, clash.ID)
	checkKind(t, "GetContentProject after a refused ensure", err, ports.KindNotFound)
}

func listAllContentProjects(t *testing.T, s contentStores, orgID string, limit int) ([]ports.ContentProject, int) {
	t.Helper()
	var all []ports.ContentProject
	page := ports.Page{Limit: limit}
	pages := 0
	for {
		got, next, err := s.Content.ListContentProjects(t.Context(), orgID, page)
		if err != nil {
			t.Fatalf("ListContentProjects(cursor %q): %v", page.Cursor, err)
		}
		pages++
		all = append(all, got...)
		if next == "" {
			return all, pages
		}
		if pages > 100 {
			t.Fatal("ListContentProjects does not end")
		}
		page.Cursor = next
	}
}

func testListContentProjectsPages(t *testing.T, s contentStores) {
	o := newContentOwner(t, s)
	other := newContentOwner(t, s)
	mustCreateContentProject(t, s, newContentProject(other, "alpha"))
	names := []string{"delta", "Alpha", "charlie", "Bravo", "echo ✓", "Écho"}
	for _, name := range names {
		mustCreateContentProject(t, s, newContentProject(o, name))
	}
	// By name key, bytewise: ASCII before "é".
	want := []string{"Alpha", "Bravo", "charlie", "delta", "echo ✓", "Écho"}
	for _, limit := range []int{0, 1, 4} {
		all, pages := listAllContentProjects(t, s, o.org.ID, limit)
		got := make([]string, len(all))
		for i, p := range all {
			got[i] = p.Name
			if p.OrgID != o.org.ID {
				t.Errorf("ListContentProjects lists org %s's project", p.OrgID)
			}
		}
		checkEqual(t, fmt.Sprintf("ListContentProjects(limit %d) names", limit), got, want)
		if limit == 1 && pages != len(want) {
			t.Errorf("ListContentProjects(limit 1) took %d pages, want %d", pages, len(want))
		}
	}
}

func testListContentProjectsMalformedCursor(t *testing.T, s contentStores) {
	o := newContentOwner(t, s)
	mustCreateContentProject(t, s, newContentProject(o, "Only"))
	for _, cursor := range malformedCursors() {
		_, _, err := s.Content.ListContentProjects(t.Context(), o.org.ID, ports.Page{Cursor: cursor})
		if err != nil {
			checkInvalidField(t, fmt.Sprintf("ListContentProjects(cursor %q)", cursor), err, "cursor")
		}
	}
}

func testUpdateContentProject(t *testing.T, s contentStores) {
	ctx := t.Context()
	o := newContentOwner(t, s)
	p := mustCreateContentProject(t, s, newContentProject(o, "Before"))
	taken := mustCreateContentProject(t, s, newContentProject(o, "Taken"))

	next := p
	next.Name, next.Description, next.Version, next.UpdatedAt = "After ✓", "", 2, base.Add(time.Hour)
	next.CreatedBy, next.CreatedAt = "someone else", base.Add(time.Minute) // kept as stored
	if err := s.Content.UpdateContentProject(ctx, next); err != nil {
		t.Fatalf("UpdateContentProject: %v", err)
	}
	want := next
	want.CreatedBy, want.CreatedAt = p.CreatedBy, p.CreatedAt
	checkContentProject(t, "GetContentProject after update", mustGetContentProject(t, s, o.org.ID, p.ID), want)

	// Its own name in another case is fine.
	own := want
	own.Name, own.Version = "AFTER ✓", 3
	if err := s.Content.UpdateContentProject(ctx, own); err != nil {
		t.Fatalf("UpdateContentProject(own name, other case): %v", err)
	}
	stale := own
	stale.Name, stale.Version = "Stale", 3
	err := s.Content.UpdateContentProject(ctx, stale)
	checkPreconditionFailed(t, "UpdateContentProject(stale)", err, fmt.Sprintf("content project %s is at version 3, not 2", p.ID))

	clash := own
	clash.Name, clash.Version = "taken", 4
	err = s.Content.UpdateContentProject(ctx, clash)
	checkKind(t, "UpdateContentProject(taken name)", err, ports.KindConflict)
	checkEqual(t, "name after a refused rename", mustGetContentProject(t, s, o.org.ID, p.ID).Name, own.Name)
	checkEqual(t, "taken project after a refused rename", mustGetContentProject(t, s, o.org.ID, taken.ID).Name, taken.Name)

	// The freed name can be used again.
	mustCreateContentProject(t, s, newContentProject(o, "before"))

	other := newContentOwner(t, s)
	theirs := own
	theirs.OrgID, theirs.Version = other.org.ID, 4
	err = s.Content.UpdateContentProject(ctx, theirs)
	checkKind(t, "UpdateContentProject(another org)", err, ports.KindNotFound)
	// An absent project is not_found, even with a name its org has.
	absent := own
	absent.ID, absent.Name, absent.Version = newID(), taken.Name, 2
	err = s.Content.UpdateContentProject(ctx, absent)
	checkKind(t, "UpdateContentProject(absent, taken name)", err, ports.KindNotFound)
}

func testRaceUpdateContentProject(t *testing.T, s contentStores) {
	o := newContentOwner(t, s)
	p := mustCreateContentProject(t, s, newContentProject(o, "Raced"))
	const n = 20
	updates := make([]ports.ContentProject, n)
	for i := range updates {
		updates[i] = p
		updates[i].Name, updates[i].Version = fmt.Sprintf("Raced %d", i), 2
	}
	errs := race(n, func(i int) error { return s.Content.UpdateContentProject(t.Context(), updates[i]) })
	winner := oneWinner(t, "UpdateContentProject", errs, ports.ErrPreconditionFailed)
	if winner < 0 {
		t.FailNow()
	}
	checkEqual(t, "name after the race", mustGetContentProject(t, s, o.org.ID, p.ID).Name, updates[winner].Name)
}

// A refused create inside a transaction leaves it usable; a rolled back
// create leaves nothing behind.
func testContentProjectTxRollback(t *testing.T, s contentStores) {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	o := newContentOwner(t, s)
	p := mustCreateContentProject(t, s, newContentProject(o, "Kept"))
	fresh := newContentProject(o, "Rolled back")
	err := s.Tx.WithinTx(ctx, func(ctx context.Context) error {
		if err := s.Content.CreateContentProject(ctx, newContentProject(o, "kept")); !isKind(err, ports.KindConflict) {
			return fmt.Errorf("CreateContentProject(taken name) in a transaction = %v, want conflict", err)
		}
		if _, err := s.Content.EnsureContentProject(ctx, newContentProject(o, "KEPT")); !isKind(err, ports.KindConflict) {
			return fmt.Errorf("EnsureContentProject(taken name) in a transaction = %v, want conflict", err)
		}
		if err := s.Content.CreateContentProject(ctx, fresh); err != nil {
			return err
		}
		if _, err := s.Content.GetContentProject(ctx, o.org.ID, fresh.ID); err != nil {
			return err
		}
		return errAbort
	})
	if err != errAbort {
		t.Fatalf("WithinTx = %v, want fn's error", err)
	}
	_, err = s.Content.GetContentProject(t.Context(), o.org.ID, fresh.ID)
	checkKind(t, "GetContentProject after rollback", err, ports.KindNotFound)
	mustGetContentProject(t, s, o.org.ID, p.ID)
}

func isKind(err error, kind ports.Kind) bool { return ports.KindOf(err) == kind }

// checkKind fails the test unless err is a ports.Error of the kind.
func checkKind(t *testing.T, what string, err error, kind ports.Kind) {
	t.Helper()
	if !isKind(err, kind) {
		t.Errorf("%s: error %v, want %s", what, err, kind)
	}
}
