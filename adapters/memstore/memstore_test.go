package memstore_test

import (
	"testing"

	"github.com/devpilot/devpilot/adapters/memstore"
	"github.com/devpilot/devpilot/testkit/storetest"
)

// Every contract suite of testkit/storetest.

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

// runSuite runs suite on a Store of its own that all the suite's subtests
// share. Reopen returns the same Store: its data lives as long as it does.
func runSuite(t *testing.T, suite func(*testing.T, storetest.Factory)) {
	t.Parallel()
	s := memstore.New()
	var open storetest.Factory
	open = func(*testing.T) storetest.Stores {
		return storetest.Stores{
			Orgs: s, Users: s, Tokens: s, Links: s, Tx: s,
			Sessions: s, Messages: s, Confirmations: s, Events: s, Turns: s, Preferences: s,
			CloudAccounts: s, Costs: s, Audit: s,
			Content: s, Publish: s,
			Specs: s, Standards: s, SpecDigests: s, IssueExports: s,
			SCM: s, Idempotency: s, Invitations: s, Permissions: s, ToolPolicies: s, MCPServers: s,
			Rates: s, Usage: s, Budgets: s, Retention: s,
			Reopen: open,
		}
	}
	suite(t, open)
}
