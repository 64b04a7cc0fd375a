//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/devpilot/devpilot/hosts/app"
)

// asDevpilotEnv, set to 1, makes this test binary behave as the devpilot
// binary: TestREADMEWalkthrough runs it as `devpilot run` in a process of
// its own (with the race detector the test binary was built with), so that
// the server has its own working directory and ./data there, as after
// `make run`, without building another binary.
const asDevpilotEnv = "DEVPILOT_TEST_AS_DEVPILOT"

func init() {
	if os.Getenv(asDevpilotEnv) == "1" {
		os.Exit(run(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
	}
}

// walkthroughAddr is the address the README's walkthrough calls, literally.
const walkthroughAddr = "127.0.0.1:8080"

// walkthroughChecks are what each bash block of the walkthrough after the
// first (`make run`, which the test replaces) must print, each string after
// the one before it.
var walkthroughChecks = []struct {
	step string
	want []string
}{
	{"token and hello", []string{`{"providers":"sandbox","status":"ready"}`, `"email":"demo@example.com"`, `"name":"demo"`}},
	{"chat", []string{"event: content", "event: tool_call", "event: tool_result", "event: tool_call",
		"event: confirmation_required", "event: done", "Scale service checkout in cluster production to 3 tasks"}},
	{"approval", []string{`"status":"approved"`, `"ok":true`, `"desired":3`, `"name":"checkout"`}},
	{"specification", []string{
		`"stage":"scope","status":"generating"`, `"stage":"prd","status":"generating"`,
		`"stage":"epics","status":"generating"`, `"stage":"stories","status":"generating"`,
		`"stage":"prps","status":"generating"`, `"status":"ready","current_stage":"prps"`}},
	{"costs", []string{`"currency":"USD"`, `"key":"Amazon Elastic Container Service"`, `"total":`}},
	{"webhook", []string{`"status":"accepted"`, "HTTP 202", `"actor":"ada"`, `"kind":"push"`, `"source":"webhook"`,
		`"summary":"ada pushed 1 commit to main"`}},
}

// TestREADMEWalkthrough runs README.md's "five-minute walkthrough" as
// written: the bash blocks between <!-- walkthrough:begin --> and
// <!-- walkthrough:end -->, in order, in one `bash -euo pipefail`, in the
// working directory of a `devpilot run` started on a fresh data directory
// and on 127.0.0.1:8080 (the README's literal address; the test fails when
// that port is taken). The first block, `make run`, is not run: the test
// starts the server itself, with the environment stripped of every setting
// that would change what `make run` does on a fresh machine (provider
// variables, which turn the sandbox off, and DEVPILOT_*). Everything stays
// on loopback: the sandbox's fakes answer for OpenAI, AWS and GitHub.
func TestREADMEWalkthrough(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the README against a devpilot process (-short)")
	}
	t.Parallel()
	for _, tool := range []string{"bash", "curl", "openssl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("the README walkthrough needs %s: %v", tool, err)
		}
	}
	blocks := walkthroughBlocks(t, filepath.Join("..", "..", "README.md"))
	if strings.TrimSpace(blocks[0]) != "make run" {
		t.Fatalf("the walkthrough's first block is %q; the test replaces a block that is exactly `make run` by starting devpilot", blocks[0])
	}
	blocks = blocks[1:]
	if len(blocks) != len(walkthroughChecks) {
		t.Fatalf("the walkthrough has %d blocks after `make run`, the test checks %d: update walkthroughChecks", len(blocks), len(walkthroughChecks))
	}

	dir := t.TempDir()
	stop := startWalkthroughServer(t, dir)
	defer stop()

	var script strings.Builder
	for i, b := range blocks {
		fmt.Fprintf(&script, "%s\nprintf '\\n%s\\n'\n", b, blockEnd(i))
	}
	path := filepath.Join(dir, "walkthrough.sh")
	if err := os.WriteFile(path, []byte(script.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", path)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_PROXY=127.0.0.1,localhost", "no_proxy=127.0.0.1,localhost")
	// The script's curls are its children: on a timeout, end them all.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	out := stdout.String()
	t.Logf("walkthrough ran in %s:\n%s", time.Since(start).Round(time.Millisecond), out)

	rest := out
	for i, c := range walkthroughChecks {
		got, after, done := strings.Cut(rest, blockEnd(i)+"\n")
		if !done {
			t.Fatalf("walkthrough step %d (%s) did not finish: %v\nits output:\n%s\nstderr:\n%s", i+2, c.step, err, got, stderr.String())
		}
		at := got
		for _, w := range c.want {
			k := strings.Index(at, w)
			if k < 0 {
				t.Errorf("walkthrough step %d (%s): the output lacks %q (after the strings before it)\nits output:\n%s", i+2, c.step, w, got)
				break
			}
			at = at[k+len(w):]
		}
		rest = after
	}
	if err != nil {
		t.Fatalf("walkthrough: %v\nstderr:\n%s", err, stderr.String())
	}
}

func blockEnd(i int) string { return fmt.Sprintf("--- end of walkthrough block %d ---", i) }

var fencedBash = regexp.MustCompile("(?ms)^```bash\n(.*?)^```$")

// walkthroughBlocks returns the bash blocks between the walkthrough's
// markers in the README.
func walkthroughBlocks(t *testing.T, readme string) []string {
	t.Helper()
	raw, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	_, text, ok := strings.Cut(string(raw), "<!-- walkthrough:begin")
	if ok {
		text, _, ok = strings.Cut(text, "<!-- walkthrough:end -->")
	}
	if !ok {
		t.Fatalf("%s has no <!-- walkthrough:begin … --> … <!-- walkthrough:end --> section", readme)
	}
	var blocks []string
	for _, m := range fencedBash.FindAllStringSubmatch(text, -1) {
		blocks = append(blocks, m[1])
	}
	if len(blocks) == 0 {
		t.Fatalf("%s: no ```bash blocks in the walkthrough", readme)
	}
	return blocks
}

// startWalkthroughServer runs `devpilot run` in dir on walkthroughAddr, as `make run`
// would on a machine without provider settings, and returns when it
// listens; the returned function stops it and checks that it exited cleanly.
func startWalkthroughServer(t *testing.T, dir string) func() {
	t.Helper()
	ln, err := net.Listen("tcp", walkthroughAddr)
	if err != nil {
		t.Fatalf("%s is taken (%v): the README walkthrough calls it literally; stop what listens there (a `make run`?) and test again", walkthroughAddr, err)
	}
	ln.Close()

	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "run")
	cmd.Dir = dir
	cmd.Env = append(freshEnv(), asDevpilotEnv+"=1")
	logs := newLogWatch()
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("devpilot run exited with %v:\n%s", err, logs)
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Errorf("devpilot run did not stop within 30s of SIGTERM:\n%s", logs)
		}
	}
	select {
	case base := <-logs.addr:
		if base != "http://"+walkthroughAddr {
			stop()
			t.Fatalf("devpilot run listens on %s, want http://%s", base, walkthroughAddr)
		}
	case err := <-exited:
		t.Fatalf("devpilot run exited before listening (%v):\n%s", err, logs)
	case <-time.After(60 * time.Second):
		stop()
		t.Fatalf("devpilot run did not listen within 60s:\n%s", logs)
	}
	// The sandbox's seeding logs this before devpilot listens.
	if !strings.Contains(logs.String(), "SANDBOX MODE: demo token: dp_") {
		stop()
		t.Fatalf("devpilot run did not start the sandbox providers:\n%s", logs)
	}
	return stop
}

// freshEnv is this process's environment without the variables that would
// make `devpilot run` differ from a first run on a fresh machine.
func freshEnv() []string {
	drop := map[string]bool{}
	for _, v := range app.ProviderVariables() {
		drop[v] = true
	}
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if drop[k] || strings.HasPrefix(k, "DEVPILOT_") {
			continue
		}
		env = append(env, kv)
	}
	return env
}
