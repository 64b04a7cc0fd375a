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
	"github.com/riverqueue/river/rivertype"

	"github.com/devpilot/devpilot/core/assistant"
	"github.com/devpilot/devpilot/core/content"
	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/core/scm"
	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/core/voice"
	"github.com/devpilot/devpilot/ports"
)

// How often the maintenance jobs run.
const (
	PruneTokensEvery         = time.Hour
	ExpireConfirmationsEvery = time.Minute
	// FailLostTurnsEvery is how often the chat turns lost with their
	// replica are ended: a turn is ended within its lease and this.
	FailLostTurnsEvery    = 15 * time.Second
	PruneIdempotencyEvery = time.Hour
	PruneUsageKeysEvery   = 24 * time.Hour
)

// UsageKeysKept is how long the keys of usage records added once (a
// realtime call's responses) are kept by default (Retention.UsageKeys):
// days past the longest a call's metering job may run and be retried.
const UsageKeysKept = 7 * 24 * time.Hour

// TokenPruner deletes expired and revoked tokens; *identity.Service is one.
type TokenPruner interface {
	PruneTokens(ctx context.Context) (int, error)
}

// IdempotencyPruner deletes the Idempotency-Key records expired at now, a
// batch at a time; ports.IdempotencyStore is one.
type IdempotencyPruner interface {
	PruneIdempotency(ctx context.Context, now time.Time, limit int) (int, error)
}

// PruneIdempotencyArgs is the maintenance job that deletes expired
// Idempotency-Key records. It is the worker host's own: the keys are the
// HTTP transport's convention, kept by a store port, and no core use case
// owns them, so the job calls the store directly.
type PruneIdempotencyArgs struct{}

// Kind names the job for the queue.
func (PruneIdempotencyArgs) Kind() string { return "idempotency.prune_keys" }

// UsageKeyPruner forgets the keys of usage records added before a day, a
// batch at a time; ports.UsageStore is one.
type UsageKeyPruner interface {
	PruneUsageKeys(ctx context.Context, before time.Time, limit int) (int, error)
}

// PruneUsageKeysArgs is the maintenance job that forgets the keys of usage
// records added more than Retention.UsageKeys ago. Like PruneIdempotencyArgs it
// calls the store directly: no core use case owns the keys.
type PruneUsageKeysArgs struct{}

// Kind names the job for the queue.
func (PruneUsageKeysArgs) Kind() string { return "usage.prune_keys" }

// ConfirmationExpirer marks confirmations past their expiry as expired,
// and ends the chat turns lost with their replica; *assistant.Service is
// one.
type ConfirmationExpirer interface {
	ExpireConfirmations(ctx context.Context) (int, error)
	FailLostTurns(ctx context.Context) (int, error)
}

// StageGenerator generates one specification stage, or gives it up;
// *spec.Service is one.
type StageGenerator interface {
	RunGeneration(ctx context.Context, args spec.GenerateStageArgs, final bool) error
	AbandonGeneration(ctx context.Context, args spec.GenerateStageArgs) error
}

// IssueExporter exports a specification to repository issues, or gives an
// export up; *spec.Service is one.
type IssueExporter interface {
	RunIssueExport(ctx context.Context, args spec.ExportIssuesArgs, final bool) error
	AbandonIssueExport(ctx context.Context, args spec.ExportIssuesArgs) error
}

// ContentGenerator drafts one content item, or gives it up;
// *content.Service is one.
type ContentGenerator interface {
	RunGeneration(ctx context.Context, args content.GenerateContentArgs, final bool) error
	AbandonGeneration(ctx context.Context, args content.GenerateContentArgs) error
}

// ContentPublishing publishes one publication of a content item;
// *content.Service is one.
type ContentPublishing interface {
	RunPublication(ctx context.Context, args content.PublishContentArgs, final bool) error
}

// DeliveryProcessor turns stored webhook deliveries into activity, one
// (jobs enqueued by earlier versions) or a batch at a time; *scm.Service is
// one.
type DeliveryProcessor interface {
	ProcessDelivery(ctx context.Context, deliveryID string) error
	ProcessDeliveries(ctx context.Context, deliveryIDs []string) error
}

// CallMeter records the token usage of a realtime call while it lasts;
// *voice.Service is one.
type CallMeter interface {
	MeterCall(ctx context.Context, args voice.MeterCallArgs) error
}

// Deps are the core services the workers call.
type Deps struct {
	Identity  TokenPruner
	Assistant ConfirmationExpirer
	Spec      StageGenerator
	// SpecExport works the exports of specifications to issues; nil uses
	// Spec when it is an IssueExporter, else such jobs are given up.
	SpecExport IssueExporter
	SCM        DeliveryProcessor
	Content    ContentGenerator
	Voice      CallMeter
	// Publishing works content.PublishContentArgs jobs; nil leaves them
	// unworked.
	Publishing ContentPublishing
	// Idempotency is pruned of expired Idempotency-Key records.
	Idempotency IdempotencyPruner
	// UsageKeys is pruned of the keys older than Retention.UsageKeys.
	UsageKeys UsageKeyPruner
	// Retention is pruned of the records that grow with traffic, each
	// kept as long as Keep says.
	Retention ports.RetentionStore
	// Keep is how long each kind of record is kept (zero fields take
	// DefaultRetention).
	Keep Retention
	// RetentionBatch and RetentionPause are how many records a statement
	// of a sweep deletes and how long it waits before the next (zero:
	// DefaultRetentionBatch and DefaultRetentionPause).
	RetentionBatch int
	RetentionPause time.Duration
	// Clock tells the prunes the time; nil means the system clock.
	Clock ports.Clock
	// Logger receives one line per job worked; nil means slog.Default().
	Logger *slog.Logger
	// GenerationBudget bounds how long a generation (a spec stage, a content
	// draft) stays generating from its job's creation: see
	// GenerationAttempt. Zero leaves generations unbounded but for their
	// attempts.
	GenerationBudget time.Duration
}

// NewWorkers returns every worker of the worker host, registered for a
// queue.Config. It returns an error when a dependency is missing or River
// rejects a worker.
func NewWorkers(d Deps) (*river.Workers, error) {
	if d.Identity == nil || d.Assistant == nil || d.Spec == nil || d.SCM == nil || d.Content == nil || d.Voice == nil || d.Idempotency == nil || d.UsageKeys == nil || d.Retention == nil {
		return nil, errors.New("worker: Deps.Identity, Assistant, Spec, SCM, Content, Voice, Idempotency, UsageKeys and Retention are required")
	}
	now := time.Now
	if d.Clock != nil {
		now = d.Clock.Now
	}
	sw := sweeper{keep: d.Keep.withDefaults(), now: now,
		batch: cmp.Or(d.RetentionBatch, DefaultRetentionBatch), pause: cmp.Or(d.RetentionPause, DefaultRetentionPause)}
	// An idempotency record is dead once expired; its retention counts from then.
	pruneIdempotency := sw.sweep(sw.keep.IdempotencyKeys, func(ctx context.Context, before time.Time, limit int) (int, error) {
		return d.Idempotency.PruneIdempotency(ctx, before, limit)
	})
	pruneUsageKeys := sw.sweep(sw.keep.UsageKeys, d.UsageKeys.PruneUsageKeys)
	workers := river.NewWorkers()
	err := errors.Join(
		river.AddWorkerSafely(workers, &SweepWorker[identity.PruneTokensArgs]{Sweep: d.Identity.PruneTokens, Did: "pruned API tokens", Logger: d.Logger}),
		river.AddWorkerSafely(workers, &SweepWorker[assistant.ExpireConfirmationsArgs]{Sweep: d.Assistant.ExpireConfirmations, Did: "expired confirmations", Logger: d.Logger}),
		river.AddWorkerSafely(workers, &SweepWorker[assistant.FailLostTurnsArgs]{Sweep: d.Assistant.FailLostTurns, Did: "ended lost chat turns", Logger: d.Logger}),
		river.AddWorkerSafely(workers, &SweepWorker[PruneIdempotencyArgs]{Sweep: pruneIdempotency, Did: "pruned idempotency keys", Logger: d.Logger}),
		river.AddWorkerSafely(workers, &SweepWorker[PruneUsageKeysArgs]{Sweep: pruneUsageKeys, Did: "pruned usage keys", Logger: d.Logger}),
		river.AddWorkerSafely(workers, &GenerateStageWorker{Spec: d.Spec, Budget: d.GenerationBudget}),
		river.AddWorkerSafely(workers, &ProcessDeliveryWorker{SCM: d.SCM, Logger: d.Logger}),
		river.AddWorkerSafely(workers, &ProcessDeliveriesWorker{SCM: d.SCM, Logger: d.Logger}),
		river.AddWorkerSafely(workers, &GenerateContentWorker{Content: d.Content, Budget: d.GenerationBudget}),
		river.AddWorkerSafely(workers, &MeterCallWorker{Voice: d.Voice, Logger: d.Logger}),
		addRetentionWorkers(workers, sw, d.Retention, d),
	)
	if err == nil {
		exporter := d.SpecExport
		if exporter == nil {
			exporter, _ = d.Spec.(IssueExporter)
		}
		if exporter == nil {
			exporter = noExporter{}
		}
		err = river.AddWorkerSafely(workers, &ExportIssuesWorker{Spec: exporter, Logger: d.Logger})
	}
	if err != nil {
		return nil, err
	}
	if d.Publishing != nil {
		if err := river.AddWorkerSafely(workers, &PublishContentWorker{Content: d.Publishing}); err != nil {
			return nil, err
		}
	}
	return workers, nil
}

// Kinds returns the kinds of the jobs NewWorkers works: the values the job
// queue's metrics name in their kind label (queue.Config.Kinds).
func Kinds() []string {
	return []string{
		identity.PruneTokensArgs{}.Kind(),
		assistant.ExpireConfirmationsArgs{}.Kind(),
		assistant.FailLostTurnsArgs{}.Kind(),
		PruneIdempotencyArgs{}.Kind(),
		PruneUsageKeysArgs{}.Kind(),
		spec.GenerateStageArgs{}.Kind(),
		scm.ProcessDeliveryArgs{}.Kind(),
		scm.ProcessDeliveriesArgs{}.Kind(),
		content.GenerateContentArgs{}.Kind(),
		voice.MeterCallArgs{}.Kind(),
		spec.ExportIssuesArgs{}.Kind(),
		content.PublishContentArgs{}.Kind(),
		PruneWebhookDeliveriesArgs{}.Kind(),
		PruneWebhookDigestsArgs{}.Kind(),
		PruneStreamEventsArgs{}.Kind(),
		PruneInvitationsArgs{}.Kind(),
		PruneOAuthStatesArgs{}.Kind(),
		PruneRateWindowsArgs{}.Kind(),
		PruneCostCacheArgs{}.Kind(),
		PruneSCMActivityArgs{}.Kind(),
		PruneAuditLogArgs{}.Kind(),
	}
}

// PeriodicJobs returns the maintenance jobs the worker host enqueues on a
// schedule, and once when a process becomes the queue's leader.
func PeriodicJobs() []*river.PeriodicJob {
	jobs := []*river.PeriodicJob{
		periodic(PruneTokensEvery, identity.PruneTokensArgs{}),
		periodic(ExpireConfirmationsEvery, assistant.ExpireConfirmationsArgs{}),
		periodic(FailLostTurnsEvery, assistant.FailLostTurnsArgs{}),
		periodic(PruneIdempotencyEvery, PruneIdempotencyArgs{}),
		periodic(PruneUsageKeysEvery, PruneUsageKeysArgs{}),
	}
	for _, args := range retentionArgs {
		jobs = append(jobs, periodic(RetentionEvery, args))
	}
	return jobs
}

func periodic(every time.Duration, args river.JobArgs) *river.PeriodicJob {
	return river.NewPeriodicJob(
		river.PeriodicInterval(every),
		func() (river.JobArgs, *river.InsertOpts) { return args, nil },
		&river.PeriodicJobOpts{ID: args.Kind(), RunOnStart: true},
	)
}

// SweepWorker works a maintenance job of kind T: it calls Sweep and logs how
// many records it changed.
type SweepWorker[T river.JobArgs] struct {
	river.WorkerDefaults[T]
	Sweep  func(ctx context.Context) (int, error)
	Did    string       // what the log line says was done, e.g. "pruned API tokens"
	Logger *slog.Logger // nil means slog.Default()
}

// Work runs the sweep and logs how many records it changed, at info level,
// or at debug when none. It returns the sweep's error, so River retries the
// job.
func (w *SweepWorker[T]) Work(ctx context.Context, job *river.Job[T]) error {
	n, err := w.Sweep(ctx)
	if err != nil {
		return err
	}
	level := slog.LevelInfo
	if n == 0 {
		level = slog.LevelDebug
	}
	cmp.Or(w.Logger, slog.Default()).Log(ctx, level, w.Did, slog.Int("count", n), slog.Int64("job_id", job.ID))
	return nil
}

// Every attempt of a job is bounded by the queue's job timeout
// (queue.JobTimeout of the rescue bound), which is less than the time after
// which another process takes a running job for abandoned, so no worker here
// sets a timeout of its own.

// interrupted reports whether job was taken up again after its last attempt
// was interrupted (its process died while working it; see queue.Rescue):
// its attempt count is then past MaxAttempts.
func interrupted(row *rivertype.JobRow) bool { return row.Attempt > row.MaxAttempts }

// GenerationAttempt bounds an attempt at a generation job so that the work
// is decided (ready, or failed with a reason) within budget of the job's
// creation, when the session or item became generating. An attempt that
// starts in the first half of the budget may be retried and ends by its
// middle; one that starts in the second half is the last (final) and ends
// with the budget. A job taken up past its budget, after its process was
// down that long, gets one last attempt bounded by the queue's job timeout
// alone. budget 0 bounds nothing: final is the last attempt.
func GenerationAttempt(ctx context.Context, row *rivertype.JobRow, budget time.Duration, now time.Time) (_ context.Context, cancel context.CancelFunc, final bool) {
	final = row.Attempt >= row.MaxAttempts
	if budget <= 0 {
		return ctx, func() {}, final
	}
	half, end := row.CreatedAt.Add(budget/2), row.CreatedAt.Add(budget)
	switch {
	case now.Before(half):
		ctx, cancel = context.WithDeadline(ctx, half)
	case now.Before(end):
		ctx, cancel = context.WithDeadline(ctx, end)
		final = true
	default:
		return ctx, func() {}, true
	}
	return ctx, cancel, final
}

// generationRetry is when a generation attempt that failed for a transient
// reason runs again: soon, so that it still runs within its budget (River's
// default waits attempt⁴ seconds).
func generationRetry(row *rivertype.JobRow) time.Time {
	return time.Now().Add(min(time.Duration(1)<<min(row.Attempt, 5)*time.Second, 30*time.Second))
}

// GenerateStageWorker works spec.GenerateStageArgs jobs: it generates the
// stage, telling the core whether this is the last attempt, so a transient
// model failure is retried by the queue and only the last one fails the
// session. A job whose last attempt was interrupted fails the session.
type GenerateStageWorker struct {
	river.WorkerDefaults[spec.GenerateStageArgs]
	Spec StageGenerator
	// Budget bounds the generation; see GenerationAttempt.
	Budget time.Duration
}

// Work generates the stage; an error makes River retry the job.
func (w *GenerateStageWorker) Work(ctx context.Context, job *river.Job[spec.GenerateStageArgs]) error {
	if interrupted(job.JobRow) {
		return w.Spec.AbandonGeneration(ctx, job.Args)
	}
	ctx, cancel, final := GenerationAttempt(ctx, job.JobRow, w.Budget, time.Now())
	defer cancel()
	return w.Spec.RunGeneration(ctx, job.Args, final)
}

// NextRetry retries a transient failure within seconds.
func (w *GenerateStageWorker) NextRetry(job *river.Job[spec.GenerateStageArgs]) time.Time {
	return generationRetry(job.JobRow)
}

// ProcessDeliveryWorker works scm.ProcessDeliveryArgs jobs: a stored webhook
// delivery becomes repository activity.
type ProcessDeliveryWorker struct {
	river.WorkerDefaults[scm.ProcessDeliveryArgs]
	SCM DeliveryProcessor
	// Logger receives a warning for a delivery given up; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Work processes the delivery. A transient error (see ports.Transient)
// makes River retry the job, with backoff; any other gives the job up at
// once (river.JobCancel), as trying again would fail the same way.
func (w *ProcessDeliveryWorker) Work(ctx context.Context, job *river.Job[scm.ProcessDeliveryArgs]) error {
	err := w.SCM.ProcessDelivery(ctx, job.Args.DeliveryID)
	if err == nil || ports.Transient(err) {
		return err
	}
	cmp.Or(w.Logger, slog.Default()).WarnContext(ctx, "webhook delivery given up: processing it failed for good",
		slog.String("delivery_id", job.Args.DeliveryID), slog.Int64("job_id", job.ID), slog.Any("err", err))
	return river.JobCancel(err)
}

// ProcessDeliveriesWorker works scm.ProcessDeliveriesArgs jobs: the webhook
// deliveries stored together become repository activity, together.
type ProcessDeliveriesWorker struct {
	river.WorkerDefaults[scm.ProcessDeliveriesArgs]
	SCM DeliveryProcessor
	// Logger receives a warning for a batch given up; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Work processes the batch. A transient error (see ports.Transient) makes
// River retry the whole job, with backoff (the core adds nothing twice);
// any other gives the job up at once (river.JobCancel), as trying again
// would fail the same way. A delivery whose payload is unusable does not
// fail the job: the core marks it failed.
func (w *ProcessDeliveriesWorker) Work(ctx context.Context, job *river.Job[scm.ProcessDeliveriesArgs]) error {
	err := w.SCM.ProcessDeliveries(ctx, job.Args.DeliveryIDs)
	if err == nil || ports.Transient(err) {
		return err
	}
	cmp.Or(w.Logger, slog.Default()).WarnContext(ctx, "webhook deliveries given up: processing them failed for good",
		slog.Int("deliveries", len(job.Args.DeliveryIDs)), slog.Any("delivery_ids", job.Args.DeliveryIDs),
		slog.Int64("job_id", job.ID), slog.Any("err", err))
	return river.JobCancel(err)
}

// GenerateContentWorker works content.GenerateContentArgs jobs: it drafts
// the item, telling the core whether this is the last attempt, so a
// transient model failure is retried and only the last one fails the item.
// A job whose last attempt was interrupted fails the item.
type GenerateContentWorker struct {
	river.WorkerDefaults[content.GenerateContentArgs]
	Content ContentGenerator
	// Budget bounds the generation; see GenerationAttempt.
	Budget time.Duration
}

// Work drafts the item; an error makes River retry the job.
func (w *GenerateContentWorker) Work(ctx context.Context, job *river.Job[content.GenerateContentArgs]) error {
	if interrupted(job.JobRow) {
		return w.Content.AbandonGeneration(ctx, job.Args)
	}
	ctx, cancel, final := GenerationAttempt(ctx, job.JobRow, w.Budget, time.Now())
	defer cancel()
	return w.Content.RunGeneration(ctx, job.Args, final)
}

// NextRetry retries a transient failure within seconds.
func (w *GenerateContentWorker) NextRetry(job *river.Job[content.GenerateContentArgs]) time.Time {
	return generationRetry(job.JobRow)
}

// MeterCallWorker works voice.MeterCallArgs jobs: it records the token usage
// of a realtime call while the call lasts, which may be longer than one
// attempt may run (the queue's job timeout). An attempt whose time runs out
// (or whose worker stops) while the call goes on snoozes the job, which
// joins the call again at once without using an attempt; each response is
// recorded once however often it is seen. A failed attempt is retried
// within seconds, as the call goes on meanwhile; an invalid one (a store
// refusing the record) gives the job up.
type MeterCallWorker struct {
	river.WorkerDefaults[voice.MeterCallArgs]
	Voice CallMeter
	// Logger receives a warning for a call whose metering is given up; nil
	// means slog.Default().
	Logger *slog.Logger
}

// Work meters the call until it ends, or snoozes the job when the attempt
// runs out of time first.
func (w *MeterCallWorker) Work(ctx context.Context, job *river.Job[voice.MeterCallArgs]) error {
	err := w.Voice.MeterCall(ctx, job.Args)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return river.JobSnooze(0)
	case ports.KindOf(err) == ports.KindInvalid:
		cmp.Or(w.Logger, slog.Default()).WarnContext(ctx, "metering a realtime call given up",
			slog.String("call_id", job.Args.CallID), slog.Int64("job_id", job.ID), slog.Any("err", err))
		return river.JobCancel(err)
	}
	return err
}

// ExportIssuesWorker works spec.ExportIssuesArgs jobs: a specification
// exported to repository issues. A rate limit snoozes the job until it
// lifts, without counting an attempt (the export resumes where it
// stopped); another transient failure is retried, and the last attempt
// fails the export. A job whose last attempt was interrupted fails it.
type ExportIssuesWorker struct {
	river.WorkerDefaults[spec.ExportIssuesArgs]
	Spec IssueExporter
	// Logger receives a line per snooze; nil means slog.Default().
	Logger *slog.Logger
}

// maxSnooze bounds one wait for a rate limit.
const maxSnooze = time.Hour

// Work exports the specification.
func (w *ExportIssuesWorker) Work(ctx context.Context, job *river.Job[spec.ExportIssuesArgs]) error {
	if interrupted(job.JobRow) {
		return w.Spec.AbandonIssueExport(ctx, job.Args)
	}
	err := w.Spec.RunIssueExport(ctx, job.Args, job.Attempt >= job.MaxAttempts)
	if e, ok := ports.AsError(err); ok && e.Kind == ports.KindRateLimited {
		wait := min(max(e.RetryAfter, time.Second), maxSnooze)
		cmp.Or(w.Logger, slog.Default()).InfoContext(ctx, "issue export snoozed by a rate limit",
			slog.String("export_id", job.Args.ExportID), slog.Duration("wait", wait), slog.Int64("job_id", job.ID))
		return river.JobSnooze(wait)
	}
	return err
}

// NextRetry retries a failed attempt at once, then after a quarter of a
// second, doubling up to 15 seconds: the call goes on meanwhile.
func (w *MeterCallWorker) NextRetry(job *river.Job[voice.MeterCallArgs]) time.Time {
	return time.Now().Add(min(250*time.Millisecond<<min(max(job.Attempt-1, 0), 6), 15*time.Second))
}

// NextRetry retries a transient failure within seconds.
func (w *ExportIssuesWorker) NextRetry(job *river.Job[spec.ExportIssuesArgs]) time.Time {
	return generationRetry(job.JobRow)
}

// noExporter gives up every export: no exporter is wired.
type noExporter struct{}

func (noExporter) RunIssueExport(context.Context, spec.ExportIssuesArgs, bool) error {
	return river.JobCancel(errors.New("worker: no issue exporter is configured"))
}

func (noExporter) AbandonIssueExport(context.Context, spec.ExportIssuesArgs) error { return nil }

// PublishContentWorker works content.PublishContentArgs jobs: it publishes
// the publication, telling the core whether this is the last run (also
// when the last run was interrupted), so only the last one records a
// failure that might pass.
type PublishContentWorker struct {
	river.WorkerDefaults[content.PublishContentArgs]
	Content ContentPublishing
}

// Work publishes; an error makes River retry the job.
func (w *PublishContentWorker) Work(ctx context.Context, job *river.Job[content.PublishContentArgs]) error {
	return w.Content.RunPublication(ctx, job.Args, job.Attempt >= job.MaxAttempts)
}

// NextRetry runs the job again after 10 s, then 40 s: its runs already
// back off between their tries.
func (w *PublishContentWorker) NextRetry(job *river.Job[content.PublishContentArgs]) time.Time {
	return time.Now().Add(time.Duration(job.Attempt*job.Attempt) * 10 * time.Second)
}
