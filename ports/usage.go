package ports

//go:generate go tool mockgen -typed -destination ../testkit/mocks/usage.go -package mocks . UsageStore,BudgetStore

import (
	"context"
	"time"
)

// Feature is what a model call is made for; tokens are accounted per
// feature.
type Feature string

// The features that call a model.
const (
	FeatureChat    Feature = "chat"    // an assistant turn
	FeatureTitle   Feature = "title"   // a chat session's title
	FeatureSpec    Feature = "spec"    // a specification stage
	FeatureContent Feature = "content" // a content draft
	FeatureVoice   Feature = "voice"   // transcription and realtime sessions
	FeatureDigest  Feature = "digest"  // the digest of a specification's inputs
)

// Features lists every Feature, in the order above.
var Features = []Feature{FeatureChat, FeatureTitle, FeatureSpec, FeatureContent, FeatureVoice, FeatureDigest}

// Attribution says on whose behalf and for what a model call is made: the
// organisation and user its tokens are charged to, and the feature.
type Attribution struct {
	OrgID   string
	UserID  string
	Feature Feature
}

type attributionKey struct{}

// WithAttribution returns ctx carrying a; a core sets it before each model
// call, so that usage is recorded against a (also where no principal is in
// ctx, as in a background job).
func WithAttribution(ctx context.Context, a Attribution) context.Context {
	return context.WithValue(ctx, attributionKey{}, a)
}

// AttributionFrom returns the attribution ctx carries; without one, the
// principal's organisation and user with no feature, and false.
func AttributionFrom(ctx context.Context) (Attribution, bool) {
	if a, ok := ctx.Value(attributionKey{}).(Attribution); ok {
		return a, true
	}
	if p, ok := PrincipalFrom(ctx); ok {
		return Attribution{OrgID: p.OrgID, UserID: p.UserID}, false
	}
	return Attribution{}, false
}

// UsageRecord is the tokens of one or more model calls made on one UTC day
// for one organisation, user, model and feature.
type UsageRecord struct {
	Attribution
	Model string
	// Day is the UTC day of the calls (its time of day is ignored).
	Day              time.Time
	PromptTokens     int64
	CompletionTokens int64
	Calls            int64
	// Key, when set, makes the add happen once: a later add of a record
	// with the same Key is a no-op. It names the model call (say
	// "voice:<call id>:<response id>") for usage that may be reported
	// more than once. At most MaxUsageKeyLen bytes.
	Key string
}

// MaxUsageKeyLen is the longest UsageRecord.Key.
const MaxUsageKeyLen = 200

// UsageGroup is what usage totals are grouped by.
type UsageGroup string

// The groupings of usage.
const (
	UsageByDay     UsageGroup = "day"
	UsageByModel   UsageGroup = "model"
	UsageByUser    UsageGroup = "user"
	UsageByFeature UsageGroup = "feature"
)

// UsageQuery selects the usage of an organisation between two UTC days,
// both included.
type UsageQuery struct {
	OrgID string
	// UserID, when set, keeps only that user's usage.
	UserID   string
	From, To time.Time
	// GroupBy splits the total; "" gives one total (none when nothing was
	// used).
	GroupBy UsageGroup
}

// UsageTotal is the tokens and calls of one group: Key is the group's day
// (YYYY-MM-DD), model, user id or feature, "" for the one total.
type UsageTotal struct {
	Key              string
	PromptTokens     int64
	CompletionTokens int64
	Calls            int64
}

// UsageStore keeps the tokens models used, per organisation, user, model,
// feature and UTC day.
type UsageStore interface {
	// AddUsage adds r's tokens and calls to its day's totals, creating them
	// on first use; concurrent adds are all counted. A record with a Key is
	// added once: an add with a Key already added (before, or concurrently)
	// changes nothing and returns nil. Errors: invalid when OrgID, Model or
	// Feature is empty, a count is negative or Key is too long.
	AddUsage(ctx context.Context, r UsageRecord) error
	// SumUsage returns the totals of q's organisation (and user) from q.From
	// to q.To, grouped by q.GroupBy and ordered by key; groups without usage
	// are left out. Errors: invalid for an unknown GroupBy.
	SumUsage(ctx context.Context, q UsageQuery) ([]UsageTotal, error)
	// PruneUsageKeys forgets the Keys of the records added on a UTC day
	// before before's, at most limit of them, and returns how many it
	// forgot: a sweep calls it until it forgets fewer than limit (see
	// RetentionStore). A record added with such a key again counts again,
	// so keep them as long as a record may be reported again. Errors:
	// invalid when limit is not positive.
	PruneUsageKeys(ctx context.Context, before time.Time, limit int) (int, error)
}

// CheckUsageRecord is the rule every UsageStore applies to a record it
// adds: invalid when OrgID, Model or Feature is empty, a count is negative
// or Key is longer than MaxUsageKeyLen.
func CheckUsageRecord(r UsageRecord) error {
	var fields []FieldError
	for _, f := range []struct{ name, v string }{{"org_id", r.OrgID}, {"model", r.Model}, {"feature", string(r.Feature)}} {
		if f.v == "" {
			fields = append(fields, FieldError{Field: f.name, Reason: "required"})
		}
	}
	if r.PromptTokens < 0 || r.CompletionTokens < 0 || r.Calls < 0 {
		fields = append(fields, FieldError{Field: "tokens", Reason: "must not be negative"})
	}
	if len(r.Key) > MaxUsageKeyLen {
		fields = append(fields, FieldError{Field: "key", Reason: "must be at most 200 bytes"})
	}
	if fields != nil {
		return Invalid("invalid usage record", fields...)
	}
	return nil
}

// CodeBudgetExceeded is the code of the rate_limited Error a model call is
// refused with when its organisation has used its monthly token budget; its
// RetryAfter runs to the start of the next month (UTC). A client may retry
// then; background work fails at once (see Transient).
const CodeBudgetExceeded = "budget_exceeded"

// MaxMonthlyTokens is the largest monthly token budget an organisation may
// have.
const MaxMonthlyTokens int64 = 1_000_000_000_000

// BudgetStore keeps the monthly token budget an admin set for an
// organisation, which overrides the configured default. It is a port of its
// own, not part of UsageStore: a budget is a setting an admin writes rarely,
// in a table of its own, while usage is written after every model call.
type BudgetStore interface {
	// OrgTokenBudget returns the organisation's monthly token budget and
	// true, or false when none is set (the default applies).
	OrgTokenBudget(ctx context.Context, orgID string) (int64, bool, error)
	// SetOrgTokenBudget sets the organisation's monthly token budget, or
	// removes it when tokens is nil. Errors: invalid when orgID is empty or
	// tokens is negative or over MaxMonthlyTokens.
	SetOrgTokenBudget(ctx context.Context, orgID string, tokens *int64) error
}

// CheckOrgTokenBudget is the rule every BudgetStore applies to a budget it
// sets: invalid when orgID is empty or tokens is negative or over
// MaxMonthlyTokens.
func CheckOrgTokenBudget(orgID string, tokens *int64) error {
	var fields []FieldError
	if orgID == "" {
		fields = append(fields, FieldError{Field: "org_id", Reason: "required"})
	}
	if tokens != nil && (*tokens < 0 || *tokens > MaxMonthlyTokens) {
		fields = append(fields, FieldError{Field: "monthly_tokens", Reason: "must be between 0 and 1000000000000"})
	}
	if fields != nil {
		return Invalid("invalid token budget", fields...)
	}
	return nil
}
