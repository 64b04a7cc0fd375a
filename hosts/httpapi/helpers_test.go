package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/hosts/httpapi"
	"github.com/devpilot/devpilot/ports"
)

const goodToken = "dp_good"

var (
	alice = ports.Principal{UserID: "u-alice", OrgID: "o-acme", Role: ports.RoleAdmin, TokenID: "t-1"}
	paris = time.FixedZone("Paris", 2*60*60)
)

// fakeIdentity knows one token, goodToken, which stands for alice.
type fakeIdentity struct {
	authErr error // returned for every token when set
}

func (f *fakeIdentity) Authenticate(_ context.Context, token string) (ports.Principal, error) {
	if f.authErr != nil {
		return ports.Principal{}, f.authErr
	}
	if token != goodToken {
		return ports.Principal{}, &ports.Error{Kind: ports.KindUnauthenticated, Message: "missing, invalid, expired or revoked token"}
	}
	return alice, nil
}

func (f *fakeIdentity) Me(ctx context.Context) (identity.Me, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return identity.Me{}, err
	}
	return identity.Me{
		User: ports.User{ID: p.UserID, OrgID: p.OrgID, Email: "alice@acme.test", EmailVerified: true, Role: p.Role,
			CreatedAt: time.Date(2025, 1, 2, 5, 4, 5, 0, paris)},
		Org: ports.Org{ID: p.OrgID, Name: "Acme", CreatedAt: time.Date(2024, 12, 31, 23, 0, 0, 0, time.UTC)},
	}, nil
}

type fakeReady struct{ err error }

func (f fakeReady) Ready(context.Context) error { return f.err }

// syncBuffer collects log output written from several goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// records returns the JSON log records whose msg is msg.
func (s *syncBuffer) records(t *testing.T, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(s.String()) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		if rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

type env struct {
	srv  *httpapi.Server
	logs *syncBuffer
	reg  *prometheus.Registry
}

type envOption func(*httpapi.Config, *httpapi.Deps)

func withIdentity(id httpapi.Identity) envOption {
	return func(_ *httpapi.Config, d *httpapi.Deps) { d.Identity = id }
}

func withReady(err error) envOption {
	return func(_ *httpapi.Config, d *httpapi.Deps) { d.Ready = fakeReady{err: err} }
}

func withConfig(cfg httpapi.Config) envOption {
	return func(c *httpapi.Config, _ *httpapi.Deps) { *c = cfg }
}

func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	e := &env{logs: &syncBuffer{}, reg: prometheus.NewRegistry()}
	var cfg httpapi.Config
	d := httpapi.Deps{
		Identity: &fakeIdentity{},
		Ready:    fakeReady{},
		Logger:   slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Metrics:  e.reg,
	}
	for _, o := range opts {
		o(&cfg, &d)
	}
	e.srv = httpapi.New(cfg, d)
	return e
}

// do serves req in-process and returns the response.
func (e *env) do(req *http.Request) *httptest.ResponseRecorder {
	rr := httptest.NewRecorder()
	e.srv.Handler().ServeHTTP(rr, req)
	return rr
}

func request(method, target, token string, body io.Reader) *http.Request {
	req := httptest.NewRequest(method, target, body)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return req
}

func jsonRequest(method, target, body string) *http.Request {
	req := request(method, target, goodToken, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	return req
}

type problemBody struct {
	Type      string             `json:"type"`
	Title     string             `json:"title"`
	Status    int                `json:"status"`
	Detail    string             `json:"detail"`
	Code      string             `json:"code"`
	RequestID string             `json:"request_id"`
	Errors    []ports.FieldError `json:"errors"`
}

// problemOf asserts that rr is a problem+json response with the status and
// returns its body.
func problemOf(t *testing.T, rr *httptest.ResponseRecorder, status int) problemBody {
	t.Helper()
	if rr.Code != status {
		t.Fatalf("status = %d, want %d; body %s", rr.Code, status, rr.Body)
	}
	if ct := rr.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type = %q, want application/problem+json", ct)
	}
	var p problemBody
	dec := json.NewDecoder(rr.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("decoding problem: %v", err)
	}
	if p.Status != status {
		t.Errorf("problem status = %d, want %d", p.Status, status)
	}
	if !strings.HasPrefix(p.Type, httpapi.ProblemTypeBase) || p.Title == "" || p.Code == "" || p.Detail == "" {
		t.Errorf("incomplete problem: %+v", p)
	}
	if want := rr.Header().Get("X-Request-Id"); p.RequestID != want || want == "" {
		t.Errorf("problem request_id = %q, header X-Request-Id = %q", p.RequestID, want)
	}
	return p
}
