package storetest

import (
	"testing"

	"github.com/devpilot/devpilot/ports"
)

// TestBudgets runs the contract of ports.BudgetStore. newStores is called by
// every subtest (subtests run in parallel) and may return stores over a
// shared database; each subtest uses organisations of its own.
func TestBudgets(t *testing.T, newStores Factory) {
	runSuite(t, view(newStores, Stores.budgets, needBudgets), []suiteCase[ports.BudgetStore]{
		{"SetGetRemove", testBudgetSetGetRemove},
		{"Invalid", testBudgetInvalid},
	})
}

type budgetGot struct {
	Tokens int64
	Set    bool
}

func mustBudget(t *testing.T, s ports.BudgetStore, org string) budgetGot {
	t.Helper()
	tokens, ok, err := s.OrgTokenBudget(t.Context(), org)
	if err != nil {
		t.Fatalf("OrgTokenBudget(%s): %v", org, err)
	}
	return budgetGot{tokens, ok}
}

func mustSetBudget(t *testing.T, s ports.BudgetStore, org string, tokens *int64) {
	t.Helper()
	if err := s.SetOrgTokenBudget(t.Context(), org, tokens); err != nil {
		t.Fatalf("SetOrgTokenBudget(%s, %v): %v", org, tokens, err)
	}
}

func testBudgetSetGetRemove(t *testing.T, s ports.BudgetStore) {
	org, other := newID(), newID()
	checkEqual(t, "unset", mustBudget(t, s, org), budgetGot{})
	mustSetBudget(t, s, org, new(int64(5000)))
	checkEqual(t, "set", mustBudget(t, s, org), budgetGot{5000, true})
	checkEqual(t, "another org", mustBudget(t, s, other), budgetGot{})
	mustSetBudget(t, s, org, new(int64(0)))
	checkEqual(t, "set to zero", mustBudget(t, s, org), budgetGot{0, true})
	mustSetBudget(t, s, org, new(ports.MaxMonthlyTokens))
	checkEqual(t, "set to the maximum", mustBudget(t, s, org), budgetGot{ports.MaxMonthlyTokens, true})
	mustSetBudget(t, s, org, nil)
	checkEqual(t, "removed", mustBudget(t, s, org), budgetGot{})
	mustSetBudget(t, s, org, nil) // removing what is not there is no error
	checkEqual(t, "removed again", mustBudget(t, s, org), budgetGot{})
}

func testBudgetInvalid(t *testing.T, s ports.BudgetStore) {
	org := newID()
	for name, tc := range map[string]struct {
		org    string
		tokens int64
	}{
		"no org":   {"", 1},
		"negative": {org, -1},
		"too big":  {org, ports.MaxMonthlyTokens + 1},
	} {
		if err := s.SetOrgTokenBudget(t.Context(), tc.org, &tc.tokens); ports.KindOf(err) != ports.KindInvalid {
			t.Errorf("%s: SetOrgTokenBudget = %v, want invalid", name, err)
		}
	}
	checkEqual(t, "after invalid sets", mustBudget(t, s, org), budgetGot{})
}
