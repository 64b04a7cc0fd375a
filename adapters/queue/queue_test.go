package queue_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/devpilot/devpilot/adapters/queue"
	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/ports"
)

func TestMain(m *testing.M) { sqlstoretest.Main(m) }

// waitFor bounds every wait on River, so a broken queue fails instead of hanging.
const waitFor = 30 * time.Second

type echoArgs struct {
	N int `json:"n"`
}

func (echoArgs) Kind() string { return "queue_test.echo" }

type blockArgs struct{}

func (blockArgs) Kind() string { return "queue_test.block" }

type unknownArgs struct{}

func (unknownArgs) Kind() string { return "queue_test.unknown" }

// migrated applies River's migrations to db.
func migrated(t *testing.T, db *sqlstore.DB) *sqlstore.DB {
	t.Helper()
	if err := queue.Migrate(t.Context(), db, nil); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return db
}

func newQueue(t *testing.T, db *sqlstore.DB, cfg queue.Config) *queue.Queue {
	t.Helper()
	q, err := queue.New(db, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return q
}

// startQueue starts q with ctx and stops it when the test ends (before the
// database closes).
func startQueue(t *testing.T, ctx context.Context, q *queue.Queue) {
	t.Helper()
	if err := q.Start(ctx); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		if err := q.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
}

func listJobs(t *testing.T, q *queue.Queue, kind string) []*rivertype.JobRow {
	t.Helper()
	res, err := q.Client().JobList(t.Context(), river.NewJobListParams().Kinds(kind).First(1000))
	if err != nil {
		t.Fatalf("JobList: %v", err)
	}
	return res.Jobs
}

func argsOf(t *testing.T, job *rivertype.JobRow) echoArgs {
	t.Helper()
	var a echoArgs
	if err := json.Unmarshal(job.EncodedArgs, &a); err != nil {
		t.Fatalf("decoding args %s: %v", job.EncodedArgs, err)
	}
	return a
}

func TestEnqueueFollowsTransaction(t *testing.T) {
	t.Parallel()
	errRollback := errors.New("use case failed")
	tests := []struct {
		name    string
		fnErr   error
		wantJob bool
	}{
		{"committed", nil, true},
		{"rolled back", errRollback, false},
	}
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		q := newQueue(t, migrated(t, db), queue.Config{})
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				args := echoArgs{N: i + 1}
				err := db.WithinTx(t.Context(), func(ctx context.Context) error {
					if err := q.Enqueue(ctx, args, ports.EnqueueOptions{}); err != nil {
						return err
					}
					tx, ok := sqlstore.TxFromContext(ctx)
					if !ok {
						t.Fatal("WithinTx gave no transaction")
					}
					res, err := q.Client().JobListTx(ctx, tx.Tx, river.NewJobListParams().Kinds(args.Kind()))
					if err != nil {
						return err
					}
					if !hasArgs(t, res.Jobs, args) {
						t.Errorf("job %v is not visible inside its transaction", args)
					}
					return tt.fnErr
				})
				if !errors.Is(err, tt.fnErr) {
					t.Fatalf("WithinTx = %v, want %v", err, tt.fnErr)
				}
				if got := hasArgs(t, listJobs(t, q, args.Kind()), args); got != tt.wantJob {
					t.Fatalf("job %v in river_job after the transaction: %v, want %v", args, got, tt.wantJob)
				}
			})
		}
	})
}

func TestEnqueueManyFollowsTransaction(t *testing.T) {
	t.Parallel()
	errRollback := errors.New("use case failed")
	tests := []struct {
		name    string
		fnErr   error
		wantJob bool
	}{
		{"committed", nil, true},
		{"rolled back", errRollback, false},
	}
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		q := newQueue(t, migrated(t, db), queue.Config{})
		for i, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				args := []echoArgs{{N: 100 + 10*i}, {N: 101 + 10*i}, {N: 102 + 10*i}}
				err := db.WithinTx(t.Context(), func(ctx context.Context) error {
					if err := q.EnqueueMany(ctx, []ports.JobArgs{args[0], args[1], args[2]}, ports.EnqueueOptions{}); err != nil {
						return err
					}
					tx, _ := sqlstore.TxFromContext(ctx)
					res, err := q.Client().JobListTx(ctx, tx.Tx, river.NewJobListParams().Kinds(echoArgs{}.Kind()).First(1000))
					if err != nil {
						return err
					}
					for _, a := range args {
						if !hasArgs(t, res.Jobs, a) {
							t.Errorf("job %v is not visible inside its transaction", a)
						}
					}
					return tt.fnErr
				})
				if !errors.Is(err, tt.fnErr) {
					t.Fatalf("WithinTx = %v, want %v", err, tt.fnErr)
				}
				jobs := listJobs(t, q, echoArgs{}.Kind())
				for _, a := range args {
					if got := hasArgs(t, jobs, a); got != tt.wantJob {
						t.Errorf("job %v in river_job after the transaction: %v, want %v", a, got, tt.wantJob)
					}
				}
			})
		}
	})
}

func TestEnqueueManyOptions(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		q := newQueue(t, migrated(t, db), queue.Config{})
		ctx := t.Context()
		if err := q.EnqueueMany(ctx, nil, ports.EnqueueOptions{}); err != nil {
			t.Errorf("EnqueueMany of none: %v", err)
		}
		// Outside a transaction, in one of its own.
		if err := q.EnqueueMany(ctx, []ports.JobArgs{echoArgs{N: 1}, echoArgs{N: 1}, echoArgs{N: 2}}, ports.EnqueueOptions{MaxAttempts: 3}); err != nil {
			t.Fatalf("EnqueueMany: %v", err)
		}
		unique := ports.EnqueueOptions{UniqueByArgs: true}
		if err := q.EnqueueMany(ctx, []ports.JobArgs{echoArgs{N: 3}, echoArgs{N: 3}, echoArgs{N: 4}}, unique); err != nil {
			t.Fatalf("EnqueueMany with UniqueByArgs and a repeat: %v", err)
		}
		if err := q.EnqueueMany(ctx, []ports.JobArgs{echoArgs{N: 4}, echoArgs{N: 5}}, unique); err != nil {
			t.Fatalf("EnqueueMany with UniqueByArgs again: %v", err)
		}
		// In a transaction too, unique and not.
		err := db.WithinTx(ctx, func(ctx context.Context) error {
			if err := q.EnqueueMany(ctx, []ports.JobArgs{echoArgs{N: 7}, echoArgs{N: 7}, echoArgs{N: 5}}, unique); err != nil {
				return err
			}
			return q.EnqueueMany(ctx, []ports.JobArgs{echoArgs{N: 8}, echoArgs{N: 8}}, ports.EnqueueOptions{MaxAttempts: 3})
		})
		if err != nil {
			t.Fatalf("EnqueueMany in a transaction: %v", err)
		}
		err = q.EnqueueMany(ctx, []ports.JobArgs{echoArgs{N: 6}, nil}, ports.EnqueueOptions{})
		if !errors.Is(err, ports.ErrInternal) {
			t.Errorf("EnqueueMany with a nil = %v, want internal", err)
		}

		byN := map[int][]*rivertype.JobRow{}
		for _, j := range listJobs(t, q, echoArgs{}.Kind()) {
			byN[argsOf(t, j).N] = append(byN[argsOf(t, j).N], j)
		}
		for n, want := range map[int]int{1: 2, 2: 1, 3: 1, 4: 1, 5: 1, 6: 0, 7: 1, 8: 2} {
			if len(byN[n]) != want {
				t.Errorf("%d jobs of %d, want %d", len(byN[n]), n, want)
			}
		}
		for _, j := range append(byN[1], byN[8]...) {
			if j.MaxAttempts != 3 || j.State != rivertype.JobStateAvailable {
				t.Errorf("job: max attempts %d, state %s; want 3, available", j.MaxAttempts, j.State)
			}
		}
	})
}

func hasArgs(t *testing.T, jobs []*rivertype.JobRow, want echoArgs) bool {
	t.Helper()
	for _, j := range jobs {
		if argsOf(t, j) == want {
			return true
		}
	}
	return false
}

func TestEnqueueOptions(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		q := newQueue(t, migrated(t, db), queue.Config{})
		ctx := t.Context()
		runAt := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)

		enqueue := func(n int, opts ports.EnqueueOptions) {
			t.Helper()
			if err := q.Enqueue(ctx, echoArgs{N: n}, opts); err != nil {
				t.Fatalf("Enqueue(%d): %v", n, err)
			}
		}
		enqueue(1, ports.EnqueueOptions{})
		enqueue(2, ports.EnqueueOptions{MaxAttempts: 3, RunAt: runAt})
		enqueue(3, ports.EnqueueOptions{UniqueByArgs: true})
		enqueue(3, ports.EnqueueOptions{UniqueByArgs: true})
		enqueue(4, ports.EnqueueOptions{})
		enqueue(4, ports.EnqueueOptions{})

		byN := map[int][]*rivertype.JobRow{}
		for _, j := range listJobs(t, q, echoArgs{}.Kind()) {
			n := argsOf(t, j).N
			byN[n] = append(byN[n], j)
		}
		if j := byN[1][0]; j.MaxAttempts != river.MaxAttemptsDefault || j.State != rivertype.JobStateAvailable {
			t.Errorf("default job: max attempts %d, state %s; want %d, available", j.MaxAttempts, j.State, river.MaxAttemptsDefault)
		}
		j := byN[2][0]
		if j.MaxAttempts != 3 {
			t.Errorf("MaxAttempts = %d, want 3", j.MaxAttempts)
		}
		if j.State != rivertype.JobStateScheduled || j.ScheduledAt.Sub(runAt).Abs() > time.Millisecond {
			t.Errorf("scheduled job: state %s at %s; want scheduled at %s", j.State, j.ScheduledAt, runAt)
		}
		if len(byN[3]) != 1 {
			t.Errorf("UniqueByArgs: %d jobs, want 1", len(byN[3]))
		}
		if len(byN[4]) != 2 {
			t.Errorf("without UniqueByArgs: %d jobs, want 2", len(byN[4]))
		}
	})
}

func TestWorksJobs(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		worked := make(chan echoArgs, 10)
		workers := river.NewWorkers()
		river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, job *river.Job[echoArgs]) error {
			worked <- job.Args
			return nil
		}))
		q := newQueue(t, migrated(t, db), queue.Config{Workers: workers})
		events, cancel := q.Client().Subscribe(river.EventKindJobCompleted)
		defer cancel()
		startQueue(t, t.Context(), q)

		ctx := t.Context()
		if err := q.Enqueue(ctx, echoArgs{N: 1}, ports.EnqueueOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := db.WithinTx(ctx, func(ctx context.Context) error {
			return q.Enqueue(ctx, echoArgs{N: 2}, ports.EnqueueOptions{})
		}); err != nil {
			t.Fatal(err)
		}

		completed := map[int]bool{}
		timeout := time.After(waitFor)
		for len(completed) < 2 {
			select {
			case ev, ok := <-events:
				if !ok {
					t.Fatal("River client stopped")
				}
				if ev.Job.Kind != (echoArgs{}).Kind() {
					t.Fatalf("completed job of kind %s", ev.Job.Kind)
				}
				completed[argsOf(t, ev.Job).N] = true
			case <-timeout:
				t.Fatalf("completed jobs %v after %s, want 1 and 2", completed, waitFor)
			}
		}
		if !completed[1] || !completed[2] {
			t.Fatalf("completed %v, want 1 and 2", completed)
		}
		close(worked)
		got := map[echoArgs]bool{}
		for a := range worked {
			got[a] = true
		}
		if len(got) != 2 {
			t.Fatalf("worker saw %v, want both jobs", got)
		}
	})
}

// UniqueByArgs blocks a duplicate while the first job is unfinished, but not
// once it has completed.
func TestUniqueByArgsAfterCompletion(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		workers := river.NewWorkers()
		river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, job *river.Job[echoArgs]) error { return nil }))
		q := newQueue(t, migrated(t, db), queue.Config{Workers: workers})
		events, unsubscribe := q.Client().Subscribe(river.EventKindJobCompleted)
		defer unsubscribe()
		unique := ports.EnqueueOptions{UniqueByArgs: true}
		ctx := t.Context()

		for range 2 {
			if err := q.Enqueue(ctx, echoArgs{N: 9}, unique); err != nil {
				t.Fatal(err)
			}
		}
		if n := len(listJobs(t, q, echoArgs{}.Kind())); n != 1 {
			t.Fatalf("%d jobs before completion, want 1", n)
		}
		startQueue(t, ctx, q)
		for run := 1; run <= 2; run++ {
			select {
			case _, ok := <-events:
				if !ok {
					t.Fatal("River client stopped")
				}
			case <-time.After(waitFor):
				t.Fatalf("run %d did not complete", run)
			}
			if run == 1 {
				if err := q.Enqueue(ctx, echoArgs{N: 9}, unique); err != nil {
					t.Fatal(err)
				}
			}
		}
		if n := len(listJobs(t, q, echoArgs{}.Kind())); n != 2 {
			t.Fatalf("%d jobs after completion and re-enqueue, want 2", n)
		}
	})
}

// A graceful Stop that runs out of time cancels the running job and still
// returns once it has ended; the job is available again at once, the
// cancelled attempt not counted and no error recorded (River since v0.44).
func TestStopCancelsJobsAfterDeadline(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		running := make(chan struct{})
		cancelled := make(chan error, 1)
		workers := river.NewWorkers()
		river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, job *river.Job[blockArgs]) error {
			close(running)
			<-ctx.Done()
			cancelled <- ctx.Err()
			return ctx.Err()
		}))
		q := newQueue(t, migrated(t, db), queue.Config{Workers: workers})
		if err := q.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := q.Enqueue(t.Context(), blockArgs{}, ports.EnqueueOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-running:
		case <-time.After(waitFor):
			t.Fatal("job did not start")
		}

		expired, cancel := context.WithCancel(context.Background())
		cancel()
		if err := q.Stop(expired); err != nil {
			t.Fatalf("Stop: %v", err)
		}
		select {
		case err := <-cancelled:
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("job context ended with %v, want canceled", err)
			}
		default:
			t.Fatal("Stop returned while the job was still running")
		}
		jobs := listJobs(t, q, blockArgs{}.Kind())
		if len(jobs) != 1 {
			t.Fatalf("%d jobs, want 1", len(jobs))
		}
		if j := jobs[0]; j.State != rivertype.JobStateAvailable || j.Attempt != 0 || len(j.Errors) != 0 {
			t.Errorf("cancelled job: %s, attempt %d, errors %+v; want available, attempt 0, no errors", j.State, j.Attempt, j.Errors)
		}
	})
}

// Start detaches the workers from its context, so a start-up deadline does
// not cancel running jobs.
func TestStartOutlivesItsContext(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		running, release := make(chan struct{}), make(chan struct{})
		jobErr := make(chan error, 1)
		workers := river.NewWorkers()
		river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, job *river.Job[blockArgs]) error {
			close(running)
			<-release
			jobErr <- ctx.Err()
			return nil
		}))
		q := newQueue(t, migrated(t, db), queue.Config{Workers: workers})
		events, unsubscribe := q.Client().Subscribe(river.EventKindJobCompleted)
		defer unsubscribe()

		startCtx, cancel := context.WithCancel(t.Context())
		startQueue(t, startCtx, q)
		if err := q.Enqueue(t.Context(), blockArgs{}, ports.EnqueueOptions{}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-running:
		case <-time.After(waitFor):
			t.Fatal("job did not start")
		}
		cancel()
		close(release)
		if err := <-jobErr; err != nil {
			t.Fatalf("job context ended with %v when the start context was cancelled", err)
		}
		select {
		case _, ok := <-events:
			if !ok {
				t.Fatal("River client stopped when the start context was cancelled")
			}
		case <-time.After(waitFor):
			t.Fatal("job did not complete")
		}
	})
}

func TestEnqueueErrors(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		workers := river.NewWorkers()
		river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, job *river.Job[echoArgs]) error { return nil }))
		q := newQueue(t, migrated(t, db), queue.Config{Workers: workers})

		done, cancel := context.WithCancel(t.Context())
		cancel()
		tests := []struct {
			name string
			ctx  context.Context
			args ports.JobArgs
			want *ports.Error
		}{
			{"kind without a worker", t.Context(), unknownArgs{}, ports.ErrInternal},
			{"nil args", t.Context(), nil, ports.ErrInternal},
			{"cancelled context", done, echoArgs{N: 1}, ports.ErrUnavailable},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if err := q.Enqueue(tt.ctx, tt.args, ports.EnqueueOptions{}); !errors.Is(err, tt.want) {
					t.Fatalf("Enqueue = %v, want kind %s", err, tt.want.Kind)
				}
			})
		}
	})
}

func TestMigrate(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		ctx := t.Context()
		before, err := queue.PendingMigrations(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		if before == 0 {
			t.Fatal("a fresh database has no pending River migrations")
		}
		for i := range 2 {
			if err := queue.Migrate(ctx, db, nil); err != nil {
				t.Fatalf("Migrate #%d: %v", i+1, err)
			}
			n, err := queue.PendingMigrations(ctx, db)
			if err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Fatalf("after Migrate #%d: %d pending, want 0", i+1, n)
			}
		}
		var jobs int
		if err := db.Writer.GetContext(ctx, &jobs, "SELECT count(*) FROM river_job"); err != nil {
			t.Fatalf("river_job after Migrate: %v", err)
		}
	})
}

func TestInsertOnlyStartStop(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		q := newQueue(t, migrated(t, db), queue.Config{})
		if err := q.Start(t.Context()); err != nil {
			t.Fatalf("Start: %v", err)
		}
		if err := q.Stop(t.Context()); err != nil {
			t.Fatalf("Stop: %v", err)
		}
	})
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	db := sqlstoretest.Open(t, sqlstore.DialectSQLite)
	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, job *river.Job[echoArgs]) error { return nil }))
	periodic := []*river.PeriodicJob{river.NewPeriodicJob(river.PeriodicInterval(time.Hour),
		func() (river.JobArgs, *river.InsertOpts) { return echoArgs{}, nil }, nil)}
	tests := []struct {
		name string
		db   *sqlstore.DB
		cfg  queue.Config
	}{
		{"nil db", nil, queue.Config{}},
		{"unknown dialect", &sqlstore.DB{Dialect: "oracle", Writer: db.Writer, Reader: db.Reader}, queue.Config{}},
		{"slow poll", db, queue.Config{Workers: workers, PollInterval: time.Second}},
		{"negative poll", db, queue.Config{Workers: workers, PollInterval: -time.Millisecond}},
		{"periodic jobs without workers", db, queue.Config{PeriodicJobs: periodic}},
		{"queues without workers", db, queue.Config{Queues: map[string]river.QueueConfig{"default": {MaxWorkers: 1}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, err := queue.New(tt.db, tt.cfg); !errors.Is(err, ports.ErrInternal) {
				t.Fatalf("New = %v, want an internal error", err)
			}
		})
	}
}

// Hosts starting together may migrate at the same time.
func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		const n = 4
		errs := make(chan error, n)
		for range n {
			go func() { errs <- queue.Migrate(t.Context(), db, nil) }()
		}
		for range n {
			if err := <-errs; err != nil {
				t.Errorf("concurrent Migrate: %v", err)
			}
		}
		if pending, err := queue.PendingMigrations(t.Context(), db); err != nil || pending != 0 {
			t.Fatalf("PendingMigrations = %d, %v; want 0", pending, err)
		}
	})
}

// MaxWorkers bounds the jobs of the default queue that run at once.
func TestMaxWorkersBoundsConcurrentJobs(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		const maxWorkers, jobs = 2, 5
		var mu sync.Mutex
		running, most := 0, 0
		started, release := make(chan struct{}, jobs), make(chan struct{})
		workers := river.NewWorkers()
		river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, job *river.Job[echoArgs]) error {
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			started <- struct{}{}
			<-release
			mu.Lock()
			running--
			mu.Unlock()
			return nil
		}))
		q := newQueue(t, migrated(t, db), queue.Config{Workers: workers, MaxWorkers: maxWorkers})
		events, cancel := q.Client().Subscribe(river.EventKindJobCompleted)
		defer cancel()
		startQueue(t, t.Context(), q)
		for n := range jobs {
			if err := q.Enqueue(t.Context(), echoArgs{N: n}, ports.EnqueueOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		for range maxWorkers {
			select {
			case <-started:
			case <-time.After(waitFor):
				t.Fatal("jobs did not start")
			}
		}
		// Several fetch cycles pass with both slots taken and jobs waiting.
		time.Sleep(20 * queue.DefaultFetchCooldown)
		close(release)
		for done := 0; done < jobs; {
			select {
			case <-events:
				done++
			case <-time.After(waitFor):
				t.Fatalf("%d of %d jobs completed", done, jobs)
			}
		}
		if most != maxWorkers {
			t.Fatalf("%d jobs ran at once, want %d", most, maxWorkers)
		}
	})
}

// A job retention of forever (negative) or River's default (zero) is a
// configuration River accepts.
func TestJobRetention(t *testing.T) {
	t.Parallel()
	db := sqlstoretest.Open(t, sqlstore.DialectSQLite)
	for _, r := range []queue.JobRetention{{}, {Completed: time.Hour, Cancelled: -1, Discarded: 30 * 24 * time.Hour}, {Completed: -time.Hour}} {
		if _, err := queue.New(db, queue.Config{Retention: r}); err != nil {
			t.Errorf("New with retention %+v: %v", r, err)
		}
	}
}
