// Package worker holds the River workers of the worker host: each one decodes
// a job and calls the core use case that does the work.
package worker

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/riverqueue/river"

	"github.com/devpilot/devpilot/core/identity"
)

// PruneTokensEvery is how often the token pruning job runs.
const PruneTokensEvery = time.Hour

// TokenPruner deletes expired and revoked tokens; *identity.Service is one.
type TokenPruner interface {
	PruneTokens(ctx context.Context) (int, error)
}

// Deps are the core services the workers call.
type Deps struct {
	Identity TokenPruner
	// Logger receives one line per job worked; nil means slog.Default().
	Logger *slog.Logger
}

// NewWorkers returns every worker of the worker host, registered for a
// queue.Config. It returns an error when a dependency is missing or River
// rejects a worker.
func NewWorkers(d Deps) (*river.Workers, error) {
	if d.Identity == nil {
		return nil, errors.New("worker: Deps.Identity is nil")
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &PruneTokensWorker{Pruner: d.Identity, Logger: d.Logger}); err != nil {
		return nil, err
	}
	return workers, nil
}

// PeriodicJobs returns the jobs the worker host enqueues on a schedule:
// token pruning every PruneTokensEvery, and once when a process becomes the
// queue's leader.
func PeriodicJobs() []*river.PeriodicJob {
	return []*river.PeriodicJob{
		river.NewPeriodicJob(
			river.PeriodicInterval(PruneTokensEvery),
			func() (river.JobArgs, *river.InsertOpts) { return identity.PruneTokensArgs{}, nil },
			&river.PeriodicJobOpts{ID: identity.PruneTokensArgs{}.Kind(), RunOnStart: true},
		),
	}
}

// PruneTokensWorker works identity.PruneTokensArgs jobs: it deletes tokens
// that expired or were revoked long ago.
type PruneTokensWorker struct {
	river.WorkerDefaults[identity.PruneTokensArgs]
	Pruner TokenPruner
	Logger *slog.Logger // nil means slog.Default()
}

// Work prunes the tokens and logs how many it deleted. It returns the
// pruner's error, so River retries the job.
func (w *PruneTokensWorker) Work(ctx context.Context, job *river.Job[identity.PruneTokensArgs]) error {
	n, err := w.Pruner.PruneTokens(ctx)
	if err != nil {
		return err
	}
	cmp.Or(w.Logger, slog.Default()).InfoContext(ctx, "pruned API tokens", slog.Int("deleted", n), slog.Int64("job_id", job.ID))
	return nil
}
