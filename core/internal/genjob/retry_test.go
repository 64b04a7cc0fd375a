package genjob_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/devpilot/devpilot/core/internal/genjob"
	"github.com/devpilot/devpilot/ports"
)

// A generation refused for the organisation's spent token budget fails at
// once with that code; a plain rate limit is retried.
func TestRetryGivesUpOnASpentBudget(t *testing.T) {
	t.Parallel()
	spent := fmt.Errorf("stage: %w", &ports.Error{Kind: ports.KindRateLimited, Code: ports.CodeBudgetExceeded,
		Message: "the budget is used up", RetryAfter: 48 * time.Hour})
	if genjob.Retry(spent, false) {
		t.Error("a spent budget is retried")
	}
	if f := genjob.FailureOf(spent); f.Code != ports.CodeBudgetExceeded {
		t.Errorf("failure code %q, want %q", f.Code, ports.CodeBudgetExceeded)
	}
	if !genjob.Retry(&ports.Error{Kind: ports.KindRateLimited}, false) {
		t.Error("a rate limit is not retried")
	}
}
