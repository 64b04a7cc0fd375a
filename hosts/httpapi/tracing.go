package httpapi

import (
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/devpilot/devpilot/adapters/telemetry"
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

// start returns r under a new server span, recorded in info. The span
// follows the HTTP server span convention (semantic-conventions
// docs/http/http-spans.md): http.request.method (_OTHER for a method it
// does not know, the original in http.request.method_original),
// url.path, url.scheme, url.query (secrets REDACTED), server.address and
// server.port (of the Host header), client.address and network.peer.*
// (the connection's peer: devpilot believes no forwarding header, see
// clientAddr), user_agent.original and network.protocol.version.
func (t *requestSpans) start(r *http.Request, info *reqInfo) *http.Request {
	if t == nil {
		return r
	}
	ctx := t.propagator.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	method := telemetry.KnownMethod(r.Method)
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	attrs := []attribute.KeyValue{
		semconv.HTTPRequestMethodKey.String(method),
		semconv.URLPath(r.URL.Path),
		semconv.URLScheme(scheme),
		semconv.NetworkProtocolVersion(protocolVersion(r)),
		attribute.String("devpilot.request_id", info.id),
	}
	if method != r.Method {
		attrs = append(attrs, semconv.HTTPRequestMethodOriginal(r.Method))
	}
	if r.URL.RawQuery != "" {
		attrs = append(attrs, semconv.URLQuery(telemetry.RedactQuery(r.URL.RawQuery)))
	}
	if ua := r.UserAgent(); ua != "" {
		attrs = append(attrs, semconv.UserAgentOriginal(ua))
	}
	attrs = append(attrs, hostAttributes(r.Host, scheme)...)
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		addr := ap.Addr().Unmap().String()
		attrs = append(attrs, semconv.ClientAddress(addr), semconv.NetworkPeerAddress(addr), semconv.NetworkPeerPort(int(ap.Port())))
	}
	ctx, span := t.tracer.Start(ctx, telemetry.SpanName(r.Method, ""), trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	info.span = span
	return r.WithContext(ctx)
}

// hostAttributes are server.address and server.port of a Host header, the
// port implied by the scheme when it names none.
func hostAttributes(host, scheme string) []attribute.KeyValue {
	if host == "" {
		return nil
	}
	name, port, err := net.SplitHostPort(host)
	if err != nil {
		name, port = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), ""
	}
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	attrs := []attribute.KeyValue{semconv.ServerAddress(name)}
	if n, err := strconv.Atoi(port); err == nil {
		attrs = append(attrs, semconv.ServerPort(n))
	}
	return attrs
}

// end names the span "{method} {route}" and ends it with the response's
// status: http.response.status_code when one was sent, status Error for a
// 5xx (unset for a 4xx, as the convention has it for server spans), and
// for a request its client gave up on (no answer, or an answer cut off),
// status Error with error.type "canceled", as the convention's Status
// section says of a request "cancelled" before its response was sent in
// full. sent is the status written to the client, 0 for none; status is
// the request's outcome as logged (499 for a client gone).
func (t *requestSpans) end(r *http.Request, info *reqInfo, sent, status int) {
	if info.span == nil {
		return
	}
	span := info.span
	if info.route != routeUnmatched {
		span.SetName(telemetry.SpanName(r.Method, info.route))
		span.SetAttributes(semconv.HTTPRoute(info.route))
	}
	if sent != 0 {
		span.SetAttributes(semconv.HTTPResponseStatusCode(sent))
	}
	if info.userID != "" {
		span.SetAttributes(semconv.EnduserID(info.userID))
	}
	switch {
	case info.clientGone:
		span.SetAttributes(semconv.ErrorTypeKey.String(telemetry.OutcomeCanceled))
		span.SetStatus(codes.Error, "the client closed the request")
	case status >= 500:
		span.SetAttributes(semconv.ErrorTypeKey.String(strconv.Itoa(status)))
		span.SetStatus(codes.Error, "")
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
