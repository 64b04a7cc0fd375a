package eval

import (
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.uber.org/fx"

	"github.com/devpilot/devpilot/adapters/llmroute"
	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/hosts/app"
	"github.com/devpilot/devpilot/hosts/eval/evalcorpus"
	"github.com/devpilot/devpilot/hosts/sandbox"
	"github.com/devpilot/devpilot/hosts/sandbox/demomodel"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// LogFile is devpilot's log, in the run directory.
const LogFile = "devpilot.log"

// host is devpilot running in this process for a run: the sandbox's fakes
// for AWS and GitHub, the configured model or the sandbox's, and a SQLite
// database in the run directory.
type host struct {
	api      *client
	tools    map[string]ToolSpec
	model    string
	provider string
	repos    map[string]string // case id → repository full name
	stop     func()
}

// modelConfigured reports whether the environment names a model provider:
// OPENAI_API_KEY, OPENAI_BASE_URL naming another server than OpenAI's
// (a local or compatible one, which may need no key), or a DEVPILOT_MODEL_*
// route of a feature the run exercises naming another provider than OpenAI.
func modelConfigured(getenv func(string) string) bool {
	for _, f := range app.ModelFeatures {
		ts, _ := llmroute.ParseTargets(getenv(f.Env))
		if f.Feature != llmroute.FeatureJudge && slices.ContainsFunc(ts, func(t llmroute.Target) bool { return t.Provider != llmroute.ProviderOpenAI }) {
			return true
		}
	}
	return openAIConfigured(getenv)
}

// openAIConfigured reports whether the environment configures the OpenAI
// provider: OPENAI_API_KEY, or OPENAI_BASE_URL naming another server than
// OpenAI's.
func openAIConfigured(getenv func(string) string) bool {
	if strings.TrimSpace(getenv(app.EnvOpenAIKey)) != "" {
		return true
	}
	base := strings.TrimSpace(getenv(app.EnvOpenAIBaseURL))
	return base != "" && !strings.Contains(strings.ToLower(base), "://api.openai.com")
}

// startHost starts devpilot on dir. With a responder, or without a
// configured provider, the model is the sandbox's fake (answered by
// responder, the faithful demo model by default); otherwise the configured
// one, or model (a failover list) for every feature when it is set.
// The cases' repositories are added to the fake GitHub before the demo
// connection is made.
func startHost(ctx context.Context, dir string, getenv func(string) string, model string, responder func(*fakeopenai.Request) fakeopenai.Response, cases []evalcorpus.Case) (*host, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	forced := map[string]string{
		app.EnvDataDir:      abs,
		app.EnvDatabaseURL:  "sqlite:" + filepath.Join(abs, "devpilot.db"),
		app.EnvHTTPAddr:     "127.0.0.1:0",
		app.EnvPublicURL:    "",
		app.EnvRateRequests: "0", // a corpus run makes hundreds of costly calls
		app.EnvLogFormat:    "text",
	}
	var target llmroute.Target
	if model != "" {
		ts, err := llmroute.ParseTargets(model)
		if err != nil {
			return nil, usageErrorf("--model: %v", err)
		}
		target = ts[0]
		for _, f := range app.ModelFeatures {
			if f.Feature != llmroute.FeatureJudge {
				forced[f.Env] = model
			}
		}
		if target.Provider == llmroute.ProviderOpenAI {
			forced[app.EnvLLMModel] = target.Model
		}
	}
	env := func(sandboxOn bool) func(string) string {
		return func(k string) string {
			if v, ok := forced[k]; ok {
				return v
			}
			if k == app.EnvSandbox {
				if sandboxOn {
					return "1"
				}
				return ""
			}
			return getenv(k)
		}
	}
	cfg, err := app.Load(app.ModeRun, env(true))
	if err != nil {
		return nil, usageErrorf("configuration: %v", err)
	}
	real := responder == nil && modelConfigured(getenv)
	if model != "" {
		// The sandbox fakes OpenAI only: another provider is always the
		// configured one.
		real = responder == nil && (target.Provider != llmroute.ProviderOpenAI || openAIConfigured(getenv))
	}
	var opts []sandbox.Option
	provider := "sandbox"
	if real {
		// The model's settings as devpilot run would read them without the
		// sandbox (structured output defaults depend on it).
		plain, err := app.Load(app.ModeRun, env(false))
		if err != nil {
			return nil, usageErrorf("configuration: %v", err)
		}
		cfg.LLM, cfg.LLMModel, cfg.Models, cfg.SpecContextBudget = plain.LLM, plain.LLMModel, plain.Models, plain.SpecContextBudget
		opts = append(opts, sandbox.KeepModel())
		provider = cfg.LLM.BaseURL
		if provider == "" {
			provider = "openai"
		}
		if model != "" && target.Provider != llmroute.ProviderOpenAI {
			provider = target.Provider
		}
	} else {
		if responder == nil {
			// The faithful demo model writes each stage only from its
			// request, so the corpus measures what reaches each call.
			responder = demomodel.New(demomodel.Faithful()).Respond
			provider = "sandbox (faithful demo model)"
		}
		opts = append(opts, sandbox.WithResponder(responder))
	}
	logFile, err := os.OpenFile(filepath.Join(abs, LogFile), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	logger := app.NewLogger(cfg, logFile)
	cfg, sb, err := sandbox.Start(cfg, logger, opts...)
	if err != nil {
		logFile.Close()
		return nil, err
	}
	repos := map[string]string{}
	taken := map[string]bool{}
	for name := range sandbox.Repos() {
		taken[name] = true
	}
	for _, c := range cases {
		if c.Repo == nil {
			continue
		}
		name := c.Repo.Name
		if taken[sandbox.Org+"/"+name] {
			name = c.ID + "-" + name
		}
		taken[sandbox.Org+"/"+name] = true
		repo := sb.AddRepo(name, c.Repo.Description, repoGitHubID(c.ID), c.Repo.Files)
		repos[c.ID] = repo.FullName()
	}
	var registry *tool.Registry
	fxApp := fx.New(app.Options(cfg, logger), fx.Populate(&registry))
	if err := fxApp.Err(); err != nil {
		sb.Close()
		logFile.Close()
		return nil, err
	}
	startCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := fxApp.Start(startCtx); err != nil {
		sb.Close()
		logFile.Close()
		return nil, fmt.Errorf("starting devpilot (its log: %s): %w", filepath.Join(abs, LogFile), err)
	}
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace+5*time.Second)
		defer cancel()
		if err := fxApp.Stop(ctx); err != nil {
			logger.Warn("eval: stopping devpilot", "err", err)
		}
		sb.Close()
		logFile.Close()
	}
	h := &host{
		api:      &client{base: sb.PublicURL(), token: sb.Token(), http: &http.Client{Timeout: 0}},
		tools:    toolSpecs(registry),
		model:    cmp.Or(target.Model, cfg.LLMModel),
		provider: provider,
		repos:    repos,
		stop:     stop,
	}
	return h, nil
}

// toolSpecs are the assistant's tools: the effect, and the schema of the
// arguments as authored (the tool_call events carry the arguments with the
// nulls of the strict wire schema dropped, as the tool receives them).
func toolSpecs(r *tool.Registry) map[string]ToolSpec {
	out := map[string]ToolSpec{}
	if r == nil {
		return out
	}
	for _, t := range r.Tools() {
		out[t.Name] = ToolSpec{Effect: string(t.Effect), Schema: t.Schema}
	}
	return out
}

// repoGitHubID is the fake GitHub id of a case's repository: the same on
// every start, so that a resumed run finds the repository it linked.
func repoGitHubID(caseID string) int64 {
	h := fnv.New32a()
	h.Write([]byte(caseID))
	return 900_000_000 + int64(h.Sum32()%90_000_000)
}
