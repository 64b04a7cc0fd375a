package worker_test

import (
	"testing"

	"github.com/devpilot/devpilot/adapters/memstore"
	"github.com/devpilot/devpilot/adapters/queue"
	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/worker"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
)

// The prune job forgets the usage keys older than UsageKeysKept at the
// clock's time: such a record counts again, a newer one does not.
func TestPruneUsageKeysJob(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		ctx := t.Context()
		store, clock := sqlstore.NewUsage(db), fixture.NewClock()
		org := (&fixture.IDs{}).NewID()
		record := func(key string, on int) ports.UsageRecord {
			return ports.UsageRecord{Attribution: ports.Attribution{OrgID: org, Feature: ports.FeatureVoice}, Model: "m",
				Day: clock.Now().Add(-worker.UsageKeysKept).AddDate(0, 0, on), PromptTokens: 1, Calls: 1, Key: key}
		}
		for _, r := range []ports.UsageRecord{record("voice:c:old", -1), record("voice:c:kept", 1)} {
			if err := store.AddUsage(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		workers, err := worker.NewWorkers(worker.Deps{Retention: memstore.New(), Identity: fakePruner{}, Assistant: fakeExpirer{}, Spec: fakeGenerator{},
			SCM: fakeProcessor{}, Content: fakeContent{}, Voice: fakeMeter{}, Idempotency: fakeIdempotencyPruner{}, UsageKeys: store, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		q, events := startWorkingQueue(t, db, queue.Config{Workers: workers})
		if err := q.Enqueue(ctx, worker.PruneUsageKeysArgs{}, ports.EnqueueOptions{}); err != nil {
			t.Fatal(err)
		}
		waitForJob(t, events, worker.PruneUsageKeysArgs{}.Kind())
		for _, r := range []ports.UsageRecord{record("voice:c:old", -1), record("voice:c:kept", 1)} {
			if err := store.AddUsage(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		got, err := store.SumUsage(ctx, ports.UsageQuery{OrgID: org, From: clock.Now().AddDate(-1, 0, 0), To: clock.Now()})
		if err != nil || len(got) != 1 || got[0].Calls != 3 {
			t.Fatalf("usage %+v %v, want the pruned key counted again (3 calls)", got, err)
		}
	})
}
