package doctext

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
)

// TestExtractGuards: a panic in the reader and an extraction that does not
// finish in time are invalid uploads, not a 500 or a hung request.
func TestExtractGuards(t *testing.T) {
	release := make(chan struct{})
	tests := []struct {
		name     string
		hook     func()
		timeout  time.Duration
		contains string
	}{
		{name: "panic", hook: func() { panic("boom") }, timeout: time.Minute, contains: "boom"},
		{name: "deadline", hook: func() { <-release }, timeout: time.Millisecond, contains: "took longer than"},
	}
	defer close(release)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			testHook = tt.hook
			defer func() { testHook = nil }()
			x := &Extractor{Timeout: tt.timeout}
			_, err := x.Extract(context.Background(), ports.MediaPDF, "f.pdf", bytes.NewReader(fixture.PDF("x")), 1<<20)
			var pe *ports.Error
			if !errors.As(err, &pe) || pe.Kind != ports.KindInvalid || !strings.Contains(pe.Message, tt.contains) {
				t.Fatalf("Extract = %v, want invalid containing %q", err, tt.contains)
			}
		})
	}
}
