package queue_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/devpilot/devpilot/adapters/queue"
	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/ports"
)

// riverV034Version is the newest of River's migrations that River v0.34 had:
// the version every database a devpilot on River v0.34 migrated is at.
const riverV034Version = 6

// oldJob is a row of river_job as River v0.34 wrote it.
type oldJob struct {
	n, attempt   int
	state        string
	attemptedAgo time.Duration // 0: never attempted
	errors       string        // the JSON array of attempt errors; "": none
}

// insertOldJob inserts job into db's river_job (of echoArgs' kind) the way
// River v0.34 did: on SQLite its JSON columns held JSON text (args bound as
// a blob) and its times had up to three digits of milliseconds.
func insertOldJob(t *testing.T, db *sqlstore.DB, job oldJob) {
	t.Helper()
	args := []byte(`{"n":` + strconv.Itoa(job.n) + `}`)
	var attemptedAt any
	now := time.Now().UTC()
	var err error
	switch db.Dialect {
	case sqlstore.DialectPostgres:
		if job.attemptedAgo > 0 {
			attemptedAt = now.Add(-job.attemptedAgo)
		}
		var errs any
		if job.errors != "" {
			errs = job.errors
		}
		_, err = db.Writer.ExecContext(t.Context(), `INSERT INTO river_job
	(args, kind, max_attempts, state, attempt, attempted_at, errors, scheduled_at)
VALUES ($1, $2, 25, $3, $4, $5,
	(SELECT array_agg(e) FROM jsonb_array_elements($6::jsonb) e), $7)`,
			string(args), echoArgs{}.Kind(), job.state, job.attempt, attemptedAt, errs, now.Add(-time.Hour))
	default:
		const format = "2006-01-02 15:04:05.999"
		if job.attemptedAgo > 0 {
			attemptedAt = now.Add(-job.attemptedAgo).Format(format)
		}
		var errs any
		if job.errors != "" {
			errs = job.errors
		}
		_, err = db.Writer.ExecContext(t.Context(), `INSERT INTO river_job
	(args, kind, max_attempts, metadata, tags, state, attempt, attempted_at, errors, scheduled_at)
VALUES (?, ?, 25, json(cast(? AS blob)), json(cast(? AS blob)), ?, ?, ?, json(?), ?)`,
			args, echoArgs{}.Kind(), []byte(`{}`), []byte(`[]`), job.state, job.attempt, attemptedAt, errs,
			now.Add(-time.Hour).Format(format))
	}
	if err != nil {
		t.Fatalf("inserting job %d as River v0.34 did: %v", job.n, err)
	}
}

// A database River v0.34 migrated, with the jobs it left, is brought up to
// date by Migrate, and its jobs are worked afterwards: one waiting, and one
// its process left running when it died, taken up with its earlier attempt
// error kept.
func TestMigrateUpgradesRiverV034Database(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		ctx := t.Context()
		if err := queue.MigrateTo(ctx, db, riverV034Version); err != nil {
			t.Fatalf("migrating to River v0.34's version %d: %v", riverV034Version, err)
		}
		pending, err := queue.PendingMigrations(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		if pending == 0 {
			t.Fatalf("no River migrations pending after version %d; this test needs a newer base", riverV034Version)
		}
		insertOldJob(t, db, oldJob{n: 1, state: "available"})
		insertOldJob(t, db, oldJob{n: 2, state: "running", attempt: 2, attemptedAgo: time.Hour,
			errors: `[{"at":"2026-04-08T10:00:00Z","attempt":1,"error":"an earlier failure","trace":""}]`})

		if err := queue.Migrate(ctx, db, nil); err != nil {
			t.Fatalf("Migrate from version %d: %v", riverV034Version, err)
		}
		if n, err := queue.PendingMigrations(ctx, db); err != nil || n != 0 {
			t.Fatalf("after Migrate from version %d: %d pending, %v; want 0", riverV034Version, n, err)
		}
		var notifications int
		if err := db.Writer.GetContext(ctx, &notifications, "SELECT count(*) FROM river_notification"); err != nil {
			t.Fatalf("river_notification (River's migration 7) after Migrate: %v", err)
		}

		workers, worked := recordingWorkers()
		q := newQueue(t, db, queue.Config{Workers: workers, RescueOnStart: true})
		events, unsubscribe := q.Client().Subscribe(river.EventKindJobCompleted)
		defer unsubscribe()
		startQueue(t, ctx, q)
		if err := q.Enqueue(ctx, echoArgs{N: 3}, ports.EnqueueOptions{}); err != nil {
			t.Fatalf("Enqueue after the upgrade: %v", err)
		}
		got := map[int]workedJob{}
		for range 3 {
			w := nextWorked(t, worked)
			got[w.args.N] = w
		}
		for n, attempt := range map[int]int{1: 1, 2: 3, 3: 1} {
			if w, ok := got[n]; !ok || w.attempt != attempt {
				t.Errorf("job %d worked: %v, at attempt %d; want attempt %d", n, ok, w.attempt, attempt)
			}
		}
		errorsOf := map[int][]string{}
		for range 3 {
			select {
			case ev := <-events:
				for _, e := range ev.Job.Errors {
					errorsOf[argsOf(t, ev.Job).N] = append(errorsOf[argsOf(t, ev.Job).N], e.Error)
				}
			case <-time.After(waitFor):
				t.Fatal("a job did not complete")
			}
		}
		if e := errorsOf[2]; len(e) != 2 || e[0] != "an earlier failure" || !strings.Contains(e[1], "process working this job stopped") {
			t.Errorf("rescued job's errors %q, want its earlier failure and the rescue", e)
		}
		if len(errorsOf[1])+len(errorsOf[3]) != 0 {
			t.Errorf("errors of jobs 1 and 3: %q, %q; want none", errorsOf[1], errorsOf[3])
		}
	})
}
