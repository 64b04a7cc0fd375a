package memstore_test

import (
	"testing"

	"github.com/devpilot/devpilot/testkit/memstore"
	"github.com/devpilot/devpilot/testkit/storetest"
)

func identity(s *memstore.Store) storetest.IdentityStores {
	return storetest.IdentityStores{Orgs: s, Users: s, Tokens: s, Tx: s}
}

func TestIdentity(t *testing.T) {
	t.Parallel()
	s := memstore.New()
	storetest.TestIdentity(t, func(*testing.T) storetest.IdentityStores { return identity(s) })
}
