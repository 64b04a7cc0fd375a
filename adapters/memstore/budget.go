package memstore

import (
	"context"

	"github.com/devpilot/devpilot/ports"
)

var _ ports.BudgetStore = (*Store)(nil)

// OrgTokenBudget returns the organisation's monthly token budget, if set.
func (s *Store) OrgTokenBudget(_ context.Context, orgID string) (int64, bool, error) {
	defer s.lock()()
	tokens, ok := s.budgets[orgID]
	return tokens, ok, nil
}

// SetOrgTokenBudget sets the organisation's monthly token budget, or
// removes it when tokens is nil.
func (s *Store) SetOrgTokenBudget(ctx context.Context, orgID string, tokens *int64) error {
	if err := ports.CheckOrgTokenBudget(orgID, tokens); err != nil {
		return err
	}
	defer s.lock()()
	if tokens == nil {
		del(ctx, s, s.budgets, orgID)
		return nil
	}
	put(ctx, s, s.budgets, orgID, *tokens)
	return nil
}
