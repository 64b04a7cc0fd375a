package identity

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// InvitationPrefix starts every invitation secret, so that one is told
// apart from an API token (and recognised when it leaks).
const InvitationPrefix = "dpi_"

// The bounds of invitations.
const (
	// DefaultInvitationTTL is how long an invitation may be accepted when
	// its admin does not say.
	DefaultInvitationTTL = 7 * 24 * time.Hour
	// MinInvitationTTL and MaxInvitationTTL bound an invitation's lifetime.
	MinInvitationTTL = time.Hour
	MaxInvitationTTL = 30 * 24 * time.Hour
	// JoinTokenTTL is the lifetime of the API token a user gets with an
	// accepted invitation, their first.
	JoinTokenTTL = 90 * 24 * time.Hour
	// DefaultJoinTokenName names that token when the invitee does not.
	DefaultJoinTokenName = "console"
)

// The audit actions of invitations.
const (
	AuditInvitationCreate = "invitation.create"
	AuditInvitationRevoke = "invitation.revoke"
	AuditInvitationAccept = "invitation.accept"
)

// invitationDisplayPrefix is how much of a secret Invitation.Prefix keeps.
const invitationDisplayPrefix = len(InvitationPrefix) + 6

// errBadInvitation is every refusal of a secret: unknown, malformed,
// expired, accepted or revoked alike, so that a caller learns nothing of
// which secrets exist.
var errBadInvitation = &ports.Error{Kind: ports.KindNotFound, Code: "invalid_invitation",
	Message: "the invitation is unknown, expired, used or revoked; ask an admin for a new one"}

// InviteInput says whom an invitation is for.
type InviteInput struct {
	// Email is the invitee's address; "" lets anyone with the secret join.
	Email string
	// Role is the role the invitee gets; "" means member.
	Role ports.Role
	// TTL is how long it may be accepted; 0 means DefaultInvitationTTL.
	TTL time.Duration
}

// IssuedInvitation is a new invitation. Secret is the only copy of what the
// invitee needs to accept it.
type IssuedInvitation struct {
	Secret     string
	Invitation ports.Invitation
}

// Invite creates an invitation to the caller's organisation; for admins.
// The returned Secret is shown once: only its hash is kept. It is audited.
// Errors: forbidden for a member; invalid (fields email: a plain address
// or none; role: admin, operator or member; expires_in: from MinInvitationTTL to
// MaxInvitationTTL); conflict when the email belongs to a user of the
// organisation already (another organisation's user is not looked at);
// unavailable without an invitation store.
func (s *Service) Invite(ctx context.Context, in InviteInput) (IssuedInvitation, error) {
	p, err := requireAdmin(ctx, "invite people")
	if err != nil {
		return IssuedInvitation{}, err
	}
	if s.d.Invitations == nil {
		return IssuedInvitation{}, errNoInvitations
	}
	var fields []ports.FieldError
	email, field := optionalEmail(in.Email)
	if field != nil {
		fields = append(fields, *field)
	}
	if in.Role == "" {
		in.Role = ports.RoleMember
	}
	if !in.Role.Valid() {
		fields = append(fields, ports.FieldError{Field: "role", Reason: "must be admin, operator or member"})
	}
	if in.TTL == 0 {
		in.TTL = DefaultInvitationTTL
	}
	if in.TTL < MinInvitationTTL || in.TTL > MaxInvitationTTL {
		fields = append(fields, ports.FieldError{Field: "expires_in", Reason: "must be from 1 hour to 30 days"})
	}
	if len(fields) > 0 {
		return IssuedInvitation{}, ports.Invalid("invalid invitation", fields...)
	}
	secret, err := s.newSecretWith(InvitationPrefix)
	if err != nil {
		return IssuedInvitation{}, err
	}
	now := s.d.Clock.Now()
	hash := sha256.Sum256([]byte(secret))
	inv := ports.Invitation{ID: s.d.IDs.NewID(), OrgID: p.OrgID, Email: email, Role: in.Role, Hash: hash[:],
		Prefix: secret[:invitationDisplayPrefix], CreatedBy: p.UserID, CreatedAt: now,
		// To the microsecond, as the databases keep it, so that this Service
		// and the store agree on the instant it expires.
		ExpiresAt: now.Add(in.TTL).Truncate(time.Microsecond)}
	err = s.d.Tx.WithinTx(ctx, func(ctx context.Context) error {
		if email != "" {
			if err := s.emailFree(ctx, p.OrgID, email); err != nil {
				return err
			}
		}
		if err := s.d.Invitations.CreateInvitation(ctx, inv); err != nil {
			return err
		}
		args, _ := json.Marshal(map[string]any{"email": email, "role": in.Role, "expires_at": inv.ExpiresAt.UTC()})
		return s.audit(ctx, p, AuditInvitationCreate, "invitation/"+inv.ID, args, now)
	})
	if err != nil {
		return IssuedInvitation{}, err
	}
	return IssuedInvitation{Secret: secret, Invitation: inv}, nil
}

// ListInvitations returns a page of the caller's organisation's
// invitations, newest first, whatever their status (see
// ports.Invitation.Status), and the next page's cursor; for admins.
// Errors: forbidden for a member; invalid for a bad limit or cursor;
// unavailable without an invitation store.
func (s *Service) ListInvitations(ctx context.Context, page ports.Page) ([]ports.Invitation, string, error) {
	p, err := requireAdmin(ctx, "list its invitations")
	if err != nil {
		return nil, "", err
	}
	if s.d.Invitations == nil {
		return nil, "", errNoInvitations
	}
	if page, err = page.Checked(); err != nil {
		return nil, "", err
	}
	return s.d.Invitations.ListInvitations(ctx, p.OrgID, page)
}

// RevokeInvitation revokes the organisation's invitation id, so that it
// can no longer be accepted; for admins. It is audited. Errors: forbidden
// for a member; not_found for an invitation that is absent or another
// organisation's; conflict when it is revoked or accepted already;
// unavailable without an invitation store.
func (s *Service) RevokeInvitation(ctx context.Context, id string) error {
	p, err := requireAdmin(ctx, "revoke an invitation")
	if err != nil {
		return err
	}
	if s.d.Invitations == nil {
		return errNoInvitations
	}
	if !ports.IsID(id) {
		return ports.NotFound("invitation", id)
	}
	now := s.d.Clock.Now()
	return s.d.Tx.WithinTx(ctx, func(ctx context.Context) error {
		if err := s.d.Invitations.RevokeInvitation(ctx, p.OrgID, id, now); err != nil {
			return err
		}
		return s.audit(ctx, p, AuditInvitationRevoke, "invitation/"+id, json.RawMessage(`{}`), now)
	})
}

// AcceptInput is what an invitee gives to join.
type AcceptInput struct {
	// Secret is the invitation's secret, as Invite returned it.
	Secret string
	// Email is the invitee's address: the invitation's own when it names
	// one (in any case), required otherwise.
	Email string
	// TokenName names the invitee's first API token; "" means
	// DefaultJoinTokenName.
	TokenName string
}

// AcceptInvitation makes the invitee a user of the inviting organisation,
// with the invited role, and issues them their first API token (expiring
// after JoinTokenTTL): the returned Token is the only copy of its secret.
// It needs no principal: the secret is the credential. The invitation is
// used up in the same transaction as the user is created, so that it makes
// one user at most. Its inviter must still be an active admin of the
// organisation. The user's email is unverified (see ports.User): an
// invitation does not prove who owns the mailbox, so signing in through
// the identity provider with that email never reaches this user. It is
// audited as the new user's action. Errors: not_found (code
// invalid_invitation), the same for a secret that is malformed, unknown,
// expired, accepted or revoked, or whose inviter is no longer an admin;
// invalid (fields email, token_name); conflict when the email belongs to a
// user of the inviting organisation already, or when a concurrent
// acceptance of the same invitation won; unavailable without an invitation
// store.
func (s *Service) AcceptInvitation(ctx context.Context, in AcceptInput) (IssuedToken, error) {
	if s.d.Invitations == nil {
		return IssuedToken{}, errNoInvitations
	}
	var fields []ports.FieldError
	email, field := optionalEmail(in.Email)
	if field != nil {
		fields = append(fields, *field)
	}
	name := strings.TrimSpace(in.TokenName)
	switch {
	case name == "":
		name = DefaultJoinTokenName
	case len(name) > maxTokenName:
		fields = append(fields, ports.FieldError{Field: "token_name", Reason: fmt.Sprintf("must be at most %d characters", maxTokenName)})
	case ports.TextFault(name) != "":
		fields = append(fields, ports.FieldError{Field: "token_name", Reason: ports.TextFault(name)})
	}
	if len(fields) > 0 {
		return IssuedToken{}, ports.Invalid("invalid request to join", fields...)
	}
	if !wellFormedWith(in.Secret, InvitationPrefix) {
		return IssuedToken{}, errBadInvitation
	}
	hash := sha256.Sum256([]byte(in.Secret))
	token, err := s.newSecret()
	if err != nil {
		return IssuedToken{}, err
	}
	now := s.d.Clock.Now()
	var out IssuedToken
	err = s.d.Tx.WithinTx(ctx, func(ctx context.Context) error {
		inv, err := s.d.Invitations.GetInvitationByHash(ctx, hash[:])
		if errors.Is(err, ports.ErrNotFound) {
			return errBadInvitation
		}
		if err != nil {
			return err
		}
		if inv.Status(now) != ports.InvitationPending {
			return errBadInvitation
		}
		if err := s.inviterStillAdmin(ctx, inv); err != nil {
			return err
		}
		switch {
		case inv.Email != "" && email != inv.Email:
			return ports.Invalid("the email is not the invitation's",
				ports.FieldError{Field: "email", Reason: "must be the address the invitation was made for"})
		case email == "":
			return ports.Invalid("an email is required", ports.FieldError{Field: "email", Reason: "required"})
		}
		if err := s.emailFree(ctx, inv.OrgID, email); err != nil {
			return err
		}
		org, err := s.d.Orgs.GetOrg(ctx, inv.OrgID)
		if err != nil {
			return err
		}
		// Unverified, whether or not the invitation named the email: it
		// proves that its holder had the link, not that they own the
		// mailbox (the admin who made it may have named anyone's). So
		// signing in through the identity provider never reaches this user
		// by email.
		user := ports.User{ID: s.d.IDs.NewID(), OrgID: inv.OrgID, Email: email, EmailVerified: false, Role: inv.Role, CreatedAt: now}
		// The invitation first: its row decides a race before the user's
		// email does.
		if _, err := s.d.Invitations.AcceptInvitation(ctx, hash[:], now, user.ID); err != nil {
			if errors.Is(err, ports.ErrConflict) {
				return ports.Errorf(ports.KindConflict, "the invitation was accepted by another request at the same time")
			}
			if errors.Is(err, ports.ErrNotFound) {
				return errBadInvitation
			}
			return err
		}
		if err := s.d.Users.CreateUser(ctx, user); err != nil {
			return err
		}
		rec := s.tokenRecord(token, user, name, now, JoinTokenTTL)
		if err := s.d.Tokens.CreateToken(ctx, rec); err != nil {
			return err
		}
		args, _ := json.Marshal(map[string]any{"invitation_id": inv.ID, "email": email, "role": inv.Role,
			"invited_by": inv.CreatedBy, "token_id": rec.ID})
		p := ports.Principal{UserID: user.ID, OrgID: user.OrgID, Role: user.Role}
		if err := s.audit(ctx, p, AuditInvitationAccept, "invitation/"+inv.ID, args, now); err != nil {
			return err
		}
		out = IssuedToken{Token: token, Record: rec, User: user, Org: org}
		return nil
	})
	if err != nil {
		return IssuedToken{}, err
	}
	return out, nil
}

// inviterStillAdmin returns nil when the user who created inv is still an
// admin of its organisation, not removed; otherwise errBadInvitation, as
// for any dead invitation: an admin's invitations die with their role
// (SetMemberRole and RemoveMember revoke them, and this catches one made
// while the role was being taken away).
func (s *Service) inviterStillAdmin(ctx context.Context, inv ports.Invitation) error {
	u, err := s.d.Users.GetUser(ctx, inv.CreatedBy)
	switch {
	case errors.Is(err, ports.ErrNotFound):
		return errBadInvitation
	case err != nil:
		return err
	case u.OrgID != inv.OrgID || u.RemovedAt != nil || u.Role != ports.RoleAdmin:
		return errBadInvitation
	}
	return nil
}

// emailFree returns nil when no user of the org has the email, and
// conflict when one has (a removed one too). Other organisations' users are
// not looked at: whether an address is someone's elsewhere is none of this
// org's business, and an invitation's user never takes over theirs.
func (s *Service) emailFree(ctx context.Context, orgID, email string) error {
	users, err := s.d.Users.ListUsersByEmail(ctx, email)
	if err != nil {
		return err
	}
	if slices.ContainsFunc(users, func(u ports.User) bool { return u.OrgID == orgID }) {
		return ports.Errorf(ports.KindConflict, "%s is a member of the organisation already", email)
	}
	return nil
}

// optionalEmail returns the email lower-cased, "" for none, or the field
// error that refuses it.
func optionalEmail(s string) (string, *ports.FieldError) {
	if reason := ports.TextFault(s); reason != "" {
		return "", &ports.FieldError{Field: "email", Reason: reason}
	}
	if strings.TrimSpace(s) == "" {
		return "", nil
	}
	email, err := normaliseEmail(s)
	if err != nil {
		return "", &ports.FieldError{Field: "email", Reason: "must be a plain email address"}
	}
	return email, nil
}

var errNoInvitations = &ports.Error{Kind: ports.KindUnavailable, Message: "invitations are not available"}
