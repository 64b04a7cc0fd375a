package app

import (
	"cmp"
	"context"
	"log/slog"
	"maps"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/fx"

	"github.com/devpilot/devpilot/adapters/llmroute"
	"github.com/devpilot/devpilot/adapters/openai"
	"github.com/devpilot/devpilot/adapters/telemetry"
	"github.com/devpilot/devpilot/core/usage"
	"github.com/devpilot/devpilot/ports"
)

// LLMModule provides the chat model, the realtime speech provider and the
// transcriber: the OpenAI-compatible adapter when OPENAI_API_KEY or
// OPENAI_BASE_URL is set, else stand-ins that answer every call with a clear
// unavailable error naming those variables.
var LLMModule = fx.Module("llm",
	fx.Provide(NewOpenAI, NewLLM, NewRealtime, NewTranscriber),
)

// NewOpenAI returns the OpenAI-compatible adapter, or nil when no provider is
// configured. It fails when the configuration is set but unusable.
func NewOpenAI(cfg Config, logger *slog.Logger, tracing *telemetry.Tracing) (*openai.Client, error) {
	if cfg.LLM.APIKey == "" && cfg.LLM.BaseURL == "" {
		logger.Warn("no model provider configured: chat, voice and transcription answer with an error until " + EnvOpenAIKey + " or " + EnvOpenAIBaseURL + " is set")
		return nil, nil
	}
	return openai.New(openai.Config{
		APIKey:          cfg.LLM.APIKey,
		BaseURL:         cfg.LLM.BaseURL,
		Model:           cfg.LLMModel,
		Timeout:         cfg.LLM.Timeout,
		HTTPClient:      tracing.Client(&http.Client{Transport: llmTransport()}, "openai"),
		RealtimeModel:   cfg.Voice.RealtimeModel,
		RealtimeVoice:   cfg.Voice.RealtimeVoice,
		RealtimeExpiry:  cfg.Voice.TokenTTL,
		TranscribeModel: cfg.Voice.TranscribeModel,

		StructuredOutput:        cfg.LLM.StructuredOutput,
		StructuredOutputByModel: openaiStructured(cfg),
	})
}

// openaiStructured is DEVPILOT_LLM_STRUCTURED_OUTPUT's modes by model,
// with the structured mode DEVPILOT_MODEL_CAPABILITIES gives each OpenAI
// model a route names (the former wins where both name a model).
func openaiStructured(cfg Config) map[string]openai.StructuredOutput {
	out := maps.Clone(cfg.LLM.StructuredOutputByModel)
	for _, ts := range cfg.Models.Routes {
		for _, t := range ts {
			mode := openai.StructuredOutput(cfg.Models.Capabilities.For(t.Model).Structured)
			if t.Provider != llmroute.ProviderOpenAI || !mode.Valid() || out[t.Model] != "" {
				continue
			}
			if out == nil {
				out = map[string]openai.StructuredOutput{}
			}
			out[t.Model] = mode
		}
	}
	return out
}

// NewLLM returns the chat model: the models of each feature behind a
// router with failover (see llmroute and ModelsConfig), measured on reg
// (see telemetry.NewLLM; nil measures nothing) and metered (every call's
// tokens are added to store, and calls over an organisation's token budget
// are refused before any provider is tried), or the unconfigured stand-in
// when no provider is configured. Without any DEVPILOT_MODEL_* setting the
// one model is c's, DEVPILOT_LLM_MODEL, as before there were routes.
//
// Each provider's calls are traced (see telemetry.TraceProviderLLM) when
// tracing is on, so a span names the provider that answered (and a failed
// attempt the one that failed). The measuring decorator is the inner one
// of those around the router, so that a call's duration is the providers'
// alone (not the usage store's write that follows it) and its outcome
// theirs. Its model labels are the configured models: every route's,
// DEVPILOT_LLM_MODEL and the models DEVPILOT_LLM_STRUCTURED_OUTPUT names.
func NewLLM(c *openai.Client, store ports.UsageStore, budgets *usage.Budgets, clock ports.Clock, cfg Config, logger *slog.Logger, reg *prometheus.Registry, tracing *telemetry.Tracing) (ports.LLM, error) {
	if c == nil && len(cfg.Models.Routes) == 0 {
		return unconfigured{}, nil
	}
	var openaiLLM ports.LLM = unconfigured{}
	if c != nil {
		openaiLLM = telemetry.TraceProviderLLM(c, tracing.Provider(), llmroute.ProviderOpenAI, cfg.LLMModel, cmp.Or(cfg.LLM.BaseURL, openai.DefaultBaseURL))
	}
	measured := openaiLLM
	if len(cfg.Models.Routes) > 0 {
		providers, err := newModelProviders(cfg, tracing)
		if err != nil {
			return nil, err
		}
		providers[llmroute.ProviderOpenAI] = openaiLLM
		router, err := llmroute.New(llmroute.Config{
			Providers: providers, Routes: cfg.Models.Routes, Default: cfg.Models.Default,
			Capabilities: cfg.Models.Capabilities, Log: logger.With("adapter", "llmroute"),
		})
		if err != nil {
			return nil, err
		}
		measured = router
	}
	if reg != nil {
		models := cfg.Models.Models()
		for m := range cfg.LLM.StructuredOutputByModel {
			models = append(models, m)
		}
		measured = telemetry.NewLLM(measured, reg, cfg.LLMModel, models...)
	}
	return usage.NewMeter(measured, store, clock, cfg.LLMModel, logger).Enforce(budgets), nil
}

// NewRealtime returns the realtime speech provider: c, or the unconfigured
// stand-in when c is nil.
func NewRealtime(c *openai.Client) ports.Realtime {
	if c == nil {
		return unconfigured{}
	}
	return c
}

// NewTranscriber returns the transcriber: c metered as the chat model is
// (the tokens a transcription reports are recorded for the voice feature,
// and refused over the organisation's budget), or the unconfigured stand-in
// when c is nil.
func NewTranscriber(c *openai.Client, store ports.UsageStore, budgets *usage.Budgets, clock ports.Clock, cfg Config, logger *slog.Logger) ports.Transcriber {
	if c == nil {
		return unconfigured{}
	}
	return usage.NewMeter(nil, store, clock, cfg.Voice.TranscribeModel, logger).Enforce(budgets).Transcriber(c)
}

// llmTransport is sized for many concurrent streaming turns against one
// provider: connections are reused instead of redialled, and their buffers
// are small. The buffer sizes apply to HTTP/1.1 connections only (one per
// open stream; HTTP/2 multiplexes streams over connections with buffers of
// their own): a stream's chunks are a few hundred bytes, the request's
// headers fit in the write buffer and its body is written past it.
func llmTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 512
	t.MaxIdleConnsPerHost = 256
	t.ReadBufferSize = 1 << 10
	t.WriteBufferSize = 1 << 10
	return t
}

// unconfigured stands in for the model provider when none is configured.
type unconfigured struct{}

// errNoProvider says how to configure a model provider. It is a
// configuration error (ports.NotConfigured): permanent, so a background
// generation fails at once with it instead of being tried again.
var errNoProvider = ports.NotConfigured("no_model_provider",
	"no model provider is configured: set "+EnvOpenAIKey+" or "+EnvOpenAIBaseURL+" (and "+EnvLLMModel+" for the model)")

// Chat always fails with errNoProvider.
func (unconfigured) Chat(context.Context, ports.ChatRequest, func(string) error) (ports.ChatResult, error) {
	return ports.ChatResult{}, errNoProvider
}

// CreateClientSecret always fails with errNoProvider.
func (unconfigured) CreateClientSecret(context.Context, ports.RealtimeSessionConfig) (ports.RealtimeSecret, error) {
	return ports.RealtimeSecret{}, errNoProvider
}

// StartCall always fails with errNoProvider.
func (unconfigured) StartCall(context.Context, string, ports.RealtimeSessionConfig) (ports.RealtimeCall, error) {
	return ports.RealtimeCall{}, errNoProvider
}

// WatchCall has no call to watch: it returns nil, as for a call that ended.
func (unconfigured) WatchCall(context.Context, string, func(ports.RealtimeUsage) error) error {
	return nil
}

// Transcribe always fails with errNoProvider.
func (unconfigured) Transcribe(context.Context, ports.TranscriptionRequest) (ports.Transcription, error) {
	return ports.Transcription{}, errNoProvider
}

// NewBudgets returns the organisations' monthly token budgets, enforced on
// every model call: an admin's budget for the organisation, else the
// configured default (DEVPILOT_ORG_MONTHLY_TOKENS, 0: unlimited).
func NewBudgets(usageStore ports.UsageStore, budgets ports.BudgetStore, clock ports.Clock, cfg Config) *usage.Budgets {
	return usage.NewBudgets(usageStore, budgets, clock, cfg.OrgMonthlyTokens)
}
