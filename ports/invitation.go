package ports

import (
	"context"
	"time"
)

//go:generate go tool mockgen -typed -destination ../testkit/mocks/invitation.go -package mocks . InvitationStore

// Invitation lets someone join an organisation with a role, once: an admin
// creates it and hands its secret to the invitee, who accepts it to become a
// user. The secret itself is never stored: only its SHA-256 (Hash) and a
// short non-secret Prefix for recognising it.
type Invitation struct {
	ID    string
	OrgID string
	// Email is whom the invitation is for; "" lets anyone with the secret
	// accept it.
	Email     string
	Role      Role
	Hash      []byte
	Prefix    string
	CreatedBy string // the id of the admin who created it
	CreatedAt time.Time
	ExpiresAt time.Time
	// AcceptedAt and AcceptedBy (a user id) are set once it is accepted.
	AcceptedAt *time.Time
	AcceptedBy string
	RevokedAt  *time.Time
}

// InvitationStatus says whether an invitation may still be accepted.
type InvitationStatus string

// The statuses of an invitation.
const (
	InvitationPending  InvitationStatus = "pending"  // it may be accepted
	InvitationAccepted InvitationStatus = "accepted" // it was accepted
	InvitationRevoked  InvitationStatus = "revoked"  // an admin revoked it before it was accepted
	InvitationExpired  InvitationStatus = "expired"  // its ExpiresAt is not after now
)

// Status is the invitation's status at now: accepted or revoked once so,
// expired from ExpiresAt on, pending otherwise. Only a pending invitation
// may be accepted.
func (i Invitation) Status(now time.Time) InvitationStatus {
	switch {
	case i.AcceptedAt != nil:
		return InvitationAccepted
	case i.RevokedAt != nil:
		return InvitationRevoked
	case !now.Before(i.ExpiresAt):
		return InvitationExpired
	}
	return InvitationPending
}

// InvitationStore keeps invitations.
type InvitationStore interface {
	// CreateInvitation stores a new invitation; conflict when the id or
	// hash exists already; not_found when the org does not exist.
	CreateInvitation(ctx context.Context, inv Invitation) error
	// GetInvitationByHash returns the invitation with the SHA-256 hash,
	// whatever its status; not_found when absent.
	GetInvitationByHash(ctx context.Context, hash []byte) (Invitation, error)
	// ListInvitations returns a page of the org's invitations, newest first
	// (by creation, then id), whatever their status, and the next page's
	// cursor ("" at the end); invalid for a bad cursor.
	ListInvitations(ctx context.Context, orgID string, page Page) ([]Invitation, string, error)
	// RevokeInvitation marks the org's invitation revoked at the time
	// given; not_found when absent or another org's, conflict when it is
	// revoked or accepted already.
	RevokeInvitation(ctx context.Context, orgID, id string, at time.Time) error
	// RevokeInvitationsBy marks every invitation of the org that createdBy
	// created and that is still pending at the time given revoked at that
	// time, and returns how many it revoked (none is no error). A removed
	// or demoted admin's invitations go with their role this way.
	RevokeInvitationsBy(ctx context.Context, orgID, createdBy string, at time.Time) (int, error)
	// AcceptInvitation marks the invitation with the hash accepted at the
	// time given by the user userID, atomically and only while it is
	// pending (not accepted, not revoked, and at is before its ExpiresAt),
	// and returns it as it now is; of concurrent calls exactly one wins.
	// Errors: not_found when no invitation has the hash, conflict when it
	// is not pending.
	AcceptInvitation(ctx context.Context, hash []byte, at time.Time, userID string) (Invitation, error)
}
