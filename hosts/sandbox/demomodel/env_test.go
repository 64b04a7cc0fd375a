package demomodel_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/openai"
	"github.com/devpilot/devpilot/hosts/sandbox/demomodel"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
	"github.com/devpilot/devpilot/ports"
)

// today is the date the model reads in the tests.
var today = time.Date(2025, 3, 15, 10, 0, 0, 0, time.UTC)

func newModel() *demomodel.Model {
	return demomodel.New(demomodel.WithClock(func() time.Time { return today }))
}

// llm is the real OpenAI adapter talking to a NewHandler fake served over
// HTTP, answered by the demo model: how `devpilot run` uses it.
func llm(t *testing.T) *openai.Client {
	t.Helper()
	c, _ := serve(t)
	return c
}

// serve is llm with the fake, whose Requests are the last ones the model
// answered.
func serve(t *testing.T) (*openai.Client, *fakeopenai.Server) {
	t.Helper()
	fake := fakeopenai.NewHandler()
	fake.SetResponder(newModel().Respond)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	c, err := openai.New(openai.Config{APIKey: "sk-demo", BaseURL: srv.URL + "/v1", Model: "devpilot-demo", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return c, fake
}

// memSpecs is an in-memory SpecStore and StandardStore, enough for the
// happy path of core/spec.
type memSpecs struct {
	mu        sync.Mutex
	sessions  map[string]ports.SpecSession
	inputs    []ports.SpecInput
	artifacts []ports.SpecArtifact
}

func newMemSpecs() *memSpecs { return &memSpecs{sessions: map[string]ports.SpecSession{}} }

func (m *memSpecs) CreateSpecSession(_ context.Context, s ports.SpecSession, inputs []ports.SpecInput) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sessions[s.ID] = s
	m.inputs = append(m.inputs, inputs...)
	return nil
}

func (m *memSpecs) GetSpecSession(_ context.Context, o ports.Owner, id string) (ports.SpecSession, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok || s.OrgID != o.OrgID || s.UserID != o.UserID {
		return ports.SpecSession{}, ports.NotFound("specification session", id)
	}
	return s, nil
}

func (m *memSpecs) SetSpecRepository(_ context.Context, o ports.Owner, id, repoID string, at time.Time) (ports.SpecSession, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok || s.OrgID != o.OrgID || s.UserID != o.UserID {
		return ports.SpecSession{}, ports.NotFound("specification session", id)
	}
	s.RepoID, s.UpdatedAt = repoID, at
	m.sessions[id] = s
	return s, nil
}

func (m *memSpecs) RenameSpecSession(context.Context, ports.Owner, string, string, time.Time) (ports.SpecSession, error) {
	return ports.SpecSession{}, ports.Errorf(ports.KindInternal, "not used by these tests")
}

func (m *memSpecs) DeleteSpecSession(context.Context, ports.Owner, string) (ports.SpecSession, error) {
	return ports.SpecSession{}, ports.Errorf(ports.KindInternal, "not used by these tests")
}

func (m *memSpecs) ListSpecSessions(context.Context, ports.Owner, ports.Page) ([]ports.SpecSession, string, error) {
	return nil, "", nil
}

func (m *memSpecs) AddSpecInput(_ context.Context, _ ports.Owner, in ports.SpecInput, _ ports.SpecInputLimits) (ports.SpecInputTotals, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inputs = append(m.inputs, in)
	return ports.SpecInputTotals{}, nil
}

func (m *memSpecs) ListSpecInputs(_ context.Context, id string) ([]ports.SpecInput, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []ports.SpecInput
	for _, in := range m.inputs {
		if in.SessionID == id {
			out = append(out, in)
		}
	}
	return out, nil
}

func (m *memSpecs) StartGeneration(_ context.Context, _ ports.Owner, id string, st ports.Stage, gen string, at time.Time) (ports.SpecSession, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[id]
	if s.Status == ports.SpecGenerating {
		return s, ports.ErrConflict
	}
	s.Status, s.Generating, s.GenerationID, s.Error, s.UpdatedAt = ports.SpecGenerating, st, gen, nil, at
	m.sessions[id] = s
	return s, nil
}

func (m *memSpecs) CompleteGeneration(_ context.Context, a ports.SpecArtifact, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[a.SessionID]
	if s.Status != ports.SpecGenerating || s.GenerationID != a.GenerationID {
		return ports.ErrConflict
	}
	for _, prev := range m.artifacts {
		if prev.SessionID == a.SessionID && prev.Stage == a.Stage {
			a.Version = max(a.Version, prev.Version)
		}
	}
	a.Version++
	later := slices.Index(ports.Stages, a.Stage)
	for i, prev := range m.artifacts {
		if prev.SessionID == a.SessionID && slices.Index(ports.Stages, prev.Stage) > later {
			m.artifacts[i].Stale = true
		}
	}
	m.artifacts = append(m.artifacts, a)
	s.Status, s.CurrentStage, s.Generating, s.GenerationID, s.UpdatedAt = ports.SpecReady, a.Stage, "", "", at
	m.sessions[a.SessionID] = s
	return nil
}

func (m *memSpecs) SaveEditedArtifact(context.Context, ports.Owner, ports.SpecArtifact, int, time.Time) (ports.SpecArtifact, error) {
	return ports.SpecArtifact{}, ports.Errorf(ports.KindInternal, "not used by these tests")
}

func (m *memSpecs) FailGeneration(_ context.Context, id, _ string, e ports.SpecError, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[id]
	s.Status, s.Error, s.Generating, s.GenerationID, s.UpdatedAt = ports.SpecFailed, &e, "", "", at
	m.sessions[id] = s
	return nil
}

func (m *memSpecs) ListArtifacts(_ context.Context, id string) ([]ports.SpecArtifact, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []ports.SpecArtifact
	for _, a := range m.artifacts {
		if a.SessionID == id {
			out = append(out, a)
		}
	}
	slices.SortStableFunc(out, func(a, b ports.SpecArtifact) int {
		if d := slices.Index(ports.Stages, a.Stage) - slices.Index(ports.Stages, b.Stage); d != 0 {
			return d
		}
		return a.Version - b.Version
	})
	return out, nil
}

func (m *memSpecs) CreateStandard(context.Context, ports.Standard) error { return nil }

func (m *memSpecs) GetStandard(_ context.Context, _, id string) (ports.Standard, error) {
	return ports.Standard{}, ports.NotFound("standard", id)
}

func (m *memSpecs) ListStandards(context.Context, string) ([]ports.Standard, error) { return nil, nil }

func (m *memSpecs) UpdateStandard(context.Context, ports.Standard) error { return nil }

func (m *memSpecs) DeleteStandard(context.Context, string, string) error { return nil }

// noTx runs units of work as they come.
type noTx struct{}

func (noTx) WithinTx(ctx context.Context, fn func(context.Context) error) error { return fn(ctx) }

// jobList keeps what was enqueued.
type jobList struct {
	mu   sync.Mutex
	jobs []ports.JobArgs
}

func (j *jobList) Enqueue(_ context.Context, args ports.JobArgs, _ ports.EnqueueOptions) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.jobs = append(j.jobs, args)
	return nil
}

func (j *jobList) EnqueueMany(_ context.Context, args []ports.JobArgs, _ ports.EnqueueOptions) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.jobs = append(j.jobs, args...)
	return nil
}

func (j *jobList) last() ports.JobArgs {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.jobs[len(j.jobs)-1]
}

func httpPost(url, body string) ([]byte, error) {
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}
