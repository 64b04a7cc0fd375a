package sqlstore_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore"
)

// TestSQLiteFilesAreTheOwners: a new database's directory is 0700 and its
// files (the database, -wal, -shm) 0600, whatever the umask allows.
func TestSQLiteFilesAreTheOwners(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, "devpilot.db")
	db, err := sqlstore.Open(context.Background(), "sqlite:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := map[string]os.FileMode{dir: 0o700, path: 0o600, path + "-wal": 0o600, path + "-shm": 0o600}
	for name, mode := range want {
		fi, err := os.Stat(name)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got := fi.Mode().Perm(); got != mode {
			t.Errorf("%s has mode %#o, want %#o", filepath.Base(name), got, mode)
		}
	}
}
