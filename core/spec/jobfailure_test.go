package spec_test

import (
	"errors"
	"net"
	"syscall"
	"testing"

	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/ports"
)

// Only a transient store error is retried; a permanent one (a constraint, a
// value the database refuses) fails the session at once, with a reason.
func TestRunGenerationStoreErrorClasses(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name    string
		err     error
		retried bool
	}{
		{"unavailable", ports.Errorf(ports.KindUnavailable, "database down"), true},
		{"connection refused", ports.Wrap(ports.KindInternal, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, "database error"), true},
		{"a value the database refuses", ports.Wrap(ports.KindInternal, errors.New(`pq: invalid byte sequence for encoding "UTF8": 0x00`), "database error"), false},
		{"a check constraint", ports.Wrap(ports.KindInternal, errors.New("CHECK constraint failed: status"), "database error"), false},
		{"invalid", ports.Invalid("bad value"), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, spec.Config{})
			sid := e.newSession(alice)
			job := e.generate(alice, sid, "")
			e.specs.failInputs(tt.err)
			err := e.svc.RunGeneration(t.Context(), job, false)
			s := e.session(sid)
			if tt.retried {
				if !errors.Is(err, tt.err) || s.Status != ports.SpecGenerating {
					t.Fatalf("RunGeneration = %v, session %s; want the error returned for a retry, still generating", err, s.Status)
				}
				return
			}
			if err != nil || s.Status != ports.SpecFailed || s.Error == nil || s.Error.Message == "" {
				t.Fatalf("RunGeneration = %v, session %s %+v; want nil and the session failed with a reason", err, s.Status, s.Error)
			}
		})
	}
}

// A job whose last attempt was interrupted fails its session with code
// interrupted; a session that moved on is left alone.
func TestAbandonGeneration(t *testing.T) {
	t.Parallel()
	e := newEnv(t, spec.Config{})
	sid := e.newSession(alice)
	job := e.generate(alice, sid, "")
	if err := e.svc.AbandonGeneration(t.Context(), job); err != nil {
		t.Fatal(err)
	}
	s := e.session(sid)
	if s.Status != ports.SpecFailed || s.Error == nil || s.Error.Code != "interrupted" || s.Error.Stage != ports.StageScope {
		t.Fatalf("session %s %+v, want failed: interrupted", s.Status, s.Error)
	}
	stale := job
	stale.GenerationID = "00000000-0000-7000-8000-0000000000aa"
	if err := e.svc.AbandonGeneration(t.Context(), stale); err != nil {
		t.Fatalf("AbandonGeneration of a superseded generation = %v", err)
	}
}
