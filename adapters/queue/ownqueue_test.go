package queue_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/devpilot/devpilot/adapters/queue"
	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/ports"
)

// TestOwnQueueKeepsJobsApart: a process with a queue of its own (serve
// --sandbox) puts every job it inserts there, in and out of transactions,
// and works them; a worker on the default queue never takes one up.
func TestOwnQueueKeepsJobsApart(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		migrated(t, db)
		var mine, theirs atomic.Int32
		workersFor := func(n *atomic.Int32) *river.Workers {
			w := river.NewWorkers()
			river.AddWorker(w, river.WorkFunc(func(ctx context.Context, job *river.Job[echoArgs]) error {
				n.Add(1)
				return nil
			}))
			return w
		}
		// A worker on the default queue, started first.
		startQueue(t, t.Context(), newQueue(t, db, queue.Config{Workers: workersFor(&theirs), PollInterval: 50 * time.Millisecond}))
		inserter := newQueue(t, db, queue.Config{Queue: "sandbox"})
		if err := inserter.Enqueue(t.Context(), echoArgs{N: 1}, ports.EnqueueOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := db.WithinTx(t.Context(), func(ctx context.Context) error {
			return inserter.EnqueueMany(ctx, []ports.JobArgs{echoArgs{N: 2}, echoArgs{N: 3}}, ports.EnqueueOptions{})
		}); err != nil {
			t.Fatal(err)
		}
		for _, j := range listJobs(t, inserter, echoArgs{}.Kind()) {
			if j.Queue != "sandbox" {
				t.Errorf("job %d in queue %q, want sandbox", j.ID, j.Queue)
			}
		}
		time.Sleep(500 * time.Millisecond)
		if n := theirs.Load(); n != 0 {
			t.Fatalf("the default queue's worker worked %d of the sandbox's jobs", n)
		}
		startQueue(t, t.Context(), newQueue(t, db, queue.Config{Queue: "sandbox", Workers: workersFor(&mine), PollInterval: 50 * time.Millisecond}))
		deadline := time.Now().Add(waitFor)
		for mine.Load() < 3 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if mine.Load() != 3 || theirs.Load() != 0 {
			t.Fatalf("worked by the sandbox's queue %d, by the default one %d; want 3 and 0", mine.Load(), theirs.Load())
		}
	})
}
