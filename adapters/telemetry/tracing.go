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
// span around each request, named "<peer> <METHOD>", under the caller's
// span, and the trace context sent along; base itself when tracing is off.
func (t *Tracing) Transport(base http.RoundTripper, peer string) http.RoundTripper {
	tp := t.Provider()
	if tp == nil {
		return base
	}
	if base == nil {
		base = http.DefaultTransport
	}
	return otelhttp.NewTransport(base,
		otelhttp.WithTracerProvider(tp),
		otelhttp.WithMeterProvider(metricnoop.NewMeterProvider()),
		otelhttp.WithPropagators(t.Propagator()),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return peer + " " + r.Method }),
	)
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
