// Package assistant is the core of devpilot's conversational assistant: chat
// sessions, the streaming tool-calling loop, the tool registry, human
// confirmation of writes, resumable streams, titles and procedural memory.
//
// A turn (one run of the loop) streams model text, runs read tools at once
// and turns write tools into durable pending confirmations; the turn then
// ends, and Confirm decides each confirmation exactly once. An organisation
// admin may mark a read tool always_confirm (SetToolPolicy), and it is then
// confirmed like a write; a write can never be exempted. Every message,
// tool result, confirmation and stream event is stored, so a stream can be
// replayed on any replica and the model sees everything in later turns.
package assistant

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/devpilot/devpilot/core/internal/groupcommit"
	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/ports"
)

// Config tunes the assistant. Zero values take the defaults named.
type Config struct {
	// Model overrides the LLM adapter's model when not empty.
	Model string
	// MaxToolRounds bounds how many times in one turn the model's tool calls
	// are carried out (8); asking for more ends the turn with tool_loop_limit.
	MaxToolRounds int
	// MaxTokens bounds each model call (4096).
	MaxTokens int
	// ConfirmationTTL is how long a write waits for a decision (15 minutes).
	ConfirmationTTL time.Duration
	// SystemPrompt starts every conversation (DefaultSystemPrompt); the
	// ground rules and the date follow it.
	SystemPrompt string
	// MaxTools bounds the tools offered in one model call
	// (DefaultMaxTools); Registry.RouteFollowing chooses them from the page,
	// the message and the tools of the last RecentTurns user turns.
	MaxTools int
	// HistoryTokens is the budget of each model call's prompt, in estimated
	// tokens (DefaultHistoryTokens): a longer history is trimmed.
	HistoryTokens int
	// Location is the time zone the date and time are given in (UTC): the
	// API knows no user's own.
	Location *time.Location
	// TitleMaxLen bounds generated titles, in characters (80).
	TitleMaxLen int
	// TurnStaleAfter is how long a turn may hold its session: a turn still
	// recorded as running after that is taken to have died with its process,
	// and another may start (15 minutes). A turn is stopped with a timeout
	// error before then.
	TurnStaleAfter time.Duration
	// MaxTurnsPerUser caps the turns one user runs at once, across every
	// replica (0: no cap). A chat or continue past it is refused with
	// rate_limited (code too_many_turns) before anything is stored.
	MaxTurnsPerUser int
	// ReplayPoll is how often Replay looks for new events (100 ms).
	ReplayPoll time.Duration
	// TurnLease bounds how long a running turn may go without recording
	// that it is alive before it is taken for lost with its process (20 s):
	// then the stream route, a stop, a new chat in its session or the
	// FailLostTurns sweep ends it with an error event (turn_lost) and done.
	TurnLease time.Duration
	// TurnHeartbeat is how often a running turn records that it is alive
	// and looks for a stop request made on another replica (TurnLease/10).
	TurnHeartbeat time.Duration
	// ContentBatch and ContentFlush batch content events: they are stored and
	// sent once ContentBatch are queued (32) or ContentFlush after the first
	// (50 ms). A ContentBatch of 1 stores and sends each delta on its own.
	ContentBatch int
	ContentFlush time.Duration
	// EventWriters bounds the writes of stream events under way at once
	// (2): the events of turns that flush meanwhile are stored together in
	// the next write. 1 suits a database with a single writer. A delta after
	// a quiet spell (a turn's first, most often) is not held up by them: it
	// is written on its own at once.
	EventWriters int
	// AutoTitle titles a session in the background once a turn of it has
	// answered while it has no title: one short model call, as
	// GenerateTitle makes (off by default; Drain waits for them).
	AutoTitle bool
}

// The limits of the API.
const (
	MaxMessageLen     = 32000
	MaxPageLen        = 2048
	MaxPreferences    = 50
	MaxInstructionLen = 500
	MaxReasonLen      = 1000
	DefaultPageLimit  = ports.DefaultPageLimit
	MaxPageLimit      = ports.MaxPageLimit
)

func (c Config) withDefaults() Config {
	if c.MaxToolRounds <= 0 {
		c.MaxToolRounds = 8
	}
	if c.MaxTokens <= 0 {
		c.MaxTokens = 4096
	}
	if c.ConfirmationTTL <= 0 {
		c.ConfirmationTTL = 15 * time.Minute
	}
	if strings.TrimSpace(c.SystemPrompt) == "" {
		c.SystemPrompt = DefaultSystemPrompt
	}
	if c.MaxTools <= 0 {
		c.MaxTools = tool.DefaultMaxTools
	}
	if c.HistoryTokens <= 0 {
		c.HistoryTokens = DefaultHistoryTokens
	}
	if c.Location == nil {
		c.Location = time.UTC
	}
	if c.TitleMaxLen <= 0 {
		c.TitleMaxLen = 80
	}
	if c.TurnStaleAfter <= 0 {
		c.TurnStaleAfter = 15 * time.Minute
	}
	if c.ReplayPoll <= 0 {
		c.ReplayPoll = 100 * time.Millisecond
	}
	if c.TurnLease <= 0 {
		c.TurnLease = 20 * time.Second
	}
	if c.TurnHeartbeat <= 0 || c.TurnHeartbeat >= c.TurnLease {
		c.TurnHeartbeat = c.TurnLease / 10
	}
	if c.ContentBatch <= 0 {
		c.ContentBatch = 32
	}
	if c.ContentFlush <= 0 {
		c.ContentFlush = 50 * time.Millisecond
	}
	if c.EventWriters <= 0 {
		c.EventWriters = 2
	}
	return c
}

// Deps are the ports a Service needs. Registry nil means an empty registry;
// Policies nil means no organisation marks any tool (and SetToolPolicy is
// unavailable); Observer nil hears nothing; Logger nil discards logs.
type Deps struct {
	Sessions      ports.ChatSessionStore
	Messages      ports.ChatMessageStore
	Confirmations ports.ConfirmationStore
	Events        ports.StreamEventStore
	Turns         ports.TurnStore
	Preferences   ports.PreferenceStore
	Policies      ports.ToolPolicyStore
	Tx            ports.Transactor
	LLM           ports.LLM
	Clock         ports.Clock
	IDs           ports.IDs
	Registry      *tool.Registry
	// Extra, when set, adds each organisation's own tools (its MCP
	// servers') to the registry's, for its turns and confirmations.
	Extra tool.Source
	// Guard, when set, refuses a tool call the caller's role may not make:
	// when the model proposes it, when it is confirmed and when a host
	// executes it (ExecuteTool).
	Guard tool.Guard
	// Observer hears the chat's tool calls and the confirmations decided
	// (ExecuteTool's calls are its caller's to report).
	Observer ports.Observer
	Logger   *slog.Logger
}

// Service is the assistant's use cases. Every method acts for the principal
// in ctx and fails with unauthenticated without one.
type Service struct {
	cfg    Config
	d      Deps
	log    *slog.Logger
	events *groupcommit.Committer[[]Event, struct{}]
	titles titles
	// local stops the turns running in this process at once, by turn id
	// (func(cause error)); turns elsewhere learn of a stop at their next
	// heartbeat.
	local sync.Map
}

// New returns a Service over the given ports.
func New(cfg Config, d Deps) *Service {
	if d.Registry == nil {
		d.Registry = tool.NewRegistry()
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Observer == nil {
		d.Observer = ports.NopObserver{}
	}
	s := &Service{cfg: cfg.withDefaults(), d: d, log: d.Logger.With("core", "assistant")}
	s.events = groupcommit.New(groupcommit.Config{MaxItems: eventBatchTurns, Writers: s.cfg.EventWriters},
		nil, s.storeEvents)
	return s
}

// eventBatchTurns bounds the turns whose events are stored in one statement.
const eventBatchTurns = 64

// appendEvents stores the events of a turn, with those of the turns
// storing theirs at the same time: while Config.EventWriters writes are
// under way, the turns' batches gather into the next one.
func (s *Service) appendEvents(ctx context.Context, evs []Event) error {
	_, err := s.events.Do(ctx, evs)
	return err
}

// appendEventsNow stores the events of a turn on their own.
func (s *Service) appendEventsNow(ctx context.Context, evs []Event) error {
	return s.d.Events.AppendEvents(ctx, evs...)
}

// storeEvents stores the events of several turns in one call.
func (s *Service) storeEvents(ctx context.Context, batches [][]Event) ([]struct{}, error) {
	if err := s.d.Events.AppendEvents(ctx, slices.Concat(batches...)...); err != nil {
		return nil, err
	}
	return make([]struct{}, len(batches)), nil
}

// Registry returns the registry the service calls tools from.
func (s *Service) Registry() *tool.Registry { return s.d.Registry }

// requireID checks an id given in a request body: invalid on field when it
// is missing or not a UUID.
func requireID(field, id string) *ports.FieldError {
	switch {
	case id == "":
		return &ports.FieldError{Field: field, Reason: "required"}
	case !ports.IsID(id):
		return &ports.FieldError{Field: field, Reason: "must be a UUID"}
	}
	return nil
}

func invalid(fields []ports.FieldError) error {
	if len(fields) == 0 {
		return nil
	}
	return ports.Invalid("invalid request", fields...)
}

// session returns the owner's session; an id that is not a UUID cannot be
// one, so it is not_found too.
func (s *Service) session(ctx context.Context, owner ports.Owner, id string) (ports.ChatSession, error) {
	if !ports.IsID(id) {
		return ports.ChatSession{}, ports.NotFound("chat session", id)
	}
	return s.d.Sessions.GetSession(ctx, owner, id)
}

// ListSessions returns the caller's sessions, most recent activity first, and
// the cursor of the next page ("" at the end). A zero Limit means 50.
// Errors: invalid for a limit outside 1..200 or a malformed cursor.
func (s *Service) ListSessions(ctx context.Context, page ports.Page) ([]ports.ChatSession, string, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return nil, "", err
	}
	page, err = page.Checked()
	if err != nil {
		return nil, "", err
	}
	return s.d.Sessions.ListSessions(ctx, p.Owner(), page)
}

// MaxSearchLength is the longest search text SearchSessions takes, in
// characters.
const MaxSearchLength = 200

// SearchSessions is ListSessions keeping the caller's sessions whose title
// or a message said in them (the user's or the assistant's text) contains q,
// case-insensitively; an empty q lists them all. Errors: invalid (field q)
// for a q longer than MaxSearchLength characters or holding a control
// character, else as ListSessions.
func (s *Service) SearchSessions(ctx context.Context, q string, page ports.Page) ([]ports.ChatSession, string, error) {
	if q == "" {
		return s.ListSessions(ctx, page)
	}
	if n := utf8.RuneCountInString(q); n > MaxSearchLength || !utf8.ValidString(q) {
		return nil, "", ports.Invalid(fmt.Sprintf("the search text must be valid UTF-8 of at most %d characters", MaxSearchLength),
			ports.FieldError{Field: "q", Reason: fmt.Sprintf("at most %d characters", MaxSearchLength)})
	}
	if strings.IndexFunc(q, unicode.IsControl) >= 0 {
		return nil, "", ports.Invalid("the search text must not hold control characters",
			ports.FieldError{Field: "q", Reason: "control characters are not allowed"})
	}
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return nil, "", err
	}
	page, err = page.Checked()
	if err != nil {
		return nil, "", err
	}
	return s.d.Sessions.SearchSessions(ctx, p.Owner(), q, page)
}

// SessionDetail is a session with everything said in it, in the order it was
// stored, and its confirmations, oldest first. A pending confirmation past its
// expiry is shown as expired.
type SessionDetail struct {
	Session       ports.ChatSession
	Messages      []ports.ChatMessage
	Confirmations []ports.Confirmation
}

// GetSession returns the caller's session with its messages and
// confirmations. Errors: not_found when absent or another's.
func (s *Service) GetSession(ctx context.Context, id string) (SessionDetail, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return SessionDetail{}, err
	}
	sess, err := s.session(ctx, p.Owner(), id)
	if err != nil {
		return SessionDetail{}, err
	}
	msgs, err := s.d.Messages.ListMessages(ctx, id)
	if err != nil {
		return SessionDetail{}, err
	}
	confs, err := s.d.Confirmations.ListConfirmations(ctx, id)
	if err != nil {
		return SessionDetail{}, err
	}
	now := s.d.Clock.Now()
	for i := range confs {
		confs[i].Status = effectiveStatus(confs[i], now)
	}
	return SessionDetail{Session: sess, Messages: msgs, Confirmations: confs}, nil
}

// DeleteSession deletes the caller's session and everything in it. Errors:
// not_found when absent or another's; conflict (turn_running) while a turn
// runs in it.
func (s *Service) DeleteSession(ctx context.Context, id string) error {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return err
	}
	if !ports.IsID(id) {
		return ports.NotFound("chat session", id)
	}
	err = s.d.Sessions.DeleteSession(ctx, p.Owner(), id, s.d.Clock.Now().Add(-s.cfg.TurnStaleAfter))
	if errors.Is(err, ports.ErrConflict) {
		return turnRunning(id, err)
	}
	return err
}

// running returns the session's running turn, nil when none runs or the one
// recorded is stale. A lost turn (see Config.TurnLease) is ended first, with
// an error event and done, so it is not running.
func (s *Service) running(ctx context.Context, sessionID string) (*ports.Turn, error) {
	t, err := s.d.Turns.RunningTurn(ctx, sessionID)
	if errors.Is(err, ports.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if t.EndedAt != nil || s.stale(t) {
		return nil, nil
	}
	if s.lost(t) {
		return nil, s.endLost(ctx, t)
	}
	return &t, nil
}

func (s *Service) stale(t ports.Turn) bool {
	return t.StartedAt.Before(s.d.Clock.Now().Add(-s.cfg.TurnStaleAfter))
}

// lost reports whether a running turn has not been alive for a whole lease.
func (s *Service) lost(t ports.Turn) bool {
	alive := t.AliveAt
	if alive.IsZero() {
		alive = t.StartedAt
	}
	return alive.Before(s.d.Clock.Now().Add(-s.cfg.TurnLease))
}

// endLost ends a lost turn with the events its process could not store: an
// error (turn_lost), then done, so a stream that follows it ends. Of the
// replicas that find it at once, one ends it; a turn alive again meanwhile
// is left running.
func (s *Service) endLost(ctx context.Context, t ports.Turn) error {
	now := s.d.Clock.Now()
	ended := false
	err := s.d.Tx.WithinTx(ctx, func(ctx context.Context) error {
		var err error
		if ended, err = s.d.Turns.EndLostTurn(ctx, t.ID, now.Add(-s.cfg.TurnLease), now); err != nil || !ended {
			return err
		}
		seq, err := s.d.Events.LastEventSeq(ctx, t.SessionID)
		if err != nil {
			return err
		}
		e := &emitter{sessionID: t.SessionID, turnID: t.ID, seq: seq, clock: s.d.Clock, log: func() *slog.Logger { return s.log }}
		return s.d.Events.AppendEvents(ctx,
			e.event(EventError, ErrorData{Code: CodeTurnLost, Retryable: true,
				Message: "the reply was lost: the server writing it stopped before it was finished; ask again"}),
			e.event(EventDone, DoneData{SessionID: t.SessionID, FinishReason: FinishError}))
	})
	if err != nil {
		return err
	}
	if ended {
		s.log.Warn("a lost chat turn was ended", "session_id", t.SessionID, "turn_id", t.ID, "alive_at", t.AliveAt)
	}
	return nil
}

// FailLostTurnsArgs is the background job that ends the turns lost with
// their process (see Config.TurnLease).
type FailLostTurnsArgs struct{}

// Kind names the job for the queue.
func (FailLostTurnsArgs) Kind() string { return "assistant.fail_lost_turns" }

// FailLostTurns ends every running turn not alive for a whole
// Config.TurnLease, each with an error event (turn_lost) and done, and
// returns how many it found. It is a background job, not scoped to a
// principal; the stream route, Stop and Chat end a lost turn they meet
// without waiting for it.
func (s *Service) FailLostTurns(ctx context.Context) (int, error) {
	turns, err := s.d.Turns.LostTurns(ctx, s.d.Clock.Now().Add(-s.cfg.TurnLease), 100)
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, t := range turns {
		errs = append(errs, s.endLost(ctx, t))
	}
	return len(turns), errors.Join(errs...)
}

func turnRunning(sessionID string, cause error) error {
	return &ports.Error{Kind: ports.KindConflict, Code: CodeTurnRunning,
		Message: fmt.Sprintf("chat session %s has a reply in progress", sessionID), Err: cause}
}

// Preferences returns the caller's standing instructions in order and when
// they were last replaced (nil when never).
func (s *Service) Preferences(ctx context.Context) ([]ports.Preference, *time.Time, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return nil, nil, err
	}
	return s.d.Preferences.GetPreferences(ctx, p.Owner())
}

// SetPreferences replaces the caller's standing instructions: at most 50,
// each 1..500 characters after trimming. An instruction kept from the
// previous list keeps its id and creation time. It returns the new list and
// the time of the change. Errors: invalid naming the offending field
// ("preferences" or "preferences[i].instruction").
func (s *Service) SetPreferences(ctx context.Context, instructions []string) ([]ports.Preference, time.Time, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return nil, time.Time{}, err
	}
	if len(instructions) > MaxPreferences {
		return nil, time.Time{}, ports.Invalid("too many preferences",
			ports.FieldError{Field: "preferences", Reason: fmt.Sprintf("must hold at most %d items", MaxPreferences)})
	}
	var fields []ports.FieldError
	texts := make([]string, len(instructions))
	for i, in := range instructions {
		texts[i] = strings.TrimSpace(in)
		if n := utf8.RuneCountInString(texts[i]); n == 0 || n > MaxInstructionLen {
			fields = append(fields, ports.FieldError{Field: fmt.Sprintf("preferences[%d].instruction", i),
				Reason: fmt.Sprintf("must be 1 to %d characters", MaxInstructionLen)})
		}
	}
	if err := invalid(fields); err != nil {
		return nil, time.Time{}, err
	}
	now := s.d.Clock.Now()
	prefs := make([]ports.Preference, len(texts))
	err = s.d.Tx.WithinTx(ctx, func(ctx context.Context) error {
		old, _, err := s.d.Preferences.GetPreferences(ctx, p.Owner())
		if err != nil {
			return err
		}
		kept := map[string][]ports.Preference{}
		for _, o := range old {
			kept[o.Instruction] = append(kept[o.Instruction], o)
		}
		for i, text := range texts {
			if k := kept[text]; len(k) > 0 {
				prefs[i], kept[text] = k[0], k[1:]
				continue
			}
			prefs[i] = ports.Preference{ID: s.d.IDs.NewID(), Instruction: text, CreatedAt: now}
		}
		return s.d.Preferences.ReplacePreferences(ctx, p.Owner(), prefs, now)
	})
	if err != nil {
		return nil, time.Time{}, err
	}
	return prefs, now, nil
}

// ExpireConfirmationsArgs is the background job that marks confirmations
// past their expiry as expired.
type ExpireConfirmationsArgs struct{}

// Kind names the job for the queue.
func (ExpireConfirmationsArgs) Kind() string { return "assistant.expire_confirmations" }

// ExpireConfirmations marks every pending confirmation past its expiry as
// expired and returns how many. It is a background job, not scoped to a
// principal; the service never depends on it having run.
func (s *Service) ExpireConfirmations(ctx context.Context) (int, error) {
	n, err := s.d.Confirmations.ExpireConfirmations(ctx, s.d.Clock.Now())
	for range n {
		s.d.Observer.ConfirmationDecided(ports.ConfirmationExpired)
	}
	return n, err
}
