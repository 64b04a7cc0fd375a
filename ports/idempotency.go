package ports

import (
	"context"
	"time"
)

//go:generate go tool mockgen -typed -destination ../testkit/mocks/idempotency.go -package mocks . IdempotencyStore

// IdempotencyOwner is whose an idempotency key is: the same key sent by two
// users is two unrelated keys.
type IdempotencyOwner struct {
	OrgID  string
	UserID string
}

// IdempotentResponse is the response of a request made with an idempotency
// key, kept so a retry with the same key gets it again.
type IdempotentResponse struct {
	// Status is the HTTP status code.
	Status int
	// Header holds the response headers worth replaying (such as
	// Content-Type, Location and ETag), one value each; nil when none.
	Header map[string]string
	// Body is the response body as the caller keeps it, opaque to the
	// store: the HTTP host keeps it sealed with the Cipher, bound to the
	// record, since a body may hold a secret shown once. Nil when empty or
	// omitted.
	Body []byte
	// BodyOmitted says the body was too large to keep: Body is nil, and the
	// response can no longer be replayed whole.
	BodyOmitted bool
}

// IdempotencyRecord is one owner's idempotency key: claimed by the first
// request that sent it, then, once that request completed, holding its
// response until ExpiresAt.
type IdempotencyRecord struct {
	Owner IdempotencyOwner
	Key   string
	// Method and Route are the HTTP method and the route pattern of the
	// first request.
	Method string
	Route  string
	// RequestHash identifies the first request: a SHA-256 of its method,
	// path and body.
	RequestHash []byte
	// CreatedAt is when the key was claimed.
	CreatedAt time.Time
	// ExpiresAt is when the record lapses: a claim in flight is abandoned
	// then, and a completed response is forgotten. From then on Begin claims
	// the key afresh and PruneIdempotency deletes the record.
	ExpiresAt time.Time
	// Completed says Response holds the first request's response; false
	// while that request is in flight.
	Completed bool
	Response  IdempotentResponse
}

// IdempotencyStore keeps idempotency keys, so a write retried with the same
// key is done once and answered with the first response.
type IdempotencyStore interface {
	// Begin claims rec.Key for rec.Owner at rec.CreatedAt, atomically: of
	// concurrent Begins of one key exactly one claims it. It claims the key
	// when the owner has no record of it, or only one expired at
	// rec.CreatedAt (ExpiresAt not after it), which it replaces; it then
	// stores rec as a claim in flight (Completed and Response are ignored) and
	// returns it with claimed true. Otherwise it changes nothing and returns
	// the stored record with claimed false. Errors: not_found when the owner
	// is not a user of the org.
	Begin(ctx context.Context, rec IdempotencyRecord) (stored IdempotencyRecord, claimed bool, err error)
	// Complete stores the response of the owner's claim of key in flight,
	// marks it completed and moves its expiry to expiresAt. Errors:
	// not_found when the owner has no record of the key; conflict when it is
	// completed already.
	Complete(ctx context.Context, owner IdempotencyOwner, key string, resp IdempotentResponse, expiresAt time.Time) error
	// Release deletes the owner's claim of key in flight, for a request whose
	// outcome must not be remembered (a failure a retry may fix), so the next
	// Begin claims the key afresh. Errors: not_found when the owner has no
	// claim of the key in flight (none, or a completed one, which is kept
	// until it expires).
	Release(ctx context.Context, owner IdempotencyOwner, key string) error
	// PruneIdempotency deletes records, in flight or completed, expired at
	// now (ExpiresAt not after it), at most limit of them, and returns how
	// many it deleted: a sweep calls it until it deletes fewer than limit
	// (see RetentionStore). Errors: invalid when limit is not positive.
	PruneIdempotency(ctx context.Context, now time.Time, limit int) (int, error)
}
