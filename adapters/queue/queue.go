// Package queue implements ports.JobQueue with River, over the same database
// as sqlstore: riverdatabasesql on the lib/pq pool for PostgreSQL (poll-only,
// as lib/pq cannot LISTEN through database/sql) and riversqlite on the single
// writer connection for SQLite.
package queue

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/riverdriver/riverdatabasesql"
	"github.com/riverqueue/river/riverdriver/riversqlite"
	"github.com/riverqueue/river/rivertype"
	"github.com/riverqueue/rivercontrib/otelriver"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/ports"
)

const (
	// DefaultPollInterval is how often workers look for new jobs when
	// Config.PollInterval is zero; it is also the longest interval allowed.
	DefaultPollInterval = 200 * time.Millisecond
	// DefaultMaxWorkers is how many jobs the default queue runs at once.
	DefaultMaxWorkers = 10
	// DefaultFetchCooldown is the least time between two fetches of jobs
	// while jobs keep coming. River's own default, 100 ms, caps a queue at
	// MaxWorkers jobs per 100 ms however short the jobs are: 100 a second
	// with 10 workers, far below what webhooks bring.
	DefaultFetchCooldown = 10 * time.Millisecond
	// hardStopGrace bounds the wait for cancelled jobs to return once a
	// graceful Stop has run out of time.
	hardStopGrace = 10 * time.Second
)

// Config configures a Queue. The zero value is an insert-only queue.
type Config struct {
	// Workers are the workers this process runs; nil makes an insert-only
	// queue that enqueues jobs for other processes and never works any.
	Workers *river.Workers
	// PeriodicJobs are enqueued on their schedules by whichever working
	// process is River's leader; they need Workers.
	PeriodicJobs []*river.PeriodicJob
	// Queues are the queues worked and their concurrency; when Workers is set
	// and Queues is empty, it is river.QueueDefault with MaxWorkers.
	Queues map[string]river.QueueConfig
	// Queue, when set, is the one queue of this client: every job it
	// inserts (enqueued, periodic, or a follow-up) goes into it, whatever
	// the job asked for, and, when it has Workers and Queues is empty, it
	// works that queue alone. Processes whose jobs only they can work (the
	// sandbox's, whose fake providers live in its memory) keep them apart
	// this way. "" is River's default queue.
	Queue string
	// MaxWorkers is how many jobs the default queue (or Queue) runs at
	// once when Queues is empty: DefaultMaxWorkers when zero.
	MaxWorkers int
	// PollInterval is how often workers look for new jobs: at most
	// DefaultPollInterval, which it defaults to.
	PollInterval time.Duration
	// Logger receives River's logs, its informational ones at debug level
	// (see QuietRiver), and the queue's own; nil means slog.Default().
	Logger *slog.Logger
	// RescueAfter bounds how long a job stays running once the process
	// working it died: a working queue looks every RescueAfter/4 (at most
	// every 30 s) for jobs running for longer than that and makes them
	// available again (see Rescue). Every attempt is cancelled after
	// JobTimeout(RescueAfter), so a job still running on a live process is
	// not taken up twice. DefaultRescueAfter when zero.
	RescueAfter time.Duration
	// RescueOnStart makes Start take up every job left running before it
	// starts working: for a process that is the only one working its
	// database (`devpilot run`), whose jobs left running can only be those of
	// its predecessor that died.
	RescueOnStart bool
	// Metrics, when set, receives the queue's metrics: jobs inserted,
	// attempts' waits, run times, outcomes, failures and retries, and the
	// number of jobs waiting, read from the database when scraped. Queues
	// sharing a registry (an insert-only and a working one in one process)
	// share the metrics; they must share the database too, as the depth is
	// read by the first queue registered. New panics when the registry
	// holds other metrics of the same names. Nil: no metrics.
	Metrics prometheus.Registerer
	// Kinds are the job kinds the metrics name in their kind label; jobs of
	// any other kind are counted under "other" (OtherKind), so that the
	// label stays bounded.
	Kinds []string
	// Tracer, when set, traces the queue: inserting jobs makes a span under
	// the caller's, which the job carries in its metadata (W3C trace
	// context), and each attempt runs under a span "river.work/<kind>"
	// linked to it, so that what a job does is traced under its attempt and
	// a trace shows where the job came from. Nil: no spans.
	Tracer trace.TracerProvider
	// Retention is how long finished jobs are kept before River's job
	// cleaner, run by the leader of the working processes, deletes them.
	Retention JobRetention
}

// JobRetention is how long finished jobs are kept, by how they finished.
// Zero takes River's default (DefaultCompletedRetention and the others);
// a negative duration keeps them forever.
type JobRetention struct {
	Completed time.Duration
	Cancelled time.Duration
	Discarded time.Duration // failed for good: out of attempts
}

// River's defaults for JobRetention, which River's job cleaner applies to a
// zero duration.
const (
	DefaultCompletedRetention = 24 * time.Hour
	DefaultCancelledRetention = 24 * time.Hour
	DefaultDiscardedRetention = 7 * 24 * time.Hour
)

// riverRetention is d as River's retention periods take it: 0 for its
// default, -1 for forever.
func riverRetention(d time.Duration) time.Duration {
	if d < 0 {
		return -1
	}
	return d
}

// Queue enqueues jobs and, when it has workers, works them.
type Queue struct {
	client *river.Client[*sql.Tx]
	db     *sqlstore.DB
	works  bool
	logger *slog.Logger

	rescueAfter   time.Duration
	rescueOnStart bool
	// stopRescue ends the rescue loop Start started, and rescueDone is closed
	// when it has; both nil while it is not running.
	stopRescue context.CancelFunc
	rescueDone chan struct{}
}

var _ ports.JobQueue = (*Queue)(nil)

// New returns a Queue over db's writer pool. It does not start working jobs;
// call Start. It returns an internal Error for an unknown dialect or a
// Config River rejects (such as a PollInterval above DefaultPollInterval,
// PeriodicJobs or Queues without Workers, or a worker whose kind River finds
// invalid, or a negative RescueAfter).
func New(db *sqlstore.DB, cfg Config) (*Queue, error) {
	drv, err := driverFor(db)
	if err != nil {
		return nil, err
	}
	poll := cfg.PollInterval
	if poll == 0 {
		poll = DefaultPollInterval
	}
	if poll < 0 || poll > DefaultPollInterval {
		return nil, ports.Errorf(ports.KindInternal, "queue: poll interval %s is outside (0, %s]", cfg.PollInterval, DefaultPollInterval)
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	rescueAfter := cfg.RescueAfter
	if rescueAfter == 0 {
		rescueAfter = DefaultRescueAfter
	}
	if rescueAfter < 0 {
		return nil, ports.Errorf(ports.KindInternal, "queue: rescue bound %s is negative", cfg.RescueAfter)
	}
	rc := &river.Config{
		FetchCooldown:     min(DefaultFetchCooldown, poll),
		FetchPollInterval: poll,
		Logger:            QuietRiver(logger),
		PollOnly:          true,
		JobTimeout:        JobTimeout(rescueAfter),
		// The queue's own rescue (see Rescue) takes up abandoned jobs at
		// RescueAfter; River's, which discards a job on its last attempt
		// without a word to the use case, is only a backstop behind it.
		RescueStuckJobsAfter: 2 * rescueAfter,

		CompletedJobRetentionPeriod: riverRetention(cfg.Retention.Completed),
		CancelledJobRetentionPeriod: riverRetention(cfg.Retention.Cancelled),
		DiscardedJobRetentionPeriod: riverRetention(cfg.Retention.Discarded),
	}
	if cfg.Workers != nil {
		rc.Workers = cfg.Workers
		rc.PeriodicJobs = cfg.PeriodicJobs
		rc.Queues = cfg.Queues
		if len(rc.Queues) == 0 {
			rc.Queues = map[string]river.QueueConfig{cmp.Or(cfg.Queue, river.QueueDefault): {MaxWorkers: cmp.Or(cfg.MaxWorkers, DefaultMaxWorkers)}}
		}
	} else if len(cfg.PeriodicJobs) > 0 || len(cfg.Queues) > 0 {
		return nil, ports.Errorf(ports.KindInternal, "queue: periodic jobs and queues need Workers")
	}
	if cfg.Queue != "" {
		queue := cfg.Queue
		rc.Middleware = append(rc.Middleware, river.JobInsertMiddlewareFunc(
			func(ctx context.Context, params []*rivertype.JobInsertParams, doInner func(context.Context) ([]*rivertype.JobInsertResult, error)) ([]*rivertype.JobInsertResult, error) {
				for _, p := range params {
					p.Queue = queue
				}
				return doInner(ctx)
			}))
	}
	if cfg.Tracer != nil {
		rc.Middleware = append(rc.Middleware, otelriver.NewMiddleware(&otelriver.MiddlewareConfig{
			EnableTracePropagation:      true,
			EnableWorkSpanJobKindSuffix: true,
			MeterProvider:               metricnoop.NewMeterProvider(), // the metrics are Prometheus's (Metrics)
			TracerProvider:              cfg.Tracer,
		}))
	}
	if cfg.Metrics != nil {
		rc.Middleware = append(rc.Middleware, newJobMetrics(cfg.Metrics, db, cfg.Kinds, logger))
	}
	client, err := river.NewClient(drv, rc)
	if err != nil {
		return nil, ports.Wrap(ports.KindInternal, err, "queue: configuring River")
	}
	return &Queue{client: client, db: db, works: cfg.Workers != nil, logger: logger,
		rescueAfter: rescueAfter, rescueOnStart: cfg.RescueOnStart}, nil
}

func driverFor(db *sqlstore.DB) (riverdriver.Driver[*sql.Tx], error) {
	if db == nil || db.Writer == nil {
		return nil, ports.Errorf(ports.KindInternal, "queue: no database")
	}
	switch db.Dialect {
	case sqlstore.DialectSQLite:
		return riversqlite.New(db.Writer.DB), nil
	case sqlstore.DialectPostgres:
		return riverdatabasesql.New(db.Writer.DB), nil
	}
	return nil, ports.Errorf(ports.KindInternal, "queue: unsupported dialect %q", db.Dialect)
}

// Client returns the River client, for tests and operator tooling that need
// more of River than ports.JobQueue offers (listing jobs, subscribing to
// events).
func (q *Queue) Client() *river.Client[*sql.Tx] { return q.client }

// unfinished are the states in which a job blocks a duplicate enqueued with
// UniqueByArgs. River's default adds completed, which would block a new run
// until the completed job is cleaned out a day later.
var unfinished = []rivertype.JobState{
	rivertype.JobStateAvailable,
	rivertype.JobStatePending,
	rivertype.JobStateRetryable,
	rivertype.JobStateRunning,
	rivertype.JobStateScheduled,
}

// Enqueue inserts a job in the transaction ctx carries (see
// sqlstore.DB.WithinTx), or on its own when there is none. A job with
// UniqueByArgs is skipped without error while an unfinished job of the same
// kind and arguments exists (one enqueued without UniqueByArgs counts too).
// It returns an unavailable Error when the database cannot be reached or ctx
// ends, and an internal Error otherwise (for example a kind no worker handles,
// on a queue with Workers).
func (q *Queue) Enqueue(ctx context.Context, args ports.JobArgs, opts ports.EnqueueOptions) error {
	if args == nil {
		return ports.Errorf(ports.KindInternal, "queue: nil job args")
	}
	return q.insert(ctx, []ports.JobArgs{args}, opts, "enqueueing job "+args.Kind())
}

// EnqueueMany inserts the jobs with one River insert (one statement on
// PostgreSQL) in the transaction ctx carries, or with InsertMany in a
// transaction of its own when there is none: all or nothing. With
// UniqueByArgs, args whose kind and JSON encoding repeat an earlier one of
// the call are dropped before the insert (River cannot insert two jobs with
// one unique key in one statement), and the rest are skipped as Enqueue
// skips one. No args does nothing. Errors are Enqueue's; a nil among args is
// an internal Error, and nothing is inserted.
func (q *Queue) EnqueueMany(ctx context.Context, args []ports.JobArgs, opts ports.EnqueueOptions) error {
	if len(args) == 0 {
		return nil
	}
	if opts.UniqueByArgs {
		seen := make(map[string]bool, len(args))
		unique := make([]ports.JobArgs, 0, len(args))
		for _, a := range args {
			if a == nil {
				return ports.Errorf(ports.KindInternal, "queue: nil job args")
			}
			encoded, err := json.Marshal(a)
			if err != nil {
				return ports.Wrap(ports.KindInternal, err, "queue: encoding job args of "+a.Kind())
			}
			key := a.Kind() + "\x00" + string(encoded)
			if !seen[key] {
				seen[key] = true
				unique = append(unique, a)
			}
		}
		args = unique
	}
	return q.insert(ctx, args, opts, fmt.Sprintf("enqueueing %d jobs", len(args)))
}

// insert inserts one job for each of args with opts, in ctx's transaction
// when it carries one. There, jobs that are not unique go in with
// InsertManyFastTx, which does not read the inserted rows back; River's
// InsertMany (with a transaction of its own, and results it needs to wake
// this process's workers) takes the others.
func (q *Queue) insert(ctx context.Context, args []ports.JobArgs, opts ports.EnqueueOptions, what string) error {
	insertOpts := &river.InsertOpts{
		MaxAttempts: opts.MaxAttempts,
		ScheduledAt: opts.RunAt,
	}
	if opts.UniqueByArgs {
		insertOpts.UniqueOpts = river.UniqueOpts{ByArgs: true, ByState: unfinished}
	}
	params := make([]river.InsertManyParams, len(args))
	for i, a := range args {
		if a == nil {
			return ports.Errorf(ports.KindInternal, "queue: nil job args")
		}
		params[i] = river.InsertManyParams{Args: a, InsertOpts: insertOpts}
	}
	var err error
	if tx, ok := sqlstore.TxFromContext(ctx); ok && !opts.UniqueByArgs {
		_, err = q.client.InsertManyFastTx(ctx, tx.Tx, params)
	} else if ok {
		_, err = q.client.InsertManyTx(ctx, tx.Tx, params)
	} else {
		_, err = q.client.InsertMany(ctx, params)
	}
	if err != nil {
		return wrap(err, what)
	}
	return nil
}

// Start starts working jobs in the background; it is a no-op for an
// insert-only queue. With Config.RescueOnStart it first makes every job
// left running available again. Then, until Stop, it takes up jobs running
// for longer than Config.RescueAfter (see Rescue). Jobs run detached from
// ctx's cancellation (ctx only bounds start-up), so a start-up context with
// a deadline does not stop them: call Stop. It returns an unavailable Error
// when the database cannot be reached.
func (q *Queue) Start(ctx context.Context) error {
	if !q.works {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return wrap(err, "starting job workers")
	}
	if q.rescueOnStart {
		n, err := q.Rescue(ctx, 0)
		if err != nil {
			return err
		}
		if n > 0 {
			q.logger.WarnContext(ctx, "took up jobs left running by a process that stopped before finishing them", slog.Int("count", n))
		}
	}
	if err := q.client.Start(context.WithoutCancel(ctx)); err != nil {
		return wrap(err, "starting job workers")
	}
	rescueCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	q.stopRescue, q.rescueDone = stop, make(chan struct{})
	go q.rescueLoop(rescueCtx, q.rescueDone)
	return nil
}

// Stop stops fetching jobs and waits for running ones to finish until ctx
// ends; then it cancels them and waits a short grace period more. River
// makes a job cancelled so available again at once, with the attempt it was
// on not counted and no error recorded. It is a no-op for an insert-only
// queue or one not started. It returns an unavailable Error only when
// cancelled jobs did not return in time either.
func (q *Queue) Stop(ctx context.Context) error {
	if !q.works {
		return nil
	}
	if q.stopRescue != nil {
		q.stopRescue()
		<-q.rescueDone
		q.stopRescue, q.rescueDone = nil, nil
	}
	err := q.client.Stop(ctx)
	if err == nil {
		return nil
	}
	q.logger.WarnContext(ctx, "job workers did not finish in time; cancelling running jobs", slog.Any("error", err))
	hardCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), hardStopGrace)
	defer cancel()
	if err := q.client.StopAndCancel(hardCtx); err != nil {
		return wrap(err, "stopping job workers")
	}
	return nil
}

// wrap classifies err: unavailable when the database is unreachable or the
// context ended, internal otherwise.
func wrap(err error, message string) error {
	if _, ok := ports.AsError(err); ok {
		return err
	}
	kind := ports.KindInternal
	var netErr net.Error
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) || errors.As(err, &netErr) {
		kind = ports.KindUnavailable
	}
	return ports.Wrap(kind, err, message)
}
