package spec_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/ports"
)

func TestGenerateErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(e *env) (ports.Principal, string) // the caller and session id
		stage ports.Stage
		kind  ports.Kind
		code  string
		field string
	}{
		{name: "unknown stage", stage: "design", kind: ports.KindInvalid, code: "invalid", field: "stage",
			setup: func(e *env) (ports.Principal, string) { return alice, e.newSession(alice) }},
		{name: "malformed id", kind: ports.KindNotFound, code: "not_found",
			setup: func(e *env) (ports.Principal, string) { return alice, "not-a-uuid" }},
		{name: "absent", kind: ports.KindNotFound, code: "not_found",
			setup: func(e *env) (ports.Principal, string) { return alice, "00000000-0000-7000-8000-0000000000ff" }},
		{name: "another's session", kind: ports.KindNotFound, code: "not_found",
			setup: func(e *env) (ports.Principal, string) { return bob, e.newSession(alice) }},
		{name: "no inputs", kind: ports.KindInvalid, code: spec.CodeNoInputs,
			setup: func(e *env) (ports.Principal, string) {
				v, err := e.svc.CreateSession(as(alice), "empty", nil)
				if err != nil {
					t.Fatal(err)
				}
				return alice, v.Session.ID
			}},
		{name: "generating", kind: ports.KindConflict, code: spec.CodeGenerationRunning,
			setup: func(e *env) (ports.Principal, string) {
				sid := e.newSession(alice)
				e.generate(alice, sid, "")
				return alice, sid
			}},
		{name: "generating, naming a stage", stage: ports.StageScope, kind: ports.KindConflict, code: spec.CodeGenerationRunning,
			setup: func(e *env) (ports.Principal, string) {
				sid := e.newSession(alice)
				e.generate(alice, sid, "")
				return alice, sid
			}},
		{name: "pipeline complete", kind: ports.KindConflict, code: spec.CodePipelineComplete,
			setup: func(e *env) (ports.Principal, string) {
				sid := e.newSession(alice)
				e.seed(sid, ports.Stages...)
				return alice, sid
			}},
		{name: "predecessor missing", stage: ports.StageEpics, kind: ports.KindConflict, code: spec.CodeStageNotReady,
			setup: func(e *env) (ports.Principal, string) {
				sid := e.newSession(alice)
				e.seed(sid, ports.StageScope)
				return alice, sid
			}},
		{name: "nothing generated yet", stage: ports.StagePRD, kind: ports.KindConflict, code: spec.CodeStageNotReady,
			setup: func(e *env) (ports.Principal, string) { return alice, e.newSession(alice) }},
		{name: "predecessor stale", stage: ports.StageEpics, kind: ports.KindConflict, code: spec.CodeStageNotReady,
			setup: func(e *env) (ports.Principal, string) {
				sid := e.newSession(alice)
				e.seed(sid, ports.StageScope, ports.StagePRD, ports.StageScope)
				return alice, sid
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, spec.Config{})
			p, sid := tt.setup(e)
			jobs := len(e.jobs())
			before := e.session(sid)
			_, err := e.svc.Generate(as(p), sid, tt.stage)
			if ports.KindOf(err) != tt.kind || errCode(err) != tt.code {
				t.Fatalf("err = %v (%s/%s), want %s/%s", err, ports.KindOf(err), errCode(err), tt.kind, tt.code)
			}
			if tt.field != "" {
				if pe, _ := ports.AsError(err); len(pe.Fields) != 1 || pe.Fields[0].Field != tt.field {
					t.Errorf("fields %+v, want %s", pe.Fields, tt.field)
				}
			}
			if len(e.jobs()) != jobs {
				t.Error("a job was enqueued")
			}
			if after := e.session(sid); after.Status != before.Status || after.GenerationID != before.GenerationID {
				t.Errorf("session changed from %+v to %+v", before, after)
			}
		})
	}
}

func TestGenerateEnqueuesInTheSameTransaction(t *testing.T) {
	t.Parallel()
	t.Run("started", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, spec.Config{})
		sid := e.newSession(alice)
		s, err := e.svc.Generate(as(alice), sid, "")
		if err != nil {
			t.Fatal(err)
		}
		if s.Status != ports.SpecGenerating || s.Generating != ports.StageScope || s.GenerationID == "" {
			t.Errorf("session %+v", s)
		}
		jobs := e.jobs()
		if len(jobs) != 1 || !jobs[0].inTx || !e.specs.startInTx {
			t.Fatalf("jobs %+v, StartGeneration in a transaction: %v", jobs, e.specs.startInTx)
		}
		want := spec.GenerateStageArgs{SessionID: sid, OrgID: alice.OrgID, UserID: alice.UserID, Stage: ports.StageScope, GenerationID: s.GenerationID}
		if jobs[0].args != want || jobs[0].args.Kind() != "spec.generate_stage" || jobs[0].opts.MaxAttempts != spec.DefaultMaxAttempts {
			t.Errorf("job %+v %+v, want %+v", jobs[0].args, jobs[0].opts, want)
		}
		b, _ := json.Marshal(jobs[0].args)
		if !strings.Contains(string(b), `"generation_id":"`+s.GenerationID+`"`) || !strings.Contains(string(b), `"stage":"scope"`) {
			t.Errorf("job encodes as %s", b)
		}
	})
	t.Run("StartGeneration fails", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, spec.Config{})
		sid := e.newSession(alice)
		e.specs.startErr = ports.Errorf(ports.KindConflict, "a generation started meanwhile")
		_, err := e.svc.Generate(as(alice), sid, "")
		if errCode(err) != spec.CodeGenerationRunning {
			t.Fatalf("err = %v", err)
		}
		if len(e.jobs()) != 0 {
			t.Error("a job was enqueued")
		}
	})
	t.Run("Enqueue fails", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, spec.Config{})
		sid := e.newSession(alice)
		e.failEnqueue(errors.New("queue down"))
		if _, err := e.svc.Generate(as(alice), sid, ""); err == nil {
			t.Fatal("no error")
		}
		if s := e.session(sid); s.Status != ports.SpecDraft {
			t.Errorf("the state changed without a job: %+v", s)
		}
		if _, err := e.svc.Generate(as(alice), sid, ""); err != nil {
			t.Errorf("generate again: %v", err)
		}
	})
}

// TestPipeline generates every stage in turn from the samples, then
// regenerates the PRD.
func TestPipeline(t *testing.T) {
	t.Parallel()
	e := newEnv(t, spec.Config{Model: "cfg-model", MaxTokens: 9000})
	sid := e.newSession(alice)
	if _, err := e.svc.AddInput(as(alice), sid, spec.NewInput{Kind: ports.InputTranscript, Title: "Finance call", Content: "Finance re-keys every claim into the ledger."}); err != nil {
		t.Fatal(err)
	}
	stds := map[string][]ports.Stage{
		"PRD-STANDARD: number requirements from 1.":      {ports.StagePRD},
		"SCOPE-AND-PRP-STANDARD: name the on-call team.": {ports.StageScope, ports.StagePRPs},
		"STORY-STANDARD: stories fit in one sprint.":     {ports.StageStories},
	}
	for body, stages := range stds {
		if _, err := e.svc.CreateStandard(as(admin), spec.StandardInput{Title: "T", Body: body, AppliesTo: stages}); err != nil {
			t.Fatal(err)
		}
	}
	// What each stage's prompt must carry from the earlier stages' data.
	fromEarlier := map[ports.Stage][]string{
		ports.StagePRD:     {"one claim in twenty is keyed wrongly"},
		ports.StageEpics:   {"one claim in twenty is keyed wrongly", `"id":"REQ-3"`, "Export to the ledger"},
		ports.StageStories: {`"id":"REQ-2"`, `"id":"EP-2"`, "Approval and export"},
		ports.StagePRPs:    {`"id":"EP-1"`, `"id":"ST-2.2"`, "Export approved expenses as CSV"},
	}
	headings := map[ports.Stage][]string{
		ports.StageScope:   {"# Scope: Expense approvals", "## Problem", "## Users", "## Goals", "## Success metrics", "## In scope", "## Out of scope", "## Constraints", "## Risks", "## Open questions"},
		ports.StagePRD:     {"# PRD: Expense approvals", "## Functional requirements", "### REQ-1: Submit an expense", "### REQ-3: Export to the ledger", "### NFR-1: performance", "## User journeys", "## Success metrics", "(validates REQ-3, NFR-1)", "## Non-goals", "## Assumptions", "**Sources:**", "> Finance re-keys every claim into the ledger. (input 2)"},
		ports.StageEpics:   {"# Epics", "## EP-1: Expense submission", "## EP-2: Approval and export", "**Requirements:** REQ-2, REQ-3", "**Depends on:** EP-1"},
		ports.StageStories: {"# Stories", "## EP-1", "## EP-2", "### ST-1.1: Submit an expense with a receipt", "### ST-2.2:", "**Epic:** EP-2", "#### Acceptance criteria", "**Given** I am signed in"},
		ports.StagePRPs:    {"# PRPs", "## PRP-1.1:", "## PRP-2.1:", "## PRP-2.2:", "**Story:** ST-2.2", "### Goal", "### Why", "### All needed context", "### Acceptance criteria", "**Given** I am signed in", "### Implementation tasks", "#### T1: CREATE migrations/0007_expenses.sql", "**Depends on:** T1", "### Validation", "#### Syntax", "```sh\ngo vet ./...\n```", "#### Unit", "#### Integration", "### Success checklist", "- [ ] ", "### Anti-patterns"},
	}

	for i, st := range ports.Stages {
		if v, _ := e.svc.GetSession(as(alice), sid); v.NextStage != st {
			t.Fatalf("next stage %q, want %s", v.NextStage, st)
		}
		job := e.generate(alice, sid, "")
		if job.Stage != st {
			t.Fatalf("generating %s, want %s", job.Stage, st)
		}
		e.script(answer(sample(t, st)))
		if err := e.svc.RunGeneration(t.Context(), job, false); err != nil {
			t.Fatalf("%s: RunGeneration: %v", st, err)
		}
		reqs := e.requests()
		req := reqs[0]
		schema, err := os.ReadFile("schemas/" + string(st) + ".json")
		if err != nil {
			t.Fatal(err)
		}
		if req.ResponseFormat == nil || compact(t, string(req.ResponseFormat.Schema)) != compact(t, string(schema)) ||
			!req.ResponseFormat.Strict || req.ResponseFormat.Name != "spec_"+string(st) {
			t.Errorf("%s: response format %+v", st, req.ResponseFormat)
		}
		if req.Model != "cfg-model" || req.MaxTokens != 9000 || req.Messages[0].Role != ports.MessageSystem {
			t.Errorf("%s: request model %q, max tokens %d", st, req.Model, req.MaxTokens)
		}
		prompt := text(req.Messages)
		for _, want := range append([]string{"Employees wait three weeks", "Finance re-keys every claim", `title="Finance call"`}, fromEarlier[st]...) {
			if !strings.Contains(prompt, want) {
				t.Errorf("%s: the prompt lacks %q", st, want)
			}
		}
		for _, later := range ports.Stages[i:] {
			if strings.Contains(prompt, "<artifact stage=\""+string(later)+"\"") {
				t.Errorf("%s: the prompt carries the %s artifact", st, later)
			}
		}
		for body, stages := range stds {
			applies := false
			for _, s := range stages {
				applies = applies || s == st
			}
			if got := strings.Contains(req.Messages[0].Content, body); got != applies {
				t.Errorf("%s: standard %q in the prompt: %v, want %v", st, body, got, applies)
			}
		}

		s := e.session(sid)
		if s.Status != ports.SpecReady || s.CurrentStage != st {
			t.Errorf("%s: session %+v", st, s)
		}
		arts := e.artifacts(sid)
		a := arts[len(arts)-1]
		if a.Stage != st || a.Version != 1 || a.GenerationID != job.GenerationID || a.Format != "markdown" || a.Model != "model-x" {
			t.Errorf("%s: artifact %+v", st, a)
		}
		if string(a.Data) != compact(t, sample(t, st)) {
			t.Errorf("%s: data %s", st, a.Data)
		}
		if len(a.Checks) != 0 {
			t.Errorf("%s: the clean samples have checks %q", st, a.Checks)
		}
		for _, h := range headings[st] {
			if !strings.Contains(a.Content, h) {
				t.Errorf("%s: the Markdown lacks %q:\n%s", st, h, a.Content)
			}
		}
	}

	if _, err := e.svc.Generate(as(alice), sid, ""); errCode(err) != spec.CodePipelineComplete {
		t.Errorf("generate after prps: %v", err)
	}
	if v, _ := e.svc.GetSession(as(alice), sid); v.NextStage != "" {
		t.Errorf("next stage %q after prps", v.NextStage)
	}

	job := e.generate(alice, sid, ports.StagePRD)
	e.script(answer(sample(t, ports.StagePRD)))
	if err := e.svc.RunGeneration(t.Context(), job, false); err != nil {
		t.Fatal(err)
	}
	prompt := text(e.requests()[0].Messages)
	if strings.Contains(prompt, `<artifact stage="prd"`) || strings.Contains(prompt, `"id":"EP-1"`) {
		t.Error("the regenerated PRD's prompt carries the PRD or a later stage")
	}
	v, _ := e.svc.GetSession(as(alice), sid)
	if v.NextStage != ports.StageEpics || v.Session.CurrentStage != ports.StagePRD {
		t.Errorf("after regenerating the PRD: next %q, current %q", v.NextStage, v.Session.CurrentStage)
	}
	var prdVersions int
	for _, a := range v.Artifacts {
		if a.Stage == ports.StagePRD {
			prdVersions++
			if a.Stale {
				t.Errorf("prd v%d is stale", a.Version)
			}
		}
		if a.Stage == ports.StageScope && a.Stale {
			t.Error("scope is stale")
		}
		if later := a.Stage == ports.StageEpics || a.Stage == ports.StageStories || a.Stage == ports.StagePRPs; later && !a.Stale {
			t.Errorf("%s is not stale", a.Stage)
		}
	}
	if prdVersions != 2 {
		t.Errorf("%d prd versions", prdVersions)
	}
	if _, err := e.svc.Generate(as(alice), sid, ports.StageStories); errCode(err) != spec.CodeStageNotReady {
		t.Errorf("stories over stale epics: %v", err)
	}
}

func TestRunGenerationRetriesInvalidOutputOnce(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		stage   ports.Stage
		first   func(t *testing.T) string
		finish  ports.FinishReason
		problem string
	}{
		{"not JSON", ports.StageScope, func(*testing.T) string { return `{"title": "Expense` }, ports.FinishStop, "not valid JSON"},
		{"cut off", ports.StageScope, func(*testing.T) string { return `{"title": "Expense` }, ports.FinishLength, "cut off at the token limit"},
		{"in a code fence is fine", ports.StageScope, nil, "", ""},
		{"a missing field", ports.StageScope, func(t *testing.T) string {
			return edit(t, ports.StageScope, func(d map[string]any) { delete(d, "problem") })
		}, ports.FinishStop, "missing property 'problem'"},
		{"a bad requirement id", ports.StagePRD, func(t *testing.T) string {
			return edit(t, ports.StagePRD, func(d map[string]any) {
				d["functional_requirements"].([]any)[0].(map[string]any)["id"] = "R1"
			})
		}, ports.FinishStop, "/functional_requirements/0/id"},
		{"a repeated id", ports.StagePRD, func(t *testing.T) string {
			return edit(t, ports.StagePRD, func(d map[string]any) {
				d["functional_requirements"].([]any)[1].(map[string]any)["id"] = "REQ-1"
			})
		}, ports.FinishStop, "the requirement id REQ-1 is used more than once"},
		{"a story numbered for another epic", ports.StageStories, func(t *testing.T) string {
			return edit(t, ports.StageStories, func(d map[string]any) {
				d["stories"].([]any)[0].(map[string]any)["epic_id"] = "EP-2"
			})
		}, ports.FinishStop, "ST-1.1 belongs to epic EP-2, so its id must be ST-2.n"},
		{"a PRP numbered for another story", ports.StagePRPs, func(t *testing.T) string {
			return edit(t, ports.StagePRPs, func(d map[string]any) {
				d["prps"].([]any)[1].(map[string]any)["id"] = "PRP-2.2"
				d["prps"].([]any)[2].(map[string]any)["id"] = "PRP-2.1"
			})
		}, ports.FinishStop, "PRP-2.2 implements story ST-2.1, so its id must be PRP-2.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, spec.Config{})
			sid := e.newSession(alice)
			e.seed(sid, ports.Stages[:slices.Index(ports.Stages, tt.stage)]...)
			job := e.generate(alice, sid, "")
			if tt.first == nil {
				e.script(answer("```json\n" + sample(t, tt.stage) + "\n```"))
				if err := e.svc.RunGeneration(t.Context(), job, false); err != nil {
					t.Fatal(err)
				}
				if len(e.requests()) != 1 || e.session(sid).Status != ports.SpecReady {
					t.Error("a fenced answer was not accepted at once")
				}
				return
			}
			bad := tt.first(t)
			e.script(func(context.Context, ports.ChatRequest) (ports.ChatResult, error) {
				return ports.ChatResult{Content: bad, FinishReason: tt.finish}, nil
			}, answer(sample(t, tt.stage)))
			if err := e.svc.RunGeneration(t.Context(), job, false); err != nil {
				t.Fatal(err)
			}
			reqs := e.requests()
			if len(reqs) != 2 {
				t.Fatalf("%d requests", len(reqs))
			}
			first, second := reqs[0].Messages, reqs[1].Messages
			if len(second) != len(first)+2 || second[len(first)].Role != ports.MessageAssistant || second[len(first)].Content != bad {
				t.Fatalf("the retry does not carry the first answer: %+v", second[len(first):])
			}
			fix := second[len(second)-1]
			if fix.Role != ports.MessageUser || !strings.Contains(fix.Content, tt.problem) {
				t.Errorf("the retry says %q, want it to mention %q", fix.Content, tt.problem)
			}
			if reqs[1].ResponseFormat == nil {
				t.Error("the retry does not ask for the schema")
			}
			if s := e.session(sid); s.Status != ports.SpecReady || s.CurrentStage != tt.stage {
				t.Errorf("session %+v", s)
			}
		})
	}
}
