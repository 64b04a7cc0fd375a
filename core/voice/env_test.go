package voice_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/adapters/memstore"
	"github.com/devpilot/devpilot/core/assistant"
	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/core/voice"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
	"github.com/devpilot/devpilot/testkit/mocks"
)

var (
	alice = ports.Principal{UserID: "user-alice", OrgID: "org-1", Role: ports.RoleMember}
	bob   = ports.Principal{UserID: "user-bob", OrgID: "org-1", Role: ports.RoleMember}
)

func as(p ports.Principal) context.Context { return ports.WithPrincipal(context.Background(), p) }

// inTx marks the context a transaction runs with, so the spy can tell
// whether a write was made inside one.
type inTx struct{}

func withinTx(ctx context.Context) bool { return ctx.Value(inTx{}) != nil }

// spy is the env's memstore, passed as every store and the Transactor. It
// notes what the ports cannot tell: the transactions run, the pages of
// sessions listed and, in order, the writes a voice call makes, each with
// " (tx)" when made inside a transaction.
type spy struct {
	*memstore.Store
	mu     sync.Mutex
	txs    int
	pages  []ports.Page
	writes []string
}

func (s *spy) note(ctx context.Context, write string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if withinTx(ctx) {
		write += " (tx)"
	}
	s.writes = append(s.writes, write)
}

func (s *spy) WithinTx(ctx context.Context, fn func(context.Context) error) error {
	s.mu.Lock()
	s.txs++
	s.mu.Unlock()
	return s.Store.WithinTx(ctx, func(ctx context.Context) error { return fn(context.WithValue(ctx, inTx{}, true)) })
}

func (s *spy) ListSessions(ctx context.Context, o ports.Owner, p ports.Page) ([]ports.ChatSession, string, error) {
	s.mu.Lock()
	s.pages = append(s.pages, p)
	s.mu.Unlock()
	return s.Store.ListSessions(ctx, o, p)
}

func (s *spy) CreateSession(ctx context.Context, cs ports.ChatSession) error {
	s.note(ctx, "CreateSession")
	return s.Store.CreateSession(ctx, cs)
}

func (s *spy) TouchSession(ctx context.Context, id string, at time.Time) error {
	s.note(ctx, "TouchSession")
	return s.Store.TouchSession(ctx, id, at)
}

func (s *spy) AppendMessages(ctx context.Context, msgs ...ports.ChatMessage) error {
	s.note(ctx, "AppendMessages")
	return s.Store.AppendMessages(ctx, msgs...)
}

func (s *spy) CreateConfirmation(ctx context.Context, c ports.Confirmation) error {
	s.note(ctx, "CreateConfirmation")
	return s.Store.CreateConfirmation(ctx, c)
}

// env is a voice Service over a real assistant Service, both over one
// memstore (through the spy), with mock providers.
type env struct {
	t           *testing.T
	svc         *voice.Service
	deps        voice.Deps // svc's
	reg         *tool.Registry
	store       *memstore.Store // the store under the spy, to set up and read back
	spy         *spy
	realtime    *mocks.MockRealtime
	transcriber *mocks.MockTranscriber
	jobs        *mocks.MockJobQueue
	clock       *fixture.Clock
	ids         *fixture.IDs
	reads       atomic.Int32 // runs of get_project
	writes      atomic.Int32 // runs of deploy_project
}

const projectSchema = `{"type":"object","properties":{"project_id":{"type":"string","format":"uuid"}},"required":["project_id"],"additionalProperties":false}`

const (
	projectID   = "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
	projectArgs = `{"project_id":"` + projectID + `"}`
	aliceVoice  = "0193a1b2-0000-7000-8000-00000000a11c"
	bobSession  = "0193a1b2-0000-7000-8000-000000000b0b"
)

// newEnv wires the env; each with may change the assistant's Deps first (to
// add a policy store, say). At the end of the test it checks that voice
// stored no stream event and left no turn running.
func newEnv(t *testing.T, cfg voice.Config, with ...func(*env, *assistant.Deps)) *env {
	t.Helper()
	ctrl := gomock.NewController(t)
	store, ctx := memstore.New(), context.Background()
	err := store.CreateOrg(ctx, ports.Org{ID: "org-1", Name: "one"})
	for _, p := range []ports.Principal{alice, bob} {
		err = errors.Join(err, store.CreateUser(ctx, ports.User{ID: p.UserID, OrgID: p.OrgID, Email: p.UserID + "@example.com", Role: p.Role}))
	}
	if err != nil {
		t.Fatal(err)
	}
	e := &env{
		t: t, reg: tool.NewRegistry(), store: store, spy: &spy{Store: store},
		realtime: mocks.NewMockRealtime(ctrl), transcriber: mocks.NewMockTranscriber(ctrl), jobs: mocks.NewMockJobQueue(ctrl),
		clock: fixture.NewClock(), ids: &fixture.IDs{},
	}
	err = e.reg.Register(
		tool.Tool{Name: "get_project", Description: "reads a project", Schema: json.RawMessage(projectSchema), Effect: tool.EffectRead,
			Run: func(_ context.Context, args json.RawMessage) (any, error) {
				e.reads.Add(1)
				var a struct {
					ProjectID string `json:"project_id"`
				}
				_ = json.Unmarshal(args, &a)
				if a.ProjectID != projectID {
					return nil, ports.NotFound("project", a.ProjectID)
				}
				return map[string]string{"name": "Apollo"}, nil
			}},
		tool.Tool{Name: "list_projects", Description: "lists projects", Schema: json.RawMessage(`{"type":"object"}`), Effect: tool.EffectRead,
			Run: func(context.Context, json.RawMessage) (any, error) { return []string{"Apollo"}, nil }},
		tool.Tool{Name: "deploy_project", Description: "deploys a project", Schema: json.RawMessage(projectSchema), Effect: tool.EffectWrite,
			Summary: func(json.RawMessage) string { return "Deploy project Apollo." },
			Run:     func(context.Context, json.RawMessage) (any, error) { e.writes.Add(1); return "deployed", nil }},
	)
	if err != nil {
		t.Fatal(err)
	}
	d := assistant.Deps{
		Sessions: e.spy, Messages: e.spy, Confirmations: e.spy, Events: e.spy, Turns: e.spy, Preferences: e.spy,
		Tx: e.spy, LLM: mocks.NewMockLLM(ctrl), Clock: e.clock, IDs: e.ids, Registry: e.reg,
	}
	for _, w := range with {
		w(e, &d)
	}
	asst := assistant.New(assistant.Config{}, d)
	e.deps = voice.Deps{
		Assistant: asst, Sessions: e.spy, Messages: e.spy, Realtime: e.realtime, Transcriber: e.transcriber,
		Tx: e.spy, Clock: e.clock, IDs: e.ids, Jobs: e.jobs, Usage: e.spy,
	}
	e.svc = voice.New(cfg, e.deps)
	t.Cleanup(func() {
		for _, p := range []ports.Principal{alice, bob} {
			for _, s := range e.sessions(p) {
				if evs, _ := store.ListEvents(ctx, s.ID, 0, 1000); len(evs) != 0 {
					t.Errorf("session %s has %d stream events", s.ID, len(evs))
				}
				if tr, err := store.RunningTurn(ctx, s.ID); err == nil {
					t.Errorf("turn %s runs in session %s", tr.ID, s.ID)
				}
			}
		}
	})
	return e
}

// session stores a voice session of owner's, active an hour ago.
func (e *env) session(owner ports.Principal, id string) {
	e.t.Helper()
	e.sessionTitled(owner, id, voice.SessionTitle, e.clock.Now().Add(-time.Hour))
}

// sessionTitled stores a session of owner's with the title, active at the
// time given.
func (e *env) sessionTitled(owner ports.Principal, id, title string, at time.Time) {
	e.t.Helper()
	cs := ports.ChatSession{ID: id, OrgID: owner.OrgID, UserID: owner.UserID, Title: title, CreatedAt: at}
	if err := e.store.CreateSession(context.Background(), cs); err != nil {
		e.t.Fatal(err)
	}
}

// sessions returns owner's stored sessions, most recently active first.
func (e *env) sessions(owner ports.Principal) []ports.ChatSession {
	e.t.Helper()
	list, _, err := e.store.ListSessions(context.Background(), owner.Owner(), ports.Page{Limit: ports.MaxPageLimit})
	if err != nil {
		e.t.Fatal(err)
	}
	return list
}

// messages returns the session's stored messages.
func (e *env) messages(sessionID string) []ports.ChatMessage {
	e.t.Helper()
	msgs, err := e.store.ListMessages(context.Background(), sessionID)
	if err != nil {
		e.t.Fatal(err)
	}
	return msgs
}

// checkWrites checks the number of transactions run and the writes made,
// in order.
func (e *env) checkWrites(txs int, writes ...string) {
	e.t.Helper()
	e.spy.mu.Lock()
	defer e.spy.mu.Unlock()
	if e.spy.txs != txs || !slices.Equal(e.spy.writes, writes) {
		e.t.Errorf("%d transactions, writes %q; want %d, %q", e.spy.txs, e.spy.writes, txs, writes)
	}
}

// checkTouched checks that the session was last active at the clock's time.
func (e *env) checkTouched(owner ports.Principal, id string) {
	e.t.Helper()
	s, err := e.store.GetSession(context.Background(), owner.Owner(), id)
	if err != nil || !s.UpdatedAt.Equal(e.clock.Now()) {
		e.t.Errorf("session %s updated at %v (%v), want %v", id, s.UpdatedAt, err, e.clock.Now())
	}
}

func errCode(err error) string {
	if e, ok := ports.AsError(err); ok {
		return e.ErrorCode()
	}
	return ""
}

func fields(err error) []ports.FieldError {
	if e, ok := ports.AsError(err); ok {
		return e.Fields
	}
	return nil
}
