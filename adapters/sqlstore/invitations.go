package sqlstore

import (
	"context"
	"strings"
	"time"

	"github.com/devpilot/devpilot/ports"
)

var _ ports.InvitationStore = (*Invitations)(nil)

// Invitations keeps organisation invitations; it implements
// ports.InvitationStore, with the errors that port documents.
type Invitations struct {
	db *DB
}

// NewInvitations returns the invitation store over db.
func NewInvitations(db *DB) *Invitations {
	return &Invitations{db: db}
}

type invitationRow struct {
	ID         string     `db:"id"`
	OrgID      string     `db:"org_id"`
	Email      string     `db:"email"`
	Role       string     `db:"role"`
	Hash       []byte     `db:"hash"`
	Prefix     string     `db:"prefix"`
	CreatedBy  string     `db:"created_by"`
	CreatedAt  timestamp  `db:"created_at"`
	ExpiresAt  timestamp  `db:"expires_at"`
	AcceptedAt *timestamp `db:"accepted_at"`
	AcceptedBy string     `db:"accepted_by"`
	RevokedAt  *timestamp `db:"revoked_at"`
}

func (r invitationRow) invitation() ports.Invitation {
	return ports.Invitation{
		ID: r.ID, OrgID: r.OrgID, Email: r.Email, Role: ports.Role(r.Role), Hash: r.Hash, Prefix: r.Prefix,
		CreatedBy: r.CreatedBy, CreatedAt: time.Time(r.CreatedAt), ExpiresAt: time.Time(r.ExpiresAt),
		AcceptedAt: r.AcceptedAt.timePtr(), AcceptedBy: r.AcceptedBy, RevokedAt: r.RevokedAt.timePtr(),
	}
}

const invitationColumns = "id, org_id, email, role, hash, prefix, created_by, created_at, expires_at, accepted_at, accepted_by, revoked_at"

// CreateInvitation implements ports.InvitationStore. It stores the email
// lower-cased.
func (s *Invitations) CreateInvitation(ctx context.Context, inv ports.Invitation) error {
	_, err := s.db.write(ctx).exec(ctx,
		"INSERT INTO invitations ("+invitationColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		inv.ID, inv.OrgID, strings.ToLower(inv.Email), string(inv.Role), inv.Hash, inv.Prefix, inv.CreatedBy,
		timestamp(inv.CreatedAt), timestamp(inv.ExpiresAt), timestampPtr(inv.AcceptedAt), inv.AcceptedBy, timestampPtr(inv.RevokedAt))
	return storeErr(err, "invitation "+inv.ID, "org "+inv.OrgID)
}

// GetInvitationByHash implements ports.InvitationStore.
func (s *Invitations) GetInvitationByHash(ctx context.Context, hash []byte) (ports.Invitation, error) {
	var r invitationRow
	err := s.db.read(ctx).get(ctx, &r, "SELECT "+invitationColumns+" FROM invitations WHERE hash = ?", hash)
	return r.invitation(), storeErr(err, "invitation", "")
}

// ListInvitations implements ports.InvitationStore; a page holds at most
// page.Size() items.
func (s *Invitations) ListInvitations(ctx context.Context, orgID string, page ports.Page) ([]ports.Invitation, string, error) {
	rows, next, err := listPage(ctx, s.db.read(ctx), "SELECT "+invitationColumns+" FROM invitations WHERE org_id = ?", []any{orgID}, page,
		keyset[invitationRow]{key: "created_at", id: "id", desc: true, byTime: true,
			last: func(r invitationRow) (string, string) { return timeKey(time.Time(r.CreatedAt)), r.ID }})
	if err != nil {
		return nil, "", storeErr(err, "invitations of org "+orgID, "")
	}
	out := make([]ports.Invitation, len(rows))
	for i, r := range rows {
		out[i] = r.invitation()
	}
	return out, next, nil
}

// RevokeInvitation implements ports.InvitationStore.
func (s *Invitations) RevokeInvitation(ctx context.Context, orgID, id string, at time.Time) error {
	c := s.db.write(ctx)
	n, err := c.exec(ctx,
		"UPDATE invitations SET revoked_at = ? WHERE id = ? AND org_id = ? AND revoked_at IS NULL AND accepted_at IS NULL",
		timestamp(at), id, orgID)
	if err != nil || n == 1 {
		return storeErr(err, "invitation "+id, "")
	}
	found, err := c.exists(ctx, "SELECT 1 FROM invitations WHERE id = ? AND org_id = ?", id, orgID)
	switch {
	case err != nil:
		return storeErr(err, "invitation "+id, "")
	case !found:
		return ports.NotFound("invitation", id)
	}
	return ports.Errorf(ports.KindConflict, "invitation %s is revoked or accepted already", id)
}

// RevokeInvitationsBy implements ports.InvitationStore with one UPDATE.
func (s *Invitations) RevokeInvitationsBy(ctx context.Context, orgID, createdBy string, at time.Time) (int, error) {
	n, err := s.db.write(ctx).exec(ctx,
		`UPDATE invitations SET revoked_at = ?
		WHERE org_id = ? AND created_by = ? AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > ?`,
		timestamp(at), orgID, createdBy, timestamp(at))
	if err != nil {
		return 0, storeErr(err, "invitations of user "+createdBy, "")
	}
	return int(n), nil
}

// AcceptInvitation implements ports.InvitationStore with one conditional
// UPDATE, so that of concurrent calls exactly one changes the row.
func (s *Invitations) AcceptInvitation(ctx context.Context, hash []byte, at time.Time, userID string) (ports.Invitation, error) {
	c := s.db.write(ctx)
	n, err := c.exec(ctx,
		`UPDATE invitations SET accepted_at = ?, accepted_by = ?
		WHERE hash = ? AND accepted_at IS NULL AND revoked_at IS NULL AND expires_at > ?`,
		timestamp(at), userID, hash, timestamp(at))
	if err != nil {
		return ports.Invitation{}, storeErr(err, "invitation", "")
	}
	var r invitationRow
	if err := c.get(ctx, &r, "SELECT "+invitationColumns+" FROM invitations WHERE hash = ?", hash); err != nil {
		return ports.Invitation{}, storeErr(err, "invitation", "")
	}
	if n == 0 {
		return ports.Invitation{}, ports.Errorf(ports.KindConflict, "invitation %s is not pending", r.ID)
	}
	return r.invitation(), nil
}
