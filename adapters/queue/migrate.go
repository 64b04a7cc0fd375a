package queue

import (
	"context"
	"database/sql"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strings"

	"github.com/riverqueue/river/rivermigrate"

	"github.com/devpilot/devpilot/adapters/sqlstore"
)

func migrator(db *sqlstore.DB, logger *slog.Logger) (*rivermigrate.Migrator[*sql.Tx], error) {
	drv, err := driverFor(db)
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m, err := rivermigrate.New(drv, &rivermigrate.Config{Logger: logger})
	if err != nil {
		return nil, wrap(err, "queue: preparing River migrations")
	}
	return m, nil
}

// Migrate creates or upgrades River's tables in db (river_job and the
// rest), applying only the migrations not applied yet, so running it again is
// a no-op. Hosts starting together may call it at once: it holds a lock
// meanwhile (a PostgreSQL advisory lock for the current schema; SQLite's write
// lock). Each applied migration is logged to logger at debug (nil: not
// logged). It
// returns an unavailable Error when the database cannot be reached and an
// internal Error when a migration fails.
func Migrate(ctx context.Context, db *sqlstore.DB, logger *slog.Logger) error {
	_, err := MigrateUp(ctx, db, logger)
	return err
}

// MigrateUp is Migrate, returning the names of River's migrations it
// applied ("river 006_bulk_unique"), oldest first: none when River's
// tables were current. River's own line for each applied migration goes to
// logger at debug (see QuietRiver): the caller reports what was applied.
func MigrateUp(ctx context.Context, db *sqlstore.DB, logger *slog.Logger) ([]string, error) {
	if logger != nil {
		logger = QuietRiver(logger)
	}
	m, err := migrator(db, logger)
	if err != nil {
		return nil, err
	}
	var res *rivermigrate.MigrateResult
	if db.Dialect == sqlstore.DialectSQLite {
		res, err = migrateSQLite(ctx, db, m)
	} else {
		res, err = migratePostgres(ctx, db, m)
	}
	if err != nil {
		return nil, wrap(err, "queue: applying River migrations")
	}
	var applied []string
	if res != nil {
		for _, v := range res.Versions {
			applied = append(applied, fmt.Sprintf("river %03d_%s", v.Version, strings.ReplaceAll(v.Name, " ", "_")))
		}
	}
	return applied, nil
}

// migrateSQLite applies the migrations in one transaction, which the writer
// begins IMMEDIATE: it takes the database's write lock up front, so
// concurrent migrators, in this process or another, run one after another
// and later ones find nothing left to do. SQLite's DDL is transactional and
// River's SQLite migrations need no commit between steps, so the variant
// rivermigrate deprecates for PostgreSQL is the right one here.
func migrateSQLite(ctx context.Context, db *sqlstore.DB, m *rivermigrate.Migrator[*sql.Tx]) (*rivermigrate.MigrateResult, error) {
	tx, err := db.Writer.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	//lint:ignore SA1019 deprecated for PostgreSQL only; on SQLite one transaction is the point (see above).
	res, err := m.MigrateTx(ctx, tx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return nil, err
	}
	return res, tx.Commit()
}

// migratePostgres applies the migrations one transaction each (some need a
// commit between them) while a transaction on another connection holds an
// advisory lock keyed by the current schema, released when it rolls back.
func migratePostgres(ctx context.Context, db *sqlstore.DB, m *rivermigrate.Migrator[*sql.Tx]) (*rivermigrate.MigrateResult, error) {
	lock, err := db.Writer.BeginTx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer lock.Rollback()
	var schema string
	if err := lock.QueryRowContext(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		return nil, err
	}
	h := fnv.New64a()
	h.Write([]byte("devpilot river migrate " + schema))
	if _, err := lock.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", int64(h.Sum64())); err != nil {
		return nil, err
	}
	return m.Migrate(ctx, rivermigrate.DirectionUp, nil)
}

// PendingMigrations returns how many of River's migrations db still lacks:
// 0 once Migrate has run. It returns an unavailable Error when the database
// cannot be reached and an internal Error when River's migration records are
// unreadable.
func PendingMigrations(ctx context.Context, db *sqlstore.DB) (int, error) {
	m, err := migrator(db, nil)
	if err != nil {
		return 0, err
	}
	applied, err := m.ExistingVersions(ctx)
	if err != nil {
		return 0, wrap(err, "queue: reading River migrations")
	}
	done := make(map[int]bool, len(applied))
	for _, v := range applied {
		done[v.Version] = true
	}
	pending := 0
	for _, v := range m.AllVersions() {
		if !done[v.Version] {
			pending++
		}
	}
	return pending, nil
}
