package app_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/app"
)

// TestWorkerServesProbesAndMetrics: the worker command answers /livez,
// /readyz and /metrics on DEVPILOT_WORKER_ADDR, and nothing of the API.
func TestWorkerServesProbesAndMetrics(t *testing.T) {
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
