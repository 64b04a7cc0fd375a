package httpapi_test

import (
	"encoding/json"
	"net/http"
	"regexp"
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
		{"/console/favicon.svg", "image/svg+xml", 200},
		{"/console/favicon-32.png", "image/png", 200},
		{"/console/icon-192.png", "image/png", 200},
		{"/console/manifest.webmanifest", "application/manifest+json", 200},
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

// The console has a favicon and a web app manifest, linked from its page
// (issue 34): the manifest names the app, its icons (each served), its
// colours, where it starts and that it runs standalone.
func TestConsoleManifest(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	index := e.do(request(http.MethodGet, "/", "", nil)).Body.String()
	// The links name the files' content-hashed URLs (TestConsoleCaching).
	var manifest string
	for _, link := range []*regexp.Regexp{
		regexp.MustCompile(`rel="icon" href="(/console/favicon\.[0-9a-f]{16}\.svg)"`),
		regexp.MustCompile(`rel="manifest" href="(/console/manifest\.[0-9a-f]{16}\.webmanifest)"`),
	} {
		m := link.FindStringSubmatch(index)
		if m == nil {
			t.Fatalf("index.html does not link %s", link)
		}
		manifest = m[1]
	}
	rr := e.do(request(http.MethodGet, manifest, "", nil))
	var m struct {
		Name            string `json:"name"`
		ShortName       string `json:"short_name"`
		StartURL        string `json:"start_url"`
		Display         string `json:"display"`
		ThemeColor      string `json:"theme_color"`
		BackgroundColor string `json:"background_color"`
		Icons           []struct {
			Src, Sizes, Type string
		} `json:"icons"`
	}
	if rr.Code != 200 || json.Unmarshal(rr.Body.Bytes(), &m) != nil {
		t.Fatalf("manifest: %d %s", rr.Code, rr.Body)
	}
	if m.Name != "devpilot" || m.ShortName == "" || m.StartURL == "" || m.Display != "standalone" || m.ThemeColor == "" || m.BackgroundColor == "" || len(m.Icons) < 2 {
		t.Errorf("manifest: %+v", m)
	}
	for _, icon := range m.Icons {
		got := e.do(request(http.MethodGet, icon.Src, "", nil))
		if got.Code != 200 || got.Header().Get("Content-Type") != icon.Type {
			t.Errorf("icon %s: %d %q, want 200 %q", icon.Src, got.Code, got.Header().Get("Content-Type"), icon.Type)
		}
	}
}
