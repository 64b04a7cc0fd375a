package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
)

func TestServeFlags(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args    []string
		sandbox bool
		err     string
	}{
		{args: nil},
		{args: []string{"--sandbox"}, sandbox: true},
		{args: []string{"-sandbox=true"}, sandbox: true},
		{args: []string{"--sandbox=false"}},
		{args: []string{"--sandbox", "now"}, err: `serve takes no arguments, got "now"`},
		{args: []string{"--fast"}, err: "flag provided but not defined"},
	}
	for _, tt := range tests {
		sandbox, err := serveFlags(tt.args)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("serveFlags(%q) error = %v, want %q", tt.args, err, tt.err)
			}
			continue
		}
		if err != nil || sandbox != tt.sandbox {
			t.Errorf("serveFlags(%q) = %v, %v; want %v", tt.args, sandbox, err, tt.sandbox)
		}
	}
}

func TestSandboxConfigErrorsExitTwo(t *testing.T) {
	t.Parallel()
	key := base64.StdEncoding.EncodeToString(make([]byte, 32))
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"worker in sandbox mode", map[string]string{"DEVPILOT_SANDBOX": "1"}, []string{"worker"}, "a worker cannot run the sandbox"},
		{"--sandbox against DEVPILOT_SANDBOX=0", map[string]string{"DEVPILOT_SANDBOX": "0"}, []string{"serve", "--sandbox"}, "contradicts --sandbox"},
		{"bad DEVPILOT_SANDBOX", map[string]string{"DEVPILOT_SANDBOX": "on"}, []string{"run"}, `DEVPILOT_SANDBOX "on" must be 1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"DEVPILOT_DATABASE_URL": "sqlite:" + t.TempDir() + "/x.db", "DEVPILOT_SECRET_KEY": key}
			for k, v := range tt.env {
				env[k] = v
			}
			code, _, errOut := harness{t: t, env: env}.cli(tt.args...)
			if code != 2 || !strings.Contains(errOut, tt.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Fatalf("exit %d, stderr %q; want 2 and one line containing %q", code, errOut, tt.want)
			}
		})
	}
}

// TestServeSandboxFlag starts serve with and without --sandbox and reads
// /readyz's providers.
func TestServeSandboxFlag(t *testing.T) {
	t.Parallel()
	for _, sandbox := range []bool{true, false} {
		args, want := []string{"serve"}, "real"
		if sandbox {
			args, want = []string{"serve", "--sandbox"}, "sandbox"
		}
		t.Run(want, func(t *testing.T) {
			t.Parallel()
			dataDir := t.TempDir()
			// A run in the same folder hands out its own demo token:
			// serve --sandbox keeps its own file and leaves run's alone.
			runToken := filepath.Join(dataDir, "sandbox-token")
			if err := os.WriteFile(runToken, []byte("dp_the_run_token\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			h := harness{t: t, env: map[string]string{
				"DEVPILOT_DATABASE_URL": sqlstoretest.URL(t, sqlstore.DialectSQLite),
				"DEVPILOT_DATA_DIR":     dataDir,
				"DEVPILOT_HTTP_ADDR":    "127.0.0.1:0",
				"DEVPILOT_SECRET_KEY":   base64.StdEncoding.EncodeToString(make([]byte, 32)),
			}}
			if code, _, errOut := h.cli("migrate"); code != 0 {
				t.Fatalf("migrate: exit %d %s", code, errOut)
			}
			ctx, cancel := context.WithCancel(context.Background())
			logs, stdout := newLogWatch(), newLogWatch()
			exited := make(chan int, 1)
			go func() { exited <- run(ctx, args, h.getenv, stdout, logs) }()
			defer func() {
				cancel()
				if code := <-exited; code != 0 {
					t.Errorf("serve exited with %d:\n%s", code, logs)
				}
			}()
			var base string
			select {
			case base = <-logs.addr:
			case code := <-exited:
				exited <- code
				t.Fatalf("serve exited with %d before listening:\n%s", code, logs)
			case <-time.After(20 * time.Second):
				t.Fatalf("serve did not listen within 20s:\n%s", logs)
			}
			status, body := get(t, base+"/readyz", "")
			var ready map[string]string
			if err := json.Unmarshal(body, &ready); status != 200 || err != nil || ready["providers"] != want {
				t.Fatalf("/readyz = %d %s, want providers %q", status, body, want)
			}
			// The banner follows start-up, which may end after /readyz answers.
			shown := func() bool {
				return strings.Contains(stdout.String(), "SANDBOX MODE") && strings.Contains(logs.String(), "SANDBOX MODE: demo token: dp_")
			}
			if sandbox {
				waitFor(shown, 10*time.Second)
			}
			if got := shown(); got != sandbox {
				t.Errorf("sandbox banner shown: %v, want %v\nstdout: %s\nlogs: %s", got, sandbox, stdout, logs)
			}
			if b, err := os.ReadFile(runToken); err != nil || string(b) != "dp_the_run_token\n" {
				t.Errorf("run's token file is now %q (%v), want it untouched", b, err)
			}
			if b, err := os.ReadFile(filepath.Join(dataDir, "sandbox-token-serve")); sandbox && (err != nil || !strings.HasPrefix(string(b), "dp_")) {
				t.Errorf("serve --sandbox's token file: %q (%v)", b, err)
			}
			if sandbox {
				// It works its own jobs, on its own queue: the periodic
				// maintenance ones run at once.
				db, err := sqlstore.Open(context.Background(), h.env["DEVPILOT_DATABASE_URL"])
				if err != nil {
					t.Fatal(err)
				}
				worked := func() bool {
					var n int
					err := db.Reader.GetContext(context.Background(), &n, "SELECT count(*) FROM river_job WHERE queue = 'sandbox' AND state = 'completed'")
					return err == nil && n > 0
				}
				if !waitFor(worked, 20*time.Second) {
					t.Errorf("serve --sandbox worked no job on its queue:\n%s", logs)
				}
				var queues []string
				if err := db.Reader.SelectContext(context.Background(), &queues, "SELECT DISTINCT queue FROM river_job"); err != nil || len(queues) != 1 || queues[0] != "sandbox" {
					t.Errorf("river_job queues %v (%v), want only sandbox", queues, err)
				}
				db.Close()
			}
			if sandbox && !strings.Contains(stdout.String(), "sandbox-token-serve") {
				t.Errorf("the banner does not name serve's token file:\n%s", stdout)
			}
		})
	}
}
