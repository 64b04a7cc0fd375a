package sqlstore_test

import (
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/testkit/storetest"
)

func TestPublish(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		content, ids := sqlstore.NewContent(db), sqlstore.NewIdentity(db)
		storetest.TestPublish(t, func(*testing.T) storetest.PublishStores {
			return storetest.PublishStores{Publish: sqlstore.NewPublish(db), ContentStores: storetest.ContentStores{
				Content: content, Tx: db,
				Identity: storetest.IdentityStores{Orgs: ids, Users: ids, Tokens: ids, Tx: db},
			}}
		})
	})
}
