package sandbox_test

import (
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/fx"

	"github.com/devpilot/devpilot/hosts/app"
	"github.com/devpilot/devpilot/hosts/sandbox"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
	"github.com/devpilot/devpilot/ports"
)

// The end-to-end tests of a started sandbox (seeding, restarts, the
// console) are in hosts/app (sandbox_test.go, console_*_browser_test.go);
// these check what Start does before the app is built.

func load(t *testing.T, vars map[string]string) app.Config {
	t.Helper()
	cfg, err := app.Load(app.ModeRun, func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestStartWithTheSandboxOff(t *testing.T) {
	t.Parallel()
	cfg := load(t, map[string]string{app.EnvSandbox: "0", app.EnvDataDir: t.TempDir()})
	got, sb, err := sandbox.Start(cfg, app.NewLogger(cfg, io.Discard))
	if err != nil || sb != nil {
		t.Fatalf("Start = %v, %v; want a nil Sandbox", sb, err)
	}
	if got.LLM.BaseURL != cfg.LLM.BaseURL || got.LLM.APIKey != cfg.LLM.APIKey || got.GitHub != cfg.GitHub || got.PublicURL != cfg.PublicURL || got.HTTPAddr != cfg.HTTPAddr {
		t.Errorf("Start changed the configuration: %+v", got)
	}
	// A nil Sandbox is safe to use.
	sb.Close()
	if sb.TakeListener() != nil || sb.ConsoleToken() != "" {
		t.Error("a nil Sandbox hands out a listener or a token")
	}
}

func TestStartPointsTheConfigAtTheFakes(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	cfg := load(t, map[string]string{app.EnvDataDir: dataDir, app.EnvHTTPAddr: "127.0.0.1:0"})
	if !cfg.Sandbox {
		t.Fatalf("sandbox off: %s", cfg.SandboxReason)
	}
	logger := app.NewLogger(cfg, io.Discard)
	cfg, sb, err := sandbox.Start(cfg, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()

	_, port, _ := net.SplitHostPort(cfg.HTTPAddr)
	if port == "0" || port == "" || cfg.PublicURL != "http://127.0.0.1:"+port || sb.PublicURL() != cfg.PublicURL {
		t.Errorf("HTTPAddr %s, PublicURL %s (sandbox %s): want port 0 resolved and the public URL on it", cfg.HTTPAddr, cfg.PublicURL, sb.PublicURL())
	}
	if cfg.LLM.APIKey != sandbox.OpenAIKey || !strings.HasPrefix(cfg.LLM.BaseURL, "http://127.0.0.1:") || !strings.HasSuffix(cfg.LLM.BaseURL, "/v1") {
		t.Errorf("LLM = %+v, want the fake OpenAI", cfg.LLM)
	}
	if cfg.GitHub.ClientID != sandbox.GitHubClientID || cfg.GitHub.ClientSecret != sandbox.GitHubClientSecret ||
		cfg.GitHub.WebhookSecret != sandbox.WebhookSecret || !strings.HasPrefix(cfg.GitHub.APIURL, cfg.GitHub.WebURL) {
		t.Errorf("GitHub = %+v, want the fake's OAuth app", cfg.GitHub)
	}
	if !strings.HasPrefix(cfg.AWSEndpoint, "http://127.0.0.1:") {
		t.Errorf("AWSEndpoint = %q, want the fake AWS", cfg.AWSEndpoint)
	}
	if sb.TokenFile() != filepath.Join(dataDir, sandbox.TokenFileName) || sb.Token() != "" || sb.ConsoleToken() != "" {
		t.Errorf("token file %s, token %q before start", sb.TokenFile(), sb.Token())
	}
	// The fakes answer on loopback.
	resp, err := http.Get(cfg.GitHub.WebURL + "/login/oauth/authorize")
	if err != nil {
		t.Fatalf("the fake GitHub does not answer: %v", err)
	}
	resp.Body.Close()

	// The Config carries the sandbox: app.Options builds (it refuses a
	// sandbox Config without one).
	if err := fx.New(app.Options(cfg, logger), fx.NopLogger).Err(); err != nil {
		t.Fatalf("app.Options: %v", err)
	}

	ln := sb.TakeListener()
	if ln == nil || ln.Addr().String() != cfg.HTTPAddr {
		t.Fatalf("TakeListener = %v, want the socket on %s", ln, cfg.HTTPAddr)
	}
	defer ln.Close()
	if sb.TakeListener() != nil {
		t.Error("TakeListener hands out the socket twice")
	}
	sb.Close()
	sb.Close()
}

func TestStartOptions(t *testing.T) {
	t.Parallel()
	const realURL = "https://llm.example.test/v1"
	tests := []struct {
		name      string
		opts      []sandbox.Option
		wantFake  bool
		wantReply string
	}{
		{name: "defaults: the demo model behind the fake", wantFake: true},
		{name: "KeepModel: the configured provider", opts: []sandbox.Option{sandbox.KeepModel()}},
		{name: "WithResponder: another model behind the fake", wantFake: true, wantReply: "scripted",
			opts: []sandbox.Option{sandbox.WithResponder(func(*fakeopenai.Request) fakeopenai.Response { return fakeopenai.Text("scripted") })}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := load(t, map[string]string{app.EnvDataDir: t.TempDir(), app.EnvHTTPAddr: "127.0.0.1:0", app.EnvSandbox: "1",
				app.EnvOpenAIKey: "sk-real", app.EnvOpenAIBaseURL: realURL})
			got, sb, err := sandbox.Start(cfg, app.NewLogger(cfg, io.Discard), tt.opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer sb.Close()
			if fake := got.LLM.BaseURL != realURL; fake != tt.wantFake {
				t.Fatalf("LLM = %+v: fake model %v, want %v", got.LLM, fake, tt.wantFake)
			}
			if !tt.wantFake && got.LLM.APIKey != "sk-real" {
				t.Errorf("KeepModel changed the API key to %q", got.LLM.APIKey)
			}
			if !tt.wantFake {
				return
			}
			body := strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
			req, _ := http.NewRequest(http.MethodPost, got.LLM.BaseURL+"/chat/completions", body)
			req.Header.Set("Authorization", "Bearer "+got.LLM.APIKey)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			if !strings.Contains(string(raw), tt.wantReply) {
				t.Errorf("the fake answered %s, want the responder's %q", raw, tt.wantReply)
			}
			// A script answers, whatever model was asked for: it says so.
			if want := `"model":"` + ports.SandboxModel + `"`; !strings.Contains(string(raw), want) {
				t.Errorf("the fake answered %s, want it to name the sandbox model (%s)", raw, want)
			}
		})
	}
}

func TestAddRepoServesTheFilesToTheDemoUser(t *testing.T) {
	t.Parallel()
	cfg := load(t, map[string]string{app.EnvDataDir: t.TempDir(), app.EnvHTTPAddr: "127.0.0.1:0"})
	cfg, sb, err := sandbox.Start(cfg, app.NewLogger(cfg, io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	repo := sb.AddRepo("expenses-api", "Expense claims API", 990001, map[string]string{"Makefile": "test:\n\tgo test ./...\n"})
	if repo.FullName() != sandbox.Org+"/expenses-api" || repo.ID() != 990001 || sb.GitHub() == nil {
		t.Fatalf("repo %s (%d)", repo.FullName(), repo.ID())
	}
	if got, ok := repo.File("Makefile"); !ok || !strings.Contains(got, "go test") {
		t.Errorf("Makefile = %q, %v", got, ok)
	}
	// Private, and visible to the demo GitHub user: an anonymous read is 404.
	resp, err := http.Get(cfg.GitHub.APIURL + "repos/" + repo.FullName())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("anonymous GET of a private repository: %d, want 404", resp.StatusCode)
	}
}
