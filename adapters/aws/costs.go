package aws

import (
	"context"
	"math/big"
	"strings"
	"time"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/costexplorer"
	cetypes "github.com/aws/aws-sdk-go-v2/service/costexplorer/types"

	"github.com/devpilot/devpilot/ports"
)

const (
	costMetric  = "UnblendedCost"
	maxCostPage = 1000
)

// Costs returns the unblended cost over [q.Start, q.End) from Cost Explorer,
// following every page. A period's total is Cost Explorer's total or, when
// grouped by service, the exact sum of its groups. Currency is the unit Cost
// Explorer reports amounts in ("USD" when it reports none). Errors: invalid
// for a malformed query, else as CloudProvider.
func (p *Provider) Costs(ctx context.Context, c ports.CloudCredentials, q ports.CostQuery) (ports.CostReport, error) {
	granularity := q.Granularity
	if granularity == "" {
		granularity = string(cetypes.GranularityDaily)
	}
	if granularity != string(cetypes.GranularityDaily) && granularity != string(cetypes.GranularityMonthly) {
		return ports.CostReport{}, ports.Invalid("aws: granularity must be DAILY or MONTHLY",
			ports.FieldError{Field: "granularity", Reason: "unsupported"})
	}
	var group *cetypes.GroupDefinition
	switch q.GroupBy {
	case "":
	case "SERVICE", "LINKED_ACCOUNT", "REGION", "USAGE_TYPE":
		group = &cetypes.GroupDefinition{Type: cetypes.GroupDefinitionTypeDimension, Key: sdkaws.String(q.GroupBy)}
	case "TAG":
		if q.TagKey == "" {
			return ports.CostReport{}, ports.Invalid("aws: grouping by tag needs a tag key",
				ports.FieldError{Field: "group_by", Reason: "tag key required"})
		}
		group = &cetypes.GroupDefinition{Type: cetypes.GroupDefinitionTypeTag, Key: sdkaws.String(q.TagKey)}
	default:
		return ports.CostReport{}, ports.Invalid("aws: costs can be grouped only by SERVICE, LINKED_ACCOUNT, REGION, USAGE_TYPE or a tag",
			ports.FieldError{Field: "group_by", Reason: "unsupported"})
	}
	start, end := q.Start.UTC().Format(time.DateOnly), q.End.UTC().Format(time.DateOnly)
	if q.Start.IsZero() || q.End.IsZero() || start >= end {
		return ports.CostReport{}, ports.Invalid("aws: the cost range must start before it ends")
	}
	ctx, cancel, s, err := p.start(ctx, c)
	if err != nil {
		return ports.CostReport{}, err
	}
	defer cancel()

	in := &costexplorer.GetCostAndUsageInput{
		TimePeriod:  &cetypes.DateInterval{Start: sdkaws.String(start), End: sdkaws.String(end)},
		Granularity: cetypes.Granularity(granularity),
		Metrics:     []string{costMetric},
	}
	grouped := group != nil
	if grouped {
		in.GroupBy = []cetypes.GroupDefinition{*group}
	}
	client := costexplorer.NewFromConfig(s.cfg)
	b := costBuilder{index: map[string]int{}}
	if q.GroupBy == "TAG" {
		// Cost Explorer names a tag group "key$value" ("key$" untagged).
		b.trim = q.TagKey + "$"
	}
	for range maxCostPage {
		out, err := client.GetCostAndUsage(ctx, in)
		if err != nil {
			return ports.CostReport{}, p.fail(ctx, s, err, nil)
		}
		for _, r := range out.ResultsByTime {
			if err := b.add(r, grouped); err != nil {
				return ports.CostReport{}, err
			}
		}
		if sdkaws.ToString(out.NextPageToken) == "" {
			return b.report(grouped), nil
		}
		in.NextPageToken = out.NextPageToken
	}
	return ports.CostReport{}, ports.Errorf(ports.KindUpstream, "aws: Cost Explorer returned more than %d pages", maxCostPage)
}

// CostForecast forecasts the unblended cost over [start, end) with Cost
// Explorer's GetCostForecast (monthly, so Total is the whole range's). Errors:
// invalid for a range that does not start before it ends, else as
// CloudProvider (a DataUnavailableException is upstream).
func (p *Provider) CostForecast(ctx context.Context, c ports.CloudCredentials, start, end time.Time) (ports.CostForecast, error) {
	from, to := start.UTC().Format(time.DateOnly), end.UTC().Format(time.DateOnly)
	if start.IsZero() || end.IsZero() || from >= to {
		return ports.CostForecast{}, ports.Invalid("aws: the forecast range must start before it ends")
	}
	ctx, cancel, s, err := p.start(ctx, c)
	if err != nil {
		return ports.CostForecast{}, err
	}
	defer cancel()
	out, err := costexplorer.NewFromConfig(s.cfg).GetCostForecast(ctx, &costexplorer.GetCostForecastInput{
		TimePeriod:  &cetypes.DateInterval{Start: sdkaws.String(from), End: sdkaws.String(to)},
		Granularity: cetypes.GranularityMonthly,
		Metric:      cetypes.MetricUnblendedCost,
	})
	if err != nil {
		return ports.CostForecast{}, p.fail(ctx, s, err, nil)
	}
	f := ports.CostForecast{Start: start.UTC(), End: end.UTC(), Currency: "USD", Amount: "0"}
	if out.Total != nil {
		if a := sdkaws.ToString(out.Total.Amount); a != "" {
			f.Amount = a
		}
		if u := sdkaws.ToString(out.Total.Unit); u != "" {
			f.Currency = u
		}
	}
	lower, upper := new(big.Rat), new(big.Rat)
	bounds := len(out.ForecastResultsByTime) > 0
	for _, r := range out.ForecastResultsByTime {
		l, ok1 := new(big.Rat).SetString(sdkaws.ToString(r.PredictionIntervalLowerBound))
		u, ok2 := new(big.Rat).SetString(sdkaws.ToString(r.PredictionIntervalUpperBound))
		if !ok1 || !ok2 {
			bounds = false
			break
		}
		lower.Add(lower, l)
		upper.Add(upper, u)
	}
	if bounds {
		f.Lower, f.Upper = decimal(lower), decimal(upper)
	}
	if _, ok := new(big.Rat).SetString(f.Amount); !ok {
		return ports.CostForecast{}, ports.Errorf(ports.KindUpstream, "aws: Cost Explorer forecast a malformed amount %q", ports.Clip(f.Amount, 40))
	}
	return f, nil
}

// costBuilder merges the results of every page: a period whose groups span
// pages appears on each of them.
type costBuilder struct {
	currency string
	periods  []ports.CostPeriod
	sums     []*big.Rat
	index    map[string]int
	trim     string // the prefix of each group key to drop
}

func (b *costBuilder) add(r cetypes.ResultByTime, grouped bool) error {
	var startS, endS string
	if r.TimePeriod != nil {
		startS, endS = sdkaws.ToString(r.TimePeriod.Start), sdkaws.ToString(r.TimePeriod.End)
	}
	i, ok := b.index[startS+"/"+endS]
	if !ok {
		start, err1 := time.Parse(time.DateOnly, startS)
		end, err2 := time.Parse(time.DateOnly, endS)
		if err1 != nil || err2 != nil {
			return ports.Errorf(ports.KindUpstream, "aws: Cost Explorer returned a malformed period %q–%q", startS, endS)
		}
		i = len(b.periods)
		b.index[startS+"/"+endS] = i
		b.periods = append(b.periods, ports.CostPeriod{Start: start, End: end, Total: "0", Groups: []ports.CostGroup{}})
		b.sums = append(b.sums, new(big.Rat))
	}
	period := &b.periods[i]
	if !grouped {
		if m, ok := r.Total[costMetric]; ok {
			b.unit(m)
			if a := sdkaws.ToString(m.Amount); a != "" {
				period.Total = a
			}
		}
		return nil
	}
	for _, g := range r.Groups {
		m := g.Metrics[costMetric]
		b.unit(m)
		amount := sdkaws.ToString(m.Amount)
		if amount == "" {
			amount = "0"
		}
		v, ok := new(big.Rat).SetString(amount)
		if !ok {
			return ports.Errorf(ports.KindUpstream, "aws: Cost Explorer returned a malformed amount %q", amount)
		}
		b.sums[i].Add(b.sums[i], v)
		key := ""
		if len(g.Keys) > 0 {
			key = strings.TrimPrefix(g.Keys[0], b.trim)
		}
		period.Groups = append(period.Groups, ports.CostGroup{Key: key, Amount: amount})
	}
	return nil
}

func (b *costBuilder) unit(m cetypes.MetricValue) {
	if b.currency == "" && sdkaws.ToString(m.Unit) != "" {
		b.currency = sdkaws.ToString(m.Unit)
	}
}

func (b *costBuilder) report(grouped bool) ports.CostReport {
	if grouped {
		for i := range b.periods {
			b.periods[i].Total = decimal(b.sums[i])
		}
	}
	currency := b.currency
	if currency == "" {
		currency = "USD"
	}
	periods := b.periods
	if periods == nil {
		periods = []ports.CostPeriod{}
	}
	return ports.CostReport{Currency: currency, Periods: periods}
}

// decimal formats r exactly, with the fewest decimal places; r has a finite
// decimal expansion, as every sum of decimal strings does.
func decimal(r *big.Rat) string {
	p := big.NewInt(1)
	ten := big.NewInt(10)
	for k := 0; k < 64; k++ {
		if new(big.Int).Rem(p, r.Denom()).Sign() == 0 {
			return r.FloatString(k)
		}
		p.Mul(p, ten)
	}
	return r.FloatString(64)
}
