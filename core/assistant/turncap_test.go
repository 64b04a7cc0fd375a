package assistant_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/core/assistant"
	"github.com/devpilot/devpilot/ports"
)

// hold starts a chat turn of p in a new session and leaves it running (not
// streamed): what an open chat stream holds.
func (e *env) hold(p ports.Principal) *assistant.Run {
	e.t.Helper()
	run, err := e.svc.Chat(as(p), assistant.ChatInput{Message: "take your time"})
	if err != nil {
		e.t.Fatalf("Chat: %v", err)
	}
	return run
}

// answer has the model answer every call at once.
func (e *env) answer() {
	e.llm.EXPECT().Chat(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(say("ok"))
}

// release streams held turns to their end (the model answers at once).
func release(t *testing.T, runs ...*assistant.Run) {
	t.Helper()
	for _, r := range runs {
		if err := r.Stream(context.Background(), func(assistant.Event) error { return nil }); err != nil {
			t.Fatalf("Stream: %v", err)
		}
	}
}

// checkTooManyTurns fails the test unless err is the cap's refusal.
func checkTooManyTurns(t *testing.T, what string, err error, maxTurns int) {
	t.Helper()
	e, ok := ports.AsError(err)
	if !ok || e.Kind != ports.KindRateLimited || e.ErrorCode() != "too_many_turns" || !errors.Is(err, ports.ErrTooManyTurns) {
		t.Fatalf("%s: %v, want rate_limited too_many_turns", what, err)
	}
	if e.RetryAfter <= 0 || e.RetryAfter > time.Minute {
		t.Errorf("%s: Retry-After %v, want a few seconds", what, e.RetryAfter)
	}
	if want := " " + strconv.Itoa(maxTurns) + " "; !strings.Contains(e.Message, want) {
		t.Errorf("%s: message %q does not name the cap %d", what, e.Message, maxTurns)
	}
}

func TestTurnCapRefusesChatsPastIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{MaxTurnsPerUser: 2})
	e.answer()
	sid, _ := e.chat(as(alice), assistant.ChatInput{Message: "hi"})
	before := len(e.messages(sid))
	held := []*assistant.Run{e.hold(alice), e.hold(alice)}

	_, err := e.svc.Chat(as(alice), assistant.ChatInput{Message: "one more"})
	checkTooManyTurns(t, "Chat in a new session", err, 2)
	_, err = e.svc.Chat(as(alice), assistant.ChatInput{Message: "one more", SessionID: sid})
	checkTooManyTurns(t, "Chat in an existing session", err, 2)
	_, err = e.svc.Continue(as(alice), sid)
	checkTooManyTurns(t, "Continue", err, 2)

	// Nothing of the refused turns is stored.
	list, _, err := e.store.ListSessions(context.Background(), alice.Owner(), ports.Page{Limit: ports.MaxPageLimit})
	if err != nil || len(list) != 3 {
		t.Errorf("alice has %d sessions (%v), want 3: a refused chat made one", len(list), err)
	}
	if n := len(e.messages(sid)); n != before {
		t.Errorf("session has %d messages after refused chats, want %d", n, before)
	}
	if tr, err := e.store.RunningTurn(context.Background(), sid); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("a refused chat left turn %s running (%v)", tr.ID, err)
	}

	// Another user is not held back by alice's turns.
	release(t, e.hold(bob))

	// Once a turn ends, alice may start another.
	release(t, held[0])
	release(t, e.hold(alice), held[1])
	e.endedOnce()
}

func TestTurnCapDoesNotCountStaleTurns(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{MaxTurnsPerUser: 1, TurnStaleAfter: time.Minute})
	e.answer()
	stale := e.hold(alice)
	_, err := e.svc.Chat(as(alice), assistant.ChatInput{Message: "one more"})
	checkTooManyTurns(t, "Chat at the cap", err, 1)
	e.clock.Advance(2 * time.Minute)
	release(t, e.hold(alice), stale)
}

func TestTurnCapZeroIsUnlimited(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{})
	e.answer()
	var held []*assistant.Run
	for range 20 {
		held = append(held, e.hold(alice))
	}
	release(t, held...)
	e.endedOnce()
}
