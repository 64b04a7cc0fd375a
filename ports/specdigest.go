package ports

import (
	"context"
	"encoding/json"
	"time"
)

//go:generate go tool mockgen -typed -destination ../testkit/mocks/specdigest.go -package mocks . SpecDigestStore

// SpecDigest is the digest of a specification session's raw inputs, made
// when they are too long to send to the model whole: the key facts of the
// inputs, each citing the ids of the inputs it comes from. The stages
// generated after it are given the digest instead of the raw inputs. It
// belongs to the session, which has at most one.
type SpecDigest struct {
	SessionID string
	// InputIDs are the inputs digested, in the session's order; the digest
	// is current while the session's inputs are exactly these.
	InputIDs []string
	// Data is the digest as JSON: title, summary, facts with the input ids
	// they cite, open questions.
	Data json.RawMessage
	// Content is Data rendered as the Markdown the stages are given.
	Content   string
	Model     string
	CreatedAt time.Time
}

// SpecDigestStore keeps the digests of specification sessions' inputs.
type SpecDigestStore interface {
	// PutSpecDigest stores d as the digest of session d.SessionID,
	// replacing the one it had. Errors: not_found for an unknown session.
	PutSpecDigest(ctx context.Context, d SpecDigest) error
	// GetSpecDigest returns the session's digest; not_found when it has
	// none (or the session is unknown).
	GetSpecDigest(ctx context.Context, sessionID string) (SpecDigest, error)
}
