package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/devpilot/devpilot/ports"
)

var _ ports.IdempotencyStore = (*Idempotency)(nil)

// Idempotency keeps idempotency keys; it implements ports.IdempotencyStore,
// with the errors that port documents.
type Idempotency struct {
	db *DB
}

// NewIdempotency returns the idempotency store over db.
func NewIdempotency(db *DB) *Idempotency {
	return &Idempotency{db: db}
}

type idempotencyRow struct {
	OrgID       string    `db:"org_id"`
	UserID      string    `db:"user_id"`
	Key         string    `db:"idempotency_key"`
	Method      string    `db:"method"`
	Route       string    `db:"route"`
	RequestHash []byte    `db:"request_hash"`
	Completed   bool      `db:"completed"`
	Status      int       `db:"status"`
	Header      string    `db:"header"`
	Body        []byte    `db:"body"`
	BodyOmitted bool      `db:"body_omitted"`
	CreatedAt   timestamp `db:"created_at"`
	ExpiresAt   timestamp `db:"expires_at"`
}

func (r idempotencyRow) record() (ports.IdempotencyRecord, error) {
	header, err := decodeMap(r.Header)
	if err != nil {
		return ports.IdempotencyRecord{}, err
	}
	if len(header) == 0 {
		header = nil
	}
	body := r.Body
	if len(body) == 0 {
		body = nil
	}
	return ports.IdempotencyRecord{
		Owner: ports.IdempotencyOwner{OrgID: r.OrgID, UserID: r.UserID}, Key: r.Key,
		Method: r.Method, Route: r.Route, RequestHash: r.RequestHash,
		CreatedAt: time.Time(r.CreatedAt), ExpiresAt: time.Time(r.ExpiresAt), Completed: r.Completed,
		Response: ports.IdempotentResponse{Status: r.Status, Header: header, Body: body, BodyOmitted: r.BodyOmitted},
	}, nil
}

const idempotencyColumns = `org_id, user_id, idempotency_key, method, route, request_hash, completed, status,
	header, body, body_omitted, created_at, expires_at`

const idempotencyKeyMatch = "org_id = ? AND user_id = ? AND idempotency_key = ?"

// beginAttempts bounds Begin's retries when the record it found is released
// or pruned before it could read it.
const beginAttempts = 3

// Begin implements ports.IdempotencyStore: an INSERT … ON CONFLICT DO NOTHING
// claims a free key, and a conditional UPDATE one whose record expired, so
// of concurrent Begins exactly one claims the key.
func (s *Idempotency) Begin(ctx context.Context, rec ports.IdempotencyRecord) (ports.IdempotencyRecord, bool, error) {
	what := "idempotency key " + rec.Key
	claim := rec
	claim.CreatedAt, claim.ExpiresAt = asStored(rec.CreatedAt), asStored(rec.ExpiresAt)
	claim.Completed, claim.Response = false, ports.IdempotentResponse{}
	c := s.db.write(ctx)
	for range beginAttempts {
		// ON CONFLICT, not a caught unique violation, so a taken key does not
		// abort the caller's PostgreSQL transaction.
		n, err := c.exec(ctx, "INSERT INTO idempotency_keys (org_id, user_id, idempotency_key, method, route, request_hash, created_at, expires_at)"+`
			VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (org_id, user_id, idempotency_key) DO NOTHING`,
			rec.Owner.OrgID, rec.Owner.UserID, rec.Key, rec.Method, rec.Route, rec.RequestHash,
			timestamp(rec.CreatedAt), timestamp(rec.ExpiresAt))
		if err != nil {
			return ports.IdempotencyRecord{}, false, storeErr(err, what, "user "+rec.Owner.UserID)
		}
		if n == 1 {
			return claim, true, nil
		}
		n, err = c.exec(ctx, `UPDATE idempotency_keys SET method = ?, route = ?, request_hash = ?, completed = ?,
			status = 0, header = '{}', body = NULL, body_omitted = ?, created_at = ?, expires_at = ?
			WHERE `+idempotencyKeyMatch+` AND expires_at <= ?`,
			rec.Method, rec.Route, rec.RequestHash, false, false, timestamp(rec.CreatedAt), timestamp(rec.ExpiresAt),
			rec.Owner.OrgID, rec.Owner.UserID, rec.Key, timestamp(rec.CreatedAt))
		if err != nil {
			return ports.IdempotencyRecord{}, false, storeErr(err, what, "")
		}
		if n == 1 {
			return claim, true, nil
		}
		var r idempotencyRow
		err = c.get(ctx, &r, "SELECT "+idempotencyColumns+" FROM idempotency_keys WHERE "+idempotencyKeyMatch,
			rec.Owner.OrgID, rec.Owner.UserID, rec.Key)
		if errors.Is(err, sql.ErrNoRows) {
			continue // released or pruned meanwhile: try to claim it again
		}
		if err != nil {
			return ports.IdempotencyRecord{}, false, storeErr(err, what, "")
		}
		stored, err := r.record()
		return stored, false, err
	}
	return ports.IdempotencyRecord{}, false, ports.Errorf(ports.KindInternal, "%s: claimed and released repeatedly", what)
}

// Complete implements ports.IdempotencyStore.
func (s *Idempotency) Complete(ctx context.Context, owner ports.IdempotencyOwner, key string, resp ports.IdempotentResponse, expiresAt time.Time) error {
	what := "idempotency key " + key
	header, err := encodeMap(resp.Header)
	if err != nil {
		return err
	}
	var body []byte
	if !resp.BodyOmitted {
		body = resp.Body
	}
	c := s.db.write(ctx)
	n, err := c.exec(ctx, `UPDATE idempotency_keys SET completed = ?, status = ?, header = ?, body = ?, body_omitted = ?,
		expires_at = ? WHERE `+idempotencyKeyMatch+` AND completed = ?`,
		true, resp.Status, header, body, resp.BodyOmitted, timestamp(expiresAt), owner.OrgID, owner.UserID, key, false)
	if err != nil || n == 1 {
		return storeErr(err, what, "")
	}
	found, err := c.exists(ctx, "SELECT 1 FROM idempotency_keys WHERE "+idempotencyKeyMatch, owner.OrgID, owner.UserID, key)
	switch {
	case err != nil:
		return storeErr(err, what, "")
	case !found:
		return ports.NotFound("idempotency key", key)
	}
	return ports.Errorf(ports.KindConflict, "%s is completed already", what)
}

// Release implements ports.IdempotencyStore.
func (s *Idempotency) Release(ctx context.Context, owner ports.IdempotencyOwner, key string) error {
	n, err := s.db.write(ctx).exec(ctx, "DELETE FROM idempotency_keys WHERE "+idempotencyKeyMatch+" AND completed = ?",
		owner.OrgID, owner.UserID, key, false)
	if err != nil {
		return storeErr(err, "idempotency key "+key, "")
	}
	if n == 0 {
		return ports.Errorf(ports.KindNotFound, "idempotency key %s has no request in flight", key)
	}
	return nil
}

// PruneIdempotency implements ports.IdempotencyStore, a batch at a time
// over the index of expires_at, as Retention does.
func (s *Idempotency) PruneIdempotency(ctx context.Context, now time.Time, limit int) (int, error) {
	return s.db.pruneBatch(ctx, pruneIdempotency, limit, timestamp(now))
}

// asStored is t as the store reads it back: in UTC, to the microsecond.
func asStored(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }
