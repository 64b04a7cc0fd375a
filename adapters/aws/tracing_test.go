package aws_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	awsadapter "github.com/devpilot/devpilot/adapters/aws"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeaws"
	"github.com/devpilot/devpilot/ports"
)

// Each SDK call is one client span "<service>.<operation>" under the
// caller's span, its retries included, failed with the kind of its error.
func TestTracing(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	e := newEnv(t, func(o *awsadapter.Options) { o.Tracer = tp })
	e.fake.Account(userAccount).Cluster("prod")
	ctx, parent := tp.Tracer("test").Start(context.Background(), "request")
	if _, err := e.p.ListServices(ctx, keyCreds(), "prod"); err != nil {
		t.Fatal(err)
	}
	e.fake.Inject(fakeaws.ServiceECS, "ListServices", fakeaws.Throttling())
	if _, err := e.p.ListServices(ctx, keyCreds(), "prod"); ports.KindOf(err) != ports.KindRateLimited {
		t.Fatalf("error %v, want rate_limited", err)
	}
	parent.End()

	var calls []sdktrace.ReadOnlySpan
	for _, sp := range rec.Ended() {
		if sp.Name() == "ECS.ListServices" {
			calls = append(calls, sp)
		}
	}
	if len(calls) != 2 {
		t.Fatalf("%d ECS.ListServices spans, want 2 (one per call, retries included)", len(calls))
	}
	for i, sp := range calls {
		if sp.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("span %d is not under the caller's", i)
		}
	}
	if calls[0].Status().Code.String() == "Error" || calls[1].Status().Code.String() != "Error" {
		t.Errorf("statuses %v, %v; want ok then error", calls[0].Status(), calls[1].Status())
	}
	for _, kv := range calls[1].Attributes() {
		if kv.Key == "error.type" && kv.Value.AsString() != string(ports.KindRateLimited) {
			t.Errorf("error.type %s", kv.Value.AsString())
		}
	}
}

// Every SDK call's span follows the AWS SDK convention, whatever the
// service (Cost Explorer and Amplify spans were once named "." with empty
// ids): "Service.Operation", rpc.system aws-api, rpc.service and rpc.method
// as the SDK names them, cloud.region and the request id the service
// answered.
func TestTracingConventionEveryService(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	e := newEnv(t, func(o *awsadapter.Options) { o.Tracer = tp })
	seedCosts(e.fake)
	e.fake.Account(userAccount).Cluster("prod").App(fakeaws.App{ID: "d1", Name: "site", Branches: []fakeaws.Branch{{Name: "main"}}})
	ctx := context.Background()
	if _, err := e.p.Costs(ctx, keyCreds(), ports.CostQuery{Start: day(1), End: day(3), GroupBy: "SERVICE"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.p.ListApps(ctx, keyCreds()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.p.ListServices(ctx, keyCreds(), "prod"); err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{
		"Cost Explorer.GetCostAndUsage": {"Cost Explorer", "GetCostAndUsage"},
		"Amplify.ListApps":              {"Amplify", "ListApps"},
		"ECS.ListServices":              {"ECS", "ListServices"},
	}
	seen := map[string]bool{}
	for _, sp := range rec.Ended() {
		w, ok := want[sp.Name()]
		if !ok {
			continue
		}
		seen[sp.Name()] = true
		if sp.SpanKind().String() != "client" {
			t.Errorf("%s: kind %s", sp.Name(), sp.SpanKind())
		}
		got := map[string]string{}
		for _, kv := range sp.Attributes() {
			got[string(kv.Key)] = kv.Value.String()
		}
		for k, v := range map[string]string{"rpc.system": "aws-api", "rpc.service": w[0], "rpc.method": w[1], "cloud.region": region} {
			if got[k] != v {
				t.Errorf("%s: %s = %q, want %q (all: %v)", sp.Name(), k, got[k], v, got)
			}
		}
		if got["aws.request_id"] == "" {
			t.Errorf("%s: no aws.request_id (all: %v)", sp.Name(), got)
		}
	}
	for name := range want {
		if !seen[name] {
			var names []string
			for _, sp := range rec.Ended() {
				names = append(names, sp.Name())
			}
			t.Errorf("no span %q among %q", name, names)
		}
	}
}
