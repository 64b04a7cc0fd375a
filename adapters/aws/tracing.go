package aws

import (
	"context"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/devpilot/devpilot/adapters/telemetry"
)

// tracingID names the tracing middleware in the SDK's stacks.
const tracingID = "devpilot.Tracing"

// callSpans puts a span around each SDK call.
type callSpans struct{ tracer trace.Tracer }

func newCallSpans(tp trace.TracerProvider) *callSpans {
	return &callSpans{tracer: tp.Tracer("github.com/devpilot/devpilot/adapters/aws")}
}

// addTo adds the tracing middleware first in an operation's initialize
// step, so that the span covers the call's retries. It is a function of
// Options.APIOptions.
func (c *callSpans) addTo(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc(tracingID, c.handle), middleware.Before)
}

func (c *callSpans) handle(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	service, operation := awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx)
	ctx, span := c.tracer.Start(ctx, service+"."+operation, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("rpc.system", "aws-api"),
			attribute.String("rpc.service", service),
			attribute.String("rpc.method", operation),
			attribute.String("cloud.region", awsmiddleware.GetRegion(ctx)),
		))
	defer span.End()
	out, md, err := next.HandleInitialize(ctx, in)
	if err != nil {
		telemetry.RecordError(span, callError(err))
	}
	return out, md, err
}
