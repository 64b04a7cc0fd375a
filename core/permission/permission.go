// Package permission is the organisation's permission policy: which roles
// may run each write (ports.Permissions names them, with their defaults),
// as the org chose it. One Check serves every path a write can come by:
// the HTTP host before a guarded operation, the assistant when a write tool
// is proposed and again when it is confirmed, and voice tool calls.
package permission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// Deps are the ports a Service needs. Audit nil records nothing.
type Deps struct {
	Store ports.PermissionStore
	Audit ports.AuditStore
	Clock ports.Clock
	IDs   ports.IDs
}

// Service reads, checks and changes organisations' permission policies. A
// nil *Service allows everything, for a host built without a policy.
type Service struct{ d Deps }

// New returns a Service over d.
func New(d Deps) *Service { return &Service{d: d} }

// Entry is one permission of an organisation's policy as a client sees it.
type Entry struct {
	Name        ports.Permission `json:"name"`
	Area        string           `json:"area"`
	Description string           `json:"description"`
	// Roles are the roles allowed now; Default is true when they are the
	// permission's defaults (the organisation did not change them).
	Roles    []ports.Role `json:"roles"`
	Default  bool         `json:"default"`
	Defaults []ports.Role `json:"default_roles"`
	// Guarded is true for a permission that guards the policy itself: the
	// admin role cannot be taken from it.
	Guarded   bool       `json:"guarded"`
	Tools     []string   `json:"tools"`
	UpdatedBy string     `json:"updated_by,omitempty"`
	UpdatedAt *time.Time `json:"updated_at,omitempty"`
}

// Allows reports whether the entry allows role.
func (e Entry) Allows(role ports.Role) bool { return slices.Contains(e.Roles, role) }

func entry(info ports.PermissionInfo, grant *ports.PermissionGrant) Entry {
	e := Entry{Name: info.Name, Area: info.Area, Description: info.Description, Roles: info.Defaults, Default: true,
		Defaults: info.Defaults, Guarded: info.Guarded, Tools: info.Tools}
	if e.Tools == nil {
		e.Tools = []string{}
	}
	if grant != nil {
		e.Roles, e.Default = ordered(grant.Roles), false
		e.UpdatedBy = grant.UpdatedBy
		at := grant.UpdatedAt
		e.UpdatedAt = &at
	}
	return e
}

// ordered is roles, known ones only, once each, in ports.Roles order; never
// nil.
func ordered(roles []ports.Role) []ports.Role {
	out := []ports.Role{}
	for _, r := range ports.Roles {
		if slices.Contains(roles, r) {
			out = append(out, r)
		}
	}
	return out
}

// policy is the organisation's whole policy, in ports.Permissions order.
func (s *Service) policy(ctx context.Context, orgID string) ([]Entry, error) {
	grants, err := s.d.Store.ListPermissionGrants(ctx, orgID)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(ports.Permissions))
	for _, info := range ports.Permissions {
		var g *ports.PermissionGrant
		for i := range grants {
			if grants[i].Permission == info.Name {
				g = &grants[i]
			}
		}
		out = append(out, entry(info, g))
	}
	return out, nil
}

// Policy returns the caller's organisation's policy: every permission, in
// ports.Permissions order, with the roles allowed now. Any member may read
// it. Errors: unauthenticated; the store's.
func (s *Service) Policy(ctx context.Context) ([]Entry, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return nil, err
	}
	return s.policy(ctx, p.OrgID)
}

// Check returns nil when the caller's role may do what perm guards.
// Errors: unauthenticated; forbidden with code permission_denied and a
// message naming perm and the roles that may ("cloud.scale needs the admin
// or operator role"); the store's.
func (s *Service) Check(ctx context.Context, perm ports.Permission) error {
	if s == nil {
		return nil
	}
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return err
	}
	pol, err := s.policy(ctx, p.OrgID)
	if err != nil {
		return err
	}
	for _, e := range pol {
		if e.Name == perm && !e.Allows(p.Role) {
			return ports.PermissionDenied(perm, e.Roles)
		}
	}
	return nil
}

// CheckTool is Check of the permission that guards the assistant tool
// named name; nil for a tool none guards. A refusal is recorded in the
// audit log (permission.denied, refused, naming the tool).
func (s *Service) CheckTool(ctx context.Context, name string) error {
	info, ok := ports.PermissionForTool(name)
	if !ok {
		return nil
	}
	return s.checkAudited(ctx, info.Name, map[string]string{"tool": name})
}

// CheckRoute is Check of the permission that guards the HTTP operation
// method pattern; nil for one none guards. A refusal is recorded in the
// audit log (permission.denied, refused, naming the operation).
func (s *Service) CheckRoute(ctx context.Context, method, pattern string) error {
	info, ok := ports.PermissionForRoute(method, pattern)
	if !ok {
		return nil
	}
	return s.checkAudited(ctx, info.Name, map[string]string{"operation": method + " " + pattern})
}

// checkAudited is Check, and when the policy refuses the caller, an audit
// entry of the refused attempt: the write was asked for and did not run,
// which the audit log says as it says a cloud write's refusal. A failure
// to record it does not change the answer (the refusal stands).
func (s *Service) checkAudited(ctx context.Context, perm ports.Permission, what map[string]string) error {
	err := s.Check(ctx, perm)
	var pe *ports.Error
	if err == nil || s.d.Audit == nil || !errors.As(err, &pe) || pe.Code != ports.CodePermissionDenied {
		return err
	}
	p, _ := ports.PrincipalFrom(ctx) // Check found it
	args, _ := json.Marshal(what)    // strings always encode
	_ = s.d.Audit.RecordAudit(context.WithoutCancel(ctx), ports.AuditEntry{ID: s.d.IDs.NewID(), OrgID: p.OrgID,
		UserID: p.UserID, Action: ActionDenied, Resource: "permission/" + string(perm), Arguments: args,
		Outcome: ports.AuditRefused, Error: pe.Message, At: s.d.Clock.Now()})
	return err
}

// ActionDenied is the audit action of a write the policy refused.
const ActionDenied = "permission.denied"

// Set replaces the roles the caller's organisation allows perm with roles
// (unknown roles are invalid; duplicates count once; none means nobody) and
// records the change in the audit log. The caller needs policy.permissions
// (by default admins only; a refusal is audited as CheckRoute's is). Errors: unauthenticated; forbidden
// (permission_denied) for a caller without policy.permissions; not_found
// for an unknown permission; invalid for an unknown role or for roles
// without admin on a permission that guards the policy itself; the
// store's.
func (s *Service) Set(ctx context.Context, perm string, roles []ports.Role) (Entry, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return Entry{}, err
	}
	if err := s.checkAudited(ctx, ports.PermPolicyPermissions, map[string]string{"permission": perm}); err != nil {
		return Entry{}, err
	}
	info, ok := ports.LookupPermission(perm)
	if !ok {
		return Entry{}, ports.NotFound("permission", perm)
	}
	for i, r := range roles {
		if !r.Valid() {
			return Entry{}, ports.Invalid("unknown role", ports.FieldError{Field: fmt.Sprintf("roles[%d]", i),
				Reason: "must be admin, operator or member"})
		}
	}
	roles = ordered(roles)
	if info.Guarded && !slices.Contains(roles, ports.RoleAdmin) {
		return Entry{}, ports.Invalid(fmt.Sprintf("%s guards the permission policy itself: the admin role cannot be removed from it", perm),
			ports.FieldError{Field: "roles", Reason: "must include admin"})
	}
	now := s.d.Clock.Now()
	if err := s.d.Store.SetPermissionRoles(ctx, p.OrgID, info.Name, roles, p.UserID, now); err != nil {
		return Entry{}, err
	}
	if s.d.Audit != nil {
		args, _ := json.Marshal(map[string]any{"roles": roles}) // roles always encode
		if err := s.d.Audit.RecordAudit(context.WithoutCancel(ctx), ports.AuditEntry{ID: s.d.IDs.NewID(), OrgID: p.OrgID,
			UserID: p.UserID, Action: "permission.set", Resource: "permission/" + perm, Arguments: args,
			Outcome: ports.AuditOK, At: now}); err != nil {
			return Entry{}, err
		}
	}
	at := now
	e := entry(info, &ports.PermissionGrant{Roles: roles, UpdatedBy: p.UserID, UpdatedAt: at})
	return e, nil
}
