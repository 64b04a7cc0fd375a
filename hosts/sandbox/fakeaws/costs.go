package fakeaws

import (
	"math/big"
	"net/http"
	"time"
)

var costMetrics = map[string]bool{
	"AmortizedCost": true, "BlendedCost": true, "NetAmortizedCost": true, "NetUnblendedCost": true,
	"NormalizedUsageAmount": true, "UnblendedCost": true, "UsageQuantity": true,
}

func validation(format string, args ...any) *apiError {
	return errf(http.StatusBadRequest, "ValidationException", format, args...)
}

type costPeriod struct {
	start, end time.Time
	total      *big.Rat
	groups     map[string]*big.Rat
}

// costItem is one unit of pagination: a period (ungrouped) or one group of
// a period (grouped; group "" for a period without groups).
type costItem struct {
	period *costPeriod
	group  string
}

func ceGetCostAndUsage(rq *request) (*reply, *apiError) {
	in := rq.input
	tp, _ := in["TimePeriod"].(map[string]any)
	if tp == nil {
		return nil, validation("TimePeriod is required")
	}
	start, err1 := time.Parse(time.DateOnly, str(tp, "Start"))
	end, err2 := time.Parse(time.DateOnly, str(tp, "End"))
	if err1 != nil || err2 != nil {
		return nil, validation("Start and End must be dates in the format YYYY-MM-DD")
	}
	if !start.Before(end) {
		return nil, validation("Start date (and hour) should be before end date (and hour)")
	}
	granularity := str(in, "Granularity")
	if granularity != "DAILY" && granularity != "MONTHLY" {
		return nil, validation("Granularity %q is not supported: use DAILY or MONTHLY", granularity)
	}
	metrics, aerr := strList(in, "Metrics")
	if aerr != nil {
		return nil, aerr
	}
	if len(metrics) == 0 {
		return nil, validation("Metrics is required")
	}
	for _, m := range metrics {
		if !costMetrics[m] {
			return nil, validation("Metric %s is not supported", m)
		}
	}
	grouped := false
	var groupType, groupKey string
	if gb, ok := in["GroupBy"].([]any); ok && len(gb) > 0 {
		g, _ := gb[0].(map[string]any)
		groupType, groupKey = str(g, "Type"), str(g, "Key")
		dims := map[string]bool{"SERVICE": true, "LINKED_ACCOUNT": true, "REGION": true, "USAGE_TYPE": true}
		if len(gb) > 1 || !(groupType == "DIMENSION" && dims[groupKey] || groupType == "TAG" && groupKey != "") {
			return nil, validation("fakeaws supports GroupBy only with one DIMENSION (SERVICE, LINKED_ACCOUNT, REGION, USAGE_TYPE) or one TAG")
		}
		grouped = true
	}
	keyOf := func(c costLine) string {
		switch {
		case groupType == "TAG":
			return groupKey + "$" + c.Tags[groupKey]
		case groupKey == "LINKED_ACCOUNT":
			return c.LinkedAccount
		case groupKey == "REGION":
			return c.Region
		case groupKey == "USAGE_TYPE":
			return c.UsageType
		}
		return c.Service
	}

	var periods []*costPeriod
	for p := start; p.Before(end); {
		next := p.AddDate(0, 0, 1)
		if granularity == "MONTHLY" {
			next = time.Date(p.Year(), p.Month()+1, 1, 0, 0, 0, 0, time.UTC)
		}
		if next.After(end) {
			next = end
		}
		periods = append(periods, &costPeriod{start: p, end: next, total: new(big.Rat), groups: map[string]*big.Rat{}})
		p = next
	}
	rq.s.mu.Lock()
	defer rq.s.mu.Unlock()
	for _, c := range rq.account().costs {
		d, _ := time.Parse(time.DateOnly, c.day)
		for _, p := range periods {
			if d.Before(p.start) || !d.Before(p.end) {
				continue
			}
			k := keyOf(c)
			if p.groups[k] == nil {
				p.groups[k] = new(big.Rat)
			}
			p.groups[k].Add(p.groups[k], c.amount)
			p.total.Add(p.total, c.amount)
		}
	}

	var items []costItem
	for _, p := range periods {
		if !grouped || len(p.groups) == 0 {
			items = append(items, costItem{period: p})
			continue
		}
		for _, svc := range sortedKeys(p.groups) {
			items = append(items, costItem{period: p, group: svc})
		}
	}
	from, to, next, aerr := rq.s.page("GetCostAndUsage", str(in, "NextPageToken"), len(items), 0, 1<<30)
	if aerr != nil {
		return nil, validation("%s", aerr.message)
	}
	metricMap := func(amount *big.Rat) map[string]any {
		m := map[string]any{}
		for _, name := range metrics {
			m[name] = map[string]any{"Amount": decimal(amount), "Unit": "USD"}
		}
		return m
	}
	results := []any{}
	var current map[string]any
	var currentPeriod *costPeriod
	for _, it := range items[from:to] {
		if it.period != currentPeriod {
			currentPeriod = it.period
			current = map[string]any{
				"TimePeriod": map[string]any{"Start": it.period.start.Format(time.DateOnly), "End": it.period.end.Format(time.DateOnly)},
				"Total":      map[string]any{},
				"Groups":     []any{},
				"Estimated":  false,
			}
			if !grouped {
				current["Total"] = metricMap(it.period.total)
			}
			results = append(results, current)
		}
		if it.group != "" {
			current["Groups"] = append(current["Groups"].([]any), map[string]any{
				"Keys":    []any{it.group},
				"Metrics": metricMap(it.period.groups[it.group]),
			})
		}
	}
	out := map[string]any{"ResultsByTime": results, "DimensionValueAttributes": []any{}}
	if grouped {
		out["GroupDefinitions"] = []any{map[string]any{"Type": groupType, "Key": groupKey}}
	}
	if next != "" {
		out["NextPageToken"] = next
	}
	return &reply{body: out}, nil
}

// ceGetCostForecast forecasts a range that must not start before today: each
// day at the account's ForecastDaily, or the mean daily cost of the 30 days
// before the range. Like Cost Explorer, it says DataUnavailableException
// when there is no history to forecast from.
func ceGetCostForecast(rq *request) (*reply, *apiError) {
	in := rq.input
	tp, _ := in["TimePeriod"].(map[string]any)
	if tp == nil {
		return nil, validation("TimePeriod is required")
	}
	start, err1 := time.Parse(time.DateOnly, str(tp, "Start"))
	end, err2 := time.Parse(time.DateOnly, str(tp, "End"))
	if err1 != nil || err2 != nil {
		return nil, validation("Start and End must be dates in the format YYYY-MM-DD")
	}
	if !start.Before(end) {
		return nil, validation("Start date (and hour) should be before end date (and hour)")
	}
	if today := time.Now().UTC().Truncate(24 * time.Hour); start.Before(today) {
		return nil, validation("Start date must be equal to or no later than the current date to avoid mismatched dates")
	}
	if m := str(in, "Metric"); m != "UNBLENDED_COST" && m != "BLENDED_COST" && m != "AMORTIZED_COST" && m != "NET_UNBLENDED_COST" {
		return nil, validation("Metric %q is not supported", m)
	}
	if g := str(in, "Granularity"); g != "DAILY" && g != "MONTHLY" {
		return nil, validation("Granularity %q is not supported: use DAILY or MONTHLY", g)
	}
	rq.s.mu.Lock()
	daily := rq.account().forecastDaily
	if daily == nil {
		from := start.AddDate(0, 0, -30)
		sum, seen := new(big.Rat), false
		for _, c := range rq.account().costs {
			d, _ := time.Parse(time.DateOnly, c.day)
			if !d.Before(from) && d.Before(start) {
				sum.Add(sum, c.amount)
				seen = true
			}
		}
		if seen {
			daily = sum.Quo(sum, big.NewRat(30, 1))
		}
	}
	rq.s.mu.Unlock()
	if daily == nil {
		return nil, errf(http.StatusBadRequest, "DataUnavailableException", "Insufficient amount of historical data to generate forecast.")
	}
	days := int64(end.Sub(start).Hours() / 24)
	total := new(big.Rat).Mul(daily, big.NewRat(days, 1))
	amount := total.FloatString(10)
	lower := new(big.Rat).Mul(total, big.NewRat(9, 10)).FloatString(10)
	upper := new(big.Rat).Mul(total, big.NewRat(11, 10)).FloatString(10)
	return &reply{body: map[string]any{
		"Total": map[string]any{"Amount": amount, "Unit": "USD"},
		"ForecastResultsByTime": []any{map[string]any{
			"TimePeriod":                   map[string]any{"Start": start.Format(time.DateOnly), "End": end.Format(time.DateOnly)},
			"MeanValue":                    amount,
			"PredictionIntervalLowerBound": lower,
			"PredictionIntervalUpperBound": upper,
		}},
	}}, nil
}
