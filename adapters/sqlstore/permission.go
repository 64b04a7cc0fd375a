package sqlstore

import (
	"context"
	"strings"
	"time"

	"github.com/devpilot/devpilot/ports"
)

var _ ports.PermissionStore = (*Permissions)(nil)

// Permissions keeps each organisation's permission grants; it implements
// ports.PermissionStore, with the errors that port documents.
type Permissions struct {
	db *DB
}

// NewPermissions returns the permission grant store over db.
func NewPermissions(db *DB) *Permissions {
	return &Permissions{db: db}
}

type permissionRow struct {
	OrgID      string    `db:"org_id"`
	Permission string    `db:"permission"`
	Roles      string    `db:"roles"`
	UpdatedBy  string    `db:"updated_by"`
	UpdatedAt  timestamp `db:"updated_at"`
}

// SetPermissionRoles implements ports.PermissionStore with one INSERT … ON
// CONFLICT DO UPDATE, so concurrent calls leave the last one's grant.
func (s *Permissions) SetPermissionRoles(ctx context.Context, orgID string, perm ports.Permission, roles []ports.Role, by string, at time.Time) error {
	names := make([]string, len(roles))
	for i, r := range roles {
		names[i] = string(r)
	}
	_, err := s.db.write(ctx).exec(ctx, `INSERT INTO permission_grants (org_id, permission, roles, updated_by, updated_at)
		VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (org_id, permission) DO UPDATE SET roles = excluded.roles,
			updated_by = excluded.updated_by, updated_at = excluded.updated_at`,
		orgID, string(perm), strings.Join(names, ","), by, timestamp(at))
	return storeErr(err, "permission "+string(perm), "org "+orgID)
}

// ListPermissionGrants implements ports.PermissionStore.
func (s *Permissions) ListPermissionGrants(ctx context.Context, orgID string) ([]ports.PermissionGrant, error) {
	var rows []permissionRow
	err := s.db.read(ctx).list(ctx, &rows, `SELECT org_id, permission, roles, updated_by, updated_at
		FROM permission_grants WHERE org_id = ? ORDER BY permission`, orgID)
	if err != nil {
		return nil, storeErr(err, "permission grants", "")
	}
	var out []ports.PermissionGrant
	for _, r := range rows {
		var roles []ports.Role
		for name := range strings.SplitSeq(r.Roles, ",") {
			if name != "" {
				roles = append(roles, ports.Role(name))
			}
		}
		out = append(out, ports.PermissionGrant{OrgID: r.OrgID, Permission: ports.Permission(r.Permission), Roles: roles,
			UpdatedBy: r.UpdatedBy, UpdatedAt: time.Time(r.UpdatedAt)})
	}
	return out, nil
}
