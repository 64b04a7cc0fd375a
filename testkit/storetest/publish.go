package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// publishStores are the publishing store under test and the content stores
// whose items it publishes (the same database).
type publishStores struct {
	Publish ports.PublishStore
	contentStores
}

// TestPublish runs the contract of ports.PublishStore. Where the port leaves
// a case open, the suite expects: an empty Config and Attempts read back
// empty, never nil; CreateTarget is a conflict for a name the project has;
// CreatePublication is not_found for another org's item; deleting a content
// item deletes its publications; of concurrent UpdatePublication calls from
// one status exactly one wins, the others are precondition_failed.
func TestPublish(t *testing.T, newStores Factory) {
	runSuite(t, view(newStores, Stores.publish, needPublish), []suiteCase[publishStores]{
		{"TargetRoundTrip", testTargetRoundTrip},
		{"PublicationRoundTrip", testPublicationRoundTrip},
		{"RaceUpdatePublication", testRaceUpdatePublication},
		{"PublicationsGoWithTheirItem", testPublicationsGoWithItem},
	})
}

func newTarget(o contentOwner, projectID, name string) ports.PublishTarget {
	return ports.PublishTarget{ID: newID(), OrgID: o.org.ID, ProjectID: projectID, Name: name, Kind: ports.TargetWebhook,
		Config: map[string]string{"url": "https://example.com/hook?«x»=1"}, SealedSecret: "k1:sealed", CreatedBy: o.user.ID,
		CreatedAt: base}
}

func normTarget(tg ports.PublishTarget) ports.PublishTarget {
	tg.CreatedAt = ms(tg.CreatedAt)
	if tg.Config == nil {
		tg.Config = map[string]string{}
	}
	return tg
}

func normPublication(p ports.Publication) ports.Publication {
	p.RunAt, p.CreatedAt, p.UpdatedAt, p.FinishedAt = ms(p.RunAt), ms(p.CreatedAt), ms(p.UpdatedAt), msPtr(p.FinishedAt)
	p.Attempts = nonNil(append([]ports.PublishAttempt(nil), p.Attempts...))
	for i := range p.Attempts {
		p.Attempts[i].At = ms(p.Attempts[i].At)
	}
	return p
}

func testTargetRoundTrip(t *testing.T, s publishStores) {
	ctx := t.Context()
	o := newContentOwner(t, s.contentStores)
	other := newContentOwner(t, s.contentStores)
	project := newProjectID()
	b := newTarget(o, project, "b — «site» ✓")
	a := newTarget(o, project, "a")
	a.Config = nil
	for _, tg := range []ports.PublishTarget{b, a} {
		if err := s.Publish.CreateTarget(ctx, tg); err != nil {
			t.Fatalf("CreateTarget(%s): %v", tg.Name, err)
		}
	}
	dup := newTarget(o, project, "a")
	if err := s.Publish.CreateTarget(ctx, dup); !errors.Is(err, ports.ErrConflict) {
		t.Errorf("CreateTarget(taken name) = %v, want conflict", err)
	}
	if err := s.Publish.CreateTarget(ctx, newTarget(o, newProjectID(), "a")); err != nil {
		t.Errorf("CreateTarget(same name, other project): %v", err)
	}
	got, err := s.Publish.GetTarget(ctx, o.org.ID, b.ID)
	if err != nil {
		t.Fatal(err)
	}
	checkEqual(t, "GetTarget", normTarget(got), normTarget(b))
	checkUTC(t, "GetTarget", &got.CreatedAt)
	if _, err := s.Publish.GetTarget(ctx, other.org.ID, b.ID); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("GetTarget(other org) = %v, want not_found", err)
	}
	list, err := s.Publish.ListTargets(ctx, o.org.ID, project)
	if err != nil || len(list) != 2 {
		t.Fatalf("ListTargets = %v, %v; want 2", list, err)
	}
	checkEqual(t, "ListTargets", []ports.PublishTarget{normTarget(list[0]), normTarget(list[1])}, []ports.PublishTarget{normTarget(a), normTarget(b)})
	if list, err := s.Publish.ListTargets(ctx, other.org.ID, project); err != nil || len(list) != 0 {
		t.Errorf("ListTargets(other org) = %v, %v; want none", list, err)
	}
	if err := s.Publish.DeleteTarget(ctx, other.org.ID, a.ID); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("DeleteTarget(other org) = %v, want not_found", err)
	}
	if err := s.Publish.DeleteTarget(ctx, o.org.ID, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Publish.DeleteTarget(ctx, o.org.ID, a.ID); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("DeleteTarget(again) = %v, want not_found", err)
	}
	if _, err := s.Publish.GetTarget(ctx, o.org.ID, a.ID); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("GetTarget(deleted) = %v, want not_found", err)
	}
}

func newPublication(it ports.ContentItem, at time.Time) ports.Publication {
	return ports.Publication{ID: newID(), OrgID: it.OrgID, ItemID: it.ID, TargetID: newID(), TargetName: "hook «1»",
		TargetKind: ports.TargetWebhook, Status: ports.PublicationScheduled, RunAt: at.Add(time.Hour), CreatedBy: it.CreatedBy,
		CreatedAt: at, UpdatedAt: at}
}

func testPublicationRoundTrip(t *testing.T, s publishStores) {
	ctx := t.Context()
	o, _, it := newContent(t, s.contentStores)
	other := newContentOwner(t, s.contentStores)
	first, second := newPublication(it, base), newPublication(it, base.Add(time.Second))
	second.Status = ports.PublicationQueued
	for _, p := range []ports.Publication{first, second} {
		if err := s.Publish.CreatePublication(ctx, p); err != nil {
			t.Fatalf("CreatePublication: %v", err)
		}
	}
	foreign := newPublication(it, base)
	foreign.OrgID = other.org.ID
	if err := s.Publish.CreatePublication(ctx, foreign); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("CreatePublication(another org's item) = %v, want not_found", err)
	}
	got, err := s.Publish.GetPublication(ctx, o.org.ID, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	checkEqual(t, "GetPublication", normPublication(got), normPublication(first))
	checkUTC(t, "GetPublication", &got.RunAt, &got.CreatedAt, &got.UpdatedAt)
	if _, err := s.Publish.GetPublication(ctx, other.org.ID, first.ID); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("GetPublication(other org) = %v, want not_found", err)
	}
	list, err := s.Publish.ListPublications(ctx, o.org.ID, it.ID)
	if err != nil || len(list) != 2 {
		t.Fatalf("ListPublications = %v, %v; want 2", list, err)
	}
	checkEqual(t, "ListPublications", []ports.Publication{normPublication(list[0]), normPublication(list[1])}, []ports.Publication{normPublication(second), normPublication(first)})

	done := first
	done.Status = ports.PublicationSucceeded
	done.Attempts = []ports.PublishAttempt{
		{At: base.Add(time.Hour), Outcome: "failed", Error: "HTTP 500 «boom»"},
		{At: base.Add(time.Hour + time.Second), Outcome: "ok", RemoteURL: "https://example.com/p/1"},
	}
	done.RemoteURL, done.UpdatedAt, done.FinishedAt = "https://example.com/p/1", base.Add(2*time.Hour), ptr(base.Add(2*time.Hour))
	if err := s.Publish.UpdatePublication(ctx, done, ports.PublicationQueued); !errors.Is(err, ports.ErrPreconditionFailed) {
		t.Errorf("UpdatePublication(from queued) = %v, want precondition_failed", err)
	}
	if err := s.Publish.UpdatePublication(ctx, done, ports.PublicationScheduled, ports.PublicationRunning); err != nil {
		t.Fatalf("UpdatePublication: %v", err)
	}
	got, err = s.Publish.GetPublication(ctx, o.org.ID, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	checkEqual(t, "GetPublication after update", normPublication(got), normPublication(done))
	for i := range got.Attempts {
		checkUTC(t, "attempt", &got.Attempts[i].At)
	}
	foreign = done
	foreign.OrgID = other.org.ID
	if err := s.Publish.UpdatePublication(ctx, foreign, ports.PublicationSucceeded); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("UpdatePublication(other org) = %v, want not_found", err)
	}
}

func testRaceUpdatePublication(t *testing.T, s publishStores) {
	ctx := t.Context()
	_, _, it := newContent(t, s.contentStores)
	p := newPublication(it, base)
	if err := s.Publish.CreatePublication(ctx, p); err != nil {
		t.Fatal(err)
	}
	const n = 6
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			next := p
			next.Status = ports.PublicationRunning
			if i%2 == 0 {
				next.Status = ports.PublicationCancelled
			}
			errs[i] = s.Publish.UpdatePublication(ctx, next, ports.PublicationScheduled)
		})
	}
	wg.Wait()
	oneWinner(t, "UpdatePublication", errs, ports.ErrPreconditionFailed)
}

func testPublicationsGoWithItem(t *testing.T, s publishStores) {
	ctx := t.Context()
	o, _, it := newContent(t, s.contentStores)
	p := newPublication(it, base)
	if err := s.Publish.CreatePublication(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := s.Content.DeleteContentItem(ctx, o.org.ID, it.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Publish.GetPublication(ctx, o.org.ID, p.ID); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("GetPublication(of a deleted item) = %v, want not_found", err)
	}
}
