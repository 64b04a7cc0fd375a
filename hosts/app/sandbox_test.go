package app_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/hosts/app"
	"github.com/devpilot/devpilot/hosts/sandbox"
)

func TestSandboxConfigRules(t *testing.T) {
	t.Parallel()
	type rule struct {
		name    string
		mode    app.Mode
		vars    map[string]string
		flag    bool
		on      bool
		reason  string // in SandboxReason
		errWant string // a Load error containing this
	}
	serveKey := map[string]string{app.EnvSecretKey: validKey}
	with := func(base map[string]string, kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	rules := []rule{
		{name: "run without provider settings", mode: app.ModeRun, on: true, reason: "no provider settings"},
		{name: "run forced on", mode: app.ModeRun, vars: with(nil, app.EnvSandbox, "1", app.EnvOpenAIKey, "sk-real"), on: true,
			reason: app.EnvSandbox + "=1 (ignoring " + app.EnvOpenAIKey + ")"},
		{name: "run forced off", mode: app.ModeRun, vars: with(nil, app.EnvSandbox, "0"), reason: app.EnvSandbox + "=0"},
		{name: "run with a bad DEVPILOT_SANDBOX", mode: app.ModeRun, vars: with(nil, app.EnvSandbox, "yes"), errWant: app.EnvSandbox + ` "yes" must be 1`},
		{name: "run with a blank DEVPILOT_SANDBOX", mode: app.ModeRun, vars: with(nil, app.EnvSandbox, " "), on: true},
		{name: "serve without the flag", mode: app.ModeServe, vars: serveKey, reason: "only with --sandbox"},
		{name: "serve without the flag and without providers", mode: app.ModeServe, vars: serveKey},
		{name: "serve --sandbox", mode: app.ModeServe, vars: serveKey, flag: true, on: true, reason: "--sandbox"},
		{name: "serve --sandbox with providers", mode: app.ModeServe, vars: with(serveKey, app.EnvOpenAIKey, "sk-real"), flag: true, on: true,
			reason: "--sandbox (ignoring " + app.EnvOpenAIKey + ")"},
		{name: "serve forced on", mode: app.ModeServe, vars: with(serveKey, app.EnvSandbox, "1"), on: true},
		{name: "serve --sandbox against DEVPILOT_SANDBOX=0", mode: app.ModeServe, vars: with(serveKey, app.EnvSandbox, "0"), flag: true,
			errWant: app.EnvSandbox + " is 0, which contradicts --sandbox"},
		{name: "worker", mode: app.ModeWorker, vars: serveKey},
		{name: "worker forced off", mode: app.ModeWorker, vars: with(serveKey, app.EnvSandbox, "0")},
		{name: "worker forced on", mode: app.ModeWorker, vars: with(serveKey, app.EnvSandbox, "1"), errWant: app.EnvSandbox + " is 1, but a worker cannot run the sandbox"},
		{name: "token ignores DEVPILOT_SANDBOX=1", mode: app.ModeToken, vars: with(nil, app.EnvSandbox, "1")},
		{name: "migrate", mode: app.ModeMigrate},
	}
	for _, name := range app.ProviderVariables() {
		vars := map[string]string{name: "http://127.0.0.1:9"}
		if name == app.EnvGitHubClientID || name == app.EnvGitHubSecret {
			vars = map[string]string{app.EnvGitHubClientID: "Iv1.x", app.EnvGitHubSecret: "s"}
		}
		rules = append(rules, rule{name: "run with " + name, mode: app.ModeRun, vars: vars, reason: " is set"})
		if name != app.EnvGitHubSecret {
			rules[len(rules)-1].reason = name + " is set"
		}
		rules = append(rules, rule{name: "run with " + name + " forced on", mode: app.ModeRun, vars: with(vars, app.EnvSandbox, "1"), on: true})
	}
	for _, r := range rules {
		t.Run(r.name, func(t *testing.T) {
			t.Parallel()
			var opts []app.LoadOption
			if r.flag {
				opts = append(opts, app.WithSandboxFlag())
			}
			cfg, err := app.Load(r.mode, env(r.vars), opts...)
			if r.errWant != "" {
				if err == nil || !strings.Contains(err.Error(), r.errWant) {
					t.Fatalf("Load error = %v, want one containing %q", err, r.errWant)
				}
				return
			}
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if cfg.Sandbox != r.on || !strings.Contains(cfg.SandboxReason, r.reason) {
				t.Errorf("Sandbox = %v (%q), want %v (%q)", cfg.Sandbox, cfg.SandboxReason, r.on, r.reason)
			}
		})
	}
}

func TestOptionsRefuseAnUnstartedSandbox(t *testing.T) {
	t.Parallel()
	cfg, err := app.Load(app.ModeRun, env(map[string]string{app.EnvDataDir: t.TempDir(), app.EnvHTTPAddr: "127.0.0.1:0"}))
	if err != nil || !cfg.Sandbox {
		t.Fatalf("Load: %v, sandbox %v", err, cfg.Sandbox)
	}
	fxApp := fx.New(app.Options(cfg, app.NewLogger(cfg, io.Discard)))
	if err := fxApp.Err(); err == nil || !strings.Contains(err.Error(), "sandbox.Start") {
		t.Fatalf("fx.New error = %v, want one naming sandbox.Start", err)
	}
}

// sandboxLogs keeps what the app logged and hands out the listening address.
type sandboxLogs struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	addr chan string
	sent bool
}

var sandboxListening = regexp.MustCompile(`listening on (http://[^\s"]+)`)

func (w *sandboxLogs) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if m := sandboxListening.FindSubmatch(p); m != nil && !w.sent {
		w.sent = true
		w.addr <- string(m[1])
	}
	return len(p), nil
}

func (w *sandboxLogs) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// sandboxHost is one start of `devpilot run` with no provider settings.
type sandboxHost struct {
	t    *testing.T
	base string
	sb   *sandbox.Sandbox
	logs *sandboxLogs
	stop func()
	// id is the running app's identity service, to issue tokens with.
	id *identity.Service
}

// startSandbox starts run mode on dataDir (and dbURL, "" for the embedded
// default) with sandbox providers.
// startSandboxOn is startSandbox on a fresh data directory and, for
// PostgreSQL, a fresh database of the dialect d.
func startSandboxOn(t *testing.T, d sqlstore.Dialect) *sandboxHost {
	t.Helper()
	dbURL := ""
	if d == sqlstore.DialectPostgres {
		dbURL = sqlstoretest.URL(t, d)
	}
	return startSandbox(t, t.TempDir(), dbURL)
}

func startSandbox(t *testing.T, dataDir, dbURL string) *sandboxHost {
	t.Helper()
	return startSandboxWith(t, dataDir, dbURL, nil)
}

// startSandboxWith is startSandbox with extra added to the environment.
func startSandboxWith(t *testing.T, dataDir, dbURL string, extra map[string]string) *sandboxHost {
	t.Helper()
	skipShort(t)
	vars := map[string]string{app.EnvDataDir: dataDir, app.EnvHTTPAddr: "127.0.0.1:0"}
	if dbURL != "" {
		vars[app.EnvDatabaseURL] = dbURL
	}
	maps.Copy(vars, extra)
	if vars[app.EnvDatabaseURL] == "" && vars[app.EnvDataDir] == dataDir {
		seedMigratedSQLite(t, dataDir)
	}
	cfg, err := app.Load(app.ModeRun, env(vars))
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Sandbox {
		t.Fatalf("sandbox is off: %s", cfg.SandboxReason)
	}
	h := &sandboxHost{t: t, logs: &sandboxLogs{addr: make(chan string, 1)}}
	logger := app.NewLogger(cfg, h.logs)
	cfg, sb, err := sandbox.Start(cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	h.sb = sb
	opts := []fx.Option{app.Options(cfg, logger), fx.Populate(&h.id)}
	var gitHubGone atomic.Bool
	if extra[sandboxWithoutGitHub] != "" {
		opts = append(opts, unconfiguredGitHubOnce(&gitHubGone))
	}
	fxApp := fx.New(opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := fxApp.Start(ctx); err != nil {
		sb.Close()
		t.Fatalf("start: %v\n%s", err, h.logs)
	}
	gitHubGone.Store(true)
	var once sync.Once
	h.stop = func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := fxApp.Stop(ctx); err != nil {
				t.Errorf("stop: %v", err)
			}
			sb.Close()
		})
	}
	t.Cleanup(h.stop)
	select {
	case h.base = <-h.logs.addr:
	case <-time.After(10 * time.Second):
		t.Fatalf("no listening line:\n%s", h.logs)
	}
	if h.base != sb.PublicURL() {
		t.Errorf("listening on %s, but the public URL is %s", h.base, sb.PublicURL())
	}
	return h
}

// get calls the API with the token and decodes a 200 JSON answer into out.
func (h *sandboxHost) get(token, path string, out any) {
	h.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, h.base+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		h.t.Fatalf("GET %s = %d %s", path, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		h.t.Fatalf("GET %s: %v in %s", path, err, body)
	}
}

type sandboxAccount struct {
	ID, Name, Region, Status string
}

type sandboxRepo struct {
	ID         string `json:"id"`
	FullName   string `json:"full_name"`
	ProviderID any    `json:"provider_id"`
}

// checkSeed checks what a start seeded and returns the token, the cloud
// account's id and the repositories' ids.
func (h *sandboxHost) checkSeed() (token, accountID string, repoIDs []string) {
	t := h.t
	t.Helper()
	var ready map[string]string
	h.get("", "/readyz", &ready)
	if ready["status"] != "ready" || ready["providers"] != "sandbox" {
		t.Errorf("/readyz = %v, want ready with providers sandbox", ready)
	}

	file := filepath.Join(filepath.Dir(h.sb.TokenFile()), sandbox.TokenFileName)
	if file != h.sb.TokenFile() {
		t.Errorf("token file %s, want %s", h.sb.TokenFile(), file)
	}
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	raw, _ := os.ReadFile(file)
	token = strings.TrimSpace(string(raw))
	if !strings.HasPrefix(token, "dp_") || token != h.sb.Token() {
		t.Fatalf("token file holds %q, the sandbox says %q", token, h.sb.Token())
	}
	var me struct {
		User struct{ Email, Role string }
		Org  struct{ Name string }
	}
	h.get(token, "/api/v1/me", &me)
	if me.User.Email != sandbox.Email || me.User.Role != "admin" || me.Org.Name != sandbox.Org {
		t.Errorf("/api/v1/me = %+v", me)
	}
	startLog := h.logs.String()
	for _, want := range []string{"level=WARN msg=\"SANDBOX MODE: demo token: " + token, "token file: " + file,
		"webhook secret: " + sandbox.WebhookSecret, "to use real providers"} {
		if !strings.Contains(startLog, want) {
			t.Errorf("the start banner lacks %q:\n%s", want, startLog)
		}
	}

	var accounts struct{ Items []sandboxAccount }
	h.get(token, "/cloud/accounts", &accounts)
	if len(accounts.Items) != 1 || accounts.Items[0].Name != sandbox.CloudAccount || accounts.Items[0].Status != "ok" ||
		accounts.Items[0].Region != sandbox.AWSRegion || accounts.Items[0].ID != h.sb.CloudAccountID() {
		t.Fatalf("/cloud/accounts = %+v, want one ok %s (%s)", accounts.Items, sandbox.CloudAccount, h.sb.CloudAccountID())
	}
	accountID = accounts.Items[0].ID
	q := "?account_id=" + url.QueryEscape(accountID)

	var clusters struct {
		Items []struct{ Name string }
	}
	h.get(token, "/infrastructure/containers/clusters"+q, &clusters)
	var names []string
	for _, c := range clusters.Items {
		names = append(names, c.Name)
	}
	sort.Strings(names)
	if !slices.Equal(names, []string{"production", "staging"}) {
		t.Errorf("clusters %v, want production and staging", names)
	}
	var services struct {
		Items []struct {
			Name         string
			DesiredCount int `json:"desired_count"`
			RunningCount int `json:"running_count"`
		}
	}
	h.get(token, "/infrastructure/containers/clusters/production/services"+q, &services)
	got := map[string]int{}
	for _, s := range services.Items {
		got[s.Name] = s.RunningCount
	}
	if len(got) != 3 || got["checkout"] != 2 || got["search"] != 3 || got["payments"] != 2 {
		t.Errorf("production services %v", got)
	}
	var logs struct {
		Items []struct{ Message, Stream string }
	}
	h.get(token, "/infrastructure/containers/services/checkout/logs"+q+"&cluster=staging", &logs)
	if len(logs.Items) == 0 || !strings.HasPrefix(logs.Items[0].Stream, "ecs/checkout/") {
		t.Errorf("staging checkout logs %+v", logs.Items)
	}
	var functions struct {
		Items []struct{ Name string }
	}
	h.get(token, "/infrastructure/serverless/functions"+q, &functions)
	if len(functions.Items) != 2 {
		t.Errorf("functions %+v", functions.Items)
	}
	var apps struct {
		Items []struct{ ID, Name string }
	}
	h.get(token, "/deployments/apps"+q, &apps)
	if len(apps.Items) != 1 || apps.Items[0].ID != sandbox.AmplifyAppID || apps.Items[0].Name != "storefront" {
		t.Errorf("apps %+v", apps.Items)
	}

	today := time.Now().UTC()
	var costs struct {
		Currency string
		Total    json.Number
		Periods  []struct {
			Groups []struct {
				Key    string
				Amount json.Number
			}
		}
	}
	h.get(token, "/cloud/costs"+q+"&group_by=SERVICE&start_date="+today.AddDate(0, 0, -29).Format(time.DateOnly)+
		"&end_date="+today.Format(time.DateOnly), &costs)
	if costs.Currency != "USD" || costs.Total == "" || costs.Total == "0" || len(costs.Periods) == 0 || len(costs.Periods[0].Groups) != 6 {
		t.Errorf("costs %+v", costs)
	}

	var repos struct{ Items []sandboxRepo }
	h.get(token, "/scm/repos", &repos)
	var full []string
	for _, r := range repos.Items {
		full = append(full, r.FullName)
		repoIDs = append(repoIDs, r.ID)
	}
	sort.Strings(full)
	sort.Strings(repoIDs)
	want := []string{"demo/checkout-api", "demo/infra", "demo/storefront"}
	if !slices.Equal(full, want) {
		t.Errorf("repos %v, want %v", full, want)
	}
	for name := range sandbox.Repos() {
		if !slices.Contains(full, name) {
			t.Errorf("sandbox.Repos names %s, which is not connected", name)
		}
	}
	if len(repos.Items) > 0 {
		var commits struct{ Items []json.RawMessage }
		h.get(token, "/scm/repos/"+repos.Items[0].ID+"/commits", &commits)
		if len(commits.Items) == 0 {
			t.Errorf("no commits in %s", repos.Items[0].FullName)
		}
	}
	return token, accountID, repoIDs
}

// chat asks the assistant and returns the names of the SSE events and the
// tool calls' names.
func (h *sandboxHost) chat(token, message string) (events, tools []string) {
	h.t.Helper()
	body, _ := json.Marshal(map[string]any{"message": message})
	req, _ := http.NewRequest(http.MethodPost, h.base+"/api/v1/agent/chat", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		raw, _ := io.ReadAll(resp.Body)
		h.t.Fatalf("chat = %d %s", resp.StatusCode, raw)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	name := ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = line[len("event: "):]
			events = append(events, name)
		case strings.HasPrefix(line, "data: ") && name == "tool_call":
			var d struct {
				Name string `json:"name"`
			}
			_ = json.Unmarshal([]byte(line[len("data: "):]), &d)
			tools = append(tools, d.Name)
		}
	}
	return events, tools
}

func TestSandboxRun(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			dataDir := t.TempDir()
			dbURL := "" // SQLite: the embedded default under the data directory
			if d == sqlstore.DialectPostgres {
				dbURL = sqlstoretest.URL(t, d)
			}

			first := startSandbox(t, dataDir, dbURL)
			token, accountID, repoIDs := first.checkSeed()

			events, tools := first.chat(token, "what runs in production?")
			if !slices.Contains(events, "tool_call") || !slices.Contains(events, "done") {
				t.Errorf("chat events %v, want tool_call events and done", events)
			}
			if !slices.Contains(tools, "list_clusters") && !slices.Contains(tools, "list_services") {
				t.Errorf("chat called %v, want list_clusters or list_services", tools)
			}
			first.stop()

			second := startSandbox(t, dataDir, dbURL)
			token2, accountID2, repoIDs2 := second.checkSeed()
			if token2 != token {
				t.Errorf("second start issued a new token")
			}
			if accountID2 != accountID {
				t.Errorf("second start made cloud account %s, first %s", accountID2, accountID)
			}
			if !slices.Equal(repoIDs2, repoIDs) {
				t.Errorf("second start's repositories %v, first's %v", repoIDs2, repoIDs)
			}
			second.stop()

			// A token file whose token no longer authenticates is replaced.
			if err := os.WriteFile(filepath.Join(dataDir, sandbox.TokenFileName), []byte("dp_revoked\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			third := startSandbox(t, dataDir, dbURL)
			token3, accountID3, _ := third.checkSeed()
			if token3 == token || accountID3 != accountID {
				t.Errorf("third start: token reused %v, account %s (first %s)", token3 == token, accountID3, accountID)
			}
		})
	}
}

// send calls the API with the token and a JSON body (nil for none) and
// returns the status and the answer's body.
func (h *sandboxHost) send(token, method, path string, body any) (int, []byte) {
	h.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, h.base+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, raw
}
