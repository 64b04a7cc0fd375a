package sqlstore_test

import (
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/ports"
)

// hostileTexts are strings a model, a provider or a webhook may send that
// PostgreSQL refuses in text (NUL, invalid UTF-8) or that SQLite would keep
// though PostgreSQL cannot.
var hostileTexts = []string{
	"nul\x00inside",
	"bell\x07 and escape \x1b[31m",
	"invalid \xff\xfe utf-8",
	"encoded surrogate \xed\xa0\x80",
	"\ufeffbyte-order mark",
	"bidi \u202eoverride\u202c and \u2066isolate\u2069",
	"tab\tnewline\ncarriage return\r kept, ümlaut and 🚀 too",
}

// On both databases alike, text is stored cleaned (ports.CleanText) by any
// statement: no statement fails for its characters.
func TestTextIsStoredCleanOnEachDatabase(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		ctx := t.Context()
		if _, err := db.Writer.ExecContext(ctx, "CREATE TABLE text_probe (id INTEGER NOT NULL, body TEXT NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		for i, s := range hostileTexts {
			if _, err := db.Writer.ExecContext(ctx, db.Writer.Rebind("INSERT INTO text_probe (id, body) VALUES (?, ?)"), i, s); err != nil {
				t.Fatalf("insert %q: %v", s, err)
			}
			var got string
			if err := db.Writer.GetContext(ctx, &got, db.Writer.Rebind("SELECT body FROM text_probe WHERE id = ?"), i); err != nil {
				t.Fatal(err)
			}
			if want := ports.CleanText(s); got != want {
				t.Errorf("stored %q, read back %q, want %q", s, got, want)
			}
		}
		// A hostile string in a WHERE clause finds what its cleaned form names.
		var n int
		if err := db.Reader.GetContext(ctx, &n, db.Reader.Rebind("SELECT COUNT(*) FROM text_probe WHERE body = ?"), hostileTexts[0]); err != nil || n != 1 {
			t.Errorf("lookup by %q: %d rows, %v", hostileTexts[0], n, err)
		}
	})
}

// A store method writing model output (a session title) keeps it cleaned.
func TestStoreMethodsCleanText(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		ctx := t.Context()
		f := newChatFixture(t, db, "org\x00") // an org name with a NUL
		a, owner, cs, now := f.a, f.owner, f.cs, f.now
		for _, title := range hostileTexts {
			if err := a.SetSessionTitle(ctx, owner, cs.ID, title, now); err != nil {
				t.Fatalf("title %q: %v", title, err)
			}
			got, err := a.GetSession(ctx, owner, cs.ID)
			if err != nil {
				t.Fatal(err)
			}
			if want := ports.CleanText(title); got.Title != want {
				t.Errorf("title %q read back as %q, want %q", title, got.Title, want)
			}
		}
	})
}
