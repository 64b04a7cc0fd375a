package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.37.0"
	"go.opentelemetry.io/otel/trace"
)

// The OpenTelemetry variables devpilot reads itself (the SDK and the OTLP
// exporter read the others: OTEL_TRACES_SAMPLER, OTEL_BSP_*,
// OTEL_RESOURCE_ATTRIBUTES, OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT,
// _COMPRESSION, _CERTIFICATE, ...).
const (
	EnvOTelDisabled       = "OTEL_SDK_DISABLED"
	EnvOTelTraces         = "OTEL_TRACES_EXPORTER"
	EnvOTelEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvOTelTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvOTelProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvOTelTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
)

// TracingConfig is what the OTEL_* variables say of traces. The zero value
// traces nothing.
type TracingConfig struct {
	// OTLP exports spans over OTLP/HTTP (protobuf) to Endpoint.
	OTLP bool
	// Endpoint is the full URL spans are posted to ("…/v1/traces"); ""
	// leaves it to the exporter (http://localhost:4318/v1/traces).
	Endpoint string
	// Console writes spans as JSON lines to the process's standard output.
	Console bool
}

// Enabled reports whether any exporter is configured.
func (c TracingConfig) Enabled() bool { return c.OTLP || c.Console }

// TracingFromEnv reads the standard variables: tracing is off unless an
// exporter is set, by OTEL_TRACES_EXPORTER (otlp, console, or both
// comma-separated; none for off) or, without it, by an OTLP endpoint
// (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, or OTEL_EXPORTER_OTLP_ENDPOINT to
// which /v1/traces is added). OTEL_SDK_DISABLED=true turns it off whatever
// else is set. Spans go over http/protobuf only: another
// OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL is an error, as are an unknown
// exporter and an endpoint that is not an http(s) URL. Each error names its
// variable.
func TracingFromEnv(getenv func(string) string) (TracingConfig, error) {
	var c TracingConfig
	if strings.EqualFold(strings.TrimSpace(getenv(EnvOTelDisabled)), "true") {
		return c, nil
	}
	var errs []error
	endpoint := strings.TrimSpace(getenv(EnvOTelTracesEndpoint))
	name := EnvOTelTracesEndpoint
	if endpoint == "" {
		if base := strings.TrimSpace(getenv(EnvOTelEndpoint)); base != "" {
			endpoint, name = strings.TrimRight(base, "/")+"/v1/traces", EnvOTelEndpoint
		}
	}
	if endpoint != "" {
		if u, err := url.Parse(endpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("%s: must be an http or https URL", name))
		}
	}
	exporters := strings.TrimSpace(getenv(EnvOTelTraces))
	if exporters == "" && endpoint != "" {
		exporters = "otlp"
	}
	for e := range strings.SplitSeq(exporters, ",") {
		switch strings.TrimSpace(e) {
		case "", "none":
		case "otlp":
			c.OTLP = true
		case "console":
			c.Console = true
		default:
			errs = append(errs, fmt.Errorf("%s: unknown exporter %q (want otlp, console or none)", EnvOTelTraces, strings.TrimSpace(e)))
		}
	}
	if c.OTLP {
		c.Endpoint = endpoint
		for _, v := range []string{EnvOTelTracesProtocol, EnvOTelProtocol} {
			if p := strings.TrimSpace(getenv(v)); p != "" {
				if p != "http/protobuf" {
					errs = append(errs, fmt.Errorf("%s: devpilot exports traces over http/protobuf only, not %q", v, p))
				}
				break
			}
		}
	}
	if len(errs) > 0 {
		return TracingConfig{}, errors.Join(errs...)
	}
	return c, nil
}

// Tracing is the process's tracer provider, or nothing when tracing is off:
// every instrumented piece asks Provider, and instruments nothing when it is
// nil, so that tracing costs nothing when off.
type Tracing struct {
	sdk        *sdktrace.TracerProvider
	propagator propagation.TextMapPropagator
}

// NewTracing starts the tracer provider cfg describes, with the service
// name devpilot (OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override),
// version and the SDK's sampler (OTEL_TRACES_SAMPLER, by default every
// trace a caller did not decide against). Spans are batched to the
// exporters; console ones are written to stdout. With cfg off it returns a
// Tracing whose Provider is nil. Errors: the exporter's, for a bad
// configuration.
func NewTracing(ctx context.Context, cfg TracingConfig, version string, stdout io.Writer) (*Tracing, error) {
	t := &Tracing{propagator: propagation.TraceContext{}}
	if !cfg.Enabled() {
		return t, nil
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName("devpilot"), semconv.ServiceVersion(version)),
		resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil && res == nil {
		return nil, fmt.Errorf("tracing resource: %w", err)
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if cfg.OTLP {
		var eo []otlptracehttp.Option
		if cfg.Endpoint != "" {
			eo = append(eo, otlptracehttp.WithEndpointURL(cfg.Endpoint))
		}
		exp, err := otlptracehttp.New(ctx, eo...)
		if err != nil {
			return nil, fmt.Errorf("OTLP trace exporter: %w", err)
		}
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	if cfg.Console {
		exp, err := stdouttrace.New(stdouttrace.WithWriter(stdout))
		if err != nil {
			return nil, fmt.Errorf("console trace exporter: %w", err)
		}
		opts = append(opts, sdktrace.WithBatcher(exp))
	}
	t.sdk = sdktrace.NewTracerProvider(opts...)
	return t, nil
}

// Provider returns the tracer provider, nil when tracing is off.
func (t *Tracing) Provider() trace.TracerProvider {
	if t == nil || t.sdk == nil {
		return nil
	}
	return t.sdk
}

// Propagator returns the W3C trace-context propagator. Baggage is not
// propagated: what a client puts in it would otherwise be forwarded to the
// model's, GitHub's and AWS's endpoints with every outbound request.
func (t *Tracing) Propagator() propagation.TextMapPropagator {
	if t == nil || t.propagator == nil {
		return propagation.TraceContext{}
	}
	return t.propagator
}

// Shutdown exports the spans still buffered and stops the provider; it
// does nothing when tracing is off.
func (t *Tracing) Shutdown(ctx context.Context) error {
	if t == nil || t.sdk == nil {
		return nil
	}
	return t.sdk.Shutdown(ctx)
}

// Transport returns base (http.DefaultTransport when nil) with a client
// span around each request, under the caller's span, and the trace context
// sent along; base itself when tracing is off. The spans follow the HTTP
// client span convention (semantic-conventions docs/http/http-spans.md):
// named by the method alone ("POST"), since no low-cardinality URL
// template is known, with http.request.method, server.address,
// server.port, url.full and http.response.status_code. url.full carries no
// credentials: the user and password of the URL are dropped and the values
// of query parameters that may hold a secret (see RedactQuery) are
// REDACTED. peer names the remote in devpilot.peer ("openai", "github").
func (t *Tracing) Transport(base http.RoundTripper, peer string) http.RoundTripper {
	tp := t.Provider()
	if tp == nil {
		return base
	}
	if base == nil {
		base = http.DefaultTransport
	}
	return otelhttp.NewTransport(redactingTransport{next: base},
		otelhttp.WithTracerProvider(tp),
		otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()),
		otelhttp.WithPropagators(t.Propagator()),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return clientSpanName(r.Method) }),
		otelhttp.WithSpanOptions(trace.WithAttributes(attribute.String("devpilot.peer", peer))),
	)
}

// clientSpanName is an HTTP span's name without a target: the method, or
// HTTP for a method the convention does not know.
func clientSpanName(method string) string {
	if knownMethods[method] {
		return method
	}
	return "HTTP"
}

// knownMethods are the methods of RFC 9110 and PATCH, the ones the HTTP
// convention names spans and http.request.method by.
var knownMethods = map[string]bool{
	http.MethodConnect: true, http.MethodDelete: true, http.MethodGet: true, http.MethodHead: true,
	http.MethodOptions: true, http.MethodPatch: true, http.MethodPost: true, http.MethodPut: true, http.MethodTrace: true,
}

// KnownMethod returns method when the HTTP convention knows it, else
// "_OTHER", the value of http.request.method it prescribes for any other.
func KnownMethod(method string) string {
	if knownMethods[method] {
		return method
	}
	return "_OTHER"
}

// SpanName returns the name of an HTTP span: "{method} {target}", or the
// method alone without a target; HTTP stands for a method the convention
// does not know.
func SpanName(method, target string) string {
	name := clientSpanName(method)
	if target == "" {
		return name
	}
	return name + " " + target
}

// redactingTransport sets url.full on the request's client span (started
// by otelhttp around it) with RedactQuery applied.
type redactingTransport struct{ next http.RoundTripper }

func (t redactingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if span := trace.SpanFromContext(r.Context()); span.IsRecording() && r.URL != nil && r.URL.RawQuery != "" {
		u := *r.URL
		u.User = nil
		u.RawQuery = RedactQuery(u.RawQuery)
		span.SetAttributes(attribute.String("url.full", u.String()))
	}
	return t.next.RoundTrip(r)
}

// sensitiveQueryKeys are the query parameters whose values RedactQuery
// replaces: the convention's (AWSAccessKeyId, Signature, sig,
// X-Goog-Signature) and those that commonly carry a credential.
var sensitiveQueryKeys = map[string]bool{
	"awsaccesskeyid": true, "signature": true, "sig": true, "x-goog-signature": true,
	"x-amz-signature": true, "x-amz-credential": true, "x-amz-security-token": true,
	"token": true, "access_token": true, "refresh_token": true, "id_token": true,
	"code": true, "state": true, "key": true, "api_key": true, "api-key": true, "apikey": true,
	"client_secret": true, "secret": true, "password": true, "ticket": true,
}

// RedactQuery returns the query string q with the value of every parameter
// that may hold a credential replaced by REDACTED, the keys kept
// ("color=blue&sig=REDACTED"), as the HTTP convention asks of url.full and
// url.query. A query that does not parse is REDACTED whole.
func RedactQuery(q string) string {
	if q == "" {
		return ""
	}
	parts := strings.Split(q, "&")
	for i, p := range parts {
		k, _, hasValue := strings.Cut(p, "=")
		key, err := url.QueryUnescape(k)
		if err != nil {
			return "REDACTED"
		}
		if hasValue && sensitiveQueryKeys[strings.ToLower(key)] {
			parts[i] = k + "=REDACTED"
		}
	}
	return strings.Join(parts, "&")
}

// Client returns a copy of c (a new client when nil) whose transport is
// traced (see Transport); c itself when tracing is off.
func (t *Tracing) Client(c *http.Client, peer string) *http.Client {
	if t.Provider() == nil {
		return c
	}
	var cp http.Client
	if c != nil {
		cp = *c
	}
	cp.Transport = t.Transport(cp.Transport, peer)
	return &cp
}
