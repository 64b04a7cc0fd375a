package assistant

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// errStopRequested is the cause a turn's context is cancelled with when a
// user stops it.
var errStopRequested = errors.New("the user stopped the reply")

// errTurnEnded is the cause a turn's context is cancelled with when it was
// ended by another (as lost) while it still ran.
var errTurnEnded = errors.New("the turn was ended as lost")

// Stop asks the running turn of the caller's session to stop, on whichever
// replica it runs: the request is stored, the turn learns of it at once in
// this process and at its next heartbeat (Config.TurnHeartbeat) elsewhere.
// The turn then ends with done{finish_reason:"stopped"}, keeping what was
// said; a tool call it has not started is not run. It returns the turn
// asked to stop. A lost turn (see Config.TurnLease) is ended at once with
// turn_lost. Errors: not_found when the session is absent or another's;
// conflict (no_turn_running) when no turn runs in it.
func (s *Service) Stop(ctx context.Context, sessionID string) (ports.Turn, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return ports.Turn{}, err
	}
	if _, err := s.session(ctx, p.Owner(), sessionID); err != nil {
		return ports.Turn{}, err
	}
	t, err := s.d.Turns.RunningTurn(ctx, sessionID)
	switch {
	case errors.Is(err, ports.ErrNotFound):
		return ports.Turn{}, noTurnRunning(sessionID, err)
	case err != nil:
		return ports.Turn{}, err
	case s.stale(t):
		return ports.Turn{}, noTurnRunning(sessionID, nil)
	case s.lost(t):
		if err := s.endLost(ctx, t); err != nil {
			return ports.Turn{}, err
		}
		return t, nil
	}
	t, err = s.d.Turns.RequestStop(ctx, sessionID, s.d.Clock.Now())
	if errors.Is(err, ports.ErrNotFound) { // it ended meanwhile
		return ports.Turn{}, noTurnRunning(sessionID, err)
	}
	if err != nil {
		return ports.Turn{}, err
	}
	if stop, ok := s.local.Load(t.ID); ok {
		stop.(func(error))(errStopRequested)
	}
	return t, nil
}

func noTurnRunning(sessionID string, cause error) error {
	return &ports.Error{Kind: ports.KindConflict, Code: CodeNoTurnRunning,
		Message: fmt.Sprintf("chat session %s has no reply in progress", sessionID), Err: cause}
}

// watch keeps the running turn alive in the store and stops it (with
// stop's cause) when a user asks, here or on another replica, or when
// another ended it as lost. The function it returns ends the watch and
// waits for it.
func (s *Service) watch(ctx context.Context, turnID string, stop func(error)) (end func()) {
	s.local.Store(turnID, stop)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(s.cfg.TurnHeartbeat)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
			}
			t, err := s.d.Turns.HeartbeatTurn(ctx, turnID, s.d.Clock.Now())
			switch {
			case err != nil:
				s.log.Warn("recording that a chat turn is alive", "turn_id", turnID, "err", err)
			case t.EndedAt != nil:
				stop(errTurnEnded)
			case t.StopRequestedAt != nil:
				stop(errStopRequested)
			}
		}
	})
	return func() {
		s.local.Delete(turnID)
		close(quit)
		wg.Wait()
	}
}
