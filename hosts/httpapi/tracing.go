package httpapi

import (
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// requestSpans starts a server span per request, under the caller's trace
// when the request carries one (W3C traceparent), and ends it with the
// route and status once the request is over. otelhttp's handler is not
// used: it wraps the ResponseWriter without Unwrap, which would hide the
// connection from http.ResponseController (the body deadlines, the SSE
// flushes), and observe knows the route and status already.
type requestSpans struct {
	tracer     trace.Tracer
	propagator propagation.TextMapPropagator
}

// newRequestSpans returns nil, which traces nothing, for a nil tp.
func newRequestSpans(tp trace.TracerProvider, p propagation.TextMapPropagator) *requestSpans {
	if tp == nil {
		return nil
	}
	if p == nil {
		p = propagation.TraceContext{}
	}
	return &requestSpans{tracer: tp.Tracer("github.com/devpilot/devpilot/hosts/httpapi"), propagator: p}
}

// start returns r under a new server span, recorded in info.
func (t *requestSpans) start(r *http.Request, info *reqInfo) *http.Request {
	if t == nil {
		return r
	}
	ctx := t.propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	ctx, span := t.tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(
			attribute.String("http.request.method", r.Method),
			attribute.String("url.path", r.URL.Path),
			attribute.String("user_agent.original", r.UserAgent()),
			attribute.String("network.protocol.version", protocolVersion(r)),
			attribute.String("devpilot.request_id", info.id),
		))
	info.span = span
	return r.WithContext(ctx)
}

// end names the span by its route and ends it with the response's status.
func (t *requestSpans) end(r *http.Request, info *reqInfo, status int) {
	if info.span == nil {
		return
	}
	span := info.span
	if info.route != routeUnmatched {
		span.SetName(r.Method + " " + info.route)
		span.SetAttributes(attribute.String("http.route", info.route))
	}
	span.SetAttributes(attribute.Int("http.response.status_code", status))
	if info.userID != "" {
		span.SetAttributes(attribute.String("enduser.id", info.userID))
	}
	if status >= 500 && status != statusClientGone {
		span.SetStatus(codes.Error, http.StatusText(status))
	}
	span.End()
}

func protocolVersion(r *http.Request) string {
	switch r.ProtoMajor {
	case 2:
		return "2"
	case 3:
		return "3"
	}
	return "1.1"
}
