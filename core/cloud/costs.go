package cloud

import (
	"context"
	"math/big"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/devpilot/devpilot/ports"
)

// The granularities and groupings of a cost query. A cost query may also
// group by a tag: GroupByTagPrefix and the tag's key ("tag:team").
const (
	GranularityDaily     = "DAILY"
	GranularityMonthly   = "MONTHLY"
	GroupByService       = "SERVICE"
	GroupByLinkedAccount = "LINKED_ACCOUNT"
	GroupByRegion        = "REGION"
	GroupByUsageType     = "USAGE_TYPE"
	GroupByTagPrefix     = "tag:"
)

// tagKeyPattern is what AWS allows in a tag key, at most 128 characters.
var tagKeyPattern = regexp.MustCompile(`^[\p{L}\p{N}\p{Zs}_.:/=+\-@]{1,128}$`)

// maxAmountDecimals bounds the decimals of a computed total.
const maxAmountDecimals = 10

// CostInput asks for an account's costs from StartDate to EndDate, both
// included, as YYYY-MM-DD. Granularity is DAILY ("" too) or MONTHLY; GroupBy
// is "", SERVICE, LINKED_ACCOUNT, REGION, USAGE_TYPE or tag:<key>.
// Previous asks for the previous period beside the range, Forecast for the
// forecast to the end of the month: each is one more paid Cost Explorer
// request (unless cached), so only callers that show them ask.
type CostInput struct {
	AccountID   string
	StartDate   string
	EndDate     string
	Granularity string
	GroupBy     string
	Previous    bool
	Forecast    bool
}

// CostView is an account's costs over a range: period by period, and Total,
// the exact sum of the periods' totals, in Currency. Previous is the same
// query over the period of equal length just before (nil when it would
// start before the lookback, or was not asked for); Groups, when grouped, is each group's total
// over the range beside its previous one, largest first. Forecast is the
// cost forecast from today to the end of the month, when asked for and the
// range reaches today; ForecastError says why there is none when the provider could not
// forecast.
type CostView struct {
	Currency      string             `json:"currency"`
	Total         string             `json:"total"`
	StartDate     string             `json:"start_date"`
	EndDate       string             `json:"end_date"`
	Periods       []ports.CostPeriod `json:"periods"`
	GroupBy       string             `json:"group_by"`
	Groups        []GroupTotal       `json:"groups"`
	Previous      *PreviousPeriod    `json:"previous"`
	Forecast      *Forecast          `json:"forecast"`
	ForecastError string             `json:"forecast_error,omitempty"`
}

// Change is an amount beside the one of the previous period: Previous,
// Change (Amount less Previous) and ChangePercent (of Previous, one decimal;
// "" when Previous is zero or unknown). All but ChangePercent are "" when
// there is no previous period.
type Change struct {
	Previous      string `json:"previous"`
	Change        string `json:"change"`
	ChangePercent string `json:"change_percent"`
}

// GroupTotal is one group's cost over a whole range, with its change.
type GroupTotal struct {
	Key    string `json:"key"`
	Amount string `json:"amount"`
	Change
}

// PreviousPeriod is the period of equal length before a cost query's range
// (dates included) and its total, with the range's change from it.
type PreviousPeriod struct {
	StartDate string `json:"start_date"`
	EndDate   string `json:"end_date"`
	Total     string `json:"total"`
	Change
}

// Forecast is the forecast cost from StartDate to EndDate (both included,
// the last day of the month), Amount within Lower..Upper when known.
type Forecast struct {
	StartDate string `json:"start_date"`
	EndDate   string `json:"end_date"`
	Amount    string `json:"amount"`
	Lower     string `json:"lower,omitempty"`
	Upper     string `json:"upper,omitempty"`
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
	report, err := s.costReport(ctx, a, q)
	if err != nil {
		return CostView{}, err
	}
	view, err := costView(report, q)
	if err != nil {
		return CostView{}, err
	}
	if q.GroupBy == "TAG" {
		view.GroupBy = GroupByTagPrefix + q.TagKey
	} else {
		view.GroupBy = q.GroupBy
	}
	var prevGroups map[string]*big.Rat
	days := int(q.End.Sub(q.Start).Hours() / 24)
	if pq := (ports.CostQuery{Start: q.Start.AddDate(0, 0, -days), End: q.Start, Granularity: q.Granularity, GroupBy: q.GroupBy, TagKey: q.TagKey}); in.Previous && !pq.Start.Before(s.oldestCostDate()) {
		prev, err := s.costReport(ctx, a, pq)
		if err != nil {
			return CostView{}, err
		}
		pv, err := costView(prev, pq)
		if err != nil {
			return CostView{}, err
		}
		view.Previous = &PreviousPeriod{StartDate: pv.StartDate, EndDate: pv.EndDate, Total: pv.Total, Change: change(view.Total, pv.Total)}
		if prevGroups, err = groupSums(pv.Periods); err != nil {
			return CostView{}, err
		}
	}
	if q.GroupBy != "" {
		if view.Groups, err = groupTotals(view.Periods, prevGroups, view.Previous != nil); err != nil {
			return CostView{}, err
		}
	}
	today := s.today()
	if in.Forecast && q.End.After(today) {
		end := time.Date(today.Year(), today.Month()+1, 1, 0, 0, 0, 0, time.UTC)
		f, err := s.forecast(ctx, a, today, end)
		switch {
		case err == nil:
			view.Forecast = &f
		case ctx.Err() != nil:
			return CostView{}, err
		default:
			view.ForecastError = message(err)
		}
	}
	return view, nil
}

// today is the current day, UTC.
func (s *Service) today() time.Time {
	now := s.d.Clock.Now().UTC()
	return time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
}

// costReport returns the provider's report for q, from the cache when the
// same query was answered within Config.CostTTL.
func (s *Service) costReport(ctx context.Context, a ports.CloudAccount, q ports.CostQuery) (ports.CostReport, error) {
	key := costKey(q)
	now := s.d.Clock.Now()
	report, hit, err := s.d.Costs.GetCachedCost(ctx, a.ID, key, now)
	if err != nil {
		s.log.Warn("reading the cost cache", "err", err, "account", a.ID)
		hit = false
	}
	if hit {
		return report, nil
	}
	report, err = call(ctx, s, a, func(ctx context.Context, c ports.CloudCredentials) (ports.CostReport, error) {
		return s.d.Provider.Costs(ctx, c, q)
	})
	if err != nil {
		return ports.CostReport{}, err
	}
	if _, err := costView(report, q); err != nil {
		return ports.CostReport{}, err
	}
	if err := s.d.Costs.PutCachedCost(ctx, a.ID, key, report, now.Add(s.cfg.CostTTL)); err != nil {
		s.log.Warn("writing the cost cache", "err", err, "account", a.ID)
	}
	return report, nil
}

// forecast returns the provider's forecast over [start, end), cached like a
// cost report (as one period whose groups are the bounds).
func (s *Service) forecast(ctx context.Context, a ports.CloudAccount, start, end time.Time) (Forecast, error) {
	key := strings.Join([]string{"v1", "forecast", start.Format(time.DateOnly), end.Format(time.DateOnly)}, "|")
	view := func(r ports.CostReport) Forecast {
		f := Forecast{StartDate: start.Format(time.DateOnly), EndDate: end.AddDate(0, 0, -1).Format(time.DateOnly), Amount: "0"}
		if len(r.Periods) == 1 {
			f.Amount = r.Periods[0].Total
			for _, g := range r.Periods[0].Groups {
				switch g.Key {
				case "lower":
					f.Lower = g.Amount
				case "upper":
					f.Upper = g.Amount
				}
			}
		}
		return f
	}
	now := s.d.Clock.Now()
	if r, hit, err := s.d.Costs.GetCachedCost(ctx, a.ID, key, now); err == nil && hit {
		return view(r), nil
	}
	fc, err := call(ctx, s, a, func(ctx context.Context, c ports.CloudCredentials) (ports.CostForecast, error) {
		return s.d.Provider.CostForecast(ctx, c, start, end)
	})
	if err != nil {
		return Forecast{}, err
	}
	for _, v := range []string{fc.Amount, fc.Lower, fc.Upper} {
		if v == "" {
			continue
		}
		if _, _, err := parseAmount(v); err != nil {
			return Forecast{}, err
		}
	}
	per := ports.CostPeriod{Start: start, End: end, Total: fc.Amount, Groups: []ports.CostGroup{}}
	if fc.Lower != "" && fc.Upper != "" {
		per.Groups = append(per.Groups, ports.CostGroup{Key: "lower", Amount: fc.Lower}, ports.CostGroup{Key: "upper", Amount: fc.Upper})
	}
	r := ports.CostReport{Currency: fc.Currency, Periods: []ports.CostPeriod{per}}
	if err := s.d.Costs.PutCachedCost(ctx, a.ID, key, r, now.Add(s.cfg.CostTTL)); err != nil {
		s.log.Warn("writing the cost cache", "err", err, "account", a.ID)
	}
	return view(r), nil
}

// groupSums sums each group's amounts over periods, with the decimals of
// the most precise amount kept aside.
func groupSums(periods []ports.CostPeriod) (map[string]*big.Rat, error) {
	sums := map[string]*big.Rat{}
	for _, per := range periods {
		for _, g := range per.Groups {
			v, _, err := parseAmount(g.Amount)
			if err != nil {
				return nil, err
			}
			if sums[g.Key] == nil {
				sums[g.Key] = new(big.Rat)
			}
			sums[g.Key].Add(sums[g.Key], v)
		}
	}
	return sums, nil
}

// groupTotals is each group's total over periods beside its previous total
// (zero when the group had none; no previous at all when hasPrev is
// false), largest first, then by key; a group of the previous period alone
// is listed with amount 0.
func groupTotals(periods []ports.CostPeriod, prev map[string]*big.Rat, hasPrev bool) ([]GroupTotal, error) {
	cur, err := groupSums(periods)
	if err != nil {
		return nil, err
	}
	for k := range prev {
		if cur[k] == nil {
			cur[k] = new(big.Rat)
		}
	}
	keys := make([]string, 0, len(cur))
	for k := range cur {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if c := cur[keys[i]].Cmp(cur[keys[j]]); c != 0 {
			return c > 0
		}
		return keys[i] < keys[j]
	})
	out := make([]GroupTotal, 0, len(keys))
	for _, k := range keys {
		g := GroupTotal{Key: k, Amount: exact(cur[k])}
		if hasPrev {
			p := prev[k]
			if p == nil {
				p = new(big.Rat)
			}
			g.Change = change(g.Amount, exact(p))
		}
		out = append(out, g)
	}
	return out, nil
}

// change is amount beside previous (both decimal strings this package
// wrote).
func change(amount, previous string) Change {
	a, da, _ := parseAmount(amount)
	p, dp, _ := parseAmount(previous)
	if a == nil || p == nil {
		return Change{}
	}
	c := Change{Previous: previous, Change: formatAmount(new(big.Rat).Sub(a, p), max(da, dp))}
	if p.Sign() != 0 {
		pct := new(big.Rat).Quo(new(big.Rat).Sub(a, p), p)
		c.ChangePercent = formatAmount(pct.Mul(pct, big.NewRat(100, 1)), 1)
	}
	return c
}

// exact writes r with the fewest decimals that write it exactly (at most
// maxAmountDecimals).
func exact(r *big.Rat) string {
	for d := 0; d < maxAmountDecimals; d++ {
		if s := r.FloatString(d); mustRat(s).Cmp(r) == 0 {
			return formatAmount(r, d)
		}
	}
	return formatAmount(r, maxAmountDecimals)
}

func mustRat(s string) *big.Rat {
	r, _ := new(big.Rat).SetString(s)
	return r
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
	switch g := q.GroupBy; {
	case g == "", g == GroupByService, g == GroupByLinkedAccount, g == GroupByRegion, g == GroupByUsageType:
	case len(g) > len(GroupByTagPrefix) && strings.EqualFold(g[:len(GroupByTagPrefix)], GroupByTagPrefix):
		q.GroupBy, q.TagKey = "TAG", g[len(GroupByTagPrefix):]
		if !utf8.ValidString(q.TagKey) || !tagKeyPattern.MatchString(q.TagKey) {
			bad("group_by", "a tag key is 1 to 128 letters, digits, spaces and _ . : / = + - @")
		}
	default:
		bad("group_by", "must be SERVICE, LINKED_ACCOUNT, REGION, USAGE_TYPE, tag:<key> or left out")
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
	group := q.GroupBy
	if group == "TAG" {
		group = "TAG:" + q.TagKey
	}
	return strings.Join([]string{"v1", q.Start.Format(time.DateOnly), q.End.Format(time.DateOnly), q.Granularity, group}, "|")
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
