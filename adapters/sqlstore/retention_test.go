package sqlstore_test

import (
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/testkit/storetest"
)

func TestRetention(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		a, ids, cloud := sqlstore.NewAssistant(db), sqlstore.NewIdentity(db), sqlstore.NewCloud(db)
		stores := storetest.RetentionStores{
			Retention: sqlstore.NewRetention(db), SCM: sqlstore.NewSCM(db),
			Sessions: a, Confirmations: a, Events: a, Turns: a,
			Invitations: sqlstore.NewInvitations(db), Rates: sqlstore.NewRates(db),
			Accounts: cloud, Costs: cloud, Audit: cloud,
			Identity: storetest.IdentityStores{Orgs: ids, Users: ids, Tokens: ids, Tx: db},
		}
		storetest.TestRetention(t, func(*testing.T) storetest.RetentionStores { return stores })
	})
}
