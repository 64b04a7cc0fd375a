package httpapi

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/core/cloud"
	"github.com/devpilot/devpilot/core/content"
	"github.com/devpilot/devpilot/core/scm"
	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/ports"
)

// braceParam matches an OpenAPI path parameter, {param}.
var braceParam = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// unguardedWrites are the authenticated writes no permission of the
// policy guards, each with what decides who may run it instead. A write
// route added to the server must be guarded in ports.Permissions or named
// here (TestPermissionsGuardEveryWrite).
var unguardedWrites = map[string]string{
	"POST /agent/chat":                       "a chat; the write tools it proposes are guarded one by one",
	"POST /agent/confirm":                    "approving a proposed write; the tool's permission is checked again",
	"DELETE /agent/sessions/{session_id}":    "the caller's own chat",
	"POST /agent/sessions/{session_id}/stop": "the caller's own chat",
	"POST /agent/generate-title":             "the caller's own chat",
	"POST /agent/memory/preferences":         "the caller's own preferences",
	"PUT /agent/tools/{name}":                "tool policies: admins only (core/assistant)",
	"POST /cloud/accounts/{account_id}/test": "only checks that the account can be reached",
	"POST /pse/standards":                    "standards: admins only (core/spec)",
	"PUT /pse/standards":                     "standards: admins only (core/spec)",
	"DELETE /pse/standards":                  "standards: admins only (core/spec)",
	"PUT /pse/standards/{standard_id}":       "standards: admins only (core/spec)",
	"DELETE /pse/standards/{standard_id}":    "standards: admins only (core/spec)",
	"POST /voice/session":                    "a voice session; its tool calls are guarded one by one",
	"POST /voice/calls":                      "a voice call; its tool calls are guarded one by one",
	"POST /voice/calls/{call_id}/metering":   "the caller's own call's usage",
	"POST /voice/tool-calls":                 "each call's tool is guarded by its permission",
	"POST /audio/transcribe":                 "a transcription of the caller's audio",
	"POST /tokens":                           "the caller's own tokens (a scoped token cannot widen itself)",
	"DELETE /tokens/{token_id}":              "the caller's own tokens",
	"PATCH /members/{user_id}":               "members: admins only (core/identity)",
	"DELETE /members/{user_id}":              "members: admins only (core/identity)",
	"POST /invitations":                      "invitations: admins only (core/identity)",
	"DELETE /invitations/{invitation_id}":    "invitations: admins only (core/identity)",
	"PUT /usage/budget":                      "the budget: admins only (core/usage)",
	"POST /auth/logout":                      "the caller's own session",
	"POST /auth/oidc/verify":                 "signs the caller in",
	"POST /mcp":                              "the MCP server; each tool call is guarded by its tool's permission",
}

// TestPermissionsGuardEveryWrite: every route a permission of the policy
// names is one the server serves (a renamed route cannot leave a write
// unguarded by a stale entry), and every authenticated write the server
// serves is guarded by a permission or named in unguardedWrites with what
// decides instead.
func TestPermissionsGuardEveryWrite(t *testing.T) {
	t.Parallel()
	ops := expectedOperations(t, fullServer())
	served := map[string]bool{}
	for key, rt := range ops {
		method, path, _ := strings.Cut(key, " ")
		served[method+" "+strings.TrimPrefix(path, "/api/v1")] = true
		if rt.public || method == http.MethodGet || method == http.MethodHead {
			continue
		}
		alias := method + " " + strings.TrimPrefix(path, "/api/v1")
		if _, ok := ports.PermissionForRoute(method, braceParam.ReplaceAllString(path, ":$1")); ok {
			continue
		}
		if _, ok := unguardedWrites[alias]; !ok {
			t.Errorf("%s is a write no permission guards: add it to a permission's Routes (ports/permission.go) or to unguardedWrites with what decides who may", key)
		}
	}
	for _, p := range ports.Permissions {
		for _, rt := range p.Routes {
			method, pattern, _ := strings.Cut(rt, " ")
			key := method + " " + routeParam.ReplaceAllString(strings.TrimPrefix(pattern, "/api/v1"), "{$1}")
			if !served[key] {
				t.Errorf("%s names %q, which the server does not serve", p.Name, rt)
			}
		}
	}
	for key := range unguardedWrites {
		if !served[key] {
			t.Errorf("unguardedWrites has %q, which the server does not serve", key)
		}
	}
}

// TestPermissionsGuardEveryWriteTool: every write tool the assistant may
// propose is guarded by a permission of the policy, and every tool a
// permission names exists, so chat and voice are refused what HTTP is.
func TestPermissionsGuardEveryWriteTool(t *testing.T) {
	t.Parallel()
	names := map[string]bool{}
	for _, tools := range [][]tool.Tool{
		cloud.New(cloud.Config{}, cloud.Deps{}).Tools(),
		spec.New(spec.Config{}, spec.Deps{}).Tools(),
		content.New(content.Config{}, content.Deps{}).Tools(),
		scm.New(scm.Config{}, scm.Deps{}).Tools(),
	} {
		for _, tl := range tools {
			names[tl.Name] = true
			if _, ok := ports.PermissionForTool(tl.Name); tl.Effect == tool.EffectWrite && !ok {
				t.Errorf("the write tool %s is guarded by no permission (ports/permission.go)", tl.Name)
			}
		}
	}
	for _, p := range ports.Permissions {
		for _, name := range p.Tools {
			if !names[name] {
				t.Errorf("%s names the tool %s, which no area offers", p.Name, name)
			}
		}
	}
	if !names["scale_service"] {
		t.Fatal("the tools were not collected")
	}
}
