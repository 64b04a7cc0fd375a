// Package sqlstoretest gives tests fresh, migrated sqlstore databases: SQLite
// always, and PostgreSQL too when DEVPILOT_TEST_POSTGRES_URL names a server.
package sqlstoretest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/lib/pq"

	"github.com/devpilot/devpilot/adapters/sqlstore"
)

// PostgresURLEnv names the variable holding a PostgreSQL server URL (any
// database on it) to test against.
const PostgresURLEnv = "DEVPILOT_TEST_POSTGRES_URL"

// pkgDB is the PostgreSQL database Main created for this test binary.
var pkgDB struct {
	url   string // with the database's name as the path
	admin *sqlstore.DB
}

// Dialects returns the dialects to test: SQLite, and PostgreSQL when
// DEVPILOT_TEST_POSTGRES_URL is set.
func Dialects() []sqlstore.Dialect {
	if os.Getenv(PostgresURLEnv) == "" {
		return []sqlstore.Dialect{sqlstore.DialectSQLite}
	}
	return []sqlstore.Dialect{sqlstore.DialectSQLite, sqlstore.DialectPostgres}
}

// Main runs the tests of a package (call it from TestMain) and exits with
// their code. When DEVPILOT_TEST_POSTGRES_URL is set it creates a database for
// the package on that server first and drops it afterwards; when that server
// does not answer it prints the error and exits with 1.
func Main(m *testing.M) {
	serverURL := os.Getenv(PostgresURLEnv)
	if serverURL == "" {
		os.Exit(m.Run())
	}
	drop, err := createPackageDB(serverURL)
	if err != nil {
		fmt.Fprintf(os.Stderr, "sqlstoretest: %s is set but PostgreSQL is not usable: %v\n", PostgresURLEnv, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := drop(); err != nil {
		fmt.Fprintf(os.Stderr, "sqlstoretest: %v\n", err)
		code = max(code, 1)
	}
	os.Exit(code)
}

// createPackageDB creates a database named devpilot_t_<hex> on the server,
// points pkgDB at it, and returns the function that drops it.
func createPackageDB(serverURL string) (drop func() error, err error) {
	ctx := context.Background()
	u, err := url.Parse(serverURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, fmt.Errorf("%s is not a postgres:// URL", PostgresURLEnv)
	}
	server, err := sqlstore.Open(ctx, serverURL)
	if err != nil {
		return nil, err
	}
	name := "devpilot_t_" + randomHex()
	if _, err := server.Writer.ExecContext(ctx, "CREATE DATABASE "+pq.QuoteIdentifier(name)); err != nil {
		return nil, fmt.Errorf("create database %s: %w", name, err)
	}
	drop = func() error {
		defer server.Close()
		if pkgDB.admin != nil {
			pkgDB.admin.Close()
		}
		if _, err := server.Writer.ExecContext(ctx, "DROP DATABASE IF EXISTS "+pq.QuoteIdentifier(name)+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("drop database %s: %w", name, err)
		}
		return nil
	}
	u.Path = "/" + name
	pkgDB.url = u.String()
	if pkgDB.admin, err = sqlstore.Open(ctx, pkgDB.url); err != nil {
		return nil, errors.Join(err, drop())
	}
	return drop, nil
}

// Open returns a fresh, migrated database of the dialect for one test, closed
// and removed when the test ends: an SQLite file in t.TempDir(), or a new
// schema in the package's PostgreSQL database (which needs Main in TestMain).
// It fails the test when the database cannot be set up.
func Open(t testing.TB, d sqlstore.Dialect) *sqlstore.DB {
	t.Helper()
	return OpenURL(t, URL(t, d))
}

// OpenURL opens the database at rawURL (such as one from URL) for one test,
// migrates it, and closes it when the test ends; opening one URL again gives
// another handle on the same database, as a restarted process would have. It
// fails the test when the database cannot be opened or migrated. Its
// PostgreSQL pool holds at most TestMaxConns connections, so that the test
// packages running side by side stay within the server's limit.
func OpenURL(t testing.TB, rawURL string) *sqlstore.DB {
	t.Helper()
	db, err := sqlstore.Open(context.Background(), rawURL, sqlstore.WithMaxConns(TestMaxConns))
	if err != nil {
		t.Fatalf("sqlstoretest: open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("sqlstoretest: close %s: %v", db.Dialect, err)
		}
	})
	if err := db.Migrate(context.Background()); err != nil {
		t.Fatalf("sqlstoretest: migrate %s: %v", db.Dialect, err)
	}
	return db
}

// TestMaxConns bounds the PostgreSQL pool of a test's database handle (see
// OpenURL); hosts started by tests take it as DEVPILOT_DATABASE_MAX_CONNS.
const TestMaxConns = 10

// URL returns the URL of a fresh, empty (unmigrated) database of the dialect
// for one test, removed when the test ends, for tests that start a host on a
// DEVPILOT_DATABASE_URL. It fails the test for an unknown dialect.
func URL(t testing.TB, d sqlstore.Dialect) string {
	t.Helper()
	switch d {
	case sqlstore.DialectSQLite:
		return "sqlite:" + filepath.Join(t.TempDir(), "test.db")
	case sqlstore.DialectPostgres:
		return newSchema(t)
	}
	t.Fatalf("sqlstoretest: unknown dialect %q", d)
	return ""
}

// newSchema creates a schema in the package database, drops it when the test
// ends, and returns a URL whose search_path is that schema.
func newSchema(t testing.TB) string {
	t.Helper()
	if pkgDB.admin == nil {
		t.Fatalf("sqlstoretest: %s is set but TestMain does not call sqlstoretest.Main", PostgresURLEnv)
	}
	schema := "t_" + randomHex()
	ctx := context.Background()
	if _, err := pkgDB.admin.Writer.ExecContext(ctx, "CREATE SCHEMA "+pq.QuoteIdentifier(schema)); err != nil {
		t.Fatalf("sqlstoretest: create schema: %v", err)
	}
	t.Cleanup(func() {
		if _, err := pkgDB.admin.Writer.ExecContext(ctx, "DROP SCHEMA "+pq.QuoteIdentifier(schema)+" CASCADE"); err != nil {
			t.Errorf("sqlstoretest: drop schema %s: %v", schema, err)
		}
	})
	u, err := url.Parse(pkgDB.url)
	if err != nil {
		t.Fatalf("sqlstoretest: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// ForEachDialect runs fn as a subtest named after each of Dialects(), with a
// fresh database from Open. fn may call t.Parallel.
func ForEachDialect(t *testing.T, fn func(t *testing.T, db *sqlstore.DB)) {
	t.Helper()
	for _, d := range Dialects() {
		t.Run(string(d), func(t *testing.T) {
			fn(t, Open(t, d))
		})
	}
}

func randomHex() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
