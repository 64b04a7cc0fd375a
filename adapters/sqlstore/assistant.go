package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lib/pq"
	"github.com/lib/pq/pqerror"

	"github.com/devpilot/devpilot/ports"
)

var (
	_ ports.ChatSessionStore  = (*Assistant)(nil)
	_ ports.ChatMessageStore  = (*Assistant)(nil)
	_ ports.ConfirmationStore = (*Assistant)(nil)
	_ ports.StreamEventStore  = (*Assistant)(nil)
	_ ports.TurnStore         = (*Assistant)(nil)
	_ ports.PreferenceStore   = (*Assistant)(nil)
)

// Assistant keeps the assistant's chat sessions, messages, confirmations,
// stream events, turns and preferences; it implements ports.ChatSessionStore,
// ports.ChatMessageStore, ports.ConfirmationStore, ports.StreamEventStore,
// ports.TurnStore and ports.PreferenceStore, with the errors those ports
// document.
type Assistant struct {
	db *DB
}

// NewAssistant returns the assistant stores over db.
func NewAssistant(db *DB) *Assistant {
	return &Assistant{db: db}
}

// sessionChanged is the SET expression of every change to a session: it
// moves updated_at to its argument (passed twice) unless it is later
// already, and counts the change in version. Every change that closes a
// stretch of a session's history goes through it (a turn starting or
// ending, activity recorded outside a turn), which is what lets
// ContinueSession read a session while it starts a turn in it.
const sessionChanged = "updated_at = CASE WHEN updated_at < ? THEN ? ELSE updated_at END, version = version + 1"

type sessionRow struct {
	ID                   string    `db:"id"`
	OrgID                string    `db:"org_id"`
	UserID               string    `db:"user_id"`
	Title                string    `db:"title"`
	CreatedAt            timestamp `db:"created_at"`
	UpdatedAt            timestamp `db:"updated_at"`
	MessageCount         int       `db:"message_count"`
	PendingConfirmations int       `db:"pending_confirmations"`
}

func (r sessionRow) session() ports.ChatSession {
	return ports.ChatSession{
		ID: r.ID, OrgID: r.OrgID, UserID: r.UserID, Title: r.Title,
		CreatedAt: time.Time(r.CreatedAt), UpdatedAt: time.Time(r.UpdatedAt),
		MessageCount: r.MessageCount, PendingConfirmations: r.PendingConfirmations,
	}
}

const sessionSelect = `SELECT s.id, s.org_id, s.user_id, s.title, s.created_at, s.updated_at,
	(SELECT COUNT(*) FROM chat_messages m WHERE m.session_id = s.id) AS message_count,
	(SELECT COUNT(*) FROM confirmations c WHERE c.session_id = s.id AND c.status = 'pending') AS pending_confirmations
FROM chat_sessions s`

// CreateSession implements ports.ChatSessionStore; a zero UpdatedAt is
// stored as CreatedAt. It is not_found when the owner does not exist.
func (s *Assistant) CreateSession(ctx context.Context, cs ports.ChatSession) error {
	updated := cs.UpdatedAt
	if updated.IsZero() {
		updated = cs.CreatedAt
	}
	_, err := s.db.write(ctx).exec(ctx,
		"INSERT INTO chat_sessions (id, org_id, user_id, title, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)",
		cs.ID, cs.OrgID, cs.UserID, cs.Title, timestamp(cs.CreatedAt), timestamp(updated))
	return storeErr(err, "chat session "+cs.ID, "user "+cs.UserID)
}

// StartSession implements ports.ChatSessionStore. On PostgreSQL it is one
// statement (sibling INSERTs in a WITH; the foreign keys are checked at its
// end), written through DB.Relaxed outside a transaction; on SQLite, three
// in a transaction. With a cap (maxPerUser > 0) the user's running turns are
// counted first, in the transaction (on PostgreSQL, under the user's turn
// lock: see capTurns).
func (s *Assistant) StartSession(ctx context.Context, cs ports.ChatSession, first ports.Turn, msg ports.ChatMessage, staleBefore time.Time, maxPerUser int) error {
	calls, err := encodeToolCalls(msg.ToolCalls)
	if err != nil {
		return ports.Wrap(ports.KindInternal, err, "encode tool calls")
	}
	updated := cs.UpdatedAt
	if updated.IsZero() {
		updated = cs.CreatedAt
	}
	if s.db.Dialect == DialectPostgres {
		if maxPerUser > 0 {
			return s.db.WithinTx(ctx, func(ctx context.Context) error {
				if err := s.capTurns(ctx, cs.UserID, cs.ID, staleBefore, maxPerUser); err != nil {
					return err
				}
				return s.startSessionAtOnce(ctx, cs, updated, first, msg, calls)
			})
		}
		return s.startSessionAtOnce(ctx, cs, updated, first, msg, calls)
	}
	return s.db.WithinTx(ctx, func(ctx context.Context) error {
		if err := s.CreateSession(ctx, cs); err != nil {
			return err
		}
		if err := s.capTurns(ctx, cs.UserID, cs.ID, staleBefore, maxPerUser); err != nil {
			return err
		}
		if err := s.StartTurn(ctx, first, time.Time{}, 0); err != nil {
			return err
		}
		return s.AppendMessages(ctx, msg)
	})
}

// startSessionAtOnce is StartSession on PostgreSQL: one statement, written
// through DB.Relaxed unless ctx carries a transaction.
func (s *Assistant) startSessionAtOnce(ctx context.Context, cs ports.ChatSession, updated time.Time, first ports.Turn, msg ports.ChatMessage, calls jsonText) error {
	// A new chat's only write is on the path to its first token, and losing
	// it in a crash of the server loses no more than the turn it starts
	// (nothing has run yet).
	_, err := s.db.writeRelaxed(ctx).exec(ctx, `WITH
		s AS (INSERT INTO chat_sessions (id, org_id, user_id, title, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)),
		t AS (INSERT INTO turns (id, session_id, started_at) VALUES (?, ?, ?))
		INSERT INTO chat_messages (`+messageColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		cs.ID, cs.OrgID, cs.UserID, cs.Title, timestamp(cs.CreatedAt), timestamp(updated),
		first.ID, first.SessionID, timestamp(first.StartedAt),
		msg.ID, msg.SessionID, msg.TurnID, string(msg.Role), msg.Content, calls, msg.ToolCallID, msg.Name, timestamp(msg.CreatedAt))
	return storeErr(err, "chat session "+cs.ID, "user "+cs.UserID)
}

// ContinueSession implements ports.ChatSessionStore. On PostgreSQL, outside
// a transaction, it is one statement written through DB.Relaxed that also
// reads what the turn starts from (see continueAtOnce), unless a turn is
// running in the session: then, as on SQLite, it checks and takes over a
// stale turn statement by statement in a transaction, and reads the session
// in it.
//
// With a cap (maxPerUser > 0) it always goes statement by statement, as
// StartTurn counts the user's turns under the user's turn lock.
func (s *Assistant) ContinueSession(ctx context.Context, owner ports.Owner, turn ports.Turn, msg ports.ChatMessage, staleBefore time.Time, maxPerUser int) (ports.SessionState, error) {
	if _, inTx := TxFromContext(ctx); s.db.Dialect == DialectPostgres && !inTx && maxPerUser <= 0 {
		if st, done, err := s.continueAtOnce(ctx, owner, turn, msg); done {
			return st, err
		}
	}
	var st ports.SessionState
	err := withinTx(ctx, s.db.relaxed(), func(ctx context.Context) error {
		if _, err := s.GetSession(ctx, owner, turn.SessionID); err != nil {
			return err
		}
		if err := s.StartTurn(ctx, turn, staleBefore, maxPerUser); err != nil {
			return err
		}
		if err := s.AppendMessages(ctx, msg); err != nil {
			return err
		}
		if err := s.TouchSession(ctx, turn.SessionID, turn.StartedAt); err != nil {
			return err
		}
		var err error
		st, err = s.readSession(ctx, turn.SessionID)
		return err
	})
	return st, err
}

// continueAtOnce is ContinueSession on PostgreSQL outside a transaction: one
// statement starts the turn and reads what it starts from. done is false
// when a turn is running in the session: nothing was stored, and
// ContinueSession goes on statement by statement.
//
// The statement reads the session in its snapshot, taken when it began, and
// changes it (version = version + 1) as it stands when the row is written,
// which is later when the statement had to wait for a turn ending in the
// meantime. So what it read is the session the turn starts from when the
// version it read is one below the version it wrote: no change came in
// between. A turn only starts when no other runs, and a turn stores its
// messages, events and confirmations before it ends, so nothing but such a
// change can come in between. Otherwise the session is read again, now
// that the turn holds it.
func (s *Assistant) continueAtOnce(ctx context.Context, owner ports.Owner, turn ports.Turn, msg ports.ChatMessage) (st ports.SessionState, done bool, err error) {
	calls, err := encodeToolCalls(msg.ToolCalls)
	if err != nil {
		return st, true, ports.Wrap(ports.KindInternal, err, "encode tool calls")
	}
	// The turn goes in first, for a session of the owner's: the unique index
	// of running turns lets one in. The session is changed after it (each
	// statement changes turns, then sessions, as EndTurn does, so they cannot
	// deadlock). One row per message read, or one with no message.
	var rows []struct {
		Found         bool  `db:"found"`
		Version       int64 `db:"version"`
		ReadVersion   int64 `db:"read_version"`
		LastSeq       int64 `db:"last_seq"`
		Confirmations int   `db:"confirmations"`
		nullableMessageRow
	}
	err = s.db.writeRelaxed(ctx).list(ctx, &rows, `WITH
		t AS (INSERT INTO turns (id, session_id, started_at)
			SELECT ?, id, ? FROM chat_sessions WHERE id = ? AND org_id = ? AND user_id = ? RETURNING session_id),
		s AS (UPDATE chat_sessions SET `+sessionChanged+` WHERE id IN (SELECT session_id FROM t) RETURNING version),
		m AS (INSERT INTO chat_messages (`+messageColumns+`) SELECT ?, session_id, ?, ?, ?, ?, ?, ?, ? FROM t),
		c AS (SELECT (SELECT version FROM s) AS version,
			(SELECT version FROM chat_sessions WHERE id = ?) AS read_version,
			(SELECT COALESCE(MAX(seq), 0) FROM stream_events WHERE session_id = ?) AS last_seq,
			(SELECT count(*) FROM confirmations WHERE session_id = ?) AS confirmations)
		SELECT c.version IS NOT NULL AS found, COALESCE(c.version, 0) AS version, COALESCE(c.read_version, 0) AS read_version,
			c.last_seq, c.confirmations, `+nullableMessageColumns+`
		FROM c LEFT JOIN chat_messages msg ON msg.session_id = ? AND c.version IS NOT NULL
		ORDER BY msg.position`,
		turn.ID, timestamp(turn.StartedAt), turn.SessionID, owner.OrgID, owner.UserID,
		timestamp(turn.StartedAt), timestamp(turn.StartedAt),
		msg.ID, msg.TurnID, string(msg.Role), msg.Content, calls, msg.ToolCallID, msg.Name, timestamp(msg.CreatedAt),
		turn.SessionID, turn.SessionID, turn.SessionID, turn.SessionID)
	switch {
	case err == nil && (len(rows) == 0 || !rows[0].Found):
		return st, true, ports.NotFound("chat session", turn.SessionID)
	case err == nil:
	case isRunningTurnConflict(err):
		return st, false, nil
	default:
		return st, true, storeErr(err, "turn "+turn.ID+" or chat message "+msg.ID, "chat session "+turn.SessionID)
	}
	// From here on the turn runs: a read that fails ends it again, so the
	// session is not held by a turn that never starts.
	defer func() {
		if err != nil {
			err = errors.Join(err, s.EndTurn(context.WithoutCancel(ctx), turn.ID, turn.StartedAt))
		}
	}()
	head := rows[0]
	if head.ReadVersion != head.Version-1 {
		st, err = s.readSession(ctx, turn.SessionID)
		return st, true, err
	}
	for _, r := range rows {
		if r.ID == nil {
			continue // no message
		}
		m, err := r.message()
		if err != nil {
			return st, true, err
		}
		st.Messages = append(st.Messages, m)
	}
	st.Messages = append(st.Messages, msg)
	st.LastEventSeq = head.LastSeq
	if head.Confirmations > 0 {
		// Only turns make confirmations, and this one has not started: the
		// list is the same now as when the statement began.
		st.Confirmations, err = s.ListConfirmations(ctx, turn.SessionID)
	}
	return st, true, err
}

// readSession reads what a turn of the session starts from (in ctx's
// transaction, if any).
func (s *Assistant) readSession(ctx context.Context, sessionID string) (st ports.SessionState, err error) {
	if st.Messages, err = s.ListMessages(ctx, sessionID); err != nil {
		return st, err
	}
	if st.LastEventSeq, err = s.LastEventSeq(ctx, sessionID); err != nil {
		return st, err
	}
	st.Confirmations, err = s.ListConfirmations(ctx, sessionID)
	return st, err
}

// isRunningTurnConflict reports whether err is PostgreSQL refusing a second
// running turn in a session.
func isRunningTurnConflict(err error) bool {
	pqErr, ok := errors.AsType[*pq.Error](err)
	return ok && pqErr.Code == pqerror.UniqueViolation && pqErr.Constraint == "turns_running_session_id_idx"
}

// GetSession implements ports.ChatSessionStore.
func (s *Assistant) GetSession(ctx context.Context, owner ports.Owner, id string) (ports.ChatSession, error) {
	var r sessionRow
	err := s.db.read(ctx).get(ctx, &r,
		sessionSelect+" WHERE s.id = ? AND s.org_id = ? AND s.user_id = ?", id, owner.OrgID, owner.UserID)
	if err != nil {
		return ports.ChatSession{}, storeErr(err, "chat session "+id, "")
	}
	return r.session(), nil
}

// ListSessions implements ports.ChatSessionStore. A page holds at most
// page.Size() items; ties in the update time are ordered by id.
func (s *Assistant) ListSessions(ctx context.Context, owner ports.Owner, page ports.Page) ([]ports.ChatSession, string, error) {
	rows, next, err := listPage(ctx, s.db.read(ctx), sessionSelect+" WHERE s.org_id = ? AND s.user_id = ?",
		[]any{owner.OrgID, owner.UserID}, page, keyset[sessionRow]{key: "s.updated_at", id: "s.id", desc: true, byTime: true,
			last: func(r sessionRow) (string, string) { return timeKey(time.Time(r.UpdatedAt)), r.ID }})
	if err != nil {
		return nil, "", storeErr(err, "chat sessions", "")
	}
	sessions := make([]ports.ChatSession, len(rows))
	for i, r := range rows {
		sessions[i] = r.session()
	}
	return sessions, next, nil
}

// SearchSessions implements ports.ChatSessionStore: ListSessions with a
// filter on the lower-cased title and user and assistant messages (lower
// folds ASCII letters on SQLite, every letter on PostgreSQL).
func (s *Assistant) SearchSessions(ctx context.Context, owner ports.Owner, q string, page ports.Page) ([]ports.ChatSession, string, error) {
	like := "%" + likeEscaper.Replace(strings.ToLower(q)) + "%"
	rows, next, err := listPage(ctx, s.db.read(ctx), sessionSelect+` WHERE s.org_id = ? AND s.user_id = ?
		AND (lower(s.title) LIKE ? ESCAPE '\' OR EXISTS (SELECT 1 FROM chat_messages m WHERE m.session_id = s.id
			AND m.role IN ('user', 'assistant') AND lower(m.content) LIKE ? ESCAPE '\'))`,
		[]any{owner.OrgID, owner.UserID, like, like}, page, keyset[sessionRow]{key: "s.updated_at", id: "s.id", desc: true, byTime: true,
			last: func(r sessionRow) (string, string) { return timeKey(time.Time(r.UpdatedAt)), r.ID }})
	if err != nil {
		return nil, "", storeErr(err, "chat sessions", "")
	}
	sessions := make([]ports.ChatSession, len(rows))
	for i, r := range rows {
		sessions[i] = r.session()
	}
	return sessions, next, nil
}

// likeEscaper escapes the wildcards of LIKE, and its escape character.
var likeEscaper = strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`)

// SetSessionTitle implements ports.ChatSessionStore. It records activity at
// the time given as TouchSession does.
func (s *Assistant) SetSessionTitle(ctx context.Context, owner ports.Owner, id, title string, at time.Time) error {
	n, err := s.db.write(ctx).exec(ctx,
		"UPDATE chat_sessions SET title = ?, "+sessionChanged+" WHERE id = ? AND org_id = ? AND user_id = ?",
		title, timestamp(at), timestamp(at), id, owner.OrgID, owner.UserID)
	if err == nil && n == 0 {
		return ports.NotFound("chat session", id)
	}
	return storeErr(err, "chat session "+id, "")
}

// TouchSession implements ports.ChatSessionStore; a time before the recorded
// activity leaves it unchanged. It is not_found when the session is absent.
func (s *Assistant) TouchSession(ctx context.Context, id string, at time.Time) error {
	n, err := s.db.write(ctx).exec(ctx,
		"UPDATE chat_sessions SET "+sessionChanged+" WHERE id = ?", timestamp(at), timestamp(at), id)
	if err == nil && n == 0 {
		return ports.NotFound("chat session", id)
	}
	return storeErr(err, "chat session "+id, "")
}

// DeleteSession implements ports.ChatSessionStore; the session's messages,
// confirmations, events and turns go with it. In one transaction it locks
// the session's row (SQLite's one writer does that on its own), which a turn
// starting must change, then looks for a running turn, then deletes.
// On PostgreSQL it first locks the session's running turns: EndTurn changes
// a turn, then its session, and the delete takes them in the same order, so
// a stale turn still ending cannot deadlock with it.
func (s *Assistant) DeleteSession(ctx context.Context, owner ports.Owner, id string, staleBefore time.Time) error {
	return s.db.WithinTx(ctx, func(ctx context.Context) error {
		c := s.db.write(ctx)
		lock := ""
		if s.db.Dialect == DialectPostgres {
			lock = " FOR UPDATE"
			_, err := c.exec(ctx, `SELECT 1 FROM turns t JOIN chat_sessions s ON s.id = t.session_id
				WHERE t.session_id = ? AND t.ended_at IS NULL AND s.org_id = ? AND s.user_id = ? FOR UPDATE OF t`,
				id, owner.OrgID, owner.UserID)
			if err != nil {
				return storeErr(err, "chat session "+id, "")
			}
		}
		found, err := c.exists(ctx,
			"SELECT 1 FROM chat_sessions WHERE id = ? AND org_id = ? AND user_id = ?"+lock, id, owner.OrgID, owner.UserID)
		switch {
		case err != nil:
			return storeErr(err, "chat session "+id, "")
		case !found:
			return ports.NotFound("chat session", id)
		}
		running, err := c.exists(ctx,
			"SELECT 1 FROM turns WHERE session_id = ? AND ended_at IS NULL AND started_at >= ?", id, timestamp(staleBefore))
		switch {
		case err != nil:
			return storeErr(err, "chat session "+id, "")
		case running:
			return ports.Errorf(ports.KindConflict, "chat session %s has a turn running", id)
		}
		_, err = c.exec(ctx, "DELETE FROM chat_sessions WHERE id = ?", id)
		return storeErr(err, "chat session "+id, "")
	})
}

// toolCallJSON is how a tool call is kept in chat_messages.tool_calls; the
// arguments stay a string, so text that is not valid JSON survives.
type toolCallJSON struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

func encodeToolCalls(calls []ports.ToolCall) (jsonText, error) {
	if len(calls) == 0 {
		return nil, nil
	}
	out := make([]toolCallJSON, len(calls))
	for i, c := range calls {
		out[i] = toolCallJSON(c)
	}
	return json.Marshal(out)
}

func decodeToolCalls(text jsonText) ([]ports.ToolCall, error) {
	if len(text) == 0 {
		return nil, nil
	}
	var in []toolCallJSON
	if err := json.Unmarshal(text, &in); err != nil {
		return nil, fmt.Errorf("sqlstore: bad tool calls: %w", err)
	}
	calls := make([]ports.ToolCall, len(in))
	for i, c := range in {
		calls[i] = ports.ToolCall(c)
	}
	return calls, nil
}

type messageRow struct {
	ID         string    `db:"id"`
	SessionID  string    `db:"session_id"`
	TurnID     string    `db:"turn_id"`
	Role       string    `db:"role"`
	Content    string    `db:"content"`
	ToolCalls  jsonText  `db:"tool_calls"`
	ToolCallID string    `db:"tool_call_id"`
	Name       string    `db:"name"`
	CreatedAt  timestamp `db:"created_at"`
}

const messageColumns = "id, session_id, turn_id, role, content, tool_calls, tool_call_id, name, created_at"

// nullableMessageRow is a messageRow of an outer join: ID is nil when the
// row has no message, and then the other columns are empty.
type nullableMessageRow struct {
	ID *string `db:"id"`
	messageRow
}

// nullableMessageColumns are the columns of a nullableMessageRow from a
// chat_messages joined as msg.
const nullableMessageColumns = `msg.id, COALESCE(msg.session_id, '') AS session_id, COALESCE(msg.turn_id, '') AS turn_id,
	COALESCE(msg.role, '') AS role, COALESCE(msg.content, '') AS content, msg.tool_calls,
	COALESCE(msg.tool_call_id, '') AS tool_call_id, COALESCE(msg.name, '') AS name,
	COALESCE(msg.created_at, 'epoch') AS created_at`

func (r nullableMessageRow) message() (ports.ChatMessage, error) {
	m, err := r.messageRow.message()
	m.ID = *r.ID
	return m, err
}

// AppendMessages implements ports.ChatMessageStore: all of msgs or none are
// stored. An empty ToolCalls reads back as nil. A message id that exists is
// a conflict.
func (s *Assistant) AppendMessages(ctx context.Context, msgs ...ports.ChatMessage) error {
	if len(msgs) == 0 {
		return nil
	}
	// One statement per message, so the position column follows msgs' order.
	return s.db.WithinTx(ctx, func(ctx context.Context) error {
		c := s.db.write(ctx)
		for _, m := range msgs {
			calls, err := encodeToolCalls(m.ToolCalls)
			if err != nil {
				return ports.Wrap(ports.KindInternal, err, "encode tool calls")
			}
			_, err = c.exec(ctx,
				"INSERT INTO chat_messages ("+messageColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
				m.ID, m.SessionID, m.TurnID, string(m.Role), m.Content, calls, m.ToolCallID, m.Name, timestamp(m.CreatedAt))
			if err != nil {
				return storeErr(err, "chat message "+m.ID, "chat session "+m.SessionID)
			}
		}
		return nil
	})
}

// ListMessages implements ports.ChatMessageStore; a session without
// messages, or an unknown one, has none.
func (s *Assistant) ListMessages(ctx context.Context, sessionID string) ([]ports.ChatMessage, error) {
	var rows []messageRow
	err := s.db.read(ctx).list(ctx, &rows,
		"SELECT "+messageColumns+" FROM chat_messages WHERE session_id = ? ORDER BY position", sessionID)
	if err != nil {
		return nil, storeErr(err, "chat messages", "")
	}
	msgs := make([]ports.ChatMessage, len(rows))
	for i, r := range rows {
		if msgs[i], err = r.message(); err != nil {
			return nil, err
		}
	}
	return msgs, nil
}

func (r messageRow) message() (ports.ChatMessage, error) {
	calls, err := decodeToolCalls(r.ToolCalls)
	if err != nil {
		return ports.ChatMessage{}, ports.Wrap(ports.KindInternal, err, "database error")
	}
	return ports.ChatMessage{
		ID: r.ID, SessionID: r.SessionID, TurnID: r.TurnID,
		Message: ports.Message{
			Role: ports.MessageRole(r.Role), Content: r.Content, ToolCalls: calls,
			ToolCallID: r.ToolCallID, Name: r.Name,
		},
		CreatedAt: time.Time(r.CreatedAt),
	}, nil
}

type eventRow struct {
	SessionID string    `db:"session_id"`
	Seq       int64     `db:"seq"`
	TurnID    string    `db:"turn_id"`
	Name      string    `db:"name"`
	Data      jsonText  `db:"data"`
	CreatedAt timestamp `db:"created_at"`
}

const eventColumns = "session_id, seq, turn_id, name, data, created_at"

// AppendEvents implements ports.StreamEventStore: all of events or none are
// stored. It is not_found when a session does not exist. Outside a
// transaction the events are written through DB.Relaxed: a client sees each
// one only once it is stored, so the write is on the path of every streamed
// token. A crash of devpilot loses none of them; a crash of the database
// server may lose its last moments of them, and the turns under way fail.
func (s *Assistant) AppendEvents(ctx context.Context, events ...ports.StreamEvent) error {
	if len(events) == 0 {
		return nil
	}
	ref := "chat session " + events[0].SessionID
	for _, e := range events {
		if e.SessionID != events[0].SessionID {
			ref = "chat session"
		}
	}
	if s.db.Dialect == DialectPostgres {
		return storeErr(s.appendEventsPostgres(ctx, events), "stream event", ref)
	}
	rows := make([][]any, len(events))
	for i, e := range events {
		rows[i] = []any{e.SessionID, e.Seq, e.TurnID, e.Name, jsonText(e.Data), timestamp(e.CreatedAt)}
	}
	return storeErr(insertAtomicallyOn(ctx, s.db.relaxed(), "stream_events", eventColumns, "", rows), "stream event", ref)
}

// appendEventsPostgres inserts events with one statement of six arguments,
// an array per column, whatever their number: events are stored in batches
// on the path of every streamed token, and each argument of a multi-row
// INSERT costs database/sql and lib/pq more than its share of an array.
func (s *Assistant) appendEventsPostgres(ctx context.Context, events []ports.StreamEvent) error {
	var sessions, seqs, turns, names, data, created []byte
	for i, e := range events {
		sessions = appendArrayElem(sessions, i, e.SessionID)
		seqs = strconv.AppendInt(append(seqs, arraySep(i)...), e.Seq, 10)
		turns = appendArrayElem(turns, i, e.TurnID)
		names = appendArrayElem(names, i, e.Name)
		if len(e.Data) == 0 { // as jsonText: NULL
			data = append(data, arraySep(i)+"NULL"...)
		} else {
			data = appendArrayElem(data, i, string(e.Data))
		}
		created = append(created, arraySep(i)+`"`...)
		created = append(e.CreatedAt.UTC().AppendFormat(created, timestampLayout), '"')
	}
	end := func(b []byte) string { return string(append(b, '}')) }
	_, err := s.db.writeRelaxed(ctx).exec(ctx, "INSERT INTO stream_events ("+eventColumns+") "+
		"SELECT * FROM unnest(?::text[], ?::bigint[], ?::text[], ?::text[], ?::text[], ?::timestamptz[])",
		end(sessions), end(seqs), end(turns), end(names), end(data), end(created))
	return err
}

// arraySep is what goes before element i of a PostgreSQL array literal.
func arraySep(i int) string {
	if i == 0 {
		return "{"
	}
	return ","
}

// appendArrayElem appends element i, v, of a PostgreSQL array literal:
// quoted, with its quotes and backslashes escaped.
func appendArrayElem(b []byte, i int, v string) []byte {
	b = append(b, arraySep(i)...)
	b = append(b, '"')
	for {
		j := strings.IndexAny(v, `"\`)
		if j < 0 {
			break
		}
		b = append(b, v[:j]...)
		b = append(b, '\\', v[j])
		v = v[j+1:]
	}
	b = append(b, v...)
	return append(b, '"')
}

// ListEvents implements ports.StreamEventStore; a limit below 1 or above
// ports.MaxEventPage is taken as ports.MaxEventPage.
func (s *Assistant) ListEvents(ctx context.Context, sessionID string, afterSeq int64, limit int) ([]ports.StreamEvent, error) {
	limit = ports.EventPageSize(limit)
	var rows []eventRow
	err := s.db.read(ctx).list(ctx, &rows,
		"SELECT "+eventColumns+" FROM stream_events WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?",
		sessionID, afterSeq, limit)
	if err != nil {
		return nil, storeErr(err, "stream events", "")
	}
	events := make([]ports.StreamEvent, len(rows))
	for i, r := range rows {
		events[i] = ports.StreamEvent{
			SessionID: r.SessionID, Seq: r.Seq, TurnID: r.TurnID, Name: r.Name,
			Data: json.RawMessage(r.Data), CreatedAt: time.Time(r.CreatedAt),
		}
	}
	return events, nil
}

// LastEventSeq implements ports.StreamEventStore.
func (s *Assistant) LastEventSeq(ctx context.Context, sessionID string) (int64, error) {
	var seq int64
	err := s.db.read(ctx).get(ctx, &seq,
		"SELECT COALESCE(MAX(seq), 0) FROM stream_events WHERE session_id = ?", sessionID)
	return seq, storeErr(err, "stream events", "")
}

// capTurns is ErrTooManyTurns when maxPerUser > 0 turns that started at or
// after staleBefore run in the user's sessions other than sessionID. It runs
// in the transaction that inserts the turn, so the count holds until it
// commits: on SQLite the transaction holds the one writer; on PostgreSQL it
// first takes a transaction-scoped advisory lock keyed by the user (every
// capped start takes it), so concurrent starts of one user count one after
// the other, each seeing the turns the ones before it committed.
func (s *Assistant) capTurns(ctx context.Context, userID, sessionID string, staleBefore time.Time, maxPerUser int) error {
	if maxPerUser <= 0 {
		return nil
	}
	c := s.db.write(ctx)
	if s.db.Dialect == DialectPostgres {
		if _, err := c.exec(ctx, "SELECT pg_advisory_xact_lock(?, hashtext(?))", turnLockClass, userID); err != nil {
			return storeErr(err, "turn lock of user "+userID, "")
		}
	}
	var n int
	err := c.get(ctx, &n, `SELECT COUNT(*) FROM turns t JOIN chat_sessions s ON s.id = t.session_id
		WHERE s.user_id = ? AND t.session_id <> ? AND t.ended_at IS NULL AND t.started_at >= ?`,
		userID, sessionID, timestamp(staleBefore))
	if err != nil {
		return storeErr(err, "running turns of user "+userID, "")
	}
	if n >= maxPerUser {
		return &ports.Error{Kind: ports.KindRateLimited, Code: ports.ErrTooManyTurns.Code,
			Message: fmt.Sprintf("user %s runs %d turns already, the most allowed", userID, n)}
	}
	return nil
}

// turnLockClass is the first key of the advisory locks capTurns takes on
// PostgreSQL; the second is a hash of the user's id.
const turnLockClass = 0x7475726e // "turn"

type turnRow struct {
	ID              string     `db:"id"`
	SessionID       string     `db:"session_id"`
	StartedAt       timestamp  `db:"started_at"`
	EndedAt         *timestamp `db:"ended_at"`
	AliveAt         *timestamp `db:"alive_at"`
	StopRequestedAt *timestamp `db:"stop_requested_at"`
}

// turnColumns are the columns of a turnRow.
const turnColumns = "id, session_id, started_at, ended_at, alive_at, stop_requested_at"

func (r turnRow) turn() ports.Turn {
	t := ports.Turn{ID: r.ID, SessionID: r.SessionID, StartedAt: time.Time(r.StartedAt), EndedAt: r.EndedAt.timePtr(),
		AliveAt: time.Time(r.StartedAt), StopRequestedAt: r.StopRequestedAt.timePtr()}
	if r.AliveAt != nil {
		t.AliveAt = time.Time(*r.AliveAt)
	}
	return t
}

// StartTurn implements ports.TurnStore; t.EndedAt is ignored, and a stale
// turn is recorded as ended at t.StartedAt. It is not_found when the session
// does not exist; ErrTooManyTurns past maxPerUser (see capTurns).
func (s *Assistant) StartTurn(ctx context.Context, t ports.Turn, staleBefore time.Time, maxPerUser int) error {
	return s.db.WithinTx(ctx, func(ctx context.Context) error {
		c := s.db.write(ctx)
		if maxPerUser > 0 {
			var userID string
			err := c.get(ctx, &userID, "SELECT user_id FROM chat_sessions WHERE id = ?", t.SessionID)
			if errors.Is(err, sql.ErrNoRows) {
				return ports.NotFound("chat session", t.SessionID)
			}
			if err != nil {
				return storeErr(err, "chat session "+t.SessionID, "")
			}
			if err := s.capTurns(ctx, userID, t.SessionID, staleBefore, maxPerUser); err != nil {
				return err
			}
		}
		if !staleBefore.IsZero() {
			ended, err := c.exec(ctx,
				"UPDATE turns SET ended_at = ? WHERE session_id = ? AND ended_at IS NULL AND started_at < ?",
				timestamp(t.StartedAt), t.SessionID, timestamp(staleBefore))
			if err == nil && ended > 0 { // a turn ended: a change of the session (see sessionChanged)
				_, err = c.exec(ctx, "UPDATE chat_sessions SET version = version + 1 WHERE id = ?", t.SessionID)
			}
			if err != nil {
				return storeErr(err, "turn "+t.ID, "")
			}
		}
		_, err := c.exec(ctx,
			"INSERT INTO turns (id, session_id, started_at) VALUES (?, ?, ?)",
			t.ID, t.SessionID, timestamp(t.StartedAt))
		if constraintKind(err) == ports.KindConflict {
			return ports.Wrap(ports.KindConflict, err, "chat session "+t.SessionID+" has a turn running")
		}
		return storeErr(err, "turn "+t.ID, "chat session "+t.SessionID)
	})
}

// EndTurn implements ports.TurnStore; ending an ended turn keeps its end.
// It is not_found when the turn does not exist. On PostgreSQL it is one
// statement; on SQLite, two in a transaction.
func (s *Assistant) EndTurn(ctx context.Context, id string, at time.Time) error {
	var n int64 // sessions touched: 1 when the turn ended now
	var err error
	if s.db.Dialect == DialectPostgres {
		n, err = s.db.write(ctx).exec(ctx, `WITH t AS (
			UPDATE turns SET ended_at = ? WHERE id = ? AND ended_at IS NULL RETURNING session_id)
			UPDATE chat_sessions SET `+sessionChanged+` WHERE id IN (SELECT session_id FROM t)`,
			timestamp(at), id, timestamp(at), timestamp(at))
	} else {
		err = s.db.WithinTx(ctx, func(ctx context.Context) error {
			var sessionID string
			err := s.db.write(ctx).get(ctx, &sessionID,
				"UPDATE turns SET ended_at = ? WHERE id = ? AND ended_at IS NULL RETURNING session_id", timestamp(at), id)
			if errors.Is(err, sql.ErrNoRows) {
				return nil
			}
			if err != nil {
				return err
			}
			n, err = s.db.write(ctx).exec(ctx,
				"UPDATE chat_sessions SET "+sessionChanged+" WHERE id = ?", timestamp(at), timestamp(at), sessionID)
			return err
		})
	}
	if err != nil || n == 1 {
		return storeErr(err, "turn "+id, "")
	}
	c := s.db.read(ctx)
	found, err := c.exists(ctx, "SELECT 1 FROM turns WHERE id = ?", id)
	switch {
	case err != nil:
		return storeErr(err, "turn "+id, "")
	case !found:
		return ports.NotFound("turn", id)
	}
	return nil
}

// RunningTurn implements ports.TurnStore.
func (s *Assistant) RunningTurn(ctx context.Context, sessionID string) (ports.Turn, error) {
	var r turnRow
	err := s.db.read(ctx).get(ctx, &r,
		"SELECT "+turnColumns+" FROM turns WHERE session_id = ? AND ended_at IS NULL", sessionID)
	if errors.Is(err, sql.ErrNoRows) {
		return ports.Turn{}, ports.Wrap(ports.KindNotFound, err, "chat session "+sessionID+" has no turn running")
	}
	if err != nil {
		return ports.Turn{}, storeErr(err, "turn", "")
	}
	return r.turn(), nil
}

// HeartbeatTurn implements ports.TurnStore in one statement (two on
// SQLite, in a transaction).
func (s *Assistant) HeartbeatTurn(ctx context.Context, id string, at time.Time) (ports.Turn, error) {
	var r turnRow
	err := s.db.WithinTx(ctx, func(ctx context.Context) error {
		c := s.db.write(ctx)
		err := c.get(ctx, &r, "UPDATE turns SET alive_at = ? WHERE id = ? AND ended_at IS NULL RETURNING "+turnColumns,
			timestamp(at), id)
		if errors.Is(err, sql.ErrNoRows) { // ended (or absent): read it as it stands
			err = c.get(ctx, &r, "SELECT "+turnColumns+" FROM turns WHERE id = ?", id)
		}
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return ports.Turn{}, ports.NotFound("turn", id)
	}
	if err != nil {
		return ports.Turn{}, storeErr(err, "turn "+id, "")
	}
	return r.turn(), nil
}

// RequestStop implements ports.TurnStore.
func (s *Assistant) RequestStop(ctx context.Context, sessionID string, at time.Time) (ports.Turn, error) {
	var r turnRow
	err := s.db.write(ctx).get(ctx, &r, `UPDATE turns SET stop_requested_at = COALESCE(stop_requested_at, ?)
		WHERE session_id = ? AND ended_at IS NULL RETURNING `+turnColumns, timestamp(at), sessionID)
	if errors.Is(err, sql.ErrNoRows) {
		return ports.Turn{}, ports.Wrap(ports.KindNotFound, err, "chat session "+sessionID+" has no turn running")
	}
	if err != nil {
		return ports.Turn{}, storeErr(err, "turn", "")
	}
	return r.turn(), nil
}

// EndLostTurn implements ports.TurnStore: the conditional update decides
// which of concurrent calls ends the turn.
func (s *Assistant) EndLostTurn(ctx context.Context, id string, aliveBefore, at time.Time) (bool, error) {
	ended := false
	err := s.db.WithinTx(ctx, func(ctx context.Context) error {
		c := s.db.write(ctx)
		var sessionID string
		err := c.get(ctx, &sessionID, `UPDATE turns SET ended_at = ?
			WHERE id = ? AND ended_at IS NULL AND COALESCE(alive_at, started_at) < ? RETURNING session_id`,
			timestamp(at), id, timestamp(aliveBefore))
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		ended = true
		_, err = c.exec(ctx, "UPDATE chat_sessions SET "+sessionChanged+" WHERE id = ?", timestamp(at), timestamp(at), sessionID)
		return err
	})
	if err != nil {
		return false, storeErr(err, "turn "+id, "")
	}
	return ended, nil
}

// LostTurns implements ports.TurnStore.
func (s *Assistant) LostTurns(ctx context.Context, aliveBefore time.Time, limit int) ([]ports.Turn, error) {
	var rows []turnRow
	err := s.db.read(ctx).list(ctx, &rows, "SELECT "+turnColumns+` FROM turns
		WHERE ended_at IS NULL AND COALESCE(alive_at, started_at) < ?
		ORDER BY COALESCE(alive_at, started_at), id LIMIT ?`, timestamp(aliveBefore), limit)
	if err != nil {
		return nil, storeErr(err, "turns", "")
	}
	out := make([]ports.Turn, len(rows))
	for i, r := range rows {
		out[i] = r.turn()
	}
	return out, nil
}

// GetPreferences implements ports.PreferenceStore; an owner who never set
// any has none, and a nil time.
func (s *Assistant) GetPreferences(ctx context.Context, owner ports.Owner) ([]ports.Preference, *time.Time, error) {
	var rows []struct {
		UpdatedAt   timestamp  `db:"updated_at"`
		ID          *string    `db:"id"`
		Instruction *string    `db:"instruction"`
		CreatedAt   *timestamp `db:"created_at"`
	}
	// One statement, so the list and its time are read together.
	err := s.db.read(ctx).list(ctx, &rows, `SELECT ps.updated_at, p.id, p.instruction, p.created_at
		FROM preference_sets ps
		LEFT JOIN preferences p ON p.user_id = ps.user_id AND p.org_id = ps.org_id
		WHERE ps.user_id = ? AND ps.org_id = ?
		ORDER BY p.position`, owner.UserID, owner.OrgID)
	if err != nil {
		return nil, nil, storeErr(err, "preferences", "")
	}
	if len(rows) == 0 {
		return nil, nil, nil
	}
	var prefs []ports.Preference
	for _, r := range rows {
		if r.ID != nil {
			prefs = append(prefs, ports.Preference{ID: *r.ID, Instruction: *r.Instruction, CreatedAt: time.Time(*r.CreatedAt)})
		}
	}
	updated := time.Time(rows[0].UpdatedAt)
	return prefs, &updated, nil
}

// ReplacePreferences implements ports.PreferenceStore. It is not_found when
// the owner does not exist, and a conflict when a preference id is used by
// another owner or twice in prefs.
func (s *Assistant) ReplacePreferences(ctx context.Context, owner ports.Owner, prefs []ports.Preference, at time.Time) error {
	what := "preferences of user " + owner.UserID
	rows := make([][]any, len(prefs))
	for i, p := range prefs {
		rows[i] = []any{p.ID, owner.UserID, owner.OrgID, i, p.Instruction, timestamp(p.CreatedAt)}
	}
	return s.db.WithinTx(ctx, func(ctx context.Context) error {
		c := s.db.write(ctx)
		_, err := c.exec(ctx, `INSERT INTO preference_sets (user_id, org_id, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (user_id, org_id) DO UPDATE SET updated_at = excluded.updated_at`,
			owner.UserID, owner.OrgID, timestamp(at))
		if err != nil {
			return storeErr(err, what, "user "+owner.UserID)
		}
		if _, err := c.exec(ctx, "DELETE FROM preferences WHERE user_id = ? AND org_id = ?", owner.UserID, owner.OrgID); err != nil {
			return storeErr(err, what, "")
		}
		err = c.insertRows(ctx, "preferences", "id, user_id, org_id, position, instruction, created_at", rows)
		return storeErr(err, "a preference id", "")
	})
}
