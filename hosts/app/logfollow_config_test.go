package app_test

import (
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/hosts/app"
)

// A followed log is polled every 2 s at the fastest: a shorter interval is
// refused, not raised silently; a stream lasts 15 min unless told.
func TestLoadLogFollow(t *testing.T) {
	t.Parallel()
	base := map[string]string{app.EnvDatabaseURL: "postgres://db/x", app.EnvSecretKey: validKey}
	cfg, err := app.Load(app.ModeServe, env(base))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.LogPoll != 2*time.Second || cfg.LogFollowFor != 15*time.Minute {
		t.Fatalf("defaults: poll %s, follow %s", cfg.LogPoll, cfg.LogFollowFor)
	}
	with := func(k, v string) map[string]string {
		m := map[string]string{k: v}
		for k, v := range base {
			m[k] = v
		}
		return m
	}
	cfg, err = app.Load(app.ModeServe, env(with(app.EnvLogPoll, "5s")))
	if err != nil || cfg.LogPoll != 5*time.Second {
		t.Fatalf("5s: %v %s", err, cfg.LogPoll)
	}
	for _, bad := range []struct{ k, v string }{{app.EnvLogPoll, "500ms"}, {app.EnvLogPoll, "2m"}, {app.EnvLogFollowFor, "2h"}, {app.EnvLogFollowFor, "x"}} {
		if _, err := app.Load(app.ModeServe, env(with(bad.k, bad.v))); err == nil || !strings.Contains(err.Error(), bad.k) {
			t.Errorf("%s=%s: %v", bad.k, bad.v, err)
		}
	}
}
