package sqlstore_test

import (
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/testkit/storetest"
)

func TestCloud(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		cloud, ids := sqlstore.NewCloud(db), sqlstore.NewIdentity(db)
		storetest.TestCloud(t, func(*testing.T) storetest.CloudStores {
			return storetest.CloudStores{
				Accounts: cloud, Costs: cloud, Audit: cloud, Tx: db,
				Identity: storetest.IdentityStores{Orgs: ids, Users: ids, Tokens: ids, Tx: db},
			}
		})
	})
}
