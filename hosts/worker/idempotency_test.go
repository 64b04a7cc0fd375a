package worker_test

import (
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/memstore"
	"github.com/devpilot/devpilot/adapters/queue"
	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/worker"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
)

// The prune job deletes the idempotency keys expired at the clock's time and
// keeps the others.
func TestPruneIdempotencyJob(t *testing.T) {
	t.Parallel()
	keys := []struct {
		name      string
		expiresAt time.Time
		completed bool
		kept      bool
	}{
		{"completed, expired yesterday", now.Add(-day), true, false},
		{"abandoned claim", now.Add(-time.Minute), false, false},
		{"completed, expires now", now, true, false},
		{"completed, live", now.Add(time.Hour), true, true},
		{"in flight", now.Add(time.Minute), false, true},
	}
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		ctx := t.Context()
		identities, store := sqlstore.NewIdentity(db), sqlstore.NewIdempotency(db)
		ids := &fixture.IDs{}
		org := ports.Org{ID: ids.NewID(), Name: "acme", CreatedAt: now.Add(-90 * day)}
		user := ports.User{ID: ids.NewID(), OrgID: org.ID, Email: "ada@example.com", Role: ports.RoleAdmin, CreatedAt: org.CreatedAt}
		if err := identities.CreateOrg(ctx, org); err != nil {
			t.Fatal(err)
		}
		if err := identities.CreateUser(ctx, user); err != nil {
			t.Fatal(err)
		}
		owner := ports.IdempotencyOwner{OrgID: org.ID, UserID: user.ID}
		for _, k := range keys {
			rec := ports.IdempotencyRecord{Owner: owner, Key: k.name, Method: "POST", Route: "/content/:a",
				RequestHash: []byte(k.name), CreatedAt: now.Add(-2 * day), ExpiresAt: k.expiresAt}
			if _, _, err := store.Begin(ctx, rec); err != nil {
				t.Fatalf("seeding %s: %v", k.name, err)
			}
			if k.completed {
				if err := store.Complete(ctx, owner, k.name, ports.IdempotentResponse{Status: 201}, k.expiresAt); err != nil {
					t.Fatalf("seeding %s: %v", k.name, err)
				}
			}
		}

		workers, err := worker.NewWorkers(worker.Deps{Retention: memstore.New(), Identity: fakePruner{}, Assistant: fakeExpirer{}, Spec: fakeGenerator{},
			SCM: fakeProcessor{}, Content: fakeContent{}, Voice: fakeMeter{}, UsageKeys: fakeUsageKeyPruner{}, Idempotency: store, Clock: fixture.NewClock()})
		if err != nil {
			t.Fatal(err)
		}
		q, events := startWorkingQueue(t, db, queue.Config{Workers: workers})
		if err := q.Enqueue(ctx, worker.PruneIdempotencyArgs{}, ports.EnqueueOptions{}); err != nil {
			t.Fatal(err)
		}
		waitForJob(t, events, worker.PruneIdempotencyArgs{}.Kind())

		for _, k := range keys {
			// A Begin made long ago claims only a key that was pruned.
			probe := ports.IdempotencyRecord{Owner: owner, Key: k.name, Method: "POST", Route: "/content/:a",
				RequestHash: []byte("probe"), CreatedAt: now.Add(-3 * day), ExpiresAt: now.Add(-3 * day)}
			_, claimed, err := store.Begin(ctx, probe)
			switch {
			case err != nil:
				t.Errorf("%s: Begin: %v", k.name, err)
			case claimed == k.kept:
				t.Errorf("%s: kept = %v, want %v", k.name, !claimed, k.kept)
			}
		}
	})
}
