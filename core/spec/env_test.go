package spec_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/adapters/memstore"
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

var principals = []ports.Principal{alice, bob, admin, other}

func as(p ports.Principal) context.Context { return ports.WithPrincipal(context.Background(), p) }

type txKey struct{}

func inTx(ctx context.Context) bool { return ctx.Value(txKey{}) != nil }

// marked is the store's Transactor marking the contexts of its
// transactions, so the fakes can tell a call made inside one.
type marked struct{ ports.Transactor }

func (m marked) WithinTx(ctx context.Context, fn func(context.Context) error) error {
	return m.Transactor.WithinTx(ctx, func(ctx context.Context) error { return fn(context.WithValue(ctx, txKey{}, true)) })
}

// faultySpecs is the store's SpecStore with faults to inject; it counts the
// generations completed and failed.
type faultySpecs struct {
	ports.SpecStore
	mu sync.Mutex
	// startErr fails the next StartGeneration; inputsErr every
	// ListSpecInputs.
	startErr, inputsErr error
	startInTx           bool
	completes, fails    int
}

func (f *faultySpecs) StartGeneration(ctx context.Context, o ports.Owner, id string, st ports.Stage, genID string, at time.Time) (ports.SpecSession, error) {
	f.mu.Lock()
	f.startInTx = inTx(ctx)
	err := f.startErr
	f.startErr = nil
	f.mu.Unlock()
	if err != nil {
		return ports.SpecSession{}, err
	}
	return f.SpecStore.StartGeneration(ctx, o, id, st, genID, at)
}

func (f *faultySpecs) ListSpecInputs(ctx context.Context, sessionID string) ([]ports.SpecInput, error) {
	f.mu.Lock()
	err := f.inputsErr
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return f.SpecStore.ListSpecInputs(ctx, sessionID)
}

func (f *faultySpecs) CompleteGeneration(ctx context.Context, a ports.SpecArtifact, at time.Time) error {
	err := f.SpecStore.CompleteGeneration(ctx, a, at)
	if err == nil {
		f.mu.Lock()
		f.completes++
		f.mu.Unlock()
	}
	return err
}

func (f *faultySpecs) FailGeneration(ctx context.Context, sessionID, genID string, se ports.SpecError, at time.Time) error {
	err := f.SpecStore.FailGeneration(ctx, sessionID, genID, se, at)
	if err == nil {
		f.mu.Lock()
		f.fails++
		f.mu.Unlock()
	}
	return err
}

func (f *faultySpecs) failInputs(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.inputsErr = err
}

// countedDigests is the store's SpecDigestStore counting the digests put.
type countedDigests struct {
	ports.SpecDigestStore
	mu   sync.Mutex
	puts int
}

func (d *countedDigests) PutSpecDigest(ctx context.Context, x ports.SpecDigest) error {
	d.mu.Lock()
	d.puts++
	d.mu.Unlock()
	return d.SpecDigestStore.PutSpecDigest(ctx, x)
}

func (d *countedDigests) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.puts
}

type enqueued struct {
	args ports.JobArgs
	opts ports.EnqueueOptions
	inTx bool
}

type env struct {
	t       *testing.T
	svc     *spec.Service
	llm     *mocks.MockLLM
	clock   *fixture.Clock
	ids     *fixture.IDs
	store   *memstore.Store
	specs   *faultySpecs
	digests *countedDigests
	mu      sync.Mutex
	reqs    []ports.ChatRequest
	queued  []enqueued
	// enqueueErr, when set, fails the next Enqueue.
	enqueueErr error
	cfg        spec.Config
	deps       spec.Deps
}

// newEnv wires a Service to a memstore holding the principals' orgs and
// users, a scripted model and a queue recording its jobs.
func newEnv(t *testing.T, cfg spec.Config) *env {
	t.Helper()
	ctrl := gomock.NewController(t)
	store := memstore.New()
	e := &env{t: t, llm: mocks.NewMockLLM(ctrl), clock: fixture.NewClock(), ids: &fixture.IDs{}, store: store,
		specs: &faultySpecs{SpecStore: store}, digests: &countedDigests{SpecDigestStore: store}}
	ctx := t.Context()
	for _, org := range []string{"org-1", "org-2"} {
		if err := store.CreateOrg(ctx, ports.Org{ID: org, Name: org}); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range principals {
		if err := store.CreateUser(ctx, ports.User{ID: p.UserID, OrgID: p.OrgID, Email: p.UserID + "@example.com", Role: p.Role}); err != nil {
			t.Fatal(err)
		}
	}
	jobs := mocks.NewMockJobQueue(ctrl)
	jobs.EXPECT().Enqueue(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(ctx context.Context, args ports.JobArgs, opts ports.EnqueueOptions) error {
			e.mu.Lock()
			defer e.mu.Unlock()
			if err := e.enqueueErr; err != nil {
				e.enqueueErr = nil
				return err
			}
			e.queued = append(e.queued, enqueued{args: args, opts: opts, inTx: inTx(ctx)})
			return nil
		})
	e.cfg, e.deps = cfg, spec.Deps{Specs: e.specs, Standards: store, Tx: marked{store}, Jobs: jobs, LLM: e.llm, Digests: e.digests, Clock: e.clock, IDs: e.ids}
	e.svc = spec.New(cfg, e.deps)
	return e
}

// rewire rebuilds the Service with its dependencies changed by change.
func (e *env) rewire(change func(d *spec.Deps)) {
	change(&e.deps)
	e.svc = spec.New(e.cfg, e.deps)
}

// session returns the stored session, whoever owns it; the zero session
// when there is none.
func (e *env) session(id string) ports.SpecSession {
	for _, p := range principals {
		if s, err := e.store.GetSpecSession(e.t.Context(), p.Owner(), id); err == nil {
			return s
		}
	}
	return ports.SpecSession{}
}

// sessions returns p's stored sessions.
func (e *env) sessions(p ports.Principal) []ports.SpecSession {
	e.t.Helper()
	out, _, err := e.store.ListSpecSessions(e.t.Context(), p.Owner(), ports.Page{Limit: 100})
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// inputs returns the stored inputs of a session.
func (e *env) inputs(sessionID string) []ports.SpecInput {
	e.t.Helper()
	out, err := e.store.ListSpecInputs(e.t.Context(), sessionID)
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// artifacts returns the stored artifacts of a session.
func (e *env) artifacts(sessionID string) []ports.SpecArtifact {
	e.t.Helper()
	out, err := e.store.ListArtifacts(e.t.Context(), sessionID)
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// complete stores an artifact of the generation running, as another run of
// the job would.
func (e *env) complete(a ports.SpecArtifact) error {
	return e.store.CompleteGeneration(e.t.Context(), a, e.clock.Now())
}

func (e *env) jobs() []enqueued {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.queued)
}

func (e *env) failEnqueue(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.enqueueErr = err
}

// counts returns the generations the service completed and failed.
func (e *env) counts() (completes, fails int) {
	e.specs.mu.Lock()
	defer e.specs.mu.Unlock()
	return e.specs.completes, e.specs.fails
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
				e.mu.Lock()
				e.reqs = append(e.reqs, req)
				e.mu.Unlock()
				return r(ctx, req)
			})
	}
	if len(calls) > 1 {
		gomock.InOrder(calls...)
	}
}

// requests returns the model requests made since the last call.
func (e *env) requests() []ports.ChatRequest {
	e.mu.Lock()
	defer e.mu.Unlock()
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
	owner := e.session(sessionID)
	for _, st := range stages {
		genID := "seed-" + string(st) + e.ids.NewID()
		if _, err := e.store.StartGeneration(e.t.Context(), ports.Owner{OrgID: owner.OrgID, UserID: owner.UserID}, sessionID, st, genID, e.clock.Now()); err != nil {
			e.t.Fatal(err)
		}
		a := ports.SpecArtifact{ID: e.ids.NewID(), SessionID: sessionID, Stage: st, Format: "markdown", Content: "# " + string(st),
			Data: json.RawMessage(compact(e.t, sample(e.t, st))), Checks: []string{}, GenerationID: genID}
		if err := e.complete(a); err != nil {
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
