package queue

import (
	"context"
	"log/slog"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/ports"
)

// DefaultRescueAfter is Config.RescueAfter when it is zero: how long a job
// may run before it is taken for the work of a process that died.
const DefaultRescueAfter = 5 * time.Minute

// maxRescueInterval bounds the time between two looks for jobs left running
// by a process that died.
const maxRescueInterval = 30 * time.Second

// rescuedError is the attempt error recorded on a job taken up again.
const rescuedError = "the process working this job stopped before it finished; the job was made available again"

// JobTimeout is how long one attempt at a job may run on a queue whose
// RescueAfter is rescueAfter: four fifths of it, so that a job still running
// on a live process is cancelled before another process would take it for
// abandoned.
func JobTimeout(rescueAfter time.Duration) time.Duration { return rescueAfter * 4 / 5 }

// rescueInterval is how often a working queue looks for abandoned jobs.
func rescueInterval(rescueAfter time.Duration) time.Duration {
	return max(min(rescueAfter/4, maxRescueInterval), 10*time.Millisecond)
}

// Rescue makes every job that has been running for longer than runningFor
// available to work again at once, and returns how many it took up; a
// runningFor of zero or less takes up every running job. It is for jobs whose
// process died (killed, crashed, lost its host) while working them: River
// leaves them running. An attempt error saying so is appended to each, and
// the next attempt counts as one more, so a job that was on its last attempt
// comes back with Attempt above MaxAttempts.
//
// A working Queue calls it by itself: with runningFor zero at Start when
// Config.RescueOnStart is set, and with Config.RescueAfter periodically. It
// returns an unavailable Error when the database cannot be reached, and an
// internal Error otherwise.
func (q *Queue) Rescue(ctx context.Context, runningFor time.Duration) (int, error) {
	var (
		query string
		args  []any
	)
	switch q.db.Dialect {
	case sqlstore.DialectPostgres:
		query = `UPDATE river_job SET state = 'available', scheduled_at = now(),
	errors = array_append(errors, jsonb_build_object('at', now(), 'attempt', attempt, 'error', $1::text, 'trace', '')),
	metadata = jsonb_set(metadata, '{devpilot:rescues}', to_jsonb(coalesce((metadata->>'devpilot:rescues')::int, 0) + 1))
WHERE state = 'running'`
		args = []any{rescuedError}
		if runningFor > 0 {
			query += ` AND attempted_at < now() - make_interval(secs => $2)`
			args = append(args, runningFor.Seconds())
		}
	case sqlstore.DialectSQLite:
		now := time.Now().UTC()
		// River (since v0.40, its migration 7) keeps errors and metadata as
		// JSONB on SQLite, so the updated values are written as JSONB too.
		query = `UPDATE river_job SET state = 'available', scheduled_at = ?,
	errors = jsonb_insert(coalesce(errors, jsonb('[]')), '$[#]', json_object('at', ?, 'attempt', attempt, 'error', ?, 'trace', '')),
	metadata = jsonb_set(metadata, '$."devpilot:rescues"', coalesce(json_extract(metadata, '$."devpilot:rescues"'), 0) + 1)
WHERE state = 'running'`
		args = []any{sqliteTime(now), now.Format(time.RFC3339Nano), rescuedError}
		if runningFor > 0 {
			query += ` AND attempted_at < ?`
			args = append(args, sqliteTime(now.Add(-runningFor)))
		}
	default:
		return 0, ports.Errorf(ports.KindInternal, "queue: unsupported dialect %q", q.db.Dialect)
	}
	res, err := q.db.Writer.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, wrap(err, "taking up abandoned jobs")
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, wrap(err, "taking up abandoned jobs")
	}
	return int(n), nil
}

// sqliteTime formats t as River's SQLite driver stores times (always three
// digits of milliseconds, since River v0.44), so that they compare as text
// with the ones it wrote.
func sqliteTime(t time.Time) string {
	return t.UTC().Round(time.Millisecond).Format("2006-01-02 15:04:05.000")
}

// rescueLoop takes up abandoned jobs every rescueInterval until ctx ends.
func (q *Queue) rescueLoop(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	t := time.NewTicker(rescueInterval(q.rescueAfter))
	defer t.Stop()
	for {
		q.rescueOnce(ctx, q.rescueAfter, "took up jobs running for longer than the rescue bound; their process is taken for dead")
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// rescueOnce runs Rescue and logs what it did: a warning naming how many jobs
// it took up, or the error.
func (q *Queue) rescueOnce(ctx context.Context, runningFor time.Duration, did string) {
	n, err := q.Rescue(ctx, runningFor)
	switch {
	case err != nil && ctx.Err() == nil:
		q.logger.WarnContext(ctx, "looking for abandoned jobs failed", slog.Any("error", err))
	case n > 0:
		q.logger.WarnContext(ctx, did, slog.Int("count", n), slog.Duration("rescue_after", runningFor))
	}
}
