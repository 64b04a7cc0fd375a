package sqlstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
)

// On both databases: statements with arguments are kept prepared, a script
// of several statements still runs, and a statement that fails to prepare
// inside a transaction fails with its own error.
func TestStatementCacheOnEachDatabase(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		ctx := t.Context()
		pool := db.Writer
		pool.SetMaxOpenConns(1) // one connection, so the statements below meet
		if _, err := pool.ExecContext(ctx, "CREATE TABLE cache_probe (x INTEGER NOT NULL); CREATE TABLE cache_probe2 (y INTEGER)"); err != nil {
			t.Fatalf("a script of two statements: %v", err)
		}
		const insert = "INSERT INTO cache_probe (x) VALUES (?)"
		for i := range 5 {
			if _, err := pool.ExecContext(ctx, pool.Rebind(insert), i); err != nil {
				t.Fatal(err)
			}
		}
		var sum int
		if err := pool.GetContext(ctx, &sum, pool.Rebind("SELECT SUM(x) FROM cache_probe WHERE x >= ?"), 0); err != nil || sum != 10 {
			t.Fatalf("sum %d, %v", sum, err)
		}
		cached, err := sqlstore.CachedStatements(ctx, pool)
		if err != nil {
			t.Fatal(err)
		}
		if !cached[pool.Rebind(insert)] {
			t.Errorf("%q not kept prepared: %v", pool.Rebind(insert), cached)
		}

		tx, err := pool.BeginTxx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		_, err = tx.ExecContext(ctx, tx.Rebind("INSERT INTO no_such_table (x) VALUES (?)"), 1)
		if err == nil || errors.Is(err, context.Canceled) {
			t.Fatalf("insert into a missing table: %v", err)
		}
		if !strings.Contains(err.Error(), "no_such_table") {
			t.Errorf("the error does not name the table: %v", err)
		}
	})
}
