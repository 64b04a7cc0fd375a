package app_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/app"
)

// Every stack these tests start has a database of its own. Migrating an
// empty SQLite database (devpilot's migrations, then the job queue's) costs
// about a second of CPU under -race, the largest part of a stack's start,
// and hundreds of stacks start in this package. So a stack on SQLite starts
// on a copy of one database this test binary migrated once: still its own
// file, already at the latest version, which the start's migration step
// then finds up to date. Migrating an empty database stays tested where it
// is the subject: the sqlstore and queue packages' tests, the worker that
// waits for its database (workerprobes_e2e_test.go) and every stack on
// PostgreSQL, which still migrates its own fresh schema.

// sqliteTemplate is the bytes of a migrated, checkpointed SQLite database.
var sqliteTemplate = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "devpilot-dbtemplate-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "template.db")
	ctx := context.Background()
	db, err := sqlstore.Open(ctx, "sqlite:"+path)
	if err != nil {
		return nil, err
	}
	if err := app.Migrate(ctx, db, app.NewLogger(app.Config{}, io.Discard)); err != nil {
		db.Close()
		return nil, err
	}
	if err := db.Close(); err != nil {
		return nil, err
	}
	// Closing the last connection checkpoints the write-ahead log into the
	// file: a log left with frames in it would be missing from the copy.
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		return nil, errors.New("the template's write-ahead log was not checkpointed at close")
	}
	return os.ReadFile(path)
})

// writeMigratedSQLite writes a copy of the migrated template at path, which
// must not exist yet.
func writeMigratedSQLite(t *testing.T, path string) {
	t.Helper()
	raw, err := sqliteTemplate()
	if err != nil {
		t.Fatalf("migrating the template database: %v", err)
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
}

// stackDBURL is sqlstoretest.URL for a stack in run mode: a fresh schema on
// PostgreSQL (which the stack migrates when it starts), a copy of the
// migrated template on SQLite.
func stackDBURL(t *testing.T, d sqlstore.Dialect) string {
	t.Helper()
	url := sqlstoretest.URL(t, d)
	if d == sqlstore.DialectSQLite {
		writeMigratedSQLite(t, strings.TrimPrefix(url, "sqlite:"))
	}
	return url
}

// seedMigratedSQLite puts a copy of the migrated template where run mode
// keeps its embedded database in dataDir, unless a database is there
// already (a restart on the same directory keeps its data).
func seedMigratedSQLite(t *testing.T, dataDir string) {
	t.Helper()
	path := filepath.Join(dataDir, "devpilot.db")
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		return
	}
	writeMigratedSQLite(t, path)
}
