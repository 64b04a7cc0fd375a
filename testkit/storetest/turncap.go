package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// testTurnCap covers the cap on a user's running turns (maxPerUser) of
// StartTurn, StartSession and ContinueSession.
func testTurnCap(t *testing.T, s assistantStores) {
	ctx := t.Context()
	const maxTurns = 2
	owner, a := newChat(t, s)
	b := mustCreateSession(t, s, newSession(owner))
	c := mustCreateSession(t, s, newSession(owner))
	longAgo := base.Add(-time.Hour)

	first := newTurn(a.ID, base)
	if err := s.Turns.StartTurn(ctx, first, longAgo, maxTurns); err != nil {
		t.Fatalf("StartTurn under the cap: %v", err)
	}
	second := newTurn(b.ID, base.Add(10*time.Minute))
	if err := s.Turns.StartTurn(ctx, second, longAgo, maxTurns); err != nil {
		t.Fatalf("StartTurn up to the cap: %v", err)
	}

	// At the cap, nothing of a refused start is stored.
	checkErr(t, "StartTurn at the cap", s.Turns.StartTurn(ctx, newTurn(c.ID, base.Add(11*time.Minute)), longAgo, maxTurns), ports.ErrTooManyTurns)
	_, err := s.Turns.RunningTurn(ctx, c.ID)
	checkErr(t, "RunningTurn of a refused session", err, ports.ErrNotFound)
	turn, msg := continueTurn(c, base.Add(11*time.Minute), "deploy the api")
	_, err = s.Sessions.ContinueSession(ctx, owner, turn, msg, longAgo, maxTurns)
	checkErr(t, "ContinueSession at the cap", err, ports.ErrTooManyTurns)
	if msgs, err := s.Messages.ListMessages(ctx, c.ID); err != nil || len(msgs) != 0 {
		t.Errorf("messages after a refused ContinueSession: %d, %v; want none", len(msgs), err)
	}
	fresh := newSession(owner)
	turn, msg = continueTurn(fresh, base.Add(11*time.Minute), "deploy the api")
	checkErr(t, "StartSession at the cap", s.Sessions.StartSession(ctx, fresh, turn, msg, longAgo, maxTurns), ports.ErrTooManyTurns)
	_, err = s.Sessions.GetSession(ctx, owner, fresh.ID)
	checkErr(t, "GetSession of a refused StartSession", err, ports.ErrNotFound)

	// No cap, and another user's turns, are not held back.
	if err := s.Turns.StartTurn(ctx, newTurn(c.ID, base.Add(11*time.Minute)), longAgo, 0); err != nil {
		t.Fatalf("StartTurn without a cap: %v", err)
	}
	colleague := seedColleague(t, s.Identity, owner.OrgID)
	theirs := newSession(colleague)
	turn, msg = continueTurn(theirs, base.Add(11*time.Minute), "list my repos")
	if err := s.Sessions.StartSession(ctx, theirs, turn, msg, longAgo, 1); err != nil {
		t.Fatalf("StartSession of another user: %v", err)
	}
	if err := s.Turns.EndTurn(ctx, turn.ID, base.Add(12*time.Minute)); err != nil {
		t.Fatalf("EndTurn: %v", err)
	}

	// Stale turns are not counted: of three running, first is stale.
	staleBefore := base.Add(5 * time.Minute)
	d := mustCreateSession(t, s, newSession(owner))
	checkErr(t, "StartTurn at the cap counting every turn", s.Turns.StartTurn(ctx, newTurn(d.ID, base.Add(12*time.Minute)), longAgo, 3), ports.ErrTooManyTurns)
	if err := s.Turns.StartTurn(ctx, newTurn(d.ID, base.Add(12*time.Minute)), staleBefore, 3); err != nil {
		t.Fatalf("StartTurn under the cap with one turn stale: %v", err)
	}

	// The session's own running turn is not counted: it is taken over.
	e := mustCreateSession(t, s, newSession(owner))
	if err := s.Turns.EndTurn(ctx, second.ID, base.Add(13*time.Minute)); err != nil {
		t.Fatalf("EndTurn: %v", err)
	}
	// Running now: first (stale), c's and d's turns.
	turn, msg = continueTurn(e, base.Add(14*time.Minute), "deploy the api")
	if _, err := s.Sessions.ContinueSession(ctx, owner, turn, msg, staleBefore, 3); err != nil {
		t.Fatalf("ContinueSession under the cap: %v", err)
	}
	over := newTurn(a.ID, base.Add(15*time.Minute))
	checkErr(t, "StartTurn over the session's stale turn at the cap", s.Turns.StartTurn(ctx, over, staleBefore, 3), ports.ErrTooManyTurns)
	checkRunningTurn(t, s, "RunningTurn after a refused takeover", a.ID, first)
	if err := s.Turns.StartTurn(ctx, over, staleBefore, 4); err != nil {
		t.Fatalf("StartTurn over the session's stale turn under the cap: %v", err)
	}
	checkRunningTurn(t, s, "RunningTurn after the takeover", a.ID, over)
}

// testRaceTurnCap starts turns of one user in many sessions at once, with
// StartTurn, ContinueSession and StartSession: exactly the cap get through.
func testRaceTurnCap(t *testing.T, s assistantStores) {
	const n, maxTurns = 12, 3
	owner := seedOwner(t, s.Identity)
	sessions := make([]ports.ChatSession, n)
	for i := range sessions {
		sessions[i] = newSession(owner)
		if i%3 != 2 {
			mustCreateSession(t, s, sessions[i])
		}
	}
	longAgo := base.Add(-time.Hour)
	errs := race(n, func(i int) error {
		turn, msg := continueTurn(sessions[i], base, "deploy the api")
		switch i % 3 {
		case 0:
			return s.Turns.StartTurn(t.Context(), turn, longAgo, maxTurns)
		case 1:
			_, err := s.Sessions.ContinueSession(t.Context(), owner, turn, msg, longAgo, maxTurns)
			return err
		default:
			return s.Sessions.StartSession(t.Context(), sessions[i], turn, msg, longAgo, maxTurns)
		}
	})
	started := 0
	for i, err := range errs {
		switch {
		case err == nil:
			started++
		case !errors.Is(err, ports.ErrTooManyTurns):
			t.Errorf("start %d: %v, want nil or too_many_turns", i, err)
		}
	}
	if started != maxTurns {
		t.Errorf("%d turns started, want %d", started, maxTurns)
	}
	running := 0
	for i, cs := range sessions {
		_, err := s.Turns.RunningTurn(t.Context(), cs.ID)
		switch {
		case err == nil:
			running++
			if errs[i] != nil {
				t.Errorf("session %d has a running turn after its start was refused", i)
			}
		case !errors.Is(err, ports.ErrNotFound):
			t.Errorf("RunningTurn %d: %v", i, err)
		}
	}
	if running != maxTurns {
		t.Errorf("%d turns running, want %d", running, maxTurns)
	}
}
