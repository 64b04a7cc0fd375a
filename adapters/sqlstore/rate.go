package sqlstore

import (
	"context"
	"time"

	"github.com/devpilot/devpilot/ports"
)

var _ ports.RateStore = (*Rates)(nil)

// Rates counts requests per key in fixed windows, in the rate_windows table
// every replica shares; it implements ports.RateStore, with the errors that
// port documents.
type Rates struct {
	db *DB
}

// NewRates returns the rate store over db.
func NewRates(db *DB) *Rates { return &Rates{db: db} }

// TakeRate implements ports.RateStore with one INSERT … ON CONFLICT DO
// UPDATE … RETURNING: the key's row counts on in its window, or starts
// again at 1 when now is in a later window than the row's (a take from a
// replica whose clock is behind counts in the newer window). The row is
// the key's only one; the rows of keys no longer used are deleted by
// Retention.PruneRateWindows. The count is a
// relaxed write: a crash of the database may forget the last counts,
// which only lets a few requests more through.
func (s *Rates) TakeRate(ctx context.Context, key string, window time.Duration, limit int, now time.Time) (bool, time.Duration, error) {
	if err := ports.CheckRateTake(key, window, limit); err != nil {
		return false, 0, err
	}
	start, _ := ports.RateWindow(window, now)
	var row struct {
		Start int64 `db:"window_start"`
		N     int64 `db:"n"`
	}
	err := s.db.writeRelaxed(ctx).get(ctx, &row, `INSERT INTO rate_windows (rate_key, window_start, n) VALUES (?, ?, 1)
		ON CONFLICT (rate_key) DO UPDATE SET
			n = CASE WHEN excluded.window_start > rate_windows.window_start THEN 1 ELSE rate_windows.n + 1 END,
			window_start = CASE WHEN excluded.window_start > rate_windows.window_start
				THEN excluded.window_start ELSE rate_windows.window_start END
		RETURNING window_start, n`, key, start.UnixMilli())
	if err != nil {
		return false, 0, storeErr(err, "rate window", key)
	}
	left := time.UnixMilli(row.Start).Add(window).Sub(now)
	return row.N <= int64(limit), max(left, 0), nil
}
