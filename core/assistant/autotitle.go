package assistant

import (
	"context"
	"sync"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// autoTitleTimeout bounds the model call that titles a session by itself.
const autoTitleTimeout = time.Minute

// titles tracks the sessions being titled in the background.
type titles struct {
	wg sync.WaitGroup
}

// titleAfterTurn, with Config.AutoTitle, titles r's session in the
// background once a turn of it has answered (answered is the id of the
// turn's last assistant message, "" for none) while the session has no
// title: one short model call, charged to the user as the title feature
// (GenerateTitle). It starts after the turn's done was sent, so it never
// delays the stream. A failure is logged; the session stays untitled, and
// the next answered turn tries again.
func (s *Service) titleAfterTurn(ctx context.Context, r *Run, answered string) {
	if !s.cfg.AutoTitle || answered == "" {
		return
	}
	ctx = context.WithoutCancel(ctx)
	s.titles.wg.Go(func() {
		ctx, cancel := context.WithTimeout(ctx, autoTitleTimeout)
		defer cancel()
		sess, err := s.d.Sessions.GetSession(ctx, r.p.Owner(), r.session.ID)
		if err != nil || sess.Title != "" {
			if err != nil && !ports.IsKind(err, ports.KindNotFound) { // a deleted session needs no title
				s.log.Warn("reading a session to title it", "session_id", r.session.ID, "err", err)
			}
			return
		}
		if _, err := s.GenerateTitle(ctx, r.session.ID); err != nil && !ports.IsKind(err, ports.KindNotFound) {
			s.log.Warn("titling a session after its first answer", "session_id", r.session.ID, "err", err)
		}
	})
}

// Drain waits until the sessions being titled in the background
// (Config.AutoTitle) are titled, or ctx ends (its error is returned then).
// A host calls it as it stops.
func (s *Service) Drain(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		s.titles.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
