package eval_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devpilot/devpilot/hosts/app"
	"github.com/devpilot/devpilot/hosts/eval"
	"github.com/devpilot/devpilot/hosts/sandbox/demomodel"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeanthropic"
	"github.com/devpilot/devpilot/hosts/sandbox/fakebedrock"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// TestCompareTwoProviders runs the spec part twice with --model, once on
// Anthropic and once on Bedrock (their fakes answered by the demo model,
// through the official SDKs), and compares the two runs: each report names
// its provider and model, every stage was written by that model, and the
// comparison covers the metrics of both. The judge is a DEVPILOT_MODEL_JUDGE
// route to Bedrock, which throttles its first call: Anthropic judges it.
func TestCompareTwoProviders(t *testing.T) {
	t.Parallel()
	script := fakeopenai.New(t)
	// One script answers the judged model and the judge, told apart by
	// the answer's schema; Bedrock throttles the judge's first call.
	demo := demomodel.New().Respond
	var throttled atomic.Bool
	script.SetResponder(func(r *fakeopenai.Request) fakeopenai.Response {
		if r.ResponseSchemaName() != "eval_judge" {
			return demo(r)
		}
		if strings.Contains(r.Path, "/model/") && throttled.CompareAndSwap(false, true) {
			return fakeopenai.RateLimited(time.Second)
		}
		return fakeopenai.Text(`{"faithful":4,"complete":3,"specific":4,"consistent":5,"notes":"fine"}`)
	})
	env := map[string]string{
		app.EnvAnthropicKey: "sk-ant-test", app.EnvAnthropicBaseURL: fakeanthropic.New(t, script).URL(),
		app.EnvBedrockRegion: "us-east-1", app.EnvBedrockEndpoint: fakebedrock.New(t, script).URL(), app.EnvBedrockRetries: "0",
		"AWS_ACCESS_KEY_ID": "AKIDFAKEBEDROCK", "AWS_SECRET_ACCESS_KEY": "fake-secret",
	}
	env[app.EnvModelJudge] = "bedrock:judge-model,anthropic:judge-model"
	runs := []struct{ model, provider, modelID string }{
		{"anthropic:claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5"},
		{"bedrock:us.anthropic.claude-sonnet-4-5-20250929-v1:0", "bedrock", "us.anthropic.claude-sonnet-4-5-20250929-v1:0"},
	}
	var reps []eval.Report
	for _, r := range runs {
		rep, err := eval.Run(context.Background(), eval.Options{Cases: []string{testCase}, Out: filepath.Join(t.TempDir(), "run"),
			Parts: []string{eval.PartSpec}, Concurrency: 1, Model: r.model, Getenv: func(k string) string { return env[k] }})
		if err != nil {
			t.Fatalf("%s: %v", r.model, err)
		}
		if rep.Provider != r.provider || rep.Model != r.modelID {
			t.Errorf("%s: report names %q %q", r.model, rep.Provider, rep.Model)
		}
		if len(rep.Cases) != 1 || rep.Cases[0].Status != "done" || len(rep.Cases[0].Stages) != len(eval.Stages) {
			t.Fatalf("%s: cases %+v", r.model, rep.Cases)
		}
		for _, s := range rep.Cases[0].Stages {
			if s.Model != r.modelID {
				t.Errorf("%s: stage %s written by %q", r.model, s.Stage, s.Model)
			}
		}
		if m := rep.Summary["spec.judge_mean"]; m == nil || *m != 4 {
			t.Errorf("%s: spec.judge_mean = %v, want 4", r.model, m)
		}
		reps = append(reps, rep)
	}
	if !throttled.Load() {
		t.Error("the judge never called Bedrock first")
	}
	changes := eval.Compare(reps[0], reps[1], 0.05)
	if len(changes) == 0 {
		t.Fatal("no metrics compared")
	}
	for _, c := range changes {
		if strings.HasPrefix(c.Metric, "spec.") && (c.A == nil || c.B == nil) {
			t.Errorf("metric %s is missing from a run", c.Metric)
		}
	}
}

func TestModelOptionIsChecked(t *testing.T) {
	t.Parallel()
	for model, msg := range map[string]string{
		"gemini:pro":         "unknown provider",
		"anthropic":          "not provider:model",
		"anthropic:claude-x": "provider anthropic is not configured",
	} {
		_, err := eval.Run(context.Background(), eval.Options{Cases: []string{testCase}, Out: filepath.Join(t.TempDir(), "run"),
			Parts: []string{eval.PartSpec}, Model: model, Getenv: noEnv})
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("--model %s: %v, want an error with %q", model, err, msg)
		}
	}
}
