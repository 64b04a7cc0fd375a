//go:build !nosandbox

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/hosts/eval"
)

func writeReport(t *testing.T, path string, summary map[string]float64) {
	t.Helper()
	s := map[string]*float64{}
	for k, v := range summary {
		s[k] = &v
	}
	raw, err := json.Marshal(eval.Report{Version: 1, Parts: eval.AllParts, Summary: s})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestEvalCompare(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	base := map[string]float64{"spec.fact_coverage.prps": 1, "spec.grounding": 0.97, "spec.cross_prp_conflicts": 0, "assistant.task_success": 1}
	a := filepath.Join(dir, "a", eval.ReportJSON)
	writeReport(t, a, base)
	worse := map[string]float64{}
	for k, v := range base {
		worse[k] = v
	}
	worse["spec.fact_coverage.prps"] = 0.75
	worse["spec.cross_prp_conflicts"] = 2
	b := filepath.Join(dir, "b", eval.ReportJSON)
	writeReport(t, b, worse)

	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   []string
		stderr   string
		noStdout []string
	}{
		{"against itself", []string{"eval", "compare", filepath.Dir(a), a}, 0, []string{"no regression"}, "", []string{"REGRESSION"}},
		{"a worse run", []string{"eval", "compare", filepath.Dir(a), b}, 1,
			[]string{"regression: spec.fact_coverage.prps went from 1 to 0.75", "regression: spec.cross_prp_conflicts went from 0 to 2"},
			"2 metric(s) regressed", []string{"regression: spec.grounding"}},
		{"the worse run first: improvements only", []string{"eval", "compare", b, a}, 0, []string{"no regression"}, "", nil},
		{"a threshold above the drop", []string{"eval", "compare", a, b, "--threshold", "0.3"}, 1,
			[]string{"regression: spec.cross_prp_conflicts"}, "1 metric(s)", []string{"regression: spec.fact_coverage.prps"}},
		{"one run", []string{"eval", "compare", a}, 2, nil, "needs two runs", nil},
		{"not a report", []string{"eval", "compare", a, filepath.Join(dir, "nowhere")}, 2, nil, "no such report", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, func(string) string { return "" }, &stdout, &stderr)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout.String(), stderr.String())
			}
			for _, w := range tt.stdout {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
				}
			}
			for _, w := range tt.noStdout {
				if strings.Contains(stdout.String(), w) {
					t.Errorf("stdout has %q:\n%s", w, stdout.String())
				}
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr %q, want %q", stderr.String(), tt.stderr)
			}
		})
	}
}

func TestEvalUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"eval", "--cases", "no-such-case", "--out", filepath.Join(dir, "r1")}, `unknown case "no-such-case"`},
		{[]string{"eval", "run", "--out", file}, "is a file, not a directory"},
		{[]string{"eval", "--resume"}, "--resume needs --out"},
		{[]string{"eval", "--concurrency", "0", "--out", filepath.Join(dir, "r2")}, "--concurrency"},
		{[]string{"eval", "frobnicate"}, "unknown eval subcommand"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), tt.args, func(string) string { return "" }, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tt.args, code, stderr.String(), tt.want)
		}
	}
	var stdout bytes.Buffer
	if code := run(context.Background(), []string{"eval", "run", "--help"}, func(string) string { return "" }, &stdout, &stdout); code != 0 ||
		!strings.Contains(stdout.String(), "--resume") || !strings.Contains(stdout.String(), "DEVPILOT_EVAL_JUDGE_MODEL") {
		t.Errorf("eval run --help: %d\n%s", code, stdout.String())
	}
}

func TestEvalHelp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args  []string
		usage string
		flags []string
	}{
		{[]string{"eval", "--help"}, "usage: devpilot eval [run]", []string{"-cases", "-out", "-concurrency", "-parts", "-resume"}},
		{[]string{"eval", "run", "-h"}, "usage: devpilot eval [run]", []string{"-cases", "-resume"}},
		{[]string{"eval", "compare", "--help"}, "usage: devpilot eval compare A B", []string{"-threshold"}},
		{[]string{"eval", "help"}, "usage: devpilot eval [run] [flags] | devpilot eval compare", nil},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		code := run(context.Background(), tt.args, func(string) string { return "" }, &stdout, &stderr)
		if code != 0 || stderr.Len() != 0 || !strings.HasPrefix(stdout.String(), tt.usage) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 0 and %q", tt.args, code, stdout.String(), stderr.String(), tt.usage)
			continue
		}
		for _, f := range tt.flags {
			if !strings.Contains(stdout.String(), "  "+f) {
				t.Errorf("%v: help does not list %s", tt.args, f)
			}
		}
	}
}
