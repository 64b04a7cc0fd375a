package ports

import (
	"context"
	"slices"
	"strings"
	"time"
)

//go:generate go tool mockgen -typed -destination ../testkit/mocks/permission.go -package mocks . PermissionStore

// Permission names one kind of write an organisation may reserve for some
// roles, such as "cloud.scale". Permissions lists every one.
type Permission string

// The permissions of the policy.
const (
	PermCloudAccounts     Permission = "cloud.accounts"
	PermCloudDeploy       Permission = "cloud.deploy"
	PermCloudScale        Permission = "cloud.scale"
	PermCloudInvoke       Permission = "cloud.invoke"
	PermContentWrite      Permission = "content.write"
	PermContentPublish    Permission = "content.publish"
	PermContentTargets    Permission = "content.targets"
	PermSpecWrite         Permission = "spec.write"
	PermSCMWrite          Permission = "scm.write"
	PermPolicyPermissions Permission = "policy.permissions"
	PermMCPManage         Permission = "mcp.manage"
)

// PermissionInfo describes one permission: what it guards (the assistant's
// tools by name and the HTTP operations as "METHOD /pattern", written
// without the /api/v1 prefix their aliases add) and the roles it allows
// when the organisation has not changed it.
type PermissionInfo struct {
	Name        Permission
	Area        string
	Description string
	Defaults    []Role
	// Guarded is true for a permission that guards the policy itself: the
	// admin role can never be taken from it.
	Guarded bool
	Tools   []string
	Routes  []string
}

var (
	opsRoles = []Role{RoleAdmin, RoleOperator}
	allRoles = []Role{RoleAdmin, RoleOperator, RoleMember}
)

// Permissions is the policy's one table: every permission, in the order a
// client shows them, grouped by area.
var Permissions = []PermissionInfo{
	{Name: PermCloudAccounts, Area: "cloud", Description: "Add or delete cloud accounts",
		Defaults: []Role{RoleAdmin},
		Routes:   []string{"POST /cloud/accounts", "DELETE /cloud/accounts/:account_id"}},
	{Name: PermCloudDeploy, Area: "cloud", Description: "Deploy container services and hosted apps",
		Defaults: opsRoles, Tools: []string{"deploy_service", "deploy_app"},
		Routes: []string{"POST /infrastructure/containers/services/:service/deploy", "POST /deployments/apps/:app_id/deploy"}},
	{Name: PermCloudScale, Area: "cloud", Description: "Scale container services",
		Defaults: opsRoles, Tools: []string{"scale_service"},
		Routes: []string{"POST /infrastructure/containers/services/:service/scale"}},
	{Name: PermCloudInvoke, Area: "cloud", Description: "Invoke functions (a dry run too)",
		Defaults: opsRoles, Tools: []string{"invoke_function"},
		Routes: []string{"POST /infrastructure/serverless/functions/:name/invoke"}},
	{Name: PermContentWrite, Area: "content", Description: "Write briefs, brands and content, generate and delete content",
		Defaults: allRoles, Tools: []string{"update_brand", "create_brief", "generate_content", "update_content", "delete_content"},
		Routes: []string{"POST /content/briefs", "POST /content/generate", "PUT /content/brands/:project_id",
			"PUT /content/:content_id", "DELETE /content/:content_id", "POST /content/projects", "PATCH /content/projects/:project_id"}},
	{Name: PermContentPublish, Area: "content", Description: "Publish content and cancel publications",
		Defaults: opsRoles, Tools: []string{"publish_content"},
		Routes: []string{"POST /content/:content_id/publish", "DELETE /content/:content_id/publications/:publication_id"}},
	{Name: PermContentTargets, Area: "content", Description: "Add or delete publishing targets",
		Defaults: opsRoles,
		Routes:   []string{"POST /content/targets", "DELETE /content/targets/:target_id"}},
	{Name: PermSpecWrite, Area: "spec", Description: "Create, edit, generate and delete specifications",
		Defaults: allRoles, Tools: []string{"add_spec_input", "generate_spec_stage"},
		Routes: []string{"POST /pse/sessions", "PATCH /pse/sessions/:session_id", "DELETE /pse/sessions/:session_id",
			"POST /pse/sessions/:session_id/inputs", "POST /pse/sessions/:session_id/generate",
			"PUT /pse/sessions/:session_id/repository", "PUT /pse/sessions/:session_id/stages/:stage"}},
	{Name: PermSCMWrite, Area: "scm", Description: "Write to the repository host (export a specification as issues)",
		Defaults: allRoles, Tools: []string{"export_spec_to_github"},
		Routes: []string{"POST /pse/sessions/:session_id/export/github"}},
	{Name: PermMCPManage, Area: "mcp", Description: "Register and delete MCP servers and set their tools' policies",
		Defaults: []Role{RoleAdmin},
		Routes: []string{"POST /api/v1/mcp/servers", "DELETE /api/v1/mcp/servers/:server_id",
			"POST /api/v1/mcp/servers/:server_id/test", "PUT /api/v1/mcp/servers/:server_id/tools/:tool_name/policy"}},
	{Name: PermPolicyPermissions, Area: "policy", Description: "Change who may do what (this policy)",
		Defaults: []Role{RoleAdmin}, Guarded: true,
		Routes: []string{"PUT /api/v1/permissions/:permission"}},
}

// LookupPermission returns the permission named name.
func LookupPermission(name string) (PermissionInfo, bool) {
	for _, p := range Permissions {
		if string(p.Name) == name {
			return p, true
		}
	}
	return PermissionInfo{}, false
}

// PermissionForTool returns the permission that guards the assistant tool
// named name; false for a tool no permission guards (a read).
func PermissionForTool(name string) (PermissionInfo, bool) {
	for _, p := range Permissions {
		if slices.Contains(p.Tools, name) {
			return p, true
		}
	}
	return PermissionInfo{}, false
}

// PermissionForRoute returns the permission that guards the HTTP operation
// method pattern (the router's pattern; an /api/v1 alias of a route is
// guarded as the route is); false for one no permission guards.
func PermissionForRoute(method, pattern string) (PermissionInfo, bool) {
	op := method + " " + pattern
	alias := method + " " + strings.TrimPrefix(pattern, "/api/v1")
	for _, p := range Permissions {
		if slices.Contains(p.Routes, op) || slices.Contains(p.Routes, alias) {
			return p, true
		}
	}
	return PermissionInfo{}, false
}

// PermissionDenied is the error of a principal whose role the policy does
// not allow perm: forbidden, code permission_denied, naming the permission
// and the roles that hold it.
func PermissionDenied(perm Permission, roles []Role) error {
	names := make([]string, len(roles))
	for i, r := range roles {
		names[i] = string(r)
	}
	var need string
	switch len(names) {
	case 0:
		return &Error{Kind: KindForbidden, Code: CodePermissionDenied,
			Message: string(perm) + " is allowed to no role in this organisation"}
	case 1:
		need = "the " + names[0] + " role"
	default:
		need = "the " + strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1] + " role"
	}
	return &Error{Kind: KindForbidden, Code: CodePermissionDenied,
		Message: string(perm) + " needs " + need}
}

// CodePermissionDenied is the problem code of a write the organisation's
// permission policy refuses to the caller's role.
const CodePermissionDenied = "permission_denied"

// PermissionGrant is an organisation's choice of the roles allowed one
// permission, replacing its defaults.
type PermissionGrant struct {
	OrgID      string
	Permission Permission
	// Roles are the allowed roles, in Roles order.
	Roles []Role
	// UpdatedBy is the id of the user who last set the grant; UpdatedAt is
	// when.
	UpdatedBy string
	UpdatedAt time.Time
}

// PermissionStore keeps each organisation's permission grants.
type PermissionStore interface {
	// SetPermissionRoles sets the org's grant of perm to roles (none is
	// allowed: nobody may), replacing the one there, and records who set it
	// and when. Errors: not_found when the org does not exist.
	SetPermissionRoles(ctx context.Context, orgID string, perm Permission, roles []Role, by string, at time.Time) error
	// ListPermissionGrants returns the org's grants ordered by permission
	// name; none (nil) for an org that set none or does not exist.
	ListPermissionGrants(ctx context.Context, orgID string) ([]PermissionGrant, error)
}
