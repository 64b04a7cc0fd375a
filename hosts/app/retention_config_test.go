package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/queue"
	"github.com/devpilot/devpilot/hosts/app"
	"github.com/devpilot/devpilot/hosts/worker"
)

func TestLoadRetention(t *testing.T) {
	t.Parallel()
	const day = 24 * time.Hour
	defaults := app.RetentionConfig{Keep: worker.DefaultRetention, Jobs: queue.JobRetention{
		Completed: queue.DefaultCompletedRetention, Cancelled: queue.DefaultCancelledRetention, Discarded: queue.DefaultDiscardedRetention}}
	with := func(change func(*app.RetentionConfig)) app.RetentionConfig {
		c := defaults
		change(&c)
		return c
	}
	for _, tt := range []struct {
		name    string
		vars    map[string]string
		want    app.RetentionConfig
		failure string
	}{
		{"defaults", nil, defaults, ""},
		{"days and durations", map[string]string{
			"DEVPILOT_RETENTION_WEBHOOK_DELIVERIES": "30d", "DEVPILOT_RETENTION_STREAM_EVENTS": "6h",
			"DEVPILOT_RETENTION_AUDIT_LOG": "365d", "DEVPILOT_RETENTION_JOBS_COMPLETED": "1h",
		}, with(func(c *app.RetentionConfig) {
			c.Keep.WebhookDeliveries, c.Keep.StreamEvents, c.Keep.AuditLog, c.Jobs.Completed = 30*day, 6*time.Hour, 365*day, time.Hour
		}), ""},
		{"off and 0", map[string]string{
			"DEVPILOT_RETENTION_SCM_ACTIVITY": "off", "DEVPILOT_RETENTION_WEBHOOK_DIGESTS": "0",
			"DEVPILOT_RETENTION_JOBS_DISCARDED": "OFF", "DEVPILOT_RETENTION_IDEMPOTENCY_KEYS": "0",
		}, with(func(c *app.RetentionConfig) {
			c.Keep.SCMActivity, c.Keep.WebhookDigests, c.Jobs.Discarded = worker.RetentionOff, worker.RetentionOff, worker.RetentionOff
			c.Keep.IdempotencyKeys = 0 // 0 is "once expired" here
		}), ""},
		{"idempotency keys off", map[string]string{"DEVPILOT_RETENTION_IDEMPOTENCY_KEYS": "off"},
			with(func(c *app.RetentionConfig) { c.Keep.IdempotencyKeys = worker.RetentionOff }), ""},
		{"digests within the replay window", map[string]string{"DEVPILOT_RETENTION_WEBHOOK_DIGESTS": "1h"}, defaults, "DEVPILOT_RETENTION_WEBHOOK_DIGESTS"},
		{"stream events too soon to resume", map[string]string{"DEVPILOT_RETENTION_STREAM_EVENTS": "5m"}, defaults, "DEVPILOT_RETENTION_STREAM_EVENTS"},
		{"not a duration", map[string]string{"DEVPILOT_RETENTION_INVITATIONS": "a month"}, defaults, "DEVPILOT_RETENTION_INVITATIONS"},
		{"negative", map[string]string{"DEVPILOT_RETENTION_COST_CACHE": "-1h"}, defaults, "DEVPILOT_RETENTION_COST_CACHE"},
		{"rate windows shorter than the window", map[string]string{"DEVPILOT_RETENTION_RATE_WINDOWS": "1h", app.EnvRateWindow: "2h"},
			defaults, "DEVPILOT_RETENTION_RATE_WINDOWS"},
		// Unset, the default follows a rate window longer than itself.
		{"a long rate window raises the default", map[string]string{app.EnvRateWindow: "1000h"},
			with(func(c *app.RetentionConfig) { c.Keep.RateWindows = 1000 * time.Hour }), ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			vars := map[string]string{app.EnvSecretKey: validKey}
			for k, v := range tt.vars {
				vars[k] = v
			}
			cfg, err := app.Load(app.ModeServe, env(vars))
			if tt.failure != "" {
				if err == nil || !strings.Contains(err.Error(), tt.failure) {
					t.Fatalf("Load: %v, want an error naming %s", err, tt.failure)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Retention != tt.want {
				t.Errorf("retention\n got %+v\nwant %+v", cfg.Retention, tt.want)
			}
		})
	}
	// Every setting is named once, with its default.
	seen := map[string]bool{}
	for _, s := range app.RetentionSettings() {
		if seen[s.Env] || !strings.HasPrefix(s.Env, "DEVPILOT_RETENTION_") {
			t.Errorf("setting %s named twice or misnamed", s.Env)
		}
		seen[s.Env] = true
	}
}
