package httpapi

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
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

// scopedIdentity authenticates any token as a member's API token with
// scopes.
type scopedIdentity struct {
	stubIdentity
	scopes []string
}

func (s scopedIdentity) Authenticate(context.Context, string) (ports.Principal, error) {
	return ports.Principal{UserID: "u", OrgID: "o", Role: ports.RoleMember, TokenID: "t", Scopes: s.scopes}, nil
}

// TestScopesRefuseOnEveryRoute walks every authenticated route the server
// registers, through its router: a token scoped to voice:read (which
// covers no route's area but the account's own) is refused each one but
// those that only tell the caller about itself, and a read-only token is
// refused every write, each time 403 insufficient_scope before the
// handler runs.
func TestScopesRefuseOnEveryRoute(t *testing.T) {
	t.Parallel()
	param := regexp.MustCompile(`:[A-Za-z_][A-Za-z0-9_]*`)
	for _, scopes := range [][]string{{"voice:read"}, {"read"}} {
		srv := fullServer()
		srv.d.Identity = scopedIdentity{scopes: scopes}
		h := srv.Handler()
		walked := 0
		for _, rt := range srv.registered {
			if rt.public || rt.scope.access == accessAny {
				continue
			}
			write := rt.scope.access == accessWrite
			if scopes[0] == "read" && !write {
				continue // a read's scope passes; TestCheckScope holds what it allows
			}
			if scopes[0] == "voice:read" && rt.scope.area == ports.ScopeVoice && !write {
				continue
			}
			walked++
			req := httptest.NewRequest(rt.method, param.ReplaceAllString(rt.pattern, "x"), nil)
			req.Header.Set("Authorization", "Bearer token")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), "insufficient_scope") {
				t.Errorf("%v: %s %s answered %d %s, want 403 insufficient_scope", scopes, rt.method, rt.pattern, w.Code, w.Body.String())
			}
		}
		if walked < 50 {
			t.Errorf("%v: only %d routes walked", scopes, walked)
		}
	}
}
