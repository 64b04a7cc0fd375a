package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// goListDeps returns the packages `go list -deps` says this command links
// with the given build flags.
func goListDeps(t *testing.T, flags ...string) []string {
	t.Helper()
	cmd := exec.Command("go", append(append([]string{"list", "-deps"}, flags...), ".")...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps %v: %v\n%s", flags, err, stderr.String())
	}
	return strings.Fields(string(out))
}

// TestBinaryLinksNoTestkit checks that the binary links no testkit
// package, built with the sandbox (the default: its fakes and demo model
// ship from hosts/sandbox) and with -tags nosandbox, and that the
// nosandbox build links nothing of hosts/sandbox either, while the default
// build does.
func TestBinaryLinksNoTestkit(t *testing.T) {
	t.Parallel()
	const sandboxPkg = module + "/hosts/sandbox"
	testkit := func(p string) bool { return p == module+"/testkit" || strings.HasPrefix(p, module+"/testkit/") }
	deps := goListDeps(t)
	if !containsPath(deps, sandboxPkg) {
		t.Fatalf("the default build does not link %s: %d packages", sandboxPkg, len(deps))
	}
	for _, p := range deps {
		if testkit(p) {
			t.Errorf("the default build links %s", p)
		}
	}
	deps = goListDeps(t, "-tags", "nosandbox")
	if !containsPath(deps, module+"/hosts/app") {
		t.Fatalf("go list -deps -tags nosandbox does not list hosts/app: %v", deps)
	}
	for _, p := range deps {
		if testkit(p) || p == sandboxPkg || strings.HasPrefix(p, sandboxPkg+"/") {
			t.Errorf("the -tags nosandbox build links %s", p)
		}
	}
}

const module = "github.com/devpilot/devpilot"

func containsPath(paths []string, p string) bool {
	for _, q := range paths {
		if q == p {
			return true
		}
	}
	return false
}

// TestNoSandboxBinaryRefusesTheSandbox builds the binary with -tags
// nosandbox and asks it for the sandbox in each way there is: it exits 2
// at once with one line naming the tag, having created nothing. Without the
// sandbox it starts and serves.
func TestNoSandboxBinaryRefusesTheSandbox(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary (-short)")
	}
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "devpilot")
	if out, err := exec.Command("go", "build", "-tags", "nosandbox", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -tags nosandbox: %v\n%s", err, out)
	}
	key := base64.StdEncoding.EncodeToString(make([]byte, 32))
	tests := []struct {
		name   string
		args   []string
		env    []string
		reason string
	}{
		{"run with DEVPILOT_SANDBOX=1", []string{"run"}, []string{"DEVPILOT_SANDBOX=1"}, "DEVPILOT_SANDBOX=1"},
		{"run without provider settings", []string{"run"}, nil, "no provider settings"},
		{"serve --sandbox", []string{"serve", "--sandbox"}, []string{"DEVPILOT_SECRET_KEY=" + key}, "--sandbox"},
		{"serve with DEVPILOT_SANDBOX=1", []string{"serve"}, []string{"DEVPILOT_SECRET_KEY=" + key, "DEVPILOT_SANDBOX=1"}, "DEVPILOT_SANDBOX=1"},
		{"eval", []string{"eval", "run", "--cases", "expense-notes"}, nil, "eval needs the sandbox"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, tt.args...)
			cmd.Dir = dir
			cmd.Env = append(freshEnv(), append([]string{"DEVPILOT_DATA_DIR=" + filepath.Join(dir, "data"),
				"DEVPILOT_HTTP_ADDR=127.0.0.1:0"}, tt.env...)...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 {
				t.Fatalf("%v: %v, want exit status 2\nstdout: %s\nstderr: %s", tt.args, err, stdout.String(), stderr.String())
			}
			line := strings.TrimSpace(stderr.String())
			if strings.Contains(line, "\n") || !strings.Contains(line, "-tags nosandbox") || !strings.Contains(line, tt.reason) ||
				strings.Contains(line, "panic") {
				t.Errorf("stderr %q, want one line naming -tags nosandbox and %q", line, tt.reason)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout %q, want nothing", stdout.String())
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("files created before the refusal: %v", entries)
			}
		})
	}

	t.Run("run with DEVPILOT_SANDBOX=0", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		cmd := exec.Command(bin, "run")
		cmd.Dir = dir
		cmd.Env = append(freshEnv(), "DEVPILOT_DATA_DIR="+filepath.Join(dir, "data"), "DEVPILOT_HTTP_ADDR=127.0.0.1:0", "DEVPILOT_SANDBOX=0")
		logs := newLogWatch()
		cmd.Stdout, cmd.Stderr = logs, logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		defer func() {
			_ = cmd.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-exited:
				// The command handles SIGTERM once it has started every
				// component, a little after it listens; a SIGTERM before
				// that ends it by the signal, which is no failure here.
				var exit *exec.ExitError
				if err != nil && !(errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGTERM) {
					t.Errorf("devpilot run exited with %v:\n%s", err, logs)
				}
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
				t.Errorf("devpilot run did not stop within 30s of SIGTERM:\n%s", logs)
			}
		}()
		var base string
		select {
		case base = <-logs.addr:
		case err := <-exited:
			t.Fatalf("devpilot run exited before listening (%v):\n%s", err, logs)
		case <-time.After(60 * time.Second):
			t.Fatalf("devpilot run did not listen within 60s:\n%s", logs)
		}
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var ready map[string]string
		if err := json.NewDecoder(resp.Body).Decode(&ready); err != nil || resp.StatusCode != http.StatusOK ||
			ready["providers"] != "real" {
			t.Errorf("/readyz = %d %v (%v), want 200 with providers real", resp.StatusCode, ready, err)
		}
	})
}
