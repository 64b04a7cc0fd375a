package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/app"
)

func TestMain(m *testing.M) { sqlstoretest.Main(m) }

// logWatch is a goroutine-safe writer that remembers what was written and
// hands out the first match of listenLine.
type logWatch struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	addr chan string
	sent bool
}

func newLogWatch() *logWatch { return &logWatch{addr: make(chan string, 1)} }

// logWatchKeep bounds what a logWatch remembers, for long benchmark runs.
const logWatchKeep = 1 << 20

func (w *logWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.buf.Len() < logWatchKeep {
		w.buf.Write(p)
	}
	if !w.sent {
		if m := listenLine.FindStringSubmatch(w.buf.String()); m != nil {
			w.sent = true
			w.addr <- m[1]
		}
	}
	return len(p), nil
}

func (w *logWatch) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

type harness struct {
	t   testing.TB
	env map[string]string
}

func (h harness) getenv(k string) string { return h.env[k] }

// cli runs one command and returns its exit code, stdout and stderr.
func (h harness) cli(args ...string) (int, string, string) {
	h.t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, h.getenv, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestRunServesAuthenticatedRequests(t *testing.T) {
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			h := harness{t: t, env: map[string]string{
				"DEVPILOT_DATABASE_URL": sqlstoretest.URL(t, d),
				"DEVPILOT_DATA_DIR":     t.TempDir(),
				"DEVPILOT_HTTP_ADDR":    "127.0.0.1:0",
				// Long enough on PostgreSQL that only the revocation watch can
				// end the token's use in time.
				app.EnvAuthCacheTTL: map[sqlstore.Dialect]string{sqlstore.DialectSQLite: "1s", sqlstore.DialectPostgres: "1m"}[d],
			}}
			if code, _, errOut := h.cli("token", "list"); code != 1 || !strings.Contains(errOut, "devpilot migrate") {
				t.Fatalf("token list on an unmigrated database: exit %d, %q", code, errOut)
			}

			base, stdout, stop := h.start()
			defer stop()

			if status, _ := get(t, base+"/readyz", ""); status != http.StatusOK {
				t.Fatalf("/readyz = %d", status)
			}
			code, token, errOut := h.cli("token", "create", "--email", "Ada@Example.com", "--org", "acme", "--role", "admin", "--name", "laptop")
			token = strings.TrimSpace(token)
			if code != 0 || !strings.HasPrefix(token, "dp_") {
				t.Fatalf("token create: exit %d, stdout %q, stderr %q", code, token, errOut)
			}

			status, body := get(t, base+"/api/v1/me", token)
			var me struct {
				User struct{ ID, Email, Role string }
				Org  struct{ Name string }
			}
			if err := json.Unmarshal(body, &me); status != http.StatusOK || err != nil {
				t.Fatalf("/api/v1/me = %d %s (%v)", status, body, err)
			}
			if me.User.Email != "ada@example.com" || me.User.Role != "admin" || me.Org.Name != "acme" {
				t.Fatalf("/api/v1/me = %s", body)
			}
			if status, body := get(t, base+"/api/v1/me", ""); status != http.StatusUnauthorized || !bytes.Contains(body, []byte(`"code":"unauthenticated"`)) {
				t.Fatalf("/api/v1/me without a token = %d %s", status, body)
			}

			code, list, _ := h.cli("token", "list", "--org", "acme")
			if code != 0 || !strings.Contains(list, "ada@example.com") || !strings.Contains(list, "active") || strings.Contains(list, token) {
				t.Fatalf("token list: exit %d\n%s", code, list)
			}
			id := strings.Fields(strings.Split(list, "\n")[1])[0]
			code, out, errOut := h.cli("token", "revoke", id)
			wantSaid := map[sqlstore.Dialect]string{
				sqlstore.DialectSQLite:   "running servers stop accepting it within 1s",
				sqlstore.DialectPostgres: "running servers stop accepting it at once, within 1m0s at the latest",
			}[d]
			if code != 0 || !strings.Contains(out, wantSaid) {
				t.Fatalf("token revoke: exit %d %q %s", code, out, errOut)
			}
			revoked := time.Now()
			if code, _, errOut := h.cli("token", "revoke", id); code != 2 || !strings.Contains(errOut, "revoked") {
				t.Fatalf("second revoke: exit %d %q, want 2 and a conflict", code, errOut)
			}
			// The server trusted the token it verified for up to 1s on SQLite;
			// on PostgreSQL it heard of the revocation.
			for {
				status, _ := get(t, base+"/api/v1/me", token)
				if status == http.StatusUnauthorized {
					break
				}
				if status != http.StatusOK || time.Since(revoked) > 3*time.Second {
					t.Fatalf("/api/v1/me with a token revoked %s ago = %d", time.Since(revoked), status)
				}
				time.Sleep(50 * time.Millisecond)
			}
			if !strings.Contains(stdout.String(), "token create --email") {
				t.Errorf("run did not say how to create a token: %q", stdout.String())
			}
		})
	}
}

func TestMigrateThenToken(t *testing.T) {
	t.Parallel()
	h := harness{t: t, env: map[string]string{"DEVPILOT_DATABASE_URL": sqlstoretest.URL(t, sqlstore.DialectSQLite)}}
	for i := range 2 {
		want := map[int]string{0: "applied ", 1: "database is up to date"}[i]
		if code, out, errOut := h.cli("migrate"); code != 0 || !strings.HasPrefix(out, want) {
			t.Fatalf("migrate: exit %d %q %q, want %q", code, out, errOut, want)
		}
	}
	if code, _, errOut := h.cli("token", "create", "--email", "bob@example.com", "--org", "acme"); code != 0 {
		t.Fatalf("token create: exit %d %s", code, errOut)
	}
	if code, _, errOut := h.cli("token", "create", "--email", "bob@example.com", "--org", "other"); code != 2 || !strings.Contains(errOut, "another organisation") {
		t.Fatalf("token for a user of another org: exit %d %q", code, errOut)
	}
	if code, _, errOut := h.cli("token", "create", "--email", "bob@example.com", "--org", "acme", "--scopes", "read,cloud:write"); code != 0 {
		t.Fatalf("token create --scopes: exit %d %s", code, errOut)
	}
	if code, _, errOut := h.cli("token", "create", "--email", "bob@example.com", "--org", "acme", "--scopes", "read root"); code != 2 || !strings.Contains(errOut, "scopes[1]") {
		t.Fatalf("token create with an unknown scope: exit %d %q", code, errOut)
	}
}

func TestBadInvocationsExitTwoWithOneLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"unknown command", nil, []string{"launch"}, `unknown command "launch"`},
		{"stray argument", nil, []string{"migrate", "now"}, "takes no arguments"},
		{"unknown flag", nil, []string{"run", "--fast"}, "flag provided but not defined"},
		{"token without subcommand", nil, []string{"token"}, "create, list or revoke"},
		{"token create without org", nil, []string{"token", "create", "--email", "a@b.c"}, "--email and --org"},
		{"bad role", nil, []string{"token", "create", "--email", "a@b.c", "--org", "x", "--role", "root"}, "role"},
		{"bad ttl", nil, []string{"token", "create", "--email", "a@b.c", "--org", "x", "--ttl", "soon"}, "invalid value"},
		{"revoke without id", nil, []string{"token", "revoke"}, "exactly one token id"},
		{"bad address", map[string]string{"DEVPILOT_HTTP_ADDR": "nowhere"}, []string{"run"}, "DEVPILOT_HTTP_ADDR"},
		{"serve without key", nil, []string{"serve"}, "DEVPILOT_SECRET_KEY is required"},
		{"bad database url", map[string]string{"DEVPILOT_DATABASE_URL": "mysql://x"}, []string{"migrate"}, "DEVPILOT_DATABASE_URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{"DEVPILOT_DATABASE_URL": "sqlite:" + t.TempDir() + "/x.db"}
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

func TestVersionAndUsage(t *testing.T) {
	t.Parallel()
	h := harness{t: t}
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		if code, out, errOut := h.cli(args...); code != 0 || !strings.HasPrefix(out, "devpilot ") || errOut != "" {
			t.Errorf("%q: exit %d %q %q", args, code, out, errOut)
		}
	}
	if code, _, errOut := h.cli(); code != 2 || !strings.Contains(errOut, "usage: devpilot") {
		t.Fatalf("no command: %d %q", code, errOut)
	}
}

func TestHelpOfEveryCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args  []string
		usage string
		flags []string
	}{
		{[]string{"run", "--help"}, "usage: devpilot run", nil},
		{[]string{"worker", "-h"}, "usage: devpilot worker", nil},
		{[]string{"serve", "--help"}, "usage: devpilot serve", []string{"-sandbox"}},
		{[]string{"serve", "-help"}, "usage: devpilot serve", []string{"-sandbox"}},
		{[]string{"migrate", "--help"}, "usage: devpilot migrate", nil},
		{[]string{"version", "--help"}, "usage: devpilot version", nil},
		{[]string{"token", "--help"}, "usage: devpilot token", nil},
		{[]string{"token", "create", "--help"}, "usage: devpilot token create", []string{"-email", "-org", "-role", "-name", "-ttl"}},
		{[]string{"token", "create", "--email", "a@b.c", "-h"}, "usage: devpilot token create", []string{"-email"}},
		{[]string{"token", "list", "--help"}, "usage: devpilot token list", []string{"-org", "-email"}},
		{[]string{"token", "revoke", "--help"}, "usage: devpilot token revoke ID", nil},
		{[]string{"help", "serve"}, "usage: devpilot serve", []string{"-sandbox"}},
		{[]string{"help", "eval"}, "usage: devpilot eval", nil},
		{[]string{"--help"}, "usage: devpilot <command>", nil},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			// No database: help must not open one.
			h := harness{t: t, env: map[string]string{"DEVPILOT_DATABASE_URL": "mysql://nowhere"}}
			code, out, errOut := h.cli(tt.args...)
			if code != 0 || errOut != "" || !strings.HasPrefix(out, tt.usage) {
				t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and %q", code, out, errOut, tt.usage)
			}
			for _, f := range tt.flags {
				if !strings.Contains(out, "  "+f) {
					t.Errorf("help does not list %s:\n%s", f, out)
				}
			}
		})
	}
}

func TestVersionOfDevelopmentBuild(t *testing.T) {
	t.Parallel()
	settings := func(kv ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	rev := "0123456789abcdef0123456789abcdef01234567"
	tests := []struct {
		name     string
		version  string
		settings []debug.BuildSetting
		want     string
	}{
		{"devel with VCS", "(devel)", settings("vcs.revision", rev, "vcs.time", "2025-01-02T03:04:05Z", "vcs.modified", "false"),
			"devel (commit 0123456789ab, 2025-01-02T03:04:05Z)"},
		{"devel, modified", "(devel)", settings("vcs.revision", rev, "vcs.time", "2025-01-02T03:04:05Z", "vcs.modified", "true"),
			"devel (commit 0123456789ab, 2025-01-02T03:04:05Z, with uncommitted changes)"},
		{"devel without VCS", "(devel)", nil, "devel (no VCS information: built outside a git checkout, or with -buildvcs=false)"},
		{"release", "v1.2.3", settings("vcs.revision", rev), "v1.2.3 0123456789ab"},
		{"pseudo-version", "v0.0.0-20250102030405-0123456789ab+dirty", settings("vcs.revision", rev), "v0.0.0-20250102030405-0123456789ab+dirty"},
	}
	for _, tt := range tests {
		info := &debug.BuildInfo{Main: debug.Module{Path: "github.com/devpilot/devpilot", Version: tt.version}, Settings: tt.settings}
		if got := versionOf(info); got != tt.want {
			t.Errorf("%s: versionOf = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestRevokeUnknownToken(t *testing.T) {
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			h := harness{t: t, env: map[string]string{"DEVPILOT_DATABASE_URL": sqlstoretest.URL(t, d)}}
			if code, _, errOut := h.cli("migrate"); code != 0 {
				t.Fatalf("migrate: exit %d %s", code, errOut)
			}
			for _, id := range []string{"0193a0b0-0000-7000-8000-000000000000", "nonsense"} {
				code, out, errOut := h.cli("token", "revoke", id)
				if code != 2 || out != "" || !strings.Contains(errOut, "no token has the id") ||
					strings.Contains(errOut, "sql") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
					t.Errorf("revoke %s: exit %d, stdout %q, stderr %q; want 2 and one clear line", id, code, out, errOut)
				}
			}
		})
	}
}

func TestServeFailsOnBusyPortAtOnce(t *testing.T) {
	t.Parallel()
	busy, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() })
	key := base64.StdEncoding.EncodeToString(make([]byte, 32))
	for _, args := range [][]string{{"run"}, {"serve", "--sandbox"}, {"serve"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			db := filepath.Join(dir, "devpilot.db")
			h := harness{t: t, env: map[string]string{
				"DEVPILOT_DATABASE_URL": "sqlite:" + db,
				"DEVPILOT_DATA_DIR":     dir,
				"DEVPILOT_HTTP_ADDR":    busy.Addr().String(),
				"DEVPILOT_SECRET_KEY":   key,
			}}
			code, out, errOut := h.cli(args...)
			if code != 1 || strings.Count(errOut, "already in use") != 1 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 ||
				!strings.Contains(errOut, busy.Addr().String()) || !strings.Contains(errOut, "DEVPILOT_HTTP_ADDR") {
				t.Fatalf("on a busy port: exit %d, stderr %q; want 1 and one line naming the address", code, errOut)
			}
			if out != "" {
				t.Errorf("stdout %q, want nothing", out)
			}
			// Nothing ran before the check: no database, no sandbox token.
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("files created before the port was checked: %v", entries)
			}
		})
	}
}

func TestRunRefusesAKeyFileOthersMayRead(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := filepath.Join(dir, "secret.key")
	if err := os.WriteFile(key, []byte(base64.StdEncoding.EncodeToString(make([]byte, 32))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(key, 0o644); err != nil {
		t.Fatal(err)
	}
	h := harness{t: t, env: map[string]string{
		"DEVPILOT_DATABASE_URL": "sqlite:" + filepath.Join(dir, "devpilot.db"),
		"DEVPILOT_DATA_DIR":     dir,
		"DEVPILOT_HTTP_ADDR":    "127.0.0.1:0",
	}}
	// Bounded: a run that takes the key starts serving instead of failing.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var out, stderr bytes.Buffer
	code := run(ctx, []string{"run"}, h.getenv, &out, &stderr)
	errOut := stderr.String()
	if code == 0 || !strings.Contains(errOut, "secret key file "+key+" has mode 0644") {
		t.Fatalf("run with a 0644 key file: exit %d %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "devpilot.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the database was opened before the key file was refused: %v", err)
	}
}

// start runs `devpilot run` in the background and returns its base URL, its
// standard output, and a function that stops it and checks it exited cleanly.
func (h harness) start() (string, *logWatch, func()) {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	logs, stdout := newLogWatch(), newLogWatch()
	exited := make(chan int, 1)
	go func() { exited <- run(ctx, []string{"run"}, h.getenv, stdout, logs) }()
	select {
	case base := <-logs.addr:
		return base, stdout, func() {
			cancel()
			if code := <-exited; code != 0 {
				h.t.Errorf("run exited with %d:\n%s", code, logs)
			}
		}
	case code := <-exited:
		h.t.Fatalf("run exited with %d before listening:\n%s", code, logs)
	case <-time.After(20 * time.Second):
		h.t.Fatalf("run did not listen within 20s:\n%s", logs)
	}
	cancel()
	return "", nil, nil
}

func get(t *testing.T, url, token string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, b.Bytes()
}
