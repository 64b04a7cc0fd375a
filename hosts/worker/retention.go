package worker

import (
	"cmp"
	"context"
	"errors"
	"time"

	"github.com/riverqueue/river"

	"github.com/devpilot/devpilot/ports"
)

// RetentionOff, as a Retention duration, turns that retention off: the
// records are kept forever.
const RetentionOff time.Duration = -1

// Retention is how long the records that grow with traffic are kept, each
// from the moment its field names; records older are deleted by a sweep that
// runs every RetentionEvery (the usage keys' every PruneUsageKeysEvery). A
// zero field takes its DefaultRetention, RetentionOff keeps the records
// forever. The queue's finished jobs are River's to delete (queue.Config's
// job retention).
type Retention struct {
	// WebhookDeliveries: from processing (pending deliveries are kept).
	WebhookDeliveries time.Duration
	// WebhookDigests: from receipt; at least the replay window
	// (scm.Config.ReplayWindow), within which a digest stops a replay.
	WebhookDigests time.Duration
	// StreamEvents: from the end of their chat turn (the events of a turn
	// running, a session's last event and the events of a session with a
	// pending confirmation are kept): how long a client may still resume
	// a finished stream.
	StreamEvents time.Duration
	// Invitations: from expiry (accepted invitations are kept).
	Invitations time.Duration
	// OAuthStates: from expiry.
	OAuthStates time.Duration
	// RateWindows: from the start of a key's last window; at least the
	// longest rate window.
	RateWindows time.Duration
	// CostCache: from expiry.
	CostCache time.Duration
	// SCMActivity: from when it happened.
	SCMActivity time.Duration
	// AuditLog: from when it was recorded; off by default.
	AuditLog time.Duration
	// IdempotencyKeys: from expiry; 0 (the default) deletes them once
	// expired.
	IdempotencyKeys time.Duration
	// UsageKeys: from the day the record was added (UsageKeysKept).
	UsageKeys time.Duration
}

// day is 24 hours.
const day = 24 * time.Hour

// DefaultRetention is the retention of each record that Retention leaves
// zero.
var DefaultRetention = Retention{
	WebhookDeliveries: 14 * day,
	WebhookDigests:    2 * day,
	StreamEvents:      day,
	Invitations:       30 * day,
	OAuthStates:       day,
	RateWindows:       day,
	CostCache:         day,
	SCMActivity:       90 * day,
	AuditLog:          RetentionOff,
	IdempotencyKeys:   0,
	UsageKeys:         UsageKeysKept,
}

// withDefaults returns r with each zero field set to its default.
func (r Retention) withDefaults() Retention {
	d := DefaultRetention
	return Retention{
		WebhookDeliveries: cmp.Or(r.WebhookDeliveries, d.WebhookDeliveries),
		WebhookDigests:    cmp.Or(r.WebhookDigests, d.WebhookDigests),
		StreamEvents:      cmp.Or(r.StreamEvents, d.StreamEvents),
		Invitations:       cmp.Or(r.Invitations, d.Invitations),
		OAuthStates:       cmp.Or(r.OAuthStates, d.OAuthStates),
		RateWindows:       cmp.Or(r.RateWindows, d.RateWindows),
		CostCache:         cmp.Or(r.CostCache, d.CostCache),
		SCMActivity:       cmp.Or(r.SCMActivity, d.SCMActivity),
		AuditLog:          cmp.Or(r.AuditLog, d.AuditLog),
		IdempotencyKeys:   cmp.Or(r.IdempotencyKeys, d.IdempotencyKeys),
		UsageKeys:         cmp.Or(r.UsageKeys, d.UsageKeys),
	}
}

// RetentionEvery is how often each retention sweep runs.
const RetentionEvery = time.Hour

// DefaultRetentionBatch is how many records one statement of a retention
// sweep deletes, and DefaultRetentionPause how long the sweep waits before
// the next, so that the writes of intake (webhooks, chat events) go
// between two batches rather than wait for a sweep.
const (
	DefaultRetentionBatch = 1000
	DefaultRetentionPause = 20 * time.Millisecond
)

// The retention sweeps' jobs, one per table; each deletes its table's
// records past their Retention.
type (
	// PruneWebhookDeliveriesArgs deletes processed webhook deliveries.
	PruneWebhookDeliveriesArgs struct{}
	// PruneWebhookDigestsArgs deletes the digests of old webhook bodies.
	PruneWebhookDigestsArgs struct{}
	// PruneStreamEventsArgs deletes the stream events of finished turns.
	PruneStreamEventsArgs struct{}
	// PruneInvitationsArgs deletes expired invitations never accepted.
	PruneInvitationsArgs struct{}
	// PruneOAuthStatesArgs deletes expired OAuth states.
	PruneOAuthStatesArgs struct{}
	// PruneRateWindowsArgs deletes the rate counts of unused keys.
	PruneRateWindowsArgs struct{}
	// PruneCostCacheArgs deletes expired cost reports.
	PruneCostCacheArgs struct{}
	// PruneSCMActivityArgs deletes old repository activity.
	PruneSCMActivityArgs struct{}
	// PruneAuditLogArgs deletes old audit entries (off by default).
	PruneAuditLogArgs struct{}
)

// Kind names the job for the queue.
func (PruneWebhookDeliveriesArgs) Kind() string { return "retention.webhook_deliveries" }

// Kind names the job for the queue.
func (PruneWebhookDigestsArgs) Kind() string { return "retention.webhook_digests" }

// Kind names the job for the queue.
func (PruneStreamEventsArgs) Kind() string { return "retention.stream_events" }

// Kind names the job for the queue.
func (PruneInvitationsArgs) Kind() string { return "retention.invitations" }

// Kind names the job for the queue.
func (PruneOAuthStatesArgs) Kind() string { return "retention.oauth_states" }

// Kind names the job for the queue.
func (PruneRateWindowsArgs) Kind() string { return "retention.rate_windows" }

// Kind names the job for the queue.
func (PruneCostCacheArgs) Kind() string { return "retention.cost_cache" }

// Kind names the job for the queue.
func (PruneSCMActivityArgs) Kind() string { return "retention.scm_activity" }

// Kind names the job for the queue.
func (PruneAuditLogArgs) Kind() string { return "retention.audit_log" }

// retentionArgs are the jobs of the retention sweeps of RetentionStore, in
// the order of Kinds and PeriodicJobs.
var retentionArgs = []river.JobArgs{
	PruneWebhookDeliveriesArgs{}, PruneWebhookDigestsArgs{}, PruneStreamEventsArgs{}, PruneInvitationsArgs{},
	PruneOAuthStatesArgs{}, PruneRateWindowsArgs{}, PruneCostCacheArgs{}, PruneSCMActivityArgs{}, PruneAuditLogArgs{},
}

// Drain calls prune with limit batch until it deletes fewer than batch
// records, waiting pause between two calls, and returns how many it deleted
// in all. It stops, with ctx's error, when ctx ends between two calls; and
// with prune's error, which the records deleted before it survive.
func Drain(ctx context.Context, batch int, pause time.Duration, prune func(ctx context.Context, limit int) (int, error)) (int, error) {
	total := 0
	for {
		n, err := prune(ctx, batch)
		total += n
		if err != nil || n < batch {
			return total, err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return total, ctx.Err()
		case <-t.C:
		}
	}
}

// sweeper makes the sweeps of the records past their retention.
type sweeper struct {
	keep  Retention
	now   func() time.Time
	batch int
	pause time.Duration
}

// sweep returns the sweep that deletes the records kept longer than keep,
// calling prune with the time before which they go; a sweep whose
// retention is off deletes nothing.
func (s sweeper) sweep(keep time.Duration, prune func(ctx context.Context, before time.Time, limit int) (int, error)) func(context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		if keep < 0 {
			return 0, nil
		}
		before := s.now().Add(-keep)
		return Drain(ctx, s.batch, s.pause, func(ctx context.Context, limit int) (int, error) {
			return prune(ctx, before, limit)
		})
	}
}

// addRetentionWorkers registers the sweep of each table of store.
func addRetentionWorkers(workers *river.Workers, s sweeper, store ports.RetentionStore, d Deps) error {
	k := s.keep
	return errors.Join(
		river.AddWorkerSafely(workers, &SweepWorker[PruneWebhookDeliveriesArgs]{Sweep: s.sweep(k.WebhookDeliveries, store.PruneWebhookDeliveries), Did: "deleted processed webhook deliveries", Logger: d.Logger}),
		river.AddWorkerSafely(workers, &SweepWorker[PruneWebhookDigestsArgs]{Sweep: s.sweep(k.WebhookDigests, store.PruneWebhookDigests), Did: "deleted webhook digests", Logger: d.Logger}),
		river.AddWorkerSafely(workers, &SweepWorker[PruneStreamEventsArgs]{Sweep: s.sweep(k.StreamEvents, store.PruneStreamEvents), Did: "deleted stream events of finished turns", Logger: d.Logger}),
		river.AddWorkerSafely(workers, &SweepWorker[PruneInvitationsArgs]{Sweep: s.sweep(k.Invitations, store.PruneInvitations), Did: "deleted expired invitations", Logger: d.Logger}),
		river.AddWorkerSafely(workers, &SweepWorker[PruneOAuthStatesArgs]{Sweep: s.sweep(k.OAuthStates, store.PruneOAuthStates), Did: "deleted expired OAuth states", Logger: d.Logger}),
		river.AddWorkerSafely(workers, &SweepWorker[PruneRateWindowsArgs]{Sweep: s.sweep(k.RateWindows, store.PruneRateWindows), Did: "deleted unused rate windows", Logger: d.Logger}),
		river.AddWorkerSafely(workers, &SweepWorker[PruneCostCacheArgs]{Sweep: s.sweep(k.CostCache, store.PruneCostCache), Did: "deleted expired cost reports", Logger: d.Logger}),
		river.AddWorkerSafely(workers, &SweepWorker[PruneSCMActivityArgs]{Sweep: s.sweep(k.SCMActivity, store.PruneSCMActivity), Did: "deleted old repository activity", Logger: d.Logger}),
		river.AddWorkerSafely(workers, &SweepWorker[PruneAuditLogArgs]{Sweep: s.sweep(k.AuditLog, store.PruneAuditLog), Did: "deleted old audit entries", Logger: d.Logger}),
	)
}
