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
	if gb, ok := in["GroupBy"].([]any); ok && len(gb) > 0 {
		g, _ := gb[0].(map[string]any)
		if len(gb) > 1 || str(g, "Type") != "DIMENSION" || str(g, "Key") != "SERVICE" {
			return nil, validation("fakeaws supports GroupBy only with one DIMENSION SERVICE")
		}
		grouped = true
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
	for day, services := range rq.account().costs {
		d, _ := time.Parse(time.DateOnly, day)
		for _, p := range periods {
			if d.Before(p.start) || !d.Before(p.end) {
				continue
			}
			for svc, amount := range services {
				if p.groups[svc] == nil {
					p.groups[svc] = new(big.Rat)
				}
				p.groups[svc].Add(p.groups[svc], amount)
				p.total.Add(p.total, amount)
			}
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
		out["GroupDefinitions"] = []any{map[string]any{"Type": "DIMENSION", "Key": "SERVICE"}}
	}
	if next != "" {
		out["NextPageToken"] = next
	}
	return &reply{body: out}, nil
}
