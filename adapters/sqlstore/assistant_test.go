package sqlstore_test

import (
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/testkit/storetest"
)

func TestAssistant(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			url := sqlstoretest.URL(t, d)
			var open func(t *testing.T) storetest.AssistantStores
			open = func(t *testing.T) storetest.AssistantStores {
				db := sqlstoretest.OpenURL(t, url)
				a, ids := sqlstore.NewAssistant(db), sqlstore.NewIdentity(db)
				return storetest.AssistantStores{
					Sessions: a, Messages: a, Confirmations: a, Events: a, Turns: a, Preferences: a, Tx: db,
					Identity: storetest.IdentityStores{Orgs: ids, Users: ids, Tokens: ids, Tx: db},
					Reopen:   open,
				}
			}
			stores := open(t)
			storetest.TestAssistant(t, func(*testing.T) storetest.AssistantStores { return stores })
		})
	}
}
