package spec_test

import (
	"testing"

	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/ports"
)

// lastJob returns the newest job enqueued, and how many there are.
func (e *env) lastJob() (spec.GenerateStageArgs, int) {
	e.t.Helper()
	jobs := e.jobs()
	if len(jobs) == 0 {
		e.t.Fatal("no job enqueued")
	}
	return jobs[len(jobs)-1].args.(spec.GenerateStageArgs), len(jobs)
}

// Generating through a stage chains the stages: each one stored starts the
// next in the same transaction as it is stored, the session staying
// generating in between, until the last is ready.
func TestGenerateThroughChainsTheStages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, spec.Config{})
	sid := e.newSession(alice)
	s, err := e.svc.GenerateThrough(as(alice), sid, "", ports.StageEpics)
	if err != nil {
		t.Fatal(err)
	}
	if s.Generating != ports.StageScope {
		t.Fatalf("first stage %q, want scope", s.Generating)
	}
	for i, st := range []ports.Stage{ports.StageScope, ports.StagePRD, ports.StageEpics} {
		job, n := e.lastJob()
		if n != i+1 || job.Stage != st {
			t.Fatalf("job %d: %+v (%d jobs), want stage %s", i, job, n, st)
		}
		if wantThrough := map[bool]ports.Stage{true: ports.StageEpics, false: ""}[st != ports.StageEpics]; job.Through != wantThrough {
			t.Fatalf("job %s carries through %q, want %q", st, job.Through, wantThrough)
		}
		e.script(answer(sample(t, st)))
		if err := e.svc.RunGeneration(t.Context(), job, false); err != nil {
			t.Fatal(err)
		}
		got := e.session(sid)
		if st != ports.StageEpics {
			if got.Status != ports.SpecGenerating || got.Generating != nextOf(st) || got.CurrentStage != st {
				t.Fatalf("after %s: %+v", st, got)
			}
			if jobs := e.jobs(); !jobs[len(jobs)-1].inTx {
				t.Fatalf("the %s job was not enqueued in the completion's transaction", nextOf(st))
			}
		}
		// The job run again (its completion was lost) changes nothing.
		if err := e.svc.RunGeneration(t.Context(), job, false); err != nil {
			t.Fatal(err)
		}
	}
	got := e.session(sid)
	if got.Status != ports.SpecReady || got.CurrentStage != ports.StageEpics {
		t.Fatalf("at the end: %+v", got)
	}
	if _, n := e.lastJob(); n != 3 {
		t.Fatalf("%d jobs, want one per stage", n)
	}
	if arts := e.artifacts(sid); len(arts) != 3 {
		t.Fatalf("%d artifacts, want 3", len(arts))
	}
}

// The first stage that fails stops the chain with its reason; no later
// stage is started.
func TestGenerateThroughStopsAtTheFirstFailure(t *testing.T) {
	t.Parallel()
	e := newEnv(t, spec.Config{})
	sid := e.newSession(alice)
	if _, err := e.svc.GenerateThrough(as(alice), sid, "", ports.StagePRPs); err != nil {
		t.Fatal(err)
	}
	job, _ := e.lastJob()
	e.script(answer(sample(t, ports.StageScope)))
	if err := e.svc.RunGeneration(t.Context(), job, false); err != nil {
		t.Fatal(err)
	}
	job, _ = e.lastJob()
	e.script(answer("not json"), answer("still not json"))
	if err := e.svc.RunGeneration(t.Context(), job, false); err != nil {
		t.Fatal(err)
	}
	got := e.session(sid)
	if got.Status != ports.SpecFailed || got.Error == nil || got.Error.Stage != ports.StagePRD || got.CurrentStage != ports.StageScope {
		t.Fatalf("after a failed prd: %+v", got)
	}
	if _, n := e.lastJob(); n != 2 {
		t.Fatalf("%d jobs after the failure, want 2", n)
	}
}

func TestGenerateThroughErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t, spec.Config{})
	sid := e.newSession(alice)
	e.seed(sid, ports.StageScope, ports.StagePRD)
	for _, tc := range []struct {
		name           string
		stage, through ports.Stage
	}{
		{"unknown", "", "design"},
		{"before the next stage", "", ports.StageScope},
		{"before the stage named", ports.StagePRD, ports.StageScope},
	} {
		_, err := e.svc.GenerateThrough(as(alice), sid, tc.stage, tc.through)
		if fe, ok := ports.AsError(err); !ok || fe.Kind != ports.KindInvalid || len(fe.Fields) != 1 || fe.Fields[0].Field != "through" {
			t.Errorf("%s: %v, want invalid naming through", tc.name, err)
		}
	}
	if n := len(e.jobs()); n != 0 {
		t.Fatalf("%d jobs enqueued by refused calls", n)
	}
	// through the stage generated is that stage alone.
	if _, err := e.svc.GenerateThrough(as(alice), sid, "", ports.StageEpics); err != nil {
		t.Fatal(err)
	}
	if job, _ := e.lastJob(); job.Stage != ports.StageEpics || job.Through != "" {
		t.Fatalf("job %+v", job)
	}
}

func nextOf(st ports.Stage) ports.Stage {
	for i, s := range ports.Stages {
		if s == st && i+1 < len(ports.Stages) {
			return ports.Stages[i+1]
		}
	}
	return ""
}
