package cloud_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/core/cloud"
	"github.com/devpilot/devpilot/ports"
)

func date(s string) time.Time {
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestCostsValidation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, cloud.Config{})
	id := e.add(keyAccount("Production"))
	// Today is 2026-01-02 (fixture.Epoch): the oldest start is 2024-12-02.
	ok := cloud.CostInput{AccountID: id, StartDate: "2025-12-01", EndDate: "2025-12-31"}
	tests := []struct {
		name   string
		edit   func(*cloud.CostInput)
		fields []string
	}{
		{"no start", func(in *cloud.CostInput) { in.StartDate = "" }, []string{"start_date"}},
		{"no end", func(in *cloud.CostInput) { in.EndDate = "" }, []string{"end_date"}},
		{"short month", func(in *cloud.CostInput) { in.StartDate = "2025-1-05" }, []string{"start_date"}},
		{"no such day", func(in *cloud.CostInput) { in.StartDate = "2025-02-30" }, []string{"start_date"}},
		{"a timestamp", func(in *cloud.CostInput) { in.EndDate = "2025-12-31T00:00:00Z" }, []string{"end_date"}},
		{"words", func(in *cloud.CostInput) { in.EndDate = "yesterday" }, []string{"end_date"}},
		{"start after end", func(in *cloud.CostInput) { in.StartDate, in.EndDate = "2025-12-02", "2025-12-01" }, []string{"start_date"}},
		{"too far back", func(in *cloud.CostInput) { in.StartDate = "2024-12-01" }, []string{"start_date"}},
		{"hourly", func(in *cloud.CostInput) { in.Granularity = "HOURLY" }, []string{"granularity"}},
		{"lower case", func(in *cloud.CostInput) { in.Granularity = "daily" }, []string{"granularity"}},
		{"by operation", func(in *cloud.CostInput) { in.GroupBy = "OPERATION" }, []string{"group_by"}},
		{"lower case dimension", func(in *cloud.CostInput) { in.GroupBy = "region" }, []string{"group_by"}},
		{"empty tag key", func(in *cloud.CostInput) { in.GroupBy = "tag:" }, []string{"group_by"}},
		{"tag key with a control character", func(in *cloud.CostInput) { in.GroupBy = "tag:te\x01am" }, []string{"group_by"}},
		{"tag key of invalid UTF-8", func(in *cloud.CostInput) { in.GroupBy = "tag:te\xffam" }, []string{"group_by"}},
		{"tag key too long", func(in *cloud.CostInput) { in.GroupBy = "tag:" + strings.Repeat("k", 129) }, []string{"group_by"}},
		{"all wrong", func(in *cloud.CostInput) { *in = cloud.CostInput{StartDate: "x", Granularity: "x", GroupBy: "x"} },
			[]string{"start_date", "end_date", "granularity", "group_by"}},
	}
	for _, tt := range tests {
		in := ok
		tt.edit(&in)
		_, err := e.svc.Costs(as(alice), in)
		if !errors.Is(err, ports.ErrMalformed) || !slices.Equal(fieldsOf(err), tt.fields) {
			t.Errorf("%s: %v (fields %v), want malformed %v", tt.name, err, fieldsOf(err), tt.fields)
		}
	}
	// No provider call was expected, so any would have failed the test.
	if puts := e.puts(); len(puts) != 0 {
		t.Errorf("cached %v", puts)
	}

	if _, err := e.svc.Costs(as(alice), cloud.CostInput{AccountID: "00000000-0000-7000-8000-0000000000ff", StartDate: "2025-12-01", EndDate: "2025-12-31"}); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("an absent account: %v", err)
	}
	if _, err := e.svc.Costs(as(other), ok); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("another org's account: %v", err)
	}
	noAccount := ok
	noAccount.AccountID = ""
	if _, err := e.svc.Costs(as(other), noAccount); !errors.Is(err, ports.ErrMalformed) || !slices.Equal(fieldsOf(err), []string{"account_id"}) {
		t.Errorf("no account in an org without accounts: %v", err)
	}
}

func TestCostsLookback(t *testing.T) {
	t.Parallel()
	e := newEnv(t, cloud.Config{MaxCostLookback: 30 * 24 * time.Hour})
	id := e.add(roleAccount("Production"))
	if _, err := e.svc.Costs(as(alice), cloud.CostInput{AccountID: id, StartDate: "2025-12-02", EndDate: "2025-12-02"}); !errors.Is(err, ports.ErrMalformed) {
		t.Errorf("31 days back: %v", err)
	}
	e.prov.EXPECT().Costs(gomock.Any(), gomock.Any(), gomock.Any()).Return(ports.CostReport{Currency: "USD"}, nil)
	if _, err := e.svc.Costs(as(alice), cloud.CostInput{AccountID: id, StartDate: "2025-12-03", EndDate: "2025-12-03"}); err != nil {
		t.Errorf("30 days back: %v", err)
	}
}

func TestCostsQueryAndCache(t *testing.T) {
	t.Parallel()
	e := newEnv(t, cloud.Config{})
	in := keyAccount("Production")
	id := e.add(in)
	report := ports.CostReport{Currency: "USD", Periods: []ports.CostPeriod{
		{Start: date("2024-12-02"), End: date("2024-12-03"), Total: "1.25"},
		{Start: date("2024-12-03"), End: date("2024-12-04"), Total: "2.50"},
	}}
	// The oldest day allowed, and the inclusive end converted to exclusive.
	e.prov.EXPECT().Costs(gomock.Any(), creds(in), ports.CostQuery{Start: date("2024-12-02"), End: date("2024-12-04"), Granularity: "DAILY"}).
		Return(report, nil).Times(1)
	q := cloud.CostInput{AccountID: id, StartDate: "2024-12-02", EndDate: "2024-12-03"}
	first, err := e.svc.Costs(as(alice), q)
	if err != nil {
		t.Fatal(err)
	}
	if first.Currency != "USD" || first.Total != "3.75" || first.StartDate != "2024-12-02" || first.EndDate != "2024-12-03" || len(first.Periods) != 2 {
		t.Errorf("view %+v", first)
	}
	puts := e.puts()
	if len(puts) != 1 {
		t.Fatalf("cached %v", puts)
	}
	// The entry expires 6 h from now, exactly.
	expiry := e.clock.Now().Add(6 * time.Hour)
	if _, ok, _ := e.store.GetCachedCost(t.Context(), id, puts[0], expiry.Add(-time.Nanosecond)); !ok {
		t.Error("the entry expires before 6 h from now")
	}
	if _, ok, _ := e.store.GetCachedCost(t.Context(), id, puts[0], expiry); ok {
		t.Error("the entry outlives 6 h from now")
	}

	// The same query within 6 hours, by anyone in the org, is answered from the cache.
	e.clock.Advance(6*time.Hour - time.Second)
	q.Granularity = "DAILY"
	second, err := e.svc.Costs(as(admin), q)
	if err != nil || second.Total != first.Total || len(second.Periods) != 2 {
		t.Errorf("cached = %+v, %v", second, err)
	}

	// Another grouping, granularity or range is another query; so is the same after 6 hours.
	e.prov.EXPECT().Costs(gomock.Any(), creds(in), ports.CostQuery{Start: date("2024-12-02"), End: date("2024-12-04"), Granularity: "DAILY", GroupBy: "SERVICE"}).
		Return(report, nil).Times(1)
	e.prov.EXPECT().Costs(gomock.Any(), creds(in), ports.CostQuery{Start: date("2024-12-02"), End: date("2024-12-04"), Granularity: "MONTHLY"}).
		Return(report, nil).Times(1)
	e.prov.EXPECT().Costs(gomock.Any(), creds(in), ports.CostQuery{Start: date("2024-12-03"), End: date("2024-12-04"), Granularity: "DAILY"}).
		Return(report, nil).Times(1)
	for _, in := range []cloud.CostInput{
		{AccountID: id, StartDate: "2024-12-02", EndDate: "2024-12-03", GroupBy: "SERVICE"},
		{AccountID: id, StartDate: "2024-12-02", EndDate: "2024-12-03", Granularity: "MONTHLY"},
		{AccountID: id, StartDate: "2024-12-03", EndDate: "2024-12-03"},
	} {
		if _, err := e.svc.Costs(as(alice), in); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Costs(as(alice), in); err != nil {
			t.Fatal(err)
		}
	}
	// The first query's entry has expired.
	e.clock.Advance(time.Second)
	e.prov.EXPECT().Costs(gomock.Any(), creds(in), gomock.Any()).Return(report, nil).Times(1)
	if _, err := e.svc.Costs(as(alice), q); err != nil {
		t.Fatal(err)
	}
	if n := len(e.puts()); n != 5 {
		t.Errorf("%d puts, want 5", n)
	}
}

func TestCostsProviderErrorsAreNotCached(t *testing.T) {
	t.Parallel()
	e := newEnv(t, cloud.Config{})
	id := e.add(roleAccount("Production"))
	q := cloud.CostInput{AccountID: id, StartDate: "2025-12-01", EndDate: "2025-12-01"}
	limited := &ports.Error{Kind: ports.KindRateLimited, Message: "ce: LimitExceededException", RetryAfter: 2 * time.Second}
	e.prov.EXPECT().Costs(gomock.Any(), gomock.Any(), gomock.Any()).Return(ports.CostReport{}, limited)
	_, err := e.svc.Costs(as(alice), q)
	if pe, ok := ports.AsError(err); !ok || pe.Kind != ports.KindRateLimited || pe.RetryAfter != 2*time.Second {
		t.Errorf("rate limited: %v", err)
	}
	// Amounts that are not plain decimals (or would be costly to read exactly) are the provider's fault.
	for _, amount := range []string{"1e999", "N/A", "0x1p-2", "1/3", "1,000.00", "12 USD"} {
		e.prov.EXPECT().Costs(gomock.Any(), gomock.Any(), gomock.Any()).Return(ports.CostReport{Currency: "USD", Periods: []ports.CostPeriod{{Total: amount}}}, nil)
		if _, err := e.svc.Costs(as(alice), q); !errors.Is(err, ports.ErrUpstream) {
			t.Errorf("the amount %q: %v", amount, err)
		}
	}
	if puts := e.puts(); len(puts) != 0 {
		t.Errorf("cached %v", puts)
	}
}

func TestCostsTotals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		periods []ports.CostPeriod
		total   string
		totals  []string // of each period in the view
	}{
		{"none", nil, "0", nil},
		{"no float error", []ports.CostPeriod{{Total: "0.1"}, {Total: "0.2"}}, "0.3", []string{"0.1", "0.2"}},
		{"ten decimals", []ports.CostPeriod{{Total: "1.0000000001"}, {Total: "2.0000000002"}, {Total: "0.0000000007"}}, "3.0000000010",
			[]string{"1.0000000001", "2.0000000002", "0.0000000007"}},
		{"mixed precision", []ports.CostPeriod{{Total: "1.5"}, {Total: "2.25"}, {Total: "3"}}, "6.75", []string{"1.5", "2.25", "3"}},
		{"more than ten decimals", []ports.CostPeriod{{Total: "0.000000000049"}, {Total: "0.000000000049"}}, "0.0000000001",
			[]string{"0.000000000049", "0.000000000049"}},
		{"credits", []ports.CostPeriod{{Total: "10.00"}, {Total: "-10.00"}}, "0.00", []string{"10.00", "-10.00"}},
		{"exponents", []ports.CostPeriod{{Total: "1.5E-8"}, {Total: "2"}}, "2.000000015", []string{"1.5E-8", "2"}},
		{"groups only", []ports.CostPeriod{
			{Groups: []ports.CostGroup{{Key: "Amazon EC2", Amount: "12.3456789012"}, {Key: "AWS Lambda", Amount: "0.0000000001"}}},
			{Groups: []ports.CostGroup{{Key: "Amazon EC2", Amount: "1.1"}}},
			{},
		}, "13.4456789013", []string{"12.3456789013", "1.1", "0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, cloud.Config{})
			id := e.add(roleAccount("Production"))
			e.prov.EXPECT().Costs(gomock.Any(), gomock.Any(), gomock.Any()).Return(ports.CostReport{Currency: "USD", Periods: tt.periods}, nil)
			v, err := e.svc.Costs(as(alice), cloud.CostInput{AccountID: id, StartDate: "2025-12-01", EndDate: "2025-12-31", GroupBy: "SERVICE"})
			if err != nil {
				t.Fatal(err)
			}
			if v.Total != tt.total {
				t.Errorf("total %q, want %q", v.Total, tt.total)
			}
			var totals []string
			for _, p := range v.Periods {
				totals = append(totals, p.Total)
				if p.Groups == nil {
					t.Error("a period without a groups list")
				}
			}
			if !slices.Equal(totals, tt.totals) || v.Periods == nil {
				t.Errorf("period totals %q, want %q", totals, tt.totals)
			}
		})
	}
}
