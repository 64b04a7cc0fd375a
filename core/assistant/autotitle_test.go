package assistant_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/devpilot/devpilot/core/assistant"
	"github.com/devpilot/devpilot/ports"
)

// TestAutoTitleAfterFirstAnswer: with AutoTitle, the first answered turn of
// a session titles it in the background with one model call charged to the
// title feature, after done was sent (the call is still held when the
// stream has ended); a later turn makes no title call, the session having
// its title.
func TestAutoTitleAfterFirstAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{AutoTitle: true})
	release := make(chan struct{})
	var feature ports.Feature
	e.script(say("Checkout runs 3 tasks."),
		func(ctx context.Context, _ ports.ChatRequest, _ func(string) error) (ports.ChatResult, error) {
			a, _ := ports.AttributionFrom(ctx)
			feature = a.Feature
			<-release
			return ports.ChatResult{Content: "Checkout tasks", FinishReason: ports.FinishStop, Usage: usage}, nil
		},
		say("Still 3."))
	sid, evs := e.chat(as(alice), assistant.ChatInput{Message: "how many tasks does checkout run?"})
	if n := names(evs); n[len(n)-1] != "done" {
		t.Fatalf("events %v", n)
	}
	close(release) // done came while the title call was held
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.svc.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	sess, err := e.svc.GetSession(as(alice), sid)
	if err != nil || sess.Session.Title != "Checkout tasks" {
		t.Errorf("title %q, %v", sess.Session.Title, err)
	}
	if feature != ports.FeatureTitle {
		t.Errorf("the title call was charged to %q", feature)
	}
	e.chat(as(alice), assistant.ChatInput{SessionID: sid, Message: "and now?"})
	if err := e.svc.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(e.requests()); n != 3 {
		t.Errorf("%d model calls, want 3", n)
	}
}

// TestAutoTitleOff: without AutoTitle, an answered turn makes no title call.
func TestAutoTitleOff(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{})
	e.script(say("Hi."))
	sid, _ := e.chat(as(alice), assistant.ChatInput{Message: "hello"})
	if err := e.svc.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	sess, _ := e.svc.GetSession(as(alice), sid)
	if sess.Session.Title != "" || !slices.Equal([]int{len(e.requests())}, []int{1}) {
		t.Errorf("title %q after %d calls", sess.Session.Title, len(e.requests()))
	}
}
