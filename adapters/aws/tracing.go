package aws

import (
	"context"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/devpilot/devpilot/adapters/telemetry"
)

// The tracing middlewares' names in the SDK's stacks.
const (
	tracingID       = "devpilot.Tracing"
	tracingRegionID = "devpilot.TracingRegion"
)

// The attributes of the AWS SDK client span convention
// (semantic-conventions docs/cloud-providers/aws-sdk.md). The RPC keys are
// spelt out: the semconv Go packages from v1.39.0 on no longer declare
// rpc.system and rpc.service, which that convention still requires.
const (
	attrRPCSystem    = attribute.Key("rpc.system")
	attrRPCService   = attribute.Key("rpc.service")
	attrRPCMethod    = attribute.Key("rpc.method")
	attrCloudRegion  = attribute.Key("cloud.region")
	attrAWSRequestID = attribute.Key("aws.request_id")
	rpcSystemAWS     = "aws-api"
)

// callNames returns the service id and the operation name of the SDK call
// ctx is in, as the SDK has them ("Cost Explorer", "GetCostAndUsage"). The
// SDK puts both in the context before the operation's stack runs (smithy's
// stack values); the aws middleware's copies are only set by a middleware
// of the initialize step that runs after devpilot's, so they are the
// fallback.
func callNames(ctx context.Context) (service, operation string) {
	service = middleware.GetServiceID(ctx)
	if service == "" {
		service = awsmiddleware.GetServiceID(ctx)
	}
	operation = middleware.GetOperationName(ctx)
	if operation == "" {
		operation = awsmiddleware.GetOperationName(ctx)
	}
	return service, operation
}

// callSpans puts a span around each SDK call.
type callSpans struct{ tracer trace.Tracer }

func newCallSpans(tp trace.TracerProvider) *callSpans {
	return &callSpans{tracer: tp.Tracer("github.com/devpilot/devpilot/adapters/aws")}
}

// addTo adds the tracing middleware first in an operation's initialize
// step, so that the span covers the call's retries, and a second one last
// in that step, which adds the region the SDK resolved by then. It is a
// function of Options.APIOptions.
func (c *callSpans) addTo(stack *middleware.Stack) error {
	if err := stack.Initialize.Add(middleware.InitializeMiddlewareFunc(tracingID, c.handle), middleware.Before); err != nil {
		return err
	}
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc(tracingRegionID, addRegion), middleware.After)
}

// handle starts the call's client span, named "Service.Operation" with the
// rpc.* attributes of the AWS SDK convention, and ends it with the request
// id the service answered and the call's error.
func (c *callSpans) handle(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	service, operation := callNames(ctx)
	attrs := []attribute.KeyValue{
		attrRPCSystem.String(rpcSystemAWS),
		attrRPCService.String(service),
		attrRPCMethod.String(operation),
	}
	if region := awsmiddleware.GetRegion(ctx); region != "" {
		attrs = append(attrs, attrCloudRegion.String(region))
	}
	ctx, span := c.tracer.Start(ctx, service+"."+operation, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	defer span.End()
	out, md, err := next.HandleInitialize(ctx, in)
	if id, ok := awsmiddleware.GetRequestIDMetadata(md); ok && id != "" {
		span.SetAttributes(attrAWSRequestID.String(id))
	}
	if err != nil {
		telemetry.RecordError(span, callError(err))
	}
	return out, md, err
}

// addRegion sets cloud.region on the call's span once the SDK has put the
// client's region among the stack's values.
func addRegion(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	if region := awsmiddleware.GetRegion(ctx); region != "" {
		trace.SpanFromContext(ctx).SetAttributes(attrCloudRegion.String(region))
	}
	return next.HandleInitialize(ctx, in)
}
