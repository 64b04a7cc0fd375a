package sqlstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
)

func TestMain(m *testing.M) {
	sqlstoretest.Main(m)
}

// Revocations can be watched on PostgreSQL (storetest.TestIdentity checks
// what is reported); SQLite says it cannot watch.
func TestWatchRevocationsSupport(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		err := sqlstore.NewIdentity(db).WatchRevocations(ctx, func(string) {}, func() {})
		if unsupported := errors.Is(err, errors.ErrUnsupported); unsupported != (db.Dialect == sqlstore.DialectSQLite) {
			t.Errorf("WatchRevocations on %s: %v", db.Dialect, err)
		}
	})
}
