package aws_test

import (
	"context"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	awsadapter "github.com/devpilot/devpilot/adapters/aws"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fakeaws"
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
