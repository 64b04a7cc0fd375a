package sqlstore

import (
	"context"
	"database/sql"
	"errors"

	"github.com/devpilot/devpilot/ports"
)

var _ ports.BudgetStore = (*Budgets)(nil)

// Budgets keeps the monthly token budgets admins set for their
// organisations; it implements ports.BudgetStore, with the errors that port
// documents.
type Budgets struct {
	db *DB
}

// NewBudgets returns the budget store over db.
func NewBudgets(db *DB) *Budgets { return &Budgets{db: db} }

// OrgTokenBudget implements ports.BudgetStore.
func (s *Budgets) OrgTokenBudget(ctx context.Context, orgID string) (int64, bool, error) {
	var tokens int64
	err := s.db.read(ctx).get(ctx, &tokens, `SELECT monthly_tokens FROM org_token_budgets WHERE org_id = ?`, orgID)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, storeErr(err, "token budget", "org "+orgID)
	}
	return tokens, true, nil
}

// SetOrgTokenBudget implements ports.BudgetStore: an upsert, or a delete
// when tokens is nil.
func (s *Budgets) SetOrgTokenBudget(ctx context.Context, orgID string, tokens *int64) error {
	if err := ports.CheckOrgTokenBudget(orgID, tokens); err != nil {
		return err
	}
	var err error
	if tokens == nil {
		_, err = s.db.write(ctx).exec(ctx, `DELETE FROM org_token_budgets WHERE org_id = ?`, orgID)
	} else {
		_, err = s.db.write(ctx).exec(ctx, `INSERT INTO org_token_budgets (org_id, monthly_tokens) VALUES (?, ?)
			ON CONFLICT (org_id) DO UPDATE SET monthly_tokens = excluded.monthly_tokens`, orgID, *tokens)
	}
	return storeErr(err, "token budget", "org "+orgID)
}
