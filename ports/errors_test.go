package ports_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/devpilot/devpilot/ports"
)

func TestErrorMatching(t *testing.T) {
	t.Parallel()
	cause := errors.New("disk on fire")
	nf := ports.NotFound("chat session", "42")
	wrapped := fmt.Errorf("loading: %w", nf)
	expired := &ports.Error{Kind: ports.KindGone, Code: "expired", Message: "too late"}

	tests := []struct {
		name   string
		err    error
		target error
		want   bool
	}{
		{"same kind", nf, ports.ErrNotFound, true},
		{"through fmt wrap", wrapped, ports.ErrNotFound, true},
		{"other kind", nf, ports.ErrConflict, false},
		{"code sentinel", expired, &ports.Error{Kind: ports.KindGone, Code: "expired"}, true},
		{"other code", expired, &ports.Error{Kind: ports.KindGone, Code: "deleted"}, false},
		{"cause kept", ports.Wrap(ports.KindInternal, cause, "saving"), cause, true},
		{"plain error", cause, ports.ErrInternal, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := errors.Is(tt.err, tt.target); got != tt.want {
				t.Fatalf("errors.Is(%v, %v) = %v, want %v", tt.err, tt.target, got, tt.want)
			}
		})
	}
}

func TestKindOfAndMessages(t *testing.T) {
	t.Parallel()
	if k := ports.KindOf(nil); k != "" {
		t.Errorf("KindOf(nil) = %q", k)
	}
	if k := ports.KindOf(errors.New("x")); k != ports.KindInternal {
		t.Errorf("KindOf(plain) = %q, want internal", k)
	}
	err := ports.Errorf(ports.KindUpstream, "aws said no: %w", errors.New("AccessDenied"))
	if !ports.IsKind(err, ports.KindUpstream) || err.Message != "aws said no: AccessDenied" || err.Unwrap() == nil {
		t.Errorf("Errorf = %#v", err)
	}
	if got := ports.NotFound("org", "acme").Error(); got != "org acme not found" {
		t.Errorf("NotFound message = %q", got)
	}
	if got := (&ports.Error{Kind: ports.KindConflict}).ErrorCode(); got != "conflict" {
		t.Errorf("ErrorCode default = %q", got)
	}
}
