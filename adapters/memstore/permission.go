package memstore

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/devpilot/devpilot/ports"
)

var _ ports.PermissionStore = (*Store)(nil)

type grantKey struct {
	org  string
	perm ports.Permission
}

// SetPermissionRoles sets the org's grant of perm, creating or replacing
// it; not_found when the org does not exist.
func (s *Store) SetPermissionRoles(ctx context.Context, orgID string, perm ports.Permission, roles []ports.Role, by string, at time.Time) error {
	defer s.lock()()
	if _, ok := s.identity.orgs[orgID]; !ok {
		return ports.NotFound("org", orgID)
	}
	var kept []ports.Role
	if len(roles) > 0 {
		kept = slices.Clone(roles)
	}
	put(ctx, s, s.grants, grantKey{orgID, perm}, ports.PermissionGrant{
		OrgID: orgID, Permission: perm, Roles: kept, UpdatedBy: by, UpdatedAt: utc(at),
	})
	return nil
}

// ListPermissionGrants returns the org's grants ordered by permission name;
// nil when it has none.
func (s *Store) ListPermissionGrants(_ context.Context, orgID string) ([]ports.PermissionGrant, error) {
	defer s.lock()()
	var out []ports.PermissionGrant
	for k, g := range s.grants {
		if k.org == orgID {
			g.Roles = slices.Clone(g.Roles)
			out = append(out, g)
		}
	}
	slices.SortFunc(out, func(a, b ports.PermissionGrant) int {
		return strings.Compare(string(a.Permission), string(b.Permission))
	})
	return out, nil
}
