package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// crashDeadline bounds each wait of TestRunResumesStageAfterKill.
const crashDeadline = 20 * time.Second

// TestRunResumesStageAfterKill is the crash test: a `devpilot run` killed
// with SIGKILL while the model is writing a stage leaves the job running in
// the database; the next `devpilot run` takes it up as it starts and the
// stage is generated, with no new request from anyone.
func TestRunResumesStageAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills devpilot processes (-short)")
	}
	scope, err := os.ReadFile(filepath.Join("..", "..", "core", "spec", "testdata", "scope.json"))
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			// The first model call hangs until its caller goes away; later
			// ones answer at once.
			model := fakeopenai.New(t)
			var calls atomic.Int32
			model.SetResponder(func(*fakeopenai.Request) fakeopenai.Response {
				if calls.Add(1) == 1 {
					return fakeopenai.Text(string(scope)).WithResponseDelay(time.Hour)
				}
				return fakeopenai.Text(string(scope))
			})
			vars := map[string]string{
				"DEVPILOT_DATABASE_URL": sqlstoretest.URL(t, d),
				"DEVPILOT_DATA_DIR":     t.TempDir(),
				"DEVPILOT_HTTP_ADDR":    "127.0.0.1:0",
				"DEVPILOT_SANDBOX":      "0",
				"OPENAI_API_KEY":        "sk-test",
				"OPENAI_BASE_URL":       model.URL(),
			}
			h := harness{t: t, env: vars}

			first := startRunProcess(t, self, vars)
			code, token, errOut := h.cli("token", "create", "--email", "ada@example.com", "--org", "acme")
			token = strings.TrimSpace(token)
			if code != 0 || !strings.HasPrefix(token, "dp_") {
				t.Fatalf("token create: exit %d, %q %q", code, token, errOut)
			}
			status, body := crashCall(t, "POST", first.base+"/pse/sessions", token, map[string]any{
				"name": "Crash", "inputs": []map[string]string{{"kind": "note", "title": "Brief", "content": "Expense approvals on mobile."}},
			})
			var sess struct{ ID string }
			if err := json.Unmarshal(body, &sess); status != http.StatusCreated || err != nil {
				t.Fatalf("create session: %d %s", status, body)
			}
			if status, body := crashCall(t, "POST", first.base+"/pse/sessions/"+sess.ID+"/generate", token, nil); status != http.StatusAccepted {
				t.Fatalf("generate: %d %s", status, body)
			}
			crashPoll(t, "the model call of the first process", func() bool { return calls.Load() >= 1 })
			first.kill()

			second := startRunProcess(t, self, vars)
			defer second.stop()
			var got struct {
				Status       string
				CurrentStage *string `json:"current_stage"`
			}
			crashPoll(t, "the stage generated after the restart", func() bool {
				status, body := crashCall(t, "GET", second.base+"/pse/sessions/"+sess.ID, token, nil)
				if status != http.StatusOK || json.Unmarshal(body, &got) != nil {
					t.Fatalf("get session: %d %s", status, body)
				}
				if got.Status == "failed" {
					t.Fatalf("session failed after the restart: %s\n%s", body, second.logs)
				}
				return got.Status == "ready"
			})
			if got.CurrentStage == nil || *got.CurrentStage != "scope" || calls.Load() != 2 {
				t.Fatalf("after the restart: stage %v, %d model calls; want scope, 2", got.CurrentStage, calls.Load())
			}
		})
	}
}

// runProcess is `devpilot run` in a process of its own: this test binary run
// as devpilot (see asDevpilotEnv).
type runProcess struct {
	t      *testing.T
	cmd    *exec.Cmd
	base   string
	logs   *logWatch
	exited chan error
}

// startRunProcess starts `devpilot run` with vars and returns once it listens.
func startRunProcess(t *testing.T, self string, vars map[string]string) *runProcess {
	t.Helper()
	cmd := exec.Command(self, "run")
	cmd.Env = append(freshEnv(), asDevpilotEnv+"=1")
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	p := &runProcess{t: t, cmd: cmd, logs: newLogWatch(), exited: make(chan error, 1)}
	cmd.Stdout, cmd.Stderr = p.logs, p.logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- cmd.Wait() }()
	select {
	case p.base = <-p.logs.addr:
		return p
	case err := <-p.exited:
		t.Fatalf("devpilot run exited before listening (%v):\n%s", err, p.logs)
	case <-time.After(crashDeadline):
		_ = cmd.Process.Kill()
		<-p.exited
		t.Fatalf("devpilot run did not listen within %s:\n%s", crashDeadline, p.logs)
	}
	return nil
}

// kill ends the process with SIGKILL, as a crash or the OOM killer would.
func (p *runProcess) kill() {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		p.t.Fatal(err)
	}
	<-p.exited
}

// stop ends the process with SIGTERM and checks it exited cleanly.
func (p *runProcess) stop() {
	p.t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.exited:
		if err != nil {
			p.t.Errorf("devpilot run exited with %v:\n%s", err, p.logs)
		}
	case <-time.After(crashDeadline):
		_ = p.cmd.Process.Kill()
		<-p.exited
		p.t.Errorf("devpilot run did not stop within %s of SIGTERM:\n%s", crashDeadline, p.logs)
	}
}

// crashPoll calls done until it reports true, failing the test after
// crashDeadline.
func crashPoll(t *testing.T, what string, done func() bool) {
	t.Helper()
	deadline := time.Now().Add(crashDeadline)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %s", what, crashDeadline)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// crashCall makes one JSON request with token and returns the status and body.
func crashCall(t *testing.T, method, url, token string, body any) (int, []byte) {
	t.Helper()
	var r bytes.Buffer
	if body != nil {
		if err := json.NewEncoder(&r).Encode(body); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), crashDeadline)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, &r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(resp.Body); err != nil {
		t.Fatal(fmt.Errorf("reading %s %s: %w", method, url, err))
	}
	return resp.StatusCode, b.Bytes()
}
