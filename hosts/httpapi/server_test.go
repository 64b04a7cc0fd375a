package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/devpilot/devpilot/hosts/httpapi"
	"github.com/devpilot/devpilot/ports"
)

func TestAuth(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		header    string // Authorization; "" sends none
		identity  *fakeIdentity
		status    int
		challenge string
	}{
		{name: "missing header", status: 401, challenge: "Bearer"},
		{name: "wrong scheme", header: "Basic YWxhZGRpbjpvcGVu", status: 401, challenge: "Bearer"},
		{name: "scheme only", header: "Bearer", status: 401, challenge: "Bearer"},
		{name: "malformed token", header: "Bearer a b", status: 401, challenge: `Bearer error="invalid_token"`},
		{name: "unknown token", header: "Bearer dp_nope", status: 401, challenge: `Bearer error="invalid_token"`},
		{name: "identity unavailable", header: "Bearer " + goodToken, status: 503,
			identity: &fakeIdentity{authErr: &ports.Error{Kind: ports.KindUnavailable, Message: "database unavailable"}}},
		{name: "identity bug", header: "Bearer " + goodToken, status: 500,
			identity: &fakeIdentity{authErr: errors.New("boom")}},
		{name: "good token", header: "Bearer " + goodToken, status: 200},
		{name: "scheme is case-insensitive", header: "bearer " + goodToken, status: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id := tt.identity
			if id == nil {
				id = &fakeIdentity{}
			}
			e := newEnv(t, withIdentity(id))
			req := request(http.MethodGet, "/api/v1/me", "", nil)
			if tt.header != "" {
				req.Header.Set("Authorization", tt.header)
			}
			rr := e.do(req)
			if tt.status == 200 {
				if rr.Code != 200 {
					t.Fatalf("status = %d, body %s", rr.Code, rr.Body)
				}
				return
			}
			p := problemOf(t, rr, tt.status)
			if got := rr.Header().Get("WWW-Authenticate"); got != tt.challenge {
				t.Errorf("WWW-Authenticate = %q, want %q", got, tt.challenge)
			}
			if tt.status == 401 && (p.Code != "unauthenticated" || p.Type != httpapi.ProblemTypeBase+"unauthenticated") {
				t.Errorf("problem = %+v", p)
			}
		})
	}
}

func TestMe(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rr := e.do(request(http.MethodGet, "/api/v1/me", goodToken, nil))
	if rr.Code != 200 {
		t.Fatalf("status = %d, body %s", rr.Code, rr.Body)
	}
	if ct := rr.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Errorf("Content-Type = %q", ct)
	}
	want := `{"user":{"id":"u-alice","email":"alice@acme.test","email_verified":true,"role":"admin","created_at":"2025-01-02T03:04:05Z"},` +
		`"org":{"id":"o-acme","name":"Acme","created_at":"2024-12-31T23:00:00Z"}}` + "\n"
	if got := rr.Body.String(); got != want {
		t.Errorf("body\n got %s\nwant %s", got, want)
	}
}

func TestRequestID(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, sent string
		echoed     bool
	}{
		{name: "none", sent: ""},
		{name: "sane", sent: "req-42_abc.DEF", echoed: true},
		{name: "128 chars", sent: strings.Repeat("x", 128), echoed: true},
		{name: "129 chars", sent: strings.Repeat("x", 129)},
		{name: "space", sent: "a b"},
		{name: "control", sent: "a\x01b"},
		{name: "non-ASCII", sent: "café"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			req := request(http.MethodGet, "/nope", "", nil)
			if tt.sent != "" {
				req.Header.Set("X-Request-Id", tt.sent)
			}
			rr := e.do(req)
			got := rr.Header().Get("X-Request-Id")
			if tt.echoed {
				if got != tt.sent {
					t.Errorf("X-Request-Id = %q, want the client's %q", got, tt.sent)
				}
			} else if _, err := uuid.Parse(got); err != nil || got == tt.sent {
				t.Errorf("X-Request-Id = %q, want a new UUID", got)
			}
			problemOf(t, rr, 404) // checks request_id in the body too
			for _, rec := range e.logs.records(t, "http request") {
				if rec["request_id"] != got {
					t.Errorf("access log request_id = %v, want %q", rec["request_id"], got)
				}
			}
		})
	}
}

func TestRouterProblems(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.srv.HandleForTest(http.MethodPost, "/test/echo", func(w http.ResponseWriter, r *http.Request) error {
		return httpapi.WriteJSON(w, 200, map[string]string{"ok": "yes"})
	})
	tests := []struct {
		name, method, path string
		status             int
		allow              string
		detail             string
	}{
		{name: "unknown path", method: "GET", path: "/nope", status: 404, detail: "no route for GET /nope"},
		{name: "trailing slash is not redirected", method: "POST", path: "/test/echo/", status: 404, detail: "trailing slash"},
		{name: "trailing slash GET", method: "GET", path: "/api/v1/me/", status: 404, detail: "trailing slash"},
		{name: "case is not fixed", method: "GET", path: "/API/V1/ME", status: 404},
		{name: "cleaned path is not fixed", method: "GET", path: "/api/v1//me", status: 404},
		{name: "wrong method", method: "POST", path: "/livez", status: 405, allow: "GET, HEAD, OPTIONS"},
		{name: "wrong method on api", method: "DELETE", path: "/test/echo", status: 405, allow: "OPTIONS, POST"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rr := e.do(request(tt.method, tt.path, goodToken, nil))
			p := problemOf(t, rr, tt.status)
			if tt.status == 405 && (p.Code != "method_not_allowed" || rr.Header().Get("Allow") != tt.allow) {
				t.Errorf("code %q, Allow %q; want method_not_allowed, %q", p.Code, rr.Header().Get("Allow"), tt.allow)
			}
			if tt.status == 404 && p.Code != "not_found" {
				t.Errorf("code = %q", p.Code)
			}
			if !strings.Contains(p.Detail, tt.detail) {
				t.Errorf("detail %q does not contain %q", p.Detail, tt.detail)
			}
		})
	}
	t.Run("OPTIONS lists methods", func(t *testing.T) {
		rr := e.do(request(http.MethodOptions, "/livez", "", nil))
		if rr.Code != 204 || rr.Header().Get("Allow") != "GET, HEAD, OPTIONS" {
			t.Errorf("status %d, Allow %q", rr.Code, rr.Header().Get("Allow"))
		}
	})
}

func TestPanicRecovery(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.srv.HandleForTest(http.MethodGet, "/test/panic", func(http.ResponseWriter, *http.Request) error {
		panic("kaboom")
	}, httpapi.Public)
	e.srv.HandleForTest(http.MethodGet, "/test/panic-late", func(w http.ResponseWriter, _ *http.Request) error {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(200)
		_, _ = io.WriteString(w, "partial")
		http.NewResponseController(w).Flush()
		panic("kaboom late")
	}, httpapi.Public)
	ts := httptest.NewServer(e.srv.Handler())
	t.Cleanup(ts.Close)

	resp, err := http.Get(ts.URL + "/test/panic")
	if err != nil {
		t.Fatal(err)
	}
	rr := httptest.NewRecorder()
	rr.Code = resp.StatusCode
	for k, v := range resp.Header {
		rr.Header()[k] = v
	}
	_, _ = io.Copy(rr.Body, resp.Body)
	resp.Body.Close()
	p := problemOf(t, rr, 500)
	if p.Code != "internal" || p.Detail != "internal error" {
		t.Errorf("problem = %+v", p)
	}
	logged := e.logs.records(t, "panic serving request")
	if len(logged) != 1 || logged[0]["request_id"] != p.RequestID ||
		!strings.Contains(fmt.Sprint(logged[0]["stack"]), "server_test.go") || logged[0]["panic"] != "kaboom" {
		t.Errorf("panic log = %v", logged)
	}

	// A panic after the response started aborts it: the client must not
	// mistake the truncated body for a whole one.
	resp, err = http.Get(ts.URL + "/test/panic-late")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Error("reading an aborted response succeeded")
	}
	resp.Body.Close()

	resp, err = http.Get(ts.URL + "/livez")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("after panics, /livez = %d", resp.StatusCode)
	}
}

func TestBodyLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withConfig(httpapi.Config{BodyLimit: 64}))
	echo := func(w http.ResponseWriter, r *http.Request) error {
		var v map[string]any
		if err := httpapi.DecodeJSON(w, r, &v); err != nil {
			return err
		}
		return httpapi.WriteJSON(w, 200, v)
	}
	e.srv.HandleForTest(http.MethodPost, "/test/echo", echo)
	e.srv.HandleForTest(http.MethodPost, "/test/upload", echo, httpapi.MaxBody(1024))
	big := `{"k":"` + strings.Repeat("x", 100) + `"}`
	tests := []struct {
		name, path, body string
		unknownLength    bool
		status           int
	}{
		{name: "within limit", path: "/test/echo", body: `{"k":"v"}`, status: 200},
		{name: "declared too large", path: "/test/echo", body: big, status: 413},
		{name: "streamed too large", path: "/test/echo", body: big, unknownLength: true, status: 413},
		{name: "route raises the limit", path: "/test/upload", body: big, unknownLength: true, status: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := jsonRequest(http.MethodPost, tt.path, tt.body)
			if tt.unknownLength {
				req.ContentLength = -1
			}
			rr := e.do(req)
			if tt.status == 200 {
				if rr.Code != 200 {
					t.Fatalf("status = %d, body %s", rr.Code, rr.Body)
				}
				return
			}
			if p := problemOf(t, rr, tt.status); p.Code != "payload_too_large" {
				t.Errorf("code = %q", p.Code)
			}
		})
	}
}

// TestDecodeJSONOverHTTP checks that decodeJSON's errors reach the client as
// the problems the API promises; decode_test.go covers the cases in depth.
func TestDecodeJSONOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	type input struct {
		Message string `json:"message"`
		Context struct {
			Page string `json:"current_page"`
		} `json:"context"`
	}
	e.srv.HandleForTest(http.MethodPost, "/test/echo", func(w http.ResponseWriter, r *http.Request) error {
		var in input
		if err := httpapi.DecodeJSON(w, r, &in); err != nil {
			return err
		}
		return httpapi.WriteJSON(w, 200, in)
	})
	tests := []struct {
		name, ct, body string
		status         int
		code           string
		field          string
	}{
		{name: "ok", ct: "application/json; charset=utf-8", body: `{"message":"hi"}`, status: 200},
		{name: "wrong content type", ct: "text/plain", body: `{}`, status: 415, code: "unsupported_media_type"},
		{name: "empty", ct: "application/json", body: ``, status: 400, code: "malformed"},
		{name: "syntax", ct: "application/json", body: `{"message":}`, status: 400, code: "malformed"},
		{name: "unknown field", ct: "application/json", body: `{"mesage":"hi"}`, status: 422, code: "invalid", field: "mesage"},
		{name: "wrong type", ct: "application/json", body: `{"context":{"current_page":1}}`, status: 422, code: "invalid", field: "context.current_page"},
		{name: "trailing", ct: "application/json", body: `{} {}`, status: 400, code: "malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := jsonRequest(http.MethodPost, "/test/echo", tt.body)
			req.Header.Set("Content-Type", tt.ct)
			rr := e.do(req)
			if tt.status == 200 {
				if rr.Code != 200 {
					t.Fatalf("status = %d, body %s", rr.Code, rr.Body)
				}
				return
			}
			p := problemOf(t, rr, tt.status)
			if p.Code != tt.code {
				t.Errorf("code = %q, want %q", p.Code, tt.code)
			}
			if tt.field != "" && (len(p.Errors) != 1 || p.Errors[0].Field != tt.field) {
				t.Errorf("errors = %+v, want field %q", p.Errors, tt.field)
			}
		})
	}
}

func TestProblemMapping(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err        error
		status     int
		slug, code string
		detail     string
		retryAfter string
	}{
		{err: &ports.Error{Kind: ports.KindMalformed, Message: "m"}, status: 400, slug: "malformed", code: "malformed", detail: "m"},
		{err: ports.Invalid("bad", ports.FieldError{Field: "message", Reason: "required"}), status: 422, slug: "invalid", code: "invalid", detail: "bad"},
		{err: &ports.Error{Kind: ports.KindUnauthenticated, Message: "m"}, status: 401, slug: "unauthenticated", code: "unauthenticated", detail: "m"},
		{err: &ports.Error{Kind: ports.KindForbidden, Message: "read-only account"}, status: 403, slug: "forbidden", code: "forbidden", detail: "read-only account"},
		{err: ports.NotFound("chat session", "0193"), status: 404, slug: "not-found", code: "not_found", detail: "chat session 0193 not found"},
		{err: &ports.Error{Kind: ports.KindConflict, Message: "m"}, status: 409, slug: "conflict", code: "conflict", detail: "m"},
		{err: &ports.Error{Kind: ports.KindGone, Code: "expired", Message: "m"}, status: 410, slug: "gone", code: "expired", detail: "m"},
		{err: &ports.Error{Kind: ports.KindPreconditionFailed, Message: "m"}, status: 412, slug: "precondition-failed", code: "precondition_failed", detail: "m"},
		{err: &ports.Error{Kind: ports.KindPayloadTooLarge, Message: "m"}, status: 413, slug: "payload-too-large", code: "payload_too_large", detail: "m"},
		{err: &ports.Error{Kind: ports.KindUnsupportedMedia, Message: "m"}, status: 415, slug: "unsupported-media-type", code: "unsupported_media_type", detail: "m"},
		{err: &ports.Error{Kind: ports.KindPreconditionRequired, Message: "m"}, status: 428, slug: "precondition-required", code: "precondition_required", detail: "m"},
		{err: &ports.Error{Kind: ports.KindRateLimited, Message: "m", RetryAfter: 1500 * time.Millisecond}, status: 429, slug: "rate-limited", code: "rate_limited", detail: "m", retryAfter: "2"},
		{err: &ports.Error{Kind: ports.KindRateLimited, Message: "m"}, status: 429, slug: "rate-limited", code: "rate_limited", detail: "m", retryAfter: "1"},
		{err: &ports.Error{Kind: ports.KindUpstream, Message: "m", Err: errors.New("secret cause")}, status: 502, slug: "upstream", code: "upstream", detail: "m"},
		{err: &ports.Error{Kind: ports.KindUnavailable, Message: "m", RetryAfter: 30 * time.Second}, status: 503, slug: "unavailable", code: "unavailable", detail: "m", retryAfter: "30"},
		{err: &ports.Error{Kind: ports.KindUnavailable, Message: "m"}, status: 503, slug: "unavailable", code: "unavailable", detail: "m"},
		{err: &ports.Error{Kind: ports.KindTimeout, Message: "m"}, status: 504, slug: "timeout", code: "timeout", detail: "m"},
		{err: &ports.Error{Kind: ports.KindInternal, Message: "secret message"}, status: 500, slug: "internal", code: "internal", detail: "internal error"},
		{err: errors.New("secret plain error"), status: 500, slug: "internal", code: "internal", detail: "internal error"},
		{err: &ports.Error{Kind: "no_such_kind", Message: "secret"}, status: 500, slug: "internal", code: "internal", detail: "internal error"},
		{err: fmt.Errorf("loading: %w", ports.NotFound("brief", "b1")), status: 404, slug: "not-found", code: "not_found", detail: "brief b1 not found"},
		{err: &ports.Error{Kind: ports.KindConflict}, status: 409, slug: "conflict", code: "conflict", detail: "Conflict"},
	}
	e := newEnv(t)
	e.srv.HandleForTest(http.MethodGet, "/test/errors/:i", func(_ http.ResponseWriter, r *http.Request) error {
		var i int
		_, _ = fmt.Sscan(httpapi.PathParam(r, "i"), &i)
		return tests[i].err
	}, httpapi.Public)
	for i, tt := range tests {
		t.Run(fmt.Sprintf("%d_%s", i, tt.code), func(t *testing.T) {
			t.Parallel()
			rr := e.do(request(http.MethodGet, fmt.Sprintf("/test/errors/%d", i), "", nil))
			body := rr.Body.String()
			p := problemOf(t, rr, tt.status)
			if p.Type != httpapi.ProblemTypeBase+tt.slug || p.Code != tt.code || p.Detail != tt.detail {
				t.Errorf("problem = %+v, want slug %q code %q detail %q", p, tt.slug, tt.code, tt.detail)
			}
			if got := rr.Header().Get("Retry-After"); got != tt.retryAfter {
				t.Errorf("Retry-After = %q, want %q", got, tt.retryAfter)
			}
			if strings.Contains(body, "secret") {
				t.Errorf("body leaks the cause: %s", body)
			}
			if pe, ok := ports.AsError(tt.err); ok && len(pe.Fields) > 0 &&
				(len(p.Errors) != 1 || p.Errors[0] != pe.Fields[0]) {
				t.Errorf("errors = %+v, want %+v", p.Errors, pe.Fields)
			}
		})
	}
	t.Run("internal causes are logged with the request id", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.srv.HandleForTest(http.MethodGet, "/test/boom", func(http.ResponseWriter, *http.Request) error {
			return errors.New("disk on fire")
		}, httpapi.Public)
		rr := e.do(request(http.MethodGet, "/test/boom", "", nil))
		p := problemOf(t, rr, 500)
		logged := e.logs.records(t, "internal error")
		if len(logged) != 1 || logged[0]["request_id"] != p.RequestID || logged[0]["error"] != "disk on fire" ||
			logged[0]["level"] != "ERROR" || logged[0]["route"] != "/test/boom" {
			t.Errorf("internal error log = %v", logged)
		}
	})
}

func TestHealth(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path string
		ready      error
		status     int
		body       string // for 200
		detail     string // for 503
	}{
		{name: "livez", path: "/livez", status: 200, body: `{"status":"ok"}` + "\n"},
		{name: "livez while not ready", path: "/livez", ready: errors.New("db down"), status: 200, body: `{"status":"ok"}` + "\n"},
		{name: "ready", path: "/readyz", status: 200, body: `{"status":"ready"}` + "\n"},
		{name: "pending migrations", path: "/readyz", status: 503, detail: "2 migrations pending",
			ready: &ports.Error{Kind: ports.KindUnavailable, Message: "2 migrations pending"}},
		{name: "plain error is not shown", path: "/readyz", status: 503, detail: "not ready",
			ready: errors.New("dial tcp 10.0.0.7:5432: connection refused")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, withReady(tt.ready))
			rr := e.do(request(http.MethodGet, tt.path, "", nil))
			if tt.status == 200 {
				if rr.Code != 200 || rr.Body.String() != tt.body {
					t.Errorf("got %d %q, want 200 %q", rr.Code, rr.Body, tt.body)
				}
				return
			}
			if p := problemOf(t, rr, tt.status); p.Detail != tt.detail || p.Code != "unavailable" {
				t.Errorf("problem = %+v, want detail %q", p, tt.detail)
			}
		})
	}
	t.Run("HEAD", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		rr := e.do(request(http.MethodHead, "/livez", "", nil))
		if rr.Code != 200 {
			t.Errorf("HEAD /livez = %d", rr.Code)
		}
	})
	t.Run("not ready once stopping", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		if err := e.srv.Shutdown(t.Context()); err != nil {
			t.Fatal(err)
		}
		if p := problemOf(t, e.do(request(http.MethodGet, "/readyz", "", nil)), 503); p.Detail != "shutting down" {
			t.Errorf("detail = %q", p.Detail)
		}
	})
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.srv.HandleForTest(http.MethodGet, "/test/items/:id", func(w http.ResponseWriter, r *http.Request) error {
		return httpapi.WriteJSON(w, 200, map[string]string{"id": httpapi.PathParam(r, "id")})
	})
	for _, req := range []*http.Request{
		request(http.MethodGet, "/api/v1/me", goodToken, nil),
		request(http.MethodGet, "/api/v1/me", "", nil),
		request(http.MethodGet, "/test/items/secret-id-1", goodToken, nil),
		request(http.MethodGet, "/test/items/secret-id-2", goodToken, nil),
		request(http.MethodGet, "/no/such/path", "", nil),
		request("BREW", "/livez", "", nil),
	} {
		e.do(req)
	}
	rr := e.do(request(http.MethodGet, "/metrics", "", nil))
	if rr.Code != 200 {
		t.Fatalf("/metrics = %d", rr.Code)
	}
	body := rr.Body.String()
	for _, want := range []string{
		`devpilot_http_requests_total{code="200",method="GET",route="/api/v1/me"} 1`,
		`devpilot_http_requests_total{code="401",method="GET",route="/api/v1/me"} 1`,
		`devpilot_http_requests_total{code="200",method="GET",route="/test/items/:id"} 2`,
		`devpilot_http_requests_total{code="404",method="GET",route="unmatched"} 1`,
		`devpilot_http_requests_total{code="405",method="OTHER",route="unmatched"} 1`,
		`devpilot_http_request_duration_seconds_bucket{method="GET",route="/api/v1/me",le="0.005"}`,
		`devpilot_http_request_duration_seconds_count{method="GET",route="/test/items/:id"} 2`,
		`devpilot_http_requests_in_flight 1`, // the scrape itself
		`go_goroutines `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	for _, leak := range []string{"secret-id", "/no/such/path", "BREW"} {
		if strings.Contains(body, leak) {
			t.Errorf("/metrics has the raw value %q in a label", leak)
		}
	}
}

func TestAccessLog(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	req := request(http.MethodGet, "/api/v1/me", goodToken, nil)
	req.Header.Set("X-Request-Id", "trace-1")
	rr := e.do(req)
	logged := e.logs.records(t, "http request")
	if len(logged) != 1 {
		t.Fatalf("access log lines = %v", logged)
	}
	rec := logged[0]
	want := map[string]any{
		"level": "INFO", "method": "GET", "route": "/api/v1/me", "path": "/api/v1/me",
		"status": float64(200), "bytes": float64(rr.Body.Len()), "request_id": "trace-1", "user_id": alice.UserID,
	}
	for k, v := range want {
		if rec[k] != v {
			t.Errorf("%s = %v, want %v", k, rec[k], v)
		}
	}
	if _, ok := rec["duration"].(float64); !ok {
		t.Errorf("duration = %v", rec["duration"])
	}

	e.do(request(http.MethodGet, "/livez", "", nil))
	if probe := e.logs.records(t, "http request")[1]; probe["level"] != "DEBUG" {
		t.Errorf("probe logged at %v, want DEBUG", probe["level"])
	}
}

func TestRequestTimeout(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withConfig(httpapi.Config{RequestTimeout: 20 * time.Millisecond}))
	e.srv.HandleForTest(http.MethodGet, "/test/slow", func(_ http.ResponseWriter, r *http.Request) error {
		<-r.Context().Done()
		return ports.Wrap(ports.KindUpstream, r.Context().Err(), "the model did not answer")
	}, httpapi.Public)
	e.srv.HandleForTest(http.MethodGet, "/test/stream", func(w http.ResponseWriter, r *http.Request) error {
		_, has := r.Context().Deadline()
		return httpapi.WriteJSON(w, 200, map[string]bool{"deadline": has})
	}, httpapi.Public, httpapi.Streaming)

	if p := problemOf(t, e.do(request(http.MethodGet, "/test/slow", "", nil)), 504); p.Code != "timeout" {
		t.Errorf("code = %q", p.Code)
	}
	rr := e.do(request(http.MethodGet, "/test/stream", "", nil))
	if rr.Body.String() != `{"deadline":false}`+"\n" {
		t.Errorf("streaming route: %s", rr.Body)
	}
}

func TestClientGone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.srv.HandleForTest(http.MethodGet, "/test/wait", func(_ http.ResponseWriter, r *http.Request) error {
		<-r.Context().Done()
		return r.Context().Err()
	}, httpapi.Public)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	rr := e.do(request(http.MethodGet, "/test/wait", "", nil).WithContext(ctx))
	if rr.Body.Len() != 0 {
		t.Errorf("wrote %q to a client that left", rr.Body)
	}
	if strings.Contains(e.logs.String(), `"level":"ERROR"`) {
		t.Errorf("client cancel logged as an error:\n%s", e.logs)
	}
	if got := e.logs.records(t, "http request"); len(got) != 1 || got[0]["status"] != float64(499) {
		t.Errorf("access log = %v, want status 499", got)
	}
}
