package usage_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/memstore"
	"github.com/devpilot/devpilot/core/usage"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
)

const (
	org     = "0193a1b2-c3d4-7e5f-8a9b-000000000001"
	annID   = "0193a1b2-c3d4-7e5f-8a9b-0000000000a1"
	boID    = "0193a1b2-c3d4-7e5f-8a9b-0000000000b0"
	otherID = "0193a1b2-c3d4-7e5f-8a9b-000000000002"
)

var (
	ann   = ports.Principal{UserID: annID, OrgID: org, Role: ports.RoleMember}
	bo    = ports.Principal{UserID: boID, OrgID: org, Role: ports.RoleMember}
	admin = ports.Principal{UserID: "0193a1b2-c3d4-7e5f-8a9b-0000000000ad", OrgID: org, Role: ports.RoleAdmin}
)

// llmFunc is a ports.LLM made of a function.
type llmFunc func(ports.ChatRequest) (ports.ChatResult, error)

func (f llmFunc) Chat(_ context.Context, req ports.ChatRequest, _ func(string) error) (ports.ChatResult, error) {
	return f(req)
}

func answering(prompt, completion int, model string, err error) ports.LLM {
	return llmFunc(func(ports.ChatRequest) (ports.ChatResult, error) {
		return ports.ChatResult{Content: "ok", Usage: ports.Usage{PromptTokens: prompt, CompletionTokens: completion}, Model: model}, err
	})
}

func sum(t *testing.T, s ports.UsageStore, orgID string, g ports.UsageGroup, on time.Time) []ports.UsageTotal {
	t.Helper()
	got, err := s.SumUsage(t.Context(), ports.UsageQuery{OrgID: orgID, From: on, To: on, GroupBy: g})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestMeterRecordsEachCallAgainstItsAttribution(t *testing.T) {
	t.Parallel()
	store, clock := memstore.New(), fixture.NewClock()
	llm := usage.NewMeter(answering(120, 30, "gpt-x", nil), store, clock, "default-model", nil)

	// A background job: no principal, an attribution naming the user.
	job := ports.WithAttribution(t.Context(), ports.Attribution{OrgID: org, UserID: boID, Feature: ports.FeatureSpec})
	if res, err := llm.Chat(job, ports.ChatRequest{}, nil); err != nil || res.Content != "ok" {
		t.Fatalf("Chat = %+v, %v", res, err)
	}
	// A request: the principal's org and user, the feature from the core.
	chat := ports.WithAttribution(ports.WithPrincipal(t.Context(), ann), ports.Attribution{OrgID: org, UserID: annID, Feature: ports.FeatureChat})
	for range 2 {
		if _, err := llm.Chat(chat, ports.ChatRequest{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Without an attribution the principal is charged, for "other".
	if _, err := llm.Chat(ports.WithPrincipal(t.Context(), ann), ports.ChatRequest{}, nil); err != nil {
		t.Fatal(err)
	}
	got := sum(t, store, org, ports.UsageByFeature, clock.Now())
	want := []ports.UsageTotal{
		{Key: "chat", PromptTokens: 240, CompletionTokens: 60, Calls: 2},
		{Key: "other", PromptTokens: 120, CompletionTokens: 30, Calls: 1},
		{Key: "spec", PromptTokens: 120, CompletionTokens: 30, Calls: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("by feature = %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("by feature[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
	if byUser := sum(t, store, org, ports.UsageByUser, clock.Now()); len(byUser) != 2 || byUser[0].Key != annID || byUser[0].Calls != 3 {
		t.Errorf("by user = %+v", byUser)
	}
}

func TestMeterNamesTheModel(t *testing.T) {
	t.Parallel()
	ctx := ports.WithPrincipal(t.Context(), ann)
	for _, tt := range []struct {
		result, request, want string
	}{
		{"gpt-result", "gpt-request", "gpt-result"},
		{"", "gpt-request", "gpt-request"},
		{"", "", "default-model"},
	} {
		store := memstore.New()
		llm := usage.NewMeter(answering(1, 1, tt.result, nil), store, fixture.NewClock(), "default-model", nil)
		if _, err := llm.Chat(ctx, ports.ChatRequest{Model: tt.request}, nil); err != nil {
			t.Fatal(err)
		}
		if got := sum(t, store, org, ports.UsageByModel, fixture.Epoch); len(got) != 1 || got[0].Key != tt.want {
			t.Errorf("result %q, request %q: by model = %+v, want %s", tt.result, tt.request, got, tt.want)
		}
	}
}

// failingUsage is a UsageStore whose adds fail.
type failingUsage struct{ ports.UsageStore }

func (failingUsage) AddUsage(context.Context, ports.UsageRecord) error {
	return ports.Errorf(ports.KindUnavailable, "database down")
}

func TestMeterNeverFailsACallItCannotRecord(t *testing.T) {
	t.Parallel()
	ctx := ports.WithPrincipal(t.Context(), ann)
	store := memstore.New()
	upstream := ports.Errorf(ports.KindUpstream, "cut")
	for name, llm := range map[string]ports.LLM{
		"store down":       usage.NewMeter(answering(5, 5, "m", nil), failingUsage{store}, fixture.NewClock(), "m", nil),
		"failed call":      usage.NewMeter(answering(0, 0, "m", upstream), store, fixture.NewClock(), "m", nil),
		"failed with used": usage.NewMeter(answering(9, 1, "m", upstream), store, fixture.NewClock(), "m", nil),
	} {
		res, err := llm.Chat(ctx, ports.ChatRequest{}, nil)
		if name == "store down" && (err != nil || res.Content != "ok") {
			t.Errorf("%s: Chat = %+v, %v", name, res, err)
		}
		if name != "store down" && !errors.Is(err, upstream) {
			t.Errorf("%s: err %v, want the call's", name, err)
		}
	}
	// A failed call that reported tokens used them: they are charged.
	if got := sum(t, store, org, "", fixture.Epoch); len(got) != 1 || got[0].PromptTokens != 9 || got[0].Calls != 1 {
		t.Errorf("total = %+v", got)
	}
	// No organisation to charge: nothing recorded, nothing failed.
	llm := usage.NewMeter(answering(5, 5, "m", nil), store, fixture.NewClock(), "m", nil)
	if _, err := llm.Chat(t.Context(), ports.ChatRequest{}, nil); err != nil {
		t.Errorf("unattributed call: %v", err)
	}
}

func TestUsageReport(t *testing.T) {
	t.Parallel()
	store, clock := memstore.New(), fixture.NewClock()
	now := clock.Now().UTC()
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	monthStart := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	add := func(p ports.Principal, on time.Time, f ports.Feature, prompt int64) {
		t.Helper()
		if err := store.AddUsage(t.Context(), ports.UsageRecord{Attribution: ports.Attribution{OrgID: p.OrgID, UserID: p.UserID, Feature: f},
			Model: "m", Day: on, PromptTokens: prompt, CompletionTokens: 1, Calls: 1}); err != nil {
			t.Fatal(err)
		}
	}
	add(ann, today, ports.FeatureChat, 10)
	add(bo, today, ports.FeatureSpec, 100)
	add(ann, monthStart.AddDate(0, 0, -1), ports.FeatureChat, 1000) // last month
	add(ports.Principal{OrgID: otherID, UserID: annID}, today, ports.FeatureChat, 5000)
	svc := usage.New(store, usage.NewBudgets(store, store, clock, 0), clock)
	as := func(p ports.Principal) context.Context { return ports.WithPrincipal(t.Context(), p) }

	r, err := svc.Report(as(admin), usage.Query{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.From.Equal(monthStart) || !r.To.Equal(today) || r.GroupBy != ports.UsageByDay || r.UserID != "" || r.Total.PromptTokens != 110 || r.Total.Calls != 2 {
		t.Errorf("admin's default report = %+v", r)
	}
	r, err = svc.Report(as(ann), usage.Query{GroupBy: "feature", From: monthStart.AddDate(0, -1, 0).Format(time.DateOnly)})
	if err != nil {
		t.Fatal(err)
	}
	if r.UserID != annID || r.Total.PromptTokens != 1010 || len(r.Groups) != 1 || r.Groups[0].Key != "chat" {
		t.Errorf("a member's own report = %+v", r)
	}
	if _, err := svc.Report(as(ann), usage.Query{UserID: boID}); ports.KindOf(err) != ports.KindForbidden {
		t.Errorf("a member asking for another's usage: %v, want forbidden", err)
	}
	if r, err := svc.Report(as(admin), usage.Query{UserID: boID, GroupBy: "user"}); err != nil || r.Total.PromptTokens != 100 {
		t.Errorf("admin asking for bo's usage: %+v, %v", r, err)
	}
	for _, q := range []usage.Query{
		{GroupBy: "month"}, {From: "yesterday"}, {To: "2026-13-01"}, {UserID: "bo"},
		{From: "2026-11-20", To: "2026-11-19"}, {From: "2024-01-01", To: "2026-01-01"},
	} {
		if _, err := svc.Report(as(admin), q); ports.KindOf(err) != ports.KindInvalid {
			t.Errorf("Report(%+v) = %v, want invalid", q, err)
		}
	}
	if _, err := svc.Report(t.Context(), usage.Query{}); ports.KindOf(err) != ports.KindUnauthenticated {
		t.Errorf("without a principal: %v", err)
	}
	if r, err := svc.Report(as(admin), usage.Query{From: "2026-11-01T23:30:00-05:00", To: "2026-11-02"}); err != nil ||
		!r.From.Equal(time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("an RFC 3339 from counts its UTC day: %+v, %v", r, err)
	}
	if r, err := svc.Report(as(admin), usage.Query{From: "2026-11-01T23:30:00.123456Z", To: "2026-11-02"}); err != nil ||
		!r.From.Equal(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("an RFC 3339 from with fractions of a second: %+v, %v", r, err)
	}
	_, err = svc.Report(as(admin), usage.Query{From: "2026-11-01 23:30:00Z"})
	if e, ok := ports.AsError(err); !ok || e.Kind != ports.KindInvalid || len(e.Fields) != 1 || e.Fields[0].Field != "from" {
		t.Errorf("a from that is neither a date nor an RFC 3339 time: %v, want invalid naming from", err)
	}
}
