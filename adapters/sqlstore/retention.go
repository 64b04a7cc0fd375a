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

// pruneBatch deletes at most limit rows of table chosen by from and where,
// in one statement: from names table with the alias t (joins may follow),
// where is a condition on it, and key are table's primary key columns. On
// PostgreSQL it deletes by primary key from a SELECT … LIMIT … FOR UPDATE
// OF t SKIP LOCKED, so rows another transaction holds are left for the
// next sweep rather than waited for; on SQLite by rowid from a SELECT …
// LIMIT.
func (db *DB) pruneBatch(ctx context.Context, table string, key []string, from, where string, limit int, args ...any) (int, error) {
	if err := ports.CheckPruneLimit(limit); err != nil {
		return 0, err
	}
	var query string
	if db.Dialect == DialectPostgres {
		cols := make([]string, len(key))
		for i, k := range key {
			cols[i] = "t." + k
		}
		query = "DELETE FROM " + table + " WHERE (" + strings.Join(key, ", ") + ") IN (SELECT " + strings.Join(cols, ", ") +
			" FROM " + from + " WHERE " + where + " LIMIT ? FOR UPDATE OF t SKIP LOCKED)"
	} else {
		query = "DELETE FROM " + table + " WHERE rowid IN (SELECT t.rowid FROM " + from + " WHERE " + where + " LIMIT ?)"
	}
	n, err := db.write(ctx).exec(ctx, query, append(args, limit)...)
	if err != nil {
		return 0, storeErr(err, "expired "+strings.ReplaceAll(table, "_", " "), "")
	}
	return int(n), nil
}

// PruneWebhookDeliveries implements ports.RetentionStore.
func (s *Retention) PruneWebhookDeliveries(ctx context.Context, processedBefore time.Time, limit int) (int, error) {
	return s.db.pruneBatch(ctx, "webhook_deliveries", []string{"id"}, "webhook_deliveries t",
		"t.status <> 'pending' AND t.processed_at < ?", limit, timestamp(processedBefore))
}

// PruneWebhookDigests implements ports.RetentionStore.
func (s *Retention) PruneWebhookDigests(ctx context.Context, recordedBefore time.Time, limit int) (int, error) {
	return s.db.pruneBatch(ctx, "webhook_digests", []string{"digest"}, "webhook_digests t",
		"t.received_at < ?", limit, timestamp(recordedBefore))
}

// PruneStreamEvents implements ports.RetentionStore. It walks the events
// by creation time (an event is created before its turn ends), joins each
// to its turn by the turns' primary key, and finds the session's last
// event and pending confirmations by the indexes that lead with the
// session.
func (s *Retention) PruneStreamEvents(ctx context.Context, endedBefore time.Time, limit int) (int, error) {
	return s.db.pruneBatch(ctx, "stream_events", []string{"session_id", "seq"},
		"stream_events t JOIN turns u ON u.id = t.turn_id",
		`t.created_at < ? AND u.ended_at IS NOT NULL AND u.ended_at < ?
			AND t.seq < (SELECT MAX(l.seq) FROM stream_events l WHERE l.session_id = t.session_id)
			AND NOT EXISTS (SELECT 1 FROM confirmations c WHERE c.session_id = t.session_id AND c.status = 'pending')`,
		limit, timestamp(endedBefore), timestamp(endedBefore))
}

// PruneInvitations implements ports.RetentionStore.
func (s *Retention) PruneInvitations(ctx context.Context, expiredBefore time.Time, limit int) (int, error) {
	return s.db.pruneBatch(ctx, "invitations", []string{"id"}, "invitations t",
		"t.accepted_at IS NULL AND t.expires_at < ?", limit, timestamp(expiredBefore))
}

// PruneOAuthStates implements ports.RetentionStore.
func (s *Retention) PruneOAuthStates(ctx context.Context, expiredBefore time.Time, limit int) (int, error) {
	return s.db.pruneBatch(ctx, "oauth_states", []string{"state"}, "oauth_states t",
		"t.expires_at < ?", limit, timestamp(expiredBefore))
}

// PruneRateWindows implements ports.RetentionStore. The counts are
// relaxed writes (see Rates.TakeRate), so is their deletion.
func (s *Retention) PruneRateWindows(ctx context.Context, startedBefore time.Time, limit int) (int, error) {
	return s.db.pruneBatch(ctx, "rate_windows", []string{"rate_key"}, "rate_windows t",
		"t.window_start < ?", limit, startedBefore.UnixMilli())
}

// PruneCostCache implements ports.RetentionStore.
func (s *Retention) PruneCostCache(ctx context.Context, expiredBefore time.Time, limit int) (int, error) {
	return s.db.pruneBatch(ctx, "cost_cache", []string{"account_id", "cache_key"}, "cost_cache t",
		"t.expires_at < ?", limit, timestamp(expiredBefore))
}

// PruneSCMActivity implements ports.RetentionStore.
func (s *Retention) PruneSCMActivity(ctx context.Context, before time.Time, limit int) (int, error) {
	return s.db.pruneBatch(ctx, "scm_activity", []string{"id"}, "scm_activity t",
		"t.at < ?", limit, timestamp(before))
}

// PruneAuditLog implements ports.RetentionStore.
func (s *Retention) PruneAuditLog(ctx context.Context, before time.Time, limit int) (int, error) {
	return s.db.pruneBatch(ctx, "audit_log", []string{"id"}, "audit_log t",
		"t.at < ?", limit, timestamp(before))
}
