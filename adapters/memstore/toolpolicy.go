package memstore

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/devpilot/devpilot/ports"
)

var _ ports.ToolPolicyStore = (*Store)(nil)

type policyKey struct{ org, tool string }

// SetAlwaysConfirm sets the org's policy of tool, creating or replacing it;
// not_found when the org does not exist.
func (s *Store) SetAlwaysConfirm(ctx context.Context, orgID, tool string, on bool, by string, at time.Time) error {
	defer s.lock()()
	if _, ok := s.identity.orgs[orgID]; !ok {
		return ports.NotFound("org", orgID)
	}
	put(ctx, s, s.policies, policyKey{orgID, tool}, ports.ToolPolicy{
		OrgID: orgID, Tool: tool, AlwaysConfirm: on, UpdatedBy: by, UpdatedAt: utc(at),
	})
	return nil
}

// ListToolPolicies returns the org's policies ordered by tool name; nil when
// it has none.
func (s *Store) ListToolPolicies(_ context.Context, orgID string) ([]ports.ToolPolicy, error) {
	defer s.lock()()
	var out []ports.ToolPolicy
	for k, p := range s.policies {
		if k.org == orgID {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b ports.ToolPolicy) int { return strings.Compare(a.Tool, b.Tool) })
	return out, nil
}
