package spec_test

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
	"github.com/devpilot/devpilot/testkit/mocks"
)

var (
	alice = ports.Principal{UserID: "user-alice", OrgID: "org-1", Role: ports.RoleMember}
	bob   = ports.Principal{UserID: "user-bob", OrgID: "org-1", Role: ports.RoleMember}
	admin = ports.Principal{UserID: "user-admin", OrgID: "org-1", Role: ports.RoleAdmin}
	other = ports.Principal{UserID: "user-olga", OrgID: "org-2", Role: ports.RoleAdmin}
)

func as(p ports.Principal) context.Context { return ports.WithPrincipal(context.Background(), p) }

type txKey struct{}

func inTx(ctx context.Context) bool { return ctx.Value(txKey{}) != nil }

type enqueued struct {
	args ports.JobArgs
	opts ports.EnqueueOptions
	inTx bool
}

// mem is the state behind the store mocks: the tests read what was stored.
type mem struct {
	mu        sync.Mutex
	sessions  map[string]ports.SpecSession
	inputs    []ports.SpecInput
	artifacts []ports.SpecArtifact
	standards []ports.Standard
	jobs      []enqueued
	// completes and fails count the calls that changed something.
	completes, fails int
	// startErr and enqueueErr, when set, fail the next call.
	startErr, enqueueErr error
	startInTx            bool
	// inputsErr, when set, fails every ListSpecInputs.
	inputsErr error
}

func (m *mem) snapshot() *mem {
	m.mu.Lock()
	defer m.mu.Unlock()
	return &mem{sessions: maps.Clone(m.sessions), inputs: slices.Clone(m.inputs), artifacts: slices.Clone(m.artifacts),
		standards: slices.Clone(m.standards), jobs: slices.Clone(m.jobs)}
}

func (m *mem) restore(s *mem) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sessions, m.inputs, m.artifacts, m.standards, m.jobs = s.sessions, s.inputs, s.artifacts, s.standards, s.jobs
}

func owns(s ports.SpecSession, o ports.Owner) bool { return s.OrgID == o.OrgID && s.UserID == o.UserID }

func stageIndex(st ports.Stage) int { return slices.Index(ports.Stages, st) }

type env struct {
	t     *testing.T
	svc   *spec.Service
	llm   *mocks.MockLLM
	clock *fixture.Clock
	ids   *fixture.IDs
	m     *mem
	reqMu sync.Mutex
	reqs  []ports.ChatRequest
	// digests is the store of the digests of long inputs.
	digests *memDigests
}

// newEnv wires a Service to mocks backed by mem.
func newEnv(t *testing.T, cfg spec.Config) *env {
	t.Helper()
	ctrl := gomock.NewController(t)
	e := &env{t: t, llm: mocks.NewMockLLM(ctrl), clock: fixture.NewClock(), ids: &fixture.IDs{}, digests: &memDigests{},
		m: &mem{sessions: map[string]ports.SpecSession{}}}
	m := e.m
	specs := mocks.NewMockSpecStore(ctrl)
	standards := mocks.NewMockStandardStore(ctrl)
	tx := mocks.NewMockTransactor(ctrl)
	jobs := mocks.NewMockJobQueue(ctrl)

	// Transactions roll back on error, as the port promises.
	tx.EXPECT().WithinTx(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(ctx context.Context, fn func(context.Context) error) error {
			saved := m.snapshot()
			err := fn(context.WithValue(ctx, txKey{}, true))
			if err != nil {
				m.restore(saved)
			}
			return err
		})
	jobs.EXPECT().Enqueue(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(ctx context.Context, args ports.JobArgs, opts ports.EnqueueOptions) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			if err := m.enqueueErr; err != nil {
				m.enqueueErr = nil
				return err
			}
			m.jobs = append(m.jobs, enqueued{args: args, opts: opts, inTx: inTx(ctx)})
			return nil
		})

	specs.EXPECT().CreateSpecSession(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, s ports.SpecSession, inputs []ports.SpecInput) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.sessions[s.ID] = s
			m.inputs = append(m.inputs, inputs...)
			return nil
		})
	specs.EXPECT().GetSpecSession(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, o ports.Owner, id string) (ports.SpecSession, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			if s, ok := m.sessions[id]; ok && owns(s, o) {
				return s, nil
			}
			return ports.SpecSession{}, ports.NotFound("specification session", id)
		})
	specs.EXPECT().ListSpecSessions(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, o ports.Owner, page ports.Page) ([]ports.SpecSession, string, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			var out []ports.SpecSession
			for _, s := range m.sessions {
				if owns(s, o) {
					out = append(out, s)
				}
			}
			slices.SortFunc(out, func(a, b ports.SpecSession) int { return strings.Compare(b.ID, a.ID) })
			if len(out) > page.Limit {
				return out[:page.Limit], "next", nil
			}
			return out, "", nil
		})
	specs.EXPECT().AddSpecInput(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, o ports.Owner, in ports.SpecInput) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			if s, ok := m.sessions[in.SessionID]; !ok || !owns(s, o) {
				return ports.NotFound("specification session", in.SessionID)
			}
			m.inputs = append(m.inputs, in)
			return nil
		})
	specs.EXPECT().ListSpecInputs(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, sessionID string) ([]ports.SpecInput, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			if m.inputsErr != nil {
				return nil, m.inputsErr
			}
			var out []ports.SpecInput
			for _, in := range m.inputs {
				if in.SessionID == sessionID {
					out = append(out, in)
				}
			}
			return out, nil
		})
	specs.EXPECT().StartGeneration(gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(ctx context.Context, o ports.Owner, id string, st ports.Stage, genID string, at time.Time) (ports.SpecSession, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.startInTx = inTx(ctx)
			if err := m.startErr; err != nil {
				m.startErr = nil
				return ports.SpecSession{}, err
			}
			s, ok := m.sessions[id]
			if !ok || !owns(s, o) {
				return ports.SpecSession{}, ports.NotFound("specification session", id)
			}
			if s.Status == ports.SpecGenerating {
				return ports.SpecSession{}, ports.Errorf(ports.KindConflict, "generating")
			}
			s.Status, s.Generating, s.GenerationID, s.Error, s.UpdatedAt = ports.SpecGenerating, st, genID, nil, at
			m.sessions[id] = s
			return s, nil
		})
	specs.EXPECT().CompleteGeneration(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, a ports.SpecArtifact, at time.Time) error { return m.complete(a, at) })
	specs.EXPECT().FailGeneration(gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, sessionID, genID string, se ports.SpecError, at time.Time) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			s, ok := m.sessions[sessionID]
			if !ok {
				return ports.NotFound("specification session", sessionID)
			}
			if s.Status != ports.SpecGenerating || s.GenerationID != genID {
				return ports.Errorf(ports.KindConflict, "not generating %s", genID)
			}
			s.Status, s.Generating, s.Error, s.UpdatedAt = ports.SpecFailed, "", &se, at
			m.sessions[sessionID] = s
			m.fails++
			return nil
		})
	specs.EXPECT().ListArtifacts(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, sessionID string) ([]ports.SpecArtifact, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			var out []ports.SpecArtifact
			for _, a := range m.artifacts {
				if a.SessionID == sessionID {
					out = append(out, a)
				}
			}
			slices.SortStableFunc(out, func(a, b ports.SpecArtifact) int {
				if d := stageIndex(a.Stage) - stageIndex(b.Stage); d != 0 {
					return d
				}
				return a.Version - b.Version
			})
			return out, nil
		})

	standards.EXPECT().CreateStandard(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, s ports.Standard) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			m.standards = append(m.standards, s)
			return nil
		})
	standards.EXPECT().GetStandard(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, orgID, id string) (ports.Standard, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			for _, s := range m.standards {
				if s.ID == id && s.OrgID == orgID {
					return s, nil
				}
			}
			return ports.Standard{}, ports.NotFound("standard", id)
		})
	standards.EXPECT().ListStandards(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, orgID string) ([]ports.Standard, error) {
			m.mu.Lock()
			defer m.mu.Unlock()
			var out []ports.Standard
			for _, s := range m.standards {
				if s.OrgID == orgID {
					out = append(out, s)
				}
			}
			return out, nil
		})
	standards.EXPECT().UpdateStandard(gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, s ports.Standard) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			for i, old := range m.standards {
				if old.ID == s.ID && old.OrgID == s.OrgID {
					m.standards[i].Title, m.standards[i].Body, m.standards[i].AppliesTo, m.standards[i].UpdatedAt = s.Title, s.Body, s.AppliesTo, s.UpdatedAt
					return nil
				}
			}
			return ports.NotFound("standard", s.ID)
		})
	standards.EXPECT().DeleteStandard(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, orgID, id string) error {
			m.mu.Lock()
			defer m.mu.Unlock()
			for i, s := range m.standards {
				if s.ID == id && s.OrgID == orgID {
					m.standards = slices.Delete(m.standards, i, i+1)
					return nil
				}
			}
			return ports.NotFound("standard", id)
		})

	e.svc = spec.New(cfg, spec.Deps{Specs: specs, Standards: standards, Tx: tx, Jobs: jobs, LLM: e.llm, Digests: e.digests, Clock: e.clock, IDs: e.ids})
	return e
}

// complete is CompleteGeneration as the port promises it.
func (m *mem) complete(a ports.SpecArtifact, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[a.SessionID]
	if !ok {
		return ports.NotFound("specification session", a.SessionID)
	}
	for _, old := range m.artifacts {
		if old.GenerationID == a.GenerationID {
			return ports.Errorf(ports.KindConflict, "generation %s is stored already", a.GenerationID)
		}
	}
	if s.Status != ports.SpecGenerating || s.GenerationID != a.GenerationID {
		return ports.Errorf(ports.KindConflict, "session is not generating %s", a.GenerationID)
	}
	a.Version = 1
	for i, old := range m.artifacts {
		if old.SessionID != a.SessionID {
			continue
		}
		if old.Stage == a.Stage && old.Version >= a.Version {
			a.Version = old.Version + 1
		}
		if stageIndex(old.Stage) > stageIndex(a.Stage) {
			m.artifacts[i].Stale = true
		}
	}
	m.artifacts = append(m.artifacts, a)
	s.Status, s.CurrentStage, s.Generating, s.UpdatedAt = ports.SpecReady, a.Stage, "", at
	m.sessions[a.SessionID] = s
	m.completes++
	return nil
}

func (e *env) session(id string) ports.SpecSession {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	return e.m.sessions[id]
}

func (e *env) artifacts() []ports.SpecArtifact {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	return slices.Clone(e.m.artifacts)
}

func (e *env) jobs() []enqueued {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	return slices.Clone(e.m.jobs)
}

func (e *env) counts() (completes, fails int) {
	e.m.mu.Lock()
	defer e.m.mu.Unlock()
	return e.m.completes, e.m.fails
}

// reply is one scripted model call.
type reply func(ctx context.Context, req ports.ChatRequest) (ports.ChatResult, error)

// script expects exactly these model calls, in order, and records the
// requests.
func (e *env) script(replies ...reply) {
	calls := make([]any, len(replies))
	for i, r := range replies {
		calls[i] = e.llm.EXPECT().Chat(gomock.Any(), gomock.Any(), gomock.Any()).Times(1).DoAndReturn(
			func(ctx context.Context, req ports.ChatRequest, _ func(string) error) (ports.ChatResult, error) {
				e.reqMu.Lock()
				e.reqs = append(e.reqs, req)
				e.reqMu.Unlock()
				return r(ctx, req)
			})
	}
	if len(calls) > 1 {
		gomock.InOrder(calls...)
	}
}

// requests returns the model requests made since the last call.
func (e *env) requests() []ports.ChatRequest {
	e.reqMu.Lock()
	defer e.reqMu.Unlock()
	out := e.reqs
	e.reqs = nil
	return out
}

func answer(content string) reply {
	return func(context.Context, ports.ChatRequest) (ports.ChatResult, error) {
		return ports.ChatResult{Content: content, FinishReason: ports.FinishStop, Model: "model-x", Usage: ports.Usage{PromptTokens: 100, CompletionTokens: 50}}, nil
	}
}

func fail(err error) reply {
	return func(context.Context, ports.ChatRequest) (ports.ChatResult, error) { return ports.ChatResult{}, err }
}

// sample returns the valid output of a stage kept in testdata.
func sample(t *testing.T, st ports.Stage) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + string(st) + ".json")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// edit changes a stage's sample through a JSON tree.
func edit(t *testing.T, st ports.Stage, change func(doc map[string]any)) string {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(sample(t, st)), &doc); err != nil {
		t.Fatal(err)
	}
	change(doc)
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func compact(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// newSession creates a session of p's with one note.
func (e *env) newSession(p ports.Principal) string {
	e.t.Helper()
	v, err := e.svc.CreateSession(as(p), "Expense approvals",
		[]spec.NewInput{{Kind: ports.InputNote, Title: "Kick-off notes", Content: "Employees wait three weeks for reimbursements."}})
	if err != nil {
		e.t.Fatalf("CreateSession: %v", err)
	}
	return v.Session.ID
}

// seed stores the samples of the given stages as the session's artifacts,
// as if they had been generated, and leaves the session ready.
func (e *env) seed(sessionID string, stages ...ports.Stage) {
	e.t.Helper()
	for _, st := range stages {
		s := e.session(sessionID)
		s.Status, s.GenerationID = ports.SpecGenerating, "seed-"+string(st)+e.ids.NewID()
		e.m.mu.Lock()
		e.m.sessions[sessionID] = s
		e.m.mu.Unlock()
		a := ports.SpecArtifact{ID: e.ids.NewID(), SessionID: sessionID, Stage: st, Format: "markdown", Content: "# " + string(st),
			Data: json.RawMessage(compact(e.t, sample(e.t, st))), Checks: []string{}, GenerationID: s.GenerationID}
		if err := e.m.complete(a, e.clock.Now()); err != nil {
			e.t.Fatal(err)
		}
	}
}

// generate calls Generate and returns the job it enqueued.
func (e *env) generate(p ports.Principal, sessionID string, st ports.Stage) spec.GenerateStageArgs {
	e.t.Helper()
	before := len(e.jobs())
	if _, err := e.svc.Generate(as(p), sessionID, st); err != nil {
		e.t.Fatalf("Generate(%q): %v", st, err)
	}
	jobs := e.jobs()
	if len(jobs) != before+1 {
		e.t.Fatalf("Generate enqueued %d jobs, want 1", len(jobs)-before)
	}
	return jobs[len(jobs)-1].args.(spec.GenerateStageArgs)
}

func errCode(err error) string {
	if e, ok := ports.AsError(err); ok {
		return e.ErrorCode()
	}
	return ""
}

func text(msgs []ports.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.Content + "\n")
	}
	return b.String()
}
