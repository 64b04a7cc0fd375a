package ports

import (
	"errors"
	"strings"
)

// RedactedText stands in for a secret that Redact removed from an error.
const RedactedText = "[redacted]"

// Redact returns err as it is, or, should its text contain secret (a
// provider must never do that, but some echo a key or a token), a copy of
// it with every occurrence of secret replaced by RedactedText: an Error
// keeps its kind, code, RetryAfter and fields (their reasons cleaned) with
// its message cleaned; any other error becomes an internal Error. The
// copy's cause says what the original said, cleaned; errors.Is still sees
// through it to the original's chain, while errors.As finds only the copy,
// as the original would give the secret away. nil, an empty secret and a
// text without the secret give err back unchanged.
func Redact(err error, secret string) error {
	if err == nil || secret == "" || !strings.Contains(err.Error(), secret) {
		return err
	}
	clean := func(s string) string { return strings.ReplaceAll(s, secret, RedactedText) }
	out := &Error{Kind: KindInternal, Message: InternalMessage}
	if e, ok := AsError(err); ok {
		out = &Error{Kind: e.Kind, Code: e.Code, Message: clean(e.Message), RetryAfter: e.RetryAfter}
		for _, f := range e.Fields {
			out.Fields = append(out.Fields, FieldError{Field: f.Field, Reason: clean(f.Reason)})
		}
	}
	out.Err = &redactedError{text: clean(err.Error()), orig: err}
	return out
}

// redactedError is the cleaned text of an error, matching (errors.Is) what
// the original matched without unwrapping to it.
type redactedError struct {
	text string
	orig error
}

func (r *redactedError) Error() string { return r.text }

func (r *redactedError) Is(target error) bool { return errors.Is(r.orig, target) }
