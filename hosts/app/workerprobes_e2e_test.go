package app_test

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/app"
)

// TestWorkerServesProbesAndMetrics: the worker command answers /livez,
// /readyz and /metrics on DEVPILOT_WORKER_ADDR, and nothing of the API.
func TestWorkerServesProbesAndMetrics(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			vars := map[string]string{
				app.EnvSecretKey:   validKey,
				app.EnvDatabaseURL: sqlstoretest.URL(t, d),
				app.EnvWorkerAddr:  "127.0.0.1:0",
				app.EnvDataDir:     t.TempDir(),
			}
			migrateDB(t, vars)
			base := startProcess(t, app.ModeWorker, vars)
			get := func(path string) (int, string) {
				t.Helper()
				resp, err := http.Get(base + path)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				return resp.StatusCode, string(b)
			}
			if code, body := get("/livez"); code != 200 || !strings.Contains(body, `"ok"`) {
				t.Errorf("/livez: %d %s", code, body)
			}
			if code, body := get("/readyz"); code != 200 || !strings.Contains(body, `"ready"`) {
				t.Errorf("/readyz: %d %s", code, body)
			}
			code, body := get("/metrics")
			if code != 200 || !strings.Contains(body, "go_goroutines") || !strings.Contains(body, `devpilot_http_requests_total{code="200",method="GET",route="/livez"} 1`) ||
				!strings.Contains(body, `devpilot_job_queue_depth{kind="other"} 0`) {
				t.Errorf("/metrics: %d %s", code, body)
			}
			for _, path := range []string{"/api/v1/me", "/openapi.json", "/", "/api/v1/usage"} {
				if code, _ := get(path); code != 404 {
					t.Errorf("%s on the worker: %d, want 404", path, code)
				}
			}
		})
	}
}

// TestWorkerProbesBindLoopbackByDefault: without DEVPILOT_WORKER_ADDR the
// worker's probes listen on loopback only (the default's host, with port 0
// here so that tests never collide on 9091); the variable exposes them on
// every interface.
func TestWorkerProbesBindLoopbackByDefault(t *testing.T) {
	external := externalIP(t)
	cfg, err := app.Load(app.ModeWorker, env(map[string]string{app.EnvSecretKey: validKey}))
	if err != nil {
		t.Fatal(err)
	}
	defaultHost, _, err := net.SplitHostPort(cfg.WorkerAddr)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range sqlstoretest.Dialects() {
		for _, tc := range []struct {
			name, addr string
			exposed    bool
		}{
			{"default", net.JoinHostPort(defaultHost, "0"), false},
			{"override", ":0", true},
		} {
			t.Run(string(d)+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				vars := map[string]string{
					app.EnvSecretKey:   validKey,
					app.EnvDatabaseURL: sqlstoretest.URL(t, d),
					app.EnvWorkerAddr:  tc.addr,
					app.EnvDataDir:     t.TempDir(),
				}
				migrateDB(t, vars)
				base := startProcess(t, app.ModeWorker, vars)
				u, err := url.Parse(base)
				if err != nil {
					t.Fatal(err)
				}
				port := u.Port()
				if resp, err := http.Get("http://" + net.JoinHostPort("127.0.0.1", port) + "/livez"); err != nil || resp.StatusCode != 200 {
					t.Fatalf("/livez on loopback: %v", err)
				} else {
					resp.Body.Close()
				}
				if external == "" {
					return
				}
				conn, err := net.DialTimeout("tcp", net.JoinHostPort(external, port), 5*time.Second)
				if err == nil {
					conn.Close()
				}
				if exposed := err == nil; exposed != tc.exposed {
					t.Errorf("%s=%q (%s): reachable on %s: %v, want %v", app.EnvWorkerAddr, tc.addr, base, external, exposed, tc.exposed)
				}
			})
		}
	}
}

// externalIP returns an IPv4 address of this machine that is not loopback,
// or "" when it has none (then only the loopback half is checked).
func externalIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	t.Log("no address but loopback: the worker's binding is checked on loopback only")
	return ""
}
