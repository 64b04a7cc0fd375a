package httpapi

import (
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/devpilot/devpilot/ports"
)

func (s *Server) livez(w http.ResponseWriter, _ *http.Request) error {
	return writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	select {
	case <-s.stopping:
		return &ports.Error{Kind: ports.KindUnavailable, Message: "shutting down"}
	default:
	}
	if err := s.d.Ready.Ready(r.Context()); err != nil {
		if r.Context().Err() != nil {
			return err
		}
		reason := "not ready" // other errors may name hosts or users: logged, not shown
		if pe, ok := ports.AsError(err); ok && pe.Message != "" {
			reason = pe.Message
		}
		// Probes ask every few seconds: the reason is logged when it
		// changes ("31 migrations pending: run devpilot migrate" once),
		// not with every answer.
		infoFrom(r.Context()).quietAlways = true
		if s.readiness.change(reason) {
			s.logFor(r.Context()).Warn("not ready: "+reason, slog.Any("error", err))
		}
		pe := &ports.Error{Kind: ports.KindUnavailable, Message: reason, Err: err}
		s.writeProblem(w, r, publicProblem(r.Context(), pe), pe)
		return nil
	}
	if s.readiness.change("") {
		s.logFor(r.Context()).Info("ready")
	}
	body := map[string]string{"status": "ready"}
	if s.d.Providers != "" {
		body["providers"] = s.d.Providers
	}
	return writeJSON(w, http.StatusOK, body)
}

type meResponse struct {
	User meUser `json:"user"`
	Org  meOrg  `json:"org"`
}

type meUser struct {
	ID            string    `json:"id"`
	Email         string    `json:"email"`
	EmailVerified bool      `json:"email_verified"`
	Role          string    `json:"role"`
	CreatedAt     time.Time `json:"created_at"`
}

type meOrg struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
}

func (s *Server) me(w http.ResponseWriter, r *http.Request) error {
	me, err := s.d.Identity.Me(r.Context())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, meOut(me.User, me.Org))
}

func meOut(u ports.User, o ports.Org) meResponse {
	return meResponse{
		User: meUser{ID: u.ID, Email: u.Email, EmailVerified: u.EmailVerified, Role: string(u.Role), CreatedAt: u.CreatedAt.UTC()},
		Org:  meOrg{ID: o.ID, Name: o.Name, CreatedAt: o.CreatedAt.UTC()},
	}
}

// readiness remembers the reason /readyz last answered not ready ("" when
// ready, or never asked), so that a reason is logged once, when it changes.
type readiness struct {
	mu     sync.Mutex
	reason string
}

// change records reason and reports whether it differs from the last one.
func (rd *readiness) change(reason string) bool {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	changed := rd.reason != reason
	rd.reason = reason
	return changed
}
