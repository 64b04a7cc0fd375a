package sqlstore_test

import (
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/testkit/storetest"
)

func TestIssueExports(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		spec, ids := sqlstore.NewSpec(db), sqlstore.NewIdentity(db)
		storetest.TestIssueExports(t, func(*testing.T) storetest.IssueExportStores {
			return storetest.IssueExportStores{Exports: spec, Spec: storetest.SpecStores{
				Specs: spec, Standards: spec, Tx: db,
				Identity: storetest.IdentityStores{Orgs: ids, Users: ids, Tokens: ids, Tx: db},
			}}
		})
	})
}
