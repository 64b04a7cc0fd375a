package telemetry

import (
	"cmp"
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/devpilot/devpilot/ports"
)

// Model label values that are not a model's name.
const (
	// ModelOther stands for every model past MaxModelLabels.
	ModelOther = "other"
	// ModelUnknown is the label of a call that names no model and has no
	// default.
	ModelUnknown = "unknown"
)

// MaxModelLabels bounds the model names, besides the configured ones, that
// a decorator returned by NewLLM uses as labels: the first ones answered
// (providers answer with dated versions of the requested model, such as
// gpt-4o-mini-2024-07-18); later ones are counted as ModelOther.
const MaxModelLabels = 8

// maxModelName is the longest model name used as a label.
const maxModelName = 100

// llmMetrics are the series of model calls.
type llmMetrics struct {
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	ttft     *prometheus.HistogramVec
	tokens   *prometheus.CounterVec
}

func newLLMMetrics(reg prometheus.Registerer) *llmMetrics {
	return &llmMetrics{
		calls: Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "devpilot_model_calls_total",
			Help: "Calls of the chat model, by model and outcome (ok, canceled or the error's kind: rate_limited, timeout, upstream, ...).",
		}, []string{"model", "outcome"})),
		duration: Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "devpilot_model_call_duration_seconds",
			Help:    "Time from the start of a chat model call to its end (its whole stream), by model.",
			Buckets: []float64{.1, .25, .5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300},
		}, []string{"model"})),
		ttft: Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "devpilot_model_time_to_first_token_seconds",
			Help:    "Time from the start of a streamed chat model call to its first non-empty text delta, by model.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2, 4, 8, 15, 30, 60},
		}, []string{"model"})),
		tokens: Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "devpilot_model_tokens_total",
			Help: "Tokens the chat model's provider reported, by model and type (prompt or completion).",
		}, []string{"model", "type"})),
	}
}

// llm is a ports.LLM measured into Prometheus series.
type llm struct {
	next    ports.LLM
	m       *llmMetrics
	def     string
	known   map[string]bool
	now     func() time.Time
	mu      sync.Mutex
	answers map[string]bool // model names admitted past the known ones
}

// NewLLM returns next measured on reg: per call, the
// devpilot_model_calls_total counter (by model and outcome, see Outcome),
// the devpilot_model_call_duration_seconds and, for streamed calls (a
// non-nil onDelta) that produced text,
// devpilot_model_time_to_first_token_seconds histograms, and the
// devpilot_model_tokens_total counter of the tokens the provider reported
// (prompt and completion), failed calls included.
//
// The model label is the result's model, else the request's, else
// defaultModel. It is bounded: defaultModel and models (the configured
// ones) are always labels of their own, at most MaxModelLabels other names
// are, and any further one is ModelOther. With a nil reg NewLLM returns
// next itself. The returned LLM passes next's results and errors on
// unchanged.
func NewLLM(next ports.LLM, reg prometheus.Registerer, defaultModel string, models ...string) ports.LLM {
	if reg == nil {
		return next
	}
	known := map[string]bool{}
	for _, m := range append(models, defaultModel) {
		if m != "" {
			known[m] = true
		}
	}
	return &llm{next: next, m: newLLMMetrics(reg), def: defaultModel, known: known, now: time.Now, answers: map[string]bool{}}
}

// Chat implements ports.LLM: it runs the call through next and measures it.
func (l *llm) Chat(ctx context.Context, req ports.ChatRequest, onDelta func(string) error) (ports.ChatResult, error) {
	start := l.now()
	var first atomic.Int64 // nanoseconds to the first text, +1 so 0 means none yet
	wrapped := onDelta
	if onDelta != nil {
		wrapped = func(delta string) error {
			if delta != "" && first.Load() == 0 {
				first.CompareAndSwap(0, int64(l.now().Sub(start))+1)
			}
			return onDelta(delta)
		}
	}
	res, err := l.next.Chat(ctx, req, wrapped)
	elapsed := l.now().Sub(start)

	model := l.label(cmp.Or(res.Model, req.Model, l.def, ModelUnknown))
	l.m.calls.WithLabelValues(model, Outcome(err)).Inc()
	l.m.duration.WithLabelValues(model).Observe(elapsed.Seconds())
	if f := first.Load(); f > 0 {
		l.m.ttft.WithLabelValues(model).Observe(time.Duration(f - 1).Seconds())
	}
	if n := res.Usage.PromptTokens; n > 0 {
		l.m.tokens.WithLabelValues(model, "prompt").Add(float64(n))
	}
	if n := res.Usage.CompletionTokens; n > 0 {
		l.m.tokens.WithLabelValues(model, "completion").Add(float64(n))
	}
	return res, err
}

// label bounds the model label (see NewLLM).
func (l *llm) label(model string) string {
	if l.known[model] || model == ModelUnknown {
		return model
	}
	if len(model) > maxModelName {
		return ModelOther
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.answers[model] {
		return model
	}
	if len(l.answers) < MaxModelLabels {
		l.answers[model] = true
		return model
	}
	return ModelOther
}
