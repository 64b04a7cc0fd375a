package spec

import (
	"context"
	"errors"

	"github.com/devpilot/devpilot/ports"
)

// SessionOption sets up a session CreateSession makes.
type SessionOption func(*sessionOptions)

type sessionOptions struct{ repoID string }

// InRepository links the new session to the caller's connected repository
// repoID (devpilot's id, as GET /scm/repos lists it); "" links none.
func InRepository(repoID string) SessionOption {
	return func(o *sessionOptions) { o.repoID = repoID }
}

// SetRepository links the caller's session to one of the caller's connected
// repositories, or unlinks it when repoID is "", and returns the session as
// it now stands. The PRPs generated afterwards are grounded in the
// repository: its tree, files like those each story touches, and its test
// and build commands. A generation running already is not affected.
//
// Errors: not_found when the session is absent or another's; invalid
// (repo_id) when repoID is not one of the caller's repositories, or
// repositories cannot be linked here.
func (s *Service) SetRepository(ctx context.Context, sessionID, repoID string) (View, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return View{}, err
	}
	if !ports.IsID(sessionID) {
		return View{}, ports.NotFound("specification session", sessionID)
	}
	if _, err := s.d.Specs.GetSpecSession(ctx, p.Owner(), sessionID); err != nil {
		return View{}, err
	}
	if repoID != "" {
		if err := s.checkRepository(ctx, p, repoID); err != nil {
			return View{}, err
		}
	}
	if _, err := s.d.Specs.SetSpecRepository(ctx, p.Owner(), sessionID, repoID, s.d.Clock.Now()); err != nil {
		return View{}, err
	}
	return s.GetSession(ctx, sessionID)
}

// checkRepository returns invalid (repo_id) unless repoID is one of p's
// connected repositories.
func (s *Service) checkRepository(ctx context.Context, p ports.Principal, repoID string) error {
	bad := func(reason string) error {
		return ports.Invalid("repo_id is not one of your connected repositories", ports.FieldError{Field: "repo_id", Reason: reason})
	}
	if s.d.Repos == nil {
		return bad("repositories cannot be linked: no source-control integration is configured")
	}
	if !ports.IsID(repoID) {
		return bad("unknown repository")
	}
	_, err := s.d.Repos.GetRepository(ctx, p.Owner(), repoID)
	if errors.Is(err, ports.ErrNotFound) {
		return bad("unknown repository")
	}
	return err
}
