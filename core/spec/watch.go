package spec

import (
	"context"

	"github.com/devpilot/devpilot/core/internal/watch"
	"github.com/devpilot/devpilot/ports"
)

// StateTag identifies a state of a session for a progress stream (its SSE
// event id): the time of the session's last change, in microseconds. A
// client that resumes with the tag of the state it saw is sent the next
// state only. Tags are not ordered across replicas' clocks, and are not
// compared as if they were: a state is sent when its tag differs.
func StateTag(s ports.SpecSession) int64 { return s.UpdatedAt.UnixMicro() }

// WatchSession announces the states of the caller's session as they
// commit, on any replica: it calls emit with the session now, then with
// each new state (read every Config.WatchPoll) until ctx ends. A stage
// stored and the next one started in one transaction (a generation through
// a later stage) are one new state. An emit error (the client is gone)
// ends it quietly. Errors: not_found when the session is absent or
// another's, also when it is deleted while watched; the store's errors
// other than ctx's end.
func (s *Service) WatchSession(ctx context.Context, sessionID string, emit func(ports.SpecSession) error) error {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return err
	}
	if !ports.IsID(sessionID) {
		return ports.NotFound("specification session", sessionID)
	}
	read := func(ctx context.Context) (ports.SpecSession, error) {
		return s.d.Specs.GetSpecSession(ctx, p.Owner(), sessionID)
	}
	return watch.Poll(ctx, s.cfg.WatchPoll, read, changed, emit)
}

// changed reports whether b is another state than a, as a progress stream
// tells them apart.
func changed(a, b ports.SpecSession) bool {
	return !a.UpdatedAt.Equal(b.UpdatedAt) || a.Status != b.Status || a.CurrentStage != b.CurrentStage ||
		a.Generating != b.Generating || a.GenerationID != b.GenerationID || (a.Error == nil) != (b.Error == nil) || a.Name != b.Name
}
