package sqlstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
)

// Every retention batch finds its rows by an index (migration 00036 and the
// primary keys), never by reading its whole table: on SQLite the plan has
// no SCAN; on PostgreSQL, with sequential scans priced out, no Seq Scan.
func TestRetentionUsesIndexes(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		for table, pick := range sqlstore.PrunePicks(db) {
			var plan []string
			err := db.WithinTx(t.Context(), func(ctx context.Context) error {
				tx, _ := sqlstore.TxFromContext(ctx)
				explain := "EXPLAIN QUERY PLAN "
				if db.Dialect == sqlstore.DialectPostgres {
					explain = "EXPLAIN "
					if _, err := tx.ExecContext(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
						return err
					}
				}
				rows, err := tx.QueryContext(ctx, explain+pick.Query, pick.Args...)
				if err != nil {
					return err
				}
				defer rows.Close()
				cols, _ := rows.Columns()
				for rows.Next() {
					vals := make([]any, len(cols))
					ptrs := make([]any, len(cols))
					for i := range vals {
						ptrs[i] = &vals[i]
					}
					if err := rows.Scan(ptrs...); err != nil {
						return err
					}
					line := ""
					for _, v := range vals {
						switch v := v.(type) {
						case string:
							line += v + " "
						case []byte:
							line += string(v) + " "
						}
					}
					plan = append(plan, line)
				}
				return rows.Err()
			})
			if err != nil {
				t.Fatalf("%s: explain: %v", table, err)
			}
			text := strings.Join(plan, "\n")
			if strings.Contains(text, "SCAN ") || strings.Contains(text, "Seq Scan") {
				t.Errorf("a retention batch of %s scans a table:\n%s", table, text)
			}
		}
	})
}

// Migration 00036 (its PostgreSQL indexes built CONCURRENTLY, outside a
// transaction) rolls back and applies again.
func TestRetentionIndexesMigrateDownAndUp(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		if err := sqlstore.MigrateDownTo(t.Context(), db, 35); err != nil {
			t.Fatalf("down to 35: %v", err)
		}
		if err := db.Migrate(t.Context()); err != nil {
			t.Fatalf("up again: %v", err)
		}
		if n, err := db.PendingMigrations(t.Context()); err != nil || n != 0 {
			t.Fatalf("PendingMigrations = %d, %v; want 0", n, err)
		}
	})
}
