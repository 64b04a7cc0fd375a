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

// A generation without a model configured fails at once (a spec stage, a
// content draft, a digest), recorded with the code and the message naming
// the setting; an unavailable provider is retried.
func TestRetryGivesUpOnAMissingSetting(t *testing.T) {
	t.Parallel()
	missing := fmt.Errorf("stage prd: %w", ports.NotConfigured("no_model_provider",
		"no model provider is configured: set OPENAI_API_KEY or OPENAI_BASE_URL"))
	if genjob.Retry(missing, false) {
		t.Error("a missing setting is retried")
	}
	f := genjob.FailureOf(missing)
	if f.Code != "no_model_provider" || f.Message != "no model provider is configured: set OPENAI_API_KEY or OPENAI_BASE_URL" {
		t.Errorf("failure %q %q", f.Code, f.Message)
	}
	if !genjob.Retry(ports.Errorf(ports.KindUnavailable, "the model is overloaded"), false) {
		t.Error("an unavailable provider is not retried")
	}
}
