package sqlstore

import (
	"context"
	"embed"
	"fmt"
	"hash/fnv"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

//go:embed migrations/sqlite/*.sql migrations/postgres/*.sql
var migrations embed.FS

// Migrate applies every pending migration. On PostgreSQL it holds an advisory
// lock for the current schema meanwhile, so hosts starting together migrate
// once. It returns the failing migration's error.
func (db *DB) Migrate(ctx context.Context) error {
	_, err := db.MigrateUp(ctx)
	return err
}

// MigrateUp is Migrate, returning the names of the migrations it applied
// ("00034_webhook_digests"), oldest first: none when the schema was
// current.
func (db *DB) MigrateUp(ctx context.Context) ([]string, error) {
	p, err := db.migrator(ctx, true)
	if err != nil {
		return nil, err
	}
	results, err := p.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: migrate: %w", err)
	}
	applied := make([]string, 0, len(results))
	for _, r := range results {
		if r.Source != nil {
			applied = append(applied, strings.TrimSuffix(filepath.Base(r.Source.Path), filepath.Ext(r.Source.Path)))
		}
	}
	return applied, nil
}

// PendingMigrations returns how many migrations are not applied yet (0 when
// the schema is current), without taking the migration lock; it returns an
// error when the database cannot be read.
func (db *DB) PendingMigrations(ctx context.Context) (int, error) {
	p, err := db.migrator(ctx, false)
	if err != nil {
		return 0, err
	}
	current, _, err := p.GetVersions(ctx)
	if err != nil {
		return 0, fmt.Errorf("sqlstore: migration status: %w", err)
	}
	pending := 0
	for _, s := range p.ListSources() {
		if s.Version > current {
			pending++
		}
	}
	return pending, nil
}

func (db *DB) migrator(ctx context.Context, locked bool) (*goose.Provider, error) {
	fsys, err := fs.Sub(migrations, "migrations/"+string(db.Dialect))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: migrations: %w", err)
	}
	dialect := goose.DialectSQLite3
	var opts []goose.ProviderOption
	if db.Dialect == DialectPostgres {
		dialect = goose.DialectPostgres
		if locked {
			locker, err := db.schemaLocker(ctx)
			if err != nil {
				return nil, err
			}
			opts = append(opts, goose.WithSessionLocker(locker))
		}
	}
	p, err := goose.NewProvider(dialect, db.Writer.DB, fsys, opts...)
	if err != nil {
		return nil, fmt.Errorf("sqlstore: migrations: %w", err)
	}
	return p, nil
}

// schemaLocker returns a goose advisory lock keyed by the current schema, so
// migrations of different schemas in one database do not wait for each other.
func (db *DB) schemaLocker(ctx context.Context) (lock.SessionLocker, error) {
	var schema string
	if err := db.Writer.GetContext(ctx, &schema, "SELECT current_schema()"); err != nil {
		return nil, fmt.Errorf("sqlstore: migrations: read current schema: %w", err)
	}
	h := fnv.New64a()
	h.Write([]byte("devpilot goose " + schema))
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockID(int64(h.Sum64())), lock.WithLockTimeout(1, 300))
	if err != nil {
		return nil, fmt.Errorf("sqlstore: migrations: %w", err)
	}
	return locker, nil
}
