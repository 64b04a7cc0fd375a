package cloud

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/devpilot/devpilot/ports"
)

// Bounds of following a log.
const (
	// MaxLogFilterLen bounds a filter pattern (CloudWatch's own limit).
	MaxLogFilterLen = 1024
	// MinLogPoll is the shortest interval between two polls of a followed
	// log: CloudWatch Logs allows few FilterLogEvents calls a second per
	// account, shared by every reader.
	MinLogPoll = 2 * time.Second
	// DefaultLogPoll is the interval between polls of a followed log.
	DefaultLogPoll = MinLogPoll
	// DefaultLogFollowFor is how long one follow lasts before the client is
	// asked to reconnect.
	DefaultLogFollowFor = 15 * time.Minute
	// followBacklog is how many of the newest events a follow starts with.
	followBacklog = 100
	// followBatch is the most events one poll returns.
	followBatch = 1000
)

// filterProblem says what is wrong with a filter pattern ("" if nothing).
func filterProblem(f string) string {
	switch {
	case !utf8.ValidString(f):
		return "must be valid UTF-8"
	case utf8.RuneCountInString(f) > MaxLogFilterLen:
		return fmt.Sprintf("must be at most %d characters", MaxLogFilterLen)
	case strings.IndexFunc(f, unicode.IsControl) >= 0:
		return "must not contain control characters"
	}
	return ""
}

// FollowInput asks to follow the log of a container service (Service set,
// located as ServiceLogs does) or of a function (Function set, as
// FunctionLogs does), matching Filter (a CloudWatch filter pattern). After,
// when set, is the id of the last event the client saw (a stream's
// Last-Event-ID): the follow resumes after it, without the backlog.
type FollowInput struct {
	ServiceRef
	Function string
	Filter   string
	After    string
}

// LogFollow follows one log: each Poll returns the events that arrived since
// the last. It is not safe for concurrent use.
type LogFollow struct {
	s      *Service
	a      ports.CloudAccount
	fetch  func(ctx context.Context, c ports.CloudCredentials, q ports.LogQuery) ([]ports.LogEvent, error)
	filter string
	// cursor: the last event returned (its time and id); zero before the
	// first poll of a follow that did not resume.
	at      time.Time
	id      string
	started bool
}

// FollowEventID is the id a followed event is sent with: its time in Unix
// milliseconds and the provider's id, "1767323045000-3745…".
func FollowEventID(e ports.LogEvent) string {
	return strconv.FormatInt(e.Timestamp.UnixMilli(), 10) + "-" + e.ID
}

// parseFollowID reads an id FollowEventID wrote.
func parseFollowID(v string) (time.Time, string, bool) {
	ms, id, ok := strings.Cut(v, "-")
	if !ok || len(v) > 200 {
		return time.Time{}, "", false
	}
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil || n < 0 || strings.IndexFunc(id, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return time.Time{}, "", false
	}
	return time.UnixMilli(n).UTC(), id, true
}

// FollowLogs checks the caller may read the log and returns its follow.
// Errors: malformed (service or function required, not both; filter;
// after not an id this stream wrote; account_id or cluster when several
// fit); not_found for the account, service or function.
func (s *Service) FollowLogs(ctx context.Context, in FollowInput) (*LogFollow, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return nil, err
	}
	var fields []ports.FieldError
	if (in.Service == "") == (in.Function == "") {
		fields = append(fields, ports.FieldError{Field: "service", Reason: "name one service or one function"})
	}
	if reason := filterProblem(in.Filter); reason != "" {
		fields = append(fields, ports.FieldError{Field: "filter", Reason: reason})
	}
	f := &LogFollow{s: s, filter: in.Filter}
	if in.After != "" {
		at, id, ok := parseFollowID(in.After)
		if !ok {
			fields = append(fields, ports.FieldError{Field: "Last-Event-ID", Reason: "must be the id of an event of this stream"})
		}
		f.at, f.id, f.started = at, id, true
	}
	if err := ports.FieldsError(ports.KindMalformed, fields...); err != nil {
		return nil, err
	}
	if in.Service != "" {
		a, cluster, err := s.locateService(ctx, p, in.ServiceRef)
		if err != nil {
			return nil, err
		}
		f.a = a
		f.fetch = func(ctx context.Context, c ports.CloudCredentials, q ports.LogQuery) ([]ports.LogEvent, error) {
			return s.d.Provider.ServiceLogs(ctx, c, cluster, in.Service, q)
		}
		return f, nil
	}
	a, err := s.locateFunction(ctx, p, in.AccountID, in.Function)
	if err != nil {
		return nil, err
	}
	f.a = a
	f.fetch = func(ctx context.Context, c ports.CloudCredentials, q ports.LogQuery) ([]ports.LogEvent, error) {
		return s.d.Provider.FunctionLogs(ctx, c, in.Function, q)
	}
	return f, nil
}

// Poll returns the events since the last poll, oldest first: on the first
// poll of a new follow the newest 100 of the provider's recent window; then
// every event after the last one returned (at most 1000 a poll; the rest
// come with the next). Errors: the provider's.
func (f *LogFollow) Poll(ctx context.Context) ([]ports.LogEvent, error) {
	q := ports.LogQuery{Filter: f.filter, Limit: followBacklog}
	if f.started {
		q = ports.LogQuery{Filter: f.filter, Limit: followBatch, Since: f.at, Oldest: true}
	}
	events, err := call(ctx, f.s, f.a, func(ctx context.Context, c ports.CloudCredentials) ([]ports.LogEvent, error) {
		return f.fetch(ctx, c, q)
	})
	if err != nil {
		return nil, err
	}
	out := events[:0:0]
	for _, e := range events {
		if f.started && !after(e, f.at, f.id) {
			continue // seen: the poll starts at the last event's millisecond
		}
		out = append(out, e)
		if !f.started || after(e, f.at, f.id) {
			f.at, f.id = e.Timestamp.Truncate(time.Millisecond), e.ID
		}
	}
	if !f.started && len(out) == 0 {
		// Nothing yet: follow from now on, less a minute for late arrivals.
		f.at = f.s.d.Clock.Now().Add(-time.Minute).Truncate(time.Millisecond)
	}
	f.started = true
	return out, nil
}

// after says whether e comes after the event at (ms) with id: CloudWatch's
// event ids are decimal numbers of one width, growing within a millisecond.
func after(e ports.LogEvent, at time.Time, id string) bool {
	ms, atMS := e.Timestamp.UnixMilli(), at.UnixMilli()
	if ms != atMS {
		return ms > atMS
	}
	if len(e.ID) != len(id) {
		return len(e.ID) > len(id)
	}
	return e.ID > id
}
