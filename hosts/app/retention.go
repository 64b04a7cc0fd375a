package app

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/devpilot/devpilot/adapters/queue"
	"github.com/devpilot/devpilot/core/scm"
	"github.com/devpilot/devpilot/hosts/worker"
)

// RetentionConfig is how long the records that grow with traffic are kept
// (the worker's retention sweeps) and how long the queue keeps finished
// jobs (River's job cleaner).
type RetentionConfig struct {
	Keep worker.Retention
	Jobs queue.JobRetention
}

// RetentionSetting is one DEVPILOT_RETENTION_* variable: what it keeps,
// from when, its default and its least value.
type RetentionSetting struct {
	Env     string
	What    string        // the records, from when their retention counts
	Default time.Duration // worker.RetentionOff: off
	Min     time.Duration // the least value besides off
	// ZeroIsExpiry is set where 0 means "as soon as expired" rather than
	// off.
	ZeroIsExpiry bool
	field        func(*RetentionConfig) *time.Duration
}

// day is 24 hours.
const day = 24 * time.Hour

// RetentionSettings returns every DEVPILOT_RETENTION_* variable. Each takes
// a duration (Go's syntax, or a whole number of days such as 30d), or off
// (or 0, but for the idempotency keys) to keep the records forever.
func RetentionSettings() []RetentionSetting {
	d := worker.DefaultRetention
	return []RetentionSetting{
		{"DEVPILOT_RETENTION_WEBHOOK_DELIVERIES", "webhook deliveries, from their processing (pending ones are kept)",
			d.WebhookDeliveries, time.Hour, false, func(c *RetentionConfig) *time.Duration { return &c.Keep.WebhookDeliveries }},
		{"DEVPILOT_RETENTION_WEBHOOK_DIGESTS", "digests of webhook bodies (replay protection), from receipt",
			d.WebhookDigests, scm.DefaultReplayWindow, false, func(c *RetentionConfig) *time.Duration { return &c.Keep.WebhookDigests }},
		{"DEVPILOT_RETENTION_STREAM_EVENTS", "chat stream events, from the end of their turn (running turns, pending confirmations and each session's last event are kept)",
			d.StreamEvents, time.Hour, false, func(c *RetentionConfig) *time.Duration { return &c.Keep.StreamEvents }},
		{"DEVPILOT_RETENTION_INVITATIONS", "invitations never accepted, from their expiry",
			d.Invitations, time.Minute, false, func(c *RetentionConfig) *time.Duration { return &c.Keep.Invitations }},
		{"DEVPILOT_RETENTION_OAUTH_STATES", "OAuth states never used, from their expiry",
			d.OAuthStates, time.Minute, false, func(c *RetentionConfig) *time.Duration { return &c.Keep.OAuthStates }},
		{"DEVPILOT_RETENTION_RATE_WINDOWS", "rate-limit counts, from the start of their key's last window",
			d.RateWindows, time.Minute, false, func(c *RetentionConfig) *time.Duration { return &c.Keep.RateWindows }},
		{"DEVPILOT_RETENTION_COST_CACHE", "cached cost reports, from their expiry",
			d.CostCache, time.Minute, false, func(c *RetentionConfig) *time.Duration { return &c.Keep.CostCache }},
		{"DEVPILOT_RETENTION_SCM_ACTIVITY", "repository activity, from when it happened",
			d.SCMActivity, time.Hour, false, func(c *RetentionConfig) *time.Duration { return &c.Keep.SCMActivity }},
		{"DEVPILOT_RETENTION_AUDIT_LOG", "the audit log, from each entry",
			d.AuditLog, day, false, func(c *RetentionConfig) *time.Duration { return &c.Keep.AuditLog }},
		{"DEVPILOT_RETENTION_IDEMPOTENCY_KEYS", "Idempotency-Key records, from their expiry (0: once expired)",
			d.IdempotencyKeys, 0, true, func(c *RetentionConfig) *time.Duration { return &c.Keep.IdempotencyKeys }},
		{"DEVPILOT_RETENTION_USAGE_KEYS", "the keys of usage records added once (realtime calls), from their day",
			d.UsageKeys, day, false, func(c *RetentionConfig) *time.Duration { return &c.Keep.UsageKeys }},
		{"DEVPILOT_RETENTION_JOBS_COMPLETED", "completed background jobs, from completion",
			queue.DefaultCompletedRetention, time.Minute, false, func(c *RetentionConfig) *time.Duration { return &c.Jobs.Completed }},
		{"DEVPILOT_RETENTION_JOBS_CANCELLED", "cancelled background jobs, from cancellation",
			queue.DefaultCancelledRetention, time.Minute, false, func(c *RetentionConfig) *time.Duration { return &c.Jobs.Cancelled }},
		{"DEVPILOT_RETENTION_JOBS_DISCARDED", "background jobs failed for good, from the last attempt",
			queue.DefaultDiscardedRetention, time.Minute, false, func(c *RetentionConfig) *time.Duration { return &c.Jobs.Discarded }},
	}
}

// retention reads every DEVPILOT_RETENTION_* variable. The rate windows
// must be kept at least one rate window (rateWindow), or a count would
// start again within its window: a value set below it is refused, the
// default is raised to it.
func (r *reader) retention(rateWindow time.Duration) RetentionConfig {
	var c RetentionConfig
	for _, s := range RetentionSettings() {
		*s.field(&c) = r.retentionOf(s)
	}
	keep := c.Keep.RateWindows
	if r.str("DEVPILOT_RETENTION_RATE_WINDOWS", "") == "" && keep >= 0 && keep < rateWindow {
		// Unset: the default grows with a long rate window instead of
		// refusing a setting nobody gave.
		c.Keep.RateWindows = rateWindow
	} else if keep >= 0 && keep < rateWindow {
		r.fail("DEVPILOT_RETENTION_RATE_WINDOWS", fmt.Sprintf("(%s) must be at least %s (%s) or off", keep, EnvRateWindow, rateWindow))
	}
	return c
}

// retentionOf reads one setting: its default when unset, worker.RetentionOff
// (which queue.JobRetention takes too) for off.
func (r *reader) retentionOf(s RetentionSetting) time.Duration {
	v := strings.ToLower(r.str(s.Env, ""))
	if v == "" {
		return s.Default
	}
	if v == "off" {
		return worker.RetentionOff
	}
	d, err := parseDays(v)
	switch {
	case err == nil && d == 0 && s.ZeroIsExpiry:
		return 0
	case err == nil && d == 0:
		return worker.RetentionOff
	case err != nil || d < s.Min:
		r.fail(s.Env, fmt.Sprintf("%q must be off or a duration of at least %s, such as 720h or 30d", v, s.Min))
		return s.Default
	}
	return d
}

// parseDays parses a Go duration, or a whole number of days such as "30d".
func parseDays(v string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(v, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days < 0 || days > 100*365 {
			return 0, fmt.Errorf("bad number of days %q", v)
		}
		return time.Duration(days) * day, nil
	}
	return time.ParseDuration(v)
}
