package app_test

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fakeopenai"
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
