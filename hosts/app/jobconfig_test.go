package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/queue"
	"github.com/devpilot/devpilot/hosts/app"
)

// DEVPILOT_JOB_RESCUE_AFTER bounds how long a job of a dead process stays
// running: minutes by default, never River's hour, and long enough for a
// job's attempt to outlast one model call.
func TestJobRescueAfter(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		vars map[string]string
		want time.Duration
		err  string
	}{
		{"default", nil, 5 * time.Minute, ""},
		{"set", map[string]string{app.EnvJobRescueAfter: "3m"}, 3 * time.Minute, ""},
		{"short, with short model calls", map[string]string{app.EnvJobRescueAfter: "40s", app.EnvLLMTimeout: "30s"}, 40 * time.Second, ""},
		{"too short", map[string]string{app.EnvJobRescueAfter: "5s"}, 0, app.EnvJobRescueAfter + " must be from 30s to 24h"},
		{"not a duration", map[string]string{app.EnvJobRescueAfter: "soon"}, 0, app.EnvJobRescueAfter},
		{"shorter than a model call", map[string]string{app.EnvJobRescueAfter: "2m", app.EnvLLMTimeout: "3m"}, 0, app.EnvJobRescueAfter + " 2m0s lets a job attempt run for 1m36s"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, mode := range []app.Mode{app.ModeRun, app.ModeWorker} {
				vars := map[string]string{app.EnvSecretKey: validKey}
				for k, v := range tt.vars {
					vars[k] = v
				}
				cfg, err := app.Load(mode, env(vars))
				if tt.err != "" {
					if err == nil || !strings.Contains(err.Error(), tt.err) {
						t.Errorf("%s: Load = %v, want an error with %q", mode, err, tt.err)
					}
					continue
				}
				if err != nil || cfg.JobRescueAfter != tt.want || queue.JobTimeout(cfg.JobRescueAfter) < cfg.LLM.Timeout {
					t.Errorf("%s: Load = %v, rescue after %s (job timeout %s, model call %s), want %s",
						mode, err, cfg.JobRescueAfter, queue.JobTimeout(cfg.JobRescueAfter), cfg.LLM.Timeout, tt.want)
				}
			}
		})
	}
}
