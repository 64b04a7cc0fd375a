package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/hosts/httpapi"
)

// The console's files are public, served with a strict policy, and nothing
// outside the embedded folder can be reached.
func TestConsoleFiles(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		path, contentType string
		status            int
	}{
		{"/", "text/html; charset=utf-8", 200},
		{"/console/js/app.js", "text/javascript; charset=utf-8", 200},
		{"/console/app.css", "text/css; charset=utf-8", 200},
		{"/console/index.html", "", 404},
		{"/console/js/", "", 404},
		{"/console/../../go.mod", "", 404},
		{"/console/%2e%2e/console.go", "", 404},
		{"/console/nope.js", "", 404},
		// The folder itself, however spelt, is no file (issue 30).
		{"/console/", "", 404},
		{"/console/.", "", 404},
		{"/console//", "", 404},
		{"/console/./", "", 404},
		{"/console/js/.", "", 404},
		{"/console/js/..", "", 404},
	} {
		rr := e.do(request(http.MethodGet, tc.path, "", nil))
		if rr.Code != tc.status {
			t.Errorf("GET %s = %d, want %d", tc.path, rr.Code, tc.status)
			continue
		}
		if tc.status != 200 {
			continue
		}
		h := rr.Header()
		if h.Get("Content-Type") != tc.contentType {
			t.Errorf("GET %s: Content-Type %q, want %q", tc.path, h.Get("Content-Type"), tc.contentType)
		}
		csp := h.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("GET %s: Content-Security-Policy %q lacks %q", tc.path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("GET %s: Content-Security-Policy %q allows inline script or eval", tc.path, csp)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" || h.Get("X-Request-Id") == "" {
			t.Errorf("GET %s: headers %v", tc.path, h)
		}
	}
	if rr := e.do(request(http.MethodHead, "/", "", nil)); rr.Code != 200 || rr.Body.Len() != 0 {
		t.Errorf("HEAD / = %d with %d bytes", rr.Code, rr.Body.Len())
	}
}

// GET /api/v1/sandbox hands out the demo token only in sandbox mode.
func TestSandboxEndpoint(t *testing.T) {
	t.Parallel()
	demo := func() string { return "dp_demo" }
	for _, tc := range []struct {
		name      string
		providers string
		token     func() string
		status    int
	}{
		{"sandbox", httpapi.ProvidersSandbox, demo, 200},
		{"real providers", httpapi.ProvidersReal, demo, 404},
		{"sandbox not seeded yet", httpapi.ProvidersSandbox, func() string { return "" }, 404},
		{"no token source", httpapi.ProvidersSandbox, nil, 404},
	} {
		e := newEnv(t, func(_ *httpapi.Config, d *httpapi.Deps) { d.Providers, d.DemoToken = tc.providers, tc.token })
		rr := e.do(request(http.MethodGet, "/api/v1/sandbox", "", nil))
		if tc.status != 200 {
			problemOf(t, rr, tc.status)
			continue
		}
		var got struct {
			Sandbox   bool   `json:"sandbox"`
			DemoToken string `json:"demo_token"`
		}
		if rr.Code != 200 || json.Unmarshal(rr.Body.Bytes(), &got) != nil || !got.Sandbox || got.DemoToken != "dp_demo" {
			t.Errorf("%s: %d %s", tc.name, rr.Code, rr.Body)
		}
	}
}
