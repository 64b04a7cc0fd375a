package ports

import (
	"cmp"
	"errors"
	"regexp"
	"slices"
	"strings"
)

// RedactedText stands in for a secret removed from an error (Redact), from a
// provider's words quoted in a message (Quote), or from a configuration
// printed for a log: every adapter writes this, and no other, text.
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
	out.Err = Redacted(err, clean(err.Error()))
	return out
}

// Redacted returns an error whose text is text, err's own text with its
// secrets removed by the caller, for an Error's cause. It is the one rule for
// a redacted error: errors.Is still sees through it to err's chain (a kind,
// a deadline, a sentinel stays matchable), while errors.Unwrap and errors.As
// never reach err, as err would give the secret away. nil gives nil.
func Redacted(err error, text string) error {
	if err == nil {
		return nil
	}
	return &redactedError{text: text, orig: err}
}

// redactedError is the cleaned text of an error, matching (errors.Is) what
// the original matched without unwrapping to it.
type redactedError struct {
	text string
	orig error
}

func (r *redactedError) Error() string { return r.text }

func (r *redactedError) Is(target error) bool { return errors.Is(r.orig, target) }

// MaxQuote bounds, in bytes, the words of a provider (an error message, an
// error answer's body) that Quote keeps for a message a client may see: long
// enough for a provider's sentence or two, short enough for one log line.
const MaxQuote = 300

// secretShaped matches what is shaped like a secret whatever provider sent
// it: an OpenAI-style key ("sk-…") and a bearer token.
var secretShaped = regexp.MustCompile(`\bsk-[A-Za-z0-9_\-*.]{4,}|Bearer\s+\S+`)

// Quote returns s, a provider's words, fit to quote in a message a client
// may see: every non-empty secret in secrets (longest first, so a secret
// holding a shorter one goes whole) and anything shaped like a key or a
// bearer token replaced by RedactedText, then cleaned (CleanText) and made
// one line of at most MaxQuote bytes (Line). Secrets go before the text is
// clipped or its white space collapsed, so a clipped or reflowed secret
// cannot slip through. Every adapter quotes a provider through it.
func Quote(s string, secrets ...string) string {
	if len(secrets) > 1 {
		secrets = slices.Clone(secrets)
		slices.SortStableFunc(secrets, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	}
	for _, sec := range secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, RedactedText)
		}
	}
	s = secretShaped.ReplaceAllString(s, RedactedText)
	return Line(CleanText(s), MaxQuote)
}
