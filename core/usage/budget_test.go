package usage_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/memstore"
	"github.com/devpilot/devpilot/core/usage"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
)

// countingLLM answers every call with prompt and completion tokens and
// counts the calls that reached it.
type countingLLM struct {
	calls              atomic.Int64
	prompt, completion int
}

func (c *countingLLM) Chat(context.Context, ports.ChatRequest, func(string) error) (ports.ChatResult, error) {
	c.calls.Add(1)
	return ports.ChatResult{Content: "ok", Usage: ports.Usage{PromptTokens: c.prompt, CompletionTokens: c.completion}, Model: "m"}, nil
}

// countingUsage counts SumUsage calls.
type countingUsage struct {
	ports.UsageStore
	sums atomic.Int64
}

func (c *countingUsage) SumUsage(ctx context.Context, q ports.UsageQuery) ([]ports.UsageTotal, error) {
	c.sums.Add(1)
	return c.UsageStore.SumUsage(ctx, q)
}

func chargedTo(t *testing.T, orgID string) context.Context {
	return ports.WithAttribution(t.Context(), ports.Attribution{OrgID: orgID, UserID: annID, Feature: ports.FeatureChat})
}

func TestBudgetRefusesAtTheLimitUntilNextMonth(t *testing.T) {
	t.Parallel()
	store := memstore.New()
	clock := fixture.NewClock()
	clock.Set(time.Date(2026, 11, 30, 22, 0, 0, 0, time.UTC))
	llm := &countingLLM{prompt: 60, completion: 40} // 100 a call
	b := usage.NewBudgets(store, store, clock, 250)
	m := usage.NewMeter(llm, store, clock, "m", nil).Enforce(b)
	for i := range 3 { // 0, 100, 200 used before each: all below 250
		if _, err := m.Chat(chargedTo(t, org), ports.ChatRequest{}, nil); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	_, err := m.Chat(chargedTo(t, org), ports.ChatRequest{}, nil)
	e, ok := ports.AsError(err)
	if !ok || e.Kind != ports.KindRateLimited || e.Code != ports.CodeBudgetExceeded || e.RetryAfter != 2*time.Hour || !e.Retryable() {
		t.Fatalf("call over the budget = %#v, want rate_limited budget_exceeded retrying in 2h", err)
	}
	if got := llm.calls.Load(); got != 3 {
		t.Errorf("the model was called %d times, want 3", got)
	}
	if got := sum(t, store, org, "", clock.Now()); len(got) != 1 || got[0].PromptTokens+got[0].CompletionTokens != 300 || got[0].Calls != 3 {
		t.Errorf("usage = %+v, want 300 tokens in 3 calls (the refusal is not counted)", got)
	}
	// Another organisation is not held by this one's usage.
	if _, err := m.Chat(chargedTo(t, otherID), ports.ChatRequest{}, nil); err != nil {
		t.Errorf("another organisation's call: %v", err)
	}
	// A new month starts afresh.
	clock.Set(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	if _, err := m.Chat(chargedTo(t, org), ports.ChatRequest{}, nil); err != nil {
		t.Errorf("the first call of the next month: %v", err)
	}
}

func TestBudgetCachesTheMonthsUsage(t *testing.T) {
	t.Parallel()
	store := memstore.New()
	counted := &countingUsage{UsageStore: store}
	clock := fixture.NewClock()
	llm := &countingLLM{prompt: 1, completion: 1}
	b := usage.NewBudgets(counted, store, clock, 1000)
	m := usage.NewMeter(llm, store, clock, "m", nil).Enforce(b)
	for range 10 {
		if _, err := m.Chat(chargedTo(t, org), ports.ChatRequest{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := counted.sums.Load(); got != 1 {
		t.Errorf("10 calls within the cache's life read the usage %d times, want 1", got)
	}
	// Usage made elsewhere (another process) counts once the cache expires.
	if err := store.AddUsage(t.Context(), ports.UsageRecord{Attribution: ports.Attribution{OrgID: org, Feature: ports.FeatureSpec},
		Model: "m", Day: clock.Now(), PromptTokens: 990, Calls: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Chat(chargedTo(t, org), ports.ChatRequest{}, nil); err != nil {
		t.Fatalf("within the cache's life, the other usage is not seen yet: %v", err)
	}
	clock.Advance(usage.BudgetCacheTTL)
	if _, err := m.Chat(chargedTo(t, org), ports.ChatRequest{}, nil); !ports.IsKind(err, ports.KindRateLimited) {
		t.Errorf("after the cache expired: %v, want budget_exceeded", err)
	}
	if got := counted.sums.Load(); got != 2 {
		t.Errorf("usage read %d times, want 2", got)
	}
}

func TestBudgetUnlimitedReadsNoUsage(t *testing.T) {
	t.Parallel()
	store := memstore.New()
	counted := &countingUsage{UsageStore: store}
	clock := fixture.NewClock()
	llm := &countingLLM{prompt: 1000, completion: 1000}
	m := usage.NewMeter(llm, store, clock, "m", nil).Enforce(usage.NewBudgets(counted, store, clock, 0))
	for range 5 {
		if _, err := m.Chat(chargedTo(t, org), ports.ChatRequest{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := counted.sums.Load(); got != 0 {
		t.Errorf("without any budget the usage was read %d times", got)
	}
}

func TestBudgetServiceSetAndReport(t *testing.T) {
	t.Parallel()
	store := memstore.New()
	clock := fixture.NewClock()
	clock.Set(time.Date(2026, 11, 12, 9, 0, 0, 0, time.UTC))
	b := usage.NewBudgets(store, store, clock, 500)
	svc := usage.New(store, b, clock)
	m := usage.NewMeter(&countingLLM{prompt: 5, completion: 5}, store, clock, "m", nil).Enforce(b)
	as := func(p ports.Principal) context.Context { return ports.WithPrincipal(t.Context(), p) }
	if _, err := m.Chat(as(ann), ports.ChatRequest{}, nil); err != nil {
		t.Fatal(err)
	}

	st, err := svc.Budget(as(ann))
	if err != nil {
		t.Fatal(err)
	}
	start, end := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	if st.MonthlyTokens == nil || *st.MonthlyTokens != 500 || st.Used != 10 || st.Source != usage.BudgetSourceDefault ||
		!st.PeriodStart.Equal(start) || !st.PeriodEnd.Equal(end) {
		t.Errorf("default status = %+v", st)
	}
	if _, err := svc.SetBudget(as(ann), new(int64(1))); !ports.IsKind(err, ports.KindForbidden) {
		t.Errorf("a member's SetBudget = %v, want forbidden", err)
	}
	if _, err := svc.SetBudget(as(admin), new(int64(-1))); !ports.IsKind(err, ports.KindInvalid) {
		t.Errorf("SetBudget(-1) = %v, want invalid", err)
	}
	// Setting a budget takes effect at once in this process, cache or not.
	st, err = svc.SetBudget(as(admin), new(int64(10)))
	if err != nil || st.MonthlyTokens == nil || *st.MonthlyTokens != 10 || st.Source != usage.BudgetSourceOrg {
		t.Fatalf("SetBudget(10) = %+v, %v", st, err)
	}
	if err := svc.CheckBudget(as(ann)); !ports.IsKind(err, ports.KindRateLimited) {
		t.Errorf("CheckBudget at the org's budget = %v, want budget_exceeded", err)
	}
	if _, err := m.Chat(as(ann), ports.ChatRequest{}, nil); !ports.IsKind(err, ports.KindRateLimited) {
		t.Errorf("a call at the org's budget = %v, want budget_exceeded", err)
	}
	st, err = svc.SetBudget(as(admin), nil)
	if err != nil || st.MonthlyTokens == nil || *st.MonthlyTokens != 500 || st.Source != usage.BudgetSourceDefault {
		t.Fatalf("SetBudget(nil) = %+v, %v", st, err)
	}
	if err := svc.CheckBudget(as(ann)); err != nil {
		t.Errorf("CheckBudget back at the default: %v", err)
	}
	// Unlimited: no budget at all.
	svc2 := usage.New(store, usage.NewBudgets(store, store, clock, 0), clock)
	if st, err := svc2.Budget(as(ann)); err != nil || st.MonthlyTokens != nil || st.Used != 10 {
		t.Errorf("unlimited status = %+v, %v", st, err)
	}
	if _, err := svc.Budget(t.Context()); !ports.IsKind(err, ports.KindUnauthenticated) {
		t.Errorf("Budget without a principal = %v", err)
	}
}
