package app_test

import (
	"encoding/base64"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/openai"
	"github.com/devpilot/devpilot/hosts/app"
	"github.com/devpilot/devpilot/ports"
)

func env(kv map[string]string) func(string) string {
	return func(k string) string { return kv[k] }
}

var (
	validKey = base64.StdEncoding.EncodeToString(make([]byte, 32))
	otherKey = base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
)

func TestLoadDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		mode      app.Mode
		vars      map[string]string
		addr, log string
		keyFile   string
	}{
		{mode: app.ModeRun, addr: "127.0.0.1:8080", log: "text", keyFile: "data/secret.key"},
		{mode: app.ModeServe, vars: map[string]string{app.EnvSecretKey: validKey}, addr: ":8080", log: "json"},
		{mode: app.ModeWorker, vars: map[string]string{app.EnvSecretKey: validKey}, addr: ":8080", log: "json"},
		{mode: app.ModeToken, addr: ":8080", log: "text"},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode), func(t *testing.T) {
			t.Parallel()
			cfg, err := app.Load(tt.mode, env(tt.vars))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if cfg.HTTPAddr != tt.addr || cfg.LogFormat != tt.log || cfg.SecretKeyFile != tt.keyFile {
				t.Errorf("addr %q log %q keyfile %q; want %q %q %q", cfg.HTTPAddr, cfg.LogFormat, cfg.SecretKeyFile, tt.addr, tt.log, tt.keyFile)
			}
			if cfg.DatabaseURL != "sqlite:data/devpilot.db" || cfg.RequestTimeout != 30*time.Second || cfg.LogLevel != slog.LevelInfo ||
				cfg.AuthCacheTTL != 5*time.Second || cfg.WebhookReadsPerClient != 4 || cfg.CloudScaleConfirmAbove != 10 {
				t.Errorf("db %q timeout %v level %v auth cache %v", cfg.DatabaseURL, cfg.RequestTimeout, cfg.LogLevel, cfg.AuthCacheTTL)
			}
		})
	}
}

// TestWorkerAddrDefaultsToLoopback: the worker's probes and metrics are
// on loopback unless DEVPILOT_WORKER_ADDR exposes them, as serve's admin
// surfaces are.
func TestWorkerAddrDefaultsToLoopback(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ set, want string }{
		{"", "127.0.0.1:9091"},
		{":9091", ":9091"},
		{"0.0.0.0:9100", "0.0.0.0:9100"},
	} {
		cfg, err := app.Load(app.ModeWorker, env(map[string]string{app.EnvSecretKey: validKey, app.EnvWorkerAddr: tc.set}))
		if err != nil {
			t.Fatalf("%q: %v", tc.set, err)
		}
		if cfg.WorkerAddr != tc.want {
			t.Errorf("%s=%q: WorkerAddr %q, want %q", app.EnvWorkerAddr, tc.set, cfg.WorkerAddr, tc.want)
		}
	}
}

func TestLoadNamesEveryBadVariable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		mode app.Mode
		vars map[string]string
		want []string
	}{
		{"serve needs a key", app.ModeServe, nil, []string{app.EnvSecretKey + " is required"}},
		{"bad key", app.ModeRun, map[string]string{app.EnvSecretKey: "c2hvcnQ="}, []string{app.EnvSecretKey}},
		{"bad addr", app.ModeRun, map[string]string{app.EnvHTTPAddr: "8080"}, []string{app.EnvHTTPAddr + ` "8080" is not HOST:PORT`}},
		{"bad port", app.ModeRun, map[string]string{app.EnvHTTPAddr: "localhost:99999"}, []string{app.EnvHTTPAddr}},
		{"realtime token too short", app.ModeRun, map[string]string{app.EnvRealtimeTTL: "5s"}, []string{app.EnvRealtimeTTL + " must be from 10s to 2h"}},
		{"auth cache too long", app.ModeRun, map[string]string{app.EnvAuthCacheTTL: "2m"}, []string{app.EnvAuthCacheTTL + ` "2m" must be a duration from 0 (off) to 1m0s`}},
		{"cors origin with a path", app.ModeRun, map[string]string{app.EnvCORSOrigins: "https://app.example.com/"}, []string{app.EnvCORSOrigins + ` origin 1 "https://app.example.com/"`}},
		{"cors every origin and more", app.ModeRun, map[string]string{app.EnvCORSOrigins: "*, https://app.example.com"}, []string{app.EnvCORSOrigins}},
		{"auth cache negative", app.ModeRun, map[string]string{app.EnvAuthCacheTTL: "-1s"}, []string{app.EnvAuthCacheTTL}},
		{"one database connection", app.ModeRun, map[string]string{app.EnvDatabaseConns: "1"}, []string{app.EnvDatabaseConns}},
		{"no webhook reads per client", app.ModeRun, map[string]string{app.EnvWebhookReadsPerClient: "0"}, []string{app.EnvWebhookReadsPerClient}},
		{"no scale confirmation size", app.ModeRun, map[string]string{app.EnvCloudScaleConfirmAbove: "0"}, []string{app.EnvCloudScaleConfirmAbove}},
		{"an unknown trace exporter", app.ModeRun, map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, []string{"OTEL_TRACES_EXPORTER"}},
		{"traces over gRPC", app.ModeRun, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, []string{"OTEL_EXPORTER_OTLP_PROTOCOL"}},
		{"oidc issuer without a client", app.ModeServe, map[string]string{app.EnvSecretKey: validKey, app.EnvOIDCIssuer: "https://id.example", app.EnvPublicURL: "https://dp.example"}, []string{app.EnvOIDCIssuer + " needs " + app.EnvOIDCClientID}},
		{"oidc client without an issuer", app.ModeRun, map[string]string{app.EnvOIDCClientID: "c"}, []string{app.EnvOIDCClientID + " is set without"}},
		{"oidc without a callback", app.ModeServe, map[string]string{app.EnvSecretKey: validKey, app.EnvOIDCIssuer: "https://id.example", app.EnvOIDCClientID: "c"}, []string{app.EnvOIDCRedirectURL + " or " + app.EnvPublicURL}},
		{"oidc domains without an org", app.ModeRun, map[string]string{app.EnvOIDCIssuer: "https://id.example", app.EnvOIDCClientID: "c", app.EnvOIDCDomains: "example.com", app.EnvSandbox: "0"}, []string{app.EnvOIDCOrg + " is required"}},
		{"oidc issuer not a URL", app.ModeRun, map[string]string{app.EnvOIDCIssuer: "id.example", app.EnvOIDCClientID: "c"}, []string{app.EnvOIDCIssuer}},
		{"auto titles neither on nor off", app.ModeRun, map[string]string{app.EnvAutoTitle: "yes"}, []string{app.EnvAutoTitle}},
		{"session too short", app.ModeRun, map[string]string{app.EnvSessionTTL: "1m"}, []string{app.EnvSessionTTL + " must be from 5m to 720h"}},
		{"spec seed not a number", app.ModeRun, map[string]string{app.EnvSpecSeed: "forty-two"}, []string{app.EnvSpecSeed + ` "forty-two" must be a whole number`}},
		{"several at once", app.ModeRun, map[string]string{
			app.EnvLogFormat: "xml", app.EnvLogLevel: "loud", app.EnvRequestTimeout: "soon", app.EnvBodyLimit: "-1",
			app.EnvOpenAIBaseURL: "localhost:11434", app.EnvMaxToolRounds: "0", app.EnvConfirmTTL: "-1m", app.EnvWorkerJobs: "0",
		}, []string{app.EnvLogFormat, app.EnvLogLevel, app.EnvRequestTimeout, app.EnvBodyLimit,
			app.EnvOpenAIBaseURL, app.EnvMaxToolRounds, app.EnvConfirmTTL, app.EnvWorkerJobs}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := app.Load(tt.mode, env(tt.vars))
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "c2hvcnQ=") {
				t.Errorf("error %q echoes the secret key", err)
			}
		})
	}
}

func TestLoadReadsEveryVariable(t *testing.T) {
	t.Parallel()
	cfg, err := app.Load(app.ModeServe, env(map[string]string{
		app.EnvDatabaseURL: "postgres://db/x", app.EnvHTTPAddr: ":0", app.EnvSecretKey: otherKey + "," + validKey,
		app.EnvLLMModel: "m", app.EnvPublicURL: "https://dp.example", app.EnvLogFormat: "text",
		app.EnvLogLevel: "debug", app.EnvRequestTimeout: "5s", app.EnvShutdownGrace: "1s", app.EnvBodyLimit: "2048",
		app.EnvOpenAIKey: "sk-x", app.EnvOpenAIBaseURL: "http://127.0.0.1:11434/v1/", app.EnvLLMTimeout: "9s",
		app.EnvMaxToolRounds: "3", app.EnvMaxTokens: "100", app.EnvConfirmTTL: "5m", app.EnvWorkerJobs: "40", app.EnvMaxTurnsPerUser: "0", app.EnvAutoTitle: "0",
		app.EnvTurnLease: "30s", app.EnvAuthCacheTTL: "0", app.EnvBodyTimeout: "7s", app.EnvLLMStructured: "json_object",
		app.EnvCORSOrigins: "https://app.example.com, http://localhost:5173", app.EnvWorkerAddr: "127.0.0.1:9999",
		app.EnvDatabaseConns: "12", app.EnvWebhookReadsPerClient: "16", app.EnvCloudScaleConfirmAbove: "25",
		app.EnvSpecMaxTokens: "2048", app.EnvSpecTimeout: "90s", app.EnvSpecParallel: "0",
		app.EnvSpecTemperature: "0.2", app.EnvSpecSeed: "42",
		app.EnvOIDCIssuer: "https://id.example/realms/team/", app.EnvOIDCClientID: "dp", app.EnvOIDCClientSecret: "s",
		app.EnvOIDCOrg: "acme", app.EnvOIDCDomains: "example.com, example.org", app.EnvOIDCGroups: "eng",
		app.EnvOIDCAdminGroups: "ops,sre", app.EnvOIDCGroupsClaim: "roles", app.EnvSessionTTL: "8h",
	}))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if cfg.DatabaseURL != "postgres://db/x" || cfg.HTTPAddr != ":0" || len(cfg.SecretKeys) != 2 || cfg.LLMModel != "m" ||
		cfg.PublicURL != "https://dp.example" || cfg.LogFormat != "text" || cfg.LogLevel != slog.LevelDebug ||
		cfg.RequestTimeout != 5*time.Second || cfg.ShutdownGrace != time.Second || cfg.BodyLimit != 2048 ||
		cfg.LLM.APIKey != "sk-x" || cfg.LLM.BaseURL != "http://127.0.0.1:11434/v1" || cfg.LLM.Timeout != 9*time.Second ||
		cfg.LLM.StructuredOutput != openai.StructuredJSONObject || cfg.LLM.StructuredOutputByModel != nil ||
		cfg.Assistant != (app.AssistantConfig{MaxToolRounds: 3, MaxTokens: 100, ConfirmationTTL: 5 * time.Minute, TurnLease: 30 * time.Second}) ||
		cfg.WorkerJobs != 40 || cfg.AuthCacheTTL != 0 || cfg.BodyReadTimeout != 7*time.Second ||
		cfg.WorkerAddr != "127.0.0.1:9999" || cfg.DatabaseMaxConns != 12 || cfg.WebhookReadsPerClient != 16 || cfg.CloudScaleConfirmAbove != 25 || !slices.Equal(cfg.CORSOrigins, []string{"https://app.example.com", "http://localhost:5173"}) {
		t.Fatalf("config = %+v", cfg)
	}
	if sc := cfg.Spec; sc.MaxTokens != 2048 || sc.CallTimeout != 90*time.Second || sc.Concurrency != 0 ||
		len(sc.Temperature) != len(ports.Stages) || sc.Temperature[ports.StagePRPs] != 0.2 || sc.Seed == nil || *sc.Seed != 42 {
		t.Fatalf("spec config = %+v", sc)
	}
	if si := cfg.SignIn; si.Issuer != "https://id.example/realms/team" || si.ClientID != "dp" || si.ClientSecret != "s" ||
		si.GroupsClaim != "roles" || si.Policy.Org != "acme" || !slices.Equal(si.Policy.Domains, []string{"example.com", "example.org"}) ||
		!slices.Equal(si.Policy.Groups, []string{"eng"}) || !slices.Equal(si.Policy.AdminGroups, []string{"ops", "sre"}) ||
		si.Policy.SessionTTL != 8*time.Hour || cfg.SignInRedirectURL() != "https://dp.example/auth/oidc/callback" {
		t.Fatalf("sign-in config = %+v, redirect %s", si, cfg.SignInRedirectURL())
	}
}

func TestLoadStructuredOutput(t *testing.T) {
	t.Parallel()
	local := "http://127.0.0.1:8081/v1"
	tests := []struct {
		name    string
		mode    app.Mode
		vars    map[string]string
		want    openai.StructuredOutput
		byModel map[string]openai.StructuredOutput
		err     string
	}{
		{name: "the sandbox is strict", mode: app.ModeRun, want: openai.StructuredStrict},
		{name: "the sandbox is strict whatever the base URL", mode: app.ModeRun,
			vars: map[string]string{app.EnvSandbox: "1", app.EnvOpenAIBaseURL: local}, want: openai.StructuredStrict},
		{name: "OpenAI's API is strict", mode: app.ModeServe,
			vars: map[string]string{app.EnvOpenAIKey: "sk-x"}, want: openai.StructuredStrict},
		{name: "OpenAI's base URL is strict", mode: app.ModeServe,
			vars: map[string]string{app.EnvOpenAIKey: "sk-x", app.EnvOpenAIBaseURL: "https://api.openai.com/v1"}, want: openai.StructuredStrict},
		{name: "another server is lenient", mode: app.ModeServe,
			vars: map[string]string{app.EnvOpenAIBaseURL: local}, want: openai.StructuredLenient},
		{name: "one mode for all", mode: app.ModeServe,
			vars: map[string]string{app.EnvOpenAIBaseURL: local, app.EnvLLMStructured: " json_object "}, want: openai.StructuredJSONObject},
		{name: "per model", mode: app.ModeServe,
			vars: map[string]string{app.EnvLLMStructured: "gpt-4o=strict, llama-3.1=json_object,qwen2.5:7b = lenient"},
			want: openai.StructuredStrict,
			byModel: map[string]openai.StructuredOutput{
				"gpt-4o": openai.StructuredStrict, "llama-3.1": openai.StructuredJSONObject, "qwen2.5:7b": openai.StructuredLenient}},
		{name: "per model with a default", mode: app.ModeServe,
			vars:    map[string]string{app.EnvOpenAIKey: "sk-x", app.EnvLLMStructured: "gpt-4o=strict,lenient"},
			want:    openai.StructuredLenient,
			byModel: map[string]openai.StructuredOutput{"gpt-4o": openai.StructuredStrict}},
		{name: "unknown mode", mode: app.ModeServe, vars: map[string]string{app.EnvLLMStructured: "loose"},
			err: app.EnvLLMStructured + ` "loose": "loose" is not one of strict, lenient, json_object`},
		{name: "unknown mode of a model", mode: app.ModeServe, vars: map[string]string{app.EnvLLMStructured: "gpt-4o=Strict"},
			err: `"Strict" is not one of strict, lenient, json_object`},
		{name: "no model", mode: app.ModeServe, vars: map[string]string{app.EnvLLMStructured: "=strict"},
			err: `"=strict" names no model before =`},
		{name: "two defaults", mode: app.ModeServe, vars: map[string]string{app.EnvLLMStructured: "strict,lenient"},
			err: "gives the default mode twice"},
		{name: "a model twice", mode: app.ModeServe, vars: map[string]string{app.EnvLLMStructured: "m=strict,m=strict"},
			err: `gives model "m" a mode twice`},
		{name: "an empty entry", mode: app.ModeServe, vars: map[string]string{app.EnvLLMStructured: "m=strict,,lenient"},
			err: "has an empty entry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			vars := map[string]string{app.EnvSecretKey: validKey}
			for k, v := range tt.vars {
				vars[k] = v
			}
			cfg, err := app.Load(tt.mode, env(vars))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.LLM.StructuredOutput != tt.want || !maps.Equal(cfg.LLM.StructuredOutputByModel, tt.byModel) {
				t.Errorf("structured output %q %v, want %q %v", cfg.LLM.StructuredOutput, cfg.LLM.StructuredOutputByModel, tt.want, tt.byModel)
			}
		})
	}
}

func TestPublicDefaultsAreNoProviderSettings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		sandbox bool
	}{
		{"GitHub Actions' GITHUB_API_URL", map[string]string{app.EnvGitHubAPIURL: "https://api.github.com"}, true},
		{"GITHUB_API_URL with a slash", map[string]string{app.EnvGitHubAPIURL: "https://API.github.com/"}, true},
		{"GITHUB_URL", map[string]string{app.EnvGitHubURL: "https://github.com/"}, true},
		{"OpenAI's base URL", map[string]string{app.EnvOpenAIBaseURL: "https://api.openai.com/v1/"}, true},
		{"all three", map[string]string{app.EnvGitHubAPIURL: "https://api.github.com", app.EnvGitHubURL: "https://github.com",
			app.EnvOpenAIBaseURL: "https://api.openai.com/v1"}, true},
		{"GitHub Enterprise", map[string]string{app.EnvGitHubAPIURL: "https://ghe.example.com/api/v3"}, false},
		{"a local model server", map[string]string{app.EnvOpenAIBaseURL: "http://127.0.0.1:11434/v1"}, false},
		{"plain http is not the default", map[string]string{app.EnvGitHubAPIURL: "http://api.github.com"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := app.Load(app.ModeRun, env(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Sandbox != tt.sandbox {
				t.Errorf("Sandbox = %v (%s), want %v", cfg.Sandbox, cfg.SandboxReason, tt.sandbox)
			}
			if tt.sandbox && (cfg.GitHub.APIURL != "" || cfg.GitHub.WebURL != "" || cfg.LLM.BaseURL != "") {
				t.Errorf("a public default is read as a setting: %+v %+v", cfg.GitHub, cfg.LLM)
			}
		})
	}
}

func TestCheckFiles(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name             string
		keyMode, dirMode os.FileMode
		dbMode           os.FileMode
		noKey            bool
		refused          bool
		warnings         int
	}{
		{name: "owner only", keyMode: 0o600, dirMode: 0o700, dbMode: 0o600},
		{name: "no key file yet", noKey: true, dirMode: 0o700, dbMode: 0o600},
		{name: "key readable by the group", keyMode: 0o640, dirMode: 0o700, dbMode: 0o600, refused: true},
		{name: "key readable by others", keyMode: 0o604, dirMode: 0o700, dbMode: 0o600, refused: true},
		{name: "data directory readable by others", keyMode: 0o600, dirMode: 0o755, dbMode: 0o600, warnings: 1},
		{name: "database readable by others", keyMode: 0o600, dirMode: 0o700, dbMode: 0o644, warnings: 1},
		{name: "database readable by the group only", keyMode: 0o600, dirMode: 0o750, dbMode: 0o640},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "data")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			db := filepath.Join(dir, "devpilot.db")
			if err := os.WriteFile(db, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if !tt.noKey {
				if err := os.WriteFile(filepath.Join(dir, "secret.key"), []byte(validKey+"\n"), 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(filepath.Join(dir, "secret.key"), tt.keyMode); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Chmod(db, tt.dbMode); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dir, tt.dirMode); err != nil {
				t.Fatal(err)
			}
			cfg, err := app.Load(app.ModeRun, env(map[string]string{app.EnvDataDir: dir}))
			if err != nil {
				t.Fatal(err)
			}
			var logs strings.Builder
			err = app.CheckFiles(cfg, slog.New(slog.NewTextHandler(&logs, nil)))
			if refused := err != nil; refused != tt.refused {
				t.Fatalf("CheckFiles = %v, want refused %v", err, tt.refused)
			}
			if tt.refused && (!strings.Contains(err.Error(), "secret.key") || !strings.Contains(err.Error(), "chmod 600")) {
				t.Errorf("the refusal does not say what to do: %v", err)
			}
			if got := strings.Count(logs.String(), "level=WARN"); got != tt.warnings {
				t.Errorf("%d warnings, want %d:\n%s", got, tt.warnings, logs.String())
			}
		})
	}
}

// TestAutoTitleSetting: titles after the first answer are on unless
// DEVPILOT_AUTO_TITLE is 0.
func TestAutoTitleSetting(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]bool{"": true, "1": true, "0": false} {
		cfg, err := app.Load(app.ModeRun, env(map[string]string{app.EnvAutoTitle: v}))
		if err != nil || cfg.Assistant.AutoTitle != want {
			t.Errorf("%s=%q: AutoTitle %v, %v; want %v", app.EnvAutoTitle, v, cfg.Assistant.AutoTitle, err, want)
		}
	}
}

func TestLoadSpecTemperature(t *testing.T) {
	t.Parallel()
	all := func(v float64) map[ports.Stage]float64 {
		out := map[ports.Stage]float64{}
		for _, st := range ports.Stages {
			out[st] = v
		}
		return out
	}
	tests := []struct {
		name  string
		value string
		want  map[ports.Stage]float64
		err   string
	}{
		{name: "unset leaves it to the provider", value: "", want: nil},
		{name: "one for every stage", value: " 0.2 ", want: all(0.2)},
		{name: "zero", value: "0", want: all(0)},
		{name: "per stage", value: "scope=0.7, prd=0.3,prps=0",
			want: map[ports.Stage]float64{ports.StageScope: 0.7, ports.StagePRD: 0.3, ports.StagePRPs: 0}},
		{name: "per stage with a default", value: "prps=0,1",
			want: map[ports.Stage]float64{ports.StageScope: 1, ports.StagePRD: 1, ports.StageEpics: 1, ports.StageStories: 1, ports.StagePRPs: 0}},
		{name: "too high", value: "2.5", err: `"2.5" is not a number from 0 to 2`},
		{name: "negative", value: "prd=-0.1", err: `"-0.1" is not a number from 0 to 2`},
		{name: "not a number", value: "warm", err: `"warm" is not a number from 0 to 2`},
		{name: "NaN", value: "NaN", err: `"NaN" is not a number from 0 to 2`},
		{name: "an unknown stage", value: "design=0.3", err: `"design" is not a stage (scope, prd, epics, stories, prps)`},
		{name: "a stage twice", value: "prd=0.3,prd=0.4", err: "gives stage prd a temperature twice"},
		{name: "two defaults", value: "0.3,0.4", err: "gives the temperature of every stage twice"},
		{name: "an empty entry", value: "prd=0.3,,scope=1", err: "has an empty entry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := app.Load(app.ModeRun, env(map[string]string{app.EnvSpecTemperature: tt.value}))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), app.EnvSpecTemperature) || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one naming %s and saying %q", err, app.EnvSpecTemperature, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(cfg.Spec.Temperature, tt.want) || (tt.want == nil) != (cfg.Spec.Temperature == nil) {
				t.Errorf("temperatures %v, want %v", cfg.Spec.Temperature, tt.want)
			}
			if cfg.Spec.Seed != nil {
				t.Errorf("seed %d without %s", *cfg.Spec.Seed, app.EnvSpecSeed)
			}
		})
	}
}
