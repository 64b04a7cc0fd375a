package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/hosts/worker"
)

// A generation is decided within its budget: attempts in the first half may
// be retried and end by the middle; an attempt in the second half is final
// and ends with the budget; one taken up later, after its process was down,
// is final with no deadline but the queue's.
func TestGenerationAttempt(t *testing.T) {
	t.Parallel()
	created := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	const budget = 4 * time.Minute
	for _, tt := range []struct {
		name     string
		since    time.Duration
		attempt  int
		budget   time.Duration
		final    bool
		deadline time.Time // zero: none
	}{
		{"first attempt", 0, 1, budget, false, created.Add(budget / 2)},
		{"retry in the first half", time.Minute, 2, budget, false, created.Add(budget / 2)},
		{"last attempt in the first half", time.Minute, 5, budget, true, created.Add(budget / 2)},
		{"retry in the second half", 3 * time.Minute, 2, budget, true, created.Add(budget)},
		{"taken up after the budget", time.Hour, 2, budget, true, time.Time{}},
		{"no budget", time.Hour, 2, 0, false, time.Time{}},
		{"no budget, last attempt", time.Hour, 5, 0, true, time.Time{}},
	} {
		row := &rivertype.JobRow{CreatedAt: created, Attempt: tt.attempt, MaxAttempts: 5}
		ctx, cancel, final := worker.GenerationAttempt(t.Context(), row, tt.budget, created.Add(tt.since))
		deadline, ok := ctx.Deadline()
		cancel()
		if final != tt.final || ok != !tt.deadline.IsZero() || (ok && !deadline.Equal(tt.deadline)) {
			t.Errorf("%s: final %v, deadline %v (%v); want final %v, deadline %v", tt.name, final, deadline, ok, tt.final, tt.deadline)
		}
	}
}

// recordStage records the call its worker made.
type recordStage struct {
	final    chan bool
	deadline chan time.Time
}

func (r recordStage) RunGeneration(ctx context.Context, _ spec.GenerateStageArgs, final bool) error {
	d, _ := ctx.Deadline()
	r.final <- final
	r.deadline <- d
	return nil
}

func (r recordStage) AbandonGeneration(context.Context, spec.GenerateStageArgs) error { return nil }

// The stage worker runs an attempt late in its budget as the final one,
// bounded by the budget, and retries a transient failure within seconds.
func TestGenerateStageWorkerKeepsToItsBudget(t *testing.T) {
	t.Parallel()
	rec := recordStage{final: make(chan bool, 1), deadline: make(chan time.Time, 1)}
	w := &worker.GenerateStageWorker{Spec: rec, Budget: 10 * time.Minute}
	created := time.Now().Add(-7 * time.Minute)
	job := &river.Job[spec.GenerateStageArgs]{JobRow: &rivertype.JobRow{CreatedAt: created, Attempt: 2, MaxAttempts: 5}}
	if err := w.Work(t.Context(), job); err != nil {
		t.Fatal(err)
	}
	if final, deadline := <-rec.final, <-rec.deadline; !final || !deadline.Equal(created.Add(10*time.Minute)) {
		t.Errorf("final %v, deadline %v; want final, %v", final, deadline, created.Add(10*time.Minute))
	}
	if wait := time.Until(w.NextRetry(job)); wait <= 0 || wait > 30*time.Second {
		t.Errorf("NextRetry in %v, want within 30s", wait)
	}
}
