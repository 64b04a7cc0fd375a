package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/ports"
)

// Invitations is what /api/v1/invitations calls: admins invite people to
// their organisation, and an invitee accepts, unauthenticated, with the
// invitation's secret.
type Invitations interface {
	Invite(ctx context.Context, in identity.InviteInput) (identity.IssuedInvitation, error)
	ListInvitations(ctx context.Context, page ports.Page) ([]ports.Invitation, string, error)
	RevokeInvitation(ctx context.Context, id string) error
	AcceptInvitation(ctx context.Context, in identity.AcceptInput) (identity.IssuedToken, error)
}

// consoleJoinPath is the console page an invitee opens: the secret follows it in
// the URL's fragment, which browsers never send, so it stays out of every
// server's and proxy's logs.
const consoleJoinPath = "/#/join/"

// invitationRoutes serve invitations: to admins, and the acceptance to
// anyone with a secret. The acceptance is costly: without a principal it
// takes from the caller's address's rate bucket.
func (s *Server) invitationRoutes() {
	s.handle(http.MethodGet, "/api/v1/invitations", s.listInvitations)
	s.handle(http.MethodPost, "/api/v1/invitations", s.createInvitation)
	s.handle(http.MethodDelete, "/api/v1/invitations/:invitation_id", s.revokeInvitation)
	s.handle(http.MethodPost, "/api/v1/invitations/accept", s.acceptInvitation, public, costly, maxBody(16<<10))
}

// invitationJSON is an invitation as listed: never its secret.
type invitationJSON struct {
	ID         string     `json:"id"`
	Email      *string    `json:"email"`
	Role       string     `json:"role"`
	Status     string     `json:"status"`
	Prefix     string     `json:"prefix"`
	CreatedBy  string     `json:"created_by"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  time.Time  `json:"expires_at"`
	AcceptedAt *time.Time `json:"accepted_at"`
	AcceptedBy *string    `json:"accepted_by"`
	RevokedAt  *time.Time `json:"revoked_at"`
}

func invitationOut(inv ports.Invitation, now time.Time) invitationJSON {
	utc := func(p *time.Time) *time.Time {
		if p == nil {
			return nil
		}
		v := p.UTC()
		return &v
	}
	str := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	return invitationJSON{ID: inv.ID, Email: str(inv.Email), Role: string(inv.Role), Status: string(inv.Status(now)),
		Prefix: inv.Prefix, CreatedBy: inv.CreatedBy, CreatedAt: inv.CreatedAt.UTC(), ExpiresAt: inv.ExpiresAt.UTC(),
		AcceptedAt: utc(inv.AcceptedAt), AcceptedBy: str(inv.AcceptedBy), RevokedAt: utc(inv.RevokedAt)}
}

func (s *Server) listInvitations(w http.ResponseWriter, r *http.Request) error {
	page, err := pageParams(r)
	if err != nil {
		return err
	}
	invs, next, err := s.d.Invitations.ListInvitations(r.Context(), page)
	if err != nil {
		return err
	}
	now := time.Now()
	return writeJSON(w, http.StatusOK, list(mapSlice(invs, func(inv ports.Invitation) invitationJSON { return invitationOut(inv, now) }), next))
}

type createInvitationRequest struct {
	Email         *string `json:"email"`
	Role          *string `json:"role"`
	ExpiresInDays *int    `json:"expires_in_days"`
}

// createdInvitationJSON is a new invitation: the only time its secret is
// shown.
type createdInvitationJSON struct {
	Invitation invitationJSON `json:"invitation"`
	Secret     string         `json:"secret"`
	JoinURL    string         `json:"join_url"`
}

func (s *Server) createInvitation(w http.ResponseWriter, r *http.Request) error {
	var req createInvitationRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	var in identity.InviteInput
	if req.Email != nil {
		in.Email = *req.Email
	}
	if req.Role != nil {
		in.Role = ports.Role(*req.Role)
	}
	if req.ExpiresInDays != nil {
		days := *req.ExpiresInDays
		if days < 1 || days > 30 {
			return ports.Invalid("invalid invitation", ports.FieldError{Field: "expires_in_days", Reason: "must be from 1 to 30"})
		}
		in.TTL = time.Duration(days) * 24 * time.Hour
	}
	issued, err := s.d.Invitations.Invite(r.Context(), in)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, createdInvitationJSON{
		Invitation: invitationOut(issued.Invitation, issued.Invitation.CreatedAt),
		Secret:     issued.Secret,
		JoinURL:    consoleJoinPath + issued.Secret,
	})
}

func (s *Server) revokeInvitation(w http.ResponseWriter, r *http.Request) error {
	if err := s.d.Invitations.RevokeInvitation(r.Context(), pathParam(r, "invitation_id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type acceptInvitationRequest struct {
	Secret    *string `json:"secret"`
	Email     *string `json:"email"`
	TokenName *string `json:"token_name"`
}

// joinedJSON is a new user with their first token: the only time its secret
// is shown.
type joinedJSON struct {
	User        meUser    `json:"user"`
	Org         meOrg     `json:"org"`
	Token       string    `json:"token"`
	TokenRecord tokenJSON `json:"token_record"`
}

func (s *Server) acceptInvitation(w http.ResponseWriter, r *http.Request) error {
	var req acceptInvitationRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.Secret == nil || req.Email == nil {
		var fields []string
		if req.Secret == nil {
			fields = append(fields, "secret")
		}
		if req.Email == nil {
			fields = append(fields, "email")
		}
		return missing(fields...)
	}
	in := identity.AcceptInput{Secret: *req.Secret, Email: *req.Email}
	if req.TokenName != nil {
		in.TokenName = *req.TokenName
	}
	joined, err := s.d.Invitations.AcceptInvitation(r.Context(), in)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, joinedJSON{
		User:        meUser{ID: joined.User.ID, Email: joined.User.Email, Role: string(joined.User.Role), CreatedAt: joined.User.CreatedAt.UTC()},
		Org:         meOrg{ID: joined.Org.ID, Name: joined.Org.Name, CreatedAt: joined.Org.CreatedAt.UTC()},
		Token:       joined.Token,
		TokenRecord: tokenOut(joined.Record, joined.Record.CreatedAt),
	})
}
