package github_test

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/devpilot/devpilot/adapters/github"
	"github.com/devpilot/devpilot/hosts/sandbox/fakegithub"
	"github.com/devpilot/devpilot/ports"
)

// githubCalls is the devpilot_github_calls_total child of the labels given,
// found by registering an equal vector on reg (which returns the one the
// adapter registered).
func githubCalls(t *testing.T, reg *prometheus.Registry, operation, outcome string) float64 {
	t.Helper()
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "devpilot_github_calls_total",
		Help: "GitHub API requests, by operation (the adapter method: list_commits, read_file, ...) and outcome (ok, canceled or the error's kind: rate_limited, timeout, not_found, unavailable, upstream, ...).",
	}, []string{"operation", "outcome"})
	err := reg.Register(vec)
	if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
		return testutil.ToFloat64(are.ExistingCollector.(*prometheus.CounterVec).WithLabelValues(operation, outcome))
	}
	t.Fatalf("devpilot_github_calls_total is not registered (%v)", err)
	return 0
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	f := newFixture(t, func(c *github.Config) { c.Metrics = reg })
	// A second client on the same registry shares the series.
	f2 := newFixture(t, func(c *github.Config) { c.Metrics = reg })
	f.fake.AddRepo("acme", "api", fakegithub.VisibleTo("alice")).Commit(fakegithub.Commit{Message: "x"})
	ctx := context.Background()

	if _, _, err := f.client.ListCommits(ctx, aliceToken, "acme", "api", ports.Page{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.client.ListCommits(ctx, aliceToken, "acme", "nope", ports.Page{}); ports.KindOf(err) != ports.KindNotFound {
		t.Fatalf("error %v, want not_found", err)
	}
	if _, err := f2.client.User(ctx, aliceToken); err != nil {
		t.Fatal(err)
	}
	f2.fake.Fail("", 503)
	if _, err := f2.client.User(ctx, aliceToken); ports.KindOf(err) != ports.KindUnavailable {
		t.Fatalf("error %v, want unavailable", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := f2.client.User(cancelled, aliceToken); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if _, err := f.client.Exchange(ctx, "bad-code", verifier, redirect); ports.KindOf(err) != ports.KindInvalid {
		t.Fatalf("error %v, want invalid", err)
	}

	for _, tc := range []struct {
		operation, outcome string
		want               float64
	}{
		{"list_commits", "ok", 1},
		{"list_commits", "not_found", 1},
		{"user", "ok", 1},
		{"user", "unavailable", 1},
		{"user", "canceled", 1},
		{"exchange", "invalid", 1},
	} {
		if got := githubCalls(t, reg, tc.operation, tc.outcome); got != tc.want {
			t.Errorf("calls{%s,%s} = %v, want %v", tc.operation, tc.outcome, got, tc.want)
		}
	}
	if n := testutil.CollectAndCount(reg, "devpilot_github_call_duration_seconds"); n != 3 {
		t.Errorf("%d duration series, want 3 (list_commits, user, exchange)", n)
	}
}
