package assistant_test

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/core/assistant"
	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
	"github.com/devpilot/devpilot/testkit/mocks"
)

var (
	alice = ports.Principal{UserID: "user-alice", OrgID: "org-1", Role: ports.RoleMember}
	bob   = ports.Principal{UserID: "user-bob", OrgID: "org-1", Role: ports.RoleMember}
)

func as(p ports.Principal) context.Context { return ports.WithPrincipal(context.Background(), p) }

// mem is the state behind the store mocks: the tests read what was stored.
type mem struct {
	mu       sync.Mutex
	sessions map[string]ports.ChatSession
	msgs     []ports.ChatMessage
	events   []ports.StreamEvent
	appends  [][]ports.StreamEvent // each AppendEvents call
	confs    []ports.Confirmation
	turns    []ports.Turn
	ended    map[string]int
	touched  int
	prefs    map[ports.Owner][]ports.Preference
	prefsAt  map[ports.Owner]time.Time
	titles   map[string]string
	// failEvents, when set, fails every AppendEvents.
	failEvents error
	// holdEvents, when set, holds the next AppendEvents until it is closed;
	// heldEvents is closed as that call starts waiting.
	holdEvents, heldEvents chan struct{}
}

// snapshot copies what a transaction may change.
func (m *mem) snapshot() *mem {
	m.mu.Lock()
	defer m.mu.Unlock()
	return &mem{sessions: maps.Clone(m.sessions), msgs: slices.Clone(m.msgs), confs: slices.Clone(m.confs),
		turns: slices.Clone(m.turns), prefs: maps.Clone(m.prefs), prefsAt: maps.Clone(m.prefsAt)}
}

func (m *mem) restore(s *mem) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sessions, m.msgs, m.confs, m.turns, m.prefs, m.prefsAt = s.sessions, s.msgs, s.confs, s.turns, s.prefs, s.prefsAt
}

// messagesLocked, lastSeqLocked and confirmationsLocked read a session's
// messages, last event seq and confirmations; m.mu is held.
func (m *mem) messagesLocked(sessionID string) []ports.ChatMessage {
	return inSession(m.msgs, sessionID, func(msg ports.ChatMessage) string { return msg.SessionID })
}

func (m *mem) lastSeqLocked(sessionID string) int64 {
	var last int64
	for _, ev := range inSession(m.events, sessionID, func(ev ports.StreamEvent) string { return ev.SessionID }) {
		last = max(last, ev.Seq)
	}
	return last
}

func (m *mem) confirmationsLocked(sessionID string) []ports.Confirmation {
	return inSession(m.confs, sessionID, func(c ports.Confirmation) string { return c.SessionID })
}

// inSession returns the items of xs whose session is sessionID, in order.
func inSession[T any](xs []T, sessionID string, session func(T) string) []T {
	var out []T
	for _, x := range xs {
		if session(x) == sessionID {
			out = append(out, x)
		}
	}
	return out
}

// startTurnLocked records tr as running, taking over a turn started before
// staleBefore; conflict while a later one runs. m.mu is held.
func (m *mem) startTurnLocked(tr ports.Turn, staleBefore time.Time) error {
	for i, old := range m.turns {
		if old.SessionID == tr.SessionID && old.EndedAt == nil {
			if !old.StartedAt.Before(staleBefore) {
				return ports.Errorf(ports.KindConflict, "turn running")
			}
			m.turns[i].EndedAt = &staleBefore
		}
	}
	m.turns = append(m.turns, tr)
	return nil
}

type env struct {
	t     *testing.T
	svc   *assistant.Service
	reg   *tool.Registry
	llm   *mocks.MockLLM
	clock *fixture.Clock
	ids   *fixture.IDs
	m     *mem
	reqs  []ports.ChatRequest
	reqMu sync.Mutex
}

// newEnv wires a Service to mocks backed by mem. Content is sent delta by
// delta unless cfg says otherwise. Each with may change the Deps before the
// Service is made (to add a policy store, say).
func newEnv(t *testing.T, cfg assistant.Config, with ...func(*assistant.Deps)) *env {
	t.Helper()
	ctrl := gomock.NewController(t)
	if cfg.ContentBatch == 0 {
		cfg.ContentBatch = 1
	}
	if cfg.ReplayPoll == 0 {
		cfg.ReplayPoll = time.Millisecond
	}
	e := &env{
		t: t, reg: tool.NewRegistry(), llm: mocks.NewMockLLM(ctrl),
		clock: fixture.NewClock(), ids: &fixture.IDs{},
		m: &mem{sessions: map[string]ports.ChatSession{}, ended: map[string]int{},
			prefs: map[ports.Owner][]ports.Preference{}, prefsAt: map[ports.Owner]time.Time{}, titles: map[string]string{}},
	}
	sessions := mocks.NewMockChatSessionStore(ctrl)
	messages := mocks.NewMockChatMessageStore(ctrl)
	confs := mocks.NewMockConfirmationStore(ctrl)
	events := mocks.NewMockStreamEventStore(ctrl)
	turns := mocks.NewMockTurnStore(ctrl)
	prefs := mocks.NewMockPreferenceStore(ctrl)
	tx := mocks.NewMockTransactor(ctrl)
	m := e.m

	// Transactions roll back on error, as the port promises.
	tx.EXPECT().WithinTx(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(ctx context.Context, fn func(context.Context) error) error {
			saved := m.snapshot()
			err := fn(ctx)
			if err != nil {
				m.restore(saved)
			}
			return err
		})

	sessions.EXPECT().CreateSession(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, s ports.ChatSession) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.sessions[s.ID] = s
			return nil
		})
	sessions.EXPECT().StartSession(gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, s ports.ChatSession, tr ports.Turn, msg ports.ChatMessage) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			if _, ok := m.sessions[s.ID]; ok {
				return ports.Errorf(ports.KindConflict, "chat session %s exists", s.ID)
			}
			m.sessions[s.ID] = s
			m.turns = append(m.turns, tr)
			m.msgs = append(m.msgs, msg)
			return nil
		})
	sessions.EXPECT().ContinueSession(gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, o ports.Owner, tr ports.Turn, msg ports.ChatMessage, staleBefore time.Time) (ports.SessionState, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			if s, ok := m.sessions[tr.SessionID]; !ok || s.OrgID != o.OrgID || s.UserID != o.UserID {
				return ports.SessionState{}, ports.NotFound("chat session", tr.SessionID)
			}
			if err := m.startTurnLocked(tr, staleBefore); err != nil {
				return ports.SessionState{}, err
			}
			m.msgs = append(m.msgs, msg)
			m.touched++
			return ports.SessionState{Messages: m.messagesLocked(tr.SessionID), LastEventSeq: m.lastSeqLocked(tr.SessionID),
				Confirmations: m.confirmationsLocked(tr.SessionID)}, nil
		})
	sessions.EXPECT().GetSession(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, o ports.Owner, id string) (ports.ChatSession, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			s, ok := m.sessions[id]
			if !ok || s.OrgID != o.OrgID || s.UserID != o.UserID {
				return ports.ChatSession{}, ports.NotFound("chat session", id)
			}
			return s, nil
		})
	sessions.EXPECT().TouchSession(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(context.Context, string, time.Time) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.touched++
			return nil
		})
	sessions.EXPECT().SetSessionTitle(gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, _ ports.Owner, id, title string, _ time.Time) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.titles[id] = title
			return nil
		})
	sessions.EXPECT().DeleteSession(gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, o ports.Owner, id string, staleBefore time.Time) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			if s, ok := m.sessions[id]; !ok || s.OrgID != o.OrgID || s.UserID != o.UserID {
				return ports.NotFound("chat session", id)
			}
			for _, tr := range m.turns {
				if tr.SessionID == id && tr.EndedAt == nil && !tr.StartedAt.Before(staleBefore) {
					return ports.Errorf(ports.KindConflict, "chat session %s has a turn running", id)
				}
			}
			delete(m.sessions, id)
			return nil
		})
	sessions.EXPECT().ListSessions(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().Return(nil, "", nil)

	messages.EXPECT().AppendMessages(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, msgs ...ports.ChatMessage) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.msgs = append(m.msgs, msgs...)
			return nil
		})
	messages.EXPECT().ListMessages(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, sessionID string) ([]ports.ChatMessage, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			return m.messagesLocked(sessionID), nil
		})

	events.EXPECT().AppendEvents(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(ctx context.Context, evs ...ports.StreamEvent) error {
			if ctx.Err() != nil {
				t.Errorf("AppendEvents with a cancelled context")
			}
			m.mu.Lock()
			hold, held := m.holdEvents, m.heldEvents
			m.holdEvents = nil
			m.mu.Unlock()
			if hold != nil {
				close(held)
				<-hold
			}
			m.mu.Lock()
			defer m.mu.Unlock()
			if m.failEvents != nil {
				return m.failEvents
			}
			for _, ev := range evs {
				for _, old := range m.events {
					if old.SessionID == ev.SessionID && old.Seq == ev.Seq {
						return ports.Errorf(ports.KindConflict, "event %d exists", ev.Seq)
					}
				}
			}
			m.events = append(m.events, evs...)
			m.appends = append(m.appends, slices.Clone(evs))
			return nil
		})
	events.EXPECT().LastEventSeq(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, sessionID string) (int64, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			return m.lastSeqLocked(sessionID), nil
		})
	events.EXPECT().ListEvents(gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, sessionID string, after int64, limit int) ([]ports.StreamEvent, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			var out []ports.StreamEvent
			for _, ev := range m.events {
				if ev.SessionID == sessionID && ev.Seq > after && len(out) < limit {
					out = append(out, ev)
				}
			}
			return out, nil
		})

	turns.EXPECT().StartTurn(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, tr ports.Turn, staleBefore time.Time) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			return m.startTurnLocked(tr, staleBefore)
		})
	turns.EXPECT().EndTurn(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(ctx context.Context, id string, at time.Time) error {
			if ctx.Err() != nil {
				t.Errorf("EndTurn with a cancelled context")
			}
			m.mu.Lock()
			defer m.mu.Unlock()
			m.ended[id]++
			for i := range m.turns {
				if m.turns[i].ID == id && m.turns[i].EndedAt == nil {
					m.turns[i].EndedAt = &at
					m.touched++
				}
			}
			return nil
		})
	turns.EXPECT().RunningTurn(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, sessionID string) (ports.Turn, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, tr := range m.turns {
				if tr.SessionID == sessionID && tr.EndedAt == nil {
					return tr, nil
				}
			}
			return ports.Turn{}, ports.NotFound("running turn", sessionID)
		})

	prefs.EXPECT().GetPreferences(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, o ports.Owner) ([]ports.Preference, *time.Time, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			at, ok := m.prefsAt[o]
			if !ok {
				return nil, nil, nil
			}
			return slices.Clone(m.prefs[o]), &at, nil
		})
	prefs.EXPECT().ReplacePreferences(gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, o ports.Owner, p []ports.Preference, at time.Time) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.prefs[o], m.prefsAt[o] = slices.Clone(p), at
			return nil
		})

	confs.EXPECT().CreateConfirmation(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, c ports.Confirmation) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.confs = append(m.confs, c)
			return nil
		})
	confs.EXPECT().ListConfirmations(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, sessionID string) ([]ports.Confirmation, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			return m.confirmationsLocked(sessionID), nil
		})
	confs.EXPECT().GetConfirmation(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, o ports.Owner, id string) (ports.Confirmation, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, c := range m.confs {
				if c.ID == id && c.OrgID == o.OrgID && c.UserID == o.UserID {
					return c, nil
				}
			}
			return ports.Confirmation{}, ports.NotFound("confirmation", id)
		})
	// DecideConfirmation is atomic, as the port promises.
	confs.EXPECT().DecideConfirmation(gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, o ports.Owner, id string, d ports.Decision) (ports.Confirmation, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for i, c := range m.confs {
				if c.ID != id || c.OrgID != o.OrgID || c.UserID != o.UserID {
					continue
				}
				switch {
				case c.Status != ports.ConfirmationPending:
					return c, &ports.Error{Kind: ports.KindConflict, Code: "already_decided", Message: "decided"}
				case !d.At.Before(c.ExpiresAt):
					m.confs[i].Status = ports.ConfirmationExpired
					return m.confs[i], &ports.Error{Kind: ports.KindGone, Code: "expired", Message: "expired"}
				}
				at := d.At
				m.confs[i].Status, m.confs[i].DecidedAt, m.confs[i].DecidedBy, m.confs[i].Reason = d.Status, &at, d.By, d.Reason
				return m.confs[i], nil
			}
			return ports.Confirmation{}, ports.NotFound("confirmation", id)
		})
	confs.EXPECT().RecordOutcome(gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, id string, o ports.ToolOutcome, at time.Time) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			for i := range m.confs {
				if m.confs[i].ID == id {
					if m.confs[i].Outcome != nil {
						return ports.Errorf(ports.KindConflict, "outcome recorded")
					}
					m.confs[i].Outcome, m.confs[i].ExecutedAt = &o, &at
					return nil
				}
			}
			return ports.NotFound("confirmation", id)
		})
	confs.EXPECT().ExpireConfirmations(gomock.Any(), gomock.Any()).AnyTimes().Return(0, nil)

	d := assistant.Deps{
		Sessions: sessions, Messages: messages, Confirmations: confs, Events: events, Turns: turns,
		Preferences: prefs, Tx: tx, LLM: e.llm, Clock: e.clock, IDs: e.ids, Registry: e.reg,
	}
	for _, w := range with {
		w(&d)
	}
	e.svc = assistant.New(cfg, d)
	return e
}

// reply is one scripted model call.
type reply func(ctx context.Context, req ports.ChatRequest, onDelta func(string) error) (ports.ChatResult, error)

// script expects exactly these model calls, in order, and records the
// requests.
func (e *env) script(replies ...reply) {
	calls := make([]any, len(replies))
	for i, r := range replies {
		calls[i] = e.llm.EXPECT().Chat(gomock.Any(), gomock.Any(), gomock.Any()).Times(1).DoAndReturn(
			func(ctx context.Context, req ports.ChatRequest, onDelta func(string) error) (ports.ChatResult, error) {
				e.reqMu.Lock()
				e.reqs = append(e.reqs, req)
				e.reqMu.Unlock()
				return r(ctx, req, onDelta)
			})
	}
	gomock.InOrder(calls...)
}

func (e *env) requests() []ports.ChatRequest {
	e.reqMu.Lock()
	defer e.reqMu.Unlock()
	return slices.Clone(e.reqs)
}

var usage = ports.Usage{PromptTokens: 10, CompletionTokens: 5}

// say streams deltas and finishes with stop.
func say(deltas ...string) reply {
	return func(_ context.Context, _ ports.ChatRequest, onDelta func(string) error) (ports.ChatResult, error) {
		var all string
		for _, d := range deltas {
			if err := onDelta(d); err != nil {
				return ports.ChatResult{}, err
			}
			all += d
		}
		return ports.ChatResult{Content: all, FinishReason: ports.FinishStop, Usage: usage}, nil
	}
}

// call asks for tool calls, each given as id, name, arguments.
func call(triples ...string) reply {
	return func(context.Context, ports.ChatRequest, func(string) error) (ports.ChatResult, error) {
		var calls []ports.ToolCall
		for i := 0; i+2 < len(triples); i += 3 {
			calls = append(calls, ports.ToolCall{ID: triples[i], Name: triples[i+1], Arguments: triples[i+2]})
		}
		return ports.ChatResult{ToolCalls: calls, FinishReason: ports.FinishToolCalls, Usage: usage}, nil
	}
}

// fail streams deltas, then fails with err.
func fail(err error, deltas ...string) reply {
	return func(_ context.Context, _ ports.ChatRequest, onDelta func(string) error) (ports.ChatResult, error) {
		for _, d := range deltas {
			if e := onDelta(d); e != nil {
				return ports.ChatResult{}, e
			}
		}
		return ports.ChatResult{}, err
	}
}

// counter counts the runs of a tool.
type counter struct{ n atomic.Int32 }

func (c *counter) runs() int { return int(c.n.Load()) }

const projectSchema = `{"type":"object","properties":{"project_id":{"type":"string","format":"uuid"}},"required":["project_id"],"additionalProperties":false}`

// readTool returns a read tool returning result.
func readTool(name string, c *counter, result any) tool.Tool {
	return tool.Tool{
		Name: name, Description: "reads " + name, Schema: json.RawMessage(projectSchema), Effect: tool.EffectRead,
		Run: func(context.Context, json.RawMessage) (any, error) { c.n.Add(1); return result, nil },
	}
}

// writeTool returns a write tool returning result.
func writeTool(name string, c *counter, result any) tool.Tool {
	return tool.Tool{
		Name: name, Description: "changes " + name, Schema: json.RawMessage(projectSchema), Effect: tool.EffectWrite,
		Summary: func(args json.RawMessage) string {
			var a struct {
				ProjectID string `json:"project_id"`
			}
			_ = json.Unmarshal(args, &a)
			return "Run " + name + " on project " + a.ProjectID + "."
		},
		Run: func(context.Context, json.RawMessage) (any, error) { c.n.Add(1); return result, nil },
	}
}

func (e *env) register(tools ...tool.Tool) {
	e.t.Helper()
	if err := e.reg.Register(tools...); err != nil {
		e.t.Fatalf("Register: %v", err)
	}
}

// recorder collects the events a client was sent and checks that each had
// been stored before.
type recorder struct {
	e      *env
	mu     sync.Mutex
	got    []assistant.Event
	failAt int // emit fails from this event on (1-based); 0 never
}

func (r *recorder) emit(ev assistant.Event) error {
	r.e.m.mu.Lock()
	stored := slices.ContainsFunc(r.e.m.events, func(s ports.StreamEvent) bool { return s.SessionID == ev.SessionID && s.Seq == ev.Seq })
	r.e.m.mu.Unlock()
	if !stored {
		r.e.t.Errorf("event %d (%s) sent before it was stored", ev.Seq, ev.Name)
	}
	if !json.Valid(ev.Data) || strings.ContainsAny(string(ev.Data), "\r\n") {
		r.e.t.Errorf("event %d (%s) data is not one line of JSON: %q", ev.Seq, ev.Name, ev.Data)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failAt > 0 && len(r.got)+1 >= r.failAt {
		return context.Canceled
	}
	r.got = append(r.got, ev)
	return nil
}

func (r *recorder) events() []assistant.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// chat runs a whole turn and returns the session id and the events sent.
func (e *env) chat(ctx context.Context, in assistant.ChatInput) (string, []assistant.Event) {
	e.t.Helper()
	run, err := e.svc.Chat(ctx, in)
	if err != nil {
		e.t.Fatalf("Chat: %v", err)
	}
	rec := &recorder{e: e}
	if err := run.Stream(ctx, rec.emit); err != nil {
		e.t.Fatalf("Stream: %v", err)
	}
	return run.SessionID(), rec.events()
}

func names(evs []assistant.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Name
	}
	return out
}

func decode[T any](t *testing.T, ev assistant.Event) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(ev.Data, &v); err != nil {
		t.Fatalf("event %s: %v in %s", ev.Name, err, ev.Data)
	}
	return v
}

func only[T any](t *testing.T, evs []assistant.Event, name string) []T {
	t.Helper()
	var out []T
	for _, ev := range evs {
		if ev.Name == name {
			out = append(out, decode[T](t, ev))
		}
	}
	return out
}

func (e *env) messages(sessionID string) []ports.ChatMessage {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	var out []ports.ChatMessage
	for _, m := range e.m.msgs {
		if m.SessionID == sessionID {
			out = append(out, m)
		}
	}
	return out
}

func (e *env) storedEvents(sessionID string) []ports.StreamEvent {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	var out []ports.StreamEvent
	for _, ev := range e.m.events {
		if ev.SessionID == sessionID {
			out = append(out, ev)
		}
	}
	return out
}

func (e *env) confirmations() []ports.Confirmation {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	return slices.Clone(e.m.confs)
}

// endedOnce checks that every turn started was ended exactly once.
func (e *env) endedOnce() {
	e.t.Helper()
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	for _, tr := range e.m.turns {
		if n := e.m.ended[tr.ID]; n != 1 {
			e.t.Errorf("turn %s ended %d times, want 1", tr.ID, n)
		}
	}
}

func errCode(err error) string {
	if e, ok := ports.AsError(err); ok {
		return e.ErrorCode()
	}
	return ""
}
