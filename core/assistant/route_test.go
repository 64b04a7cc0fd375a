package assistant_test

import (
	"slices"
	"sync/atomic"
	"testing"

	"github.com/devpilot/devpilot/core/assistant"
	"github.com/devpilot/devpilot/core/tool"
)

// TestChatRoutingFollowsRecentTurns: a write called on the spec page keeps
// the spec area's writes in play for follow-ups that name no area and come
// without a page, for assistant.RecentTurns user turns counting the one that
// called it, and no longer after.
func TestChatRoutingFollowsRecentTurns(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{})
	var ran atomic.Value
	catalogue(e, &ran)
	replies := []reply{call("c1", "spec_2", `{"limit":1}`)}
	for range assistant.RecentTurns {
		replies = append(replies, say("ok"))
	}
	e.script(replies...)
	sid, evs := e.chat(as(alice), assistant.ChatInput{Message: "note this", Context: &tool.PageContext{CurrentPage: "#/specs"}})
	if !slices.Contains(names(evs), "confirmation_required") {
		t.Fatalf("turn 1: %v", names(evs))
	}
	for range assistant.RecentTurns {
		e.chat(as(alice), assistant.ChatInput{SessionID: sid, Message: "yes, go ahead"})
	}
	reqs := e.requests()
	for i, req := range reqs[1:] {
		inPlay := i+2 <= assistant.RecentTurns
		got := toolNames(req)
		if slices.Contains(got, "spec_2") != inPlay || slices.Contains(got, "spec_3") != inPlay {
			t.Errorf("turn %d offers %v; spec writes in play: %v", i+2, got, inPlay)
		}
	}
}
