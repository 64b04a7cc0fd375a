package identity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// The audit actions of members.
const (
	AuditMemberRole   = "member.role"
	AuditMemberRemove = "member.remove"
)

// CodeLastAdmin (conflict) refuses to leave an organisation without an
// admin.
const CodeLastAdmin = ports.CodeLastAdmin

// Members returns a page of the caller's organisation's users by email, and
// the next page's cursor; for admins. Errors: forbidden for a member;
// invalid for a bad limit or cursor.
func (s *Service) Members(ctx context.Context, page ports.Page) ([]ports.User, string, error) {
	p, err := requireAdmin(ctx, "list the organisation's members")
	if err != nil {
		return nil, "", err
	}
	if page, err = page.Checked(); err != nil {
		return nil, "", err
	}
	return s.d.Users.ListUsers(ctx, p.OrgID, page)
}

// SetMemberRole makes the organisation's user userID an admin or a member;
// for admins. Their tokens carry the new role at once on this replica and
// within Deps.CacheFor on the others. An admin made a member loses their
// pending invitations, revoked in the same transaction. It is audited.
// Setting the role a user has already changes nothing and records
// nothing. The last-admin check is the store's, atomic with the change, so
// two admins demoting each other at once leave one. Errors: forbidden
// for a member; invalid (field role) for an unknown role; not_found for a
// user that is absent or another organisation's; conflict (code
// last_admin) for the organisation's last admin made a member.
func (s *Service) SetMemberRole(ctx context.Context, userID string, role ports.Role) (ports.User, error) {
	p, err := requireAdmin(ctx, "change a member's role")
	if err != nil {
		return ports.User{}, err
	}
	if !role.Valid() {
		return ports.User{}, ports.Invalid("unknown role", ports.FieldError{Field: "role", Reason: "must be admin, operator or member"})
	}
	notFound := ports.NotFound("member", userID)
	if !ports.IsID(userID) {
		return ports.User{}, notFound
	}
	var out ports.User
	err = s.d.Tx.WithinTx(ctx, func(ctx context.Context) error {
		u, err := s.d.Users.GetUser(ctx, userID)
		if err != nil {
			return err
		}
		if u.OrgID != p.OrgID {
			return notFound
		}
		out = u
		if u.Role == role {
			return nil
		}
		if err := s.d.Users.SetUserRole(ctx, p.OrgID, userID, role); err != nil {
			return lastAdmin(err, u)
		}
		fields := map[string]any{"email": u.Email, "from": u.Role, "to": role}
		if u.Role == ports.RoleAdmin {
			n, err := s.revokeInvitationsBy(ctx, u, s.d.Clock.Now())
			if err != nil {
				return err
			}
			fields["invitations_revoked"] = n
		}
		args, _ := json.Marshal(fields)
		out.Role = role
		return s.audit(ctx, p, AuditMemberRole, "user/"+userID, args, s.d.Clock.Now())
	})
	if err != nil {
		return ports.User{}, err
	}
	s.forgetUser(ctx, p.OrgID, userID)
	return out, nil
}

// RemoveMember removes the organisation's user userID; for admins. Every
// token of theirs is revoked in the same transaction, so it is refused at
// once on every replica that watches revocations (PostgreSQL), and the user
// is refused authentication from then on; so is every invitation of theirs
// still pending; their records stay. It is audited. The last-admin check
// is the store's, atomic with the removal. Errors: forbidden for a member;
// not_found for a user that is absent, another organisation's or removed
// already; conflict (code last_admin) for the organisation's last admin.
func (s *Service) RemoveMember(ctx context.Context, userID string) error {
	p, err := requireAdmin(ctx, "remove a member")
	if err != nil {
		return err
	}
	notFound := ports.NotFound("member", userID)
	if !ports.IsID(userID) {
		return notFound
	}
	now := s.d.Clock.Now()
	var revoked []string
	err = s.d.Tx.WithinTx(ctx, func(ctx context.Context) error {
		u, err := s.d.Users.GetUser(ctx, userID)
		if err != nil {
			return err
		}
		if u.OrgID != p.OrgID || u.RemovedAt != nil {
			return notFound
		}
		if err := s.d.Users.RemoveUser(ctx, p.OrgID, userID, now); err != nil {
			return lastAdmin(err, u)
		}
		invitations, err := s.revokeInvitationsBy(ctx, u, now)
		if err != nil {
			return err
		}
		tokens, err := s.d.Tokens.ListTokens(ctx, p.OrgID, userID)
		if err != nil {
			return err
		}
		revoked = revoked[:0]
		for _, t := range tokens {
			if t.RevokedAt != nil {
				continue
			}
			if err := s.d.Tokens.RevokeToken(ctx, p.OrgID, t.ID, now); err != nil {
				return err
			}
			revoked = append(revoked, t.ID)
		}
		args, _ := json.Marshal(map[string]any{"email": u.Email, "tokens_revoked": len(revoked), "invitations_revoked": invitations})
		return s.audit(ctx, p, AuditMemberRemove, "user/"+userID, args, now)
	})
	if err != nil {
		return err
	}
	for _, id := range revoked {
		s.cache.forget(id)
	}
	return nil
}

// lastAdmin returns err, or for the store's last-admin conflict the one
// that says who u is and what to do.
func lastAdmin(err error, u ports.User) error {
	if !errors.Is(err, ports.ErrLastAdmin) {
		return err
	}
	return &ports.Error{Kind: ports.KindConflict, Code: CodeLastAdmin,
		Message: fmt.Sprintf("%s is the organisation's last admin; make another member an admin first", u.Email)}
}

// revokeInvitationsBy revokes the invitations u created that are still
// pending at now, when the Service keeps invitations, and returns how many.
func (s *Service) revokeInvitationsBy(ctx context.Context, u ports.User, now time.Time) (int, error) {
	if s.d.Invitations == nil {
		return 0, nil
	}
	return s.d.Invitations.RevokeInvitationsBy(ctx, u.OrgID, u.ID, now)
}

// forgetUser drops the user's tokens from this replica's cache of verified
// tokens, so that their next request reads the user afresh.
func (s *Service) forgetUser(ctx context.Context, orgID, userID string) {
	tokens, err := s.d.Tokens.ListTokens(ctx, orgID, userID)
	if err != nil {
		return // the cache lets them go within Deps.CacheFor anyway
	}
	for _, t := range tokens {
		s.cache.forget(t.ID)
	}
}

// requireAdmin returns the principal of ctx when it is an admin of its
// organisation; forbidden otherwise, saying what it may not do.
func requireAdmin(ctx context.Context, what string) (ports.Principal, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return ports.Principal{}, err
	}
	if !p.IsAdmin() {
		return ports.Principal{}, &ports.Error{Kind: ports.KindForbidden, Message: "only an organisation admin may " + what}
	}
	return p, nil
}
