package sqlstore

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"
)

// StoreErr exposes storeErr to the external tests.
var StoreErr = storeErr

// Timestamp exposes timestamp to the external tests.
type Timestamp = timestamp

// CachedStatements returns the statement texts one of the pool's
// connections keeps prepared.
func CachedStatements(ctx context.Context, pool *sqlx.DB) (map[string]bool, error) {
	conn, err := pool.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	out := map[string]bool{}
	err = conn.Raw(func(dc any) error {
		for q := range dc.(*cachingConn).stmts {
			out[q] = true
		}
		return nil
	})
	return out, err
}

// MigrateDownTo rolls db's schema back to version (its migrations' Down
// sections), for the tests of what a migration does to older rows.
func MigrateDownTo(ctx context.Context, db *DB, version int64) error {
	p, err := db.migrator(ctx, true)
	if err != nil {
		return err
	}
	_, err = p.DownTo(ctx, version)
	return err
}

// MigrateTo applies the pending migrations up to version and no further.
func MigrateTo(ctx context.Context, db *DB, version int64) error {
	p, err := db.migrator(ctx, true)
	if err != nil {
		return err
	}
	_, err = p.UpTo(ctx, version)
	return err
}

// PrunePicks returns, by table, the SELECT of the rows a retention batch
// deletes on db's dialect, with arguments of the right types.
func PrunePicks(db *DB) map[string]struct {
	Query string
	Args  []any
} {
	at := timestamp(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC))
	out := map[string]struct {
		Query string
		Args  []any
	}{}
	for _, p := range []struct {
		prune
		args []any
	}{
		{pruneDeliveries, []any{at}}, {pruneDigests, []any{at}}, {pruneEvents, []any{at, at}},
		{pruneInvitations, []any{at}}, {pruneStates, []any{at}}, {pruneRates, []any{int64(1)}},
		{pruneCosts, []any{at}}, {pruneActivity, []any{at}}, {pruneAudit, []any{at}},
		{pruneIdempotency, []any{at}}, {pruneUsageKeys, []any{"2000-01-01"}},
	} {
		out[p.table] = struct {
			Query string
			Args  []any
		}{db.Writer.Rebind(p.pick(db.Dialect)), append(p.args, 1000)}
	}
	return out
}
