package sqlstore

import (
	"context"
	"time"

	"github.com/devpilot/devpilot/ports"
)

var _ ports.ToolPolicyStore = (*ToolPolicies)(nil)

// ToolPolicies keeps each organisation's tool policies; it implements
// ports.ToolPolicyStore, with the errors that port documents.
type ToolPolicies struct {
	db *DB
}

// NewToolPolicies returns the tool policy store over db.
func NewToolPolicies(db *DB) *ToolPolicies {
	return &ToolPolicies{db: db}
}

type toolPolicyRow struct {
	OrgID         string    `db:"org_id"`
	Tool          string    `db:"tool"`
	AlwaysConfirm bool      `db:"always_confirm"`
	UpdatedBy     string    `db:"updated_by"`
	UpdatedAt     timestamp `db:"updated_at"`
}

// SetAlwaysConfirm implements ports.ToolPolicyStore with one INSERT … ON
// CONFLICT DO UPDATE, so concurrent calls leave the last one's policy.
func (s *ToolPolicies) SetAlwaysConfirm(ctx context.Context, orgID, tool string, on bool, by string, at time.Time) error {
	_, err := s.db.write(ctx).exec(ctx, `INSERT INTO tool_policies (org_id, tool, always_confirm, updated_by, updated_at)
		VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (org_id, tool) DO UPDATE SET always_confirm = excluded.always_confirm,
			updated_by = excluded.updated_by, updated_at = excluded.updated_at`,
		orgID, tool, on, by, timestamp(at))
	return storeErr(err, "tool policy "+tool, "org "+orgID)
}

// ListToolPolicies implements ports.ToolPolicyStore.
func (s *ToolPolicies) ListToolPolicies(ctx context.Context, orgID string) ([]ports.ToolPolicy, error) {
	var rows []toolPolicyRow
	err := s.db.read(ctx).list(ctx, &rows, `SELECT org_id, tool, always_confirm, updated_by, updated_at
		FROM tool_policies WHERE org_id = ? ORDER BY tool`, orgID)
	if err != nil {
		return nil, storeErr(err, "tool policies", "")
	}
	var out []ports.ToolPolicy
	for _, r := range rows {
		out = append(out, ports.ToolPolicy{OrgID: r.OrgID, Tool: r.Tool, AlwaysConfirm: r.AlwaysConfirm,
			UpdatedBy: r.UpdatedBy, UpdatedAt: time.Time(r.UpdatedAt)})
	}
	return out, nil
}
