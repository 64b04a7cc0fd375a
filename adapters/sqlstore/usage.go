package sqlstore

import (
	"context"
	"time"

	"github.com/devpilot/devpilot/ports"
)

var _ ports.UsageStore = (*Usage)(nil)

// Usage keeps the tokens models used per organisation, user, model, feature
// and UTC day; it implements ports.UsageStore, with the errors that port
// documents.
type Usage struct {
	db *DB
}

// NewUsage returns the usage store over db.
func NewUsage(db *DB) *Usage { return &Usage{db: db} }

// dayLayout is how a day is stored: sortable text, alike in both dialects.
const dayLayout = time.DateOnly

// AddUsage implements ports.UsageStore with one INSERT … ON CONFLICT DO
// UPDATE that adds to the day's row, so concurrent adds all count. A record
// with a Key is added in a transaction that first inserts the key into
// usage_keys, and adds nothing when the key is there already (a concurrent
// insert of the same key waits for the first to commit, then finds it).
func (s *Usage) AddUsage(ctx context.Context, r ports.UsageRecord) error {
	if err := ports.CheckUsageRecord(r); err != nil {
		return err
	}
	if r.Key == "" {
		return s.add(ctx, r)
	}
	return s.db.WithinTx(ctx, func(ctx context.Context) error {
		n, err := s.db.write(ctx).exec(ctx, `INSERT INTO usage_keys (usage_key, day) VALUES (?, ?)
			ON CONFLICT (usage_key) DO NOTHING`, r.Key, r.Day.UTC().Format(dayLayout))
		if err != nil {
			return storeErr(err, "usage", "key "+r.Key)
		}
		if n == 0 {
			return nil // added before
		}
		return s.add(ctx, r)
	})
}

// add adds r to its day's row.
func (s *Usage) add(ctx context.Context, r ports.UsageRecord) error {
	_, err := s.db.write(ctx).exec(ctx, `INSERT INTO usage_daily
		(org_id, day, user_id, model, feature, prompt_tokens, completion_tokens, calls)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (org_id, day, user_id, model, feature) DO UPDATE SET
			prompt_tokens = usage_daily.prompt_tokens + excluded.prompt_tokens,
			completion_tokens = usage_daily.completion_tokens + excluded.completion_tokens,
			calls = usage_daily.calls + excluded.calls`,
		r.OrgID, r.Day.UTC().Format(dayLayout), r.UserID, r.Model, string(r.Feature),
		r.PromptTokens, r.CompletionTokens, r.Calls)
	return storeErr(err, "usage", "org "+r.OrgID)
}

// PruneUsageKeys implements ports.UsageStore, a batch at a time over the
// index of day (migration 00036), as Retention does.
func (s *Usage) PruneUsageKeys(ctx context.Context, before time.Time, limit int) (int, error) {
	return s.db.pruneBatch(ctx, pruneUsageKeys, limit, before.UTC().Format(dayLayout))
}

// usageKeys are the columns each grouping groups by.
var usageKeys = map[ports.UsageGroup]string{
	"": "''", ports.UsageByDay: "day", ports.UsageByModel: "model",
	ports.UsageByUser: "user_id", ports.UsageByFeature: "feature",
}

// SumUsage implements ports.UsageStore.
func (s *Usage) SumUsage(ctx context.Context, q ports.UsageQuery) ([]ports.UsageTotal, error) {
	key, ok := usageKeys[q.GroupBy]
	if !ok {
		return nil, ports.Invalid("unknown usage grouping", ports.FieldError{Field: "group_by", Reason: "must be day, model, user or feature"})
	}
	query := `SELECT ` + key + ` AS usage_key,
			CAST(SUM(prompt_tokens) AS BIGINT) AS prompt_tokens,
			CAST(SUM(completion_tokens) AS BIGINT) AS completion_tokens,
			CAST(SUM(calls) AS BIGINT) AS calls
		FROM usage_daily WHERE org_id = ? AND day >= ? AND day <= ?`
	args := []any{q.OrgID, q.From.UTC().Format(dayLayout), q.To.UTC().Format(dayLayout)}
	if q.UserID != "" {
		query += ` AND user_id = ?`
		args = append(args, q.UserID)
	}
	if q.GroupBy != "" {
		query += ` GROUP BY ` + key + ` ORDER BY ` + key
	} else {
		query += ` HAVING COUNT(*) > 0`
	}
	var rows []struct {
		Key              string `db:"usage_key"`
		PromptTokens     int64  `db:"prompt_tokens"`
		CompletionTokens int64  `db:"completion_tokens"`
		Calls            int64  `db:"calls"`
	}
	if err := s.db.read(ctx).list(ctx, &rows, query, args...); err != nil {
		return nil, storeErr(err, "usage", "org "+q.OrgID)
	}
	out := make([]ports.UsageTotal, 0, len(rows))
	for _, r := range rows {
		out = append(out, ports.UsageTotal{Key: r.Key, PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens, Calls: r.Calls})
	}
	return out, nil
}
