package memstore

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/devpilot/devpilot/ports"
)

var (
	_ ports.ChatSessionStore  = (*Store)(nil)
	_ ports.ChatMessageStore  = (*Store)(nil)
	_ ports.ConfirmationStore = (*Store)(nil)
	_ ports.StreamEventStore  = (*Store)(nil)
	_ ports.TurnStore         = (*Store)(nil)
	_ ports.PreferenceStore   = (*Store)(nil)
)

type eventKey struct {
	session string
	seq     int64
}

type preferences struct {
	prefs []ports.Preference
	at    time.Time
}

type assistantData struct {
	sessions      map[string]ports.ChatSession
	messages      map[string]seqd[ports.ChatMessage]
	confirmations map[string]seqd[ports.Confirmation]
	events        map[eventKey]ports.StreamEvent
	turns         map[string]ports.Turn
	preferences   map[ports.Owner]preferences
}

func (d *assistantData) init() {
	d.sessions = map[string]ports.ChatSession{}
	d.messages = map[string]seqd[ports.ChatMessage]{}
	d.confirmations = map[string]seqd[ports.Confirmation]{}
	d.events = map[eventKey]ports.StreamEvent{}
	d.turns = map[string]ports.Turn{}
	d.preferences = map[ports.Owner]preferences{}
}

// usec returns t in UTC cut to the microsecond: the assistant's records keep
// their times so (as PostgreSQL does), and times are compared with them so.
func usec(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func usecPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := usec(*t)
	return &v
}

func notFoundSession(id string) error { return ports.NotFound("chat session", id) }

func copyMessage(m ports.ChatMessage) ports.ChatMessage {
	m.ToolCalls = slices.Clone(m.ToolCalls)
	m.CreatedAt = usec(m.CreatedAt)
	return m
}

func copyConfirmation(c ports.Confirmation) ports.Confirmation {
	c.Arguments = bytes.Clone(c.Arguments)
	c.CreatedAt, c.ExpiresAt = usec(c.CreatedAt), usec(c.ExpiresAt)
	c.DecidedAt, c.ExecutedAt = usecPtr(c.DecidedAt), usecPtr(c.ExecutedAt)
	if c.Outcome != nil {
		o := *c.Outcome
		o.Result = bytes.Clone(o.Result)
		c.Outcome = &o
	}
	return c
}

func copyEvent(e ports.StreamEvent) ports.StreamEvent {
	e.Data, e.CreatedAt = bytes.Clone(e.Data), usec(e.CreatedAt)
	return e
}

func copyTurn(t ports.Turn) ports.Turn {
	t.StartedAt, t.EndedAt = usec(t.StartedAt), usecPtr(t.EndedAt)
	t.AliveAt, t.StopRequestedAt = usec(t.AliveAt), usecPtr(t.StopRequestedAt)
	return t
}

// withCounts returns the session with its message and pending confirmation
// counts (s.mu held).
func (s *Store) withCounts(cs ports.ChatSession) ports.ChatSession {
	cs.MessageCount, cs.PendingConfirmations = 0, 0
	for _, m := range s.assistant.messages {
		if m.v.SessionID == cs.ID {
			cs.MessageCount++
		}
	}
	for _, c := range s.assistant.confirmations {
		if c.v.SessionID == cs.ID && c.v.Status == ports.ConfirmationPending {
			cs.PendingConfirmations++
		}
	}
	return cs
}

// ownedSession returns the owner's session (s.mu held); not_found otherwise.
func (s *Store) ownedSession(owner ports.Owner, id string) (ports.ChatSession, error) {
	cs, ok := s.assistant.sessions[id]
	if !ok || cs.OrgID != owner.OrgID || cs.UserID != owner.UserID {
		return ports.ChatSession{}, notFoundSession(id)
	}
	return cs, nil
}

// createSession stores a new session (s.mu held).
func (s *Store) createSession(ctx context.Context, cs ports.ChatSession) error {
	if !s.isUserOf(cs.OrgID, cs.UserID) {
		return ports.NotFound("user", cs.UserID)
	}
	if _, ok := s.assistant.sessions[cs.ID]; ok {
		return ports.Errorf(ports.KindConflict, "chat session %s exists already", cs.ID)
	}
	if cs.UpdatedAt.IsZero() {
		cs.UpdatedAt = cs.CreatedAt
	}
	cs.CreatedAt, cs.UpdatedAt, cs.MessageCount, cs.PendingConfirmations = usec(cs.CreatedAt), usec(cs.UpdatedAt), 0, 0
	put(ctx, s, s.assistant.sessions, cs.ID, cs)
	return nil
}

// CreateSession stores a new session. Errors: conflict when the id exists;
// not_found when the user is not one of the org.
func (s *Store) CreateSession(ctx context.Context, cs ports.ChatSession) error {
	defer s.lock()()
	return s.createSession(ctx, cs)
}

// StartSession stores a new session with its first turn, running, and its
// first message, all or nothing. Errors: conflict when an id exists;
// not_found when the user is not one of the org; ErrTooManyTurns as
// StartTurn.
func (s *Store) StartSession(ctx context.Context, cs ports.ChatSession, first ports.Turn, msg ports.ChatMessage, staleBefore time.Time, maxPerUser int) error {
	defer s.lock()()
	return s.atomically(ctx, func(ctx context.Context) error {
		if err := s.createSession(ctx, cs); err != nil {
			return err
		}
		if err := s.startTurn(ctx, first, staleBefore, maxPerUser); err != nil {
			return err
		}
		return s.appendMessages(ctx, []ports.ChatMessage{msg})
	})
}

// ContinueSession starts turn in the owner's session, ending a running turn
// that started before staleBefore, appends msg and records activity at
// turn.StartedAt, all or nothing, and returns the session's state. Errors:
// not_found for a session absent or another owner's; conflict when a turn
// started at or after staleBefore runs, or an id exists; ErrTooManyTurns as
// StartTurn.
func (s *Store) ContinueSession(ctx context.Context, owner ports.Owner, turn ports.Turn, msg ports.ChatMessage, staleBefore time.Time, maxPerUser int) (ports.SessionState, error) {
	defer s.lock()()
	if _, err := s.ownedSession(owner, turn.SessionID); err != nil {
		return ports.SessionState{}, err
	}
	err := s.atomically(ctx, func(ctx context.Context) error {
		if err := s.startTurn(ctx, turn, staleBefore, maxPerUser); err != nil {
			return err
		}
		if err := s.appendMessages(ctx, []ports.ChatMessage{msg}); err != nil {
			return err
		}
		return s.touchSession(ctx, turn.SessionID, turn.StartedAt)
	})
	if err != nil {
		return ports.SessionState{}, err
	}
	return ports.SessionState{
		Messages:      s.listMessages(turn.SessionID),
		LastEventSeq:  s.lastEventSeq(turn.SessionID),
		Confirmations: s.listConfirmations(turn.SessionID),
	}, nil
}

// GetSession returns the owner's session with its counts; not_found when
// absent or another owner's.
func (s *Store) GetSession(_ context.Context, owner ports.Owner, id string) (ports.ChatSession, error) {
	defer s.lock()()
	cs, err := s.ownedSession(owner, id)
	if err != nil {
		return ports.ChatSession{}, err
	}
	return s.withCounts(cs), nil
}

// ListSessions returns the owner's sessions, most recently updated first,
// with their counts, and the next page's cursor; invalid for a malformed
// cursor.
func (s *Store) ListSessions(_ context.Context, owner ports.Owner, page ports.Page) ([]ports.ChatSession, string, error) {
	defer s.lock()()
	var all []ports.ChatSession
	for _, cs := range s.assistant.sessions {
		if cs.OrgID == owner.OrgID && cs.UserID == owner.UserID {
			all = append(all, cs)
		}
	}
	list, next, err := paginate(all, page, keyset[ports.ChatSession]{desc: true, byTime: true,
		key: func(cs ports.ChatSession) (string, string) { return timeKey(cs.UpdatedAt), cs.ID }})
	for i := range list {
		list[i] = s.withCounts(list[i])
	}
	return list, next, err
}

// SearchSessions is ListSessions keeping the sessions whose title or a
// user or assistant message contains q, case-insensitively.
func (s *Store) SearchSessions(_ context.Context, owner ports.Owner, q string, page ports.Page) ([]ports.ChatSession, string, error) {
	defer s.lock()()
	q = strings.ToLower(q)
	said := map[string]bool{}
	for _, m := range s.assistant.messages {
		if (m.v.Role == ports.MessageUser || m.v.Role == ports.MessageAssistant) && strings.Contains(strings.ToLower(m.v.Content), q) {
			said[m.v.SessionID] = true
		}
	}
	var all []ports.ChatSession
	for _, cs := range s.assistant.sessions {
		if cs.OrgID == owner.OrgID && cs.UserID == owner.UserID && (said[cs.ID] || strings.Contains(strings.ToLower(cs.Title), q)) {
			all = append(all, cs)
		}
	}
	list, next, err := paginate(all, page, keyset[ports.ChatSession]{desc: true, byTime: true,
		key: func(cs ports.ChatSession) (string, string) { return timeKey(cs.UpdatedAt), cs.ID }})
	for i := range list {
		list[i] = s.withCounts(list[i])
	}
	return list, next, err
}

// SetSessionTitle sets the owner's session's title and update time;
// not_found as GetSession.
func (s *Store) SetSessionTitle(ctx context.Context, owner ports.Owner, id, title string, at time.Time) error {
	defer s.lock()()
	cs, err := s.ownedSession(owner, id)
	if err != nil {
		return err
	}
	cs.Title, cs.UpdatedAt = title, usec(at)
	put(ctx, s, s.assistant.sessions, id, cs)
	return nil
}

// touchSession records activity in the session (s.mu held).
func (s *Store) touchSession(ctx context.Context, id string, at time.Time) error {
	cs, ok := s.assistant.sessions[id]
	if !ok {
		return notFoundSession(id)
	}
	cs.UpdatedAt = usec(at)
	put(ctx, s, s.assistant.sessions, id, cs)
	return nil
}

// TouchSession records activity in the session at the time given; not_found
// for a missing session.
func (s *Store) TouchSession(ctx context.Context, id string, at time.Time) error {
	defer s.lock()()
	return s.touchSession(ctx, id, at)
}

// runningTurn returns the session's running turn (s.mu held).
func (s *Store) runningTurn(sessionID string) (ports.Turn, bool) {
	for _, t := range s.assistant.turns {
		if t.SessionID == sessionID && t.EndedAt == nil {
			return t, true
		}
	}
	return ports.Turn{}, false
}

// DeleteSession deletes the owner's session and everything in it, unless a
// turn that started at or after staleBefore runs in it. Errors: conflict
// then; not_found as GetSession.
func (s *Store) DeleteSession(ctx context.Context, owner ports.Owner, id string, staleBefore time.Time) error {
	defer s.lock()()
	if _, err := s.ownedSession(owner, id); err != nil {
		return err
	}
	if t, ok := s.runningTurn(id); ok && !t.StartedAt.Before(usec(staleBefore)) {
		return ports.Errorf(ports.KindConflict, "a turn runs in chat session %s", id)
	}
	del(ctx, s, s.assistant.sessions, id)
	for k, m := range s.assistant.messages {
		if m.v.SessionID == id {
			del(ctx, s, s.assistant.messages, k)
		}
	}
	for k, c := range s.assistant.confirmations {
		if c.v.SessionID == id {
			del(ctx, s, s.assistant.confirmations, k)
		}
	}
	for k := range s.assistant.events {
		if k.session == id {
			del(ctx, s, s.assistant.events, k)
		}
	}
	for k, t := range s.assistant.turns {
		if t.SessionID == id {
			del(ctx, s, s.assistant.turns, k)
		}
	}
	return nil
}

// appendMessages stores messages in order, all or none (s.mu held).
func (s *Store) appendMessages(ctx context.Context, msgs []ports.ChatMessage) error {
	seen := map[string]bool{}
	for _, m := range msgs {
		if _, ok := s.assistant.sessions[m.SessionID]; !ok {
			return notFoundSession(m.SessionID)
		}
		if _, ok := s.assistant.messages[m.ID]; ok || seen[m.ID] {
			return ports.Errorf(ports.KindConflict, "chat message %s exists already", m.ID)
		}
		seen[m.ID] = true
	}
	for _, m := range msgs {
		put(ctx, s, s.assistant.messages, m.ID, seqd[ports.ChatMessage]{copyMessage(m), s.next()})
	}
	return nil
}

// AppendMessages stores messages in order, all or none. Errors: not_found
// when a session does not exist; conflict when an id exists.
func (s *Store) AppendMessages(ctx context.Context, msgs ...ports.ChatMessage) error {
	defer s.lock()()
	return s.appendMessages(ctx, msgs)
}

// listMessages returns a session's messages in the order they were appended
// (s.mu held).
func (s *Store) listMessages(sessionID string) []ports.ChatMessage {
	var rows []seqd[ports.ChatMessage]
	for _, m := range s.assistant.messages {
		if m.v.SessionID == sessionID {
			rows = append(rows, m)
		}
	}
	slices.SortFunc(rows, func(a, b seqd[ports.ChatMessage]) int { return cmp.Compare(a.seq, b.seq) })
	var out []ports.ChatMessage
	for _, r := range rows {
		out = append(out, copyMessage(r.v))
	}
	return out
}

// ListMessages returns a session's messages in the order they were appended.
func (s *Store) ListMessages(_ context.Context, sessionID string) ([]ports.ChatMessage, error) {
	defer s.lock()()
	return s.listMessages(sessionID), nil
}

// CreateConfirmation stores a confirmation (pending when Status is zero).
// Errors: not_found for a missing session; conflict when the id exists.
func (s *Store) CreateConfirmation(ctx context.Context, c ports.Confirmation) error {
	defer s.lock()()
	if _, ok := s.assistant.sessions[c.SessionID]; !ok {
		return notFoundSession(c.SessionID)
	}
	if _, ok := s.assistant.confirmations[c.ID]; ok {
		return ports.Errorf(ports.KindConflict, "confirmation %s exists already", c.ID)
	}
	if c.Status == "" {
		c.Status = ports.ConfirmationPending
	}
	put(ctx, s, s.assistant.confirmations, c.ID, seqd[ports.Confirmation]{copyConfirmation(c), s.next()})
	return nil
}

// ownedConfirmation returns the owner's confirmation (s.mu held).
func (s *Store) ownedConfirmation(owner ports.Owner, id string) (seqd[ports.Confirmation], error) {
	c, ok := s.assistant.confirmations[id]
	if !ok || c.v.OrgID != owner.OrgID || c.v.UserID != owner.UserID {
		return c, ports.NotFound("confirmation", id)
	}
	return c, nil
}

// GetConfirmation returns the owner's confirmation; not_found when absent or
// another owner's.
func (s *Store) GetConfirmation(_ context.Context, owner ports.Owner, id string) (ports.Confirmation, error) {
	defer s.lock()()
	c, err := s.ownedConfirmation(owner, id)
	if err != nil {
		return ports.Confirmation{}, err
	}
	return copyConfirmation(c.v), nil
}

// listConfirmations returns a session's confirmations, oldest first (s.mu
// held).
func (s *Store) listConfirmations(sessionID string) []ports.Confirmation {
	var rows []seqd[ports.Confirmation]
	for _, c := range s.assistant.confirmations {
		if c.v.SessionID == sessionID {
			rows = append(rows, c)
		}
	}
	slices.SortFunc(rows, func(a, b seqd[ports.Confirmation]) int {
		return cmp.Or(a.v.CreatedAt.Compare(b.v.CreatedAt), cmp.Compare(a.seq, b.seq))
	})
	var out []ports.Confirmation
	for _, r := range rows {
		out = append(out, copyConfirmation(r.v))
	}
	return out
}

// ListConfirmations returns a session's confirmations, oldest first.
func (s *Store) ListConfirmations(_ context.Context, sessionID string) ([]ports.Confirmation, error) {
	defer s.lock()()
	return s.listConfirmations(sessionID), nil
}

// DecideConfirmation moves the owner's pending confirmation to d.Status and
// returns it. Errors: invalid for a status other than approved or rejected;
// not_found (absent or another owner's); conflict (code already_decided)
// when it is not pending; gone (code expired) when it expired before d.At,
// and it is then recorded as expired. The conflict and gone errors come with
// the confirmation as it stands.
func (s *Store) DecideConfirmation(ctx context.Context, owner ports.Owner, id string, d ports.Decision) (ports.Confirmation, error) {
	if d.Status != ports.ConfirmationApproved && d.Status != ports.ConfirmationRejected {
		return ports.Confirmation{}, ports.Invalid("a decision approves or rejects",
			ports.FieldError{Field: "status", Reason: "must be approved or rejected"})
	}
	defer s.lock()()
	r, err := s.ownedConfirmation(owner, id)
	if err != nil {
		return ports.Confirmation{}, err
	}
	c := r.v
	switch {
	case c.Status == ports.ConfirmationPending && !c.ExpiresAt.After(usec(d.At)):
		c.Status = ports.ConfirmationExpired
		r.v = c
		put(ctx, s, s.assistant.confirmations, id, r)
		fallthrough
	case c.Status == ports.ConfirmationExpired:
		return copyConfirmation(c), &ports.Error{Kind: ports.KindGone, Code: ports.CodeExpired, Message: "confirmation " + id + " expired"}
	case c.Status != ports.ConfirmationPending:
		return copyConfirmation(c), &ports.Error{Kind: ports.KindConflict, Code: ports.CodeAlreadyDecided, Message: "confirmation " + id + " is decided already"}
	}
	c.Status, c.DecidedAt, c.DecidedBy, c.Reason = d.Status, usecPtr(&d.At), d.By, d.Reason
	r.v = c
	put(ctx, s, s.assistant.confirmations, id, r)
	return copyConfirmation(c), nil
}

// RecordOutcome stores what running an approved confirmation gave. Errors:
// not_found for a missing confirmation; conflict when it is not approved or
// has an outcome already.
func (s *Store) RecordOutcome(ctx context.Context, id string, o ports.ToolOutcome, at time.Time) error {
	defer s.lock()()
	r, ok := s.assistant.confirmations[id]
	if !ok {
		return ports.NotFound("confirmation", id)
	}
	if r.v.Status != ports.ConfirmationApproved || r.v.Outcome != nil {
		return ports.Errorf(ports.KindConflict, "confirmation %s is not awaiting an outcome", id)
	}
	r.v.Outcome, r.v.ExecutedAt = &o, &at
	r.v = copyConfirmation(r.v)
	put(ctx, s, s.assistant.confirmations, id, r)
	return nil
}

// ExpireConfirmations marks pending confirmations that expired before now as
// expired and returns how many.
func (s *Store) ExpireConfirmations(ctx context.Context, now time.Time) (int, error) {
	defer s.lock()()
	n := 0
	for id, r := range s.assistant.confirmations {
		if r.v.Status == ports.ConfirmationPending && !r.v.ExpiresAt.After(usec(now)) {
			r.v.Status = ports.ConfirmationExpired
			put(ctx, s, s.assistant.confirmations, id, r)
			n++
		}
	}
	return n, nil
}

// CountPendingConfirmations returns how many confirmations, of every
// organisation, are pending and expire after now.
func (s *Store) CountPendingConfirmations(_ context.Context, now time.Time) (int64, error) {
	defer s.lock()()
	var n int64
	for _, r := range s.assistant.confirmations {
		if r.v.Status == ports.ConfirmationPending && r.v.ExpiresAt.After(usec(now)) {
			n++
		}
	}
	return n, nil
}

// AppendEvents stores events, all or none. Errors: conflict when a (session,
// seq) exists or repeats; not_found for a missing session.
func (s *Store) AppendEvents(ctx context.Context, events ...ports.StreamEvent) error {
	defer s.lock()()
	seen := map[eventKey]bool{}
	for _, e := range events {
		if _, ok := s.assistant.sessions[e.SessionID]; !ok {
			return notFoundSession(e.SessionID)
		}
		k := eventKey{e.SessionID, e.Seq}
		if _, ok := s.assistant.events[k]; ok || seen[k] {
			return ports.Errorf(ports.KindConflict, "event %d of chat session %s exists already", e.Seq, e.SessionID)
		}
		seen[k] = true
	}
	for _, e := range events {
		put(ctx, s, s.assistant.events, eventKey{e.SessionID, e.Seq}, copyEvent(e))
	}
	return nil
}

// ListEvents returns up to limit events of a session with Seq > afterSeq, in
// Seq order; a limit below 1 or above ports.MaxEventPage is taken as
// ports.MaxEventPage.
func (s *Store) ListEvents(_ context.Context, sessionID string, afterSeq int64, limit int) ([]ports.StreamEvent, error) {
	defer s.lock()()
	var out []ports.StreamEvent
	for k, e := range s.assistant.events {
		if k.session == sessionID && k.seq > afterSeq {
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(a, b ports.StreamEvent) int { return cmp.Compare(a.Seq, b.Seq) })
	limit = ports.EventPageSize(limit)
	if len(out) > limit {
		out = out[:limit]
	}
	for i, e := range out {
		out[i] = copyEvent(e)
	}
	return out, nil
}

// lastEventSeq returns the highest Seq of a session (s.mu held).
func (s *Store) lastEventSeq(sessionID string) int64 {
	var last int64
	for k := range s.assistant.events {
		if k.session == sessionID {
			last = max(last, k.seq)
		}
	}
	return last
}

// LastEventSeq returns the highest Seq of a session, 0 when it has none.
func (s *Store) LastEventSeq(_ context.Context, sessionID string) (int64, error) {
	defer s.lock()()
	return s.lastEventSeq(sessionID), nil
}

// startTurn records a running turn, ending a stale one at t.StartedAt (s.mu
// held), unless maxPerUser > 0 turns of the session's user run elsewhere.
func (s *Store) startTurn(ctx context.Context, t ports.Turn, staleBefore time.Time, maxPerUser int) error {
	cs, ok := s.assistant.sessions[t.SessionID]
	if !ok {
		return notFoundSession(t.SessionID)
	}
	if _, ok := s.assistant.turns[t.ID]; ok {
		return ports.Errorf(ports.KindConflict, "turn %s exists already", t.ID)
	}
	if maxPerUser > 0 && s.runningTurnsOf(cs.UserID, t.SessionID, staleBefore) >= maxPerUser {
		return &ports.Error{Kind: ports.KindRateLimited, Code: ports.ErrTooManyTurns.Code,
			Message: fmt.Sprintf("user %s runs %d turns already", cs.UserID, maxPerUser)}
	}
	if running, ok := s.runningTurn(t.SessionID); ok {
		if !running.StartedAt.Before(usec(staleBefore)) {
			return ports.Errorf(ports.KindConflict, "a turn runs in chat session %s", t.SessionID)
		}
		running.EndedAt = usecPtr(&t.StartedAt)
		put(ctx, s, s.assistant.turns, running.ID, running)
	}
	t.EndedAt, t.StopRequestedAt, t.AliveAt = nil, nil, t.StartedAt
	put(ctx, s, s.assistant.turns, t.ID, copyTurn(t))
	return nil
}

// StartTurn records a running turn, ending a running one that started
// before staleBefore. Errors: conflict when a turn started at or after
// staleBefore runs (any running turn when staleBefore is zero) or the id
// exists; not_found for a missing session; ErrTooManyTurns when maxPerUser
// > 0 turns that started at or after staleBefore run in the user's other
// sessions.
func (s *Store) StartTurn(ctx context.Context, t ports.Turn, staleBefore time.Time, maxPerUser int) error {
	defer s.lock()()
	return s.startTurn(ctx, t, staleBefore, maxPerUser)
}

// runningTurnsOf counts the turns that started at or after staleBefore and
// run in the user's sessions other than exceptSession (s.mu held).
func (s *Store) runningTurnsOf(userID, exceptSession string, staleBefore time.Time) int {
	n := 0
	for _, t := range s.assistant.turns {
		if t.EndedAt != nil || t.SessionID == exceptSession || t.StartedAt.Before(usec(staleBefore)) {
			continue
		}
		if cs, ok := s.assistant.sessions[t.SessionID]; ok && cs.UserID == userID {
			n++
		}
	}
	return n
}

// EndTurn marks the turn ended at the time given and records activity in its
// session then; ending an ended turn changes nothing. not_found for a
// missing turn.
func (s *Store) EndTurn(ctx context.Context, id string, at time.Time) error {
	defer s.lock()()
	t, ok := s.assistant.turns[id]
	if !ok {
		return ports.NotFound("turn", id)
	}
	if t.EndedAt != nil {
		return nil
	}
	t.EndedAt = usecPtr(&at)
	put(ctx, s, s.assistant.turns, id, t)
	return s.touchSession(ctx, t.SessionID, at)
}

// RunningTurn returns the session's running turn; not_found when none.
func (s *Store) RunningTurn(_ context.Context, sessionID string) (ports.Turn, error) {
	defer s.lock()()
	t, ok := s.runningTurn(sessionID)
	if !ok {
		return ports.Turn{}, ports.NotFound("running turn of chat session", sessionID)
	}
	return copyTurn(t), nil
}

// HeartbeatTurn records that the turn is alive at the time given, when it
// still runs, and returns it as it stands; not_found for a missing turn.
func (s *Store) HeartbeatTurn(ctx context.Context, id string, at time.Time) (ports.Turn, error) {
	defer s.lock()()
	t, ok := s.assistant.turns[id]
	if !ok {
		return ports.Turn{}, ports.NotFound("turn", id)
	}
	if t.EndedAt == nil {
		t.AliveAt = usec(at)
		put(ctx, s, s.assistant.turns, id, t)
	}
	return copyTurn(t), nil
}

// RequestStop records that the session's running turn is asked to stop
// (keeping the first request's time) and returns it; not_found when none
// runs.
func (s *Store) RequestStop(ctx context.Context, sessionID string, at time.Time) (ports.Turn, error) {
	defer s.lock()()
	t, ok := s.runningTurn(sessionID)
	if !ok {
		return ports.Turn{}, ports.NotFound("running turn of chat session", sessionID)
	}
	if t.StopRequestedAt == nil {
		t.StopRequestedAt = usecPtr(&at)
		put(ctx, s, s.assistant.turns, t.ID, t)
	}
	return copyTurn(t), nil
}

// EndLostTurn ends the turn at the time given when it runs and was last
// alive before aliveBefore, and reports whether it did.
func (s *Store) EndLostTurn(ctx context.Context, id string, aliveBefore, at time.Time) (bool, error) {
	defer s.lock()()
	t, ok := s.assistant.turns[id]
	if !ok || t.EndedAt != nil || !t.AliveAt.Before(usec(aliveBefore)) {
		return false, nil
	}
	t.EndedAt = usecPtr(&at)
	put(ctx, s, s.assistant.turns, id, t)
	return true, s.touchSession(ctx, t.SessionID, at)
}

// LostTurns returns up to limit running turns last alive before
// aliveBefore, oldest first.
func (s *Store) LostTurns(_ context.Context, aliveBefore time.Time, limit int) ([]ports.Turn, error) {
	defer s.lock()()
	var out []ports.Turn
	for _, t := range s.assistant.turns {
		if t.EndedAt == nil && t.AliveAt.Before(usec(aliveBefore)) {
			out = append(out, copyTurn(t))
		}
	}
	slices.SortFunc(out, func(a, b ports.Turn) int {
		if c := a.AliveAt.Compare(b.AliveAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// GetPreferences returns the owner's preferences in order and when they were
// last replaced (nil when never).
func (s *Store) GetPreferences(_ context.Context, owner ports.Owner) ([]ports.Preference, *time.Time, error) {
	defer s.lock()()
	p, ok := s.assistant.preferences[owner]
	if !ok {
		return nil, nil, nil
	}
	at := p.at
	return slices.Clone(p.prefs), &at, nil
}

// ReplacePreferences replaces the owner's preferences with prefs.
func (s *Store) ReplacePreferences(ctx context.Context, owner ports.Owner, prefs []ports.Preference, at time.Time) error {
	defer s.lock()()
	prefs = slices.Clone(prefs)
	for i := range prefs {
		prefs[i].CreatedAt = usec(prefs[i].CreatedAt)
	}
	put(ctx, s, s.assistant.preferences, owner, preferences{prefs, usec(at)})
	return nil
}
