package assistant

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/ports"
)

// ChatInput is a message to the assistant. Without SessionID a new session
// is created.
type ChatInput struct {
	SessionID string
	Message   string
	Context   *tool.PageContext
}

func (in ChatInput) validate() (string, *tool.PageContext, error) {
	var fields []ports.FieldError
	msg := strings.TrimSpace(in.Message)
	switch n := utf8.RuneCountInString(msg); {
	case n == 0:
		fields = append(fields, ports.FieldError{Field: "message", Reason: "required"})
	case n > MaxMessageLen:
		fields = append(fields, ports.FieldError{Field: "message", Reason: fmt.Sprintf("must be at most %d characters", MaxMessageLen)})
	}
	if in.SessionID != "" {
		if f := requireID("session_id", in.SessionID); f != nil {
			fields = append(fields, *f)
		}
	}
	var page *tool.PageContext
	if in.Context != nil {
		page = &tool.PageContext{CurrentPage: strings.TrimSpace(in.Context.CurrentPage), SelectedProjectID: in.Context.SelectedProjectID}
		if utf8.RuneCountInString(page.CurrentPage) > MaxPageLen {
			fields = append(fields, ports.FieldError{Field: "context.current_page", Reason: fmt.Sprintf("must be at most %d characters", MaxPageLen)})
		}
		if page.SelectedProjectID != "" && !ports.IsID(page.SelectedProjectID) {
			fields = append(fields, ports.FieldError{Field: "context.selected_project_id", Reason: "must be a UUID"})
		}
	}
	return msg, page, invalid(fields)
}

// Run is a turn that has started and is waiting to be streamed. Call Stream
// exactly once, even when the client is gone already (the turn then runs
// without it, storing its events for a resume): until it has run, the
// session stays claimed (for Config.TurnStaleAfter).
type Run struct {
	s        *Service
	p        ports.Principal
	session  ports.ChatSession
	turn     ports.Turn
	lastSeq  int64
	prefs    []ports.Preference
	page     *tool.PageContext
	history  []ports.ChatMessage
	confs    []ports.Confirmation
	prologue []ports.ChatMessage // decided answers to report first (Continue)
	awaiting bool                // Continue while confirmations are pending
	streamed atomic.Bool
}

// SessionID is the session the turn runs in (new for a chat without one).
func (r *Run) SessionID() string { return r.session.ID }

// TurnID is the turn's id, which every event and message of it carries.
func (r *Run) TurnID() string { return r.turn.ID }

// Chat records the caller's message and starts a turn of the assistant in the
// given session, or in a new one. Nothing is streamed yet: errors come before
// any event, so a transport can still answer with a status. Errors: invalid
// (fields message, session_id, context.current_page,
// context.selected_project_id); not_found when the session is absent or
// another's; conflict (turn_running) while a turn runs in the session.
func (s *Service) Chat(ctx context.Context, in ChatInput) (*Run, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return nil, err
	}
	msg, page, err := in.validate()
	if err != nil {
		return nil, err
	}
	r := &Run{s: s, p: p, page: page}
	if in.SessionID == "" {
		return s.chatInNewSession(ctx, r, msg)
	}
	// The writes are made together (on SQLite they hold the one writer)
	// while the caller's preferences are read; the store returns what the
	// turn starts from.
	now := s.d.Clock.Now()
	r.session = ports.ChatSession{ID: in.SessionID}
	r.turn = ports.Turn{ID: s.d.IDs.NewID(), SessionID: in.SessionID, StartedAt: now}
	user := ports.ChatMessage{ID: s.d.IDs.NewID(), SessionID: in.SessionID, TurnID: r.turn.ID,
		Message: ports.Message{Role: ports.MessageUser, Content: msg}, CreatedAt: now}
	var prefsRead sync.WaitGroup
	var prefsErr error
	prefsRead.Go(func() { prefsErr = s.readPreferences(ctx, r) })
	st, err := s.d.Sessions.ContinueSession(ctx, p.Owner(), r.turn, user, now.Add(-s.cfg.TurnStaleAfter), s.cfg.MaxTurnsPerUser)
	if errors.Is(err, ports.ErrConflict) && s.endedLost(ctx, in.SessionID) {
		st, err = s.d.Sessions.ContinueSession(ctx, p.Owner(), r.turn, user, now.Add(-s.cfg.TurnStaleAfter), s.cfg.MaxTurnsPerUser)
	}
	prefsRead.Wait()
	if err != nil {
		return nil, s.turnRefused(in.SessionID, err)
	}
	if err := prefsErr; err != nil {
		s.abandon(r)
		return nil, err
	}
	r.history, r.lastSeq, r.confs = st.Messages, st.LastEventSeq, st.Confirmations
	return r, nil
}

// endedLost ends the session's running turn if it is lost (see
// Config.TurnLease) and reports whether it did, so a chat may take the
// session over at once.
func (s *Service) endedLost(ctx context.Context, sessionID string) bool {
	t, err := s.d.Turns.RunningTurn(ctx, sessionID)
	if err != nil || t.EndedAt != nil || !s.lost(t) {
		return false
	}
	if err := s.endLost(ctx, t); err != nil {
		s.log.Error("ending a lost chat turn", "session_id", sessionID, "turn_id", t.ID, "err", err)
		return false
	}
	return true
}

// chatInNewSession starts r's turn in a new session: the session, its turn
// and the caller's message are stored together, while the caller's
// preferences, all there is to read back, are read.
func (s *Service) chatInNewSession(ctx context.Context, r *Run, msg string) (*Run, error) {
	now := s.d.Clock.Now()
	p := r.p
	r.session = ports.ChatSession{ID: s.d.IDs.NewID(), OrgID: p.OrgID, UserID: p.UserID, CreatedAt: now, UpdatedAt: now}
	r.turn = ports.Turn{ID: s.d.IDs.NewID(), SessionID: r.session.ID, StartedAt: now}
	user := ports.ChatMessage{ID: s.d.IDs.NewID(), SessionID: r.session.ID, TurnID: r.turn.ID,
		Message: ports.Message{Role: ports.MessageUser, Content: msg}, CreatedAt: now}
	var prefsRead sync.WaitGroup
	var prefsErr error
	prefsRead.Go(func() { prefsErr = s.readPreferences(ctx, r) })
	err := s.d.Sessions.StartSession(ctx, r.session, r.turn, user, now.Add(-s.cfg.TurnStaleAfter), s.cfg.MaxTurnsPerUser)
	prefsRead.Wait()
	if errors.Is(err, ports.ErrTooManyTurns) {
		return nil, s.turnRefused(r.session.ID, err)
	}
	if err != nil {
		return nil, err
	}
	r.history = []ports.ChatMessage{user}
	if prefsErr != nil {
		s.abandon(r)
		return nil, prefsErr
	}
	return r, nil
}

// abandon ends a turn that was claimed but cannot start.
func (s *Service) abandon(r *Run) {
	if err := s.d.Turns.EndTurn(context.Background(), r.turn.ID, s.d.Clock.Now()); err != nil {
		s.log.Error("ending an abandoned turn", "turn", r.turn.ID, "err", err)
	}
}

// Continue starts a turn that resumes the caller's session after
// confirmations were decided: the answers decided since the model last spoke
// are reported as tool_result events, then the model goes on. While
// confirmations of the latest turn that asked for any are still pending, the
// Run reports the decided answers and ends at once with
// done{finish_reason:"confirmation_required"}, without calling the model.
// Errors: not_found when the session is absent or another's; conflict
// (turn_running) while a turn runs; conflict (nothing_to_continue) when no
// decided tool call is waiting for the model.
func (s *Service) Continue(ctx context.Context, sessionID string) (*Run, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return nil, err
	}
	r := &Run{s: s, p: p}
	err = s.d.Tx.WithinTx(ctx, func(ctx context.Context) error {
		if r.session, err = s.session(ctx, p.Owner(), sessionID); err != nil {
			return err
		}
		if err := s.startTurn(ctx, r); err != nil {
			return err
		}
		if err := s.load(ctx, r); err != nil {
			return err
		}
		r.prologue = trailingAnswers(r.history)
		r.awaiting = s.awaitingDecisions(r.confs)
		if !r.awaiting && len(r.prologue) == 0 && !endsWithCalls(r.history) {
			return &ports.Error{Kind: ports.KindConflict, Code: CodeNothingToContinue,
				Message: fmt.Sprintf("chat session %s has no decided tool call to continue from", sessionID)}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return r, nil
}

// startTurn records r's turn as running in its session.
func (s *Service) startTurn(ctx context.Context, r *Run) error {
	now := s.d.Clock.Now()
	r.turn = ports.Turn{ID: s.d.IDs.NewID(), SessionID: r.session.ID, StartedAt: now}
	err := s.d.Turns.StartTurn(ctx, r.turn, now.Add(-s.cfg.TurnStaleAfter), s.cfg.MaxTurnsPerUser)
	if err != nil {
		return s.turnRefused(r.session.ID, err)
	}
	return nil
}

// TooManyTurnsRetryAfter is how long a client refused for too many running
// turns is told to wait before it tries again.
const TooManyTurnsRetryAfter = 5 * time.Second

// turnRefused is the error of a turn the store would not start in the
// session: conflict (turn_running) while a turn runs in it, rate_limited
// (too_many_turns) when the caller runs Config.MaxTurnsPerUser turns
// already, or err as it is.
func (s *Service) turnRefused(sessionID string, err error) error {
	switch {
	case errors.Is(err, ports.ErrTooManyTurns):
		return &ports.Error{Kind: ports.KindRateLimited, Code: ports.ErrTooManyTurns.Code, RetryAfter: TooManyTurnsRetryAfter,
			Message: fmt.Sprintf("you have %d assistant turns running, the most allowed at once; wait for one to finish", s.cfg.MaxTurnsPerUser),
			Err:     err}
	case errors.Is(err, ports.ErrConflict):
		return turnRunning(sessionID, err)
	}
	return err
}

// load reads what the turn starts from, one read after the other (in the
// transaction ctx carries). It runs after StartTurn, so no other turn
// appends events behind the sequence number it reads.
func (s *Service) load(ctx context.Context, r *Run) (err error) {
	if err := s.readPreferences(ctx, r); err != nil {
		return err
	}
	if r.lastSeq, err = s.d.Events.LastEventSeq(ctx, r.session.ID); err != nil {
		return err
	}
	if r.history, err = s.d.Messages.ListMessages(ctx, r.session.ID); err != nil {
		return err
	}
	r.confs, err = s.d.Confirmations.ListConfirmations(ctx, r.session.ID)
	return err
}

// readPreferences reads the caller's preferences into r.
func (s *Service) readPreferences(ctx context.Context, r *Run) (err error) {
	r.prefs, _, err = s.d.Preferences.GetPreferences(ctx, r.p.Owner())
	return err
}

// awaitingDecisions reports whether the latest turn that asked for
// confirmations still has one pending.
func (s *Service) awaitingDecisions(confs []ports.Confirmation) bool {
	if len(confs) == 0 {
		return false
	}
	latest := confs[len(confs)-1].TurnID
	now := s.d.Clock.Now()
	for _, c := range confs {
		if c.TurnID == latest && effectiveStatus(c, now) == ports.ConfirmationPending {
			return true
		}
	}
	return false
}

// trailingAnswers are the tool messages stored since the model last spoke.
func trailingAnswers(history []ports.ChatMessage) []ports.ChatMessage {
	i := len(history)
	for i > 0 && history[i-1].Role == ports.MessageTool {
		i--
	}
	return history[i:]
}

func endsWithCalls(history []ports.ChatMessage) bool {
	n := len(history)
	return n > 0 && history[n-1].Role == ports.MessageAssistant && len(history[n-1].ToolCalls) > 0
}
