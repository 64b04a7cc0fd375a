// Package genjob holds what the cores' model-generation jobs (specification
// stages, content drafts) share: telling a failure to record from an error
// worth another attempt.
package genjob

import (
	"cmp"
	"context"
	"errors"

	"github.com/devpilot/devpilot/ports"
)

// Failure is a generation that cannot succeed by running the job again; its
// Code and client-safe Message are recorded on what was being generated.
type Failure struct {
	Code, Message string
	Cause         error
}

// Error returns the message, followed by the cause when there is one.
func (f *Failure) Error() string {
	if f.Cause != nil {
		return f.Message + ": " + f.Cause.Error()
	}
	return f.Message
}

// Unwrap returns the cause.
func (f *Failure) Unwrap() error { return f.Cause }

// FailureOf is the Failure to record for err: a Failure in its chain as it
// is; a ports.Error with its code and client-safe message; an ended context
// as a timeout; anything else as an internal error.
func FailureOf(err error) *Failure {
	if f, ok := errors.AsType[*Failure](err); ok {
		return f
	}
	if e, ok := ports.AsError(err); ok && e.Kind != ports.KindInternal {
		return &Failure{Code: e.ErrorCode(), Message: cmp.Or(e.Message, string(e.Kind)), Cause: err}
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return &Failure{Code: string(ports.KindTimeout), Message: "the generation did not finish in time", Cause: err}
	}
	return &Failure{Code: string(ports.KindInternal), Message: "internal error", Cause: err}
}

// Transient reports whether a model error may go away when the job runs
// again: rate limits, unavailability, timeouts and cut-off streams, and any
// error that is not a ports.Error (such as a cancelled context).
func Transient(err error) bool {
	e, ok := ports.AsError(err)
	if !ok {
		return true
	}
	switch e.Kind {
	case ports.KindRateLimited, ports.KindUnavailable, ports.KindTimeout:
		return true
	case ports.KindUpstream:
		return e.Code == ports.CodeTruncated
	}
	return false
}
