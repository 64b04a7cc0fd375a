package cloud

import (
	"context"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// The granularities and groupings of a cost query.
const (
	GranularityDaily   = "DAILY"
	GranularityMonthly = "MONTHLY"
	GroupByService     = "SERVICE"
)

// maxAmountDecimals bounds the decimals of a computed total.
const maxAmountDecimals = 10

// CostInput asks for an account's costs from StartDate to EndDate, both
// included, as YYYY-MM-DD. Granularity is DAILY ("" too) or MONTHLY; GroupBy
// is "" or SERVICE.
type CostInput struct {
	AccountID   string
	StartDate   string
	EndDate     string
	Granularity string
	GroupBy     string
}

// CostView is an account's costs over a range: period by period, and Total,
// the exact sum of the periods' totals, in Currency.
type CostView struct {
	Currency  string             `json:"currency"`
	Total     string             `json:"total"`
	StartDate string             `json:"start_date"`
	EndDate   string             `json:"end_date"`
	Periods   []ports.CostPeriod `json:"periods"`
}

// Costs returns an account's costs, from the cache when the same query was
// answered within the last 6 hours (Config.CostTTL). Errors: malformed before
// anything is asked (start_date, end_date: required, YYYY-MM-DD, start not
// after end, start not before the lookback; granularity; group_by), then
// when account_id is left out and the organisation has several accounts
// (naming them) or none; not_found for an absent or another organisation's
// account; the provider's errors.
func (s *Service) Costs(ctx context.Context, in CostInput) (CostView, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return CostView{}, err
	}
	q, err := s.costQuery(in)
	if err != nil {
		return CostView{}, err
	}
	a, err := s.pick(ctx, p, in.AccountID)
	if err != nil {
		return CostView{}, err
	}
	key := costKey(q)
	now := s.d.Clock.Now()
	report, hit, err := s.d.Costs.GetCachedCost(ctx, a.ID, key, now)
	if err != nil {
		s.log.Warn("reading the cost cache", "err", err, "account", a.ID)
		hit = false
	}
	if hit {
		return costView(report, q)
	}
	report, err = call(ctx, s, a, func(ctx context.Context, c ports.CloudCredentials) (ports.CostReport, error) {
		return s.d.Provider.Costs(ctx, c, q)
	})
	if err != nil {
		return CostView{}, err
	}
	view, err := costView(report, q)
	if err != nil {
		return CostView{}, err
	}
	if err := s.d.Costs.PutCachedCost(ctx, a.ID, key, report, now.Add(s.cfg.CostTTL)); err != nil {
		s.log.Warn("writing the cost cache", "err", err, "account", a.ID)
	}
	return view, nil
}

// costQuery validates in and returns the provider's query, its end exclusive.
func (s *Service) costQuery(in CostInput) (ports.CostQuery, error) {
	var fields []ports.FieldError
	bad := func(field, reason string) { fields = append(fields, ports.FieldError{Field: field, Reason: reason}) }
	date := func(field, v string) (time.Time, bool) {
		if v == "" {
			bad(field, "required")
			return time.Time{}, false
		}
		t, err := time.Parse(time.DateOnly, v)
		if err != nil {
			bad(field, "must be a date as YYYY-MM-DD")
			return time.Time{}, false
		}
		return t, true
	}
	start, okStart := date("start_date", in.StartDate)
	end, okEnd := date("end_date", in.EndDate)
	if okStart {
		if oldest := s.oldestCostDate(); start.Before(oldest) {
			bad("start_date", "must be on or after "+oldest.Format(time.DateOnly))
		}
	}
	if okStart && okEnd && start.After(end) {
		bad("start_date", "must be on or before end_date")
	}
	q := ports.CostQuery{Start: start, End: end.AddDate(0, 0, 1), Granularity: in.Granularity, GroupBy: in.GroupBy}
	switch q.Granularity {
	case "":
		q.Granularity = GranularityDaily
	case GranularityDaily, GranularityMonthly:
	default:
		bad("granularity", "must be DAILY or MONTHLY")
	}
	if q.GroupBy != "" && q.GroupBy != GroupByService {
		bad("group_by", "must be SERVICE or left out")
	}
	if err := ports.FieldsError(ports.KindMalformed, fields...); err != nil {
		return ports.CostQuery{}, err
	}
	return q, nil
}

// oldestCostDate is the earliest start date a cost query may have.
func (s *Service) oldestCostDate() time.Time {
	now := s.d.Clock.Now().UTC()
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	if s.cfg.MaxCostLookback > 0 {
		t := today.Add(-s.cfg.MaxCostLookback)
		return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	}
	// The same day DefaultLookbackMonths months ago, or that month's last day.
	first := time.Date(today.Year(), today.Month()-DefaultLookbackMonths, 1, 0, 0, 0, 0, time.UTC)
	last := first.AddDate(0, 1, -1).Day()
	return first.AddDate(0, 0, min(today.Day(), last)-1)
}

// costKey names a query in the cache (the account is a key of its own).
func costKey(q ports.CostQuery) string {
	return strings.Join([]string{"v1", q.Start.Format(time.DateOnly), q.End.Format(time.DateOnly), q.Granularity, q.GroupBy}, "|")
}

// costView presents a report for the query: each period's total (summed from
// its groups when the provider left it out) and the exact total of them all.
func costView(r ports.CostReport, q ports.CostQuery) (CostView, error) {
	v := CostView{
		Currency: r.Currency, StartDate: q.Start.Format(time.DateOnly), EndDate: q.End.AddDate(0, 0, -1).Format(time.DateOnly),
		Periods: make([]ports.CostPeriod, len(r.Periods)),
	}
	total, places := new(big.Rat), 0
	for i, per := range r.Periods {
		per.Groups = append([]ports.CostGroup{}, per.Groups...)
		if per.Total == "" {
			sum, n := new(big.Rat), 0
			for _, g := range per.Groups {
				amount, d, err := parseAmount(g.Amount)
				if err != nil {
					return CostView{}, err
				}
				sum.Add(sum, amount)
				n = max(n, d)
			}
			per.Total = formatAmount(sum, n)
		}
		amount, d, err := parseAmount(per.Total)
		if err != nil {
			return CostView{}, err
		}
		total.Add(total, amount)
		places = max(places, d)
		v.Periods[i] = per
	}
	v.Total = formatAmount(total, places)
	return v, nil
}

// amountPattern is a decimal number, its exponent small enough to be cheap.
var amountPattern = regexp.MustCompile(`^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]{1,2})?$`)

// parseAmount reads a decimal amount exactly and says how many decimals it
// is written with (at most maxAmountDecimals).
func parseAmount(s string) (*big.Rat, int, error) {
	var r *big.Rat
	ok := amountPattern.MatchString(s)
	if ok {
		r, ok = new(big.Rat).SetString(s)
	}
	if !ok {
		return nil, 0, ports.Errorf(ports.KindUpstream, "the provider reported the amount %q, which is not a decimal number", ports.Clip(s, 40))
	}
	mantissa, exp, _ := strings.Cut(strings.ToLower(s), "e")
	d := 0
	if _, frac, ok := strings.Cut(mantissa, "."); ok {
		d = len(frac)
	}
	if exp != "" {
		e, err := strconv.Atoi(exp)
		if err != nil {
			e = 0
		}
		d -= e
	}
	return r, min(max(d, 0), maxAmountDecimals), nil
}

// formatAmount writes r with the decimals given, never as "-0".
func formatAmount(r *big.Rat, decimals int) string {
	s := r.FloatString(decimals)
	if strings.HasPrefix(s, "-") && strings.Trim(s, "-0.") == "" {
		s = s[1:]
	}
	return s
}
