package httpapi_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/devpilot/devpilot/core/scm"
	"github.com/devpilot/devpilot/hosts/httpapi"
	"github.com/devpilot/devpilot/ports"
)

// fakeSCMOAuth starts and completes OAuth flows for a callback URL and
// remembers the binding each callback was given.
type fakeSCMOAuth struct {
	httpapi.SCM
	callbackURL string
	mu          sync.Mutex
	bindings    []string
}

func (f *fakeSCMOAuth) Authorize(context.Context, string) (scm.Authorization, error) {
	return scm.Authorization{URL: "https://github.test/login/oauth/authorize?state=s1", Binding: "binding-1",
		CallbackURL: f.callbackURL, TTL: 10 * time.Minute}, nil
}

func (f *fakeSCMOAuth) Callback(_ context.Context, in scm.CallbackInput) (scm.CallbackResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bindings = append(f.bindings, in.Binding)
	if in.Binding != "binding-1" {
		return scm.CallbackResult{}, &ports.Error{Kind: ports.KindMalformed, Code: "browser_mismatch", Message: "another browser"}
	}
	return scm.CallbackResult{Connection: ports.SCMConnection{Provider: "github", Login: "ada", Status: "active"}}, nil
}

func (f *fakeSCMOAuth) CallbackURL() string { return f.callbackURL }

func (f *fakeSCMOAuth) lastBinding() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bindings[len(f.bindings)-1]
}

// TestSCMOAuthCookiePrefix is issue 30's item 8: on an https deployment the
// OAuth binding cookie is __Host- (Secure, Path=/, no Domain), so that a
// sibling subdomain cannot plant one, and the callback reads no other name;
// a plain-http deployment (a local run) keeps the plain cookie on the
// callback's path.
func TestSCMOAuthCookiePrefix(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		callback, name, path, planted string
		secure                        bool
	}{
		{"https://devpilot.example.com/scm-oauth/callback", "__Host-devpilot_scm_oauth", "/", "devpilot_scm_oauth", true},
		{"http://127.0.0.1:8080/scm-oauth/callback", "devpilot_scm_oauth", "/scm-oauth/callback", "__Host-devpilot_scm_oauth", false},
	} {
		t.Run(tc.callback, func(t *testing.T) {
			t.Parallel()
			f := &fakeSCMOAuth{callbackURL: tc.callback}
			e := newEnv(t, func(_ *httpapi.Config, d *httpapi.Deps) { d.SCM = f })
			rr := e.do(request(http.MethodGet, "/scm-oauth/authorize", goodToken, nil))
			if rr.Code != http.StatusFound {
				t.Fatalf("authorize: %d %s", rr.Code, rr.Body)
			}
			cookies := rr.Result().Cookies()
			if len(cookies) != 1 {
				t.Fatalf("authorize set %v", cookies)
			}
			c := cookies[0]
			if c.Name != tc.name || c.Path != tc.path || c.Secure != tc.secure || c.Domain != "" || !c.HttpOnly || c.Value != "binding-1" {
				t.Fatalf("binding cookie %+v; want %s, Path %s, Secure %v, HttpOnly, no Domain", c, tc.name, tc.path, tc.secure)
			}

			for _, path := range []string{"/scm-oauth/callback", "/api/v1/scm-oauth/callback"} {
				// A cookie of the other name (planted, or left by the other
				// scheme) is not the binding.
				req := request(http.MethodGet, path+"?code=c&state=s1", "", nil)
				req.AddCookie(&http.Cookie{Name: tc.planted, Value: "binding-1"})
				if rr := e.do(req); rr.Code != http.StatusBadRequest || f.lastBinding() != "" {
					t.Errorf("callback at %s with only %s: %d, binding %q; want 400 and none", path, tc.planted, rr.Code, f.lastBinding())
				}
				req = request(http.MethodGet, path+"?code=c&state=s1", "", nil)
				req.AddCookie(&http.Cookie{Name: tc.name, Value: "binding-1"})
				rr := e.do(req)
				if rr.Code != http.StatusOK || f.lastBinding() != "binding-1" {
					t.Fatalf("callback at %s with %s: %d %s, binding %q", path, tc.name, rr.Code, rr.Body, f.lastBinding())
				}
				gone := rr.Result().Cookies()
				wantPath := tc.path
				if !tc.secure {
					wantPath = path
				}
				if len(gone) != 1 || gone[0].Name != tc.name || gone[0].MaxAge >= 0 || gone[0].Path != wantPath || gone[0].Secure != tc.secure {
					t.Errorf("callback at %s cleared %+v; want %s on %s, Secure %v", path, gone, tc.name, wantPath, tc.secure)
				}
			}
		})
	}
}
