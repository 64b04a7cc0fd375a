package voice_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

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

// inTx marks the context a transaction runs with, so store mocks can tell
// whether they were called inside one.
type inTx struct{}

func withinTx(ctx context.Context) bool { return ctx.Value(inTx{}) != nil }

// env is a voice Service over a real assistant Service, every store a strict
// mock: a test expects each store call it allows, so a call it did not
// expect (such as a write after a refused tool call) fails it.
type env struct {
	t           *testing.T
	svc         *voice.Service
	reg         *tool.Registry
	sessions    *mocks.MockChatSessionStore
	messages    *mocks.MockChatMessageStore
	confs       *mocks.MockConfirmationStore
	prefs       *mocks.MockPreferenceStore
	tx          *mocks.MockTransactor
	realtime    *mocks.MockRealtime
	transcriber *mocks.MockTranscriber
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
// add a policy store, say).
func newEnv(t *testing.T, cfg voice.Config, with ...func(*assistant.Deps)) *env {
	t.Helper()
	ctrl := gomock.NewController(t)
	e := &env{
		t: t, reg: tool.NewRegistry(),
		sessions: mocks.NewMockChatSessionStore(ctrl), messages: mocks.NewMockChatMessageStore(ctrl),
		confs: mocks.NewMockConfirmationStore(ctrl), prefs: mocks.NewMockPreferenceStore(ctrl),
		tx: mocks.NewMockTransactor(ctrl), realtime: mocks.NewMockRealtime(ctrl), transcriber: mocks.NewMockTranscriber(ctrl),
		clock: fixture.NewClock(), ids: &fixture.IDs{},
	}
	err := e.reg.Register(
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
		Sessions: e.sessions, Messages: e.messages, Confirmations: e.confs,
		Events: mocks.NewMockStreamEventStore(ctrl), Turns: mocks.NewMockTurnStore(ctrl), Preferences: e.prefs,
		Tx: e.tx, LLM: mocks.NewMockLLM(ctrl), Clock: e.clock, IDs: e.ids, Registry: e.reg,
	}
	for _, w := range with {
		w(&d)
	}
	asst := assistant.New(assistant.Config{}, d)
	e.svc = voice.New(cfg, voice.Deps{
		Assistant: asst, Sessions: e.sessions, Messages: e.messages, Realtime: e.realtime, Transcriber: e.transcriber,
		Tx: e.tx, Clock: e.clock, IDs: e.ids,
	})
	return e
}

// expectTx allows n transactions, which commit when fn succeeds.
func (e *env) expectTx(n int) {
	e.tx.EXPECT().WithinTx(gomock.Any(), gomock.Any()).Times(n).DoAndReturn(
		func(ctx context.Context, fn func(context.Context) error) error {
			return fn(context.WithValue(ctx, inTx{}, true))
		})
}

// expectSession lets GetSession find the owner's session id, and nothing else.
func (e *env) expectSession(owner ports.Principal, id string) {
	e.sessions.EXPECT().GetSession(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, o ports.Owner, got string) (ports.ChatSession, error) {
			if got != id || o != owner.Owner() {
				return ports.ChatSession{}, ports.NotFound("chat session", got)
			}
			return ports.ChatSession{ID: id, OrgID: owner.OrgID, UserID: owner.UserID, Title: voice.SessionTitle}, nil
		})
}

// expectAppend expects one AppendMessages inside a transaction and returns
// what it stored.
func (e *env) expectAppend() *[]ports.ChatMessage {
	var got []ports.ChatMessage
	e.messages.EXPECT().AppendMessages(gomock.Any(), gomock.Any()).Times(1).DoAndReturn(
		func(ctx context.Context, msgs ...ports.ChatMessage) error {
			if !withinTx(ctx) {
				e.t.Error("AppendMessages outside a transaction")
			}
			got = append(got, msgs...)
			return nil
		})
	return &got
}

// expectTouch expects the session to be touched once, at the clock's time,
// inside a transaction.
func (e *env) expectTouch(id string) {
	e.sessions.EXPECT().TouchSession(gomock.Any(), id, e.clock.Now()).Times(1).DoAndReturn(
		func(ctx context.Context, _ string, _ time.Time) error {
			if !withinTx(ctx) {
				e.t.Error("TouchSession outside a transaction")
			}
			return nil
		})
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
