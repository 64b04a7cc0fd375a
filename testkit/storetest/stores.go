package storetest

import (
	"reflect"
	"testing"

	"github.com/devpilot/devpilot/ports"
)

// Stores is every store the contract suites exercise, as one driver (an
// implementation of the store ports) opens them over one database. A driver
// builds it in a Factory and runs each suite in one line:
//
//	func TestIdentity(t *testing.T) { storetest.TestIdentity(t, newStores) }
//
// Each suite uses only the stores of its ports, and fails at once, naming the
// field, when one of them is nil; so a driver of some of the ports may leave
// the others nil and run only their suites.
type Stores struct {
	// Orgs, Users, Tokens and Links are the identity stores; every suite but
	// TestRates, TestUsage and TestBudgets seeds its owners with them.
	Orgs   ports.OrgStore
	Users  ports.UserStore
	Tokens ports.TokenStore
	Links  ports.IdentityLinkStore
	// Tx is the Transactor whose transactions the stores join.
	Tx ports.Transactor

	Sessions      ports.ChatSessionStore
	Messages      ports.ChatMessageStore
	Confirmations ports.ConfirmationStore
	Events        ports.StreamEventStore
	Turns         ports.TurnStore
	Preferences   ports.PreferenceStore

	CloudAccounts ports.CloudAccountStore
	Costs         ports.CostCacheStore
	Audit         ports.AuditStore

	Content ports.ContentStore
	Publish ports.PublishStore

	Specs        ports.SpecStore
	Standards    ports.StandardStore
	SpecDigests  ports.SpecDigestStore
	IssueExports ports.IssueExportStore

	SCM          ports.SCMStore
	Idempotency  ports.IdempotencyStore
	Invitations  ports.InvitationStore
	Permissions  ports.PermissionStore
	ToolPolicies ports.ToolPolicyStore
	MCPServers   ports.MCPServerStore
	Rates        ports.RateStore
	Usage        ports.UsageStore
	Budgets      ports.BudgetStore
	Retention    ports.RetentionStore

	// Reopen returns new stores over the same data, as a restarted process
	// or another replica would open them; they may stay open until t ends.
	// TestAssistant's restart case needs it.
	Reopen func(t *testing.T) Stores
}

// Factory returns the stores a subtest runs on. Every suite calls it once
// per subtest, and subtests run in parallel; it may return stores over a
// shared database, since the suites use fresh ids and names, but TestRetention
// needs a database no other suite uses at the same time (see TestRetention).
type Factory func(t *testing.T) Stores

// view narrows newStores to the stores one suite uses: each subtest fails at
// once, naming the field, when its Stores leave one of need nil.
func view[S any](newStores Factory, narrow func(Stores) S, need []string) func(*testing.T) S {
	return func(t *testing.T) S {
		t.Helper()
		s := newStores(t)
		if missing := missing(s, need); len(missing) > 0 {
			t.Fatalf("storetest: Stores.%s is nil; this suite needs %v", missing[0], need)
		}
		return narrow(s)
	}
}

// missing returns the names in need that are not fields of Stores or are
// nil in s.
func missing(s Stores, need []string) []string {
	var names []string
	v := reflect.ValueOf(s)
	for _, name := range need {
		if f := v.FieldByName(name); !f.IsValid() || f.IsNil() {
			names = append(names, name)
		}
	}
	return names
}

// identityFields are the fields behind identityStores, which seed the owners.
var identityFields = []string{"Orgs", "Users", "Tokens", "Tx"}

// needs returns identityFields followed by more.
func needs(more ...string) []string { return append(append([]string(nil), identityFields...), more...) }

// The fields of Stores each suite needs set (view fails a subtest without
// them).
var (
	needAssistant   = needs("Sessions", "Messages", "Confirmations", "Events", "Turns", "Preferences")
	needBudgets     = []string{"Budgets"}
	needCloud       = needs("CloudAccounts", "Costs", "Audit")
	needContent     = needs("Content")
	needIdempotency = needs("Idempotency")
	needIdentity    = needs("Links")
	needInvitation  = needs("Invitations")
	needIssueExport = needs("Specs", "Standards", "IssueExports")
	needPermission  = needs("Permissions")
	needPublish     = needs("Content", "Publish")
	needRate        = []string{"Rates"}
	needRetention   = needs("Retention", "SCM", "Sessions", "Confirmations", "Events", "Turns",
		"Invitations", "Rates", "CloudAccounts", "Costs", "Audit")
	needSCM        = needs("SCM")
	needSpec       = needs("Specs", "Standards")
	needSpecDigest = needs("Specs", "Standards", "SpecDigests")
	needToolPolicy = needs("ToolPolicies")
	needMCP        = needs("MCPServers")
	needUsage      = []string{"Usage"}
)

func (s Stores) identity() identityStores {
	return identityStores{Orgs: s.Orgs, Users: s.Users, Tokens: s.Tokens, Links: s.Links, Tx: s.Tx}
}

func (s Stores) assistant() assistantStores {
	a := assistantStores{
		Sessions: s.Sessions, Messages: s.Messages, Confirmations: s.Confirmations, Events: s.Events,
		Turns: s.Turns, Preferences: s.Preferences, Tx: s.Tx, Identity: s.identity(),
	}
	if s.Reopen != nil {
		a.Reopen = func(t *testing.T) assistantStores { return s.Reopen(t).assistant() }
	}
	return a
}

func (s Stores) cloud() cloudStores {
	return cloudStores{Accounts: s.CloudAccounts, Costs: s.Costs, Audit: s.Audit, Tx: s.Tx, Identity: s.identity()}
}

func (s Stores) content() contentStores {
	return contentStores{Content: s.Content, Tx: s.Tx, Identity: s.identity()}
}

func (s Stores) publish() publishStores {
	return publishStores{Publish: s.Publish, contentStores: s.content()}
}

func (s Stores) spec() specStores {
	return specStores{Specs: s.Specs, Standards: s.Standards, Tx: s.Tx, Identity: s.identity()}
}

func (s Stores) specDigest() specDigestStores {
	return specDigestStores{Digests: s.SpecDigests, Spec: s.spec()}
}

func (s Stores) issueExport() issueExportStores {
	return issueExportStores{Exports: s.IssueExports, Spec: s.spec()}
}

func (s Stores) scm() scmStores {
	return scmStores{SCM: s.SCM, Tx: s.Tx, Identity: s.identity()}
}

func (s Stores) idempotency() idempotencyStores {
	return idempotencyStores{Idempotency: s.Idempotency, Identity: s.identity()}
}

func (s Stores) invitation() invitationStores {
	return invitationStores{Invitations: s.Invitations, Identity: s.identity()}
}

func (s Stores) permission() permissionStores {
	return permissionStores{Grants: s.Permissions, Identity: s.identity()}
}

func (s Stores) toolPolicy() toolPolicyStores {
	return toolPolicyStores{Policies: s.ToolPolicies, Identity: s.identity()}
}

func (s Stores) mcp() mcpStores {
	return mcpStores{Servers: s.MCPServers, Identity: s.identity()}
}

func (s Stores) rate() rateStores { return rateStores{Rates: s.Rates} }

func (s Stores) usage() usageStores { return usageStores{Usage: s.Usage} }

func (s Stores) budgets() ports.BudgetStore { return s.Budgets }

func (s Stores) retention() retentionStores {
	return retentionStores{
		Retention: s.Retention, SCM: s.SCM, Sessions: s.Sessions, Confirmations: s.Confirmations,
		Events: s.Events, Turns: s.Turns, Invitations: s.Invitations, Rates: s.Rates,
		Accounts: s.CloudAccounts, Costs: s.Costs, Audit: s.Audit, Identity: s.identity(),
	}
}
