// Package genjob holds what the cores' model-generation jobs (specification
// stages, content drafts) share: telling a failure to record from an error
// worth another attempt, and the failure of a job given up.
package genjob

import (
	"context"
	"errors"
	"strings"

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
// is; an ended context as a timeout, unless a ports.Error that is not
// internal says otherwise; anything else as ports.Public tells it.
func FailureOf(err error) *Failure {
	if f, ok := errors.AsType[*Failure](err); ok {
		return f
	}
	pub := ports.Public(err)
	if pub.Kind == ports.KindInternal && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)) {
		return &Failure{Code: string(ports.KindTimeout), Message: "the generation did not finish in time", Cause: err}
	}
	return &Failure{Code: pub.Code, Message: pub.Message, Cause: err}
}

// Transient reports whether an error may go away when the job runs again:
// see ports.Transient (rate limits, unavailability, timeouts, cut-off
// streams, lost connections, and any error that is not a ports.Error).
func Transient(err error) bool { return ports.Transient(err) }

// Retry reports whether a job that failed with err should be run again by
// the queue rather than have the failure recorded now: only when this is not
// the final attempt, err is no Failure, and err is transient. A permanent
// error (invalid input, a constraint, a model output that stays invalid)
// fails the work at once.
func Retry(err error, final bool) bool {
	if final || err == nil {
		return false
	}
	if _, ok := errors.AsType[*Failure](err); ok {
		return false
	}
	return Transient(err)
}

// CodeInterrupted is the code of the failure recorded when a generation is
// given up because its last attempt was interrupted.
const CodeInterrupted = "interrupted"

// Interrupted is the failure recorded for a generation whose last attempt
// was interrupted: the process working on it stopped (killed, crashed) and
// the queue took the job up again with no attempt left.
func Interrupted() *Failure {
	return &Failure{Code: CodeInterrupted,
		Message: "the generation was interrupted: the process working on it stopped during its last attempt; start it again"}
}

// Fenced returns text, trimmed, to be put between <tag> and </tag> in a
// prompt: a closing </tag inside it is escaped, so the text cannot end its
// fence early and pass for instructions.
func Fenced(text, tag string) string {
	return strings.ReplaceAll(strings.TrimSpace(text), "</"+tag, "<\\/"+tag)
}
