package worker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/hosts/worker"
	"github.com/devpilot/devpilot/ports"
)

// scriptedExporter answers RunIssueExport with err and records the calls.
type scriptedExporter struct {
	err       error
	finals    []bool
	abandoned int
}

func (s *scriptedExporter) RunIssueExport(_ context.Context, _ spec.ExportIssuesArgs, final bool) error {
	s.finals = append(s.finals, final)
	return s.err
}

func (s *scriptedExporter) AbandonIssueExport(context.Context, spec.ExportIssuesArgs) error {
	s.abandoned++
	return nil
}

func TestExportIssuesWorker(t *testing.T) {
	t.Parallel()
	job := func(attempt int) *river.Job[spec.ExportIssuesArgs] {
		return &river.Job[spec.ExportIssuesArgs]{JobRow: &rivertype.JobRow{Attempt: attempt, MaxAttempts: 5}}
	}
	tests := []struct {
		name    string
		err     error
		attempt int
		snooze  time.Duration // 0: no snooze
		same    bool          // the error comes back as it is
	}{
		{"done", nil, 1, 0, true},
		{"secondary rate limit", &ports.Error{Kind: ports.KindRateLimited, RetryAfter: 3 * time.Second}, 1, 3 * time.Second, false},
		{"rate limit without a wait", &ports.Error{Kind: ports.KindRateLimited}, 2, time.Second, false},
		{"rate limit for hours", &ports.Error{Kind: ports.KindRateLimited, RetryAfter: 5 * time.Hour}, 2, time.Hour, false},
		{"transient", &ports.Error{Kind: ports.KindUnavailable}, 5, 0, true},
	}
	for _, tt := range tests {
		ex := &scriptedExporter{err: tt.err}
		err := (&worker.ExportIssuesWorker{Spec: ex}).Work(t.Context(), job(tt.attempt))
		var snooze *rivertype.JobSnoozeError
		switch {
		case tt.snooze > 0:
			if !errors.As(err, &snooze) || snooze.Duration != tt.snooze {
				t.Errorf("%s: %v, want a snooze of %s", tt.name, err, tt.snooze)
			}
		case tt.same && !errors.Is(err, tt.err) && err != tt.err:
			t.Errorf("%s: %v, want %v", tt.name, err, tt.err)
		}
		if len(ex.finals) != 1 || ex.finals[0] != (tt.attempt >= 5) {
			t.Errorf("%s: final flags %v", tt.name, ex.finals)
		}
	}
	ex := &scriptedExporter{}
	if err := (&worker.ExportIssuesWorker{Spec: ex}).Work(t.Context(), job(6)); err != nil || ex.abandoned != 1 || len(ex.finals) != 0 {
		t.Errorf("an interrupted last attempt: %v, abandoned %d, runs %d", err, ex.abandoned, len(ex.finals))
	}
}
