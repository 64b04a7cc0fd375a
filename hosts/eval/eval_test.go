package eval_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/devpilot/devpilot/hosts/eval"
)

// noEnv is an empty environment: the tests never reach a configured
// provider, whatever the machine's environment says.
func noEnv(string) string { return "" }

func TestRunWritesReports(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "run")
	var progress bytes.Buffer
	rep, err := eval.Run(context.Background(), eval.Options{Cases: []string{"expense-notes"}, Out: out, Concurrency: 2,
		Getenv: noEnv, Progress: &progress})
	if err != nil {
		t.Fatalf("Run: %v\nprogress:\n%s", err, progress.String())
	}
	raw, _ := json.MarshalIndent(rep, "", "  ")
	t.Logf("%s", raw)
	t.Logf("%s", eval.Summary(rep))
	for _, f := range []string{eval.ReportJSON, eval.ReportMarkdown, eval.StateFile} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
