package sqlstore_test

import (
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/testkit/storetest"
)

func TestRates(t *testing.T) {
	t.Parallel()
	sqlstoretest.ForEachDialect(t, func(t *testing.T, db *sqlstore.DB) {
		t.Parallel()
		rates := sqlstore.NewRates(db)
		storetest.TestRates(t, func(*testing.T) storetest.RateStores { return storetest.RateStores{Rates: rates} })
	})
}
