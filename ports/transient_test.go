package ports_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/devpilot/devpilot/ports"
)

func TestTransient(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"not an Error", errors.New("boom"), true},
		{"cancelled", context.Canceled, true},
		{"rate limited", ports.Errorf(ports.KindRateLimited, "slow down"), true},
		{"unavailable", ports.Errorf(ports.KindUnavailable, "503"), true},
		{"timeout", ports.Errorf(ports.KindTimeout, "slow"), true},
		{"budget exceeded", fmt.Errorf("call: %w", &ports.Error{Kind: ports.KindRateLimited, Code: ports.CodeBudgetExceeded, RetryAfter: time.Hour}), false},
		{"truncated stream", &ports.Error{Kind: ports.KindUpstream, Code: ports.CodeTruncated}, true},
		{"upstream refusal", ports.Errorf(ports.KindUpstream, "bad credentials"), false},
		{"invalid", ports.Invalid("no"), false},
		{"conflict", ports.Errorf(ports.KindConflict, "exists"), false},
		{"not found", ports.NotFound("x", "1"), false},
		{"internal fault", ports.Wrap(ports.KindInternal, errors.New("CHECK constraint failed"), "database error"), false},
		{"internal, connection refused", ports.Wrap(ports.KindInternal, &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, "database error"), true},
		{"internal, connection reset", ports.Wrap(ports.KindInternal, fmt.Errorf("read: %w", syscall.ECONNRESET), "database error"), true},
		{"internal, context ended", ports.Wrap(ports.KindInternal, context.DeadlineExceeded, "database error"), true},
		{"wrapped permanent", fmt.Errorf("job: %w", ports.Invalid("no")), false},
		{"not configured", fmt.Errorf("stage: %w", ports.NotConfigured("no_model_provider", "set OPENAI_API_KEY")), false},
	} {
		if got := ports.Transient(tt.err); got != tt.want {
			t.Errorf("%s: Transient(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}

// TestNotConfiguredIsPermanent: a missing setting is unavailable to a
// client but never worth another try, by a job or a client.
func TestNotConfiguredIsPermanent(t *testing.T) {
	t.Parallel()
	err := fmt.Errorf("drafting: %w", ports.NotConfigured("no_model_provider", "no model provider is configured: set OPENAI_API_KEY"))
	if ports.Transient(err) {
		t.Error("Transient(not configured) = true")
	}
	pub := ports.Public(err)
	if pub.Retryable || pub.Kind != ports.KindUnavailable || pub.Code != "no_model_provider" || pub.Message != "no model provider is configured: set OPENAI_API_KEY" {
		t.Errorf("Public = %+v", pub)
	}
	if !errors.Is(err, ports.ErrNotConfigured) || !errors.Is(err, ports.ErrUnavailable) {
		t.Error("not configured does not match ErrNotConfigured and ErrUnavailable")
	}
}
