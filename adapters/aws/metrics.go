package aws

import (
	"context"
	"errors"
	"time"

	"github.com/aws/smithy-go/middleware"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/devpilot/devpilot/adapters/telemetry"
	"github.com/devpilot/devpilot/ports"
)

// metricsID names the metrics middleware in the SDK's stacks.
const metricsID = "devpilot.Metrics"

// callMetrics are the series of SDK calls.
type callMetrics struct {
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newCallMetrics(reg prometheus.Registerer) *callMetrics {
	return &callMetrics{
		calls: telemetry.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "devpilot_aws_calls_total",
			Help: "AWS API calls (all attempts of one call counted once), by service, operation and outcome (ok, canceled or the error's kind: rate_limited, timeout, not_found, invalid, upstream, ...).",
		}, []string{"service", "operation", "outcome"})),
		duration: telemetry.Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "devpilot_aws_call_duration_seconds",
			Help:    "Time an AWS API call took, its retries included, by service and operation.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"service", "operation"})),
	}
}

// addTo adds the metrics middleware to an operation's stack, first in its
// initialize step: it sees the call once, its retries included, and its
// final error. It is a function of Options.APIOptions.
func (m *callMetrics) addTo(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc(metricsID, m.handle), middleware.Before)
}

func (m *callMetrics) handle(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	start := time.Now()
	out, md, err := next.HandleInitialize(ctx, in)
	elapsed := time.Since(start)
	// The service id and operation name are the SDK's constants: a bounded
	// set.
	service, operation := callNames(ctx)
	m.calls.WithLabelValues(service, operation, callOutcome(err)).Inc()
	m.duration.WithLabelValues(service, operation).Observe(elapsed.Seconds())
	return out, md, err
}

// callOutcome is the outcome label of an SDK call's error: the kind of the
// ports.Error the adapter maps it to (see classify), ok or canceled.
func callOutcome(err error) string {
	if err == nil {
		return telemetry.OutcomeOK
	}
	return telemetry.Outcome(callError(err))
}

// callError is an SDK call's error as the ports.Error the adapter maps it
// to (see classify); a ports.Error or a cancellation as it is.
func callError(err error) error {
	if _, ok := ports.AsError(err); !ok && !errors.Is(err, context.Canceled) {
		err, _, _, _ = classify(err, ports.CloudCredentials{}, nil)
	}
	return err
}
