package app_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/hosts/app"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
	"github.com/devpilot/devpilot/ports"
)

// scrape sums, in the stack's /metrics, the samples of the series name
// whose labels include every name="value" pair of labels.
func (st *stack) scrape(t *testing.T, name string, labels ...string) float64 {
	t.Helper()
	resp, err := http.Get(st.base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	var sum float64
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		line := sc.Text()
		series, value, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") || (series != name && !strings.HasPrefix(series, name+"{")) {
			continue
		}
		matches := true
		for i := 0; i+1 < len(labels); i += 2 {
			matches = matches && strings.Contains(series, labels[i]+`="`+labels[i+1]+`"`)
		}
		if !matches {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("sample %q: %v", line, err)
		}
		sum += v
	}
	return sum
}

func TestMetricsEndToEnd(t *testing.T) {
	t.Parallel()
	st := startStack(t, string(sqlstore.DialectSQLite))
	alice := st.token("alice@example.com")

	// A chat turn: the model's call, tokens and time to first token.
	st.model.Enqueue(fakeopenai.Text("Hello there.").WithUsage(21, 4).WithModel("gpt-4o-mini"))
	if code, body, _ := st.call(alice, "POST", "/api/v1/agent/chat", map[string]any{"message": "hello"}); code != 200 {
		t.Fatalf("chat: %d %s", code, body)
	}
	if n := st.scrape(t, "devpilot_model_calls_total", "model", "gpt-4o-mini", "outcome", "ok"); n < 1 {
		t.Errorf("devpilot_model_calls_total{model=gpt-4o-mini,outcome=ok} = %v after a chat", n)
	}
	if n := st.scrape(t, "devpilot_model_tokens_total", "model", "gpt-4o-mini", "type", "prompt"); n < 21 {
		t.Errorf("prompt tokens = %v, want at least 21", n)
	}
	if n := st.scrape(t, "devpilot_model_tokens_total", "type", "completion"); n < 4 {
		t.Errorf("completion tokens = %v, want at least 4", n)
	}
	if n := st.scrape(t, "devpilot_model_time_to_first_token_seconds_count"); n < 1 {
		t.Errorf("time to first token observed %v times", n)
	}

	// An open stream is counted until it ends.
	if n := st.scrape(t, "devpilot_http_sse_streams_open"); n != 0 {
		t.Fatalf("%v streams open before any", n)
	}
	st.model.Enqueue(fakeopenai.Text("Slowly now.").WithFirstTokenDelay(500 * time.Millisecond))
	req, _ := http.NewRequestWithContext(t.Context(), "POST", st.base+"/api/v1/agent/chat", strings.NewReader(`{"message":"slowly"}`))
	req.Header.Set("Authorization", "Bearer "+alice)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if n := st.scrape(t, "devpilot_http_sse_streams_open"); n != 1 {
		t.Errorf("%v streams open while one streams, want 1", n)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if n := st.scrape(t, "devpilot_http_sse_streams_open"); n != 0 {
		t.Errorf("%v streams open after the stream ended, want 0", n)
	}

	// A cloud call: the AWS SDK's calls by service, operation and outcome.
	seedCloud(st.aws.Account(cloudAWSAccount), time.Now())
	st.aws.Regions(cloudRegion)
	c := &cloudClient{st: st}
	admin, _ := st.cloudUser("ops-lead@example.com", "acme", ports.RoleAdmin)
	code, _, body := c.do(t, admin, "POST", "/cloud/accounts", newCloudAccount("prod", false))
	acct := decodeOK[cloudAccountView](t, "create account", code, 201, body)
	if code, _, body := c.do(t, admin, "POST", "/cloud/accounts/"+acct.ID+"/test", nil); code != 200 {
		t.Fatalf("test account: %d %s", code, body)
	}
	if n := st.scrape(t, "devpilot_aws_calls_total", "service", "STS", "operation", "GetCallerIdentity", "outcome", "ok"); n < 1 {
		t.Errorf("devpilot_aws_calls_total{STS,GetCallerIdentity,ok} = %v after testing an account", n)
	}
	if n := st.scrape(t, "devpilot_aws_call_duration_seconds_count", "service", "STS"); n < 1 {
		t.Errorf("STS call durations observed %v times", n)
	}
}

// TestSpecMetricsEndToEnd: a stage stored counts in the spec series, with
// its repair turns and the findings left on it by kind; its artifact shows
// its prompt version and statistics; and the configured temperature and
// seed reach the model with every call of the stage.
func TestSpecMetricsEndToEnd(t *testing.T) {
	t.Parallel()
	st := startStackWith(t, string(sqlstore.DialectSQLite), map[string]string{
		app.EnvSpecTemperature: "prd=0,0.5", app.EnvSpecSeed: "7",
	})
	alice := st.token("alice@example.com")
	id := st.noteSession(alice, "Expense approvals", "Employees wait three weeks for their expenses.")

	// The PRD names an unknown requirement in a journey, before and after
	// its repair turn: one repair turn, one unknown_id finding left.
	var prd map[string]any
	b, err := os.ReadFile(filepath.Join("..", "..", "core", "spec", "testdata", "prd.json"))
	if err != nil || json.Unmarshal(b, &prd) != nil {
		t.Fatalf("prd sample: %v", err)
	}
	journey := prd["user_journeys"].([]any)[0].(map[string]any)
	journey["requirement_ids"] = append(journey["requirement_ids"].([]any), "REQ-99")
	gappy, _ := json.Marshal(prd)
	st.model.Enqueue(stageOutput(t, "scope"), fakeopenai.Text(string(gappy)), fakeopenai.Text(string(gappy)))
	for _, stage := range []string{"scope", "prd"} {
		if code, body, _ := st.call(alice, "POST", "/pse/sessions/"+id+"/generate", nil); code != 202 {
			t.Fatalf("generate %s: %d %s", stage, code, body)
		}
		if v := st.waitReady(alice, id); v.Status != "ready" {
			t.Fatalf("after %s: %s %+v", stage, v.Status, v.Error)
		}
	}

	if n := st.scrape(t, "devpilot_spec_stages_generated_total", "stage", "scope"); n != 1 {
		t.Errorf("devpilot_spec_stages_generated_total{stage=scope} = %v, want 1", n)
	}
	if n := st.scrape(t, "devpilot_spec_stages_generated_total", "stage", "prd"); n != 1 {
		t.Errorf("devpilot_spec_stages_generated_total{stage=prd} = %v, want 1", n)
	}
	if n := st.scrape(t, "devpilot_spec_repair_turns_total", "stage", "prd"); n != 1 {
		t.Errorf("devpilot_spec_repair_turns_total{stage=prd} = %v, want 1", n)
	}
	if n := st.scrape(t, "devpilot_spec_findings_total", "stage", "prd", "kind", "unknown_id"); n != 1 {
		t.Errorf("devpilot_spec_findings_total{stage=prd,kind=unknown_id} = %v, want 1", n)
	}

	code, body, _ := st.call(alice, "GET", "/pse/sessions/"+id, nil)
	var v struct {
		Artifacts []struct {
			Stage         string
			PromptVersion string `json:"prompt_version"`
			Generation    struct {
				Calls          int            `json:"calls"`
				Batches        int            `json:"batches"`
				FirstTryValid  int            `json:"first_try_valid"`
				RepairTurns    int            `json:"repair_turns"`
				FindingsByKind map[string]int `json:"findings_by_kind"`
				Temperature    *float64       `json:"temperature"`
				Seed           *int64         `json:"seed"`
			}
		}
	}
	if err := json.Unmarshal(body, &v); code != 200 || err != nil || len(v.Artifacts) != 2 {
		t.Fatalf("GET session: %d %s", code, body)
	}
	for _, a := range v.Artifacts {
		g := a.Generation
		wantCalls, wantRepairs, wantTemperature := 1, 0, 0.5
		if a.Stage == "prd" {
			wantCalls, wantRepairs, wantTemperature = 2, 1, 0
		}
		if len(a.PromptVersion) != 12 || g.Calls != wantCalls || g.Batches != 1 || g.FirstTryValid != 1 || g.RepairTurns != wantRepairs ||
			g.Temperature == nil || *g.Temperature != wantTemperature || g.Seed == nil || *g.Seed != 7 {
			t.Errorf("%s artifact: prompt version %q, generation %+v", a.Stage, a.PromptVersion, g)
		}
	}

	sent := 0
	for _, r := range st.model.Requests() {
		want := map[string]float64{"spec_scope": 0.5, "spec_prd": 0}
		w, ok := want[r.ResponseSchemaName()]
		if !ok {
			continue
		}
		sent++
		if r.Temperature == nil || *r.Temperature != w || r.Seed == nil || *r.Seed != 7 {
			t.Errorf("%s call: temperature %v seed %v, want %v 7", r.ResponseSchemaName(), r.Temperature, r.Seed, w)
		}
	}
	if sent != 3 {
		t.Errorf("%d stage calls reached the model, want 3", sent)
	}
}
