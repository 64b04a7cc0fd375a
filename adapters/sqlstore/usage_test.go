package sqlstore_test

import (
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/storetest"
)

func TestUsage(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		usage := sqlstore.NewUsage(db)
		storetest.TestUsage(t, func(*testing.T) storetest.UsageStores { return storetest.UsageStores{Usage: usage} })
	})
}

func TestBudgets(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		budgets := sqlstore.NewBudgets(db)
		storetest.TestBudgets(t, func(*testing.T) ports.BudgetStore { return budgets })
	})
}
