package sqlstore_test

import (
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/ports"
)

// Migration 00025 forgets the responses kept before the HTTP host sealed
// them, which were plain text.
func TestIdempotencyMigrationForgetsPlainBodies(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		ctx := t.Context()
		if err := sqlstore.MigrateDownTo(ctx, db, 24); err != nil {
			t.Fatal(err)
		}
		ids, idem := sqlstore.NewIdentity(db), sqlstore.NewIdempotency(db)
		now := time.Now()
		if err := ids.CreateOrg(ctx, ports.Org{ID: "o-1", Name: "acme", CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		if err := ids.CreateUser(ctx, ports.User{ID: "u-1", OrgID: "o-1", Email: "ada@acme.test", Role: ports.RoleAdmin, CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
		owner := ports.IdempotencyOwner{OrgID: "o-1", UserID: "u-1"}
		rec := ports.IdempotencyRecord{Owner: owner, Key: "k", Method: "POST", Route: "/api/v1/tokens",
			RequestHash: []byte("hash"), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		if _, claimed, err := idem.Begin(ctx, rec); err != nil || !claimed {
			t.Fatalf("Begin: %v %v", claimed, err)
		}
		plain := ports.IdempotentResponse{Status: 201, Body: []byte(`{"token":"dp_plain"}`)}
		if err := idem.Complete(ctx, owner, "k", plain, now.Add(24*time.Hour)); err != nil {
			t.Fatal(err)
		}
		if err := db.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := db.Writer.GetContext(ctx, &n, "SELECT COUNT(*) FROM idempotency_keys"); err != nil || n != 0 {
			t.Fatalf("idempotency_keys after the migration: %d rows (%v), want 0", n, err)
		}
	})
}
