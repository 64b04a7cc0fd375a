package eval_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/devpilot/devpilot/hosts/eval"
	"github.com/devpilot/devpilot/hosts/sandbox/demomodel"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

func showInt(v *int64) string {
	if v == nil {
		return "nil"
	}
	return fmt.Sprint(*v)
}

// noEnv is an empty environment: the tests never reach a configured
// provider or judge, whatever the machine's environment says.
func noEnv(string) string { return "" }

// The tests run the expense-notes case only, with the sandbox's demo model.
const testCase = "expense-notes"

func TestRunWritesReports(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "run")
	var progress bytes.Buffer
	rep, err := eval.Run(context.Background(), eval.Options{Cases: []string{testCase}, Out: out, Concurrency: 2,
		Getenv: noEnv, Progress: &progress})
	if err != nil {
		t.Fatalf("Run: %v\nprogress:\n%s", err, progress.String())
	}
	if !strings.Contains(progress.String(), "14/14") {
		t.Errorf("progress does not reach 14/14 (5 stages, 3 briefs, 6 tasks):\n%s", progress.String())
	}
	if len(rep.Cases) != 1 || rep.Cases[0].Status != "done" || len(rep.Cases[0].Stages) != len(eval.Stages) {
		t.Fatalf("cases = %+v, want %s done with 5 stages", rep.Cases, testCase)
	}
	c := rep.Cases[0]
	for i, s := range c.Stages {
		if s.Stage != eval.Stages[i] || s.Status != "ready" || s.Model == "" || s.DurationMS == nil {
			t.Errorf("stage %d = %+v, want %s ready with a model and a time", i, s, eval.Stages[i])
		}
	}
	m := c.Metrics
	inUnit := func(name string, v *float64) {
		t.Helper()
		if v == nil || *v < 0 || *v > 1 {
			t.Errorf("%s = %v, want a share from 0 to 1", name, v)
		}
	}
	inUnit("requirement coverage", m.RequirementCoverage)
	inUnit("fact coverage in the PRD", m.FactCoverage.PRD)
	inUnit("fact coverage in the stories", m.FactCoverage.Stories)
	inUnit("fact coverage in the PRPs", m.FactCoverage.PRPs)
	inUnit("grounding", m.Grounding.Share)
	if m.Grounding.Checked == 0 || m.CrossPRPConflicts == nil {
		t.Errorf("grounding checked %d paths and commands, conflicts %v: want the PRPs checked", m.Grounding.Checked, m.CrossPRPConflicts)
	}
	if rep.Content == nil || len(rep.Content.Drafts) != 3 || rep.Content.Failed != 0 || rep.Content.FindingsPerDraft == nil {
		t.Errorf("content = %+v, want 3 drafts with their findings", rep.Content)
	}
	if rep.Assistant == nil || len(rep.Assistant.Tasks) != 6 || rep.Assistant.TaskSuccess == nil || *rep.Assistant.TaskSuccess != 1 {
		t.Errorf("assistant = %+v, want 6 tasks, all successful with the demo model", rep.Assistant)
	}
	if rep.Model == "" || rep.Provider != "sandbox (faithful demo model)" || rep.Totals.PromptTokens == nil || *rep.Totals.PromptTokens == 0 {
		t.Errorf("model %q provider %q tokens %s", rep.Model, rep.Provider, showInt(rep.Totals.PromptTokens))
	}
	for _, name := range []string{"spec.fact_coverage.prps", "spec.grounding", "spec.requirement_coverage", "spec.cross_prp_conflicts",
		"content.findings_per_draft", "assistant.task_success", "case." + testCase + ".fact_coverage.prps"} {
		if rep.Summary[name] == nil {
			t.Errorf("summary has no %s", name)
		}
	}
	// What is on disk is what Run returned.
	onDisk, err := eval.LoadReport(out)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(onDisk.Summary, rep.Summary) {
		t.Errorf("report.json's summary differs from Run's")
	}
	md, err := os.ReadFile(filepath.Join(out, eval.ReportMarkdown))
	if err != nil || !strings.Contains(string(md), "## "+testCase) || !strings.Contains(string(md), "| prps | ready |") {
		t.Errorf("report.md (%v):\n%s", err, md)
	}
}

// countingModel is the demo model, counting the specification requests by
// stage.
type countingModel struct {
	mu    sync.Mutex
	calls map[string]int
	model *demomodel.Model
}

func (m *countingModel) respond(req *fakeopenai.Request) fakeopenai.Response {
	m.mu.Lock()
	m.calls[req.ResponseSchemaName()]++
	m.mu.Unlock()
	return m.model.Respond(req)
}

func (m *countingModel) count(name string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[name]
}

func TestResumeContinuesFromTheLastFinishedStage(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "run")
	model := &countingModel{calls: map[string]int{}, model: demomodel.New()}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opts := eval.Options{Cases: []string{testCase}, Out: out, Parts: []string{eval.PartSpec}, Getenv: noEnv, Responder: model.respond,
		AfterStage: func(_, stage string) {
			if stage == "scope" {
				cancel()
			}
		}}
	rep, err := eval.Run(ctx, opts)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("the interrupted run returned %v, want context.Canceled", err)
	}
	if len(rep.Cases) != 1 || rep.Cases[0].Status != "incomplete" || len(rep.Cases[0].Stages) != 1 {
		t.Fatalf("after the interruption: %+v, want the case incomplete after its scope", rep.Cases)
	}
	session := rep.Cases[0].SessionID
	scopeCalls, prdCalls := model.count("spec_scope"), model.count("spec_prd")
	if scopeCalls == 0 || prdCalls != 0 {
		t.Fatalf("before resuming: %d scope and %d PRD requests, want the scope only", scopeCalls, prdCalls)
	}

	// Without --resume the directory is refused: it holds a run.
	opts.AfterStage = nil
	var usageErr *eval.UsageError
	if _, err := eval.Run(context.Background(), opts); !errors.As(err, &usageErr) || !strings.Contains(err.Error(), "--resume") {
		t.Fatalf("a second run on the directory: %v, want a usage error naming --resume", err)
	}
	opts.Resume = true
	opts.Cases = nil // the run's own cases
	rep, err = eval.Run(context.Background(), opts)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if len(rep.Cases) != 1 || rep.Cases[0].Status != "done" || len(rep.Cases[0].Stages) != len(eval.Stages) || rep.Cases[0].SessionID != session {
		t.Fatalf("after resuming: %+v, want the same session done with 5 stages", rep.Cases)
	}
	if got := model.count("spec_scope"); got != scopeCalls {
		t.Errorf("the scope was generated again: %d requests, %d before resuming", got, scopeCalls)
	}
	if model.count("spec_prd") == 0 || model.count("spec_prps") == 0 {
		t.Errorf("the later stages were not generated: %v", model.calls)
	}
	if rep.Cases[0].Metrics.Grounding.Share == nil {
		t.Errorf("the resumed run's PRPs are not grounded in the case repository: %+v", rep.Cases[0].Metrics.Grounding)
	}
}

func TestRunRefusesBadOptions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts eval.Options
		want string
	}{
		{"unknown case", eval.Options{Cases: []string{testCase, "no-such-case"}, Out: filepath.Join(dir, "new1")}, `unknown case "no-such-case"`},
		{"unknown part", eval.Options{Parts: []string{"spec", "poetry"}, Out: filepath.Join(dir, "new2")}, `unknown part "poetry"`},
		{"out is a file", eval.Options{Out: file}, "is a file, not a directory"},
		{"no out", eval.Options{}, "--out"},
		{"resume without a run", eval.Options{Out: dir, Resume: true}, "holds no run"},
		{"resume of a missing directory", eval.Options{Out: filepath.Join(dir, "missing"), Resume: true}, "does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Getenv = noEnv
			_, err := eval.Run(context.Background(), tt.opts)
			var usageErr *eval.UsageError
			if !errors.As(err, &usageErr) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run = %v, want a usage error saying %q", err, tt.want)
			}
		})
	}
	for _, d := range []string{"new1", "new2"} {
		if _, err := os.Stat(filepath.Join(dir, d)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a refused run created %s", d)
		}
	}
}

// TestRunOnTheConfiguredModelWithAJudge runs the spec part on a configured
// provider (OPENAI_API_KEY and OPENAI_BASE_URL: here a fake OpenAI answered
// by the demo model, standing in for a real one) instead of the sandbox's
// model, one case at a time (tokens per stage from each artifact's generation statistics), with
// the judge scoring every stage.
func TestRunOnTheConfiguredModelWithAJudge(t *testing.T) {
	t.Parallel()
	provider := fakeopenai.New(t)
	provider.SetResponder(demomodel.New().Respond)
	judge := fakeopenai.New(t)
	judge.SetResponder(func(*fakeopenai.Request) fakeopenai.Response {
		return fakeopenai.Text(`{"faithful":4,"complete":3,"specific":4,"consistent":5,"notes":"fine"}`)
	})
	env := map[string]string{"OPENAI_API_KEY": "sk-configured", "OPENAI_BASE_URL": provider.URL(), "DEVPILOT_LLM_MODEL": "configured-model",
		eval.EnvJudgeModel: "judge-model", eval.EnvJudgeBaseURL: judge.URL(), eval.EnvJudgeAPIKey: "sk-judge"}
	rep, err := eval.Run(context.Background(), eval.Options{Cases: []string{testCase}, Out: filepath.Join(t.TempDir(), "run"),
		Parts: []string{eval.PartSpec}, Concurrency: 1, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Provider != provider.URL() || rep.Model != "configured-model" {
		t.Errorf("provider %q model %q, want the configured ones", rep.Provider, rep.Model)
	}
	specCalls := 0
	for _, r := range provider.Requests() {
		if strings.HasPrefix(r.ResponseSchemaName(), "spec_") {
			specCalls++
		}
	}
	if specCalls < len(eval.Stages) {
		t.Errorf("the configured provider got %d specification requests, want every stage's", specCalls)
	}
	if len(rep.Cases) != 1 || rep.Cases[0].Status != "done" {
		t.Fatalf("cases: %+v", rep.Cases)
	}
	for _, s := range rep.Cases[0].Stages {
		if s.Model != "configured-model" || s.TokensSource != "generation" || s.PromptTokens == nil || *s.PromptTokens == 0 {
			t.Errorf("stage %s: model %q tokens %s from %q, want the configured model and the artifact's own count", s.Stage, s.Model, showInt(s.PromptTokens), s.TokensSource)
		}
		if s.Judge == nil || s.Judge.Mean == nil || *s.Judge.Mean != 4 {
			t.Errorf("stage %s: judge %+v, want a mean of 4", s.Stage, s.Judge)
		}
	}
	if got := len(judge.Requests()); got != len(eval.Stages) {
		t.Errorf("the judge got %d requests, want one per stage", got)
	}
	if m := rep.Summary["spec.judge_mean"]; m == nil || *m != 4 {
		t.Errorf("spec.judge_mean = %v", m)
	}
}

// TestAFailedStageEndsItsCaseNotTheRun: a model that never answers the PRD
// stage validly fails the stage; the case is reported failed with the
// stages it finished, and the run still writes its report.
func TestAFailedStageEndsItsCaseNotTheRun(t *testing.T) {
	t.Parallel()
	demo := demomodel.New()
	rep, err := eval.Run(context.Background(), eval.Options{Cases: []string{testCase}, Out: filepath.Join(t.TempDir(), "run"),
		Parts: []string{eval.PartSpec}, Getenv: noEnv, Responder: func(req *fakeopenai.Request) fakeopenai.Response {
			if req.ResponseSchemaName() == "spec_prd" {
				return fakeopenai.Text(`{"title":`)
			}
			return demo.Respond(req)
		}})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	c := rep.Cases[0]
	if c.Status != "failed" || len(c.Stages) != 2 || c.Stages[0].Status != "ready" || c.Stages[1].Status != "failed" || c.Error == "" {
		t.Fatalf("case = %+v, want failed at its PRD", c)
	}
	if got := rep.Summary["spec.stages_failed"]; got == nil || *got != 1 {
		t.Errorf("spec.stages_failed = %v, want 1", got)
	}
	if rep.Summary["spec.fact_coverage.prps"] != nil {
		t.Errorf("a case without PRPs has a PRP fact coverage")
	}
}
