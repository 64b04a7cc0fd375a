package ports

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Kind classifies an Error. The HTTP transport maps each kind to one status in
// a single table; cores pick the kind that says what went wrong, never a status.
type Kind string

// The error kinds every layer shares.
const (
	KindMalformed            Kind = "malformed"              // the request cannot be parsed (400)
	KindInvalid              Kind = "invalid"                // parsed but semantically invalid (422)
	KindUnauthenticated      Kind = "unauthenticated"        // no or bad credentials (401)
	KindForbidden            Kind = "forbidden"              // authenticated but not allowed (403)
	KindNotFound             Kind = "not_found"              // absent, or not the caller's (404)
	KindConflict             Kind = "conflict"               // clashes with the current state (409)
	KindGone                 Kind = "gone"                   // existed but can no longer be used (410)
	KindPreconditionFailed   Kind = "precondition_failed"    // a stale version or failed If-Match (412)
	KindPayloadTooLarge      Kind = "payload_too_large"      // the body or an upload is too big (413)
	KindUnsupportedMedia     Kind = "unsupported_media_type" // the content type is not accepted (415)
	KindPreconditionRequired Kind = "precondition_required"  // a version or If-Match is required (428)
	KindRateLimited          Kind = "rate_limited"           // slow down; see RetryAfter (429)
	KindUpstream             Kind = "upstream"               // a provider answered with a failure (502)
	KindUnavailable          Kind = "unavailable"            // temporarily unable to serve (503)
	KindTimeout              Kind = "timeout"                // a provider did not answer in time (504)
	KindInternal             Kind = "internal"               // a bug or an unexpected fault (500)
)

// FieldError names one invalid field of a request, by its JSON path.
type FieldError struct {
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

// Error is the one error type cores and adapters return for conditions a
// caller should see. Message is safe to show to clients; Err, the cause, is not.
type Error struct {
	Kind    Kind
	Code    string // a finer machine-readable code such as "expired"; defaults to Kind
	Message string
	Fields  []FieldError
	// RetryAfter, when positive, tells the client how long to wait (rate_limited, unavailable).
	RetryAfter time.Duration
	Err        error
}

// Error returns the message, followed by the cause when there is one.
func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = string(e.Kind)
	}
	if e.Err != nil {
		return msg + ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is reports whether target is a bare kind sentinel (such as ErrNotFound) of
// the same kind, so errors.Is(err, ports.ErrNotFound) matches any not_found Error.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok || t.Message != "" || t.Err != nil {
		return false
	}
	if t.Code != "" && t.Code != e.ErrorCode() {
		return false
	}
	return t.Kind == e.Kind
}

// ErrorCode is the machine-readable code clients see: Code, or else Kind.
func (e *Error) ErrorCode() string {
	if e.Code != "" {
		return e.Code
	}
	return string(e.Kind)
}

// Sentinels for errors.Is; each matches every Error of its kind.
var (
	ErrMalformed            = &Error{Kind: KindMalformed}
	ErrInvalid              = &Error{Kind: KindInvalid}
	ErrUnauthenticated      = &Error{Kind: KindUnauthenticated}
	ErrForbidden            = &Error{Kind: KindForbidden}
	ErrNotFound             = &Error{Kind: KindNotFound}
	ErrConflict             = &Error{Kind: KindConflict}
	ErrGone                 = &Error{Kind: KindGone}
	ErrPreconditionFailed   = &Error{Kind: KindPreconditionFailed}
	ErrPayloadTooLarge      = &Error{Kind: KindPayloadTooLarge}
	ErrUnsupportedMedia     = &Error{Kind: KindUnsupportedMedia}
	ErrPreconditionRequired = &Error{Kind: KindPreconditionRequired}
	ErrRateLimited          = &Error{Kind: KindRateLimited}
	ErrUpstream             = &Error{Kind: KindUpstream}
	ErrUnavailable          = &Error{Kind: KindUnavailable}
	ErrTimeout              = &Error{Kind: KindTimeout}
	ErrInternal             = &Error{Kind: KindInternal}
)

// Errorf returns an Error of the given kind with a formatted client-safe message.
// A %w verb in format also records the wrapped error as the cause.
func Errorf(kind Kind, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{Kind: kind, Message: err.Error(), Err: errors.Unwrap(err)}
}

// Wrap returns an Error of the given kind with message, keeping cause for logs
// and for errors.Is/As; the cause's text is not shown to clients.
func Wrap(kind Kind, cause error, message string) *Error {
	return &Error{Kind: kind, Message: message, Err: cause}
}

// Invalid returns an invalid-input Error listing the offending fields.
func Invalid(message string, fields ...FieldError) *Error {
	return &Error{Kind: KindInvalid, Message: message, Fields: fields}
}

// FieldsError returns nil when fields is empty, and otherwise an Error of
// the given kind (malformed or invalid) listing them, whose message names
// each: "invalid request (name: required; limit: must be 1 to 200)".
func FieldsError(kind Kind, fields ...FieldError) error {
	if len(fields) == 0 {
		return nil
	}
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = f.Field + ": " + f.Reason
	}
	what := "malformed request"
	if kind != KindMalformed {
		what = "invalid request"
	}
	return &Error{Kind: kind, Message: what + " (" + strings.Join(parts, "; ") + ")", Fields: fields}
}

// NotFound returns a not_found Error for the named resource, such as
// NotFound("chat session", id) → "chat session 0193… not found".
func NotFound(resource, id string) *Error {
	return &Error{Kind: KindNotFound, Message: fmt.Sprintf("%s %s not found", resource, id)}
}

// AsError returns the Error in err's chain, if there is one.
func AsError(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// KindOf returns the kind of the first Error in err's chain: "" for nil, and
// KindInternal for an error that is not an Error.
func KindOf(err error) Kind {
	if err == nil {
		return ""
	}
	if e, ok := AsError(err); ok {
		return e.Kind
	}
	return KindInternal
}

// IsKind reports whether err's chain holds an Error of the given kind.
func IsKind(err error, kind Kind) bool {
	e, ok := AsError(err)
	return ok && e.Kind == kind
}

// InternalMessage is all a client is told of an internal error, or of an
// error that is not an Error at all; the cause goes to the log.
const InternalMessage = "internal error"

// Retryable reports whether the same request may succeed when it is made
// again later, unchanged: a rate limit, an unavailable or slow provider, or
// a model stream cut off before it finished (CodeTruncated). An internal
// error is never retryable: what a client cannot be told of, it cannot be
// told to retry. Nor is a missing setting (ErrNotConfigured), which only an
// operator can change.
func (e *Error) Retryable() bool {
	if errors.Is(e.Err, ErrNotConfigured) {
		return false
	}
	switch e.Kind {
	case KindRateLimited, KindUnavailable, KindTimeout:
		return true
	case KindInternal, "":
		return false
	}
	return e.Code == CodeTruncated
}

// PublicError is what any client (an HTTP problem, an SSE error event, the
// failure of a tool or a job) may be shown of an error.
type PublicError struct {
	// Kind is the Error's kind; KindInternal for anything hidden.
	Kind Kind
	// Code is the Error's code (ErrorCode), or "internal".
	Code string
	// Message is the Error's client-safe message, the kind's name when it
	// has none, or InternalMessage.
	Message string
	// Retryable is the Error's Retryable.
	Retryable bool
}

// Public returns what a client may be shown of err: for an Error in err's
// chain its code, its message (or its kind's name when it has none) and
// whether to retry; for an internal Error, an Error without a kind, or an
// error that is not an Error, only that it was internal (InternalMessage),
// never its text. Public(nil) is the zero PublicError.
func Public(err error) PublicError {
	if err == nil {
		return PublicError{}
	}
	e, ok := AsError(err)
	if !ok || e.Kind == KindInternal || e.Kind == "" {
		return PublicError{Kind: KindInternal, Code: string(KindInternal), Message: InternalMessage}
	}
	msg := e.Message
	if msg == "" {
		msg = string(e.Kind)
	}
	return PublicError{Kind: e.Kind, Code: e.ErrorCode(), Message: msg, Retryable: e.Retryable()}
}
