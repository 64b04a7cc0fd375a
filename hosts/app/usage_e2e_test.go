package app_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/hosts/app"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
	"github.com/devpilot/devpilot/ports"
)

type usageReport struct {
	From, To string
	GroupBy  string  `json:"group_by"`
	UserID   *string `json:"user_id"`
	Total    usageTotal
	Groups   []usageTotal
}

type usageTotal struct {
	Key              string
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
	Calls            int64
}

func (st *stack) usage(token, query string) (int, usageReport) {
	st.t.Helper()
	code, body, _ := st.call(token, "GET", "/api/v1/usage"+query, nil)
	var r usageReport
	if code == 200 {
		if err := json.Unmarshal(body, &r); err != nil {
			st.t.Fatalf("usage: %v: %s", err, body)
		}
	}
	return code, r
}

// TestUsageAccountsForEveryToken: every token the model reported is in
// /api/v1/usage, charged to the user and feature it was used for.
func TestUsageAccountsForEveryToken(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startStack(t, string(d))
			admin, err := st.id.IssueToken(context.Background(), identity.IssueTokenInput{Email: "admin@example.com", OrgName: "acme", Role: ports.RoleAdmin})
			if err != nil {
				t.Fatal(err)
			}
			alice, bob := st.token("alice@example.com"), st.token("bob@example.com")

			// Alice's turn: two model calls.
			st.model.Enqueue(
				fakeopenai.ToolCalls(fakeopenai.Call{ID: "call_1", Name: "list_widgets", Arguments: `{}`}).WithUsage(1200, 30),
				fakeopenai.Text("Two widgets.").WithUsage(1300, 7),
			)
			code, body, evs := st.call(alice, "POST", "/api/v1/agent/chat", map[string]any{"message": "which widgets?"})
			if code != 200 || names(evs) == "" {
				t.Fatalf("chat: %d %s", code, body)
			}
			session := find(evs, "done").Data["session_id"].(string)
			// Its title: one more.
			st.model.Enqueue(fakeopenai.Text("Widgets").WithUsage(90, 2))
			if code, body, _ := st.call(alice, "POST", "/api/v1/agent/generate-title", map[string]any{"session_id": session}); code != 200 {
				t.Fatalf("title: %d %s", code, body)
			}
			// Bob's turn: one call.
			st.model.Enqueue(fakeopenai.Text("Hi.").WithUsage(40, 3))
			if code, body, _ := st.call(bob, "POST", "/api/v1/agent/chat", map[string]any{"message": "hello"}); code != 200 {
				t.Fatalf("bob's chat: %d %s", code, body)
			}

			code, r := st.usage(admin.Token, "?group_by=feature")
			if code != 200 || r.GroupBy != "feature" || r.UserID != nil {
				t.Fatalf("admin's usage: %d %+v", code, r)
			}
			want := usageTotal{PromptTokens: 1200 + 1300 + 90 + 40, CompletionTokens: 30 + 7 + 2 + 3, Calls: 4}
			want.TotalTokens = want.PromptTokens + want.CompletionTokens
			if r.Total != want {
				t.Errorf("total %+v, want %+v", r.Total, want)
			}
			if len(r.Groups) != 2 || r.Groups[0].Key != "chat" || r.Groups[0].PromptTokens != 2540 || r.Groups[0].Calls != 3 ||
				r.Groups[1].Key != "title" || r.Groups[1].CompletionTokens != 2 {
				t.Errorf("by feature %+v", r.Groups)
			}
			if code, r := st.usage(admin.Token, "?group_by=model"); code != 200 || len(r.Groups) != 1 || r.Groups[0].Calls != 4 {
				t.Errorf("by model: %d %+v", code, r)
			}
			// A member sees their own usage, not the organisation's.
			code, r = st.usage(alice, "?group_by=day")
			if code != 200 || r.UserID == nil || r.Total.PromptTokens != 2590 || r.Total.Calls != 3 || len(r.Groups) != 1 {
				t.Errorf("alice's usage: %d %+v", code, r)
			}
			if code, r := st.usage(bob, "?group_by=user"); code != 200 || r.Total.PromptTokens != 40 || len(r.Groups) != 1 || r.Groups[0].Key != *r.UserID {
				t.Errorf("bob's usage: %d %+v", code, r)
			}
			if code, _ := st.usage(bob, "?user_id="+*r.UserID); code != 403 {
				t.Errorf("bob asking for alice's usage: %d, want 403", code)
			}
			for _, q := range []string{"?group_by=month", "?from=2026-02-30", "?from=%00", "?user_id=x%00y", "?from=2020-01-01&to=2026-01-01", "?to=2026-02-01%2015:04:05Z"} {
				if code, _ := st.usage(admin.Token, q); code != 422 {
					t.Errorf("usage%s: %d, want 422", q, code)
				}
			}
			if code, r := st.usage(admin.Token, "?from=2026-02-01T23:30:00.5-05:00&to=2026-02-03"); code != 200 || r.From != "2026-02-02" {
				t.Errorf("usage from an RFC 3339 time with fractions: %d %+v, want 200 from its UTC day", code, r)
			}
			if code, _ := st.usage("", ""); code != 401 {
				t.Errorf("usage without a token: %d", code)
			}
		})
	}
}

// TestUsageOfTranscriptions: the tokens a GPT transcription model reports
// are charged to the caller for voice, and a transcription over the
// organisation's budget is refused before the provider is called; on both
// databases.
func TestUsageOfTranscriptions(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startStackWith(t, string(d), map[string]string{app.EnvTranscribe: "gpt-4o-transcribe"})
			admin, alice := st.admin("admin@example.com"), st.token("alice@example.com")
			wav := fakeopenai.WAV(time.Second, 440)
			st.model.EnqueueTranscription(fakeopenai.Text("the checkout service is healthy"))
			if code, body := st.transcribe(alice, upload{field: "file", filename: "memo.wav", data: wav}); code != 200 {
				t.Fatalf("transcribe: %d %s", code, body)
			}
			// A second of audio: ten tokens in; five words and one out.
			code, r := st.usage(admin, "?group_by=feature")
			if code != 200 || len(r.Groups) != 1 || r.Groups[0] != (usageTotal{Key: "voice", PromptTokens: 10, CompletionTokens: 6, TotalTokens: 16, Calls: 1}) {
				t.Fatalf("usage by feature: %d %+v", code, r)
			}
			if code, r := st.usage(admin, "?group_by=model"); code != 200 || len(r.Groups) != 1 || r.Groups[0].Key != "gpt-4o-transcribe" {
				t.Fatalf("usage by model: %d %+v", code, r)
			}
			if code, r := st.usage(alice, "?group_by=user"); code != 200 || r.Total.TotalTokens != 16 {
				t.Fatalf("alice's usage: %d %+v", code, r)
			}

			// Over the budget, the next transcription is refused before the
			// provider hears of it.
			if code, _, raw := st.budget(admin, "PUT", map[string]any{"monthly_tokens": 16}); code != 200 {
				t.Fatalf("budget: %d %s", code, raw)
			}
			sent := len(st.model.TranscriptionRequests())
			if code, body := st.transcribe(alice, upload{field: "file", filename: "memo.wav", data: wav}); code != 429 || !containsAll(body, "budget_exceeded") {
				t.Fatalf("transcribe over the budget: %d %s", code, body)
			}
			if n := len(st.model.TranscriptionRequests()); n != sent {
				t.Fatalf("the provider received %d transcriptions over the budget", n-sent)
			}
		})
	}
}
