package sqlstore_test

import (
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/testkit/storetest"
)

func TestInvitations(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		ids, invitations := sqlstore.NewIdentity(db), sqlstore.NewInvitations(db)
		storetest.TestInvitations(t, func(*testing.T) storetest.InvitationStores {
			return storetest.InvitationStores{Invitations: invitations,
				Identity: storetest.IdentityStores{Orgs: ids, Users: ids, Tokens: ids, Tx: db}}
		})
	})
}
