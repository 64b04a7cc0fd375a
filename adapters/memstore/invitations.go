package memstore

import (
	"bytes"
	"context"
	"strings"
	"time"

	"github.com/devpilot/devpilot/ports"
)

var _ ports.InvitationStore = (*Store)(nil)

func cloneInvitation(inv ports.Invitation) ports.Invitation {
	inv.Hash = bytes.Clone(inv.Hash)
	inv.CreatedAt, inv.ExpiresAt = utc(inv.CreatedAt), utc(inv.ExpiresAt)
	inv.AcceptedAt, inv.RevokedAt = utcPtr(inv.AcceptedAt), utcPtr(inv.RevokedAt)
	return inv
}

// invitationByHash returns the invitation with the hash (s.mu held).
func (s *Store) invitationByHash(hash []byte) (ports.Invitation, bool) {
	for _, inv := range s.invitations {
		if bytes.Equal(inv.Hash, hash) {
			return inv, true
		}
	}
	return ports.Invitation{}, false
}

// CreateInvitation stores a new invitation, its email lower-cased; conflict
// when the id or hash exists already; not_found when the org does not
// exist.
func (s *Store) CreateInvitation(ctx context.Context, inv ports.Invitation) error {
	defer s.lock()()
	if _, ok := s.identity.orgs[inv.OrgID]; !ok {
		return ports.NotFound("org", inv.OrgID)
	}
	if _, ok := s.invitations[inv.ID]; ok {
		return ports.Errorf(ports.KindConflict, "invitation %s exists already", inv.ID)
	}
	if _, ok := s.invitationByHash(inv.Hash); ok {
		return ports.Errorf(ports.KindConflict, "invitation hash exists already")
	}
	inv = cloneInvitation(inv)
	inv.Email = strings.ToLower(inv.Email)
	put(ctx, s, s.invitations, inv.ID, inv)
	return nil
}

// GetInvitationByHash returns the invitation with the hash, whatever its
// status; not_found when absent.
func (s *Store) GetInvitationByHash(_ context.Context, hash []byte) (ports.Invitation, error) {
	defer s.lock()()
	if inv, ok := s.invitationByHash(hash); ok {
		return cloneInvitation(inv), nil
	}
	return ports.Invitation{}, &ports.Error{Kind: ports.KindNotFound, Message: "invitation not found"}
}

// ListInvitations returns a page of the org's invitations, newest first,
// and the next page's cursor; invalid for a bad cursor.
func (s *Store) ListInvitations(_ context.Context, orgID string, page ports.Page) ([]ports.Invitation, string, error) {
	defer s.lock()()
	var out []ports.Invitation
	for _, inv := range s.invitations {
		if inv.OrgID == orgID {
			out = append(out, cloneInvitation(inv))
		}
	}
	return paginate(out, page, keyset[ports.Invitation]{desc: true, byTime: true,
		key: func(inv ports.Invitation) (string, string) { return timeKey(inv.CreatedAt), inv.ID }})
}

// RevokeInvitation marks the org's invitation revoked at the time given;
// not_found when absent or another org's, conflict when revoked or
// accepted already.
func (s *Store) RevokeInvitation(ctx context.Context, orgID, id string, at time.Time) error {
	defer s.lock()()
	inv, ok := s.invitations[id]
	if !ok || inv.OrgID != orgID {
		return ports.NotFound("invitation", id)
	}
	if inv.RevokedAt != nil || inv.AcceptedAt != nil {
		return ports.Errorf(ports.KindConflict, "invitation %s is revoked or accepted already", id)
	}
	inv.RevokedAt = utcPtr(&at)
	put(ctx, s, s.invitations, id, inv)
	return nil
}

// RevokeInvitationsBy marks the org's invitations that createdBy created
// and that are pending at the time given revoked at that time, and returns
// how many.
func (s *Store) RevokeInvitationsBy(ctx context.Context, orgID, createdBy string, at time.Time) (int, error) {
	defer s.lock()()
	n := 0
	for id, inv := range s.invitations {
		if inv.OrgID != orgID || inv.CreatedBy != createdBy || inv.Status(at) != ports.InvitationPending {
			continue
		}
		inv.RevokedAt = utcPtr(&at)
		put(ctx, s, s.invitations, id, inv)
		n++
	}
	return n, nil
}

// AcceptInvitation marks the invitation with the hash accepted by userID at
// the time given, only while it is pending at that time, and returns it;
// not_found when absent, conflict when not pending.
func (s *Store) AcceptInvitation(ctx context.Context, hash []byte, at time.Time, userID string) (ports.Invitation, error) {
	defer s.lock()()
	inv, ok := s.invitationByHash(hash)
	if !ok {
		return ports.Invitation{}, &ports.Error{Kind: ports.KindNotFound, Message: "invitation not found"}
	}
	if inv.Status(at) != ports.InvitationPending {
		return ports.Invitation{}, ports.Errorf(ports.KindConflict, "invitation %s is not pending", inv.ID)
	}
	inv.AcceptedAt, inv.AcceptedBy = utcPtr(&at), userID
	put(ctx, s, s.invitations, inv.ID, inv)
	return cloneInvitation(inv), nil
}
