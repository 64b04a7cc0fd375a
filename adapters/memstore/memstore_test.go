package memstore_test

import (
	"testing"

	"github.com/devpilot/devpilot/adapters/memstore"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/storetest"
)

func identity(s *memstore.Store) storetest.IdentityStores {
	return storetest.IdentityStores{Orgs: s, Users: s, Tokens: s, Links: s, Tx: s}
}

func TestIdentity(t *testing.T) {
	t.Parallel()
	s := memstore.New()
	storetest.TestIdentity(t, func(*testing.T) storetest.IdentityStores { return identity(s) })
}

func TestToolPolicies(t *testing.T) {
	t.Parallel()
	s := memstore.New()
	storetest.TestToolPolicies(t, func(*testing.T) storetest.ToolPolicyStores {
		return storetest.ToolPolicyStores{Policies: s, Identity: identity(s)}
	})
}

func TestPermissionGrants(t *testing.T) {
	t.Parallel()
	s := memstore.New()
	storetest.TestPermissionGrants(t, func(*testing.T) storetest.PermissionStores {
		return storetest.PermissionStores{Grants: s, Identity: identity(s)}
	})
}

func TestIdempotency(t *testing.T) {
	t.Parallel()
	s := memstore.New()
	storetest.TestIdempotency(t, func(*testing.T) storetest.IdempotencyStores {
		return storetest.IdempotencyStores{Idempotency: s, Identity: identity(s)}
	})
}

func TestUsage(t *testing.T) {
	t.Parallel()
	s := memstore.New()
	storetest.TestUsage(t, func(*testing.T) storetest.UsageStores { return storetest.UsageStores{Usage: s} })
}

func TestBudgets(t *testing.T) {
	t.Parallel()
	s := memstore.New()
	storetest.TestBudgets(t, func(*testing.T) ports.BudgetStore { return s })
}

func spec(s *memstore.Store) storetest.SpecStores {
	return storetest.SpecStores{Specs: s, Standards: s, Tx: s, Identity: identity(s)}
}

func TestSpec(t *testing.T) {
	t.Parallel()
	s := memstore.New()
	storetest.TestSpec(t, func(*testing.T) storetest.SpecStores { return spec(s) })
}

func TestSpecDigests(t *testing.T) {
	t.Parallel()
	s := memstore.New()
	storetest.TestSpecDigests(t, func(*testing.T) storetest.SpecDigestStores {
		return storetest.SpecDigestStores{Digests: s, Spec: spec(s)}
	})
}

func TestIssueExports(t *testing.T) {
	t.Parallel()
	s := memstore.New()
	storetest.TestIssueExports(t, func(*testing.T) storetest.IssueExportStores {
		return storetest.IssueExportStores{Exports: s, Spec: spec(s)}
	})
}

func TestContent(t *testing.T) {
	t.Parallel()
	s := memstore.New()
	storetest.TestContent(t, func(*testing.T) storetest.ContentStores {
		return storetest.ContentStores{Content: s, Tx: s, Identity: identity(s)}
	})
}

func TestCloud(t *testing.T) {
	t.Parallel()
	s := memstore.New()
	storetest.TestCloud(t, func(*testing.T) storetest.CloudStores {
		return storetest.CloudStores{Accounts: s, Costs: s, Audit: s, Tx: s, Identity: identity(s)}
	})
}

func TestSCM(t *testing.T) {
	t.Parallel()
	s := memstore.New()
	storetest.TestSCM(t, func(*testing.T) storetest.SCMStores {
		return storetest.SCMStores{SCM: s, Tx: s, Identity: identity(s)}
	})
}

func TestAssistant(t *testing.T) {
	t.Parallel()
	s := memstore.New()
	var open func(*testing.T) storetest.AssistantStores
	open = func(*testing.T) storetest.AssistantStores {
		return storetest.AssistantStores{
			Sessions: s, Messages: s, Confirmations: s, Events: s, Turns: s, Preferences: s, Tx: s,
			Identity: identity(s), Reopen: open,
		}
	}
	storetest.TestAssistant(t, open)
}

func TestRates(t *testing.T) {
	t.Parallel()
	s := memstore.New()
	storetest.TestRates(t, func(*testing.T) storetest.RateStores { return storetest.RateStores{Rates: s} })
}

func TestInvitations(t *testing.T) {
	t.Parallel()
	s := memstore.New()
	storetest.TestInvitations(t, func(*testing.T) storetest.InvitationStores {
		return storetest.InvitationStores{Invitations: s, Identity: identity(s)}
	})
}

func TestPublish(t *testing.T) {
	t.Parallel()
	s := memstore.New()
	storetest.TestPublish(t, func(*testing.T) storetest.PublishStores {
		return storetest.PublishStores{Publish: s, ContentStores: storetest.ContentStores{Content: s, Tx: s, Identity: identity(s)}}
	})
}

func TestRetention(t *testing.T) {
	t.Parallel()
	s := memstore.New()
	storetest.TestRetention(t, func(*testing.T) storetest.RetentionStores {
		return storetest.RetentionStores{Retention: s, SCM: s, Sessions: s, Confirmations: s, Events: s, Turns: s,
			Invitations: s, Rates: s, Accounts: s, Costs: s, Audit: s, Identity: identity(s)}
	})
}
