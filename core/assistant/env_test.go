package assistant_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/adapters/memstore"
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

// env is a Service over one memstore.Store, the store of every port and the
// Transactor, and a mock model; events and turns pass through spies.
type env struct {
	t      *testing.T
	svc    *assistant.Service
	reg    *tool.Registry
	llm    *mocks.MockLLM
	clock  *fixture.Clock
	ids    *fixture.IDs
	store  *memstore.Store
	events *eventSpy
	turns  *turnSpy
	reqs   []ports.ChatRequest
	reqMu  sync.Mutex
}

// eventSpy passes AppendEvents on to the store, recording each call (the
// batching, which the port does not tell); it can fail or hold them.
type eventSpy struct {
	ports.StreamEventStore
	t       *testing.T
	mu      sync.Mutex
	appends [][]ports.StreamEvent
	// fail, when set, fails every AppendEvents.
	fail error
	// hold, when set, holds the next AppendEvents until it is closed; held
	// is closed as that call starts waiting.
	hold, held chan struct{}
}

func (s *eventSpy) AppendEvents(ctx context.Context, evs ...ports.StreamEvent) error {
	if ctx.Err() != nil {
		s.t.Errorf("AppendEvents with a cancelled context")
	}
	s.mu.Lock()
	hold, held := s.hold, s.held
	s.hold = nil
	s.mu.Unlock()
	if hold != nil {
		close(held)
		<-hold
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	if err := s.StreamEventStore.AppendEvents(ctx, evs...); err != nil {
		return err
	}
	s.appends = append(s.appends, slices.Clone(evs))
	return nil
}

func (s *eventSpy) calls() [][]ports.StreamEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.appends)
}

// turnSpy passes EndTurn on to the store, counting the calls per turn.
type turnSpy struct {
	ports.TurnStore
	t     *testing.T
	mu    sync.Mutex
	ended map[string]int
}

func (s *turnSpy) EndTurn(ctx context.Context, id string, at time.Time) error {
	if ctx.Err() != nil {
		s.t.Errorf("EndTurn with a cancelled context")
	}
	s.mu.Lock()
	s.ended[id]++
	s.mu.Unlock()
	return s.TurnStore.EndTurn(ctx, id, at)
}

// newStore returns a memstore holding org-1 (alice, bob, carol) and org-2
// (dave).
func newStore(t *testing.T) *memstore.Store {
	t.Helper()
	s, ctx := memstore.New(), context.Background()
	err := errors.Join(s.CreateOrg(ctx, ports.Org{ID: "org-1", Name: "one"}), s.CreateOrg(ctx, ports.Org{ID: "org-2", Name: "two"}))
	for _, p := range []ports.Principal{alice, bob, carol, dave} {
		err = errors.Join(err, s.CreateUser(ctx, ports.User{ID: p.UserID, OrgID: p.OrgID, Email: p.UserID + "@example.com", Role: p.Role}))
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newEnv wires a Service to one memstore, as every store and the
// Transactor, and a mock model. Content is sent delta by delta unless cfg
// says otherwise. Each with may change the Deps before the Service is made
// (to add a policy store, say).
func newEnv(t *testing.T, cfg assistant.Config, with ...func(*assistant.Deps)) *env {
	t.Helper()
	if cfg.ContentBatch == 0 {
		cfg.ContentBatch = 1
	}
	if cfg.ReplayPoll == 0 {
		cfg.ReplayPoll = time.Millisecond
	}
	store := newStore(t)
	e := &env{
		t: t, reg: tool.NewRegistry(), llm: mocks.NewMockLLM(gomock.NewController(t)),
		clock: fixture.NewClock(), ids: &fixture.IDs{}, store: store,
		events: &eventSpy{StreamEventStore: store, t: t}, turns: &turnSpy{TurnStore: store, t: t, ended: map[string]int{}},
	}
	d := assistant.Deps{
		Sessions: store, Messages: store, Confirmations: store, Events: e.events, Turns: e.turns,
		Preferences: store, Tx: store, LLM: e.llm, Clock: e.clock, IDs: e.ids, Registry: e.reg,
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
	stored, err := r.e.store.ListEvents(context.Background(), ev.SessionID, ev.Seq-1, 1)
	if err != nil || len(stored) != 1 || stored[0].Seq != ev.Seq {
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
	e.t.Helper()
	msgs, err := e.store.ListMessages(context.Background(), sessionID)
	if err != nil {
		e.t.Fatalf("ListMessages: %v", err)
	}
	return msgs
}

func (e *env) storedEvents(sessionID string) []ports.StreamEvent {
	e.t.Helper()
	evs, err := e.store.ListEvents(context.Background(), sessionID, 0, 1000)
	if err != nil {
		e.t.Fatalf("ListEvents: %v", err)
	}
	return evs
}

func (e *env) confirmations(sessionID string) []ports.Confirmation {
	e.t.Helper()
	confs, err := e.store.ListConfirmations(context.Background(), sessionID)
	if err != nil {
		e.t.Fatalf("ListConfirmations: %v", err)
	}
	return confs
}

// endedOnce checks that no turn runs in any session and that every turn
// was ended exactly once: each that stored an event, and each ended at all.
func (e *env) endedOnce() {
	e.t.Helper()
	ctx := context.Background()
	turns := map[string]bool{}
	for _, p := range []ports.Principal{alice, bob} {
		list, _, err := e.store.ListSessions(ctx, p.Owner(), ports.Page{Limit: ports.MaxPageLimit})
		if err != nil {
			e.t.Fatalf("ListSessions: %v", err)
		}
		for _, s := range list {
			if tr, err := e.store.RunningTurn(ctx, s.ID); !errors.Is(err, ports.ErrNotFound) {
				e.t.Errorf("turn %s still runs (%v)", tr.ID, err)
			}
			for _, ev := range e.storedEvents(s.ID) {
				turns[ev.TurnID] = true
			}
		}
	}
	e.turns.mu.Lock()
	defer e.turns.mu.Unlock()
	for id := range e.turns.ended {
		turns[id] = true
	}
	for id := range turns {
		if n := e.turns.ended[id]; n != 1 {
			e.t.Errorf("turn %s ended %d times, want 1", id, n)
		}
	}
}

func errCode(err error) string {
	if e, ok := ports.AsError(err); ok {
		return e.ErrorCode()
	}
	return ""
}
