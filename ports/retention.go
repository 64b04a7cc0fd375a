package ports

//go:generate go tool mockgen -typed -destination ../testkit/mocks/retention.go -package mocks . RetentionStore

import (
	"context"
	"time"
)

// RetentionStore deletes the records that grow with traffic once they are
// past their retention, a bounded batch at a time: each method deletes at
// most limit records (limit > 0; invalid otherwise) and returns how many it
// deleted, so a sweep calls it again until it deletes fewer than limit. A
// batch never waits for records in use elsewhere (on PostgreSQL it skips
// the rows another transaction holds), nor deletes a record still in use:
// each method says which it keeps.
//
// The idempotency keys and the usage keys, which have stores of their own,
// are pruned the same way by IdempotencyStore.PruneIdempotency and
// UsageStore.PruneUsageKeys.
type RetentionStore interface {
	// PruneWebhookDeliveries deletes webhook deliveries processed (status
	// processed, ignored or failed) before the time given. A pending
	// delivery, not processed yet, is kept however old.
	PruneWebhookDeliveries(ctx context.Context, processedBefore time.Time, limit int) (int, error)
	// PruneWebhookDigests deletes the digests of webhook bodies recorded
	// before the time given (which should be before the replay window's
	// start: an older digest no longer stops a replay).
	PruneWebhookDigests(ctx context.Context, recordedBefore time.Time, limit int) (int, error)
	// PruneStreamEvents deletes the stream events of chat turns that ended
	// before the time given, keeping: every event of a turn still running
	// (or never ended), the last event of every session (whose Seq the next
	// turn counts on from, so that a client resuming after it misses
	// nothing), and every event of a session with a pending confirmation.
	PruneStreamEvents(ctx context.Context, endedBefore time.Time, limit int) (int, error)
	// PruneInvitations deletes the invitations never accepted that expired
	// (revoked ones included) before the time given. Accepted invitations,
	// the record of who invited a member, and unexpired ones are kept.
	PruneInvitations(ctx context.Context, expiredBefore time.Time, limit int) (int, error)
	// PruneOAuthStates deletes the OAuth states, never consumed, that
	// expired before the time given.
	PruneOAuthStates(ctx context.Context, expiredBefore time.Time, limit int) (int, error)
	// PruneRateWindows deletes the rate counts of the keys whose window
	// started before the time given (which should be at least the longest
	// window ago: the count of a window still open would start again).
	PruneRateWindows(ctx context.Context, startedBefore time.Time, limit int) (int, error)
	// PruneCostCache deletes the cached cost reports that expired before
	// the time given.
	PruneCostCache(ctx context.Context, expiredBefore time.Time, limit int) (int, error)
	// PruneSCMActivity deletes the repository activity that happened before
	// the time given.
	PruneSCMActivity(ctx context.Context, before time.Time, limit int) (int, error)
	// PruneAuditLog deletes the audit entries recorded before the time
	// given.
	PruneAuditLog(ctx context.Context, before time.Time, limit int) (int, error)
}

// CheckPruneLimit returns invalid unless limit, the size of a prune's batch,
// is positive.
func CheckPruneLimit(limit int) error {
	if limit <= 0 {
		return Invalid("the batch of a prune must be at least 1", FieldError{Field: "limit", Reason: "must be at least 1"})
	}
	return nil
}
