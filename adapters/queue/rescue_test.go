package queue_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
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

// abandon makes the job of args look like one a process started ago and
// then died working: running, its attempt counted, attempted ago.
func abandon(t *testing.T, db *sqlstore.DB, q *queue.Queue, args echoArgs, ago time.Duration) {
	t.Helper()
	var id int64
	for _, j := range listJobs(t, q, args.Kind()) {
		if argsOf(t, j) == args {
			id = j.ID
		}
	}
	if id == 0 {
		t.Fatalf("no job %v", args)
	}
	var err error
	switch db.Dialect {
	case sqlstore.DialectPostgres:
		_, err = db.Writer.ExecContext(t.Context(), `UPDATE river_job SET state = 'running', attempt = attempt + 1,
			attempted_at = now() - make_interval(secs => $2) WHERE id = $1`, id, ago.Seconds())
	default:
		at := time.Now().UTC().Add(-ago).Format("2006-01-02 15:04:05.000")
		_, err = db.Writer.ExecContext(t.Context(), `UPDATE river_job SET state = 'running', attempt = attempt + 1,
			attempted_at = ? WHERE id = ?`, at, id)
	}
	if err != nil {
		t.Fatalf("abandoning job %d: %v", id, err)
	}
}

type workedJob struct {
	args              echoArgs
	attempt, attempts int
	deadlineIn        time.Duration
}

// recordingWorkers returns workers of echoArgs that report each job they work.
func recordingWorkers() (*river.Workers, <-chan workedJob) {
	worked := make(chan workedJob, 10)
	workers := river.NewWorkers()
	river.AddWorker(workers, river.WorkFunc(func(ctx context.Context, job *river.Job[echoArgs]) error {
		w := workedJob{args: job.Args, attempt: job.Attempt, attempts: job.MaxAttempts}
		if d, ok := ctx.Deadline(); ok {
			w.deadlineIn = time.Until(d)
		}
		worked <- w
		return nil
	}))
	return workers, worked
}

func nextWorked(t *testing.T, worked <-chan workedJob) workedJob {
	t.Helper()
	select {
	case w := <-worked:
		return w
	case <-time.After(waitFor):
		t.Fatalf("no job was worked within %s", waitFor)
	}
	return workedJob{}
}

// With RescueOnStart, a job its process left running when it died is worked
// as soon as the next process starts, however recently it started: also one
// that was on its last attempt, which comes back with Attempt past
// MaxAttempts and the rescue in its errors.
func TestRescueOnStart(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		ctx := t.Context()
		dead := newQueue(t, migrated(t, db), queue.Config{})
		for n, attempts := range map[int]int{1: 5, 2: 1} {
			if err := dead.Enqueue(ctx, echoArgs{N: n}, ports.EnqueueOptions{MaxAttempts: attempts}); err != nil {
				t.Fatal(err)
			}
			abandon(t, db, dead, echoArgs{N: n}, 0)
		}

		workers, worked := recordingWorkers()
		q := newQueue(t, db, queue.Config{Workers: workers, RescueOnStart: true})
		events, unsubscribe := q.Client().Subscribe(river.EventKindJobCompleted)
		defer unsubscribe()
		startQueue(t, ctx, q)
		got := map[int]workedJob{}
		for range 2 {
			w := nextWorked(t, worked)
			got[w.args.N] = w
		}
		if w := got[1]; w.attempt != 2 || w.attempts != 5 {
			t.Errorf("job 1 worked at attempt %d of %d, want 2 of 5", w.attempt, w.attempts)
		}
		if w := got[2]; w.attempt != 2 || w.attempts != 1 {
			t.Errorf("job 2 worked at attempt %d of %d, want 2 of 1 (past its last)", w.attempt, w.attempts)
		}
		for range 2 {
			select {
			case ev := <-events:
				if len(ev.Job.Errors) != 1 || !strings.Contains(ev.Job.Errors[0].Error, "process working this job stopped") {
					t.Errorf("job %d errors %+v, want the rescue", ev.Job.ID, ev.Job.Errors)
				}
			case <-time.After(waitFor):
				t.Fatal("rescued job did not complete")
			}
		}
	})
}

// Without RescueOnStart (separate workers), a job running for longer than
// RescueAfter is taken up, and one running for less is left to its process;
// every attempt is cancelled after JobTimeout(RescueAfter), before that bound.
func TestRescueAfter(t *testing.T) {
	t.Parallel()
	const bound = time.Minute
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		ctx := t.Context()
		dead := newQueue(t, migrated(t, db), queue.Config{})
		for n, ago := range map[int]time.Duration{1: 2 * bound, 2: 0} {
			if err := dead.Enqueue(ctx, echoArgs{N: n}, ports.EnqueueOptions{}); err != nil {
				t.Fatal(err)
			}
			abandon(t, db, dead, echoArgs{N: n}, ago)
		}

		workers, worked := recordingWorkers()
		q := newQueue(t, db, queue.Config{Workers: workers, RescueAfter: bound})
		startQueue(t, ctx, q)
		w := nextWorked(t, worked)
		if w.args.N != 1 {
			t.Fatalf("worked job %d first, want the one abandoned %s ago", w.args.N, 2*bound)
		}
		if w.deadlineIn <= 0 || w.deadlineIn > queue.JobTimeout(bound) || queue.JobTimeout(bound) >= bound {
			t.Errorf("job deadline in %s, JobTimeout %s: want a deadline within JobTimeout, below the bound %s", w.deadlineIn, queue.JobTimeout(bound), bound)
		}
		for _, j := range listJobs(t, q, echoArgs{}.Kind()) {
			if argsOf(t, j).N == 2 && j.State != rivertype.JobStateRunning {
				t.Errorf("job running for less than the bound is %s, want running", j.State)
			}
		}
	})
}

func TestRescueCounts(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		ctx := t.Context()
		q := newQueue(t, migrated(t, db), queue.Config{})
		for n := 1; n <= 3; n++ {
			if err := q.Enqueue(ctx, echoArgs{N: n}, ports.EnqueueOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		abandon(t, db, q, echoArgs{N: 1}, time.Hour)
		abandon(t, db, q, echoArgs{N: 2}, time.Second)
		for _, tt := range []struct {
			runningFor time.Duration
			want       int
		}{{2 * time.Hour, 0}, {time.Minute, 1}, {time.Minute, 0}, {0, 1}, {0, 0}} {
			if n, err := q.Rescue(ctx, tt.runningFor); err != nil || n != tt.want {
				t.Fatalf("Rescue(%s) = %d, %v; want %d", tt.runningFor, n, err, tt.want)
			}
		}
		for _, j := range listJobs(t, q, echoArgs{}.Kind()) {
			if j.State != rivertype.JobStateAvailable {
				t.Errorf("job %d is %s after the rescues, want available", argsOf(t, j).N, j.State)
			}
		}
		if db.Dialect == sqlstore.DialectSQLite {
			// River keeps these columns as JSONB on SQLite; a rescue must not
			// leave JSON text behind.
			var text int
			if err := db.Writer.GetContext(ctx, &text, `SELECT count(*) FROM river_job
	WHERE typeof(errors) = 'text' OR typeof(metadata) = 'text'`); err != nil {
				t.Fatal(err)
			}
			if text != 0 {
				t.Errorf("%d rescued jobs hold errors or metadata as JSON text, want JSONB", text)
			}
		}
	})
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// At info level, River's chatter (client started and stopped, producer job
// counts) is not logged; at debug level it is, and warnings always are.
func TestQuietRiver(t *testing.T) {
	t.Parallel()
	t.Run("handler", func(t *testing.T) {
		t.Parallel()
		for _, tt := range []struct {
			level      slog.Level
			want, dont []string
		}{
			{slog.LevelInfo, []string{"level=WARN msg=careful"}, []string{"chatter"}},
			{slog.LevelDebug, []string{"level=DEBUG msg=chatter", "level=WARN msg=careful"}, []string{"level=INFO"}},
		} {
			var buf bytes.Buffer
			log := queue.QuietRiver(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: tt.level})))
			log.With("component", "river").WithGroup("g").Info("chatter", "n", 1)
			log.Warn("careful")
			for _, w := range tt.want {
				if !strings.Contains(buf.String(), w) {
					t.Errorf("at %s: %q lacks %q", tt.level, buf.String(), w)
				}
			}
			for _, d := range tt.dont {
				if strings.Contains(buf.String(), d) {
					t.Errorf("at %s: %q has %q", tt.level, buf.String(), d)
				}
			}
		}
	})
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		var buf syncBuffer
		workers, _ := recordingWorkers()
		q := newQueue(t, migrated(t, db), queue.Config{Workers: workers,
			Logger: slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))})
		if err := q.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := q.Stop(t.Context()); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(buf.String(), "River client") {
			t.Errorf("River logs at info level:\n%s", buf.String())
		}
	})
}
