package worker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/devpilot/devpilot/adapters/memstore"
	"github.com/devpilot/devpilot/adapters/queue"
	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/core/content"
	"github.com/devpilot/devpilot/core/scm"
	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/hosts/worker"
	"github.com/devpilot/devpilot/ports"
)

// call is one call a signalling generator received.
type call struct{ abandon, final bool }

// signalStages reports each call of the stage worker's core.
type signalStages chan call

func (s signalStages) RunGeneration(_ context.Context, _ spec.GenerateStageArgs, final bool) error {
	s <- call{final: final}
	return nil
}

func (s signalStages) AbandonGeneration(context.Context, spec.GenerateStageArgs) error {
	s <- call{abandon: true}
	return nil
}

// signalContent reports each call of the content worker's core.
type signalContent chan call

func (s signalContent) RunGeneration(_ context.Context, _ content.GenerateContentArgs, final bool) error {
	s <- call{final: final}
	return nil
}

func (s signalContent) AbandonGeneration(context.Context, content.GenerateContentArgs) error {
	s <- call{abandon: true}
	return nil
}

// A generation job whose last attempt was interrupted gives the work up (the
// core records the failure) instead of running it once more; one with
// attempts left runs again.
func TestGenerationWorkersAbandonInterruptedLastAttempt(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		attempt, limit int
		want           call
	}{{2, 5, call{}}, {5, 5, call{final: true}}, {6, 5, call{abandon: true}}} {
		stages, drafts := make(signalStages, 1), make(signalContent, 1)
		row := &rivertype.JobRow{Attempt: tt.attempt, MaxAttempts: tt.limit}
		if err := (&worker.GenerateStageWorker{Spec: stages}).Work(t.Context(), &river.Job[spec.GenerateStageArgs]{JobRow: row}); err != nil {
			t.Fatal(err)
		}
		if err := (&worker.GenerateContentWorker{Content: drafts}).Work(t.Context(), &river.Job[content.GenerateContentArgs]{JobRow: row}); err != nil {
			t.Fatal(err)
		}
		if got := <-stages; got != tt.want {
			t.Errorf("stage attempt %d of %d: %+v, want %+v", tt.attempt, tt.limit, got, tt.want)
		}
		if got := <-drafts; got != tt.want {
			t.Errorf("content attempt %d of %d: %+v, want %+v", tt.attempt, tt.limit, got, tt.want)
		}
	}
}

type failingProcessor struct{ err error }

func (f failingProcessor) ProcessDelivery(context.Context, string) error { return f.err }

func (f failingProcessor) ProcessDeliveries(context.Context, []string) error { return f.err }

// A delivery, or a batch, whose processing fails for good is given up at
// once; a transient failure is left to River's retries.
func TestProcessDeliveryWorkerGivesUpPermanentErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name      string
		err       error
		cancelled bool
	}{
		{"done", nil, false},
		{"unavailable", ports.Errorf(ports.KindUnavailable, "database down"), false},
		{"a constraint", ports.Wrap(ports.KindInternal, errors.New("CHECK constraint failed"), "database error"), true},
		{"invalid", ports.Invalid("bad payload"), true},
	} {
		row := &rivertype.JobRow{ID: 1, Attempt: 1, MaxAttempts: 25}
		one := &worker.ProcessDeliveryWorker{SCM: failingProcessor{tt.err}}
		batch := &worker.ProcessDeliveriesWorker{SCM: failingProcessor{tt.err}}
		for kind, err := range map[string]error{
			"one":   one.Work(t.Context(), &river.Job[scm.ProcessDeliveryArgs]{JobRow: row}),
			"batch": batch.Work(t.Context(), &river.Job[scm.ProcessDeliveriesArgs]{JobRow: row, Args: scm.ProcessDeliveriesArgs{DeliveryIDs: []string{"d1", "d2"}}}),
		} {
			_, cancelled := errors.AsType[*rivertype.JobCancelError](err)
			if !errors.Is(err, tt.err) || cancelled != tt.cancelled {
				t.Errorf("%s, %s: Work = %v (cancelled %v), want %v (cancelled %v)", tt.name, kind, err, cancelled, tt.err, tt.cancelled)
			}
		}
	}
}

// leaveRunning makes every job of kind look like one its process was working
// when it died.
func leaveRunning(t *testing.T, db *sqlstore.DB, kind string) {
	t.Helper()
	q := `UPDATE river_job SET state = 'running', attempt = attempt + 1, attempted_at = ? WHERE kind = ?`
	args := []any{time.Now().UTC().Format("2006-01-02 15:04:05.000"), kind}
	if db.Dialect == sqlstore.DialectPostgres {
		q, args = `UPDATE river_job SET state = 'running', attempt = attempt + 1, attempted_at = now() WHERE kind = $1`, []any{kind}
	}
	if _, err := db.Writer.ExecContext(t.Context(), q, args...); err != nil {
		t.Fatal(err)
	}
}

// A `devpilot run` that starts after one killed while generating takes the
// jobs up at once: the one on its last attempt is given up (the work
// failed), the other runs again.
func TestInterruptedGenerationsAfterRestart(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		ctx := t.Context()
		if err := queue.Migrate(ctx, db, nil); err != nil {
			t.Fatal(err)
		}
		dead, err := queue.New(db, queue.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if err := dead.Enqueue(ctx, spec.GenerateStageArgs{SessionID: "s"}, ports.EnqueueOptions{MaxAttempts: 1}); err != nil {
			t.Fatal(err)
		}
		if err := dead.Enqueue(ctx, content.GenerateContentArgs{ItemID: "i"}, ports.EnqueueOptions{MaxAttempts: 3}); err != nil {
			t.Fatal(err)
		}
		leaveRunning(t, db, spec.GenerateStageArgs{}.Kind())
		leaveRunning(t, db, content.GenerateContentArgs{}.Kind())

		stages, drafts := make(signalStages, 1), make(signalContent, 1)
		workers, err := worker.NewWorkers(worker.Deps{Retention: memstore.New(), Identity: fakePruner{}, Assistant: fakeExpirer{}, Spec: stages, SCM: fakeProcessor{}, Content: drafts, Idempotency: fakeIdempotencyPruner{}, Voice: fakeMeter{}, UsageKeys: fakeUsageKeyPruner{}})
		if err != nil {
			t.Fatal(err)
		}
		q, err := queue.New(db, queue.Config{Workers: workers, RescueOnStart: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := q.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			stopCtx, cancel := context.WithTimeout(context.Background(), waitFor)
			defer cancel()
			if err := q.Stop(stopCtx); err != nil {
				t.Errorf("Stop: %v", err)
			}
		})
		for name, ch := range map[string]<-chan call{"stage": stages, "content": drafts} {
			want := map[string]call{"stage": {abandon: true}, "content": {}}[name]
			select {
			case got := <-ch:
				if got != want {
					t.Errorf("%s job after the restart: %+v, want %+v", name, got, want)
				}
			case <-time.After(waitFor):
				t.Fatalf("the %s job left running was not taken up within %s", name, waitFor)
			}
		}
	})
}
