package queue

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/telemetry"
)

// OtherKind is the kind label of jobs whose kind is not in Config.Kinds.
const OtherKind = "other"

// Outcomes of an attempt, the outcome label of devpilot_job_run_seconds: what
// River makes of the worker's result.
const (
	// OutcomeOK: the job completed.
	OutcomeOK = "ok"
	// OutcomeError: the attempt failed (an error or a panic) and the job
	// will be tried again.
	OutcomeError = "error"
	// OutcomeDiscarded: the last attempt failed; the job is given up.
	OutcomeDiscarded = "discarded"
	// OutcomeCancelled: the worker cancelled the job (river.JobCancel) or
	// it was cancelled from outside; it is not tried again.
	OutcomeCancelled = "cancelled"
	// OutcomeSnoozed: the worker snoozed the job (river.JobSnooze).
	OutcomeSnoozed = "snoozed"
	// OutcomeInterrupted: the process stopped the attempt while shutting
	// down; River makes the job available again without counting it.
	OutcomeInterrupted = "interrupted"
)

// depthTimeout bounds the query a scrape of devpilot_job_queue_depth runs.
const depthTimeout = 2 * time.Second

// waiting are the states of the jobs devpilot_job_queue_depth counts: jobs
// that are to run and are not running.
var waiting = []rivertype.JobState{
	rivertype.JobStateAvailable,
	rivertype.JobStateScheduled,
	rivertype.JobStateRetryable,
}

// jobKinds maps a job kind to its label value: itself when known, else
// OtherKind, so that the labels stay bounded by the kinds devpilot defines.
type jobKinds map[string]bool

func newJobKinds(kinds []string) jobKinds {
	k := make(jobKinds, len(kinds))
	for _, kind := range kinds {
		k[kind] = true
	}
	return k
}

func (k jobKinds) label(kind string) string {
	if k[kind] {
		return kind
	}
	return OtherKind
}

// jobMetrics is River middleware that measures jobs as they are inserted and
// worked. Middleware rather than hooks or event subscriptions: insert
// middleware sees every insert of every client, the insert-only ones of API
// processes too, and what was actually inserted (not unique duplicates);
// worker middleware wraps the attempt, so it times it and sees the worker's
// result synchronously, where events arrive later on a channel that can
// drop them and only on a working client.
type jobMetrics struct {
	river.MiddlewareDefaults
	kinds    jobKinds
	queued   *prometheus.CounterVec
	wait     *prometheus.HistogramVec
	run      *prometheus.HistogramVec
	failures *prometheus.CounterVec
	retries  *prometheus.CounterVec
}

var (
	_ rivertype.JobInsertMiddleware = (*jobMetrics)(nil)
	_ rivertype.WorkerMiddleware    = (*jobMetrics)(nil)
)

// newJobMetrics registers the job metrics on reg, reusing those registered
// already (by another queue on the same registry), and the queue depth
// collector over db. It panics when reg holds different metrics of the same
// names.
func newJobMetrics(reg prometheus.Registerer, db *sqlstore.DB, kinds []string, logger *slog.Logger) *jobMetrics {
	k := newJobKinds(kinds)
	m := &jobMetrics{
		kinds: k,
		queued: telemetry.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "devpilot_jobs_queued_total",
			Help: "Background jobs inserted (unique duplicates skipped are not), by kind.",
		}, []string{"kind"})),
		wait: telemetry.Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "devpilot_job_wait_seconds",
			Help:    "Time from a job's scheduled time (its insert, unless scheduled later, or its retry time) to the start of an attempt, by kind.",
			Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600},
		}, []string{"kind"})),
		run: telemetry.Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "devpilot_job_run_seconds",
			Help:    "Time an attempt at a job ran, by kind and outcome (ok, error, discarded, cancelled, snoozed, interrupted).",
			Buckets: []float64{.005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900},
		}, []string{"kind", "outcome"})),
		failures: telemetry.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "devpilot_job_failures_total",
			Help: "Attempts at jobs that failed (outcome error or discarded), by kind.",
		}, []string{"kind"})),
		retries: telemetry.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "devpilot_job_retries_total",
			Help: "Attempts at jobs after their first, by kind.",
		}, []string{"kind"})),
	}
	telemetry.Register(reg, &depthCollector{db: db, kinds: k, logger: logger, desc: depthDesc})
	return m
}

// InsertMany counts the jobs inserted, once the insert succeeded. Those
// skipped as unique duplicates are not counted; those inserted in a
// transaction that later rolls back are.
func (m *jobMetrics) InsertMany(ctx context.Context, params []*rivertype.JobInsertParams, doInner func(context.Context) ([]*rivertype.JobInsertResult, error)) ([]*rivertype.JobInsertResult, error) {
	results, err := doInner(ctx)
	if err != nil {
		return results, err
	}
	for i, p := range params {
		if i >= len(results) {
			break
		}
		// A fast insert returns one nil result per job inserted.
		if r := results[i]; r != nil && r.UniqueSkippedAsDuplicate {
			continue
		}
		m.queued.WithLabelValues(m.kinds.label(p.Kind)).Inc()
	}
	return results, nil
}

// Work measures an attempt at job: its wait, its run time and outcome, and
// whether it was a retry or a failure. A worker that panics is measured as
// failing before River recovers the panic.
func (m *jobMetrics) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	kind := m.kinds.label(job.Kind)
	start := time.Now()
	m.wait.WithLabelValues(kind).Observe(max(start.Sub(job.ScheduledAt), 0).Seconds())
	if job.Attempt > 1 {
		m.retries.WithLabelValues(kind).Inc()
	}
	returned := false
	defer func() {
		if !returned {
			m.observe(kind, failed(job), start)
		}
	}()
	err := doInner(ctx)
	returned = true
	m.observe(kind, outcome(ctx, job, err), start)
	return err
}

func (m *jobMetrics) observe(kind, outcome string, start time.Time) {
	m.run.WithLabelValues(kind, outcome).Observe(time.Since(start).Seconds())
	if outcome == OutcomeError || outcome == OutcomeDiscarded {
		m.failures.WithLabelValues(kind).Inc()
	}
}

// outcome is what River makes of an attempt at job that returned err in
// ctx, the attempt's context (see River's JobExecutor.reportError).
func outcome(ctx context.Context, job *rivertype.JobRow, err error) string {
	var (
		snooze *rivertype.JobSnoozeError
		cancel *rivertype.JobCancelError
	)
	switch {
	case err == nil:
		return OutcomeOK
	case errors.As(err, &snooze):
		return OutcomeSnoozed
	case errors.As(err, &cancel), errors.Is(context.Cause(ctx), rivertype.ErrJobCancelledRemotely):
		return OutcomeCancelled
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		// The attempt's own timeout is set inside the middleware, so its
		// context ends here only when the client stops.
		return OutcomeInterrupted
	}
	return failed(job)
}

// failed is the outcome of a failed attempt at job.
func failed(job *rivertype.JobRow) string {
	if job.Attempt >= job.MaxAttempts {
		return OutcomeDiscarded
	}
	return OutcomeError
}

var depthDesc = prometheus.NewDesc("devpilot_job_queue_depth",
	"Jobs waiting to run (available, scheduled or retryable), by kind, read from the database at scrape time.",
	[]string{"kind"}, nil)

// depthCollector reads the number of jobs waiting from river_job when
// scraped, so that every replica reports the same numbers. When the query
// fails or takes longer than depthTimeout, it exports nothing and logs.
type depthCollector struct {
	db     *sqlstore.DB
	kinds  jobKinds
	logger *slog.Logger
	desc   *prometheus.Desc
}

// Describe sends the queue depth's descriptor.
func (c *depthCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect sends the queue depth of every known kind and of other kinds.
func (c *depthCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), depthTimeout)
	defer cancel()
	depth, err := c.depth(ctx)
	if err != nil {
		c.logger.Error("reading the job queue depth for metrics", slog.Any("error", err))
		return
	}
	for kind, n := range depth {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), kind)
	}
}

// depthQuery counts the waiting jobs by kind; river_job's index on (state,
// queue, priority, scheduled_at, id) keeps it to the waiting rows on both
// dialects.
const depthQuery = `SELECT kind, count(*) FROM river_job WHERE state IN (?, ?, ?) GROUP BY kind`

// depth returns the number of waiting jobs by kind label, with every known
// kind and OtherKind present.
func (c *depthCollector) depth(ctx context.Context) (map[string]int64, error) {
	rows, err := c.db.Reader.QueryContext(ctx, c.db.Reader.Rebind(depthQuery), string(waiting[0]), string(waiting[1]), string(waiting[2]))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	depth := make(map[string]int64, len(c.kinds)+1)
	for kind := range c.kinds {
		depth[kind] = 0
	}
	depth[OtherKind] = 0
	for rows.Next() {
		var (
			kind string
			n    int64
		)
		if err := rows.Scan(&kind, &n); err != nil {
			return nil, err
		}
		depth[c.kinds.label(kind)] += n
	}
	return depth, rows.Err()
}
