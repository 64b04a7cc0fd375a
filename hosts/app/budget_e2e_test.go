package app_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

type budgetView struct {
	MonthlyTokens *int64    `json:"monthly_tokens"`
	Used          int64     `json:"used"`
	PeriodStart   time.Time `json:"period_start"`
	PeriodEnd     time.Time `json:"period_end"`
	Source        string    `json:"source"`
}

func (st *stack) budget(token, method string, body any, header ...string) (int, budgetView, []byte) {
	st.t.Helper()
	code, raw, _ := st.call(token, method, "/api/v1/usage/budget", body, header...)
	var b budgetView
	if code == 200 {
		if err := json.Unmarshal(raw, &b); err != nil {
			st.t.Fatalf("budget: %v: %s", err, raw)
		}
	}
	return code, b, raw
}

// TestOrgTokenBudget: an admin sets the organisation's monthly token
// budget; once it is used up, chats and generations are refused (429
// budget_exceeded with Retry-After up front, or an error event and done
// when a turn runs out midway), refused calls are not counted, and going
// back to the default (unlimited here) lets the organisation work again.
func TestOrgTokenBudget(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startStack(t, string(d))
			admin, alice := st.admin("admin@example.com"), st.token("alice@example.com")

			code, b, raw := st.budget(alice, "GET", nil)
			if code != 200 || b.MonthlyTokens != nil || b.Source != "default" || b.Used != 0 ||
				b.PeriodStart.Day() != 1 || !b.PeriodEnd.Equal(b.PeriodStart.AddDate(0, 1, 0)) {
				t.Fatalf("default budget: %d %s", code, raw)
			}
			if code, _, raw := st.budget(alice, "PUT", map[string]any{"monthly_tokens": 5}); code != 403 {
				t.Fatalf("a member's PUT: %d %s", code, raw)
			}
			for _, bad := range []map[string]any{{"monthly_tokens": -1}, {"monthly_tokens": 1e13}, {"monthly_tokens": 1.5}, {"monthly_tokens": "9"}} {
				if code, _, raw := st.budget(admin, "PUT", bad); code != 422 {
					t.Errorf("PUT %v: %d %s", bad, code, raw)
				}
			}
			if code, _, raw := st.budget(admin, "PUT", map[string]any{}); code != 400 {
				t.Errorf("PUT without monthly_tokens: %d %s", code, raw)
			}
			code, b, raw = st.budget(admin, "PUT", map[string]any{"monthly_tokens": 1000}, "Idempotency-Key", "budget-1")
			if code != 200 || b.MonthlyTokens == nil || *b.MonthlyTokens != 1000 || b.Source != "org" {
				t.Fatalf("admin's PUT: %d %s", code, raw)
			}

			// One chat uses the budget up exactly.
			st.model.Enqueue(fakeopenai.Text("Hi.").WithUsage(900, 100))
			if code, body, evs := st.call(alice, "POST", "/api/v1/agent/chat", map[string]any{"message": "hello"}); code != 200 || names(evs) != "content,done" {
				t.Fatalf("chat within the budget: %d %s", code, body)
			}
			// The next is refused before it starts, as is a generation.
			for _, c := range []struct {
				path string
				body map[string]any
			}{
				{"/api/v1/agent/chat", map[string]any{"message": "again"}},
				{"/api/v1/content/generate", map[string]any{"brief_id": "0193a1b2-c3d4-7e5f-8a9b-000000000001"}},
			} {
				resp := st.raw(alice, "POST", c.path, c.body)
				secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
				var p struct{ Code string }
				_ = json.NewDecoder(resp.Body).Decode(&p)
				resp.Body.Close()
				if resp.StatusCode != 429 || p.Code != "budget_exceeded" || secs <= 0 || secs > 31*24*3600 {
					t.Errorf("%s over the budget: %d %q Retry-After %q", c.path, resp.StatusCode, p.Code, resp.Header.Get("Retry-After"))
				}
			}

			// Room for one call more: a turn whose second call is refused
			// ends with the error and done.
			if code, _, raw := st.budget(admin, "PUT", map[string]any{"monthly_tokens": 1500}); code != 200 {
				t.Fatalf("raising the budget: %d %s", code, raw)
			}
			st.model.Enqueue(fakeopenai.ToolCalls(fakeopenai.Call{ID: "call_1", Name: "list_widgets", Arguments: `{}`}).WithUsage(600, 10))
			code, body, evs := st.call(alice, "POST", "/api/v1/agent/chat", map[string]any{"message": "which widgets?"})
			if code != 200 || names(evs) != "tool_call,tool_result,error,done" {
				t.Fatalf("turn running out of budget: %d %s", code, body)
			}
			if e := find(evs, "error").Data; e["code"] != "budget_exceeded" || e["retryable"] != true {
				t.Errorf("error event %v", e)
			}
			if done := find(evs, "done").Data; done["finish_reason"] != "error" {
				t.Errorf("done %v", done)
			}

			// Only the calls the model answered are counted.
			if code, r := st.usage(admin, ""); code != 200 || r.Total.TotalTokens != 1610 || r.Total.Calls != 2 {
				t.Errorf("usage: %d %+v", code, r.Total)
			}
			code, b, raw = st.budget(alice, "GET", nil)
			if code != 200 || b.Used != 1610 || b.MonthlyTokens == nil || *b.MonthlyTokens != 1500 || b.Source != "org" {
				t.Errorf("budget after: %d %s", code, raw)
			}

			// Back to the default: unlimited.
			code, b, raw = st.budget(admin, "PUT", map[string]any{"monthly_tokens": nil})
			if code != 200 || b.MonthlyTokens != nil || b.Source != "default" || b.Used != 1610 {
				t.Fatalf("back to the default: %d %s", code, raw)
			}
			st.model.Enqueue(fakeopenai.Text("Hi again.").WithUsage(10, 1))
			if code, body, evs := st.call(alice, "POST", "/api/v1/agent/chat", map[string]any{"message": "hello"}); code != 200 || find(evs, "done").Data["finish_reason"] != "stop" {
				t.Fatalf("chat after the budget was lifted: %d %s", code, body)
			}
		})
	}
}

// raw sends a JSON request and returns the response, unread.
func (st *stack) raw(token, method, path string, body any) *http.Response {
	st.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, st.base+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		st.t.Fatal(err)
	}
	return resp
}
