package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/hosts/app"
)

func TestLoadRateLimit(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		vars    map[string]string
		limit   int
		window  time.Duration
		failure string
	}{
		{"defaults", nil, 30, time.Minute, ""},
		{"set", map[string]string{app.EnvRateRequests: "120", app.EnvRateWindow: "10m"}, 120, 10 * time.Minute, ""},
		{"off", map[string]string{app.EnvRateRequests: "0"}, 0, time.Minute, ""},
		{"negative", map[string]string{app.EnvRateRequests: "-1"}, 0, 0, app.EnvRateRequests},
		{"not a number", map[string]string{app.EnvRateRequests: "60/m"}, 0, 0, app.EnvRateRequests},
		{"bad window", map[string]string{app.EnvRateWindow: "0s"}, 0, 0, app.EnvRateWindow},
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
			if cfg.RateLimit != tt.limit || cfg.RateWindow != tt.window {
				t.Errorf("rate %d per %v, want %d per %v", cfg.RateLimit, cfg.RateWindow, tt.limit, tt.window)
			}
		})
	}
}
