package telemetry

import (
	"cmp"
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
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
}

// TraceLLM returns next with a client span "chat <model>" around each call,
// under the caller's span, carrying the GenAI semantic attributes (the
// requested and answered model, the temperature and seed asked for, the
// tokens reported, the finish reason) and the error's kind; next itself when tp is nil.
func TraceLLM(next ports.LLM, tp trace.TracerProvider, defaultModel string) ports.LLM {
	if tp == nil {
		return next
	}
	return &tracedLLM{next: next, tracer: tp.Tracer(tracerName), def: defaultModel}
}

// Chat implements ports.LLM.
func (l *tracedLLM) Chat(ctx context.Context, req ports.ChatRequest, onDelta func(string) error) (ports.ChatResult, error) {
	model := cmp.Or(req.Model, l.def)
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.request.model", model),
		attribute.Bool("devpilot.stream", onDelta != nil),
		attribute.Int("devpilot.tools", len(req.Tools)),
	}
	if req.Temperature != nil {
		attrs = append(attrs, attribute.Float64("gen_ai.request.temperature", *req.Temperature))
	}
	if req.Seed != nil {
		attrs = append(attrs, attribute.Int64("gen_ai.request.seed", *req.Seed))
	}
	ctx, span := l.tracer.Start(ctx, "chat "+model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	defer span.End()
	res, err := l.next.Chat(ctx, req, onDelta)
	span.SetAttributes(
		attribute.String("gen_ai.response.model", res.Model),
		attribute.Int("gen_ai.usage.input_tokens", res.Usage.PromptTokens),
		attribute.Int("gen_ai.usage.output_tokens", res.Usage.CompletionTokens),
		attribute.String("gen_ai.response.finish_reasons", string(res.FinishReason)),
	)
	RecordError(span, err)
	return res, err
}

// RecordError marks span failed with err's outcome (see Outcome) when err
// is not nil: the kind as error.type and the public message as the status,
// never an internal detail.
func RecordError(span trace.Span, err error) {
	if err == nil {
		return
	}
	span.SetAttributes(attribute.String("error.type", Outcome(err)))
	span.SetStatus(codes.Error, ports.Public(err).Message)
}
