package sqlstore_test

import (
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/testkit/storetest"
)

func TestIdempotency(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		idem, ids := sqlstore.NewIdempotency(db), sqlstore.NewIdentity(db)
		storetest.TestIdempotency(t, func(*testing.T) storetest.IdempotencyStores {
			return storetest.IdempotencyStores{
				Idempotency: idem,
				Identity:    storetest.IdentityStores{Orgs: ids, Users: ids, Tokens: ids, Tx: db},
			}
		})
	})
}
