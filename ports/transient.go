package ports

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"syscall"
)

// Transient reports whether the work that failed with err may succeed when
// it is tried again later, as background jobs are: an Error a client may
// retry (Error.Retryable: a rate limit, an unavailable or slow provider or
// database, a cut-off model stream), or an ended context or a connection
// lost under an internal Error. Every other Error (invalid input, a
// constraint, a conflict, a provider's refusal, an internal fault) is
// permanent: trying again gives the same answer, and so is a spent token
// budget (CodeBudgetExceeded), which a client may retry next month but
// background work must not retry until then, and a missing setting
// (ErrNotConfigured, see NotConfigured), which only an operator can
// change. An error that is no Error
// at all counts as transient, as nothing says otherwise. nil is not
// transient.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	e, ok := AsError(err)
	if !ok {
		return true
	}
	if e.Code == CodeBudgetExceeded || errors.Is(err, ErrNotConfigured) {
		return false
	}
	if e.Retryable() {
		return true
	}
	return e.Kind == KindInternal && connectionLost(e.Err)
}

// connectionLost reports whether err is the loss of a connection or of the
// context, rather than a fault of the request.
func connectionLost(err error) bool {
	if err == nil {
		return false
	}
	if _, ok := errors.AsType[net.Error](err); ok {
		return true
	}
	for _, target := range []error{
		context.Canceled, context.DeadlineExceeded, driver.ErrBadConn, io.ErrUnexpectedEOF, io.EOF,
		syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.EPIPE,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// ErrNotConfigured is the cause of every Error saying that a setting the
// work needs is missing (see NotConfigured): it makes the Error permanent
// (Transient is false and Retryable false, whatever its kind), as no
// attempt succeeds until an operator changes the configuration and
// restarts the process.
var ErrNotConfigured = errors.New("not configured")

// NotConfigured returns an unavailable Error with code and message (which
// should name the settings to set, such as OPENAI_API_KEY) whose cause is
// ErrNotConfigured: background jobs fail at once with it instead of being
// tried again, and clients are told not to retry.
func NotConfigured(code, message string) *Error {
	return &Error{Kind: KindUnavailable, Code: code, Message: message, Err: ErrNotConfigured}
}
