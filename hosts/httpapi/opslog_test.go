package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/devpilot/devpilot/hosts/httpapi"
	"github.com/devpilot/devpilot/ports"
)

// switchReady is a readiness check whose answer the test changes.
type switchReady struct {
	mu  sync.Mutex
	err error
}

func (s *switchReady) set(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

func (s *switchReady) Ready(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// TestReadyzLogsEachReasonOnce: probes every few seconds on an unmigrated
// database log "N migrations pending" once, not once per probe; a new
// reason and becoming ready are logged once each.
func TestReadyzLogsEachReasonOnce(t *testing.T) {
	t.Parallel()
	ready := &switchReady{err: ports.Errorf(ports.KindUnavailable, "31 migrations pending: run devpilot migrate")}
	e := newEnv(t, func(_ *httpapi.Config, d *httpapi.Deps) { d.Ready = ready })
	probe := func(want int) {
		t.Helper()
		if rr := e.do(request(http.MethodGet, "/readyz", "", nil)); rr.Code != want {
			t.Fatalf("/readyz = %d %s, want %d", rr.Code, rr.Body, want)
		}
	}
	for range 5 {
		probe(http.StatusServiceUnavailable)
	}
	if got := strings.Count(e.logs.String(), `"msg":"not ready: 31 migrations pending`); got != 1 {
		t.Errorf("the pending migrations were logged %d times over 5 probes, want once:\n%s", got, e.logs)
	}
	ready.set(ports.Errorf(ports.KindUnavailable, "2 migrations pending: run devpilot migrate"))
	probe(http.StatusServiceUnavailable)
	probe(http.StatusServiceUnavailable)
	ready.set(nil)
	probe(http.StatusOK)
	probe(http.StatusOK)
	logs := e.logs.String()
	if strings.Count(logs, `"msg":"not ready: 2 migrations pending`) != 1 || strings.Count(logs, `"msg":"ready"`) != 1 {
		t.Errorf("want the new reason and ready logged once each:\n%s", logs)
	}
	for _, rec := range e.logs.records(t, "http request") {
		if rec["level"] != "DEBUG" {
			t.Errorf("probe logged at %v, want DEBUG: %v", rec["level"], rec)
		}
	}
}

// TestConsoleFilesLoggedAtDebug: a console visit's files do not bury the
// log at info.
func TestConsoleFilesLoggedAtDebug(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, path := range []string{"/", "/console/app.css"} {
		if rr := e.do(request(http.MethodGet, path, "", nil)); rr.Code != http.StatusOK {
			t.Fatalf("GET %s = %d", path, rr.Code)
		}
	}
	logged := e.logs.records(t, "http request")
	if len(logged) != 2 {
		t.Fatalf("access log = %v", logged)
	}
	for _, rec := range logged {
		if rec["level"] != "DEBUG" {
			t.Errorf("%v logged at %v, want DEBUG", rec["path"], rec["level"])
		}
	}
}
