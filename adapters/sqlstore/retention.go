package sqlstore

import (
	"context"
	"strings"
	"time"

	"github.com/devpilot/devpilot/ports"
)

var _ ports.RetentionStore = (*Retention)(nil)

// Retention deletes the records past their retention, a batch at a time; it
// implements ports.RetentionStore. Each batch is one statement over an
// index of the retention's column (migration 00036), so it never scans a
// table, and holds the SQLite writer or the PostgreSQL rows only for the
// batch's length.
type Retention struct {
	db *DB
}

// NewRetention returns the retention store over db.
func NewRetention(db *DB) *Retention { return &Retention{db: db} }

// prune is a retention's delete: from names table with the alias t (joins
// may follow), where is a condition on it with the arguments the caller
// gives, and key are table's primary key columns.
type prune struct {
	table string
	key   []string
	from  string
	where string
}

// The retentions' deletes, each over an index of its condition.
var (
	pruneDeliveries = prune{"webhook_deliveries", []string{"id"}, "webhook_deliveries t", "t.status <> 'pending' AND t.processed_at < ?"}
	pruneDigests    = prune{"webhook_digests", []string{"digest"}, "webhook_digests t", "t.received_at < ?"}
	// The events are walked by creation time (an event is created before
	// its turn ends), each joined to its turn by the turns' primary key;
	// the session's last event and pending confirmations are found by the
	// indexes that lead with the session.
	pruneEvents = prune{"stream_events", []string{"session_id", "seq"}, "stream_events t JOIN turns u ON u.id = t.turn_id",
		`t.created_at < ? AND u.ended_at IS NOT NULL AND u.ended_at < ?
			AND t.seq < (SELECT MAX(l.seq) FROM stream_events l WHERE l.session_id = t.session_id)
			AND NOT EXISTS (SELECT 1 FROM confirmations c WHERE c.session_id = t.session_id AND c.status = 'pending')`}
	pruneInvitations = prune{"invitations", []string{"id"}, "invitations t", "t.accepted_at IS NULL AND t.expires_at < ?"}
	pruneStates      = prune{"oauth_states", []string{"state"}, "oauth_states t", "t.expires_at < ?"}
	pruneRates       = prune{"rate_windows", []string{"rate_key"}, "rate_windows t", "t.window_start < ?"}
	pruneCosts       = prune{"cost_cache", []string{"account_id", "cache_key"}, "cost_cache t", "t.expires_at < ?"}
	pruneActivity    = prune{"scm_activity", []string{"id"}, "scm_activity t", "t.at < ?"}
	pruneAudit       = prune{"audit_log", []string{"id"}, "audit_log t", "t.at < ?"}
	pruneIdempotency = prune{"idempotency_keys", []string{"org_id", "user_id", "idempotency_key"}, "idempotency_keys t", "t.expires_at <= ?"}
	pruneUsageKeys   = prune{"usage_keys", []string{"usage_key"}, "usage_keys t", "t.day < ?"}
)

// pick is the SELECT of the rows a batch of p deletes: their primary key
// on PostgreSQL, their rowid on SQLite.
func (p prune) pick(d Dialect) string {
	if d != DialectPostgres {
		return "SELECT t.rowid FROM " + p.from + " WHERE " + p.where + " LIMIT ?"
	}
	cols := make([]string, len(p.key))
	for i, k := range p.key {
		cols[i] = "t." + k
	}
	return "SELECT " + strings.Join(cols, ", ") + " FROM " + p.from + " WHERE " + p.where + " LIMIT ? FOR UPDATE OF t SKIP LOCKED"
}

// pruneBatch deletes at most limit rows of p in one statement. On
// PostgreSQL it deletes by primary key from a SELECT … LIMIT … FOR UPDATE
// OF t SKIP LOCKED, so rows another transaction holds are left for the
// next sweep rather than waited for; on SQLite by rowid from a SELECT …
// LIMIT.
func (db *DB) pruneBatch(ctx context.Context, p prune, limit int, args ...any) (int, error) {
	if err := ports.CheckPruneLimit(limit); err != nil {
		return 0, err
	}
	query := "DELETE FROM " + p.table + " WHERE rowid IN (" + p.pick(db.Dialect) + ")"
	if db.Dialect == DialectPostgres {
		query = "DELETE FROM " + p.table + " WHERE (" + strings.Join(p.key, ", ") + ") IN (" + p.pick(db.Dialect) + ")"
	}
	n, err := db.write(ctx).exec(ctx, query, append(args, limit)...)
	if err != nil {
		return 0, storeErr(err, "expired "+strings.ReplaceAll(p.table, "_", " "), "")
	}
	return int(n), nil
}

// PruneWebhookDeliveries implements ports.RetentionStore.
func (s *Retention) PruneWebhookDeliveries(ctx context.Context, processedBefore time.Time, limit int) (int, error) {
	return s.db.pruneBatch(ctx, pruneDeliveries, limit, timestamp(processedBefore))
}

// PruneWebhookDigests implements ports.RetentionStore.
func (s *Retention) PruneWebhookDigests(ctx context.Context, recordedBefore time.Time, limit int) (int, error) {
	return s.db.pruneBatch(ctx, pruneDigests, limit, timestamp(recordedBefore))
}

// PruneStreamEvents implements ports.RetentionStore.
func (s *Retention) PruneStreamEvents(ctx context.Context, endedBefore time.Time, limit int) (int, error) {
	return s.db.pruneBatch(ctx, pruneEvents, limit, timestamp(endedBefore), timestamp(endedBefore))
}

// PruneInvitations implements ports.RetentionStore.
func (s *Retention) PruneInvitations(ctx context.Context, expiredBefore time.Time, limit int) (int, error) {
	return s.db.pruneBatch(ctx, pruneInvitations, limit, timestamp(expiredBefore))
}

// PruneOAuthStates implements ports.RetentionStore.
func (s *Retention) PruneOAuthStates(ctx context.Context, expiredBefore time.Time, limit int) (int, error) {
	return s.db.pruneBatch(ctx, pruneStates, limit, timestamp(expiredBefore))
}

// PruneRateWindows implements ports.RetentionStore.
func (s *Retention) PruneRateWindows(ctx context.Context, startedBefore time.Time, limit int) (int, error) {
	return s.db.pruneBatch(ctx, pruneRates, limit, startedBefore.UnixMilli())
}

// PruneCostCache implements ports.RetentionStore.
func (s *Retention) PruneCostCache(ctx context.Context, expiredBefore time.Time, limit int) (int, error) {
	return s.db.pruneBatch(ctx, pruneCosts, limit, timestamp(expiredBefore))
}

// PruneSCMActivity implements ports.RetentionStore.
func (s *Retention) PruneSCMActivity(ctx context.Context, before time.Time, limit int) (int, error) {
	return s.db.pruneBatch(ctx, pruneActivity, limit, timestamp(before))
}

// PruneAuditLog implements ports.RetentionStore.
func (s *Retention) PruneAuditLog(ctx context.Context, before time.Time, limit int) (int, error) {
	return s.db.pruneBatch(ctx, pruneAudit, limit, timestamp(before))
}
