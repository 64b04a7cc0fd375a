package spec_test

import (
	"context"
	"maps"
	"regexp"
	"sync"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/ports"
)

// stageHeard is one SpecStageGenerated call.
type stageHeard struct {
	stage    ports.Stage
	repairs  int
	findings map[string]int
}

// specObserver records what the spec engine reports.
type specObserver struct {
	ports.NopObserver
	mu    sync.Mutex
	heard []stageHeard
}

func (o *specObserver) SpecStageGenerated(st ports.Stage, repairs int, findings map[string]int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.heard = append(o.heard, stageHeard{st, repairs, maps.Clone(findings)})
}

func (o *specObserver) take() []stageHeard {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := o.heard
	o.heard = nil
	return out
}

func ptr[T any](v T) *T { return &v }

// lastArtifact is the session's newest artifact of stage st.
func (e *env) lastArtifact(sessionID string, st ports.Stage) ports.SpecArtifact {
	e.t.Helper()
	var out ports.SpecArtifact
	for _, a := range e.artifacts(sessionID) {
		if a.Stage == st && a.Version >= out.Version {
			out = a
		}
	}
	if out.ID == "" {
		e.t.Fatalf("no %s artifact", st)
	}
	return out
}

// TestGenerationStatistics: each artifact records how it was made — its
// calls, first-try validity, invalid answers, repair turns, tokens, time,
// the findings left on it by kind, and the sampling settings sent — and
// the Observer hears it once.
func TestGenerationStatistics(t *testing.T) {
	t.Parallel()
	gappy := func(t *testing.T) string {
		return edit(t, ports.StageEpics, func(d map[string]any) {
			list := d["epics"].([]any)
			ep1, ep2 := list[0].(map[string]any), list[1].(map[string]any)
			ep1["requirement_ids"], ep1["depends_on"] = []any{"REQ-1", "REQ-9"}, []any{"EP-2"}
			ep2["requirement_ids"] = []any{"REQ-2"}
		})
	}
	storiesGap := func(t *testing.T) string {
		return edit(t, ports.StageStories, func(d map[string]any) {
			d["stories"] = d["stories"].([]any)[:1] // EP-2 loses its stories
		})
	}
	tests := []struct {
		name    string
		stage   ports.Stage
		seed    *int64
		replies func(t *testing.T) []string
		want    ports.SpecGeneration
	}{
		{"valid at the first try", ports.StageEpics, nil,
			func(t *testing.T) []string { return []string{sample(t, ports.StageEpics)} },
			ports.SpecGeneration{Calls: 1, Batches: 1, FirstTryValid: 1, PromptTokens: 100, CompletionTokens: 50, DurationMS: 1500,
				FindingsByKind: map[string]int{}}},
		{"an invalid answer, then a repair turn", ports.StageStories, ptr(int64(42)),
			func(t *testing.T) []string {
				return []string{"not json", storiesGap(t), sample(t, ports.StageStories)}
			},
			ports.SpecGeneration{Calls: 3, Batches: 1, FirstTryValid: 0, InvalidAnswers: 1, RepairTurns: 1,
				PromptTokens: 300, CompletionTokens: 150, DurationMS: 4500, FindingsByKind: map[string]int{},
				Temperature: ptr(0.0), Seed: ptr(int64(42))}},
		{"findings left after the repair turn", ports.StageEpics, nil,
			func(t *testing.T) []string { return []string{gappy(t), gappy(t)} },
			ports.SpecGeneration{Calls: 2, Batches: 1, FirstTryValid: 1, RepairTurns: 1, PromptTokens: 200, CompletionTokens: 100,
				DurationMS: 3000, FindingsByKind: map[string]int{"unknown_id": 1, "uncovered": 1, "dependency": 1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// An explicit temperature of 0 is sent as 0; a stage without
			// one sends none.
			e := newEnv(t, spec.Config{Temperature: map[ports.Stage]float64{ports.StageStories: 0, ports.StageScope: 0.9}, Seed: tc.seed})
			obs := &specObserver{}
			e.rewire(func(d *spec.Deps) { d.Observer = obs })
			sid := e.newSession(alice)
			before := ports.Stages[:slicesIndex(tc.stage)]
			e.seed(sid, before...)
			job := e.generate(alice, sid, tc.stage)
			var replies []reply
			for _, content := range tc.replies(t) {
				replies = append(replies, func(ctx context.Context, req ports.ChatRequest) (ports.ChatResult, error) {
					e.clock.Advance(1500 * time.Millisecond)
					return answer(content)(ctx, req)
				})
			}
			e.script(replies...)
			if err := e.svc.RunGeneration(t.Context(), job, false); err != nil {
				t.Fatal(err)
			}
			for i, req := range e.requests() {
				if !sameFloat(req.Temperature, tc.want.Temperature) || !sameInt(req.Seed, tc.want.Seed) {
					t.Errorf("request %d: temperature %v seed %v, want %v %v", i, deref(req.Temperature), deref(req.Seed), deref(tc.want.Temperature), deref(tc.want.Seed))
				}
			}
			a := e.lastArtifact(sid, tc.stage)
			got := a.Generation
			if !sameFloat(got.Temperature, tc.want.Temperature) || !sameInt(got.Seed, tc.want.Seed) {
				t.Errorf("recorded temperature %v seed %v, want %v %v", deref(got.Temperature), deref(got.Seed), deref(tc.want.Temperature), deref(tc.want.Seed))
			}
			got.Temperature, got.Seed = nil, nil
			want := tc.want
			want.Temperature, want.Seed = nil, nil
			if !sameGeneration(got, want) {
				t.Errorf("generation\n got %+v\nwant %+v", got, want)
			}
			if a.PromptVersion != spec.PromptVersion(tc.stage) {
				t.Errorf("prompt version %q, want %q", a.PromptVersion, spec.PromptVersion(tc.stage))
			}
			heard := obs.take()
			if len(heard) != 1 || heard[0].stage != tc.stage || heard[0].repairs != tc.want.RepairTurns || !maps.Equal(heard[0].findings, tc.want.FindingsByKind) {
				t.Errorf("the observer heard %+v", heard)
			}
		})
	}
}

// TestGenerationStatisticsPerBatch: in batch mode each epic's call is an
// ask of its own, counted with its retry; every call gets the stage's
// temperature and seed.
func TestGenerationStatisticsPerBatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, spec.Config{BatchConcurrency: 2, Temperature: map[ports.Stage]float64{ports.StageStories: 0.4}, Seed: ptr(int64(-3))})
	sid := e.newSession(alice)
	e.seed(sid, ports.StageScope, ports.StagePRD, ports.StageEpics)
	job := e.generate(alice, sid, "")
	var (
		mu      sync.Mutex
		invalid bool // the first ask's answer was made invalid
		reqs    []ports.ChatRequest
	)
	e.llm.EXPECT().Chat(gomock.Any(), gomock.Any(), gomock.Any()).Times(3).DoAndReturn(
		func(ctx context.Context, req ports.ChatRequest, _ func(string) error) (ports.ChatResult, error) {
			mu.Lock()
			defer mu.Unlock()
			reqs = append(reqs, req)
			// One batch's first answer is invalid; its retry and the other
			// batch are answered with the sample, of which each keeps its
			// epic's stories.
			if len(req.Messages) == 2 && !invalid {
				invalid = true
				return answer(`{"stories":"none"}`)(ctx, req)
			}
			return answer(sample(t, ports.StageStories))(ctx, req)
		})
	if err := e.svc.RunGeneration(t.Context(), job, false); err != nil {
		t.Fatal(err)
	}
	if s := e.session(sid); s.Status != ports.SpecReady {
		t.Fatalf("session %s %+v", s.Status, s.Error)
	}
	for i, req := range reqs {
		if !sameFloat(req.Temperature, ptr(0.4)) || !sameInt(req.Seed, ptr(int64(-3))) {
			t.Errorf("request %d: temperature %v seed %v", i, deref(req.Temperature), deref(req.Seed))
		}
	}
	got := e.lastArtifact(sid, ports.StageStories).Generation
	want := ports.SpecGeneration{Calls: 3, Batches: 2, FirstTryValid: 1, InvalidAnswers: 1, PromptTokens: 300, CompletionTokens: 150,
		FindingsByKind: map[string]int{}, Temperature: ptr(0.4), Seed: ptr(int64(-3))}
	if !sameGeneration(got, want) {
		t.Errorf("generation\n got %+v\nwant %+v", got, want)
	}
}

func TestPromptVersion(t *testing.T) {
	t.Parallel()
	hex12 := regexp.MustCompile(`^[0-9a-f]{12}$`)
	seen := map[string]ports.Stage{}
	for _, st := range ports.Stages {
		v := spec.PromptVersion(st)
		if !hex12.MatchString(v) {
			t.Errorf("PromptVersion(%s) = %q, want 12 hex digits", st, v)
		}
		if other, ok := seen[v]; ok {
			t.Errorf("%s and %s share the prompt version %s", st, other, v)
		}
		seen[v] = st
		if again := spec.PromptVersion(st); again != v {
			t.Errorf("PromptVersion(%s) is %s, then %s", st, v, again)
		}
	}
	if v := spec.PromptVersion("design"); v != "" {
		t.Errorf("PromptVersion of an unknown stage = %q", v)
	}
}

func slicesIndex(st ports.Stage) int {
	for i, s := range ports.Stages {
		if s == st {
			return i
		}
	}
	return -1
}

func sameFloat(a, b *float64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }
func sameInt(a, b *int64) bool     { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func deref[T any](p *T) any {
	if p == nil {
		return "none"
	}
	return *p
}

// sameGeneration compares statistics: the pointers by value, a nil
// FindingsByKind like an empty one (stores read an empty one back as nil).
func sameGeneration(a, b ports.SpecGeneration) bool {
	counts := func(g ports.SpecGeneration) [8]int64 {
		return [8]int64{int64(g.Calls), int64(g.Batches), int64(g.FirstTryValid), int64(g.InvalidAnswers), int64(g.RepairTurns),
			int64(g.PromptTokens), int64(g.CompletionTokens), g.DurationMS}
	}
	return counts(a) == counts(b) && maps.Equal(a.FindingsByKind, b.FindingsByKind) && sameFloat(a.Temperature, b.Temperature) && sameInt(a.Seed, b.Seed)
}
