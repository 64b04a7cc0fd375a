package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// Membership is what /api/v1/members calls: an organisation's users, for
// its admins.
type Membership interface {
	Members(ctx context.Context, page ports.Page) ([]ports.User, string, error)
	SetMemberRole(ctx context.Context, userID string, role ports.Role) (ports.User, error)
	RemoveMember(ctx context.Context, userID string) error
}

// memberRoutes serve the organisation's members to its admins.
func (s *Server) memberRoutes() {
	s.handle(http.MethodGet, "/api/v1/members", s.listMembers)
	s.handle(http.MethodPatch, "/api/v1/members/:user_id", s.updateMember)
	s.handle(http.MethodDelete, "/api/v1/members/:user_id", s.removeMember)
}

func (s *Server) removeMember(w http.ResponseWriter, r *http.Request) error {
	if err := s.d.Members.RemoveMember(r.Context(), pathParam(r, "user_id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type memberJSON struct {
	ID    string `json:"id"`
	Email string `json:"email"`
	// EmailVerified is false for a user who joined through an invitation:
	// their address was never proven theirs (see ports.User).
	EmailVerified bool      `json:"email_verified"`
	Role          string    `json:"role"`
	CreatedAt     time.Time `json:"created_at"`
}

func memberOut(u ports.User) memberJSON {
	return memberJSON{ID: u.ID, Email: u.Email, EmailVerified: u.EmailVerified, Role: string(u.Role), CreatedAt: u.CreatedAt.UTC()}
}

func (s *Server) listMembers(w http.ResponseWriter, r *http.Request) error {
	page, err := pageParams(r)
	if err != nil {
		return err
	}
	users, next, err := s.d.Members.Members(r.Context(), page)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, list(mapSlice(users, memberOut), next))
}

type updateMemberRequest struct {
	Role *string `json:"role"`
}

func (s *Server) updateMember(w http.ResponseWriter, r *http.Request) error {
	var req updateMemberRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.Role == nil {
		return missing("role")
	}
	u, err := s.d.Members.SetMemberRole(r.Context(), pathParam(r, "user_id"), ports.Role(*req.Role))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, memberOut(u))
}
