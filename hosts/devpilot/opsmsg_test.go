package main

import (
	"context"
	"encoding/base64"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
)

// fxDump is what fx's and dig's wrapping of a start-up failure looks like:
// none of it may reach an operator.
var fxDump = []string{"could not build", "failed to build", "reflect", "makeFuncStub", ".go:", "init.func", "OnStart hook", "level=ERROR", `"level":"ERROR"`}

// TestStartupFailuresAreOneLine: every start-up failure of run, serve,
// worker and migrate ends with one line naming the setting to change, and
// nothing of fx's dump is printed.
func TestStartupFailuresAreOneLine(t *testing.T) {
	t.Parallel()
	busy, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() })
	key := base64.StdEncoding.EncodeToString(make([]byte, 32))
	unreachable := "postgres://postgres@127.0.0.1:1/devpilot?sslmode=disable"
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want []string
	}{
		{"run: data directory cannot be created", map[string]string{"DEVPILOT_DATA_DIR": "FILE/data", "DEVPILOT_DATABASE_URL": ""},
			[]string{"run"}, []string{`cannot create the data directory "FILE/data" (DEVPILOT_DATA_DIR): not a directory`}},
		{"serve: default database in a data directory that cannot be created", map[string]string{"DEVPILOT_DATA_DIR": "FILE/data", "DEVPILOT_DATABASE_URL": ""},
			[]string{"serve"}, []string{`cannot create the data directory "FILE/data" (DEVPILOT_DATA_DIR)`}},
		{"migrate: default database in a data directory that cannot be created", map[string]string{"DEVPILOT_DATA_DIR": "FILE/data", "DEVPILOT_DATABASE_URL": ""},
			[]string{"migrate"}, []string{`cannot create the data directory "FILE/data" (DEVPILOT_DATA_DIR)`}},
		{"serve: unreachable database", map[string]string{"DEVPILOT_DATABASE_URL": unreachable},
			[]string{"serve"}, []string{"cannot open the database (DEVPILOT_DATABASE_URL)", "connection refused"}},
		{"worker: unreachable database", map[string]string{"DEVPILOT_DATABASE_URL": unreachable},
			[]string{"worker"}, []string{"cannot open the database (DEVPILOT_DATABASE_URL)", "connection refused"}},
		{"migrate: unreachable database", map[string]string{"DEVPILOT_DATABASE_URL": unreachable},
			[]string{"migrate"}, []string{"cannot open the database (DEVPILOT_DATABASE_URL)", "connection refused"}},
		{"run: bad database URL", map[string]string{"DEVPILOT_DATABASE_URL": "mysql://db/x"},
			[]string{"run"}, []string{"cannot open the database (DEVPILOT_DATABASE_URL)", "unsupported database URL scheme"}},
		{"worker: no secret key", map[string]string{"DEVPILOT_SECRET_KEY": ""},
			[]string{"worker"}, []string{"DEVPILOT_SECRET_KEY is required"}},
		{"run: invalid setting", map[string]string{"DEVPILOT_LOG_LEVEL": "loud", "DEVPILOT_BODY_LIMIT": "-1"},
			[]string{"run"}, []string{"DEVPILOT_LOG_LEVEL", "DEVPILOT_BODY_LIMIT"}},
		{"worker: probe address in use", map[string]string{"DEVPILOT_WORKER_ADDR": busy.Addr().String()},
			[]string{"worker"}, []string{"cannot listen on " + busy.Addr().String() + " (DEVPILOT_WORKER_ADDR): the address is already in use"}},
		{"serve: address in use", map[string]string{"DEVPILOT_HTTP_ADDR": busy.Addr().String()},
			[]string{"serve"}, []string{"cannot listen on " + busy.Addr().String() + " (DEVPILOT_HTTP_ADDR): the address is already in use"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			file := filepath.Join(dir, "file")
			if err := os.WriteFile(file, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			env := map[string]string{
				"DEVPILOT_DATABASE_URL": "sqlite:" + filepath.Join(dir, "x.db"),
				"DEVPILOT_DATA_DIR":     filepath.Join(dir, "data"),
				"DEVPILOT_HTTP_ADDR":    "127.0.0.1:0",
				"DEVPILOT_WORKER_ADDR":  "127.0.0.1:0",
				"DEVPILOT_SECRET_KEY":   key,
			}
			for k, v := range tt.env {
				env[k] = strings.ReplaceAll(v, "FILE", file)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			defer cancel()
			out, stderr := newLogWatch(), newLogWatch()
			code := run(ctx, tt.args, harness{t: t, env: env}.getenv, out, stderr)
			errOut := strings.TrimSpace(stderr.String())
			lines := strings.Split(errOut, "\n")
			last := lines[len(lines)-1]
			if code == 0 || ctx.Err() != nil {
				t.Fatalf("exit %d (timed out: %v), want a failure:\n%s", code, ctx.Err() != nil, errOut)
			}
			if !strings.HasPrefix(last, "devpilot: ") {
				t.Fatalf("the last line is not devpilot's error: %q\n%s", last, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(last, strings.ReplaceAll(w, "FILE", file)) {
					t.Errorf("last line %q, want it to contain %q", last, w)
				}
			}
			for _, d := range fxDump {
				if strings.Contains(errOut, d) {
					t.Errorf("stderr has fx's %q:\n%s", d, errOut)
				}
			}
		})
	}
}

// TestMigrateSaysWhatItApplied: migrate names what it applied, devpilot's
// and River's migrations, then says the database is up to date; River's
// own "Applied migration" lines are at debug.
func TestMigrateSaysWhatItApplied(t *testing.T) {
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			h := harness{t: t, env: map[string]string{"DEVPILOT_DATABASE_URL": sqlstoretest.URL(t, d)}}
			code, out, errOut := h.cli("migrate")
			if code != 0 || !strings.HasPrefix(out, "applied ") || !strings.Contains(out, " migrations: 00001_") ||
				!strings.Contains(out, "river 0") || strings.Count(out, "\n") != 1 {
				t.Fatalf("first migrate: exit %d, stdout %q, stderr %q", code, out, errOut)
			}
			if strings.Contains(errOut, "Applied migration") {
				t.Errorf("River's migration lines at info:\n%s", errOut)
			}
			if code, out, errOut := h.cli("migrate"); code != 0 || out != "database is up to date\n" {
				t.Fatalf("second migrate: exit %d, stdout %q, stderr %q", code, out, errOut)
			}
		})
	}
}

// TestRunLogsRiverMigrationsAtDebug: the first run says once what it
// applied, not River's eight lines.
func TestRunLogsRiverMigrationsAtDebug(t *testing.T) {
	t.Parallel()
	h := harness{t: t, env: map[string]string{"DEVPILOT_DATA_DIR": t.TempDir(), "DEVPILOT_HTTP_ADDR": "127.0.0.1:0", "DEVPILOT_SANDBOX": "0"}}
	ctx, cancel := context.WithCancel(context.Background())
	logs, stdout := newLogWatch(), newLogWatch()
	exited := make(chan int, 1)
	go func() { exited <- run(ctx, []string{"run"}, h.getenv, stdout, logs) }()
	select {
	case <-logs.addr:
	case code := <-exited:
		t.Fatalf("run exited with %d:\n%s", code, logs)
	case <-time.After(30 * time.Second):
		t.Fatalf("run did not listen within 30s:\n%s", logs)
	}
	cancel()
	if code := <-exited; code != 0 {
		t.Errorf("run exited with %d:\n%s", code, logs)
	}
	got := logs.String()
	if strings.Contains(got, "Applied migration") || strings.Count(got, "msg=\"applied ") != 1 {
		t.Errorf("want one line saying what was applied, and none of River's:\n%s", got)
	}
}

// TestWorkerWaitsForMigrations: a worker started on an unmigrated
// database says what serve says ("N migrations pending: run devpilot
// migrate") once, answers /readyz 503, and works jobs once migrate ran.
func TestWorkerWaitsForMigrations(t *testing.T) {
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			probe, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := probe.Addr().String()
			probe.Close()
			h := harness{t: t, env: map[string]string{
				"DEVPILOT_DATABASE_URL": sqlstoretest.URL(t, d),
				"DEVPILOT_SECRET_KEY":   base64.StdEncoding.EncodeToString(make([]byte, 32)),
				"DEVPILOT_WORKER_ADDR":  addr,
			}}
			ctx, cancel := context.WithCancel(context.Background())
			logs, stdout := newLogWatch(), newLogWatch()
			exited := make(chan int, 1)
			go func() { exited <- run(ctx, []string{"worker"}, h.getenv, stdout, logs) }()
			waitLog := func(what string) {
				t.Helper()
				deadline := time.After(30 * time.Second)
				for !strings.Contains(logs.String(), what) {
					select {
					case code := <-exited:
						t.Fatalf("worker exited with %d before logging %q:\n%s", code, what, logs)
					case <-deadline:
						cancel()
						t.Fatalf("worker did not log %q within 30s:\n%s", what, logs)
					case <-time.After(50 * time.Millisecond):
					}
				}
			}
			waitLog("migrations pending: run devpilot migrate")
			waitLog("listening on")
			status, body := get(t, "http://"+addr+"/readyz", "")
			if status != 503 || !strings.Contains(string(body), "migrations pending: run devpilot migrate") {
				t.Errorf("/readyz before migrate = %d %s", status, body)
			}
			if code, _, errOut := h.cli("migrate"); code != 0 {
				t.Fatalf("migrate: exit %d %s", code, errOut)
			}
			waitLog("the database is migrated: working jobs")
			if status, body := get(t, "http://"+addr+"/readyz", ""); status != 200 {
				t.Errorf("/readyz after migrate = %d %s", status, body)
			}
			cancel()
			if code := <-exited; code != 0 {
				t.Errorf("worker exited with %d:\n%s", code, logs)
			}
			got := logs.String()
			if n := strings.Count(got, "run devpilot migrate (the worker"); n != 1 {
				t.Errorf("the pending migrations were said %d times, want once:\n%s", n, got)
			}
			for _, bad := range []string{"river_queue", `"level":"ERROR"`} {
				if strings.Contains(got, bad) {
					t.Errorf("worker log has %q:\n%s", bad, got)
				}
			}
		})
	}
}
