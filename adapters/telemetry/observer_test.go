package telemetry_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/devpilot/devpilot/adapters/telemetry"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
)

// gather returns the samples of the metrics named prefix*, keyed
// name{label=value,...}; a histogram gives its _count and _sum.
func gather(t *testing.T, g prometheus.Gatherer, prefix string) map[string]float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if !strings.HasPrefix(mf.GetName(), prefix) {
			continue
		}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			key := mf.GetName() + "{" + strings.Join(labels, ",") + "}"
			switch {
			case m.GetCounter() != nil:
				out[key] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[key] = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				out[key+"_count"] = float64(m.GetHistogram().GetSampleCount())
				out[key+"_sum"] = m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out
}

func TestObserverCounts(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	o := telemetry.NewObserver(reg)
	var _ ports.Observer = o
	o.ToolCall("get_project", ports.ToolCallOK)
	o.ToolCall("get_project", ports.ToolCallOK)
	o.ToolCall(ports.UnknownTool, ports.ToolCallRefused)
	// A second Observer on the registry shares the first one's metrics.
	again := telemetry.NewObserver(reg)
	again.ToolCall("deploy_service", ports.ToolCallPending)
	o.ConfirmationDecided(ports.ConfirmationApproved)
	again.ConfirmationDecided(ports.ConfirmationExpired)
	o.WebhookReceived(ports.WebhookAccepted)
	o.WebhookReceived(ports.WebhookDuplicate)
	o.WebhookReceived(ports.WebhookDuplicate)
	o.WebhookProcessed(250 * time.Millisecond)
	o.WebhookProcessed(-time.Second) // clocks that disagree count as no lag
	o.VoiceCallStarted()
	again.VoiceCallStarted()

	want := map[string]float64{
		"devpilot_tool_calls_total{outcome=ok,tool=get_project}":         2,
		"devpilot_tool_calls_total{outcome=refused,tool=unknown}":        1,
		"devpilot_tool_calls_total{outcome=pending,tool=deploy_service}": 1,
		"devpilot_confirmations_decided_total{status=approved}":          1,
		"devpilot_confirmations_decided_total{status=rejected}":          0,
		"devpilot_confirmations_decided_total{status=expired}":           1,
		"devpilot_webhook_deliveries_total{outcome=accepted}":            1,
		"devpilot_webhook_deliveries_total{outcome=duplicate}":           2,
		"devpilot_webhook_deliveries_total{outcome=bad_signature}":       0,
		"devpilot_webhook_deliveries_total{outcome=refused}":             0,
		"devpilot_webhook_processing_lag_seconds{}_count":                2,
		"devpilot_webhook_processing_lag_seconds{}_sum":                  0.25,
		"devpilot_voice_calls_total{}":                                   2,
	}
	got := gather(t, reg, "devpilot_")
	maps.DeleteFunc(got, func(k string, _ float64) bool { return strings.HasPrefix(k, "devpilot_spec_") }) // TestObserverCountsSpecStages
	if !maps.Equal(got, want) {
		t.Errorf("metrics\n%v\nwant\n%v", got, want)
	}
}

func TestObserverCountsSpecStages(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewPedanticRegistry()
	o := telemetry.NewObserver(reg)
	o.SpecStageGenerated(ports.StageStories, 2, map[string]int{"dependency": 3, "compound_criterion": 1, "uncovered": 0})
	o.SpecStageGenerated(ports.StageStories, 0, nil)
	// A kind outside the known set is "other"; an unknown stage is not counted.
	o.SpecStageGenerated(ports.StagePRPs, 1, map[string]int{"grounding_path": 2, "made up by someone": 4})
	o.SpecStageGenerated("design", 5, map[string]int{"dependency": 1})

	want := map[string]float64{
		"devpilot_spec_stages_generated_total{stage=stories}":                 2,
		"devpilot_spec_stages_generated_total{stage=prps}":                    1,
		"devpilot_spec_repair_turns_total{stage=stories}":                     2,
		"devpilot_spec_repair_turns_total{stage=prps}":                        1,
		"devpilot_spec_findings_total{kind=dependency,stage=stories}":         3,
		"devpilot_spec_findings_total{kind=compound_criterion,stage=stories}": 1,
		"devpilot_spec_findings_total{kind=grounding_path,stage=prps}":        2,
		"devpilot_spec_findings_total{kind=other,stage=prps}":                 4,
	}
	// Every stage's series exist from the start, at zero.
	for _, st := range []string{"scope", "prd", "epics"} {
		want["devpilot_spec_stages_generated_total{stage="+st+"}"] = 0
		want["devpilot_spec_repair_turns_total{stage="+st+"}"] = 0
	}
	if got := gather(t, reg, "devpilot_spec_"); !maps.Equal(got, want) {
		t.Errorf("metrics\n%v\nwant\n%v", got, want)
	}
}

func TestNewObserverPanicsOnAClash(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "devpilot_tool_calls_total", Help: "another"}))
	defer func() {
		if recover() == nil {
			t.Error("NewObserver did not panic")
		}
	}()
	telemetry.NewObserver(reg)
}

// counter counts as told.
type counter func(ctx context.Context, now time.Time) (int64, error)

func (c counter) CountPendingConfirmations(ctx context.Context, now time.Time) (int64, error) {
	return c(ctx, now)
}

func TestPendingConfirmations(t *testing.T) {
	t.Parallel()
	clock := fixture.NewClock()
	asked := make(chan time.Time, 10)
	reg := prometheus.NewPedanticRegistry()
	count := func(n int64) counter {
		return func(_ context.Context, now time.Time) (int64, error) { asked <- now; return n, nil }
	}
	if err := telemetry.RegisterPendingConfirmations(reg, telemetry.NewPendingConfirmations(count(3), clock, 0, nil)); err != nil {
		t.Fatal(err)
	}
	// Registering another on the same registry keeps the first.
	if err := telemetry.RegisterPendingConfirmations(reg, telemetry.NewPendingConfirmations(count(99), clock, 0, nil)); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"devpilot_confirmations_pending{}": 3}
	if got := gather(t, reg, "devpilot_"); !maps.Equal(got, want) {
		t.Errorf("metrics %v, want %v", got, want)
	}
	if at := <-asked; !at.Equal(clock.Now()) {
		t.Errorf("counted at %v, want the clock's %v", at, clock.Now())
	}
	// Each scrape counts again.
	clock.Advance(time.Minute)
	gather(t, reg, "devpilot_")
	if at := <-asked; !at.Equal(clock.Now()) {
		t.Errorf("counted at %v, want the clock's %v", at, clock.Now())
	}
}

func TestPendingConfirmationsExportsNothingWhenTheStoreFails(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	for _, tc := range []struct {
		name  string
		count counter
	}{
		{"failing", func(context.Context, time.Time) (int64, error) { return 0, errors.New("database down") }},
		{"slow, minding ctx", func(ctx context.Context, _ time.Time) (int64, error) { <-ctx.Done(); return 0, ctx.Err() }},
		{"slow, deaf to ctx", func(context.Context, time.Time) (int64, error) { <-release; return 1, nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(telemetry.NewPendingConfirmations(tc.count, fixture.NewClock(), 20*time.Millisecond, nil))
			start := time.Now()
			if got := gather(t, reg, "devpilot_"); len(got) != 0 {
				t.Errorf("metrics %v, want none", got)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("collecting took %v", d)
			}
		})
	}
}
