package github_test

import (
	"errors"
	"strings"
	"testing"

	gh "github.com/google/go-github/v84/github"

	"github.com/devpilot/devpilot/hosts/sandbox/fakegithub"
	"github.com/devpilot/devpilot/ports"
)

// TestRedactedCauseHidesGitHubsError checks the one rule for a redacted
// error: an answer that echoes the token keeps its kind for errors.Is and
// errors.As, is quoted without the token, and neither errors.As nor
// errors.Unwrap reaches go-github's error, which holds the unredacted text.
func TestRedactedCauseHidesGitHubsError(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	f.fake.AddRepo("alice", "shop")
	f.fake.Inject("/repos/*/*/issues", fakegithub.Error(400, "token "+aliceToken+" may not\ncreate issues"))
	_, err := f.client.CreateIssue(t.Context(), aliceToken, "alice", "shop", ports.SCMIssueInput{Title: "x"})
	var pe *ports.Error
	if !errors.As(err, &pe) || !errors.Is(err, ports.ErrUpstream) {
		t.Fatalf("CreateIssue = %v, want an upstream Error", err)
	}
	if want := "GitHub answered HTTP 400: token [redacted] may not create issues"; pe.Message != want {
		t.Errorf("message = %q, want %q", pe.Message, want)
	}
	var er *gh.ErrorResponse
	if errors.As(err, &er) {
		t.Errorf("errors.As reached go-github's ErrorResponse: %q", er.Message)
	}
	for u := err; u != nil; u = errors.Unwrap(u) {
		if _, ok := u.(*gh.ErrorResponse); ok || strings.Contains(u.Error(), aliceToken) {
			t.Errorf("errors.Unwrap reached %T: %q", u, u.Error())
		}
	}
}
