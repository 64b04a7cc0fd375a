package fakeopenai_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

func TestTakeTurn(t *testing.T) {
	s := fakeopenai.New(t)
	s.Enqueue(
		fakeopenai.Text("hello world").WithToolCalls(fakeopenai.Call{Name: "list_repos", Arguments: `{}`}).WithUsage(7, 3),
		fakeopenai.RateLimited(2*time.Second),
		fakeopenai.Text("a b c").TruncatedAfter(1),
		fakeopenai.Hangup(),
	)
	req := fakeopenai.Request{Method: http.MethodPost, Path: "/v1/messages", Model: "m1"}

	turn, seq, ok := s.TakeTurn(req)
	if !ok || seq != 1 || turn.Text() != "hello world" || len(turn.Deltas) != 2 || turn.Model != "m1" ||
		len(turn.Calls) != 1 || turn.Calls[0].ID != "call_0" || turn.Finish != "tool_calls" ||
		turn.PromptTokens != 7 || turn.CompletionTokens != 3 || turn.CutAfter != -1 {
		t.Fatalf("completion turn = %+v (seq %d, ok %v)", turn, seq, ok)
	}
	turn, _, _ = s.TakeTurn(req)
	if turn.Status != http.StatusTooManyRequests || turn.Header.Get("Retry-After") != "2" || turn.ErrorMessage == "" {
		t.Fatalf("rate-limited turn = %+v", turn)
	}
	turn, _, _ = s.TakeTurn(req)
	if turn.CutAfter != 1 || turn.Cut != "truncate" {
		t.Fatalf("truncated turn = %+v", turn)
	}
	turn, _, _ = s.TakeTurn(req)
	if !turn.Hangup {
		t.Fatalf("hangup turn = %+v", turn)
	}
	if got := len(s.Requests()); got != 4 {
		t.Fatalf("recorded %d requests, want 4", got)
	}
}
