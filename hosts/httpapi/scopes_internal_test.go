package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/ports"
)

// TestRouteScopesCoverEveryRoute: every authenticated route the server
// registers (under /api/v1 and without) has its entry in routeAreas, and
// every entry is a registered route, so a new route cannot slip through
// with the fallback scope and a renamed one cannot leave a stale entry.
func TestRouteScopesCoverEveryRoute(t *testing.T) {
	t.Parallel()
	s := fullServer()
	used := map[string]bool{}
	for _, rt := range s.registered {
		if rt.public {
			continue
		}
		if _, ok := scopeForRoute(rt.method, rt.pattern); !ok {
			t.Errorf("%s %s has no entry in routeAreas (hosts/httpapi/scopes.go): say which area it reads or writes", rt.method, rt.pattern)
		}
		used[routeKey(rt.method, rt.pattern)] = true
	}
	for key := range routeAreas {
		if !used[key] {
			t.Errorf("routeAreas has %q, which is no authenticated route", key)
		}
	}
}

// TestCheckScope: the refusal is 403-bound, names the scope needed, and
// sets RFC 6750's challenge; sessions and unscoped tokens pass.
func TestCheckScope(t *testing.T) {
	t.Parallel()
	scale := routeAreas["POST /infrastructure/containers/services/:service/scale"]
	for _, tc := range []struct {
		name   string
		p      ports.Principal
		rs     routeScope
		refuse string // the scope named, "" for none
	}{
		{"session", ports.Principal{Session: true, Scopes: []string{"read"}}, scale, ""},
		{"unscoped", ports.Principal{TokenID: "t"}, scale, ""},
		{"read", ports.Principal{TokenID: "t", Scopes: []string{"read"}}, scale, "cloud:write"},
		{"cloud:read", ports.Principal{TokenID: "t", Scopes: []string{"cloud:read"}}, scale, "cloud:write"},
		{"cloud:write", ports.Principal{TokenID: "t", Scopes: []string{"cloud:write"}}, scale, ""},
		{"cloud", ports.Principal{TokenID: "t", Scopes: []string{"cloud"}}, scale, ""},
		{"write", ports.Principal{TokenID: "t", Scopes: []string{"write"}}, scale, ""},
		{"spec on cloud", ports.Principal{TokenID: "t", Scopes: []string{"spec"}}, routeAreas["GET /cloud/accounts"], "cloud:read"},
		{"cloud:write reads", ports.Principal{TokenID: "t", Scopes: []string{"cloud:write"}}, routeAreas["GET /cloud/accounts"], ""},
		{"area on account", ports.Principal{TokenID: "t", Scopes: []string{"cloud", "spec"}}, routeAreas["GET /tokens"], "read"},
		{"me", ports.Principal{TokenID: "t", Scopes: []string{"scm:read"}}, routeAreas["GET /me"], ""},
	} {
		w := httptest.NewRecorder()
		err := checkScope(w, tc.p, http.MethodPost, "/x", tc.rs)
		challenge := w.Header().Get("WWW-Authenticate")
		switch {
		case tc.refuse == "" && err != nil:
			t.Errorf("%s: refused: %v", tc.name, err)
		case tc.refuse == "":
		case !ports.IsKind(err, ports.KindForbidden) || !strings.Contains(err.Error(), tc.refuse):
			t.Errorf("%s: %v, want forbidden naming %s", tc.name, err, tc.refuse)
		case challenge != `Bearer error="insufficient_scope", scope="`+tc.refuse+`"`:
			t.Errorf("%s: WWW-Authenticate %q", tc.name, challenge)
		}
	}
}
