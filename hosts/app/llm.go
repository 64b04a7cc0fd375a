package app

import (
	"context"
	"log/slog"
	"net/http"

	"go.uber.org/fx"

	"github.com/devpilot/devpilot/adapters/openai"
	"github.com/devpilot/devpilot/ports"
)

// LLMModule provides the chat model: the OpenAI-compatible adapter when
// OPENAI_API_KEY or OPENAI_BASE_URL is set, else a model that answers every
// call with a clear unavailable error naming those variables.
var LLMModule = fx.Module("llm",
	fx.Provide(NewLLM),
)

// NewLLM returns the configured chat model. It fails when the configuration
// is set but unusable.
func NewLLM(cfg Config, logger *slog.Logger) (ports.LLM, error) {
	if cfg.LLM.APIKey == "" && cfg.LLM.BaseURL == "" {
		logger.Warn("no model provider configured: chat answers with an error until " + EnvOpenAIKey + " or " + EnvOpenAIBaseURL + " is set")
		return unconfiguredLLM{}, nil
	}
	return openai.New(openai.Config{
		APIKey:     cfg.LLM.APIKey,
		BaseURL:    cfg.LLM.BaseURL,
		Model:      cfg.LLMModel,
		Timeout:    cfg.LLM.Timeout,
		HTTPClient: &http.Client{Transport: llmTransport()},
	})
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

// unconfiguredLLM stands in for a model when no provider is configured.
type unconfiguredLLM struct{}

// Chat always fails with an unavailable Error saying how to configure a model.
func (unconfiguredLLM) Chat(context.Context, ports.ChatRequest, func(string) error) (ports.ChatResult, error) {
	return ports.ChatResult{}, &ports.Error{
		Kind:    ports.KindUnavailable,
		Code:    "no_model_provider",
		Message: "no model provider is configured: set " + EnvOpenAIKey + " or " + EnvOpenAIBaseURL,
	}
}
