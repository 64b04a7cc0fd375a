package telemetry_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/devpilot/devpilot/adapters/telemetry"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fakeotlp"
)

func TestTracingFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		want telemetry.TracingConfig
		err  string // a variable the error names; "" for none
	}{
		{name: "off by default", env: nil},
		{name: "an endpoint turns OTLP on", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/"},
			want: telemetry.TracingConfig{OTLP: true, Endpoint: "http://collector:4318/v1/traces"}},
		{name: "the traces endpoint is used as it is", env: map[string]string{
			"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://b/otlp/traces"},
			want: telemetry.TracingConfig{OTLP: true, Endpoint: "https://b/otlp/traces"}},
		{name: "otlp with the exporter's default endpoint", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"},
			want: telemetry.TracingConfig{OTLP: true}},
		{name: "console", env: map[string]string{"OTEL_TRACES_EXPORTER": "console"}, want: telemetry.TracingConfig{Console: true}},
		{name: "both", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp, console", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"},
			want: telemetry.TracingConfig{OTLP: true, Console: true, Endpoint: "http://c:4318/v1/traces"}},
		{name: "none wins over an endpoint", env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}},
		{name: "the SDK disabled", env: map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}},
		{name: "http/protobuf is fine", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"},
			want: telemetry.TracingConfig{OTLP: true}},
		{name: "grpc is refused", env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"},
			err: "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"},
		{name: "an unknown exporter", env: map[string]string{"OTEL_TRACES_EXPORTER": "jaeger"}, err: "OTEL_TRACES_EXPORTER"},
		{name: "an endpoint that is no URL", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, err: "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{name: "a traces endpoint with a bad scheme", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "ftp://c/v1/traces"}, err: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := telemetry.TracingFromEnv(func(k string) string { return tc.env[k] })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one naming %s", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
			if got.Enabled() != (tc.want.OTLP || tc.want.Console) {
				t.Fatalf("Enabled %v", got.Enabled())
			}
		})
	}
}

// Off, nothing is instrumented: no provider, and the transports and clients
// handed in come back as they are.
func TestTracingOffInstrumentsNothing(t *testing.T) {
	tr, err := telemetry.NewTracing(t.Context(), telemetry.TracingConfig{}, "v1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Provider() != nil {
		t.Fatal("a provider with tracing off")
	}
	base := &http.Transport{}
	if tr.Transport(base, "x") != http.RoundTripper(base) {
		t.Fatal("the transport was wrapped with tracing off")
	}
	c := &http.Client{}
	if tr.Client(c, "x") != c {
		t.Fatal("the client was replaced with tracing off")
	}
	if err := tr.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	var nilTracing *telemetry.Tracing
	if nilTracing.Provider() != nil || nilTracing.Shutdown(t.Context()) != nil {
		t.Fatal("a nil Tracing must trace nothing")
	}
}

// On, the real exporter posts spans over OTLP/HTTP to the endpoint, and
// Shutdown flushes what is buffered.
func TestTracingExportsOverOTLP(t *testing.T) {
	collector := fakeotlp.New(t)
	tr, err := telemetry.NewTracing(t.Context(), telemetry.TracingConfig{OTLP: true, Endpoint: collector.TracesURL()}, "v1.2.3", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, span := tr.Provider().Tracer("test").Start(t.Context(), "outer")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Traceparent") == "" {
			t.Error("the traced client sent no traceparent")
		}
	}))
	defer srv.Close()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	resp, err := tr.Client(nil, "peer").Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	span.End()
	if err := tr.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans := collector.Spans()
	tree := fakeotlp.NewTree(spans)
	var outer, client fakeotlp.Span
	for _, sp := range spans {
		switch sp.Name {
		case "outer":
			outer = sp
		case "GET":
			client = sp
		}
	}
	if outer.SpanID == "" || client.SpanID == "" || !tree.Under(client, outer.SpanID) {
		t.Fatalf("spans:\n%s", fakeotlp.Describe(spans))
	}
	if outer.Service != "devpilot" {
		t.Errorf("service.name %q", outer.Service)
	}
}

// TraceLLM records the model, the tokens and the error's kind of a call.
func TestTraceLLM(t *testing.T) {
	model := fakeopenai.New(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	llm := telemetry.TraceLLM(newClient(t, model), tp, "gpt-test", "https://llm.example.com/v1")
	if c := newClient(t, model); telemetry.TraceLLM(c, nil, "gpt-test", "") != ports.LLM(c) {
		t.Fatal("TraceLLM wrapped the model with tracing off")
	}

	model.Enqueue(fakeopenai.TextChunks("Hel", "lo"))
	if _, err := llm.Chat(t.Context(), userSays("hi"), func(string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	model.Enqueue(fakeopenai.RateLimited(time.Second))
	sampled := userSays("hi")
	zero, seed := 0.0, int64(7)
	sampled.Temperature, sampled.Seed = &zero, &seed
	_, err := llm.Chat(t.Context(), sampled, nil)
	if !errors.Is(err, ports.ErrRateLimited) {
		t.Fatalf("err %v", err)
	}
	ended := rec.Ended()
	if len(ended) != 2 {
		t.Fatalf("%d spans", len(ended))
	}
	attrs := map[string]string{}
	for _, kv := range ended[0].Attributes() {
		attrs[string(kv.Key)] = kv.Value.String()
	}
	if ended[0].Name() != "chat gpt-test" || attrs["gen_ai.usage.output_tokens"] == "0" || attrs["gen_ai.response.model"] == "" {
		t.Errorf("first span %q %v", ended[0].Name(), attrs)
	}
	if _, ok := attrs["gen_ai.request.temperature"]; ok {
		t.Errorf("first span has a temperature, though none was asked for: %v", attrs)
	}
	for k, v := range map[string]string{
		"gen_ai.provider.name": "openai", "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-test",
		"server.address": "llm.example.com", "server.port": "443", "gen_ai.request.stream": "true",
	} {
		if attrs[k] != v {
			t.Errorf("first span: %s = %q, want %q (%v)", k, attrs[k], v, attrs)
		}
	}
	if attrs["gen_ai.response.id"] == "" {
		t.Errorf("first span has no gen_ai.response.id: %v", attrs)
	}
	for _, kv := range ended[0].Attributes() {
		if kv.Key == "gen_ai.response.finish_reasons" && (kv.Value.Type().String() != "STRINGSLICE" || kv.Value.AsStringSlice()[0] != "stop") {
			t.Errorf("gen_ai.response.finish_reasons is %s %v, want the string array [stop]", kv.Value.Type(), kv.Value.String())
		}
	}
	failed := ended[1]
	sampling := map[string]string{}
	for _, kv := range failed.Attributes() {
		sampling[string(kv.Key)] = kv.Value.String()
	}
	if sampling["gen_ai.request.temperature"] != "0" || sampling["gen_ai.request.seed"] != "7" {
		t.Errorf("second span's sampling: %v", sampling)
	}
	if failed.Status().Code.String() != "Error" {
		t.Errorf("failed call status %v", failed.Status())
	}
	var kind string
	for _, kv := range failed.Attributes() {
		if kv.Key == "error.type" {
			kind = kv.Value.String()
		}
	}
	if kind != string(ports.KindRateLimited) {
		t.Errorf("error.type %q", kind)
	}
}

// A call its caller gave up on is an error of the call (status Error,
// error.type canceled) described as canceled, never as an internal error.
func TestTraceLLMCanceled(t *testing.T) {
	model := fakeopenai.New(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	llm := telemetry.TraceLLM(newClient(t, model), tp, "gpt-test", "")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	req := userSays("hi")
	req.MaxTokens = 50
	if _, err := llm.Chat(ctx, req, nil); err == nil {
		t.Fatal("a canceled call succeeded")
	}
	ended := rec.Ended()
	if len(ended) != 1 {
		t.Fatalf("%d spans", len(ended))
	}
	sp := ended[0]
	if sp.Status().Code.String() != "Error" || sp.Status().Description != "canceled" {
		t.Errorf("status %v, want Error described as canceled", sp.Status())
	}
	for _, kv := range sp.Attributes() {
		switch kv.Key {
		case "error.type":
			if kv.Value.AsString() != "canceled" {
				t.Errorf("error.type %q", kv.Value.AsString())
			}
		case "gen_ai.request.max_tokens":
			if kv.Value.AsInt64() != 50 {
				t.Errorf("max_tokens %v", kv.Value.String())
			}
		}
	}
}

// RedactQuery hides the values of the parameters that may carry a
// secret, keeping their keys and every other parameter.
func TestRedactQuery(t *testing.T) {
	for in, want := range map[string]string{
		"":                   "",
		"color=blue&sig=abc": "color=blue&sig=REDACTED",
		"X-Goog-Signature=1&AWSAccessKeyId=2&Signature=3": "X-Goog-Signature=REDACTED&AWSAccessKeyId=REDACTED&Signature=REDACTED",
		"api-version=2024-10-21":                          "api-version=2024-10-21",
		"access_token=t&page=2":                           "access_token=REDACTED&page=2",
		"%zz=1":                                           "REDACTED",
	} {
		if got := telemetry.RedactQuery(in); got != want {
			t.Errorf("RedactQuery(%q) = %q, want %q", in, got, want)
		}
	}
}
