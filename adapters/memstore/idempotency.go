package memstore

import (
	"bytes"
	"context"
	"maps"
	"time"

	"github.com/devpilot/devpilot/ports"
)

var _ ports.IdempotencyStore = (*Store)(nil)

type idemKey struct {
	owner ports.IdempotencyOwner
	key   string
}

func cloneIdempotency(r ports.IdempotencyRecord) ports.IdempotencyRecord {
	r.RequestHash = bytes.Clone(r.RequestHash)
	r.Response = cloneResponse(r.Response)
	return r
}

// cloneResponse copies resp, reading an empty header or body as nil and
// dropping an omitted body.
func cloneResponse(resp ports.IdempotentResponse) ports.IdempotentResponse {
	if len(resp.Header) == 0 {
		resp.Header = nil
	} else {
		resp.Header = maps.Clone(resp.Header)
	}
	if len(resp.Body) == 0 || resp.BodyOmitted {
		resp.Body = nil
	} else {
		resp.Body = bytes.Clone(resp.Body)
	}
	return resp
}

// Begin claims rec.Key for rec.Owner when the owner has no record of it, or
// only one expired at rec.CreatedAt; otherwise it returns the stored record
// unclaimed. Errors: not_found when the owner is not a user of the org.
func (s *Store) Begin(ctx context.Context, rec ports.IdempotencyRecord) (ports.IdempotencyRecord, bool, error) {
	defer s.lock()()
	if u, ok := s.identity.users[rec.Owner.UserID]; !ok || u.OrgID != rec.Owner.OrgID {
		return ports.IdempotencyRecord{}, false, ports.NotFound("user", rec.Owner.UserID)
	}
	k := idemKey{rec.Owner, rec.Key}
	if old, ok := s.idempotency[k]; ok && old.ExpiresAt.After(rec.CreatedAt) {
		return cloneIdempotency(old), false, nil
	}
	rec = cloneIdempotency(rec)
	rec.Completed, rec.Response = false, ports.IdempotentResponse{}
	rec.CreatedAt, rec.ExpiresAt = utc(rec.CreatedAt), utc(rec.ExpiresAt)
	put(ctx, s, s.idempotency, k, rec)
	return cloneIdempotency(rec), true, nil
}

// Complete stores the response of the owner's claim of key in flight and
// moves its expiry; not_found when there is no record, conflict when it is
// completed already.
func (s *Store) Complete(ctx context.Context, owner ports.IdempotencyOwner, key string, resp ports.IdempotentResponse, expiresAt time.Time) error {
	defer s.lock()()
	k := idemKey{owner, key}
	rec, ok := s.idempotency[k]
	if !ok {
		return ports.NotFound("idempotency key", key)
	}
	if rec.Completed {
		return ports.Errorf(ports.KindConflict, "idempotency key %s is completed already", key)
	}
	rec.Completed, rec.Response, rec.ExpiresAt = true, cloneResponse(resp), utc(expiresAt)
	put(ctx, s, s.idempotency, k, rec)
	return nil
}

// Release deletes the owner's claim of key in flight; not_found when there
// is none.
func (s *Store) Release(ctx context.Context, owner ports.IdempotencyOwner, key string) error {
	defer s.lock()()
	k := idemKey{owner, key}
	if rec, ok := s.idempotency[k]; !ok || rec.Completed {
		return ports.NotFound("idempotency claim", key)
	}
	del(ctx, s, s.idempotency, k)
	return nil
}

// PruneIdempotency deletes at most limit records expired at now and returns
// how many it deleted.
func (s *Store) PruneIdempotency(ctx context.Context, now time.Time, limit int) (int, error) {
	if err := ports.CheckPruneLimit(limit); err != nil {
		return 0, err
	}
	defer s.lock()()
	return pruneMap(ctx, s, s.idempotency, limit, func(_ idemKey, rec ports.IdempotencyRecord) bool {
		return !rec.ExpiresAt.After(now)
	}), nil
}
