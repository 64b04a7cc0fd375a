package usage

import (
	"context"
	"fmt"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// MaxDays is the longest period one report covers.
const MaxDays = 366

// Service reports usage. Every method acts for the principal in ctx and
// fails with unauthenticated without one.
type Service struct {
	store   ports.UsageStore
	budgets *Budgets
	clock   ports.Clock
}

// New returns a Service over store, reporting and setting the budgets of
// budgets.
func New(store ports.UsageStore, budgets *Budgets, clock ports.Clock) *Service {
	return &Service{store: store, budgets: budgets, clock: clock}
}

// Query asks for a report. From and To are days (YYYY-MM-DD) or RFC 3339
// times, whose UTC day counts, both included; From defaults to the first
// day of To's month and To to today. GroupBy is day (the default), model,
// user or feature. UserID keeps one user's usage.
type Query struct {
	From, To string
	GroupBy  string
	UserID   string
}

// Report is the usage of the caller's organisation, or of one user, over a
// period: its total and its groups, ordered by key.
type Report struct {
	From, To time.Time // UTC days
	GroupBy  ports.UsageGroup
	UserID   string // "" for the whole organisation
	Groups   []ports.UsageTotal
	Total    ports.UsageTotal
}

// Report returns the usage of the caller's organisation to an admin, and a
// member's own usage to a member. Errors: unauthenticated; invalid naming
// from, to, group_by or user_id (a period over MaxDays, From after To, a
// malformed user id); forbidden when a member asks for another user; the
// store's.
func (s *Service) Report(ctx context.Context, q Query) (Report, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return Report{}, err
	}
	r, err := s.check(q)
	if err != nil {
		return Report{}, err
	}
	switch {
	case p.IsAdmin():
	case r.UserID == "":
		r.UserID = p.UserID
	case r.UserID != p.UserID:
		return Report{}, &ports.Error{Kind: ports.KindForbidden, Message: "only an organisation admin may see another user's usage"}
	}
	groups, err := s.store.SumUsage(ctx, ports.UsageQuery{OrgID: p.OrgID, UserID: r.UserID, From: r.From, To: r.To, GroupBy: r.GroupBy})
	if err != nil {
		return Report{}, err
	}
	r.Groups = groups
	for _, g := range groups {
		r.Total.PromptTokens += g.PromptTokens
		r.Total.CompletionTokens += g.CompletionTokens
		r.Total.Calls += g.Calls
	}
	return r, nil
}

func (s *Service) check(q Query) (Report, error) {
	var fields []ports.FieldError
	bad := func(field, reason string) { fields = append(fields, ports.FieldError{Field: field, Reason: reason}) }
	r := Report{GroupBy: ports.UsageByDay, UserID: q.UserID}
	switch g := ports.UsageGroup(q.GroupBy); g {
	case "":
	case ports.UsageByDay, ports.UsageByModel, ports.UsageByUser, ports.UsageByFeature:
		r.GroupBy = g
	default:
		bad("group_by", "must be day, model, user or feature")
	}
	if q.UserID != "" && !ports.IsID(q.UserID) {
		bad("user_id", "must be a UUID")
	}
	to, ok := day("to", q.To, s.clock.Now())
	if !ok {
		bad("to", "must be a date (YYYY-MM-DD) or an RFC 3339 time")
	}
	from, ok := day("from", q.From, time.Date(to.Year(), to.Month(), 1, 0, 0, 0, 0, time.UTC))
	if !ok {
		bad("from", "must be a date (YYYY-MM-DD) or an RFC 3339 time")
	}
	switch {
	case fields != nil:
	case from.After(to):
		bad("from", "must not be after to")
	case to.Sub(from) >= MaxDays*24*time.Hour:
		bad("from", fmt.Sprintf("the period may cover at most %d days", MaxDays))
	}
	if fields != nil {
		return Report{}, ports.Invalid("invalid usage query", fields...)
	}
	r.From, r.To = from, to
	return r, nil
}

// day reads a date or an RFC 3339 time (ports.ParseClientTime) of the
// field as its UTC day; def when s is empty.
func day(field, s string, def time.Time) (time.Time, bool) {
	t := def
	if s != "" {
		var err error
		if t, err = time.Parse(time.DateOnly, s); err != nil {
			if t, err = ports.ParseClientTime(field, s); err != nil {
				return time.Time{}, false
			}
		}
	}
	t = t.UTC()
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC), true
}
