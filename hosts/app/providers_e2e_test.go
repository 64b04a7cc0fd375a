package app_test

import (
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/app"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeanthropic"
	"github.com/devpilot/devpilot/hosts/sandbox/fakebedrock"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// modelProvider is the model provider an end-to-end stack's features run
// on: OpenAI (the stack's fakeopenai itself), or Anthropic or Bedrock
// through their official SDKs, against fakeanthropic or fakebedrock reading
// the same fakeopenai script, so a test enqueues the same answers
// whichever wire is spoken.
type modelProvider string

// The providers of the end-to-end stacks.
const (
	onOpenAI    modelProvider = "openai"
	onAnthropic modelProvider = "anthropic"
	onBedrock   modelProvider = "bedrock"
)

// The models the stacks name on Anthropic and Bedrock (the fakes answer
// any).
const (
	anthropicTestModel = "claude-sonnet-4-5"
	bedrockTestModel   = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
)

// stackCase is one database and provider an end-to-end test runs on.
type stackCase struct {
	dialect  sqlstore.Dialect
	provider modelProvider
	// env, when set, is the model providers' environment instead of
	// providerEnv's, given the stack's script.
	env func(script *fakeopenai.Server) map[string]string
}

// modelEnv is the environment of c's model providers over script.
func (c stackCase) modelEnv(t *testing.T, script *fakeopenai.Server) map[string]string {
	if c.env != nil {
		return c.env(script)
	}
	return providerEnv(t, c.provider, script)
}

// name is the subtest's name: the dialect, then the provider when it is
// not OpenAI ("sqlite", "postgres", "sqlite-anthropic").
func (c stackCase) name() string {
	if c.provider == onOpenAI {
		return string(c.dialect)
	}
	return string(c.dialect) + "-" + string(c.provider)
}

// stackCases are what the tests of the assistant and the spec pipeline run
// on: OpenAI on every dialect, Anthropic and Bedrock on SQLite only (the
// provider's wire is what they add; the database is the same code, and
// make test runs on two cores).
func stackCases() []stackCase {
	var out []stackCase
	for _, d := range sqlstoretest.Dialects() {
		out = append(out, stackCase{dialect: d, provider: onOpenAI})
	}
	return append(out,
		stackCase{dialect: sqlstore.DialectSQLite, provider: onAnthropic},
		stackCase{dialect: sqlstore.DialectSQLite, provider: onBedrock})
}

// providerEnv is the environment that runs every feature on p: for
// Anthropic and Bedrock a fake of their API wrapping script, with every
// DEVPILOT_MODEL_* naming it; nothing for OpenAI (the stack's own
// settings).
func providerEnv(t *testing.T, p modelProvider, script *fakeopenai.Server) map[string]string {
	t.Helper()
	var route string
	env := map[string]string{}
	switch p {
	case onOpenAI:
		return env
	case onAnthropic:
		env[app.EnvAnthropicKey] = "sk-ant-test"
		env[app.EnvAnthropicBaseURL] = fakeanthropic.New(t, script).URL()
		route = "anthropic:" + anthropicTestModel
	case onBedrock:
		env[app.EnvBedrockRegion] = "us-east-1"
		env[app.EnvBedrockEndpoint] = fakebedrock.New(t, script).URL()
		env[app.EnvBedrockRetries] = "0" // a scripted throttling is answered once
		env["AWS_ACCESS_KEY_ID"] = "AKIDFAKEBEDROCK"
		env["AWS_SECRET_ACCESS_KEY"] = "fake-secret"
		route = "bedrock:" + bedrockTestModel
	default:
		t.Fatalf("unknown provider %q", p)
	}
	for _, f := range app.ModelFeatures {
		env[f.Env] = route
	}
	return env
}
