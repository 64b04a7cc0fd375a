package ports_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/ports"
)

func TestRedact(t *testing.T) {
	t.Parallel()
	const secret = "wJalrXUtnFEMI"
	plain := errors.New("no secret here")
	withFields := &ports.Error{Kind: ports.KindUpstream, Code: "denied", RetryAfter: time.Second,
		Message: "SignatureDoesNotMatch with key " + secret,
		Fields:  []ports.FieldError{{Field: "key", Reason: "bad key " + secret}, {Field: "region", Reason: "unknown"}},
		Err:     errors.New("raw: " + secret)}
	for _, tt := range []struct {
		name      string
		err       error
		secret    string
		same      bool        // Redact gives err back unchanged
		want      ports.Error // of the copy: Kind, Code, Message, RetryAfter, Fields
		wantText  string      // the copy's Error()
		is, isNot []error
	}{
		{name: "nil", err: nil, secret: secret, same: true},
		{name: "no secret in the text", err: plain, secret: secret, same: true},
		{name: "empty secret", err: plain, secret: "", same: true},
		{name: "Error with fields", err: withFields, secret: secret,
			want: ports.Error{Kind: ports.KindUpstream, Code: "denied", RetryAfter: time.Second,
				Message: "SignatureDoesNotMatch with key [redacted]",
				Fields:  []ports.FieldError{{Field: "key", Reason: "bad key [redacted]"}, {Field: "region", Reason: "unknown"}}},
			wantText: "SignatureDoesNotMatch with key [redacted]: SignatureDoesNotMatch with key [redacted]: raw: [redacted]",
			is:       []error{ports.ErrUpstream, &ports.Error{Kind: ports.KindUpstream, Code: "denied"}, withFields},
			isNot:    []error{ports.ErrInternal}},
		{name: "plain error", err: fmt.Errorf("dial with %s: %w", secret, context.DeadlineExceeded), secret: secret,
			want:     ports.Error{Kind: ports.KindInternal, Message: ports.InternalMessage},
			wantText: "internal error: dial with [redacted]: context deadline exceeded",
			is:       []error{ports.ErrInternal, context.DeadlineExceeded},
			isNot:    []error{context.Canceled, ports.ErrUpstream}},
		{name: "wrapped Error", err: fmt.Errorf("listing clusters: %w", ports.Wrap(ports.KindNotFound, errors.New(secret), "cluster "+secret+" not found")), secret: secret,
			want:     ports.Error{Kind: ports.KindNotFound, Message: "cluster [redacted] not found"},
			wantText: "cluster [redacted] not found: listing clusters: cluster [redacted] not found: [redacted]",
			is:       []error{ports.ErrNotFound},
			isNot:    []error{ports.ErrConflict}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := ports.Redact(tt.err, tt.secret)
			if tt.same {
				if got != tt.err {
					t.Fatalf("Redact(%v) = %v, want it unchanged", tt.err, got)
				}
				return
			}
			if strings.Contains(got.Error(), tt.secret) {
				t.Fatalf("Redact left the secret in %q", got)
			}
			if got.Error() != tt.wantText {
				t.Errorf("Error() = %q, want %q", got.Error(), tt.wantText)
			}
			e, ok := ports.AsError(got)
			if !ok {
				t.Fatalf("Redact(%v) = %T, want a *ports.Error", tt.err, got)
			}
			if e.Kind != tt.want.Kind || e.Code != tt.want.Code || e.Message != tt.want.Message || e.RetryAfter != tt.want.RetryAfter || fmt.Sprint(e.Fields) != fmt.Sprint(tt.want.Fields) {
				t.Errorf("Redact = %+v, want %+v", *e, tt.want)
			}
			for _, target := range tt.is {
				if !errors.Is(got, target) {
					t.Errorf("errors.Is(redacted, %v) = false, want true", target)
				}
			}
			for _, target := range tt.isNot {
				if errors.Is(got, target) {
					t.Errorf("errors.Is(redacted, %v) = true, want false", target)
				}
			}
			var orig *ports.Error
			if errors.As(got, &orig) && orig != e {
				t.Errorf("errors.As found an Error other than the copy")
			}
		})
	}
}

// secretError is an error type an adapter might get from an SDK, whose
// fields hold the secret.
type secretError struct{ key string }

func (e *secretError) Error() string { return "signed with " + e.key }

func TestRedactedHidesTheOriginal(t *testing.T) {
	t.Parallel()
	const secret = "wJalrXUtnFEMI"
	orig := fmt.Errorf("call: %w: %w", &secretError{key: secret}, context.DeadlineExceeded)
	e := &ports.Error{Kind: ports.KindUpstream, Message: "the call failed",
		Err: ports.Redacted(orig, strings.ReplaceAll(orig.Error(), secret, ports.RedactedText))}
	if strings.Contains(e.Error(), secret) {
		t.Fatalf("Error() = %q holds the secret", e.Error())
	}
	if !errors.Is(e, context.DeadlineExceeded) || !errors.Is(e, ports.ErrUpstream) || !errors.Is(e, orig) {
		t.Errorf("errors.Is does not see the kind or the original's chain through the redacted cause")
	}
	var se *secretError
	if errors.As(e, &se) {
		t.Errorf("errors.As reached the original: %q", se.key)
	}
	if u := errors.Unwrap(e.Err); u != nil {
		t.Errorf("errors.Unwrap(cause) = %v, want nil", u)
	}
	var pe *ports.Error
	if !errors.As(e, &pe) || pe != e {
		t.Errorf("errors.As does not find the Error itself")
	}
	if ports.Redacted(nil, "x") != nil {
		t.Errorf("Redacted(nil) is not nil")
	}
}

func TestQuote(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", ports.MaxQuote)
	for _, tt := range []struct {
		name, in string
		secrets  []string
		want     string
	}{
		{"plain", "Invalid  parameter\n\tvalue", nil, "Invalid parameter value"},
		{"given secret", "key AKIDSECRET rejected", []string{"AKIDSECRET"}, "key [redacted] rejected"},
		{"longest secret first", "auth dXNlcjpwdw== and pw", []string{"pw", "dXNlcjpwdw=="}, "auth [redacted] and [redacted]"},
		{"empty secret ignored", "nothing", []string{""}, "nothing"},
		{"secret split by a line break goes before the line is made", "token abc\ndef here", []string{"abc\ndef"}, "token [redacted] here"},
		{"openai key shape", "Incorrect API key provided: sk-proj-abcd1234.", nil, "Incorrect API key provided: [redacted]"},
		{"bearer token", "sent Authorization: Bearer ghp_xyz123 twice", nil, "sent Authorization: [redacted] twice"},
		{"controls and bidi", "a\x00b\u202ec\x1bd e", nil, "abcd e"},
		{"clipped", long, nil, long[:ports.MaxQuote] + "…"},
		{"secret past the cap is still redacted, not half-clipped",
			strings.Repeat("a", ports.MaxQuote-4) + " SECRETVALUE", []string{"SECRETVALUE"},
			strings.Repeat("a", ports.MaxQuote-4) + " [re…"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := ports.Quote(tt.in, tt.secrets...)
			if got != tt.want {
				t.Errorf("Quote(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if len(got) > ports.MaxQuote+len("…") {
				t.Errorf("Quote gave %d bytes, want at most %d", len(got), ports.MaxQuote+len("…"))
			}
			for _, s := range tt.secrets {
				if s != "" && strings.Contains(got, s) {
					t.Errorf("Quote left the secret %q in %q", s, got)
				}
			}
		})
	}
}
