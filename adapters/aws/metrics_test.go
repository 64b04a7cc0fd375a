package aws_test

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	awsadapter "github.com/devpilot/devpilot/adapters/aws"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeaws"
	"github.com/devpilot/devpilot/ports"
)

// awsCalls is the devpilot_aws_calls_total child of the labels given,
// found by registering an equal vector on reg (which returns the one the
// adapter registered).
func awsCalls(t *testing.T, reg *prometheus.Registry, service, operation, outcome string) float64 {
	t.Helper()
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "devpilot_aws_calls_total",
		Help: "AWS API calls (all attempts of one call counted once), by service, operation and outcome (ok, canceled or the error's kind: rate_limited, timeout, not_found, invalid, upstream, ...).",
	}, []string{"service", "operation", "outcome"})
	if err := reg.Register(vec); err != nil {
		if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
			return testutil.ToFloat64(are.ExistingCollector.(*prometheus.CounterVec).WithLabelValues(service, operation, outcome))
		}
		t.Fatal(err)
	}
	t.Fatal("devpilot_aws_calls_total is not registered")
	return 0
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	e := newEnv(t, func(o *awsadapter.Options) { o.Metrics = reg })
	e.fake.Account(userAccount).Cluster("prod")
	ctx := context.Background()

	if _, err := e.p.ListServices(ctx, keyCreds(), "prod"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.p.ListServices(ctx, keyCreds(), "missing"); ports.KindOf(err) != ports.KindNotFound {
		t.Fatalf("error %v, want not_found", err)
	}
	e.fake.Inject(fakeaws.ServiceECS, "ListServices", fakeaws.Throttling())
	if _, err := e.p.ListServices(ctx, keyCreds(), "prod"); ports.KindOf(err) != ports.KindRateLimited {
		t.Fatalf("error %v, want rate_limited", err)
	}
	// A second Provider on the same registry shares the series.
	e2 := newEnv(t, func(o *awsadapter.Options) { o.Metrics = reg })
	if err := e2.p.Probe(ctx, roleCreds()); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel := context.WithCancel(ctx)
	cancel()
	_ = e2.p.Probe(ctx2, keyCreds())

	for _, tc := range []struct {
		service, operation, outcome string
		want                        float64
	}{
		{"ECS", "ListServices", "ok", 1},
		{"ECS", "ListServices", "not_found", 1},
		// Three attempts, one call.
		{"ECS", "ListServices", "rate_limited", 1},
		{"STS", "AssumeRole", "ok", 1},
		// Probe lists clusters with the role's credentials.
		{"ECS", "ListClusters", "ok", 1},
		{"ECS", "ListClusters", "canceled", 1},
	} {
		if got := awsCalls(t, reg, tc.service, tc.operation, tc.outcome); got != tc.want {
			t.Errorf("calls{%s,%s,%s} = %v, want %v", tc.service, tc.operation, tc.outcome, got, tc.want)
		}
	}
	if n := testutil.CollectAndCount(reg, "devpilot_aws_call_duration_seconds"); n < 3 {
		t.Errorf("%d duration series, want at least 3", n)
	}
}
