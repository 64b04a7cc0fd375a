package ports

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

//go:generate go tool mockgen -typed -destination ../testkit/mocks/assistant.go -package mocks . ChatSessionStore,ChatMessageStore,ConfirmationStore,StreamEventStore,TurnStore,PreferenceStore

// Owner identifies whose a resource is; stores filter by it in SQL, and
// another owner's resource is not_found.
type Owner struct {
	OrgID  string
	UserID string
}

// Owner returns the principal as a resource owner.
func (p Principal) Owner() Owner { return Owner{OrgID: p.OrgID, UserID: p.UserID} }

// Page asks for one page of a list. Cursor is opaque: "" for the first page,
// then the next cursor the previous page returned.
type Page struct {
	Limit  int
	Cursor string
}

// The paging rule of every list (docs/api.md, "Conventions at a glance"): DefaultPageLimit items
// when no limit is asked for, at most MaxPageLimit.
const (
	DefaultPageLimit = 50
	MaxPageLimit     = 200
)

// Checked returns p with the default limit when it has none, or an invalid
// Error naming the field limit when its limit is outside 1..MaxPageLimit.
func (p Page) Checked() (Page, error) {
	if p.Limit == 0 {
		p.Limit = DefaultPageLimit
	}
	if p.Limit < 1 || p.Limit > MaxPageLimit {
		return p, Invalid(fmt.Sprintf("limit must be a whole number from 1 to %d", MaxPageLimit),
			FieldError{Field: "limit", Reason: fmt.Sprintf("must be 1 to %d", MaxPageLimit)})
	}
	return p, nil
}

// Size returns how many items a store puts in the page p asks for:
// DefaultPageLimit when Limit is not positive, at most MaxPageLimit. A store
// does not refuse a limit (the core does, with Checked); it keeps to this.
func (p Page) Size() int {
	if p.Limit <= 0 {
		return DefaultPageLimit
	}
	return min(p.Limit, MaxPageLimit)
}

// ChatSession is a conversation with the assistant.
type ChatSession struct {
	ID        string
	OrgID     string
	UserID    string
	Title     string
	CreatedAt time.Time
	UpdatedAt time.Time
	// MessageCount and PendingConfirmations are computed when read.
	MessageCount         int
	PendingConfirmations int
}

// ChatMessage is a stored message of a session.
type ChatMessage struct {
	ID        string
	SessionID string
	TurnID    string
	Message
	CreatedAt time.Time
}

// ConfirmationStatus is where a confirmation stands.
type ConfirmationStatus string

// The confirmation statuses: pending until decided or expired.
const (
	ConfirmationPending  ConfirmationStatus = "pending"
	ConfirmationApproved ConfirmationStatus = "approved"
	ConfirmationRejected ConfirmationStatus = "rejected"
	ConfirmationExpired  ConfirmationStatus = "expired"
)

// Confirmation error codes, set as Error.Code by ConfirmationStore.DecideConfirmation.
const (
	// CodeAlreadyDecided (conflict): the confirmation was decided before.
	CodeAlreadyDecided = "already_decided"
	// CodeExpired (gone): the confirmation expired without a decision.
	CodeExpired = "expired"
)

// ToolOutcome is what running a tool gave: a result, or an error message.
type ToolOutcome struct {
	OK     bool
	Result json.RawMessage
	Error  string
}

// Confirmation is a write tool call waiting for, or given, a human decision.
type Confirmation struct {
	ID         string
	SessionID  string
	OrgID      string
	UserID     string
	TurnID     string
	ToolCallID string
	ToolName   string
	Arguments  json.RawMessage
	Summary    string
	Status     ConfirmationStatus
	CreatedAt  time.Time
	ExpiresAt  time.Time
	DecidedAt  *time.Time
	DecidedBy  string
	Reason     string
	// Outcome and ExecutedAt are set once an approved call has run.
	Outcome    *ToolOutcome
	ExecutedAt *time.Time
}

// Decision is a human's answer to a confirmation.
type Decision struct {
	Status ConfirmationStatus // approved or rejected
	By     string             // the deciding user's id
	Reason string
	At     time.Time
}

// StreamEvent is one event of a chat stream, kept so that streams can be
// resumed on any replica. Seq increases strictly within a session.
type StreamEvent struct {
	SessionID string
	Seq       int64
	TurnID    string
	Name      string
	Data      json.RawMessage
	CreatedAt time.Time
}

// Turn is one run of the assistant loop in a session.
type Turn struct {
	ID        string
	SessionID string
	StartedAt time.Time
	// EndedAt is nil while the turn runs.
	EndedAt *time.Time
	// AliveAt is when the running turn last recorded that it is alive (its
	// heartbeat); StartedAt until it first does. A turn whose AliveAt is
	// long past died with its process.
	AliveAt time.Time
	// StopRequestedAt is when a user asked the turn to stop, nil when no
	// one did.
	StopRequestedAt *time.Time
}

// Preference is one standing instruction the assistant follows for a user.
type Preference struct {
	ID          string
	Instruction string
	CreatedAt   time.Time
}

// SessionState is what a turn of a session starts from.
type SessionState struct {
	// Messages are the session's messages in the order they were appended.
	Messages []ChatMessage
	// LastEventSeq is the highest Seq of the session's stream events, 0 when
	// it has none.
	LastEventSeq int64
	// Confirmations are the session's confirmations, oldest first.
	Confirmations []Confirmation
}

// ChatSessionStore keeps chat sessions.
type ChatSessionStore interface {
	// CreateSession stores a new session; conflict when the id exists.
	CreateSession(ctx context.Context, s ChatSession) error
	// StartSession stores a new session with its first turn, running, and
	// its first message, all or nothing: what a chat without a session
	// starts with, in as few round trips as the database allows. Conflict
	// when one of the ids exists; ErrTooManyTurns as StartTurn (staleBefore
	// and maxPerUser are the cap's).
	StartSession(ctx context.Context, s ChatSession, first Turn, msg ChatMessage, staleBefore time.Time, maxPerUser int) error
	// ContinueSession starts turn, running, in the owner's session
	// turn.SessionID, ending a running turn that started before staleBefore
	// (at turn.StartedAt), appends msg, and records activity at
	// turn.StartedAt, all or nothing: what a chat in an existing session
	// starts with, in as few round trips as the database allows. It returns
	// what the turn starts from: the session as it stands once turn has
	// started, msg its last message. Errors: not_found when the session is
	// absent or another owner's; conflict when a turn started at or after
	// staleBefore still runs in it, or an id exists; ErrTooManyTurns as
	// StartTurn.
	ContinueSession(ctx context.Context, owner Owner, turn Turn, msg ChatMessage, staleBefore time.Time, maxPerUser int) (SessionState, error)
	// GetSession returns the owner's session with its counts; not_found when
	// absent or another owner's.
	GetSession(ctx context.Context, owner Owner, id string) (ChatSession, error)
	// ListSessions returns the owner's sessions, most recently updated first,
	// with their counts, and the cursor of the next page ("" at the end).
	// Errors: invalid for a malformed cursor.
	ListSessions(ctx context.Context, owner Owner, page Page) ([]ChatSession, string, error)
	// SearchSessions is ListSessions keeping only the sessions whose title,
	// or the text of one of whose user or assistant messages, contains q
	// (not empty), letters compared case-insensitively (ASCII letters at
	// least). Errors as ListSessions.
	SearchSessions(ctx context.Context, owner Owner, q string, page Page) ([]ChatSession, string, error)
	// SetSessionTitle sets the owner's session's title; not_found as GetSession.
	SetSessionTitle(ctx context.Context, owner Owner, id, title string, at time.Time) error
	// TouchSession records activity in the session at the time given.
	TouchSession(ctx context.Context, id string, at time.Time) error
	// DeleteSession deletes the owner's session and everything in it,
	// unless a turn that started at or after staleBefore runs in it
	// (conflict), checked so that no turn starts meanwhile; not_found as
	// GetSession.
	DeleteSession(ctx context.Context, owner Owner, id string, staleBefore time.Time) error
}

// ChatMessageStore keeps the messages of sessions.
type ChatMessageStore interface {
	// AppendMessages stores messages in order; not_found when the session
	// does not exist.
	AppendMessages(ctx context.Context, msgs ...ChatMessage) error
	// ListMessages returns a session's messages in the order they were
	// appended.
	ListMessages(ctx context.Context, sessionID string) ([]ChatMessage, error)
}

// ConfirmationStore keeps confirmations and decides them exactly once.
type ConfirmationStore interface {
	// CreateConfirmation stores a pending confirmation.
	CreateConfirmation(ctx context.Context, c Confirmation) error
	// GetConfirmation returns the owner's confirmation; not_found when absent
	// or another owner's.
	GetConfirmation(ctx context.Context, owner Owner, id string) (Confirmation, error)
	// ListConfirmations returns a session's confirmations, oldest first.
	ListConfirmations(ctx context.Context, sessionID string) ([]Confirmation, error)
	// DecideConfirmation atomically moves the owner's pending confirmation to
	// d.Status and returns it, so of any number of concurrent calls exactly
	// one succeeds. Errors: not_found (absent or another owner's); conflict
	// (Code "already_decided") when it is not pending; gone (Code "expired")
	// when it expired at or before d.At, and it is then recorded as expired. The
	// conflict and gone errors come with the confirmation as it stands.
	DecideConfirmation(ctx context.Context, owner Owner, id string, d Decision) (Confirmation, error)
	// RecordOutcome stores what running an approved confirmation gave;
	// conflict when an outcome is recorded already.
	RecordOutcome(ctx context.Context, id string, o ToolOutcome, at time.Time) error
	// ExpireConfirmations marks pending confirmations that expired at or before now
	// as expired and returns how many.
	ExpireConfirmations(ctx context.Context, now time.Time) (int, error)
	// CountPendingConfirmations returns how many confirmations, of every
	// organisation, are pending and expire after now: the ones still
	// waiting for a human.
	CountPendingConfirmations(ctx context.Context, now time.Time) (int64, error)
}

// MaxEventPage is the most stream events one ListEvents returns.
const MaxEventPage = 1000

// EventPageSize returns how many events a ListEvents for limit returns at
// most: limit, or MaxEventPage when limit is below 1 or above it.
func EventPageSize(limit int) int {
	if limit < 1 || limit > MaxEventPage {
		return MaxEventPage
	}
	return limit
}

// StreamEventStore keeps the events of chat streams for replay.
type StreamEventStore interface {
	// AppendEvents stores events; conflict when a (session, seq) exists.
	AppendEvents(ctx context.Context, events ...StreamEvent) error
	// ListEvents returns up to limit events of a session with Seq > afterSeq,
	// in Seq order; a limit below 1 or above MaxEventPage is taken as
	// MaxEventPage (EventPageSize).
	ListEvents(ctx context.Context, sessionID string, afterSeq int64, limit int) ([]StreamEvent, error)
	// LastEventSeq returns the highest Seq of a session, 0 when it has none.
	LastEventSeq(ctx context.Context, sessionID string) (int64, error)
}

// ErrTooManyTurns (rate_limited, code too_many_turns) is what a store
// returns when a turn would take its user past the cap on running turns.
var ErrTooManyTurns = &Error{Kind: KindRateLimited, Code: "too_many_turns"}

// TurnStore tracks which sessions have a turn running, on any replica.
type TurnStore interface {
	// StartTurn records a running turn; conflict when the session has a
	// running turn that started at or after staleBefore (older ones are taken
	// to have died with their process and are ended). A zero staleBefore
	// takes no turn for stale, and spares the store looking for one: a new
	// session has none. With maxPerUser > 0 it caps the turns of the
	// session's user: ErrTooManyTurns, nothing stored, when maxPerUser turns
	// that started at or after staleBefore already run in the user's other
	// sessions. The count and the insert are one atomic step on every
	// replica, so concurrent starts never pass the cap together. 0 is no cap.
	StartTurn(ctx context.Context, t Turn, staleBefore time.Time, maxPerUser int) error
	// EndTurn marks the turn ended at the time given, and records activity
	// in its session then (as TouchSession does); ending an ended turn
	// changes nothing. not_found when the turn does not exist.
	EndTurn(ctx context.Context, id string, at time.Time) error
	// RunningTurn returns the session's running turn; not_found when none.
	RunningTurn(ctx context.Context, sessionID string) (Turn, error)
	// HeartbeatTurn records that turn id is alive at the time given (when it
	// still runs) and returns the turn as it stands, so the turn learns in
	// the same round trip whether it was asked to stop or was ended by
	// another (as lost). not_found when the turn does not exist.
	HeartbeatTurn(ctx context.Context, id string, at time.Time) (Turn, error)
	// RequestStop records that the session's running turn is asked to stop,
	// at the time given (a second request keeps the first time), and
	// returns the turn; not_found when no turn runs in the session.
	RequestStop(ctx context.Context, sessionID string, at time.Time) (Turn, error)
	// EndLostTurn ends turn id at the time given, as EndTurn does, if it
	// still runs and was last alive (AliveAt) before aliveBefore, and
	// reports whether it did: of concurrent calls, one does.
	EndLostTurn(ctx context.Context, id string, aliveBefore, at time.Time) (bool, error)
	// LostTurns returns up to limit running turns, of every session, last
	// alive before aliveBefore, oldest first.
	LostTurns(ctx context.Context, aliveBefore time.Time, limit int) ([]Turn, error)
}

// PreferenceStore keeps each user's standing instructions.
type PreferenceStore interface {
	// GetPreferences returns the owner's preferences in order and when they
	// were last replaced (nil when never).
	GetPreferences(ctx context.Context, owner Owner) ([]Preference, *time.Time, error)
	// ReplacePreferences replaces the owner's preferences with prefs.
	ReplacePreferences(ctx context.Context, owner Owner, prefs []Preference, at time.Time) error
}
