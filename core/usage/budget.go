package usage

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// BudgetCacheTTL is how long Budgets trusts an organisation's budget and its
// month's usage, read from the stores, before reading them again. Within it,
// the tokens of every call metered in this process are added to the cached
// usage; calls made by other processes are seen when it runs out.
const BudgetCacheTTL = 5 * time.Second

// Budgets enforces organisations' monthly token budgets (prompt plus
// completion tokens per UTC calendar month): the budget an admin set for the
// organisation (ports.BudgetStore), else the configured default, where 0 is
// unlimited. An organisation's budget and month's usage are cached for
// BudgetCacheTTL, so a check is not a query per model call.
//
// A call is admitted while the month's usage is below the budget, and may
// then finish: a budget can be overrun by the tokens of the calls in flight
// when it is reached, and, across processes, of the calls made by other
// processes within one BudgetCacheTTL.
type Budgets struct {
	usage   ports.UsageStore
	budgets ports.BudgetStore
	clock   ports.Clock
	def     int64

	mu    sync.Mutex
	cache map[string]*orgBudget
}

// orgBudget is one organisation's cached budget and usage.
type orgBudget struct {
	read   time.Time // when the stores were read
	month  time.Time // the first day of the month used counts
	limit  int64     // the budget; meaningful when limited
	org    bool      // the budget is the organisation's own
	used   int64
	capped bool // the organisation has a budget at all
}

// NewBudgets returns the budgets of organisations, whose usage is in usage
// and whose own budgets are in budgets; defaultTokens is the monthly budget
// of an organisation without one (0 or less: unlimited).
func NewBudgets(usage ports.UsageStore, budgets ports.BudgetStore, clock ports.Clock, defaultTokens int64) *Budgets {
	return &Budgets{usage: usage, budgets: budgets, clock: clock, def: max(defaultTokens, 0), cache: map[string]*orgBudget{}}
}

// monthOf returns the first instants (UTC) of t's month and of the next.
func monthOf(t time.Time) (start, end time.Time) {
	t = t.UTC()
	start = time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	return start, start.AddDate(0, 1, 0)
}

// state returns the organisation's budget and month's usage, from the cache
// when fresh enough or when fresh is false and the month is the same.
func (b *Budgets) state(ctx context.Context, orgID string, fresh bool) (orgBudget, error) {
	now := b.clock.Now()
	start, _ := monthOf(now)
	if !fresh {
		b.mu.Lock()
		c, ok := b.cache[orgID]
		if ok && c.month.Equal(start) && !now.Before(c.read) && now.Sub(c.read) < BudgetCacheTTL {
			s := *c
			b.mu.Unlock()
			return s, nil
		}
		b.mu.Unlock()
	}
	s := orgBudget{read: now, month: start, limit: b.def, capped: b.def > 0}
	tokens, own, err := b.budgets.OrgTokenBudget(ctx, orgID)
	if err != nil {
		return orgBudget{}, err
	}
	if own {
		s.limit, s.org, s.capped = tokens, true, true
	}
	if s.capped || fresh {
		sums, err := b.usage.SumUsage(ctx, ports.UsageQuery{OrgID: orgID, From: start, To: now})
		if err != nil {
			return orgBudget{}, err
		}
		for _, t := range sums {
			s.used += t.PromptTokens + t.CompletionTokens
		}
	}
	// The cache keeps a copy of its own: Charge adds to it under mu while
	// s is returned.
	cached := s
	b.mu.Lock()
	b.cache[orgID] = &cached
	b.mu.Unlock()
	return s, nil
}

// Check returns nil when the organisation may make a model call now: it has
// no budget, or its month's usage is below it. Otherwise a rate_limited
// Error with code ports.CodeBudgetExceeded, whose RetryAfter runs to the
// start of the next month (UTC). Errors: the stores'.
func (b *Budgets) Check(ctx context.Context, orgID string) error {
	s, err := b.state(ctx, orgID, false)
	if err != nil {
		return err
	}
	if !s.capped || s.used < s.limit {
		return nil
	}
	_, end := monthOf(s.read)
	whose := "the default monthly token budget"
	if s.org {
		whose = "the organisation's monthly token budget"
	}
	return &ports.Error{Kind: ports.KindRateLimited, Code: ports.CodeBudgetExceeded,
		Message:    fmt.Sprintf("%s of %d tokens is used up until %s", whose, s.limit, end.Format(time.DateOnly)),
		RetryAfter: max(end.Sub(b.clock.Now()), time.Second)}
}

// Charge adds tokens used by the organisation to its cached usage, so that
// the next Check counts them before the cache is read again.
func (b *Budgets) Charge(orgID string, tokens int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c, ok := b.cache[orgID]; ok {
		c.used += tokens
	}
}

// forget drops the organisation's cached state, as when its budget changes.
func (b *Budgets) forget(orgID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.cache, orgID)
}

// BudgetStatus is an organisation's token budget for the current month and
// what it has used of it.
type BudgetStatus struct {
	// MonthlyTokens is the budget; nil when there is none (unlimited).
	MonthlyTokens *int64
	// Used is the tokens (prompt plus completion) used this month.
	Used int64
	// PeriodStart and PeriodEnd are the first instants (UTC) of this month
	// and the next.
	PeriodStart, PeriodEnd time.Time
	// Source is BudgetSourceOrg when an admin set the budget, else
	// BudgetSourceDefault.
	Source string
}

// The sources of a budget.
const (
	BudgetSourceOrg     = "org"     // set by an admin for the organisation
	BudgetSourceDefault = "default" // the configured default
)

// status reads the organisation's budget and usage afresh.
func (b *Budgets) status(ctx context.Context, orgID string) (BudgetStatus, error) {
	s, err := b.state(ctx, orgID, true)
	if err != nil {
		return BudgetStatus{}, err
	}
	start, end := monthOf(s.read)
	st := BudgetStatus{Used: s.used, PeriodStart: start, PeriodEnd: end, Source: BudgetSourceDefault}
	if s.org {
		st.Source = BudgetSourceOrg
	}
	if s.capped {
		st.MonthlyTokens = &s.limit
	}
	return st, nil
}

// Budget returns the budget of the caller's organisation and what it has
// used of it this month, to any member. Errors: unauthenticated; the
// stores'.
func (s *Service) Budget(ctx context.Context) (BudgetStatus, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return BudgetStatus{}, err
	}
	return s.budgets.status(ctx, p.OrgID)
}

// SetBudget sets the monthly token budget of the caller's organisation (0
// blocks every model call), or, when tokens is nil, removes it so that the
// default applies; it returns the new status. Errors: unauthenticated;
// forbidden for a member who is no admin; invalid when tokens is negative or
// over ports.MaxMonthlyTokens; the stores'.
func (s *Service) SetBudget(ctx context.Context, tokens *int64) (BudgetStatus, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return BudgetStatus{}, err
	}
	if !p.IsAdmin() {
		return BudgetStatus{}, &ports.Error{Kind: ports.KindForbidden, Message: "only an organisation admin may set its token budget"}
	}
	if err := ports.CheckOrgTokenBudget(p.OrgID, tokens); err != nil {
		return BudgetStatus{}, err
	}
	if err := s.budgets.budgets.SetOrgTokenBudget(ctx, p.OrgID, tokens); err != nil {
		return BudgetStatus{}, err
	}
	s.budgets.forget(p.OrgID)
	return s.budgets.status(ctx, p.OrgID)
}

// CheckBudget returns nil when the caller's organisation may make model
// calls now, and otherwise the budget_exceeded Error of Budgets.Check: a
// use case that starts costly work checks it first, to refuse at once.
// Errors: unauthenticated; the stores'.
func (s *Service) CheckBudget(ctx context.Context) error {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return err
	}
	return s.budgets.Check(ctx, p.OrgID)
}
