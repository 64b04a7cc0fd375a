package ports

import (
	"context"
	"time"
)

//go:generate go tool mockgen -typed -destination ../testkit/mocks/toolpolicy.go -package mocks . ToolPolicyStore

// ToolPolicy is an organisation's rule for one assistant tool: with
// AlwaysConfirm set, every call of the tool waits for a human decision, as a
// write does. A tool without a policy follows its effect.
type ToolPolicy struct {
	OrgID         string
	Tool          string
	AlwaysConfirm bool
	// UpdatedBy is the id of the user who last set the policy; UpdatedAt is
	// when.
	UpdatedBy string
	UpdatedAt time.Time
}

// ToolPolicyStore keeps each organisation's tool policies.
type ToolPolicyStore interface {
	// SetAlwaysConfirm sets the org's policy of tool, creating it or
	// replacing the one there, and records who set it and when. Errors:
	// not_found when the org does not exist.
	SetAlwaysConfirm(ctx context.Context, orgID, tool string, on bool, by string, at time.Time) error
	// ListToolPolicies returns the org's policies ordered by tool name;
	// none (nil) for an org that set none or does not exist.
	ListToolPolicies(ctx context.Context, orgID string) ([]ToolPolicy, error)
}
