package spec_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/ports"
)

func TestRunGenerationInvalidTwice(t *testing.T) {
	t.Parallel()
	e := newEnv(t, spec.Config{})
	sid := e.newSession(alice)
	e.seed(sid, ports.StageScope)
	job := e.generate(alice, sid, "")
	e.script(answer("I cannot help with that."), answer(`{"title": "PRD", "extra": 1}`))
	if err := e.svc.RunGeneration(t.Context(), job, false); err != nil {
		t.Fatalf("RunGeneration = %v, want nil: the failure is recorded", err)
	}
	if completes, fails := e.counts(); completes != 0 || fails != 1 {
		t.Errorf("completes %d, fails %d", completes, fails)
	}
	s := e.session(sid)
	if s.Status != ports.SpecFailed || s.Error == nil || s.Error.Code != spec.CodeInvalidOutput || s.Error.Stage != ports.StagePRD {
		t.Fatalf("session %+v, error %+v", s, s.Error)
	}
	if msg := s.Error.Message; !strings.HasPrefix(msg, "the model's prd was invalid twice: at '/': missing properties") || !strings.Contains(msg, "more problem") {
		t.Errorf("message %q", msg)
	}
	if len(e.artifacts(sid)) != 1 {
		t.Error("an artifact was stored")
	}
	if s.CurrentStage != ports.StageScope {
		t.Errorf("current stage %q", s.CurrentStage)
	}
	// A failed session can be generated again.
	job = e.generate(alice, sid, "")
	if job.Stage != ports.StagePRD {
		t.Errorf("generating %s again, want prd", job.Stage)
	}
	if s := e.session(sid); s.Error != nil {
		t.Errorf("the error was kept: %+v", s.Error)
	}
}

func TestRunGenerationModelErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		err       error
		final     bool
		retried   bool   // RunGeneration returns the error
		code      string // recorded on the session when not retried
		message   string
		modelCall int
	}{
		{name: "rate limited", err: &ports.Error{Kind: ports.KindRateLimited, Message: "the model provider is rate limiting requests"}, retried: true},
		{name: "unavailable", err: &ports.Error{Kind: ports.KindUnavailable, Message: "down"}, retried: true},
		{name: "timeout", err: &ports.Error{Kind: ports.KindTimeout, Message: "slow"}, retried: true},
		{name: "truncated", err: &ports.Error{Kind: ports.KindUpstream, Code: ports.CodeTruncated, Message: "cut off"}, retried: true},
		{name: "cancelled", err: context.Canceled, retried: true},
		{name: "rate limited, final", err: &ports.Error{Kind: ports.KindRateLimited, Message: "the model provider is rate limiting requests"}, final: true,
			code: "rate_limited", message: "the model provider is rate limiting requests"},
		{name: "truncated, final", err: &ports.Error{Kind: ports.KindUpstream, Code: ports.CodeTruncated, Message: "cut off"}, final: true,
			code: "truncated", message: "cut off"},
		{name: "unknown error, final", err: errors.New("boom"), final: true, code: "internal", message: "internal error"},
		{name: "context too long", err: &ports.Error{Kind: ports.KindInvalid, Code: ports.CodeContextLength, Message: "the conversation is too long for the model"},
			code: "context_length", message: "the conversation is too long for the model"},
		{name: "bad credentials", err: &ports.Error{Kind: ports.KindUpstream, Message: "the model provider refused the credentials"},
			code: "upstream", message: "the model provider refused the credentials"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, spec.Config{})
			sid := e.newSession(alice)
			job := e.generate(alice, sid, "")
			e.script(fail(tt.err))
			err := e.svc.RunGeneration(t.Context(), job, tt.final)
			s := e.session(sid)
			if tt.retried {
				if !errors.Is(err, tt.err) {
					t.Fatalf("RunGeneration = %v, want %v", err, tt.err)
				}
				if _, fails := e.counts(); fails != 0 || s.Status != ports.SpecGenerating {
					t.Errorf("failed %d times; session %+v", fails, s)
				}
				return
			}
			if err != nil {
				t.Fatalf("RunGeneration = %v, want nil", err)
			}
			if s.Status != ports.SpecFailed || s.Error == nil || s.Error.Code != tt.code || s.Error.Message != tt.message || s.Error.Stage != ports.StageScope {
				t.Errorf("session %+v, error %+v", s, s.Error)
			}
		})
	}
}

func TestRunGenerationRetriedJob(t *testing.T) {
	t.Parallel()
	t.Run("a second run after success does nothing", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, spec.Config{})
		sid := e.newSession(alice)
		job := e.generate(alice, sid, "")
		e.script(answer(sample(t, ports.StageScope)))
		for range 2 {
			if err := e.svc.RunGeneration(t.Context(), job, false); err != nil {
				t.Fatal(err)
			}
		}
		if n := len(e.artifacts(sid)); n != 1 {
			t.Errorf("%d artifacts", n)
		}
	})
	t.Run("stored meanwhile: CompleteGeneration conflicts", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, spec.Config{})
		sid := e.newSession(alice)
		job := e.generate(alice, sid, "")
		// Another run of the same job stores its artifact while this one
		// waits for the model.
		e.script(func(context.Context, ports.ChatRequest) (ports.ChatResult, error) {
			if err := e.complete(ports.SpecArtifact{ID: "other", SessionID: sid, Stage: ports.StageScope, GenerationID: job.GenerationID}); err != nil {
				t.Error(err)
			}
			return ports.ChatResult{Content: sample(t, ports.StageScope), FinishReason: ports.FinishStop}, nil
		})
		if err := e.svc.RunGeneration(t.Context(), job, false); err != nil {
			t.Fatalf("RunGeneration = %v, want nil", err)
		}
		if arts := e.artifacts(sid); len(arts) != 1 || arts[0].ID != "other" {
			t.Errorf("artifacts %+v", arts)
		}
		if _, fails := e.counts(); fails != 0 {
			t.Error("the session was failed")
		}
	})
	t.Run("superseded before it runs", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, spec.Config{})
		sid := e.newSession(alice)
		job := e.generate(alice, sid, "")
		e.script(answer(sample(t, ports.StageScope)))
		if err := e.svc.RunGeneration(t.Context(), job, false); err != nil {
			t.Fatal(err)
		}
		// A stale job of an earlier generate call, and one for a session that is gone.
		stale := job
		stale.GenerationID = "00000000-0000-7000-8000-0000000000aa"
		gone := job
		gone.SessionID = "00000000-0000-7000-8000-0000000000bb"
		for _, j := range []spec.GenerateStageArgs{stale, gone} {
			if err := e.svc.RunGeneration(t.Context(), j, true); err != nil {
				t.Errorf("RunGeneration(%+v) = %v", j, err)
			}
		}
		if len(e.artifacts(sid)) != 1 {
			t.Error("a superseded job stored an artifact")
		}
	})
	t.Run("a failure after the session moved on is dropped", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, spec.Config{})
		sid := e.newSession(alice)
		job := e.generate(alice, sid, "")
		e.script(func(context.Context, ports.ChatRequest) (ports.ChatResult, error) {
			_ = e.complete(ports.SpecArtifact{ID: "other", SessionID: sid, Stage: ports.StageScope, GenerationID: job.GenerationID})
			return ports.ChatResult{}, &ports.Error{Kind: ports.KindInvalid, Code: ports.CodeInvalidRequest, Message: "rejected"}
		})
		if err := e.svc.RunGeneration(t.Context(), job, false); err != nil {
			t.Fatalf("RunGeneration = %v, want nil", err)
		}
		if s := e.session(sid); s.Status != ports.SpecReady {
			t.Errorf("session %+v", s)
		}
	})
	t.Run("a store error is retried, and recorded on the final attempt", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, spec.Config{})
		sid := e.newSession(alice)
		job := e.generate(alice, sid, "")
		e.specs.failInputs(errors.New("database is down"))
		if err := e.svc.RunGeneration(t.Context(), job, false); err == nil || !strings.Contains(err.Error(), "database is down") {
			t.Fatalf("RunGeneration = %v, want the store's error", err)
		}
		if s := e.session(sid); s.Status != ports.SpecGenerating {
			t.Errorf("session %+v", s)
		}
		if err := e.svc.RunGeneration(t.Context(), job, true); err != nil {
			t.Fatalf("final RunGeneration = %v", err)
		}
		if s := e.session(sid); s.Status != ports.SpecFailed || s.Error.Code != "internal" || s.Error.Message != "internal error" {
			t.Errorf("session %+v %+v", s, s.Error)
		}
	})
	t.Run("an unknown stage is recorded", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, spec.Config{})
		sid := e.newSession(alice)
		job := e.generate(alice, sid, "")
		job.Stage = "design"
		if err := e.svc.RunGeneration(t.Context(), job, false); err != nil {
			t.Fatalf("RunGeneration = %v", err)
		}
		if s := e.session(sid); s.Status != ports.SpecFailed || s.Error.Code != "internal" {
			t.Errorf("session %+v %+v", s, s.Error)
		}
	})
}

func TestTraceabilityChecksAreStored(t *testing.T) {
	t.Parallel()
	e := newEnv(t, spec.Config{})
	sid := e.newSession(alice)
	e.seed(sid, ports.StageScope, ports.StagePRD, ports.StageEpics)
	job := e.generate(alice, sid, "")
	stories := edit(t, ports.StageStories, func(d map[string]any) {
		list := d["stories"].([]any)
		s := list[2].(map[string]any)
		s["id"], s["epic_id"], s["requirement_ids"], s["depends_on"] = "ST-9.1", "EP-9", []any{"REQ-3", "REQ-7"}, []any{}
		d["stories"] = []any{list[0], s}
	})
	// The findings go back once in a repair turn; an answer that stays the
	// same is stored with them.
	e.script(answer(stories), answer(stories))
	if err := e.svc.RunGeneration(t.Context(), job, false); err != nil {
		t.Fatal(err)
	}
	arts := e.artifacts(sid)
	a := arts[len(arts)-1]
	want := []string{"ST-9.1 names unknown epic EP-9", "EP-2 is not covered by any story", "ST-9.1 names unknown requirement REQ-7"}
	if strings.Join(a.Checks, "|") != strings.Join(want, "|") {
		t.Errorf("checks %q, want %q", a.Checks, want)
	}
	if !strings.Contains(a.Content, "## Traceability checks\n\n- ST-9.1 names unknown epic EP-9\n") {
		t.Errorf("the Markdown does not show the checks:\n%s", a.Content)
	}
	v, _ := e.svc.GetSession(as(alice), sid)
	if got := v.Artifacts[len(v.Artifacts)-1].Checks; len(got) != 3 {
		t.Errorf("the session view shows checks %q", got)
	}
}
