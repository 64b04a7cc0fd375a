package telemetry

import (
	"cmp"
	"context"
	"errors"
	"net/url"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/devpilot/devpilot/ports"
)

// tracerName is the instrumentation scope of devpilot's own spans.
const tracerName = "github.com/devpilot/devpilot"

// tracedLLM is a ports.LLM with a span around each call.
type tracedLLM struct {
	next   ports.LLM
	tracer trace.Tracer
	def    string
	server []attribute.KeyValue // server.address and server.port, when known
	system attribute.KeyValue   // gen_ai.provider.name
}

// TraceLLM returns next with a client span around each call, under the
// caller's span, that follows the OpenTelemetry GenAI client span
// convention for OpenAI (semantic-conventions docs/gen-ai/openai.md,
// attribute names of semconv v1.41.0): named "chat <model>", with
// gen_ai.provider.name "openai" and gen_ai.operation.name "chat", the
// requested model, max_tokens, temperature and seed asked for,
// gen_ai.output.type "json" for structured output, server.address and
// server.port of baseURL (the provider's API base URL), and, once the call
// is over, the answering model, the completion's id, the finish reasons
// (a string array), the tokens reported and, for a failed call, error.type
// (see RecordError). It returns next itself when tp is nil.
func TraceLLM(next ports.LLM, tp trace.TracerProvider, defaultModel, baseURL string) ports.LLM {
	if tp == nil {
		return next
	}
	return TraceProviderLLM(next, tp, "openai", defaultModel, baseURL)
}

// TraceProviderLLM is TraceLLM for the adapter of provider: "openai",
// "anthropic" or "bedrock" (gen_ai.provider.name "openai", "anthropic",
// "aws.bedrock"; another name is recorded as it is).
func TraceProviderLLM(next ports.LLM, tp trace.TracerProvider, provider, defaultModel, baseURL string) ports.LLM {
	if tp == nil {
		return next
	}
	system := semconv.GenAIProviderNameKey.String(provider)
	switch provider {
	case "openai":
		system = semconv.GenAIProviderNameOpenAI
	case "anthropic":
		system = semconv.GenAIProviderNameAnthropic
	case "bedrock":
		system = semconv.GenAIProviderNameAWSBedrock
	}
	return &tracedLLM{next: next, tracer: tp.Tracer(tracerName), def: defaultModel, server: ServerAttributes(baseURL), system: system}
}

// ServerAttributes returns server.address and server.port of an http(s)
// URL, the port implied by the scheme when the URL names none; nil when
// rawURL is not such a URL.
func ServerAttributes(rawURL string) []attribute.KeyValue {
	u, err := url.Parse(rawURL)
	if err != nil || u.Hostname() == "" {
		return nil
	}
	port := u.Port()
	if port == "" {
		switch u.Scheme {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	attrs := []attribute.KeyValue{semconv.ServerAddress(u.Hostname())}
	if n, err := strconv.Atoi(port); err == nil {
		attrs = append(attrs, semconv.ServerPort(n))
	}
	return attrs
}

// Chat implements ports.LLM.
func (l *tracedLLM) Chat(ctx context.Context, req ports.ChatRequest, onDelta func(string) error) (ports.ChatResult, error) {
	model := cmp.Or(req.Model, l.def)
	attrs := append([]attribute.KeyValue{
		l.system,
		semconv.GenAIOperationNameChat,
		semconv.GenAIRequestModel(model),
		semconv.GenAIRequestStream(onDelta != nil),
		attribute.Int("devpilot.tools", len(req.Tools)),
	}, l.server...)
	if req.MaxTokens > 0 {
		attrs = append(attrs, semconv.GenAIRequestMaxTokens(req.MaxTokens))
	}
	if req.Temperature != nil {
		attrs = append(attrs, semconv.GenAIRequestTemperature(*req.Temperature))
	}
	if req.Seed != nil {
		attrs = append(attrs, semconv.GenAIRequestSeed(int(*req.Seed)))
	}
	if req.ResponseFormat != nil {
		attrs = append(attrs, semconv.GenAIOutputTypeJSON)
	}
	name := semconv.GenAIOperationNameChat.Value.AsString() + " " + model
	ctx, span := l.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	defer span.End()
	res, err := l.next.Chat(ctx, req, onDelta)
	var after []attribute.KeyValue
	if res.Model != "" {
		after = append(after, semconv.GenAIResponseModel(res.Model))
	}
	if res.ID != "" {
		after = append(after, semconv.GenAIResponseID(res.ID))
	}
	if res.FinishReason != "" {
		after = append(after, semconv.GenAIResponseFinishReasons(string(res.FinishReason)))
	}
	if err == nil || res.Usage != (ports.Usage{}) {
		after = append(after,
			semconv.GenAIUsageInputTokens(res.Usage.PromptTokens),
			semconv.GenAIUsageOutputTokens(res.Usage.CompletionTokens))
	}
	span.SetAttributes(after...)
	RecordError(span, err)
	return res, err
}

// RecordError marks span failed with err when err is not nil, as the
// conventions' "Recording errors" document says (status Error, error.type,
// a description that adds to it): error.type is err's outcome (see
// Outcome: the kind of error, canceled or timeout), the description the
// public message of err, never an internal detail. A cancellation is
// described as "canceled", not as the internal error it is not.
func RecordError(span trace.Span, err error) {
	if err == nil {
		return
	}
	outcome := Outcome(err)
	span.SetAttributes(semconv.ErrorTypeKey.String(outcome))
	if _, ok := ports.AsError(err); !ok && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		span.SetStatus(codes.Error, outcome)
		return
	}
	span.SetStatus(codes.Error, ports.Public(err).Message)
}
