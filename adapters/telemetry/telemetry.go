// Package telemetry turns what devpilot does into Prometheus metrics, where
// no single adapter can: the decorator that measures model calls (NewLLM),
// the Observer the cores report to (tool calls, confirmations, webhooks)
// and the pending confirmations gauge, the helper that registers a
// collector or reuses the one registered already (Register), and the
// bounded outcome label of a call (Outcome), which the AWS and GitHub
// adapters share.
package telemetry

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/devpilot/devpilot/ports"
)

// Register registers c on reg and returns it; when an equal collector is
// registered already (by another server or adapter on the same registry,
// or by an earlier test), it returns that one instead, so instrumenting
// twice on one registry shares the series. It panics when reg refuses c for
// any other reason (a name registered with other labels or help): that is a
// programming error.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	err := reg.Register(c)
	if err == nil {
		return c
	}
	if are, ok := errors.AsType[prometheus.AlreadyRegisteredError](err); ok {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
	}
	panic(fmt.Sprintf("telemetry: registering metrics: %v", err))
}

// Outcomes of a call besides the error kinds of ports.
const (
	// OutcomeOK is a call that succeeded.
	OutcomeOK = "ok"
	// OutcomeCanceled is a call its caller gave up on (context.Canceled).
	OutcomeCanceled = "canceled"
)

// knownKinds bounds the outcome label to the kinds ports defines.
var knownKinds = map[ports.Kind]bool{
	ports.KindMalformed: true, ports.KindInvalid: true, ports.KindUnauthenticated: true,
	ports.KindForbidden: true, ports.KindNotFound: true, ports.KindConflict: true, ports.KindGone: true,
	ports.KindPreconditionFailed: true, ports.KindPayloadTooLarge: true, ports.KindUnsupportedMedia: true,
	ports.KindPreconditionRequired: true, ports.KindRateLimited: true, ports.KindUpstream: true,
	ports.KindUnavailable: true, ports.KindTimeout: true, ports.KindInternal: true,
}

// Outcome is the outcome label of a call that returned err: OutcomeOK for
// nil, OutcomeCanceled when the caller cancelled it, timeout when its
// deadline passed, else the kind of the first ports.Error in err's chain
// (internal for an error that has none, or whose kind ports does not
// define), so the label takes a small fixed set of values.
func Outcome(err error) string {
	if err == nil {
		return OutcomeOK
	}
	if _, ok := ports.AsError(err); !ok {
		switch {
		case errors.Is(err, context.Canceled):
			return OutcomeCanceled
		case errors.Is(err, context.DeadlineExceeded):
			return string(ports.KindTimeout)
		}
	}
	if k := ports.KindOf(err); knownKinds[k] {
		return string(k)
	}
	return string(ports.KindInternal)
}
