package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// toolPolicyStores are the tool policy store under test and the identity
// stores that seed the orgs owning its policies.
type toolPolicyStores struct {
	Policies ports.ToolPolicyStore
	Identity identityStores
}

// TestToolPolicies runs the contract of ports.ToolPolicyStore. newStores is
// called by every subtest (subtests run in parallel) and may return stores
// over a shared database.
//
// Where the port leaves a case open, the suite expects times to read back in
// UTC, at least to the millisecond.
func TestToolPolicies(t *testing.T, newStores Factory) {
	runSuite(t, view(newStores, Stores.toolPolicy, needToolPolicy), []suiteCase[toolPolicyStores]{
		{"ListEmpty", testToolPoliciesEmpty},
		{"SetAndList", testToolPoliciesSetAndList},
		{"Upsert", testToolPoliciesUpsert},
		{"OrgIsolation", testToolPoliciesOrgIsolation},
		{"MissingOrg", testToolPoliciesMissingOrg},
		{"RaceSet", testToolPoliciesRace},
	})
}

func newPolicyOrg(t *testing.T, s toolPolicyStores) (ports.Org, ports.User) {
	t.Helper()
	org := mustCreateOrg(t, s.Identity, newOrg())
	u := newUser(org.ID)
	u.Role = ports.RoleAdmin
	return org, mustCreateUser(t, s.Identity, u)
}

func mustSetPolicy(t *testing.T, s toolPolicyStores, p ports.ToolPolicy) ports.ToolPolicy {
	t.Helper()
	if err := s.Policies.SetAlwaysConfirm(t.Context(), p.OrgID, p.Tool, p.AlwaysConfirm, p.UpdatedBy, p.UpdatedAt); err != nil {
		t.Fatalf("SetAlwaysConfirm(%s, %s, %v): %v", p.OrgID, p.Tool, p.AlwaysConfirm, err)
	}
	return p
}

func mustListPolicies(t *testing.T, s toolPolicyStores, orgID string) []ports.ToolPolicy {
	t.Helper()
	got, err := s.Policies.ListToolPolicies(t.Context(), orgID)
	if err != nil {
		t.Fatalf("ListToolPolicies(%s): %v", orgID, err)
	}
	return got
}

func checkPolicies(t *testing.T, what string, got, want []ports.ToolPolicy) {
	t.Helper()
	norm := func(ps []ports.ToolPolicy) []ports.ToolPolicy {
		if len(ps) == 0 {
			return nil
		}
		out := make([]ports.ToolPolicy, len(ps))
		for i, p := range ps {
			p.UpdatedAt = ms(p.UpdatedAt)
			out[i] = p
		}
		return out
	}
	for i := range got {
		checkUTC(t, what, &got[i].UpdatedAt)
	}
	checkEqual(t, what, norm(got), norm(want))
}

func testToolPoliciesEmpty(t *testing.T, s toolPolicyStores) {
	org, _ := newPolicyOrg(t, s)
	if got := mustListPolicies(t, s, org.ID); len(got) != 0 {
		t.Errorf("a new org's policies: %+v, want none", got)
	}
	if got := mustListPolicies(t, s, newID()); len(got) != 0 {
		t.Errorf("an unknown org's policies: %+v, want none", got)
	}
}

func testToolPoliciesSetAndList(t *testing.T, s toolPolicyStores) {
	org, admin := newPolicyOrg(t, s)
	// Set out of order: the list is ordered by tool name.
	want := []ports.ToolPolicy{
		{OrgID: org.ID, Tool: "list_services", AlwaysConfirm: true, UpdatedBy: admin.ID, UpdatedAt: base.Add(time.Minute)},
		{OrgID: org.ID, Tool: "get_costs", AlwaysConfirm: true, UpdatedBy: admin.ID, UpdatedAt: base},
		{OrgID: org.ID, Tool: "read_logs", AlwaysConfirm: false, UpdatedBy: admin.ID, UpdatedAt: base.Add(2 * time.Minute)},
	}
	for _, p := range want {
		mustSetPolicy(t, s, p)
	}
	checkPolicies(t, "policies", mustListPolicies(t, s, org.ID), []ports.ToolPolicy{want[1], want[0], want[2]})
}

func testToolPoliciesUpsert(t *testing.T, s toolPolicyStores) {
	org, admin := newPolicyOrg(t, s)
	other := mustCreateUser(t, s.Identity, newUser(org.ID))
	first := mustSetPolicy(t, s, ports.ToolPolicy{OrgID: org.ID, Tool: "get_costs", AlwaysConfirm: true, UpdatedBy: admin.ID, UpdatedAt: base})
	checkPolicies(t, "after the first set", mustListPolicies(t, s, org.ID), []ports.ToolPolicy{first})

	second := mustSetPolicy(t, s, ports.ToolPolicy{OrgID: org.ID, Tool: "get_costs", AlwaysConfirm: false, UpdatedBy: other.ID, UpdatedAt: base.Add(time.Hour)})
	checkPolicies(t, "after unsetting", mustListPolicies(t, s, org.ID), []ports.ToolPolicy{second})

	mustSetPolicy(t, s, ports.ToolPolicy{OrgID: org.ID, Tool: "get_costs", AlwaysConfirm: true, UpdatedBy: admin.ID, UpdatedAt: base.Add(2 * time.Hour)})
	// Setting the same value again still records who and when.
	again := mustSetPolicy(t, s, ports.ToolPolicy{OrgID: org.ID, Tool: "get_costs", AlwaysConfirm: true, UpdatedBy: other.ID, UpdatedAt: base.Add(3 * time.Hour)})
	checkPolicies(t, "after setting again", mustListPolicies(t, s, org.ID), []ports.ToolPolicy{again})
}

func testToolPoliciesOrgIsolation(t *testing.T, s toolPolicyStores) {
	orgA, adminA := newPolicyOrg(t, s)
	orgB, adminB := newPolicyOrg(t, s)
	a := mustSetPolicy(t, s, ports.ToolPolicy{OrgID: orgA.ID, Tool: "list_repos", AlwaysConfirm: true, UpdatedBy: adminA.ID, UpdatedAt: base})
	b := mustSetPolicy(t, s, ports.ToolPolicy{OrgID: orgB.ID, Tool: "list_repos", AlwaysConfirm: false, UpdatedBy: adminB.ID, UpdatedAt: base.Add(time.Second)})
	bOnly := mustSetPolicy(t, s, ports.ToolPolicy{OrgID: orgB.ID, Tool: "list_pulls", AlwaysConfirm: true, UpdatedBy: adminB.ID, UpdatedAt: base})

	checkPolicies(t, "org A", mustListPolicies(t, s, orgA.ID), []ports.ToolPolicy{a})
	checkPolicies(t, "org B", mustListPolicies(t, s, orgB.ID), []ports.ToolPolicy{bOnly, b})
}

func testToolPoliciesMissingOrg(t *testing.T, s toolPolicyStores) {
	err := s.Policies.SetAlwaysConfirm(t.Context(), newID(), "get_costs", true, newID(), base)
	if !errors.Is(err, ports.ErrNotFound) {
		t.Fatalf("SetAlwaysConfirm for a missing org: %v, want not_found", err)
	}
}

func testToolPoliciesRace(t *testing.T, s toolPolicyStores) {
	org, admin := newPolicyOrg(t, s)
	const n = 8
	errs := race(n, func(i int) error {
		return s.Policies.SetAlwaysConfirm(t.Context(), org.ID, "get_costs", i%2 == 0, admin.ID, base.Add(time.Duration(i)*time.Second))
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("SetAlwaysConfirm %d: %v", i, err)
		}
	}
	got := mustListPolicies(t, s, org.ID)
	if len(got) != 1 || got[0].Tool != "get_costs" || got[0].OrgID != org.ID {
		t.Fatalf("after racing sets: %+v, want one policy of get_costs", got)
	}
	// The row is one whole set, not a mix of two.
	i := int(ms(got[0].UpdatedAt).Sub(ms(base)).Round(time.Second) / time.Second)
	if i < 0 || i >= n || got[0].AlwaysConfirm != (i%2 == 0) {
		t.Errorf("after racing sets: %+v is no single call's policy", got[0])
	}
}
