//go:build !nosandbox

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/devpilot/devpilot/hosts/eval"
)

// eval runs `devpilot eval [run] …` and `devpilot eval compare A B`.
func (c cli) eval(ctx context.Context, args []string) error {
	sub := "run"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	switch sub {
	case "run":
		return c.evalRun(ctx, args)
	case "compare":
		return c.evalCompare(args)
	case "help":
		return c.parse(newFlags("eval"), []string{"--help"}, 0)
	}
	return errUsage{fmt.Errorf("unknown eval subcommand %q: use run or compare", sub)}
}

func (c cli) evalRun(ctx context.Context, args []string) error {
	fs := newFlags("eval run")
	cases := fs.String("cases", "", "comma-separated case ids of the corpus (default: every case)")
	out := fs.String("out", "", "the run directory (default: ./eval-runs/<timestamp>; with --resume, the interrupted run's)")
	concurrency := fs.Int("concurrency", 2, "how many cases run at once")
	parts := fs.String("parts", strings.Join(eval.AllParts, ","), "what to run: spec, content, assistant (comma-separated)")
	model := fs.String("model", "", "provider:model[,provider:model…] every feature uses for this run (openai, anthropic or bedrock; "+
		"default: DEVPILOT_MODEL_* and DEVPILOT_LLM_MODEL); compare two runs to compare two providers")
	resume := fs.Bool("resume", false, "continue the interrupted run in --out from its last finished stage (with the run's own cases and parts)")
	if err := c.parse(fs, args, 0); err != nil {
		return err
	}
	if *concurrency < 1 {
		return errUsage{fmt.Errorf("eval run: --concurrency must be at least 1, got %d", *concurrency)}
	}
	if *out == "" {
		if *resume {
			return errUsage{errors.New("eval run: --resume needs --out, the directory of the interrupted run")}
		}
		*out = filepath.Join("eval-runs", time.Now().UTC().Format("20060102-150405"))
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := eval.Run(ctx, eval.Options{Cases: splitList(*cases), Out: *out, Concurrency: *concurrency, Parts: splitList(*parts),
		Resume: *resume, Model: *model, Getenv: c.getenv, Progress: c.stderr})
	var usageErr *eval.UsageError
	switch {
	case errors.As(err, &usageErr):
		return errUsage{fmt.Errorf("eval: %w", err)}
	case ctx.Err() != nil:
		return fmt.Errorf("eval interrupted; what finished is saved: continue with %s eval run --resume --out %s", selfName(), *out)
	case err != nil && rep.Version == 0:
		return fmt.Errorf("eval: %w", err)
	}
	fmt.Fprint(c.stdout, eval.Summary(rep))
	fmt.Fprintf(c.stdout, "report: %s and %s\n", filepath.Join(*out, eval.ReportMarkdown), filepath.Join(*out, eval.ReportJSON))
	if err != nil {
		return fmt.Errorf("eval: %w", err)
	}
	return nil
}

func (c cli) evalCompare(args []string) error {
	fs := newFlags("eval compare")
	threshold := fs.Float64("threshold", 0.05, "how much worse a metric may get before it is a regression (absolute for shares, relative for counts)")
	var paths []string
	for {
		if err := c.parse(fs, args, 1<<20); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		paths = append(paths, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(paths) != 2 {
		return errUsage{fmt.Errorf("eval compare needs two runs (run directories or report.json files), got %d", len(paths))}
	}
	if *threshold < 0 {
		return errUsage{fmt.Errorf("eval compare: --threshold must not be negative, got %g", *threshold)}
	}
	var reps [2]eval.Report
	for i, p := range paths {
		rep, err := eval.LoadReport(p)
		if err != nil {
			return errUsage{fmt.Errorf("eval compare: %w", err)}
		}
		reps[i] = rep
	}
	if n := eval.PrintComparison(c.stdout, eval.Compare(reps[0], reps[1], *threshold), *threshold); n > 0 {
		return fmt.Errorf("eval compare: %d metric(s) regressed past the threshold %g", n, *threshold)
	}
	return nil
}

func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
}
