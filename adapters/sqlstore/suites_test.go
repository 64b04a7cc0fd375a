package sqlstore_test

import (
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/testkit/storetest"
)

// Every contract suite of testkit/storetest, on each dialect.

func TestIdentity(t *testing.T)         { runSuite(t, storetest.TestIdentity) }
func TestAssistant(t *testing.T)        { runSuite(t, storetest.TestAssistant) }
func TestCloud(t *testing.T)            { runSuite(t, storetest.TestCloud) }
func TestContent(t *testing.T)          { runSuite(t, storetest.TestContent) }
func TestPublish(t *testing.T)          { runSuite(t, storetest.TestPublish) }
func TestSpec(t *testing.T)             { runSuite(t, storetest.TestSpec) }
func TestSpecDigests(t *testing.T)      { runSuite(t, storetest.TestSpecDigests) }
func TestIssueExports(t *testing.T)     { runSuite(t, storetest.TestIssueExports) }
func TestSCM(t *testing.T)              { runSuite(t, storetest.TestSCM) }
func TestIdempotency(t *testing.T)      { runSuite(t, storetest.TestIdempotency) }
func TestInvitations(t *testing.T)      { runSuite(t, storetest.TestInvitations) }
func TestPermissionGrants(t *testing.T) { runSuite(t, storetest.TestPermissionGrants) }
func TestToolPolicies(t *testing.T)     { runSuite(t, storetest.TestToolPolicies) }
func TestMCPServers(t *testing.T)       { runSuite(t, storetest.TestMCPServers) }
func TestRates(t *testing.T)            { runSuite(t, storetest.TestRates) }
func TestUsage(t *testing.T)            { runSuite(t, storetest.TestUsage) }
func TestBudgets(t *testing.T)          { runSuite(t, storetest.TestBudgets) }
func TestRetention(t *testing.T)        { runSuite(t, storetest.TestRetention) }

// runSuite runs suite on each dialect, on a database of its own that all
// the suite's subtests share.
func runSuite(t *testing.T, suite func(*testing.T, storetest.Factory)) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			s := openStores(t, sqlstoretest.URL(t, d))
			suite(t, func(*testing.T) storetest.Stores { return s })
		})
	}
}

// openStores opens the database at url for t, migrated, and returns every
// store over it; their Reopen opens url again, as a restarted process would.
func openStores(t *testing.T, url string) storetest.Stores {
	db := sqlstoretest.OpenURL(t, url)
	ids, a, cloud, spec := sqlstore.NewIdentity(db), sqlstore.NewAssistant(db), sqlstore.NewCloud(db), sqlstore.NewSpec(db)
	return storetest.Stores{
		Orgs: ids, Users: ids, Tokens: ids, Links: ids, Tx: db,
		Sessions: a, Messages: a, Confirmations: a, Events: a, Turns: a, Preferences: a,
		CloudAccounts: cloud, Costs: cloud, Audit: cloud,
		Content: sqlstore.NewContent(db), Publish: sqlstore.NewPublish(db),
		Specs: spec, Standards: spec, SpecDigests: spec, IssueExports: spec,
		SCM:          sqlstore.NewSCM(db),
		Idempotency:  sqlstore.NewIdempotency(db),
		Invitations:  sqlstore.NewInvitations(db),
		Permissions:  sqlstore.NewPermissions(db),
		ToolPolicies: sqlstore.NewToolPolicies(db),
		MCPServers:   sqlstore.NewMCPServers(db),
		Rates:        sqlstore.NewRates(db),
		Usage:        sqlstore.NewUsage(db),
		Budgets:      sqlstore.NewBudgets(db),
		Retention:    sqlstore.NewRetention(db),
		Reopen:       func(t *testing.T) storetest.Stores { return openStores(t, url) },
	}
}
