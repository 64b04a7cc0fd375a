package telemetry

import (
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/devpilot/devpilot/ports"
)

// unknownTool is the tool label of a call that named no tool of the
// registry (ports.UnknownTool).
const unknownTool = "unknown"

// Observer is a ports.Observer that counts what the cores report as
// Prometheus metrics:
//
//   - devpilot_tool_calls_total{tool,outcome}: tool is a name of the tool
//     registry, or "unknown" (the cores pass ports.UnknownTool for a name the
//     registry lacks, so a model's inventions never become labels); outcome
//     is ok, failed, refused, pending or rejected.
//   - devpilot_confirmations_decided_total{status}: approved, rejected or
//     expired.
//   - devpilot_webhook_deliveries_total{outcome}: accepted, duplicate,
//     bad_signature or refused.
//   - devpilot_webhook_processing_lag_seconds: a histogram of the time from a
//     delivery's receipt to the end of its processing.
//   - devpilot_voice_calls_total: realtime calls started through the server,
//     whose token usage is metered.
//   - devpilot_spec_stages_generated_total{stage}: specification artifacts
//     stored, by stage (scope, prd, epics, stories, prps).
//   - devpilot_spec_repair_turns_total{stage}: the turns that sent a stage's
//     findings back to the model.
//   - devpilot_spec_findings_total{stage,kind}: the findings left on the
//     stored artifacts, kind one of ports.SpecFindingKinds or "other".
//
// Its methods are safe for concurrent use and never block.
type Observer struct {
	toolCalls  *prometheus.CounterVec
	decided    *prometheus.CounterVec
	deliveries *prometheus.CounterVec
	lag        prometheus.Histogram
	voiceCalls prometheus.Counter

	specStages   *prometheus.CounterVec
	specRepairs  *prometheus.CounterVec
	specFindings *prometheus.CounterVec
}

var _ ports.Observer = (*Observer)(nil)

// NewObserver returns an Observer whose metrics are registered on reg; a
// second Observer on the same registry shares the first one's. It panics
// when reg holds other metrics of the same names.
func NewObserver(reg prometheus.Registerer) *Observer {
	o := &Observer{
		toolCalls: Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "devpilot_tool_calls_total",
			Help: "Tool calls the assistant handled, in chat or by voice, by tool and outcome (ok, failed, refused, pending, rejected); a confirmed call counts as pending, then with its decision's outcome.",
		}, []string{"tool", "outcome"})),
		decided: Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "devpilot_confirmations_decided_total",
			Help: "Confirmations that left pending, by status (approved, rejected, expired).",
		}, []string{"status"})),
		deliveries: Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "devpilot_webhook_deliveries_total",
			Help: "Webhook deliveries answered, by outcome (accepted, duplicate, bad_signature, refused).",
		}, []string{"outcome"})),
		lag: Register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "devpilot_webhook_processing_lag_seconds",
			Help:    "Time from a webhook delivery's receipt to the end of its processing.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600},
		})),
		voiceCalls: Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "devpilot_voice_calls_total",
			Help: "Realtime voice calls started through the server (POST /api/v1/voice/calls), whose token usage is metered.",
		})),
		specStages: Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "devpilot_spec_stages_generated_total",
			Help: "Specification artifacts stored, by stage.",
		}, []string{"stage"})),
		specRepairs: Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "devpilot_spec_repair_turns_total",
			Help: "Repair turns of the specification stages stored (a valid answer's findings sent back to the model), by stage.",
		}, []string{"stage"})),
		specFindings: Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "devpilot_spec_findings_total",
			Help: "Findings left on the specification artifacts stored, by stage and kind (other for a kind outside the known set).",
		}, []string{"stage", "kind"})),
	}
	// The bounded labels start at zero, so that rates exist before the first event.
	for _, s := range []ports.ConfirmationStatus{ports.ConfirmationApproved, ports.ConfirmationRejected, ports.ConfirmationExpired} {
		o.decided.WithLabelValues(string(s))
	}
	for _, w := range []ports.WebhookOutcome{ports.WebhookAccepted, ports.WebhookDuplicate, ports.WebhookBadSignature, ports.WebhookRefused} {
		o.deliveries.WithLabelValues(string(w))
	}
	for _, st := range ports.Stages {
		o.specStages.WithLabelValues(string(st))
		o.specRepairs.WithLabelValues(string(st))
	}
	return o
}

// ToolCall implements ports.Observer.
func (o *Observer) ToolCall(tool string, outcome ports.ToolCallOutcome) {
	if tool == ports.UnknownTool {
		tool = unknownTool
	}
	o.toolCalls.WithLabelValues(tool, string(outcome)).Inc()
}

// ConfirmationDecided implements ports.Observer.
func (o *Observer) ConfirmationDecided(status ports.ConfirmationStatus) {
	o.decided.WithLabelValues(string(status)).Inc()
}

// WebhookReceived implements ports.Observer.
func (o *Observer) WebhookReceived(outcome ports.WebhookOutcome) {
	o.deliveries.WithLabelValues(string(outcome)).Inc()
}

// WebhookProcessed implements ports.Observer. A negative lag (the clocks of
// the receiving and the processing replica disagree) counts as zero.
func (o *Observer) WebhookProcessed(lag time.Duration) {
	o.lag.Observe(max(lag, 0).Seconds())
}

// VoiceCallStarted implements ports.Observer.
func (o *Observer) VoiceCallStarted() { o.voiceCalls.Inc() }

// SpecStageGenerated implements ports.Observer. A stage outside ports.Stages
// is not counted; a finding kind outside ports.SpecFindingKinds counts as
// ports.SpecFindingOther, so labels stay bounded.
func (o *Observer) SpecStageGenerated(stage ports.Stage, repairTurns int, findings map[string]int) {
	if !slices.Contains(ports.Stages, stage) {
		return
	}
	st := string(stage)
	o.specStages.WithLabelValues(st).Inc()
	o.specRepairs.WithLabelValues(st).Add(float64(max(repairTurns, 0)))
	for kind, n := range findings {
		if n <= 0 {
			continue
		}
		if !slices.Contains(ports.SpecFindingKinds, kind) {
			kind = ports.SpecFindingOther
		}
		o.specFindings.WithLabelValues(st, kind).Add(float64(n))
	}
}
