package worker_test

import (
	"sync"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/github"
	"github.com/devpilot/devpilot/adapters/memstore"
	"github.com/devpilot/devpilot/adapters/queue"
	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/core/scm"
	"github.com/devpilot/devpilot/hosts/sandbox/fakegithub"
	"github.com/devpilot/devpilot/hosts/worker"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
)

// lagCounter is an Observer counting the deliveries reported processed.
type lagCounter struct {
	ports.NopObserver
	mu        sync.Mutex
	processed int
}

func (c *lagCounter) WebhookProcessed(time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.processed++
}

func (c *lagCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.processed
}

// Deliveries are processed by the batch job ReceiveWebhook enqueues, and by
// the single-delivery job of earlier versions, still queued after an
// upgrade; a malformed payload fails its delivery, not its batch; a batch
// run again adds nothing twice and reports nothing again.
func TestProcessDeliveryJobs(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		ctx := t.Context()
		store := sqlstore.NewSCM(db)
		obs := &lagCounter{}
		clock := fixture.NewClock()
		svc := scm.New(scm.Config{}, scm.Deps{Store: store, Webhooks: github.Webhooks{}, Tx: db, Clock: clock, IDs: &fixture.IDs{}, Observer: obs})
		workers, err := worker.NewWorkers(worker.Deps{Retention: memstore.New(), Identity: fakePruner{}, Assistant: fakeExpirer{}, Spec: fakeGenerator{}, SCM: svc, Content: fakeContent{}, Idempotency: fakeIdempotencyPruner{}, Voice: fakeMeter{}, UsageKeys: fakeUsageKeyPruner{}})
		if err != nil {
			t.Fatal(err)
		}
		q, events := startWorkingQueue(t, db, queue.Config{Workers: workers})

		repo := fakegithub.HookRepo{ID: 4242, Owner: fakegithub.HookUser{Login: "acme", ID: 1}, Name: "web"}
		push := func(msg string) []byte {
			return fakegithub.NewEventDelivery(fakegithub.PushEvent{Repo: repo, Sender: fakegithub.HookUser{Login: "alice", ID: 2},
				Commits: []fakegithub.HookCommit{{Message: msg, AuthorName: "Alice", AuthorLogin: "alice", Timestamp: fixture.Epoch}}}).Body
		}
		deliveries := []ports.WebhookDelivery{
			{ID: "old-1", Event: "push", Payload: push("one")},
			{ID: "new-1", Event: "push", Payload: push("two")},
			{ID: "new-2", Event: "push", Payload: []byte(`[1, 2]`)}, // malformed
			{ID: "new-3", Event: "ping", Payload: []byte(`{"zen":"Keep it logically awesome."}`)},
		}
		for i := range deliveries {
			deliveries[i].ReceivedAt = fixture.Epoch
		}
		if _, err := store.RecordDeliveries(ctx, deliveries); err != nil {
			t.Fatal(err)
		}
		clock.Advance(time.Second)

		if err := q.Enqueue(ctx, scm.ProcessDeliveryArgs{DeliveryID: "old-1"}, ports.EnqueueOptions{}); err != nil {
			t.Fatal(err)
		}
		waitForJob(t, events, scm.ProcessDeliveryArgs{}.Kind())
		batch := scm.ProcessDeliveriesArgs{DeliveryIDs: []string{"new-1", "new-2", "new-3", "gone"}}
		for range 2 { // the second run is a retry of a batch that did commit
			if err := q.Enqueue(ctx, batch, ports.EnqueueOptions{}); err != nil {
				t.Fatal(err)
			}
			waitForJob(t, events, batch.Kind())
		}

		want := map[string]string{"old-1": ports.DeliveryProcessed, "new-1": ports.DeliveryProcessed, "new-2": ports.DeliveryFailed, "new-3": ports.DeliveryIgnored}
		got, err := store.GetDeliveries(ctx, []string{"old-1", "new-1", "new-2", "new-3"})
		if err != nil || len(got) != len(want) {
			t.Fatalf("GetDeliveries = %d, %v", len(got), err)
		}
		for _, d := range got {
			if d.Status != want[d.ID] || (d.Status == ports.DeliveryFailed) != (d.Error != "") {
				t.Errorf("delivery %s: %s %q, want %s", d.ID, d.Status, d.Error, want[d.ID])
			}
		}
		activity, _, err := store.ListActivity(ctx, repo.ID, ports.Page{Limit: 50})
		if err != nil {
			t.Fatal(err)
		}
		ids := map[string]bool{}
		for _, a := range activity {
			ids[a.ID] = true
		}
		if len(activity) != 2 || !ids["delivery:old-1"] || !ids["delivery:new-1"] {
			t.Errorf("activity %+v, want one entry for each of old-1 and new-1", activity)
		}
		if n := obs.count(); n != 4 {
			t.Errorf("%d deliveries reported processed, want 4", n)
		}
	})
}
