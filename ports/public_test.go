package ports_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/devpilot/devpilot/ports"
)

func TestErrorRetryable(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		err  *ports.Error
		want bool
	}{
		{"rate limited", &ports.Error{Kind: ports.KindRateLimited, RetryAfter: time.Second}, true},
		{"unavailable", ports.Errorf(ports.KindUnavailable, "503"), true},
		{"timeout", ports.ErrTimeout, true},
		{"truncated stream", &ports.Error{Kind: ports.KindUpstream, Code: ports.CodeTruncated}, true},
		{"upstream refusal", ports.Errorf(ports.KindUpstream, "bad credentials"), false},
		{"invalid", ports.Invalid("no"), false},
		{"conflict", ports.ErrConflict, false},
		{"gone", &ports.Error{Kind: ports.KindGone, Code: "expired"}, false},
		{"internal", ports.Wrap(ports.KindInternal, context.DeadlineExceeded, "database error"), false},
		{"internal, truncated code", &ports.Error{Kind: ports.KindInternal, Code: ports.CodeTruncated}, false},
		{"no kind", &ports.Error{Message: "x"}, false},
	} {
		if got := tt.err.Retryable(); got != tt.want {
			t.Errorf("%s: Retryable(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}

func TestPublic(t *testing.T) {
	t.Parallel()
	internal := ports.PublicError{Kind: ports.KindInternal, Code: "internal", Message: ports.InternalMessage}
	for _, tt := range []struct {
		name string
		err  error
		want ports.PublicError
	}{
		{"nil", nil, ports.PublicError{}},
		{"plain error", errors.New("dial tcp 10.0.0.7:5432: password=hunter2"), internal},
		{"ended context", context.Canceled, internal},
		{"internal Error", ports.Wrap(ports.KindInternal, errors.New("CHECK failed"), "saving the session"), internal},
		{"Error without a kind", &ports.Error{Message: "who knows"}, internal},
		{"not found", ports.NotFound("chat session", "42"),
			ports.PublicError{Kind: ports.KindNotFound, Code: "not_found", Message: "chat session 42 not found"}},
		{"wrapped, cause hidden", fmt.Errorf("loading: %w", ports.Wrap(ports.KindConflict, errors.New("pq: duplicate key"), "the name is taken")),
			ports.PublicError{Kind: ports.KindConflict, Code: "conflict", Message: "the name is taken"}},
		{"finer code", &ports.Error{Kind: ports.KindGone, Code: "expired", Message: "too late"},
			ports.PublicError{Kind: ports.KindGone, Code: "expired", Message: "too late"}},
		{"no message: the kind's name", ports.ErrNotFound,
			ports.PublicError{Kind: ports.KindNotFound, Code: "not_found", Message: "not_found"}},
		{"rate limited", &ports.Error{Kind: ports.KindRateLimited, Message: "slow down"},
			ports.PublicError{Kind: ports.KindRateLimited, Code: "rate_limited", Message: "slow down", Retryable: true}},
		{"truncated", &ports.Error{Kind: ports.KindUpstream, Code: ports.CodeTruncated, Message: "cut off"},
			ports.PublicError{Kind: ports.KindUpstream, Code: "truncated", Message: "cut off", Retryable: true}},
		{"upstream refusal", ports.Errorf(ports.KindUpstream, "the model refused: %w", errors.New("policy")),
			ports.PublicError{Kind: ports.KindUpstream, Code: "upstream", Message: "the model refused: policy"}},
	} {
		if got := ports.Public(tt.err); got != tt.want {
			t.Errorf("%s: Public(%v) = %+v, want %+v", tt.name, tt.err, got, tt.want)
		}
	}
}

func TestErrContextLength(t *testing.T) {
	t.Parallel()
	tooLong := fmt.Errorf("chat: %w", &ports.Error{Kind: ports.KindInvalid, Code: ports.CodeContextLength, Message: "too long"})
	if !errors.Is(tooLong, ports.ErrContextLength) {
		t.Errorf("errors.Is(%v, ErrContextLength) = false", tooLong)
	}
	if other := (&ports.Error{Kind: ports.KindInvalid, Code: ports.CodeInvalidRequest}); errors.Is(other, ports.ErrContextLength) {
		t.Errorf("errors.Is(%v, ErrContextLength) = true", other)
	}
}
