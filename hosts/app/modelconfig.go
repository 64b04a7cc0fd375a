package app

import (
	"fmt"
	"slices"

	"github.com/devpilot/devpilot/adapters/llmroute"
	"github.com/devpilot/devpilot/ports"
)

// The settings of the model per feature, its providers and the models'
// capabilities (see ModelsConfig).
const (
	EnvModelChat         = "DEVPILOT_MODEL_CHAT"
	EnvModelTitle        = "DEVPILOT_MODEL_TITLE"
	EnvModelSpec         = "DEVPILOT_MODEL_SPEC"
	EnvModelDigest       = "DEVPILOT_MODEL_DIGEST"
	EnvModelContent      = "DEVPILOT_MODEL_CONTENT"
	EnvModelJudge        = "DEVPILOT_MODEL_JUDGE"
	EnvModelCapabilities = "DEVPILOT_MODEL_CAPABILITIES"
	EnvAnthropicKey      = "ANTHROPIC_API_KEY"
	EnvAnthropicBaseURL  = "ANTHROPIC_BASE_URL"
	EnvBedrockRegion     = "DEVPILOT_BEDROCK_REGION"
	EnvBedrockRoleARN    = "DEVPILOT_BEDROCK_ROLE_ARN"
	EnvBedrockExternalID = "DEVPILOT_BEDROCK_EXTERNAL_ID"
	EnvBedrockEndpoint   = "DEVPILOT_BEDROCK_ENDPOINT"
	EnvBedrockRetries    = "DEVPILOT_BEDROCK_MAX_RETRIES"
)

// ModelFeatures pairs each routed feature with the variable of its
// failover list, in the order the README lists them.
var ModelFeatures = []struct {
	Feature ports.Feature
	Env     string
}{
	{ports.FeatureChat, EnvModelChat},
	{ports.FeatureTitle, EnvModelTitle},
	{ports.FeatureSpec, EnvModelSpec},
	{ports.FeatureDigest, EnvModelDigest},
	{ports.FeatureContent, EnvModelContent},
	{llmroute.FeatureJudge, EnvModelJudge},
}

// ModelsConfig says which models serve which feature, and how to reach the
// providers other than OpenAI (whose settings are LLMConfig's).
type ModelsConfig struct {
	// Routes holds the failover list of each feature whose
	// DEVPILOT_MODEL_<FEATURE> is set; the others use Default.
	Routes map[ports.Feature][]llmroute.Target
	// Default is openai:DEVPILOT_LLM_MODEL, today's one model.
	Default []llmroute.Target
	// Capabilities are the built-in model capabilities with
	// DEVPILOT_MODEL_CAPABILITIES laid over them.
	Capabilities llmroute.Capabilities
	Anthropic    AnthropicConfig
	Bedrock      BedrockConfig
}

// AnthropicConfig points the Anthropic adapter at the Messages API.
type AnthropicConfig struct {
	APIKey  string // ANTHROPIC_API_KEY
	BaseURL string // ANTHROPIC_BASE_URL; "" is Anthropic's
}

// Configured reports whether the Anthropic provider may be used.
func (c AnthropicConfig) Configured() bool { return c.APIKey != "" || c.BaseURL != "" }

// BedrockConfig points the Bedrock adapter at a region, with the AWS
// credentials of the default chain, assuming RoleARN when it is set.
type BedrockConfig struct {
	Region     string // DEVPILOT_BEDROCK_REGION, default AWS_REGION
	RoleARN    string
	ExternalID string
	Endpoint   string // "" is AWS's
	// MaxRetries is how often a throttled or failed call is tried again
	// before its stream starts (DEVPILOT_BEDROCK_MAX_RETRIES, default 2;
	// -1 in bedrock.Config, none, for 0).
	MaxRetries int
	// AccessKeyID, SecretAccessKey and SessionToken are AWS_ACCESS_KEY_ID,
	// AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN as Load read them: static
	// base credentials when set, else the SDK's default chain.
	AccessKeyID, SecretAccessKey, SessionToken string
}

// Configured reports whether the Bedrock provider may be used.
func (c BedrockConfig) Configured() bool { return c.Region != "" }

// Uses reports whether a feature's list (or the default) names provider.
func (c ModelsConfig) Uses(provider string) bool {
	for _, ts := range c.Routes {
		if slices.ContainsFunc(ts, func(t llmroute.Target) bool { return t.Provider == provider }) {
			return true
		}
	}
	return false
}

// firstModel returns the first model a route (or the default) names of
// provider.
func (c ModelsConfig) firstModel(provider string) string {
	for _, f := range ModelFeatures {
		for _, t := range c.Routes[f.Feature] {
			if t.Provider == provider {
				return t.Model
			}
		}
	}
	return ""
}

// Models returns every model a list names, the default's first, each once.
func (c ModelsConfig) Models() []string {
	var out []string
	add := func(ts []llmroute.Target) {
		for _, t := range ts {
			if !slices.Contains(out, t.Model) {
				out = append(out, t.Model)
			}
		}
	}
	add(c.Default)
	for _, f := range ModelFeatures {
		add(c.Routes[f.Feature])
	}
	return out
}

// models reads ModelsConfig; openaiConfigured says whether the OpenAI
// provider is set up (or the sandbox will set it up).
func (r *reader) models(defaultModel string, openaiConfigured bool) ModelsConfig {
	c := ModelsConfig{
		Default: []llmroute.Target{{Provider: llmroute.ProviderOpenAI, Model: defaultModel}},
		Anthropic: AnthropicConfig{
			APIKey:  r.str(EnvAnthropicKey, ""),
			BaseURL: r.url(EnvAnthropicBaseURL),
		},
		Bedrock: BedrockConfig{
			Region:          r.str(EnvBedrockRegion, r.str("AWS_REGION", "")),
			RoleARN:         r.str(EnvBedrockRoleARN, ""),
			ExternalID:      r.str(EnvBedrockExternalID, ""),
			Endpoint:        r.url(EnvBedrockEndpoint),
			AccessKeyID:     r.str("AWS_ACCESS_KEY_ID", ""),
			SecretAccessKey: r.str("AWS_SECRET_ACCESS_KEY", ""),
			SessionToken:    r.str("AWS_SESSION_TOKEN", ""),
		},
	}
	if c.Bedrock.MaxRetries = int(r.number(EnvBedrockRetries, 2, 0, 10)); c.Bedrock.MaxRetries == 0 {
		c.Bedrock.MaxRetries = -1
	}
	if c.Bedrock.AccessKeyID == "" || c.Bedrock.SecretAccessKey == "" {
		c.Bedrock.AccessKeyID, c.Bedrock.SecretAccessKey, c.Bedrock.SessionToken = "", "", ""
	}
	caps, err := llmroute.ParseCapabilities(r.str(EnvModelCapabilities, ""), llmroute.DefaultCapabilities())
	if err != nil {
		r.fail(EnvModelCapabilities, err.Error())
	}
	c.Capabilities = caps
	if c.Bedrock.ExternalID != "" && c.Bedrock.RoleARN == "" {
		r.fail(EnvBedrockExternalID, "is set without "+EnvBedrockRoleARN)
	}
	configured := map[string]string{
		llmroute.ProviderOpenAI:    EnvOpenAIKey + " or " + EnvOpenAIBaseURL,
		llmroute.ProviderAnthropic: EnvAnthropicKey + " or " + EnvAnthropicBaseURL,
		llmroute.ProviderBedrock:   EnvBedrockRegion + " or AWS_REGION",
	}
	if openaiConfigured {
		delete(configured, llmroute.ProviderOpenAI)
	}
	if c.Anthropic.Configured() {
		delete(configured, llmroute.ProviderAnthropic)
	}
	if c.Bedrock.Configured() {
		delete(configured, llmroute.ProviderBedrock)
	}
	for _, f := range ModelFeatures {
		v := r.str(f.Env, "")
		if v == "" {
			continue
		}
		ts, err := llmroute.ParseTargets(v)
		if err != nil {
			r.fail(f.Env, err.Error())
			continue
		}
		for _, t := range ts {
			if need, missing := configured[t.Provider]; missing {
				r.fail(f.Env, fmt.Sprintf("names %s, but provider %s is not configured: set %s", t, t.Provider, need))
			}
			switch mode := caps.For(t.Model).Structured; {
			case mode == "":
			case t.Provider == llmroute.ProviderOpenAI && mode == llmroute.StructuredTool:
				r.fail(EnvModelCapabilities, fmt.Sprintf("gives %s (in %s) structured:tool, which only anthropic and bedrock models take", t.Model, f.Env))
			case t.Provider != llmroute.ProviderOpenAI && mode != llmroute.StructuredTool:
				r.fail(EnvModelCapabilities, fmt.Sprintf("gives %s (in %s) structured:%s; %s models take only structured:tool", t.Model, f.Env, mode, t.Provider))
			}
		}
		if c.Routes == nil {
			c.Routes = map[ports.Feature][]llmroute.Target{}
		}
		c.Routes[f.Feature] = ts
	}
	return c
}

// specContextBudget lowers the default context budget of the spec stages
// to what the smallest context window of the spec and digest models holds
// besides a completion of maxTokens, when that is less.
func specContextBudget(def, maxTokens int, m ModelsConfig) int {
	budget := def
	for _, f := range []ports.Feature{ports.FeatureSpec, ports.FeatureDigest} {
		ts := m.Routes[f]
		if len(ts) == 0 {
			ts = m.Default
		}
		for _, t := range ts {
			if w := m.Capabilities.For(t.Model).ContextWindow; w > 0 {
				budget = min(budget, max(w-maxTokens, 2000))
			}
		}
	}
	return budget
}
