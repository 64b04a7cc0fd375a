package app_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/adapters/llmroute"
	"github.com/devpilot/devpilot/adapters/openai"
	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/hosts/app"
	"github.com/devpilot/devpilot/ports"
)

func TestLoadModelRoutes(t *testing.T) {
	t.Parallel()
	cfg, err := app.Load(app.ModeServe, env(map[string]string{
		app.EnvSecretKey:         validKey,
		app.EnvOpenAIKey:         "sk-x",
		app.EnvLLMModel:          "gpt-4o-mini",
		app.EnvAnthropicKey:      "sk-ant",
		"AWS_REGION":             "eu-west-1",
		app.EnvModelChat:         "anthropic:claude-sonnet-4-5, bedrock:eu.anthropic.claude-sonnet-4-5-20250929-v1:0, openai:gpt-4o",
		app.EnvModelTitle:        "anthropic:claude-haiku-4-5",
		app.EnvModelDigest:       "bedrock:amazon.nova-lite-v1:0",
		app.EnvModelJudge:        "openai:gpt-4.1",
		app.EnvModelCapabilities: "gpt-4.1=structured:lenient;amazon.nova-lite-v1:0=context:20000",
	}))
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.Models
	if len(m.Routes[ports.FeatureChat]) != 3 || m.Routes[ports.FeatureChat][1] != (llmroute.Target{Provider: "bedrock", Model: "eu.anthropic.claude-sonnet-4-5-20250929-v1:0"}) {
		t.Errorf("chat route %v", m.Routes[ports.FeatureChat])
	}
	if m.Routes[ports.FeatureSpec] != nil || m.Default[0] != (llmroute.Target{Provider: "openai", Model: "gpt-4o-mini"}) {
		t.Errorf("spec route %v, default %v: the spec uses the default, openai:DEVPILOT_LLM_MODEL", m.Routes[ports.FeatureSpec], m.Default)
	}
	if m.Bedrock.Region != "eu-west-1" || !m.Anthropic.Configured() {
		t.Errorf("bedrock %+v anthropic %+v", m.Bedrock, m.Anthropic)
	}
	// The digest model's small window lowers the spec's context budget.
	if want := 20000 - cfg.Spec.MaxTokens; cfg.SpecContextBudget != want {
		t.Errorf("spec context budget %d, want %d", cfg.SpecContextBudget, want)
	}
	if m.Capabilities.For("gpt-4.1").Structured != llmroute.StructuredLenient {
		t.Errorf("gpt-4.1 capabilities %+v", m.Capabilities.For("gpt-4.1"))
	}
}

func TestLoadWithoutModelRoutesIsAsBefore(t *testing.T) {
	t.Parallel()
	cfg, err := app.Load(app.ModeRun, env(map[string]string{app.EnvOpenAIKey: "sk-x", app.EnvLLMModel: "gpt-4o"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Models.Routes != nil || cfg.SpecContextBudget != spec.DefaultContextBudget {
		t.Errorf("routes %v budget %d; want none and the default budget", cfg.Models.Routes, cfg.SpecContextBudget)
	}
	if cfg.LLM.StructuredOutput != openai.StructuredStrict {
		t.Errorf("structured %q", cfg.LLM.StructuredOutput)
	}
}

func TestLoadNamesBadModelSettings(t *testing.T) {
	t.Parallel()
	base := map[string]string{app.EnvSecretKey: validKey, app.EnvOpenAIKey: "sk-x"}
	cases := []struct {
		vars map[string]string
		name string // the variable the error names
		msg  string
	}{
		{map[string]string{app.EnvModelChat: "gemini:pro"}, app.EnvModelChat, `unknown provider "gemini"`},
		{map[string]string{app.EnvModelSpec: "openai"}, app.EnvModelSpec, "not provider:model"},
		{map[string]string{app.EnvModelTitle: "openai:a,,openai:b"}, app.EnvModelTitle, "empty entry"},
		{map[string]string{app.EnvModelChat: "anthropic:claude-sonnet-4-5"}, app.EnvModelChat, "provider anthropic is not configured: set " + app.EnvAnthropicKey},
		{map[string]string{app.EnvModelContent: "bedrock:amazon.nova-pro-v1:0"}, app.EnvModelContent, "provider bedrock is not configured: set " + app.EnvBedrockRegion},
		{map[string]string{app.EnvModelCapabilities: "m=context:big"}, app.EnvModelCapabilities, "not a number"},
		{map[string]string{app.EnvModelCapabilities: "m=colour:red"}, app.EnvModelCapabilities, `unknown key "colour"`},
		{map[string]string{app.EnvModelChat: "openai:gpt-4o", app.EnvModelCapabilities: "gpt-4o=structured:tool"}, app.EnvModelCapabilities, "only anthropic and bedrock"},
		{map[string]string{app.EnvAnthropicKey: "k", app.EnvModelChat: "anthropic:c", app.EnvModelCapabilities: "c=structured:strict"}, app.EnvModelCapabilities, "take only structured:tool"},
		{map[string]string{app.EnvAnthropicBaseURL: "ftp://x"}, app.EnvAnthropicBaseURL, "http(s) URL"},
		{map[string]string{app.EnvBedrockExternalID: "x"}, app.EnvBedrockExternalID, "without " + app.EnvBedrockRoleARN},
	}
	for _, tc := range cases {
		t.Run(tc.name+" "+tc.msg, func(t *testing.T) {
			t.Parallel()
			vars := maps.Clone(base)
			maps.Copy(vars, tc.vars)
			_, err := app.Load(app.ModeServe, env(vars))
			if err == nil || !strings.Contains(err.Error(), tc.name) || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("Load = %v; want an error naming %s with %q", err, tc.name, tc.msg)
			}
		})
	}
	// OpenAI unconfigured: a route naming it is an error, in serve (no
	// sandbox), not in run's sandbox, which provides it.
	if _, err := app.Load(app.ModeServe, env(map[string]string{app.EnvSecretKey: validKey, app.EnvModelChat: "openai:gpt-4o"})); err == nil ||
		!strings.Contains(err.Error(), "provider openai is not configured") {
		t.Errorf("serve without OpenAI: %v", err)
	}
	if _, err := app.Load(app.ModeRun, env(map[string]string{app.EnvModelChat: "openai:gpt-4o"})); err != nil {
		t.Errorf("run's sandbox: %v", err)
	}
}
