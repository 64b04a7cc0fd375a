package app_test

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/app"
	"github.com/devpilot/devpilot/hosts/sandbox/fakegithub"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// startTelemetryStack starts devpilot run (HTTP and worker in one process,
// one metrics registry) with the stack's test tools and a webhook secret.
func startTelemetryStack(t *testing.T, dialect string) *stack {
	t.Helper()
	return startStackWith(t, dialect, map[string]string{app.EnvGitHubWebhook: string(scmWebhookSecret)})
}

// scrape returns /metrics as text.
func (st *stack) metricsText() string {
	st.t.Helper()
	resp, err := http.Get(st.base + "/metrics")
	if err != nil {
		st.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		st.t.Fatalf("/metrics: %d %s", resp.StatusCode, b)
	}
	return string(b)
}

// seriesValue returns the value of the series named exactly (with its labels)
// in a scrape, and whether it is there.
func seriesValue(metrics, series string) (float64, bool) {
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(metrics)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	return v, err == nil
}

// TestMetricsOfTheCores: after a chat with tool calls and confirmations and
// a webhook delivered twice, /metrics counts them, the pending gauge reads
// the database, and the processing lag is observed once the worker has
// processed the delivery.
func TestMetricsOfTheCores(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startTelemetryStack(t, string(d))
			alice := st.token("alice@example.com")

			// A read, a made-up tool, then a write to confirm. The model
			// calls a tool it was not offered, as real models now and then
			// make one up: the fake is let to.
			st.model.SetOfferedToolsOnly(false)
			st.model.Enqueue(
				fakeopenai.ToolCalls(fakeopenai.Call{ID: "call_1", Name: "list_widgets", Arguments: `{}`},
					fakeopenai.Call{ID: "call_2", Name: "made_up_tool_" + string(d), Arguments: `{}`}),
				fakeopenai.ToolCalls(fakeopenai.Call{ID: "call_3", Name: "resize_widget", Arguments: `{"service":"checkout","desired_count":3}`}),
			)
			code, body, evs := st.call(alice, "POST", "/api/v1/agent/chat", map[string]any{"message": "scale checkout to 3"})
			conf := find(evs, "confirmation_required").Data
			if code != 200 || conf == nil {
				t.Fatalf("chat: %d %s", code, body)
			}
			code, body, _ = st.call(alice, "POST", "/api/v1/agent/confirm",
				map[string]any{"session_id": conf["session_id"], "confirmation_id": conf["confirmation_id"], "approved": true})
			if code != 200 {
				t.Fatalf("confirm: %d %s", code, body)
			}
			// A second write is left waiting.
			st.model.Enqueue(fakeopenai.ToolCalls(fakeopenai.Call{ID: "call_4", Name: "resize_widget", Arguments: `{"service":"search","desired_count":0}`}))
			if _, _, evs := st.call(alice, "POST", "/api/v1/agent/chat", map[string]any{"message": "scale search to zero"}); find(evs, "confirmation_required").Data == nil {
				t.Fatalf("second chat: %s", names(evs))
			}

			// A webhook delivery, sent twice.
			gh := fakegithub.New(t)
			repo := gh.AddRepo("octo-alice", "api").Hook()
			push := fakegithub.NewEventDelivery(fakegithub.PushEvent{Repo: repo, Sender: gh.AddUser("octo-alice", 101).Hook()}).Signed(scmWebhookSecret)
			for _, want := range []string{"accepted", "duplicate"} {
				req, err := push.Request(context.Background(), st.base+"/webhooks/scm")
				if err != nil {
					t.Fatal(err)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 202 || !strings.Contains(string(b), `"status":"`+want+`"`) {
					t.Fatalf("delivery: %d %s, want %s", resp.StatusCode, b, want)
				}
			}

			// The worker processes the delivery meanwhile.
			var metrics string
			for deadline := time.Now().Add(20 * time.Second); ; {
				metrics = st.metricsText()
				if n, _ := seriesValue(metrics, "devpilot_webhook_processing_lag_seconds_count"); n >= 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the delivery was not processed in time:\n%s", metrics)
				}
				time.Sleep(50 * time.Millisecond)
			}
			for series, want := range map[string]float64{
				`devpilot_tool_calls_total{outcome="ok",tool="list_widgets"}`:       1,
				`devpilot_tool_calls_total{outcome="refused",tool="unknown"}`:       1,
				`devpilot_tool_calls_total{outcome="pending",tool="resize_widget"}`: 2,
				`devpilot_tool_calls_total{outcome="ok",tool="resize_widget"}`:      1,
				`devpilot_confirmations_decided_total{status="approved"}`:           1,
				`devpilot_confirmations_decided_total{status="rejected"}`:           0,
				`devpilot_confirmations_pending`:                                    1,
				`devpilot_webhook_deliveries_total{outcome="accepted"}`:             1,
				`devpilot_webhook_deliveries_total{outcome="duplicate"}`:            1,
				`devpilot_webhook_deliveries_total{outcome="bad_signature"}`:        0,
				`devpilot_webhook_processing_lag_seconds_count`:                     1,
			} {
				if got, ok := seriesValue(metrics, series); !ok || got != want {
					t.Errorf("%s = %v (present: %v), want %v", series, got, ok, want)
				}
			}
			if strings.Contains(metrics, "made_up_tool") {
				t.Error("a made-up tool name became a label")
			}
		})
	}
}

// TestWorkerMetricsOfTheCores: the worker command, which processes the
// webhook deliveries, serves the cores' metrics on DEVPILOT_WORKER_ADDR too.
func TestWorkerMetricsOfTheCores(t *testing.T) {
	t.Parallel()
	vars := map[string]string{
		app.EnvSecretKey:   validKey,
		app.EnvDatabaseURL: sqlstoretest.URL(t, sqlstore.DialectSQLite),
		app.EnvWorkerAddr:  "127.0.0.1:0",
		app.EnvDataDir:     t.TempDir(),
	}
	migrateDB(t, vars)
	st := &stack{t: t, base: startProcess(t, app.ModeWorker, vars)}
	metrics := st.metricsText()
	for _, series := range []string{`devpilot_confirmations_pending`, `devpilot_webhook_deliveries_total{outcome="accepted"}`,
		`devpilot_confirmations_decided_total{status="expired"}`, `devpilot_webhook_processing_lag_seconds_count`} {
		if got, ok := seriesValue(metrics, series); !ok || got != 0 {
			t.Errorf("%s = %v (present: %v), want 0", series, got, ok)
		}
	}
}
