package sqlstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/ports"
)

// Migration 00024 keeps every user and everything that refers to them (on
// SQLite it rebuilds the users table, which with foreign keys on would
// cascade to their tokens), marks the users who joined through an
// invitation and never signed in through the identity provider unverified,
// and leaves foreign keys enforced.
func TestMigrationVerifiedEmails(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db, err := sqlstore.Open(ctx, sqlstoretest.URL(t, d), sqlstore.WithMaxConns(sqlstoretest.TestMaxConns))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			if err := sqlstore.MigrateTo(ctx, db, 23); err != nil {
				t.Fatalf("migrate to 23: %v", err)
			}
			at := sqlstore.Timestamp(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
			exec := func(q string, args ...any) {
				t.Helper()
				if _, err := db.Writer.ExecContext(ctx, db.Writer.Rebind(q), args...); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			exec("INSERT INTO orgs (id, name, created_at) VALUES (?, ?, ?)", "o1", "acme", at)
			// cli: created by the operator; invited: joined through an
			// invitation; signedin: joined so, then signed in through the
			// provider.
			for _, u := range []string{"cli", "invited", "signedin"} {
				exec("INSERT INTO users (id, org_id, email, role, created_at) VALUES (?, ?, ?, 'member', ?)", u, "o1", u+"@example.com", at)
				exec("INSERT INTO api_tokens (id, user_id, org_id, name, prefix, hash, created_at) VALUES (?, ?, 'o1', 'x', 'dp_x', ?, ?)",
					"t-"+u, u, []byte("hash-"+u), at)
			}
			for _, u := range []string{"invited", "signedin"} {
				exec(`INSERT INTO invitations (id, org_id, email, role, hash, prefix, created_by, created_at, expires_at, accepted_at, accepted_by)
					VALUES (?, 'o1', '', 'member', ?, 'dpi_x', 'cli', ?, ?, ?, ?)`, "i-"+u, []byte("inv-"+u), at, at, at, u)
			}
			exec(`INSERT INTO audit_log (id, org_id, user_id, account_id, action, resource, outcome, at)
				VALUES ('a1', 'o1', 'signedin', '', 'session.sign_in', 'session/s1', 'ok', ?)`, at)

			if err := db.Migrate(ctx); err != nil {
				t.Fatalf("migrate: %v", err)
			}
			ids := sqlstore.NewIdentity(db)
			for u, verified := range map[string]bool{"cli": true, "invited": false, "signedin": true} {
				got, err := ids.GetUser(ctx, u)
				if err != nil || got.Email != u+"@example.com" || got.EmailVerified != verified {
					t.Errorf("user %s after the migration: %+v, %v; want verified %v", u, got, err, verified)
				}
				if tok, err := ids.GetToken(ctx, "t-"+u); err != nil || tok.UserID != u {
					t.Errorf("token of %s after the migration: %+v, %v", u, tok, err)
				}
			}
			// The unverified user's email may now be a verified user's too.
			if err := ids.CreateUser(ctx, ports.User{ID: "again", OrgID: "o1", Email: "invited@example.com", EmailVerified: true,
				Role: ports.RoleMember, CreatedAt: time.Now()}); err != nil {
				t.Errorf("a verified user beside an unverified one: %v", err)
			}
			err = ids.CreateToken(ctx, ports.APIToken{ID: "t-none", UserID: "nobody", OrgID: "o1", Name: "x", Prefix: "dp_x",
				Hash: []byte("hash-none"), CreatedAt: time.Now()})
			if !errors.Is(err, ports.ErrNotFound) {
				t.Errorf("a token of no user after the migration: %v, want not_found (foreign keys enforced)", err)
			}
		})
	}
}
