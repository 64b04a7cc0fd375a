// Package eval is devpilot's evaluation harness (`devpilot eval`): it runs
// the golden corpus (hosts/eval/evalcorpus) through the specification engine's
// five stages, the content engine (briefs under a brand) and a set of
// scripted assistant tasks, against whatever model is configured or the
// sandbox's, and measures what came out with deterministic metrics
// (metrics.go), written as report.json and report.md in the run directory.
//
// It is a host: it starts devpilot in this process (the sandbox's fakes for
// AWS and GitHub, a SQLite database in the run directory) and drives it over
// the public HTTP API as the demo user, like any client. A run is resumable:
// what it has done is saved in the run directory after every stage.
package eval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/devpilot/devpilot/adapters/llmroute"
	"github.com/devpilot/devpilot/hosts/eval/evalcorpus"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// The parts of a run.
const (
	PartSpec      = "spec"
	PartContent   = "content"
	PartAssistant = "assistant"
)

// AllParts are every part, in the order a run takes them.
var AllParts = []string{PartSpec, PartContent, PartAssistant}

// Stages are the specification stages, in order.
var Stages = []string{"scope", "prd", "epics", "stories", "prps"}

// Options configure a run.
type Options struct {
	// Cases are the ids of the corpus cases to run; all when empty.
	Cases []string
	// Out is the run directory: created when missing; it must not hold a
	// run unless Resume is set.
	Out string
	// Concurrency is how many cases run at once (default 2).
	Concurrency int
	// Parts are what to run: spec, content, assistant (all when empty).
	Parts []string
	// Resume continues the interrupted run in Out from where it stopped,
	// with that run's cases and parts (Cases and Parts are then only
	// checked, not used).
	Resume bool
	// Responder answers the model's requests on the sandbox's fake OpenAI
	// (the faithful demo model when nil and no provider is configured).
	// When set,
	// the fake is used even when a provider is configured.
	Responder func(*fakeopenai.Request) fakeopenai.Response
	// Model, when set, is a failover list "provider:model[,provider:model…]"
	// (see DEVPILOT_MODEL_CHAT) that every feature the run exercises uses
	// instead of DEVPILOT_MODEL_* and DEVPILOT_LLM_MODEL: two runs with
	// different Models, told apart by Compare, compare two providers. The
	// provider must be configured (OPENAI_*, ANTHROPIC_*,
	// DEVPILOT_BEDROCK_*); an openai model without OpenAI settings runs on
	// the sandbox's fake. It may not be set with Responder.
	Model string
	// Getenv reads the configuration (os.Getenv when nil): the model
	// provider's settings and the judge's (DEVPILOT_EVAL_JUDGE_*).
	Getenv func(string) string
	// Progress receives the progress bar (one line redrawn on a terminal,
	// plain lines otherwise); nothing when nil.
	Progress io.Writer
	// Judge scores every stage with a judge model; nil reads
	// DEVPILOT_EVAL_JUDGE_* (off when unset).
	Judge *JudgeConfig
	// AfterStage, when set, is called after each stage of a case is saved;
	// a test cancels the run's context from it to interrupt a run.
	AfterStage func(caseID, stage string)
}

// UsageError is an error in what the caller asked for (an unknown case or
// part, a run directory that cannot be used): the command exits with
// status 2 for it.
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &UsageError{msg: fmt.Sprintf(format, args...)}
}

// Run runs the corpus as opts say, writes report.json and report.md in the
// run directory and returns the report. When ctx ends the run stops after
// saving what it finished (resume it with Options.Resume) and returns ctx's
// error. Errors: *UsageError for bad options; starting devpilot's.
func Run(ctx context.Context, opts Options) (Report, error) {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 2
	}
	if opts.Out == "" {
		return Report{}, usageErrorf("no run directory (--out)")
	}
	if opts.Model != "" {
		if _, err := llmroute.ParseTargets(opts.Model); err != nil {
			return Report{}, usageErrorf("--model: %v", err)
		}
		if opts.Responder != nil {
			return Report{}, usageErrorf("--model and a scripted responder exclude each other")
		}
	}
	if opts.Judge == nil {
		j, err := JudgeFromEnv(opts.Getenv)
		if err != nil {
			return Report{}, err
		}
		opts.Judge = j
	}
	all, err := evalcorpus.Load()
	if err != nil {
		return Report{}, err
	}
	// What was asked for is checked before anything is created.
	picked, err := pickCases(all, opts.Cases)
	if err != nil {
		return Report{}, err
	}
	parts, err := pickParts(opts.Parts)
	if err != nil {
		return Report{}, err
	}
	st, err := prepareDir(opts.Out, opts.Resume)
	if err != nil {
		return Report{}, err
	}
	if st == nil {
		st = &state{Version: stateVersion, StartedAt: time.Now().UTC(), Parts: parts, Spec: map[string]*caseState{},
			path: opts.Out + string(os.PathSeparator) + StateFile}
		for _, c := range picked {
			st.Cases = append(st.Cases, c.ID)
		}
	}
	cases, err := pickCases(all, st.Cases)
	if err != nil {
		return Report{}, fmt.Errorf("the run in %s: %w", opts.Out, err)
	}
	if !slices.Contains(st.Parts, PartSpec) {
		cases = nil
	}

	h, err := startHost(ctx, opts.Out, opts.Getenv, opts.Model, opts.Responder, cases)
	if err != nil {
		return Report{}, err
	}
	defer h.stop()
	r := &runner{opts: opts, st: st, h: h, cases: cases}
	if err := st.update(func() {
		st.Model, st.Provider = h.model, h.provider
		if st.UsageAtStart == nil {
			if u, err := h.api.usage(ctx); err == nil {
				st.UsageAtStart = &usageTotals{PromptTokens: u.Total.PromptTokens, CompletionTokens: u.Total.CompletionTokens}
			}
		}
	}); err != nil {
		return Report{}, err
	}
	r.progress = newProgress(opts.Progress, r.totalSteps())
	r.progress.advance(r.doneSteps(), "")
	runErr := r.run(ctx)
	r.progress.finish()
	var usageNow *usageTotals
	if u, err := h.api.usage(context.WithoutCancel(ctx)); err == nil {
		usageNow = &usageTotals{PromptTokens: u.Total.PromptTokens, CompletionTokens: u.Total.CompletionTokens}
	}
	rep := buildReport(st, all, h.tools, usageNow)
	if err := writeReports(opts.Out, rep); err != nil {
		return rep, err
	}
	return rep, runErr
}

// pickCases returns the corpus cases with the ids asked for, in the order
// asked; all of them when none is asked for.
func pickCases(all []evalcorpus.Case, ids []string) ([]evalcorpus.Case, error) {
	if len(ids) == 0 {
		return all, nil
	}
	byID := map[string]evalcorpus.Case{}
	var known []string
	for _, c := range all {
		byID[c.ID] = c
		known = append(known, c.ID)
	}
	var out []evalcorpus.Case
	for _, id := range ids {
		c, ok := byID[strings.TrimSpace(id)]
		if !ok {
			return nil, usageErrorf("unknown case %q (the corpus has: %s)", id, strings.Join(known, ", "))
		}
		if !slices.ContainsFunc(out, func(o evalcorpus.Case) bool { return o.ID == c.ID }) {
			out = append(out, c)
		}
	}
	return out, nil
}

func pickParts(parts []string) ([]string, error) {
	if len(parts) == 0 {
		return slices.Clone(AllParts), nil
	}
	var out []string
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if !slices.Contains(AllParts, p) {
			return nil, usageErrorf("unknown part %q (parts: %s)", p, strings.Join(AllParts, ", "))
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// runner is one run in progress.
type runner struct {
	opts     Options
	st       *state
	h        *host
	cases    []evalcorpus.Case
	progress *progress
}

// totalSteps counts the run's steps for the progress bar: the stages of
// every case, the briefs, the tasks.
func (r *runner) totalSteps() int {
	n := len(r.cases) * len(Stages)
	if slices.Contains(r.st.Parts, PartContent) {
		n += len(contentSuite.Briefs)
	}
	if slices.Contains(r.st.Parts, PartAssistant) {
		n += len(assistantTasks)
	}
	return n
}

func (r *runner) doneSteps() int {
	r.st.mu.Lock()
	defer r.st.mu.Unlock()
	n := 0
	for _, c := range r.st.Spec {
		n += len(c.Stages)
		if c.Done {
			n += len(Stages) - len(c.Stages)
		}
	}
	if r.st.Content != nil {
		n += len(r.st.Content.Drafts)
		if r.st.Content.Done {
			n += len(contentSuite.Briefs) - len(r.st.Content.Drafts)
		}
	}
	if r.st.Assistant != nil {
		n += len(r.st.Assistant.Tasks)
		if r.st.Assistant.Done {
			n += len(assistantTasks) - len(r.st.Assistant.Tasks)
		}
	}
	return n
}

// run runs the parts: every case (at most Concurrency at once), with the
// content suite and the assistant tasks as two more jobs of the same pool.
func (r *runner) run(ctx context.Context) error {
	var jobs []func(context.Context) error
	for _, c := range r.cases {
		jobs = append(jobs, func(ctx context.Context) error { return r.runCase(ctx, c) })
	}
	if slices.Contains(r.st.Parts, PartContent) {
		jobs = append(jobs, r.runContent)
	}
	if slices.Contains(r.st.Parts, PartAssistant) {
		jobs = append(jobs, r.runAssistant)
	}
	sem := make(chan struct{}, r.opts.Concurrency)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for _, job := range jobs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := job(ctx); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return errors.Join(errs...)
}
