package httpapi

import (
	"context"
	"net/http"

	"github.com/devpilot/devpilot/core/permission"
	"github.com/devpilot/devpilot/ports"
)

// Permissions is what /api/v1/permissions calls, and what every guarded
// operation is checked with before its handler runs: the organisation's
// permission policy (see ports.Permissions).
type Permissions interface {
	Policy(ctx context.Context) ([]permission.Entry, error)
	Set(ctx context.Context, perm string, roles []ports.Role) (permission.Entry, error)
	// CheckRoute returns nil when the caller may run the operation method
	// pattern; forbidden (permission_denied, naming the permission) when
	// the policy refuses the caller's role.
	CheckRoute(ctx context.Context, method, pattern string) error
}

// permissionRoutes serve the organisation's permission policy: anyone
// reads it; whoever holds policy.permissions (admins) changes it.
func (s *Server) permissionRoutes() {
	s.handle(http.MethodGet, "/api/v1/permissions", s.listPermissions)
	s.handle(http.MethodPut, "/api/v1/permissions/:permission", s.putPermission)
}

// checkPermission is the policy's verdict on the caller running the
// operation method pattern; nil without a policy.
func (s *Server) checkPermission(r *http.Request, method, pattern string) error {
	if s.d.Permissions == nil {
		return nil
	}
	return s.d.Permissions.CheckRoute(r.Context(), method, pattern)
}

func (s *Server) listPermissions(w http.ResponseWriter, r *http.Request) error {
	pol, err := s.d.Permissions.Policy(r.Context())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"data": pol, "roles": ports.Roles})
}

type putPermissionRequest struct {
	Roles *[]string `json:"roles"`
}

func (s *Server) putPermission(w http.ResponseWriter, r *http.Request) error {
	var req putPermissionRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.Roles == nil {
		return missing("roles")
	}
	roles := make([]ports.Role, len(*req.Roles))
	for i, name := range *req.Roles {
		roles[i] = ports.Role(name)
	}
	e, err := s.d.Permissions.Set(r.Context(), pathParam(r, "permission"), roles)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, e)
}
