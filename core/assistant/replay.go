package assistant

import (
	"context"
	"slices"
	"time"

	"github.com/devpilot/devpilot/ports"
)

const replayBatch = 500

// Replay is ReplayBatches one event at a time: emit's error stops the batch
// it is in.
func (s *Service) Replay(ctx context.Context, sessionID string, after int64, emit func(Event) error) (bool, error) {
	return s.ReplayBatches(ctx, sessionID, after, func(evs []Event) error {
		for _, ev := range evs {
			if err := emit(ev); err != nil {
				return err
			}
		}
		return nil
	})
}

// ReplayBatches sends the caller's session's stored events with Seq >
// after, then, when a turn is running, follows it live (looking for new
// events every Config.ReplayPoll) until its done event, or until it has
// ended and nothing is left, or ctx ends. emit gets the events read together
// (one or more, in order), to send in one write; it may keep them. It works
// on any replica: everything comes from the stores. An emit error (the
// client is gone) ends it quietly. It returns false when no turn was running
// and there was nothing to send. Errors: not_found when the session is
// absent or another's; the store's errors.
func (s *Service) ReplayBatches(ctx context.Context, sessionID string, after int64, emit func([]Event) error) (bool, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return false, err
	}
	if _, err := s.session(ctx, p.Owner(), sessionID); err != nil {
		return false, err
	}
	turn, err := s.running(ctx, sessionID)
	if err != nil {
		return false, err
	}
	var following string // the turn followed until its done
	if turn != nil {
		following = turn.ID
	}
	after = max(after, 0)
	sent, ended := false, following == ""
	for {
		evs, err := s.d.Events.ListEvents(ctx, sessionID, after, replayBatch)
		if err != nil {
			if ctx.Err() != nil {
				return sent || following != "", nil
			}
			return sent || following != "", err
		}
		full := len(evs) == replayBatch
		done := false
		if following != "" {
			if i := slices.IndexFunc(evs, func(ev Event) bool { return ev.Name == EventDone && ev.TurnID == following }); i >= 0 {
				evs, done = evs[:i+1], true
			}
		}
		if len(evs) > 0 {
			if err := emit(evs); err != nil {
				return true, nil
			}
			sent, after = true, evs[len(evs)-1].Seq
		}
		if done {
			return true, nil
		}
		if full {
			continue
		}
		if ended {
			return sent || following != "", nil
		}
		if !sleep(ctx, s.cfg.ReplayPoll) {
			return true, nil
		}
		t, err := s.running(ctx, sessionID)
		if err != nil {
			if ctx.Err() != nil {
				return true, nil
			}
			return true, err
		}
		// The turn's done is stored before the turn ends, so one more read
		// finds it.
		ended = t == nil || t.ID != following
	}
}

// sleep waits for d; false when ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
