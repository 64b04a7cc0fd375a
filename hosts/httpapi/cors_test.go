package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/hosts/httpapi"
)

const (
	appOrigin   = "https://app.example.com"
	otherOrigin = "https://evil.example.net"
)

func preflight(origin, method, headers string) *http.Request {
	req := request(http.MethodOptions, "/api/v1/me", "", nil)
	req.Header.Set("Origin", origin)
	req.Header.Set("Access-Control-Request-Method", method)
	if headers != "" {
		req.Header.Set("Access-Control-Request-Headers", headers)
	}
	return req
}

func withOrigin(req *http.Request, origin string) *http.Request {
	req.Header.Set("Origin", origin)
	return req
}

func TestCORSOffByDefault(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rr := e.do(preflight(appOrigin, http.MethodPost, "authorization,content-type"))
	if got := rr.Header().Get("Access-Control-Allow-Origin"); got != "" {
		t.Errorf("preflight without configured origins: Access-Control-Allow-Origin %q", got)
	}
	rr = e.do(withOrigin(request(http.MethodGet, "/api/v1/me", goodToken, nil), appOrigin))
	if rr.Code != http.StatusOK || rr.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("GET: %d, Access-Control-Allow-Origin %q", rr.Code, rr.Header().Get("Access-Control-Allow-Origin"))
	}
}

func TestCORSListedOrigins(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withConfig(httpapi.Config{CORSOrigins: []string{appOrigin, "http://localhost:5173"}}))

	rr := e.do(preflight(appOrigin, http.MethodPost, "authorization,content-type,idempotency-key"))
	h := rr.Header()
	if rr.Code != http.StatusNoContent || h.Get("Access-Control-Allow-Origin") != appOrigin ||
		h.Get("Access-Control-Allow-Credentials") != "true" || h.Get("Access-Control-Max-Age") != "600" {
		t.Fatalf("preflight: %d %v", rr.Code, h)
	}
	if m := h.Get("Access-Control-Allow-Methods"); m != http.MethodPost {
		t.Errorf("Access-Control-Allow-Methods %q, want the requested method", m)
	}
	if got := strings.ToLower(h.Get("Access-Control-Allow-Headers")); got != "authorization,content-type,idempotency-key" {
		t.Errorf("Access-Control-Allow-Headers %q", got)
	}
	if !strings.Contains(strings.Join(h.Values("Vary"), ","), "Origin") {
		t.Errorf("preflight Vary %v lacks Origin", h.Values("Vary"))
	}

	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		if rr := e.do(preflight("http://localhost:5173", m, "")); rr.Header().Get("Access-Control-Allow-Origin") != "http://localhost:5173" {
			t.Errorf("preflight %s: Access-Control-Allow-Origin %q", m, rr.Header().Get("Access-Control-Allow-Origin"))
		}
	}

	refused := []*http.Request{
		preflight(otherOrigin, http.MethodPost, "authorization"),
		preflight("https://app.example.com.evil.example.net", http.MethodGet, ""),
		preflight("null", http.MethodGet, ""),
		preflight(appOrigin, http.MethodConnect, ""),
		preflight(appOrigin, http.MethodPost, "x-evil"),
	}
	for _, req := range refused {
		if got := e.do(req).Header().Get("Access-Control-Allow-Origin"); got != "" {
			t.Errorf("preflight from %s (%s %s): Access-Control-Allow-Origin %q", req.Header.Get("Origin"),
				req.Header.Get("Access-Control-Request-Method"), req.Header.Get("Access-Control-Request-Headers"), got)
		}
	}

	rr = e.do(withOrigin(request(http.MethodGet, "/api/v1/me", goodToken, nil), appOrigin))
	h = rr.Header()
	if rr.Code != http.StatusOK || h.Get("Access-Control-Allow-Origin") != appOrigin || h.Get("Access-Control-Allow-Credentials") != "true" {
		t.Fatalf("GET: %d %v", rr.Code, h)
	}
	if exposed := strings.ToLower(h.Get("Access-Control-Expose-Headers")); !strings.Contains(exposed, "x-request-id") || !strings.Contains(exposed, "retry-after") {
		t.Errorf("Access-Control-Expose-Headers %q", exposed)
	}
	// Errors carry the headers too, so that a browser client can read them.
	rr = e.do(withOrigin(request(http.MethodGet, "/api/v1/me", "", nil), appOrigin))
	if rr.Code != http.StatusUnauthorized || rr.Header().Get("Access-Control-Allow-Origin") != appOrigin {
		t.Errorf("unauthenticated GET: %d, Access-Control-Allow-Origin %q", rr.Code, rr.Header().Get("Access-Control-Allow-Origin"))
	}
	rr = e.do(withOrigin(request(http.MethodGet, "/api/v1/me", goodToken, nil), otherOrigin))
	if rr.Code != http.StatusOK || rr.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("GET from an unlisted origin: %d, Access-Control-Allow-Origin %q", rr.Code, rr.Header().Get("Access-Control-Allow-Origin"))
	}
}

func TestCORSEveryOriginNeverWithCredentials(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withConfig(httpapi.Config{CORSOrigins: []string{"*"}}))
	for _, req := range []*http.Request{
		preflight(otherOrigin, http.MethodPost, "authorization"),
		withOrigin(request(http.MethodGet, "/api/v1/me", goodToken, nil), otherOrigin),
	} {
		h := e.do(req).Header()
		if h.Get("Access-Control-Allow-Origin") != "*" || h.Get("Access-Control-Allow-Credentials") != "" {
			t.Errorf("%s: Access-Control-Allow-Origin %q, Access-Control-Allow-Credentials %q", req.Method,
				h.Get("Access-Control-Allow-Origin"), h.Get("Access-Control-Allow-Credentials"))
		}
	}
}

func TestCheckOrigins(t *testing.T) {
	t.Parallel()
	tests := []struct {
		origins []string
		ok      bool
	}{
		{nil, true},
		{[]string{"*"}, true},
		{[]string{appOrigin, "http://localhost:5173", "https://[::1]:8443"}, true},
		{[]string{"*", appOrigin}, false},
		{[]string{"https://app.example.com/"}, false},
		{[]string{"https://app.example.com/console"}, false},
		{[]string{"https://app.example.com?x=1"}, false},
		{[]string{"https://App.Example.com"}, false},
		{[]string{"ftp://app.example.com"}, false},
		{[]string{"app.example.com"}, false},
		{[]string{"https://user@app.example.com"}, false},
		{[]string{"https://*.example.com"}, false},
		{[]string{"null"}, false},
	}
	for _, tt := range tests {
		if err := httpapi.CheckOrigins(tt.origins); (err == nil) != tt.ok {
			t.Errorf("CheckOrigins(%q) = %v, want ok %v", tt.origins, err, tt.ok)
		}
	}
}
