package sqlstore_test

import (
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/testkit/storetest"
)

func TestToolPolicies(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		policies, ids := sqlstore.NewToolPolicies(db), sqlstore.NewIdentity(db)
		storetest.TestToolPolicies(t, func(*testing.T) storetest.ToolPolicyStores {
			return storetest.ToolPolicyStores{
				Policies: policies,
				Identity: storetest.IdentityStores{Orgs: ids, Users: ids, Tokens: ids, Tx: db},
			}
		})
	})
}
