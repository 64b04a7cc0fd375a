package memstore

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/devpilot/devpilot/ports"
)

var _ ports.UsageStore = (*Store)(nil)

type usageKey struct {
	org, day, user, model string
	feature               ports.Feature
}

// AddUsage adds r's counts to its day's totals, once per Key.
func (s *Store) AddUsage(ctx context.Context, r ports.UsageRecord) error {
	if err := ports.CheckUsageRecord(r); err != nil {
		return err
	}
	defer s.lock()()
	if r.Key != "" {
		if _, ok := s.usageKeys[r.Key]; ok {
			return nil
		}
		put(ctx, s, s.usageKeys, r.Key, r.Day.UTC().Format(time.DateOnly))
	}
	k := usageKey{r.OrgID, r.Day.UTC().Format(time.DateOnly), r.UserID, r.Model, r.Feature}
	t := s.usage[k]
	t.PromptTokens += r.PromptTokens
	t.CompletionTokens += r.CompletionTokens
	t.Calls += r.Calls
	put(ctx, s, s.usage, k, t)
	return nil
}

// SumUsage returns q's totals ordered by key.
func (s *Store) SumUsage(_ context.Context, q ports.UsageQuery) ([]ports.UsageTotal, error) {
	keyOf := map[ports.UsageGroup]func(usageKey) string{
		"":                   func(usageKey) string { return "" },
		ports.UsageByDay:     func(k usageKey) string { return k.day },
		ports.UsageByModel:   func(k usageKey) string { return k.model },
		ports.UsageByUser:    func(k usageKey) string { return k.user },
		ports.UsageByFeature: func(k usageKey) string { return string(k.feature) },
	}[q.GroupBy]
	if keyOf == nil {
		return nil, ports.Invalid("unknown usage grouping", ports.FieldError{Field: "group_by", Reason: "must be day, model, user or feature"})
	}
	from, to := q.From.UTC().Format(time.DateOnly), q.To.UTC().Format(time.DateOnly)
	defer s.lock()()
	sums := map[string]*ports.UsageTotal{}
	for k, t := range s.usage {
		if k.org != q.OrgID || k.day < from || k.day > to || (q.UserID != "" && k.user != q.UserID) {
			continue
		}
		key := keyOf(k)
		sum := sums[key]
		if sum == nil {
			sum = &ports.UsageTotal{Key: key}
			sums[key] = sum
		}
		sum.PromptTokens += t.PromptTokens
		sum.CompletionTokens += t.CompletionTokens
		sum.Calls += t.Calls
	}
	out := make([]ports.UsageTotal, 0, len(sums))
	for _, sum := range sums {
		out = append(out, *sum)
	}
	slices.SortFunc(out, func(a, b ports.UsageTotal) int { return cmp.Compare(a.Key, b.Key) })
	return out, nil
}

// PruneUsageKeys forgets at most limit keys of records added before
// before's day.
func (s *Store) PruneUsageKeys(ctx context.Context, before time.Time, limit int) (int, error) {
	if err := ports.CheckPruneLimit(limit); err != nil {
		return 0, err
	}
	cut := before.UTC().Format(time.DateOnly)
	defer s.lock()()
	return pruneMap(ctx, s, s.usageKeys, limit, func(_ string, day string) bool { return day < cut }), nil
}
