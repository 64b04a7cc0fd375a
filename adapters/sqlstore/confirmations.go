package sqlstore

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/devpilot/devpilot/ports"
)

type confirmationRow struct {
	ID            string     `db:"id"`
	SessionID     string     `db:"session_id"`
	OrgID         string     `db:"org_id"`
	UserID        string     `db:"user_id"`
	TurnID        string     `db:"turn_id"`
	ToolCallID    string     `db:"tool_call_id"`
	ToolName      string     `db:"tool_name"`
	Arguments     jsonText   `db:"arguments"`
	Summary       string     `db:"summary"`
	Status        string     `db:"status"`
	CreatedAt     timestamp  `db:"created_at"`
	ExpiresAt     timestamp  `db:"expires_at"`
	DecidedAt     *timestamp `db:"decided_at"`
	DecidedBy     string     `db:"decided_by"`
	Reason        string     `db:"reason"`
	OutcomeOK     *bool      `db:"outcome_ok"`
	OutcomeResult jsonText   `db:"outcome_result"`
	OutcomeError  string     `db:"outcome_error"`
	ExecutedAt    *timestamp `db:"executed_at"`
}

func (r confirmationRow) confirmation() ports.Confirmation {
	c := ports.Confirmation{
		ID: r.ID, SessionID: r.SessionID, OrgID: r.OrgID, UserID: r.UserID, TurnID: r.TurnID,
		ToolCallID: r.ToolCallID, ToolName: r.ToolName, Arguments: json.RawMessage(r.Arguments),
		Summary: r.Summary, Status: ports.ConfirmationStatus(r.Status),
		CreatedAt: time.Time(r.CreatedAt), ExpiresAt: time.Time(r.ExpiresAt),
		DecidedAt: r.DecidedAt.timePtr(), DecidedBy: r.DecidedBy, Reason: r.Reason,
		ExecutedAt: r.ExecutedAt.timePtr(),
	}
	if r.OutcomeOK != nil {
		c.Outcome = &ports.ToolOutcome{OK: *r.OutcomeOK, Result: json.RawMessage(r.OutcomeResult), Error: r.OutcomeError}
	}
	return c
}

const confirmationColumns = `id, session_id, org_id, user_id, turn_id, tool_call_id, tool_name, arguments,
	summary, status, created_at, expires_at, decided_at, decided_by, reason,
	outcome_ok, outcome_result, outcome_error, executed_at`

// CreateConfirmation implements ports.ConfirmationStore: c is stored pending,
// whatever its status, decision and outcome say. It is a conflict when the id
// exists, and not_found when c's session does not exist or is not c's owner's.
func (s *Assistant) CreateConfirmation(ctx context.Context, c ports.Confirmation) error {
	_, err := s.db.write(ctx).exec(ctx, `INSERT INTO confirmations
		(id, session_id, org_id, user_id, turn_id, tool_call_id, tool_name, arguments, summary, status, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'pending', ?, ?)`,
		c.ID, c.SessionID, c.OrgID, c.UserID, c.TurnID, c.ToolCallID, c.ToolName, jsonText(c.Arguments),
		c.Summary, timestamp(c.CreatedAt), timestamp(c.ExpiresAt))
	return storeErr(err, "confirmation "+c.ID, "chat session "+c.SessionID)
}

// GetConfirmation implements ports.ConfirmationStore.
func (s *Assistant) GetConfirmation(ctx context.Context, owner ports.Owner, id string) (ports.Confirmation, error) {
	return getConfirmation(ctx, s.db.read(ctx), owner, id)
}

func getConfirmation(ctx context.Context, c conn, owner ports.Owner, id string) (ports.Confirmation, error) {
	var r confirmationRow
	err := c.get(ctx, &r, "SELECT "+confirmationColumns+" FROM confirmations WHERE id = ? AND org_id = ? AND user_id = ?",
		id, owner.OrgID, owner.UserID)
	if err != nil {
		return ports.Confirmation{}, storeErr(err, "confirmation "+id, "")
	}
	return r.confirmation(), nil
}

// ListConfirmations implements ports.ConfirmationStore; ties in the creation
// time are ordered by id.
func (s *Assistant) ListConfirmations(ctx context.Context, sessionID string) ([]ports.Confirmation, error) {
	var rows []confirmationRow
	err := s.db.read(ctx).list(ctx, &rows,
		"SELECT "+confirmationColumns+" FROM confirmations WHERE session_id = ? ORDER BY created_at, id", sessionID)
	if err != nil {
		return nil, storeErr(err, "confirmations", "")
	}
	out := make([]ports.Confirmation, len(rows))
	for i, r := range rows {
		out[i] = r.confirmation()
	}
	return out, nil
}

// DecideConfirmation implements ports.ConfirmationStore. A confirmation is
// expired at d.At when its ExpiresAt is not after d.At; deciding one the
// sweep has marked expired is gone too. d.Status other than approved or
// rejected is invalid.
func (s *Assistant) DecideConfirmation(ctx context.Context, owner ports.Owner, id string, d ports.Decision) (ports.Confirmation, error) {
	if d.Status != ports.ConfirmationApproved && d.Status != ports.ConfirmationRejected {
		return ports.Confirmation{}, ports.Invalid("a decision approves or rejects",
			ports.FieldError{Field: "status", Reason: "must be approved or rejected"})
	}
	var (
		c       ports.Confirmation
		outcome error // conflict or gone, returned after the transaction commits
	)
	err := s.db.WithinTx(ctx, func(ctx context.Context) error {
		tx := s.db.write(ctx)
		n, err := tx.exec(ctx, `UPDATE confirmations SET status = ?, decided_at = ?, decided_by = ?, reason = ?
			WHERE id = ? AND org_id = ? AND user_id = ? AND status = 'pending' AND expires_at > ?`,
			string(d.Status), timestamp(d.At), d.By, d.Reason, id, owner.OrgID, owner.UserID, timestamp(d.At))
		if err != nil {
			return storeErr(err, "confirmation "+id, "")
		}
		if c, err = getConfirmation(ctx, tx, owner, id); err != nil || n == 1 {
			return err
		}
		if c.Status == ports.ConfirmationPending {
			if _, err := tx.exec(ctx, "UPDATE confirmations SET status = 'expired' WHERE id = ? AND status = 'pending'", id); err != nil {
				return storeErr(err, "confirmation "+id, "")
			}
			if c, err = getConfirmation(ctx, tx, owner, id); err != nil {
				return err
			}
		}
		if c.Status == ports.ConfirmationExpired {
			outcome = &ports.Error{Kind: ports.KindGone, Code: ports.CodeExpired, Message: fmt.Sprintf("confirmation %s expired", id)}
		} else {
			outcome = &ports.Error{Kind: ports.KindConflict, Code: ports.CodeAlreadyDecided,
				Message: fmt.Sprintf("confirmation %s is %s already", id, c.Status)}
		}
		return nil
	})
	if err != nil {
		return ports.Confirmation{}, err
	}
	return c, outcome
}

// RecordOutcome implements ports.ConfirmationStore. It is a conflict too
// when the confirmation is not approved, and not_found when it is absent.
func (s *Assistant) RecordOutcome(ctx context.Context, id string, o ports.ToolOutcome, at time.Time) error {
	c := s.db.write(ctx)
	n, err := c.exec(ctx, `UPDATE confirmations SET outcome_ok = ?, outcome_result = ?, outcome_error = ?, executed_at = ?
		WHERE id = ? AND status = 'approved' AND executed_at IS NULL`,
		o.OK, jsonText(o.Result), o.Error, timestamp(at), id)
	if err != nil || n == 1 {
		return storeErr(err, "confirmation "+id, "")
	}
	var r struct {
		Status     string     `db:"status"`
		ExecutedAt *timestamp `db:"executed_at"`
	}
	if err := c.get(ctx, &r, "SELECT status, executed_at FROM confirmations WHERE id = ?", id); err != nil {
		return storeErr(err, "confirmation "+id, "")
	}
	if r.ExecutedAt != nil {
		return ports.Errorf(ports.KindConflict, "confirmation %s has an outcome already", id)
	}
	return ports.Errorf(ports.KindConflict, "confirmation %s is %s, not approved", id, r.Status)
}

// ExpireConfirmations implements ports.ConfirmationStore; like
// DecideConfirmation it takes a confirmation whose ExpiresAt is not after now
// as expired.
func (s *Assistant) ExpireConfirmations(ctx context.Context, now time.Time) (int, error) {
	n, err := s.db.write(ctx).exec(ctx,
		"UPDATE confirmations SET status = 'expired' WHERE status = 'pending' AND expires_at <= ?", timestamp(now))
	if err != nil {
		return 0, storeErr(err, "confirmations", "")
	}
	return int(n), nil
}

// CountPendingConfirmations implements ports.ConfirmationStore with one
// COUNT over the partial index of pending confirmations by expiry
// (confirmations_pending_expires_at_idx).
func (s *Assistant) CountPendingConfirmations(ctx context.Context, now time.Time) (int64, error) {
	var n int64
	err := s.db.read(ctx).get(ctx, &n,
		"SELECT COUNT(*) FROM confirmations WHERE status = 'pending' AND expires_at > ?", timestamp(now))
	if err != nil {
		return 0, storeErr(err, "confirmations", "")
	}
	return n, nil
}
