package sqlstore_test

import (
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/testkit/storetest"
)

func TestMain(m *testing.M) {
	sqlstoretest.Main(m)
}

func TestIdentity(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		ids := sqlstore.NewIdentity(db)
		storetest.TestIdentity(t, func(*testing.T) storetest.IdentityStores {
			return storetest.IdentityStores{Orgs: ids, Users: ids, Tokens: ids, Tx: db}
		})
	})
}
