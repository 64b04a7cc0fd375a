package assistant_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/devpilot/devpilot/core/assistant"
	"github.com/devpilot/devpilot/ports"
)

// A user stops a turn mid-answer: the model call ends, what was said is
// kept, and the stream ends with done{finish_reason:"stopped"}, no error.
func TestStopEndsTheTurnStopped(t *testing.T) {
	t.Parallel()
	for _, where := range []string{"this process", "another replica"} {
		t.Run(where, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, assistant.Config{TurnHeartbeat: 5 * time.Millisecond})
			stopper := e.svc
			if where == "another replica" { // another Service over the same stores: only the database links them
				stopper = assistant.New(assistant.Config{}, assistant.Deps{Sessions: e.store, Messages: e.store,
					Confirmations: e.store, Events: e.store, Turns: e.store, Preferences: e.store, Tx: e.store,
					LLM: e.llm, Clock: e.clock, IDs: e.ids, Registry: e.reg})
			}
			var sessionID string
			e.script(func(mctx context.Context, _ ports.ChatRequest, onDelta func(string) error) (ports.ChatResult, error) {
				_ = onDelta("Half an ")
				if _, err := stopper.Stop(as(alice), sessionID); err != nil {
					t.Errorf("Stop: %v", err)
				}
				<-mctx.Done()
				return ports.ChatResult{}, mctx.Err()
			})
			run, err := e.svc.Chat(as(alice), assistant.ChatInput{Message: "hi"})
			if err != nil {
				t.Fatal(err)
			}
			sessionID = run.SessionID()
			rec := &recorder{e: e}
			if err := run.Stream(as(alice), rec.emit); err != nil {
				t.Fatal(err)
			}
			if got := names(rec.events()); !slices.Equal(got, []string{"content", "done"}) {
				t.Fatalf("sent %v, want content, done", got)
			}
			if d := decode[assistant.DoneData](t, rec.events()[1]); d.FinishReason != "stopped" {
				t.Errorf("done %+v, want finish_reason stopped", d)
			}
			if msgs := e.messages(sessionID); msgs[len(msgs)-1].Content != "Half an " {
				t.Errorf("the partial answer was not kept: %+v", msgs)
			}
			e.endedOnce()
			_, err = e.svc.Stop(as(alice), sessionID)
			if errCode(err) != "no_turn_running" || !errors.Is(err, ports.ErrConflict) {
				t.Errorf("Stop once the turn ended: %v, want conflict no_turn_running", err)
			}
		})
	}
}

// A tool call the model made before the stop is answered "not run", never
// started.
func TestStopDoesNotStartAPendingToolCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{})
	var runs counter
	e.register(readTool("get_project", &runs, "x"))
	var sessionID string
	e.script(func(context.Context, ports.ChatRequest, func(string) error) (ports.ChatResult, error) {
		if _, err := e.svc.Stop(as(alice), sessionID); err != nil {
			t.Errorf("Stop: %v", err)
		}
		return ports.ChatResult{ToolCalls: []ports.ToolCall{{ID: "c1", Name: "get_project", Arguments: projectArgs}}}, nil
	})
	run, err := e.svc.Chat(as(alice), assistant.ChatInput{Message: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	sessionID = run.SessionID()
	rec := &recorder{e: e}
	if err := run.Stream(as(alice), rec.emit); err != nil {
		t.Fatal(err)
	}
	evs := rec.events()
	if got := names(evs); !slices.Equal(got, []string{"tool_call", "tool_result", "done"}) {
		t.Fatalf("sent %v", got)
	}
	if r := decode[assistant.ToolResultData](t, evs[1]); r.OK || r.Error != "not run: the user stopped the reply" {
		t.Errorf("tool_result %+v", r)
	}
	if d := decode[assistant.DoneData](t, evs[2]); d.FinishReason != "stopped" {
		t.Errorf("done %+v", d)
	}
	if runs.runs() != 0 {
		t.Errorf("the tool ran %d times after the stop", runs.runs())
	}
	e.endedOnce()
}

func TestStopRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{})
	e.script(say("hello"))
	sid, _ := e.chat(as(alice), assistant.ChatInput{Message: "hi"})
	for _, tt := range []struct {
		name string
		p    ports.Principal
		id   string
		want error
	}{
		{"nothing runs", alice, sid, ports.ErrConflict},
		{"another user's session", bob, sid, ports.ErrNotFound},
		{"not a uuid", alice, "nope", ports.ErrNotFound},
	} {
		if _, err := e.svc.Stop(as(tt.p), tt.id); !errors.Is(err, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
}

// A turn whose process died (nothing records it alive for a whole lease) is
// ended by the stream route: a client resuming it gets what was stored,
// then error (turn_lost) and done, and may chat in the session again.
func TestReplayEndsALostTurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{TurnLease: time.Minute})
	e.script(say("before"))
	sid, _ := e.chat(as(alice), assistant.ChatInput{Message: "hi"})
	ctx := context.Background()
	// A turn another process started and stored a delta of, then died.
	dead := ports.Turn{ID: "turn-dead", SessionID: sid, StartedAt: e.clock.Now()}
	if err := e.store.StartTurn(ctx, dead, time.Time{}, 0); err != nil {
		t.Fatal(err)
	}
	last, _ := e.store.LastEventSeq(ctx, sid)
	if err := e.store.AppendEvents(ctx, ports.StreamEvent{SessionID: sid, Seq: last + 1, TurnID: dead.ID, Name: "content",
		Data: []byte(`{"session_id":"` + sid + `","message_id":"m","delta":"half"}`), CreatedAt: e.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Chat(as(alice), assistant.ChatInput{SessionID: sid, Message: "again"}); errCode(err) != "turn_running" {
		t.Fatalf("Chat while the turn is within its lease: %v, want turn_running", err)
	}
	e.clock.Advance(time.Minute + time.Second)
	var got []assistant.Event
	ok, err := e.svc.Replay(as(alice), sid, last, func(ev assistant.Event) error { got = append(got, ev); return nil })
	if err != nil || !ok {
		t.Fatalf("Replay: %v, %v", ok, err)
	}
	if !slices.Equal(names(got), []string{"content", "error", "done"}) {
		t.Fatalf("replayed %v, want content, error, done", names(got))
	}
	if er := decode[assistant.ErrorData](t, got[1]); er.Code != "turn_lost" || !er.Retryable {
		t.Errorf("error %+v", er)
	}
	if d := decode[assistant.DoneData](t, got[2]); d.FinishReason != "error" || got[2].TurnID != dead.ID {
		t.Errorf("done %+v of turn %s", d, got[2].TurnID)
	}
	if _, err := e.store.RunningTurn(ctx, sid); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("the lost turn still runs: %v", err)
	}
	e.script(say("after"))
	if _, evs := e.chat(as(alice), assistant.ChatInput{SessionID: sid, Message: "again"}); names(evs)[len(evs)-1] != "done" {
		t.Errorf("chat after the lost turn: %v", names(evs))
	}
}

// A chat in a session whose turn was lost takes it over at once, and the
// sweep ends lost turns no one resumes.
func TestLostTurnsAreEndedByChatAndSweep(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{TurnLease: time.Minute})
	e.script(say("one"), say("two"))
	sid, _ := e.chat(as(alice), assistant.ChatInput{Message: "hi"})
	other, _ := e.chat(as(alice), assistant.ChatInput{Message: "hi"})
	ctx := context.Background()
	for i, s := range []string{sid, other} {
		if err := e.store.StartTurn(ctx, ports.Turn{ID: []string{"lost-1", "lost-2"}[i], SessionID: s, StartedAt: e.clock.Now()}, time.Time{}, 0); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.Advance(2 * time.Minute)
	e.script(say("three"))
	if _, evs := e.chat(as(alice), assistant.ChatInput{SessionID: sid, Message: "again"}); names(evs)[len(evs)-1] != "done" {
		t.Fatalf("chat over a lost turn: %v", names(evs))
	}
	stored := names(e.storedEvents(sid))
	if i := slices.Index(stored, "error"); i < 0 || stored[i+1] != "done" {
		t.Errorf("the lost turn was not ended with error and done: %v", stored)
	}
	n, err := e.svc.FailLostTurns(ctx)
	if err != nil || n != 1 {
		t.Fatalf("FailLostTurns: %d, %v; want the other session's one", n, err)
	}
	if got := names(e.storedEvents(other)); !slices.Equal(got[len(got)-2:], []string{"error", "done"}) {
		t.Errorf("swept turn's events %v", got)
	}
	if n, err := e.svc.FailLostTurns(ctx); err != nil || n != 0 {
		t.Errorf("FailLostTurns again: %d, %v", n, err)
	}
}
