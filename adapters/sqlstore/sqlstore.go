// Package sqlstore implements the store ports on SQL: PostgreSQL through
// lib/pq and SQLite through modernc.org/sqlite, with one set of queries
// written with ? placeholders and rebound for PostgreSQL.
package sqlstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"modernc.org/sqlite"
)

// Dialect names the SQL database behind a DB.
type Dialect string

// The supported dialects.
const (
	DialectSQLite   Dialect = "sqlite"
	DialectPostgres Dialect = "postgres"
)

func init() {
	sqlx.BindDriver("sqlite", sqlx.QUESTION)
}

// sqlitePragmas apply to every SQLite connection; the writer adds
// sqliteWriterParams and every reader sqliteReaderParams.
const (
	sqlitePragmas      = "_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)"
	sqliteWriterParams = "&_pragma=journal_mode(WAL)&_txlock=immediate"
	sqliteReaderParams = "&_pragma=query_only(1)"
)

// DB is an open database: a writer pool for writes and transactions, and a
// reader pool for reads outside a transaction. On PostgreSQL both are the
// same pool; on SQLite the writer holds the one write connection SQLite
// allows and the readers are read-only connections.
//
// Relaxed is for writes that may lose their last moments in a crash of the
// database server or its machine, never in a crash of devpilot: a commit
// there returns before the database has flushed it to disk. On PostgreSQL it
// is a small pool of its own whose sessions run with synchronous_commit=off
// (a crash of the server may lose the commits of its last ~0.6 s, whole
// transactions only); on SQLite it is the writer, whose synchronous=NORMAL
// gives every write that guarantee already.
type DB struct {
	Dialect Dialect
	Writer  *sqlx.DB
	Reader  *sqlx.DB
	Relaxed *sqlx.DB
	dsn     string // PostgreSQL's, for connections outside the pools (LISTEN)
}

// Open connects to the database the URL names, "postgres://…",
// "postgresql://…" or "sqlite:PATH", and pings it. For SQLite it creates
// PATH's directory when missing. It returns an error when the URL is malformed
// or the database does not answer.
func Open(ctx context.Context, rawURL string, opts ...Option) (*DB, error) {
	var o openOptions
	for _, opt := range opts {
		opt(&o)
	}
	scheme, rest, ok := strings.Cut(rawURL, ":")
	if !ok {
		return nil, errors.New("sqlstore: database URL must be postgres://…, postgresql://… or sqlite:PATH")
	}
	var (
		db  *DB
		err error
	)
	switch scheme {
	case "postgres", "postgresql":
		db, err = openPostgres(rawURL, o)
	case "sqlite":
		db, err = openSQLite(rest, o)
	default:
		return nil, fmt.Errorf("sqlstore: unsupported database URL scheme %q (want postgres, postgresql or sqlite)", scheme)
	}
	if err != nil {
		return nil, err
	}
	if err := db.Ping(ctx); err != nil {
		return nil, errors.Join(err, db.Close())
	}
	return db, nil
}

// DefaultMaxConns bounds the connections of the main PostgreSQL pool unless
// WithMaxConns says otherwise. All of them may stay open while idle: a
// connection closed for want of an idle slot is reopened moments later
// under load, and a new connection costs the server a backend process.
const DefaultMaxConns = 25

func openPostgres(rawURL string, o openOptions) (*DB, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, errors.New("sqlstore: malformed postgres URL")
	}
	// lib/pq sends a statement with arguments in two round trips (prepare,
	// then execute) unless binary_parameters is on; then it sends it in one,
	// and []byte arguments as raw bytes rather than hex text. Every []byte
	// argument of this package goes to a BYTEA column, and River passes JSON
	// as strings, so the binary encoding suits all of them. A URL that sets
	// binary_parameters keeps its choice.
	q := u.Query()
	if !q.Has("binary_parameters") {
		q.Set("binary_parameters", "yes")
		u.RawQuery = q.Encode()
	}
	dsn := u.String()
	size := cmp.Or(o.maxConns, DefaultMaxConns)
	pool, err := openPostgresPool(dsn, size, o)
	if err != nil {
		return nil, err
	}
	// lib/pq sends the URL's other parameters as run-time settings of each
	// session.
	q.Set("synchronous_commit", "off")
	u.RawQuery = q.Encode()
	relaxed, err := openPostgresPool(u.String(), min(postgresRelaxedPoolSize, max(1, size/4)), o)
	if err != nil {
		return nil, errors.Join(err, pool.Close())
	}
	return &DB{Dialect: DialectPostgres, Writer: pool, Reader: pool, Relaxed: relaxed, dsn: dsn}, nil
}

// postgresRelaxedPoolSize bounds the connections of DB.Relaxed (a quarter
// of the main pool's when that is smaller). Stream
// events reach it batched; when chats start in a burst their first writes
// queue for it, which keeps the database from thrashing: with 25
// connections instead, 100 chats started at once waited longer for their
// first token (32-35 ms p50 against 22-27 ms; BenchmarkAssistantTTFC).
const postgresRelaxedPoolSize = 4

func openPostgresPool(dsn string, size int, o openOptions) (*sqlx.DB, error) {
	connector, err := pq.NewConnector(dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: bad postgres URL: %w", err)
	}
	pool := sqlx.NewDb(o.openDB(cachingConnector{inner: connector}, DialectPostgres, dsn), "postgres")
	pool.SetMaxOpenConns(size)
	pool.SetMaxIdleConns(size)
	pool.SetConnMaxIdleTime(5 * time.Minute)
	pool.SetConnMaxLifetime(time.Hour)
	return pool, nil
}

func openSQLite(path string, o openOptions) (*DB, error) {
	switch {
	case path == "":
		return nil, errors.New("sqlstore: sqlite URL has no path (want sqlite:PATH)")
	case strings.ContainsRune(path, '?'):
		return nil, errors.New("sqlstore: sqlite URL must not carry parameters; the adapter sets them")
	case path == ":memory:" || strings.HasPrefix(path, "file:"):
		return nil, errors.New("sqlstore: sqlite URL must name a file path (in-memory and file: URIs are not supported)")
	}
	// The database holds sealed secrets and every user's data: its directory
	// (when created here) and its files are for the owner alone. SQLite
	// gives the -wal and -shm files the database file's mode.
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("sqlstore: create sqlite directory: %w", err)
	}
	if f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
		if err := f.Close(); err != nil {
			return nil, fmt.Errorf("sqlstore: create sqlite file: %w", err)
		}
	} else if !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("sqlstore: create sqlite file: %w", err)
	}
	writer, err := openSQLitePool(path+"?"+sqlitePragmas+sqliteWriterParams, o)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: open sqlite writer: %w", err)
	}
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	writer.SetConnMaxLifetime(0)
	writer.SetConnMaxIdleTime(0)
	reader, err := openSQLitePool(path+"?"+sqlitePragmas+sqliteReaderParams, o)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("sqlstore: open sqlite reader: %w", err), writer.Close())
	}
	readers := max(4, runtime.GOMAXPROCS(0))
	reader.SetMaxOpenConns(readers)
	reader.SetMaxIdleConns(readers)
	return &DB{Dialect: DialectSQLite, Writer: writer, Reader: reader, Relaxed: writer}, nil
}

// openSQLitePool returns a pool of SQLite connections to dsn, each keeping
// the statements it compiles (see cachingConnector).
func openSQLitePool(dsn string, o openOptions) (*sqlx.DB, error) {
	inner, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return sqlx.NewDb(o.openDB(cachingConnector{inner: inner}, DialectSQLite, ""), "sqlite"), nil
}

// Ping checks that the writer and the reader pools reach the database; it
// returns the driver's error when one does not.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.Writer.PingContext(ctx); err != nil {
		return fmt.Errorf("sqlstore: ping %s: %w", db.Dialect, err)
	}
	if db.Reader != db.Writer {
		if err := db.Reader.PingContext(ctx); err != nil {
			return fmt.Errorf("sqlstore: ping %s reader: %w", db.Dialect, err)
		}
	}
	if db.Relaxed != nil && db.Relaxed != db.Writer {
		if err := db.Relaxed.PingContext(ctx); err != nil {
			return fmt.Errorf("sqlstore: ping %s relaxed pool: %w", db.Dialect, err)
		}
	}
	return nil
}

// Close closes the pools, returning the errors of closing them.
func (db *DB) Close() error {
	var errReader, errRelaxed error
	if db.Reader != db.Writer {
		errReader = db.Reader.Close()
	}
	if db.Relaxed != nil && db.Relaxed != db.Writer {
		errRelaxed = db.Relaxed.Close()
	}
	return errors.Join(errReader, errRelaxed, db.Writer.Close())
}
