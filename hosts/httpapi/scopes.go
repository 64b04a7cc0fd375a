package httpapi

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/devpilot/devpilot/ports"
)

// access is what a route does with its area, for the token scopes.
type access int

const (
	// accessAny routes only tell the caller about itself (GET /me, the
	// console session): any valid token may call them.
	accessAny access = iota
	accessRead
	accessWrite
)

// routeScope is the scope a route needs: its area and whether it reads or
// writes it.
type routeScope struct {
	area   ports.ScopeArea
	access access
}

// scopeOf returns the rule for the area: GET and HEAD read, every other
// method writes.
func scopeOf(area ports.ScopeArea, method string) routeScope {
	if method == http.MethodGet || method == http.MethodHead {
		return routeScope{area, accessRead}
	}
	return routeScope{area, accessWrite}
}

// routeAreas is the one table of the scope every authenticated route
// needs, keyed by method and pattern with any /api/v1 prefix taken off (so
// /cloud/accounts and /api/v1/cloud/accounts are one entry): its area,
// and whether it reads (GET, HEAD, and the read-like POSTs below) or writes
// (every other method). TestRouteScopesCoverEveryRoute fails for a route
// missing here; at run time, such a route needs the plain read or write
// scope.
//
// Read-like POSTs: POST /cloud/accounts/{id}/test only checks that the
// account can be reached. GET /scm-oauth/authorize is write-like: it starts
// connecting a GitHub account.
var routeAreas = func() map[string]routeScope {
	m := map[string]routeScope{}
	add := func(area ports.ScopeArea, routes ...string) {
		for _, rt := range routes {
			method, _, _ := strings.Cut(rt, " ")
			m[rt] = scopeOf(area, method)
		}
	}
	add(ports.ScopeAssistant,
		"POST /agent/chat", "POST /agent/confirm",
		"GET /agent/sessions", "GET /agent/sessions/:session_id", "DELETE /agent/sessions/:session_id",
		"GET /agent/sessions/:session_id/stream", "POST /agent/sessions/:session_id/stop",
		"POST /agent/generate-title",
		"GET /agent/memory/preferences", "POST /agent/memory/preferences",
		"GET /agent/tools", "PUT /agent/tools/:name",
		"POST /mcp/servers", "GET /mcp/servers", "DELETE /mcp/servers/:server_id",
		"GET /mcp/servers/:server_id/tools", "PUT /mcp/servers/:server_id/tools/:tool_name/policy")
	m["POST /mcp/servers/:server_id/test"] = routeScope{ports.ScopeAssistant, accessRead}
	add(ports.ScopeCloud,
		"GET /cloud/external-id", "POST /cloud/accounts", "GET /cloud/accounts", "GET /cloud/accounts/:account_id",
		"DELETE /cloud/accounts/:account_id", "GET /cloud/accounts/:account_id/audit", "GET /cloud/costs",
		"GET /infrastructure/containers/clusters", "GET /infrastructure/containers/clusters/:cluster/services",
		"POST /infrastructure/containers/services/:service/deploy", "POST /infrastructure/containers/services/:service/scale",
		"GET /infrastructure/containers/services/:service/logs",
		"GET /infrastructure/serverless/functions", "POST /infrastructure/serverless/functions/:name/invoke",
		"GET /infrastructure/serverless/functions/:name/logs",
		"GET /deployments/apps", "POST /deployments/apps/:app_id/deploy", "GET /deployments/apps/:app_id/builds/:build_id/logs",
		"GET /infrastructure/containers/services/:service/logs/stream", "GET /infrastructure/serverless/functions/:name/logs/stream",
		"GET /deployments/apps/:app_id/builds")
	m["POST /cloud/accounts/:account_id/test"] = routeScope{ports.ScopeCloud, accessRead}
	add(ports.ScopeContent, "GET /content")
	for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
		add(ports.ScopeContent, method+" /content/:a", method+" /content/:a/:b")
	}
	add(ports.ScopeContent, "HEAD /content/:a/:b", "DELETE /content/:a/:b/:c", "PATCH /content/:a/:b")
	add(ports.ScopeSpec,
		"POST /pse/sessions", "GET /pse/sessions", "GET /pse/sessions/:session_id", "PATCH /pse/sessions/:session_id",
		"DELETE /pse/sessions/:session_id", "GET /pse/sessions/:session_id/events", "GET /pse/sessions/:session_id/export",
		"GET /pse/sessions/:session_id/traceability", "POST /pse/sessions/:session_id/export/github",
		"GET /pse/sessions/:session_id/export/github/:export_id", "POST /pse/sessions/:session_id/inputs",
		"POST /pse/sessions/:session_id/generate", "PUT /pse/sessions/:session_id/repository",
		"PUT /pse/sessions/:session_id/stages/:stage", "GET /pse/sessions/:session_id/stages/:stage/versions",
		"GET /pse/sessions/:session_id/stages/:stage/diff",
		"GET /pse/standards", "POST /pse/standards", "PUT /pse/standards", "DELETE /pse/standards",
		"GET /pse/standards/:standard_id", "PUT /pse/standards/:standard_id", "DELETE /pse/standards/:standard_id")
	add(ports.ScopeSCM,
		"GET /scm/repos", "GET /scm/repos/:repo_id/commits", "GET /scm/repos/:repo_id/pulls",
		"GET /scm/repos/:repo_id/activity", "GET /scm/commits/search", "GET /scm/connection")
	m["GET /scm-oauth/authorize"] = routeScope{ports.ScopeSCM, accessWrite}
	add(ports.ScopeVoice,
		"POST /voice/session", "POST /voice/calls", "POST /voice/calls/:call_id/metering", "POST /voice/tool-calls",
		"POST /audio/transcribe")
	add(ports.ScopeAccount,
		"GET /tokens", "POST /tokens", "DELETE /tokens/:token_id",
		"GET /members", "PATCH /members/:user_id", "DELETE /members/:user_id",
		"GET /invitations", "POST /invitations", "DELETE /invitations/:invitation_id",
		"GET /usage", "GET /usage/budget", "PUT /usage/budget", "GET /audit",
		"GET /permissions", "PUT /permissions/:permission")
	for _, rt := range []string{"GET /me", "GET /auth/session", "POST /auth/logout", "POST /auth/oidc/verify"} {
		m[rt] = routeScope{ports.ScopeAccount, accessAny}
	}
	return m
}()

// routeKey is the key of a route in routeAreas: its method (HEAD as GET's
// twin when it has no entry of its own) and pattern without /api/v1.
func routeKey(method, pattern string) string {
	return method + " " + strings.TrimPrefix(pattern, "/api/v1")
}

// scopeForRoute returns the scope a route needs and whether routeAreas
// has it; a route it lacks needs the plain scope of its method.
func scopeForRoute(method, pattern string) (routeScope, bool) {
	if rs, ok := routeAreas[routeKey(method, pattern)]; ok {
		return rs, true
	}
	if method == http.MethodHead {
		if rs, ok := routeAreas[routeKey(http.MethodGet, pattern)]; ok {
			return rs, true
		}
	}
	return scopeOf(ports.ScopeAccount, method), false
}

// checkScope refuses a request whose token's scopes do not cover the
// route: 403 insufficient_scope naming the scope needed, with RFC 6750's
// challenge. Console sessions and unscoped tokens pass.
func checkScope(w http.ResponseWriter, p ports.Principal, method, pattern string, rs routeScope) error {
	if rs.access == accessAny || p.Allows(rs.area, rs.access == accessWrite) {
		return nil
	}
	write := rs.access == accessWrite
	w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope=%q`, ports.NeededScope(rs.area, write)))
	return ports.InsufficientScope(rs.area, write, method+" "+pattern)
}
