package aws_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeaws"
	"github.com/devpilot/devpilot/ports"
)

// day is a day of March 2026, or of April for n > 31.
func day(n int) time.Time { return time.Date(2026, 3, n, 0, 0, 0, 0, time.UTC) }

func seedCosts(f *fakeaws.Server) {
	f.Account(userAccount).
		Cost("2026-03-01", "Amazon EC2", "0.1").
		Cost("2026-03-01", "Amazon S3", "0.2").
		Cost("2026-03-01", "AWS Lambda", "1.0000000001").
		Cost("2026-03-02", "Amazon EC2", "0.1").
		Cost("2026-03-02", "Amazon S3", "0.2").
		Cost("2026-03-03", "Amazon EC2", "5").
		Cost("2026-04-01", "Amazon EC2", "2.5")
}

func period(start, end time.Time, total string, groups ...ports.CostGroup) ports.CostPeriod {
	if groups == nil {
		groups = []ports.CostGroup{}
	}
	return ports.CostPeriod{Start: start, End: end, Total: total, Groups: groups}
}

func TestCosts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		q        ports.CostQuery
		pageSize int
		want     []ports.CostPeriod
		calls    int
	}{
		{
			name: "daily",
			q:    ports.CostQuery{Start: day(1), End: day(3), Granularity: "DAILY"},
			want: []ports.CostPeriod{
				period(day(1), day(2), "1.3000000001"),
				period(day(2), day(3), "0.3"),
			},
			calls: 1,
		},
		{
			name: "daily by service",
			q:    ports.CostQuery{Start: day(1), End: day(3), Granularity: "DAILY", GroupBy: "SERVICE"},
			want: []ports.CostPeriod{
				period(day(1), day(2), "1.3000000001",
					ports.CostGroup{Key: "AWS Lambda", Amount: "1.0000000001"},
					ports.CostGroup{Key: "Amazon EC2", Amount: "0.1"},
					ports.CostGroup{Key: "Amazon S3", Amount: "0.2"}),
				period(day(2), day(3), "0.3",
					ports.CostGroup{Key: "Amazon EC2", Amount: "0.1"},
					ports.CostGroup{Key: "Amazon S3", Amount: "0.2"}),
			},
			calls: 1,
		},
		{
			name:     "by service over pages that split a period",
			q:        ports.CostQuery{Start: day(1), End: day(3), GroupBy: "SERVICE"},
			pageSize: 2,
			want: []ports.CostPeriod{
				period(day(1), day(2), "1.3000000001",
					ports.CostGroup{Key: "AWS Lambda", Amount: "1.0000000001"},
					ports.CostGroup{Key: "Amazon EC2", Amount: "0.1"},
					ports.CostGroup{Key: "Amazon S3", Amount: "0.2"}),
				period(day(2), day(3), "0.3",
					ports.CostGroup{Key: "Amazon EC2", Amount: "0.1"},
					ports.CostGroup{Key: "Amazon S3", Amount: "0.2"}),
			},
			calls: 3,
		},
		{
			name:     "daily over pages",
			q:        ports.CostQuery{Start: day(1), End: day(4)},
			pageSize: 1,
			want: []ports.CostPeriod{
				period(day(1), day(2), "1.3000000001"),
				period(day(2), day(3), "0.3"),
				period(day(3), day(4), "5"),
			},
			calls: 3,
		},
		{
			name: "monthly by service",
			q:    ports.CostQuery{Start: day(1), End: day(33), Granularity: "MONTHLY", GroupBy: "SERVICE"},
			want: []ports.CostPeriod{
				period(day(1), day(32), "6.6000000001",
					ports.CostGroup{Key: "AWS Lambda", Amount: "1.0000000001"},
					ports.CostGroup{Key: "Amazon EC2", Amount: "5.2"},
					ports.CostGroup{Key: "Amazon S3", Amount: "0.4"}),
				period(day(32), day(33), "2.5", ports.CostGroup{Key: "Amazon EC2", Amount: "2.5"}),
			},
			calls: 1,
		},
		{
			name:  "a day without costs",
			q:     ports.CostQuery{Start: day(10), End: day(11), GroupBy: "SERVICE"},
			want:  []ports.CostPeriod{period(day(10), day(11), "0")},
			calls: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			seedCosts(e.fake)
			e.fake.MaxPageSize(tt.pageSize)
			got, err := e.p.Costs(context.Background(), keyCreds(), tt.q)
			if err != nil {
				t.Fatalf("Costs: %v", err)
			}
			want := ports.CostReport{Currency: "USD", Periods: tt.want}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Costs =\n%+v\nwant\n%+v", got, want)
			}
			calls := e.fake.CallsTo(fakeaws.ServiceCost, "GetCostAndUsage")
			if len(calls) != tt.calls {
				t.Fatalf("GetCostAndUsage calls = %d, want %d", len(calls), tt.calls)
			}
			in := calls[0].Input
			tp := in["TimePeriod"].(map[string]any)
			if tp["Start"] != tt.q.Start.Format(time.DateOnly) || tp["End"] != tt.q.End.Format(time.DateOnly) {
				t.Errorf("TimePeriod = %v, want [%s, %s) as given", tp, tt.q.Start.Format(time.DateOnly), tt.q.End.Format(time.DateOnly))
			}
			if !reflect.DeepEqual(in["Metrics"], []any{"UnblendedCost"}) {
				t.Errorf("Metrics = %v, want [UnblendedCost]", in["Metrics"])
			}
			if _, grouped := in["GroupBy"]; grouped != (tt.q.GroupBy != "") {
				t.Errorf("GroupBy = %v, want grouping %v", in["GroupBy"], tt.q.GroupBy != "")
			}
			for i, c := range calls[1:] {
				if c.Input["NextPageToken"] == nil {
					t.Errorf("call %d has no NextPageToken", i+2)
				}
			}
		})
	}
}

func TestCostsRejectsMalformedQueries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, q := range []ports.CostQuery{
		{Start: day(1), End: day(2), Granularity: "HOURLY"},
		{Start: day(1), End: day(2), GroupBy: "OPERATION"},
		{Start: day(1), End: day(2), GroupBy: "TAG"},
		{Start: day(2), End: day(2)},
		{Start: day(3), End: day(2)},
		{End: day(2)},
	} {
		_, err := e.p.Costs(context.Background(), keyCreds(), q)
		wantKind(t, err, ports.KindInvalid)
	}
	if n := len(e.fake.Calls()); n != 0 {
		t.Errorf("%d calls reached AWS", n)
	}
}

// Grouped by a tag, a group's key is the tag's value ("" untagged), not
// Cost Explorer's "key$value"; by a dimension, the dimension's value.
func TestCostsByTagAndDimension(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fake.Account(userAccount).
		CostLine("2026-03-01", fakeaws.CostLine{Service: "Amazon EC2", Region: "eu-west-1", Tags: map[string]string{"team": "payments"}, Amount: "2"}).
		CostLine("2026-03-01", fakeaws.CostLine{Service: "Amazon S3", Amount: "0.5"})
	for _, tc := range []struct {
		q    ports.CostQuery
		want []ports.CostGroup
	}{
		{ports.CostQuery{GroupBy: "TAG", TagKey: "team"}, []ports.CostGroup{{Key: "", Amount: "0.5"}, {Key: "payments", Amount: "2"}}},
		{ports.CostQuery{GroupBy: "REGION"}, []ports.CostGroup{{Key: "eu-west-1", Amount: "2"}, {Key: "us-east-1", Amount: "0.5"}}},
	} {
		tc.q.Start, tc.q.End, tc.q.Granularity = day(1), day(2), "DAILY"
		r, err := e.p.Costs(context.Background(), keyCreds(), tc.q)
		if err != nil {
			t.Fatal(err)
		}
		if want := []ports.CostPeriod{period(day(1), day(2), "2.5", tc.want...)}; !reflect.DeepEqual(r.Periods, want) {
			t.Errorf("%s: %+v, want %+v", tc.q.GroupBy, r.Periods, want)
		}
	}
}

func TestCostForecast(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	today := time.Now().UTC().Truncate(24 * time.Hour)
	e.fake.Account(userAccount).ForecastDaily("1.5")
	f, err := e.p.CostForecast(context.Background(), keyCreds(), today, today.AddDate(0, 0, 4))
	if err != nil {
		t.Fatal(err)
	}
	if f.Currency != "USD" || f.Amount != "6.0000000000" || f.Lower != "5.4" || f.Upper != "6.6" || !f.Start.Equal(today) {
		t.Fatalf("forecast %+v", f)
	}
	calls := e.fake.CallsTo(fakeaws.ServiceCost, "GetCostForecast")
	if len(calls) != 1 || calls[0].Input["Metric"] != "UNBLENDED_COST" || calls[0].Input["Granularity"] != "MONTHLY" {
		t.Fatalf("calls %+v", calls)
	}
	// No history: Cost Explorer cannot forecast, an upstream error.
	e2 := newEnv(t)
	_, err = e2.p.CostForecast(context.Background(), keyCreds(), today, today.AddDate(0, 0, 4))
	wantKind(t, err, ports.KindUpstream)
	_, err = e2.p.CostForecast(context.Background(), keyCreds(), today, today)
	wantKind(t, err, ports.KindInvalid)
}
