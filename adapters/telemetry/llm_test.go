package telemetry_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/devpilot/devpilot/adapters/openai"
	"github.com/devpilot/devpilot/adapters/telemetry"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
	"github.com/devpilot/devpilot/ports"
)

func newClient(t *testing.T, f *fakeopenai.Server) *openai.Client {
	t.Helper()
	c, err := openai.New(openai.Config{APIKey: "sk-test", BaseURL: f.URL(), Model: "gpt-test", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func userSays(text string) ports.ChatRequest {
	return ports.ChatRequest{Messages: []ports.Message{{Role: ports.MessageUser, Content: text}}}
}

// histogramCount is the number of observations of the histogram of name
// with the label model.
func histogramCount(t *testing.T, reg *prometheus.Registry, name, model string) uint64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "model" && l.GetValue() == model {
					return m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return 0
}

func TestLLMMeasuresAStreamedCall(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	f.Enqueue(fakeopenai.Text("Hello there, friend").WithUsage(12, 7).WithModel("gpt-test-2025"))
	reg := prometheus.NewRegistry()
	m := telemetry.NewLLM(newClient(t, f), reg, "gpt-test")

	var got strings.Builder
	res, err := m.Chat(t.Context(), userSays("hi"), func(d string) error { got.WriteString(d); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != "Hello there, friend" || res.Content != "Hello there, friend" {
		t.Fatalf("deltas %q, content %q: the decorator changed the answer", got.String(), res.Content)
	}
	if n := testutil.ToFloat64(mustCounter(t, reg, "devpilot_model_calls_total", "gpt-test-2025", "ok")); n != 1 {
		t.Errorf("calls{gpt-test-2025,ok} = %v, want 1", n)
	}
	for typ, want := range map[string]float64{"prompt": 12, "completion": 7} {
		if n := testutil.ToFloat64(mustCounter(t, reg, "devpilot_model_tokens_total", "gpt-test-2025", typ)); n != want {
			t.Errorf("tokens{%s} = %v, want %v", typ, n, want)
		}
	}
	if n := histogramCount(t, reg, "devpilot_model_call_duration_seconds", "gpt-test-2025"); n != 1 {
		t.Errorf("duration observations = %d, want 1", n)
	}
	if n := histogramCount(t, reg, "devpilot_model_time_to_first_token_seconds", "gpt-test-2025"); n != 1 {
		t.Errorf("time to first token observations = %d, want 1", n)
	}
}

// mustCounter returns the child of the counter vector name registered on
// reg with the given label values, found by gathering.
func mustCounter(t *testing.T, reg *prometheus.Registry, name string, values ...string) prometheus.Collector {
	t.Helper()
	labels := map[string][]string{
		"devpilot_model_calls_total":  {"model", "outcome"},
		"devpilot_model_tokens_total": {"model", "type"},
	}[name]
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: map[string]string{
		"devpilot_model_calls_total":  "Calls of the chat model, by model and outcome (ok, canceled or the error's kind: rate_limited, timeout, upstream, ...).",
		"devpilot_model_tokens_total": "Tokens the chat model's provider reported, by model and type (prompt or completion).",
	}[name]}, labels)
	// Registering an equal vector returns the one the decorator uses.
	return telemetry.Register(reg, vec).WithLabelValues(values...)
}

func TestLLMCountsErrorsByKind(t *testing.T) {
	t.Parallel()
	f := fakeopenai.New(t)
	f.Enqueue(fakeopenai.RateLimited(time.Second), fakeopenai.ServerError())
	reg := prometheus.NewRegistry()
	m := telemetry.NewLLM(newClient(t, f), reg, "gpt-test")

	var kinds []string
	for range 2 {
		_, err := m.Chat(t.Context(), userSays("hi"), nil)
		if err == nil {
			t.Fatal("no error")
		}
		kinds = append(kinds, string(ports.KindOf(err)))
	}
	if kinds[0] != string(ports.KindRateLimited) {
		t.Fatalf("first error's kind %s, want rate_limited", kinds[0])
	}
	for _, k := range kinds {
		if n := testutil.ToFloat64(mustCounter(t, reg, "devpilot_model_calls_total", "gpt-test", k)); n < 1 {
			t.Errorf("calls{gpt-test,%s} = %v, want at least 1", k, n)
		}
	}
	if n := histogramCount(t, reg, "devpilot_model_time_to_first_token_seconds", "gpt-test"); n != 0 {
		t.Errorf("time to first token observed %d times for calls without text", n)
	}
}

// scripted is an LLM answering with a fixed result, error and deltas.
type scripted struct {
	res    ports.ChatResult
	err    error
	deltas []string
}

func (s scripted) Chat(_ context.Context, _ ports.ChatRequest, onDelta func(string) error) (ports.ChatResult, error) {
	for _, d := range s.deltas {
		if onDelta != nil {
			if err := onDelta(d); err != nil {
				return s.res, err
			}
		}
	}
	return s.res, s.err
}

func TestLLMModelLabel(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	call := func(next ports.LLM, req ports.ChatRequest) {
		t.Helper()
		m := telemetry.NewLLM(next, reg, "default-model", "spec-model")
		_, _ = m.Chat(t.Context(), req, nil)
	}
	calls := func(model, outcome string) float64 {
		return testutil.ToFloat64(mustCounter(t, reg, "devpilot_model_calls_total", model, outcome))
	}
	// The result's model, else the request's, else the default.
	call(scripted{res: ports.ChatResult{Model: "answered"}}, ports.ChatRequest{Model: "spec-model"})
	call(scripted{}, ports.ChatRequest{Model: "spec-model"})
	call(scripted{err: ports.Errorf(ports.KindTimeout, "slow")}, ports.ChatRequest{})
	if calls("answered", "ok") != 1 || calls("spec-model", "ok") != 1 || calls("default-model", "timeout") != 1 {
		t.Errorf("calls: answered %v, spec-model %v, default-model timeout %v; want 1 each",
			calls("answered", "ok"), calls("spec-model", "ok"), calls("default-model", "timeout"))
	}
}

func TestLLMBoundsTheModelLabel(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := telemetry.NewLLM(scripted{}, reg, "default-model", "spec-model")
	for i := range 3 * telemetry.MaxModelLabels {
		_, _ = m.Chat(t.Context(), ports.ChatRequest{Model: fmt.Sprintf("model-%d", i)}, nil)
	}
	_, _ = m.Chat(t.Context(), ports.ChatRequest{Model: "spec-model"}, nil)
	_, _ = m.Chat(t.Context(), ports.ChatRequest{Model: strings.Repeat("m", 200)}, nil)

	// The configured models, MaxModelLabels others and "other".
	if n := testutil.CollectAndCount(reg, "devpilot_model_calls_total"); n != 1+telemetry.MaxModelLabels+1 {
		t.Errorf("%d series of devpilot_model_calls_total, want %d", n, telemetry.MaxModelLabels+2)
	}
	if n := testutil.ToFloat64(mustCounter(t, reg, "devpilot_model_calls_total", telemetry.ModelOther, "ok")); n != 2*telemetry.MaxModelLabels+1 {
		t.Errorf("calls{other} = %v, want %d", n, 2*telemetry.MaxModelLabels+1)
	}
	if n := testutil.ToFloat64(mustCounter(t, reg, "devpilot_model_calls_total", "spec-model", "ok")); n != 1 {
		t.Errorf("calls{spec-model} = %v, want 1", n)
	}
}

func TestLLMTimeToFirstTokenSkipsEmptyDeltas(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	abort := errors.New("client gone")
	m := telemetry.NewLLM(scripted{deltas: []string{"", ""}}, reg, "m")
	_, _ = m.Chat(t.Context(), userSays("hi"), func(string) error { return nil })
	if n := histogramCount(t, reg, "devpilot_model_time_to_first_token_seconds", "m"); n != 0 {
		t.Errorf("%d observations after empty deltas only, want 0", n)
	}
	m = telemetry.NewLLM(scripted{deltas: []string{"", "a", "b"}}, reg, "m")
	_, err := m.Chat(t.Context(), userSays("hi"), func(d string) error {
		if d == "b" {
			return abort
		}
		return nil
	})
	if !errors.Is(err, abort) {
		t.Fatalf("error %v, want onDelta's", err)
	}
	if n := histogramCount(t, reg, "devpilot_model_time_to_first_token_seconds", "m"); n != 1 {
		t.Errorf("%d observations, want 1", n)
	}
	if n := testutil.ToFloat64(mustCounter(t, reg, "devpilot_model_calls_total", "m", "internal")); n != 1 {
		t.Errorf("calls{m,internal} = %v, want 1 (onDelta's plain error)", n)
	}
}

func TestNewLLMWithoutRegistryIsNext(t *testing.T) {
	t.Parallel()
	next := &scripted{}
	if got := telemetry.NewLLM(next, nil, "m"); got != ports.LLM(next) {
		t.Errorf("NewLLM(next, nil) = %T, want next", got)
	}
}

func TestOutcome(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, "ok"},
		{context.Canceled, "canceled"},
		{fmt.Errorf("aws: %w", context.Canceled), "canceled"},
		{context.DeadlineExceeded, "timeout"},
		{ports.Errorf(ports.KindRateLimited, "slow down"), "rate_limited"},
		{fmt.Errorf("wrapped: %w", ports.Wrap(ports.KindUpstream, context.Canceled, "cut")), "upstream"},
		{&ports.Error{Kind: "made_up"}, "internal"},
		{errors.New("plain"), "internal"},
	} {
		if got := telemetry.Outcome(tc.err); got != tc.want {
			t.Errorf("Outcome(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

func TestRegisterReusesAndPanicsOnConflicts(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	a := telemetry.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{Name: "x_total", Help: "x"}))
	b := telemetry.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{Name: "x_total", Help: "x"}))
	if a != b {
		t.Error("the second registration did not return the first collector")
	}
	defer func() {
		if recover() == nil {
			t.Error("registering a conflicting collector did not panic")
		}
	}()
	telemetry.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{Name: "x_total", Help: "other help"}))
}
