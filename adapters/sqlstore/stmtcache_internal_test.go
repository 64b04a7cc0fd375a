package sqlstore

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"
)

func cachePool(t *testing.T) *sqlx.DB {
	t.Helper()
	db, err := openSQLitePool(filepath.Join(t.TempDir(), "cache.db")+"?"+sqlitePragmas+sqliteWriterParams, openOptions{})
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	if _, err := db.ExecContext(t.Context(), "CREATE TABLE t (x INTEGER NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	return db
}

// cachedTexts returns the statement texts the pool's connection keeps.
func cachedTexts(t *testing.T, db *sqlx.DB) map[string]bool {
	t.Helper()
	cached, err := CachedStatements(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	return cached
}

func TestStatementCacheReusesCompiledStatements(t *testing.T) {
	t.Parallel()
	db := cachePool(t)
	ctx := t.Context()
	const insert = "INSERT INTO t (x) VALUES (?)"
	for i := range 100 {
		if _, err := db.ExecContext(ctx, insert, i); err != nil {
			t.Fatal(err)
		}
	}
	var sum int
	if err := db.GetContext(ctx, &sum, "SELECT SUM(x) FROM t WHERE x >= ?", 0); err != nil {
		t.Fatal(err)
	}
	if sum != 4950 {
		t.Fatalf("sum %d, want 4950", sum)
	}
	cached := cachedTexts(t, db)
	if !cached[insert] || !cached["SELECT SUM(x) FROM t WHERE x >= ?"] {
		t.Fatalf("cached %v", cached)
	}
}

func TestStatementCacheRunsAStatementInUseUncached(t *testing.T) {
	t.Parallel()
	db := cachePool(t)
	ctx := t.Context()
	for i := range 3 {
		if _, err := db.ExecContext(ctx, "INSERT INTO t (x) VALUES (?)", i); err != nil {
			t.Fatal(err)
		}
	}
	const query = "SELECT x FROM t WHERE x >= ? ORDER BY x"
	tx, err := db.BeginTxx(ctx, nil) // one connection for both reads
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	outer, err := tx.QueryContext(ctx, query, 0)
	if err != nil {
		t.Fatal(err)
	}
	var pairs []string
	for outer.Next() {
		var x int
		if err := outer.Scan(&x); err != nil {
			t.Fatal(err)
		}
		var inner []int
		if err := tx.SelectContext(ctx, &inner, query, 0); err != nil { // the same text, while outer reads
			t.Fatal(err)
		}
		pairs = append(pairs, strings.Repeat("*", x)+"|"+strings.Repeat("+", len(inner)))
		if len(pairs) > 3 {
			t.Fatalf("the outer read restarted: %q", pairs) // the inner one reset its statement
		}
	}
	if err := outer.Close(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(pairs, " "); got != "|+++ *|+++ **|+++" {
		t.Fatalf("nested reads %q", got)
	}
	var n int
	if err := tx.GetContext(ctx, &n, "SELECT COUNT(*) FROM ("+query+")", 0); err != nil || n != 3 {
		t.Fatalf("after: %d, %v", n, err)
	}
}

func TestStatementCacheFollowsSchemaChanges(t *testing.T) {
	t.Parallel()
	db := cachePool(t)
	ctx := t.Context()
	const query = "SELECT * FROM t WHERE x > ?"
	if _, err := db.ExecContext(ctx, "INSERT INTO t (x) VALUES (?)", 1); err != nil {
		t.Fatal(err)
	}
	var one []map[string]any
	rows, err := db.QueryxContext(ctx, query, 0)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		m := map[string]any{}
		if err := rows.MapScan(m); err != nil {
			t.Fatal(err)
		}
		one = append(one, m)
	}
	rows.Close()
	if _, err := db.ExecContext(ctx, "ALTER TABLE t ADD COLUMN y TEXT NOT NULL DEFAULT 'new'"); err != nil {
		t.Fatal(err)
	}
	var got []struct {
		X int    `db:"x"`
		Y string `db:"y"`
	}
	if err := db.SelectContext(ctx, &got, query, 0); err != nil {
		t.Fatal(err)
	}
	if len(one) != 1 || len(got) != 1 || got[0].Y != "new" {
		t.Fatalf("before %v, after %+v", one, got)
	}
}

func TestStatementCacheBounds(t *testing.T) {
	t.Parallel()
	db := cachePool(t)
	ctx := t.Context()
	long := "SELECT COUNT(*) FROM t WHERE x IN (" + strings.Repeat("0, ", maxCachedStmtLen/3) + "?)"
	var n int
	if err := db.GetContext(ctx, &n, long, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO nowhere VALUES (?)", 1); err == nil || !strings.Contains(err.Error(), "no such table") {
		t.Fatalf("a bad statement: %v", err)
	}
	for i := range maxCachedStmts + 10 {
		if err := db.GetContext(ctx, &n, "SELECT COUNT(*) FROM t WHERE x > "+strings.Repeat(" ", i)+"?", 0); err != nil {
			t.Fatal(err)
		}
	}
	cached := cachedTexts(t, db)
	if cached[long] || cached["INSERT INTO nowhere VALUES (?)"] || len(cached) != maxCachedStmts {
		t.Fatalf("%d statements cached (want %d), the long one %v, the bad one %v", len(cached), maxCachedStmts, cached[long], cached["INSERT INTO nowhere VALUES (?)"])
	}
	if err := db.GetContext(context.Background(), &n, "SELECT COUNT(*) FROM t WHERE x < ?", 9); err != nil {
		t.Fatalf("past the bound: %v", err)
	}
}
