package sqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/ports"
)

func TestOpenRejectsBadURLs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		url, want string
	}{
		{"", "must be postgres"},
		{"./data/devpilot.db", "must be postgres"},
		{"mysql://root@localhost/db", `unsupported database URL scheme "mysql"`},
		{"sqlite:", "no path"},
		{"sqlite::memory:", "must name a file path"},
		{"sqlite:file:x.db", "must name a file path"},
		{"sqlite:x.db?mode=ro", "must not carry parameters"},
		{"postgres://user:s3cret@localhost:port/db", "malformed postgres URL"},
		{"postgresql://localhost/db?sslmode=sometimes", "bad postgres URL"},
	} {
		db, err := sqlstore.Open(t.Context(), tc.url)
		if err == nil {
			db.Close()
			t.Errorf("Open(%q) succeeded, want an error", tc.url)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open(%q) = %q, want it to mention %q", tc.url, err, tc.want)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("Open(%q) = %q reveals the password", tc.url, err)
		}
	}
}

func openSQLite(t *testing.T, path string) *sqlstore.DB {
	t.Helper()
	db, err := sqlstore.Open(t.Context(), "sqlite:"+path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestSQLiteConnections(t *testing.T) {
	t.Parallel()
	db := openSQLite(t, filepath.Join(t.TempDir(), "nested", "dir", "devpilot.db"))
	if db.Dialect != sqlstore.DialectSQLite {
		t.Errorf("Dialect = %q", db.Dialect)
	}
	if n := db.Writer.Stats().MaxOpenConnections; n != 1 {
		t.Errorf("writer MaxOpenConnections = %d, want 1", n)
	}
	if n := db.Reader.Stats().MaxOpenConnections; n < 2 {
		t.Errorf("reader MaxOpenConnections = %d, want several", n)
	}
	for _, tc := range []struct {
		pool         string
		pragma, want string
	}{
		{"writer", "foreign_keys", "1"},
		{"writer", "journal_mode", "wal"},
		{"writer", "synchronous", "1"},
		{"writer", "busy_timeout", "5000"},
		{"writer", "query_only", "0"},
		{"reader", "foreign_keys", "1"},
		{"reader", "journal_mode", "wal"},
		{"reader", "busy_timeout", "5000"},
		{"reader", "query_only", "1"},
	} {
		pool := db.Writer
		if tc.pool == "reader" {
			pool = db.Reader
		}
		var got string
		if err := pool.GetContext(t.Context(), &got, "PRAGMA "+tc.pragma); err != nil {
			t.Fatalf("PRAGMA %s: %v", tc.pragma, err)
		}
		if got != tc.want {
			t.Errorf("%s PRAGMA %s = %q, want %q", tc.pool, tc.pragma, got, tc.want)
		}
	}
	if _, err := db.Reader.ExecContext(t.Context(), "CREATE TABLE t (x INTEGER)"); err == nil {
		t.Errorf("the reader pool wrote")
	}
}

// The relaxed pool commits without waiting for the disk on PostgreSQL, and
// is the writer (synchronous=NORMAL) on SQLite; the other pools wait.
func TestRelaxedPool(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		if db.Dialect == sqlstore.DialectSQLite {
			if db.Relaxed != db.Writer {
				t.Errorf("on SQLite the relaxed pool is not the writer")
			}
			return
		}
		for _, tc := range []struct {
			name string
			pool *sqlx.DB
			want string
		}{{"writer", db.Writer, "on"}, {"relaxed", db.Relaxed, "off"}} {
			var got string
			if err := tc.pool.GetContext(t.Context(), &got, "SHOW synchronous_commit"); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if got != tc.want {
				t.Errorf("%s pool: synchronous_commit = %q, want %q", tc.name, got, tc.want)
			}
		}
		// Both reach the same schema.
		if _, err := db.Writer.ExecContext(t.Context(), "CREATE TABLE relaxed_probe (x INTEGER)"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Relaxed.ExecContext(t.Context(), "INSERT INTO relaxed_probe VALUES (1)"); err != nil {
			t.Fatalf("the relaxed pool does not see the writer's schema: %v", err)
		}
	})
}

func TestSQLiteReadsDoNotWaitForTheWriter(t *testing.T) {
	t.Parallel()
	db := sqlstoretest.Open(t, sqlstore.DialectSQLite)
	ids := sqlstore.NewIdentity(db)
	org := ports.Org{ID: "org-1", Name: "acme", CreatedAt: time.Now()}
	if err := ids.CreateOrg(t.Context(), org); err != nil {
		t.Fatal(err)
	}
	err := db.WithinTx(t.Context(), func(ctx context.Context) error {
		if err := ids.CreateOrg(ctx, ports.Org{ID: "org-2", Name: "umbrella", CreatedAt: time.Now()}); err != nil {
			return err
		}
		outside, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		if _, err := ids.GetOrg(outside, org.ID); err != nil {
			t.Errorf("GetOrg outside the open transaction: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestTxFromContext(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		if _, ok := sqlstore.TxFromContext(t.Context()); ok {
			t.Errorf("TxFromContext outside WithinTx found a transaction")
		}
		err := db.WithinTx(t.Context(), func(ctx context.Context) error {
			tx, ok := sqlstore.TxFromContext(ctx)
			if !ok {
				t.Fatalf("TxFromContext inside WithinTx found no transaction")
			}
			return db.WithinTx(ctx, func(ctx context.Context) error {
				if nested, _ := sqlstore.TxFromContext(ctx); nested != tx {
					t.Errorf("nested WithinTx started another transaction")
				}
				return nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}

func TestMigrations(t *testing.T) {
	t.Parallel()
	t.Run("fresh sqlite", func(t *testing.T) {
		t.Parallel()
		db := openSQLite(t, filepath.Join(t.TempDir(), "devpilot.db"))
		checkPending(t, db, func(n int) bool { return n > 0 }, "> 0")
		for range 2 {
			if err := db.Migrate(t.Context()); err != nil {
				t.Fatalf("Migrate: %v", err)
			}
			checkPending(t, db, func(n int) bool { return n == 0 }, "0")
		}
	})
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		checkPending(t, db, func(n int) bool { return n == 0 }, "0")
		if err := db.Migrate(t.Context()); err != nil {
			t.Fatalf("Migrate again: %v", err)
		}
		if _, err := db.Writer.ExecContext(t.Context(), "DELETE FROM goose_db_version WHERE version_id > 0"); err != nil {
			t.Fatal(err)
		}
		checkPending(t, db, func(n int) bool { return n > 0 }, "> 0")
	})
}

func checkPending(t *testing.T, db *sqlstore.DB, ok func(int) bool, want string) {
	t.Helper()
	n, err := db.PendingMigrations(t.Context())
	if err != nil {
		t.Fatalf("PendingMigrations: %v", err)
	}
	if !ok(n) {
		t.Errorf("PendingMigrations = %d, want %s", n, want)
	}
}

func TestStoreErr(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		ctx := t.Context()
		exec := func(query string, args ...any) error {
			_, err := db.Writer.ExecContext(ctx, db.Writer.Rebind(query), args...)
			return err
		}
		if err := exec("INSERT INTO orgs (id, name, created_at) VALUES ('o1', 'acme', ?)", sqlstore.Timestamp(time.Now())); err != nil {
			t.Fatal(err)
		}
		typed := ports.Errorf(ports.KindGone, "gone")
		for _, tc := range []struct {
			name      string
			err       error
			what, ref string
			kind      ports.Kind
			message   string
		}{
			{"no rows", sql.ErrNoRows, "token 0193", "", ports.KindNotFound, "token 0193 not found"},
			{"unique", exec("INSERT INTO orgs (id, name, created_at) VALUES ('o2', 'acme', ?)", sqlstore.Timestamp(time.Now())),
				"org acme", "", ports.KindConflict, "org acme already exists"},
			{"primary key", exec("INSERT INTO orgs (id, name, created_at) VALUES ('o1', 'other', ?)", sqlstore.Timestamp(time.Now())),
				"org other", "", ports.KindConflict, "org other already exists"},
			{"foreign key", exec("INSERT INTO users (id, org_id, email, email_verified, role, created_at) VALUES ('u1', 'nope', 'a@b.c', TRUE, 'admin', ?)", sqlstore.Timestamp(time.Now())),
				"user a@b.c", "org nope", ports.KindNotFound, "org nope not found"},
			{"foreign key without ref", exec("INSERT INTO users (id, org_id, email, email_verified, role, created_at) VALUES ('u1', 'nope', 'a@b.c', TRUE, 'admin', ?)", sqlstore.Timestamp(time.Now())),
				"user a@b.c", "", ports.KindInternal, "database error"},
			{"check", exec("INSERT INTO users (id, org_id, email, email_verified, role, created_at) VALUES ('u1', 'o1', 'a@b.c', TRUE, 'root', ?)", sqlstore.Timestamp(time.Now())),
				"user a@b.c", "org o1", ports.KindInternal, "database error"},
			{"syntax", exec("SELEKT 1"), "org acme", "", ports.KindInternal, "database error"},
			{"already a ports.Error", typed, "org acme", "", ports.KindGone, "gone"},
			{"deadlock", &pq.Error{Code: "40P01"}, "org acme", "", ports.KindUnavailable, "the database is busy; try again"},
			{"serialization failure", &pq.Error{Code: "40001"}, "org acme", "", ports.KindUnavailable, "the database is busy; try again"},
			{"server shutting down", &pq.Error{Code: "57P01"}, "org acme", "", ports.KindUnavailable, "the database is busy; try again"},
		} {
			if tc.err == nil {
				t.Fatalf("%s: the statement did not fail", tc.name)
			}
			got := sqlstore.StoreErr(tc.err, tc.what, tc.ref)
			e, ok := ports.AsError(got)
			if !ok || e.Kind != tc.kind || e.Message != tc.message {
				t.Errorf("%s: StoreErr(%v) = %#v, want kind %s, message %q", tc.name, tc.err, got, tc.kind, tc.message)
				continue
			}
			if !errors.Is(got, tc.err) {
				t.Errorf("%s: StoreErr dropped the cause %v", tc.name, tc.err)
			}
		}
		if err := sqlstore.StoreErr(nil, "org acme", ""); err != nil {
			t.Errorf("StoreErr(nil) = %v", err)
		}
	})
}

func TestTimestamp(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		ctx := t.Context()
		column := "TEXT"
		if db.Dialect == sqlstore.DialectPostgres {
			column = "TIMESTAMPTZ"
		}
		if _, err := db.Writer.ExecContext(ctx, "CREATE TABLE times (i INTEGER PRIMARY KEY, v "+column+")"); err != nil {
			t.Fatal(err)
		}
		zones := []*time.Location{time.UTC, time.FixedZone("UTC+14", 14*3600), time.FixedZone("UTC-9:30", -(9*3600 + 1800))}
		want := []time.Time{
			time.Date(1999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
			time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC),
			time.Date(2000, 1, 1, 0, 0, 0, 1_000, time.UTC),
			time.Date(2026, 6, 1, 12, 0, 0, 1_000_000, time.UTC),
			time.Date(2026, 6, 1, 12, 0, 0, 10_000_000, time.UTC),
			time.Date(2026, 6, 1, 12, 0, 1, 0, time.UTC),
		}
		for i, k := range rand.Perm(len(want)) {
			v := want[k].In(zones[i%len(zones)])
			if _, err := db.Writer.ExecContext(ctx, db.Writer.Rebind("INSERT INTO times (i, v) VALUES (?, ?)"), i, sqlstore.Timestamp(v)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := db.Writer.ExecContext(ctx, "INSERT INTO times (i, v) VALUES (100, NULL)"); err != nil {
			t.Fatal(err)
		}

		var rows []struct {
			V *sqlstore.Timestamp `db:"v"`
		}
		if err := db.Reader.SelectContext(ctx, &rows, "SELECT v FROM times ORDER BY v"); err != nil {
			t.Fatal(err)
		}
		if len(rows) != len(want)+1 || (rows[0].V != nil && rows[len(rows)-1].V != nil) {
			t.Fatalf("read %d times with NULL at neither end, want %d and one NULL", len(rows), len(want)+1)
		}
		var got []time.Time
		for _, r := range rows {
			if r.V != nil {
				got = append(got, time.Time(*r.V))
			}
		}
		for i, g := range got {
			if g.Location() != time.UTC {
				t.Errorf("time %d is in %v, want UTC", i, g.Location())
			}
			if w := want[i].Truncate(time.Microsecond); !g.Equal(w) {
				t.Errorf("time %d = %v, want %v (sorted, to the microsecond)", i, g, w)
			}
		}
	})
	t.Run("scan", func(t *testing.T) {
		t.Parallel()
		var ts sqlstore.Timestamp
		for _, bad := range []any{"2026-01-02 03:04:05", int64(1), nil} {
			if err := ts.Scan(bad); err == nil {
				t.Errorf("Scan(%#v) succeeded", bad)
			}
		}
	})
}
