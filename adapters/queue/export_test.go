package queue

import (
	"context"

	"github.com/riverqueue/river/rivermigrate"

	"github.com/devpilot/devpilot/adapters/sqlstore"
)

// MigrateTo applies River's migrations up to version and no further, leaving
// db as a devpilot built on an older River left it. Like Migrate, it applies
// them in one transaction on SQLite and one transaction each on PostgreSQL.
func MigrateTo(ctx context.Context, db *sqlstore.DB, version int) error {
	m, err := migrator(db, nil)
	if err != nil {
		return err
	}
	opts := &rivermigrate.MigrateOpts{TargetVersion: version}
	if db.Dialect != sqlstore.DialectSQLite {
		_, err = m.Migrate(ctx, rivermigrate.DirectionUp, opts)
		return err
	}
	tx, err := db.Writer.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	//lint:ignore SA1019 SQLite migrates in one transaction, as migrateSQLite does.
	if _, err := m.MigrateTx(ctx, tx, rivermigrate.DirectionUp, opts); err != nil {
		return err
	}
	return tx.Commit()
}
