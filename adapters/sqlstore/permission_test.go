package sqlstore_test

import (
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/testkit/storetest"
)

func TestPermissionGrants(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		grants, ids := sqlstore.NewPermissions(db), sqlstore.NewIdentity(db)
		storetest.TestPermissionGrants(t, func(*testing.T) storetest.PermissionStores {
			return storetest.PermissionStores{
				Grants:   grants,
				Identity: storetest.IdentityStores{Orgs: ids, Users: ids, Tokens: ids, Tx: db},
			}
		})
	})
}
