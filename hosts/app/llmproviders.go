package app

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net/http"
	"os"

	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/devpilot/devpilot/adapters/anthropic"
	"github.com/devpilot/devpilot/adapters/bedrock"
	"github.com/devpilot/devpilot/adapters/llmroute"
	"github.com/devpilot/devpilot/adapters/telemetry"
	"github.com/devpilot/devpilot/ports"
)

// newModelProviders returns the adapters of the providers besides OpenAI
// that a route names, each over an HTTP client of its own (traced as
// OpenAI's is) and each call traced (see telemetry.TraceProviderLLM). An
// adapter's default model is the first its provider serves in a route;
// the router names the model of every call.
func newModelProviders(cfg Config, tracing *telemetry.Tracing) (map[string]ports.LLM, error) {
	out := map[string]ports.LLM{}
	m := cfg.Models
	if m.Uses(llmroute.ProviderAnthropic) && m.Anthropic.Configured() {
		model := m.firstModel(llmroute.ProviderAnthropic)
		c, err := anthropic.New(anthropic.Config{
			APIKey: m.Anthropic.APIKey, BaseURL: m.Anthropic.BaseURL, Model: model, Timeout: cfg.LLM.Timeout,
			HTTPClient: tracing.Client(&http.Client{Transport: llmTransport()}, llmroute.ProviderAnthropic),
		})
		if err != nil {
			return nil, err
		}
		out[llmroute.ProviderAnthropic] = telemetry.TraceProviderLLM(c, tracing.Provider(), llmroute.ProviderAnthropic, model,
			cmp.Or(m.Anthropic.BaseURL, anthropic.DefaultBaseURL))
	}
	if m.Uses(llmroute.ProviderBedrock) && m.Bedrock.Configured() {
		model := m.firstModel(llmroute.ProviderBedrock)
		bc := bedrock.Config{
			Region: m.Bedrock.Region, Model: model, Endpoint: m.Bedrock.Endpoint,
			RoleARN: m.Bedrock.RoleARN, ExternalID: m.Bedrock.ExternalID, Timeout: cfg.LLM.Timeout,
			MaxRetries: m.Bedrock.MaxRetries,
		}
		// The SDK honours AWS_CA_BUNDLE only in a client of its own, so
		// this one trusts the bundle itself.
		tr := llmTransport()
		if err := trustCABundle(tr, os.Getenv("AWS_CA_BUNDLE")); err != nil {
			return nil, err
		}
		bc.HTTPClient = tracing.Client(&http.Client{Transport: tr}, llmroute.ProviderBedrock)
		if m.Bedrock.AccessKeyID != "" {
			bc.Credentials = credentials.NewStaticCredentialsProvider(m.Bedrock.AccessKeyID, m.Bedrock.SecretAccessKey, m.Bedrock.SessionToken)
		}
		c, err := bedrock.New(context.Background(), bc)
		if err != nil {
			return nil, err
		}
		endpoint := cmp.Or(m.Bedrock.Endpoint, "https://bedrock-runtime."+m.Bedrock.Region+".amazonaws.com")
		out[llmroute.ProviderBedrock] = telemetry.TraceProviderLLM(c, tracing.Provider(), llmroute.ProviderBedrock, model, endpoint)
	}
	return out, nil
}

// NewModelRouter returns the models of cfg's routes (DEVPILOT_MODEL_*)
// behind the failover router, neither traced, measured nor metered: for a
// host that calls a model on its own behalf, as the evaluation's judge
// does (ctx's attribution picks the route; llmroute.FeatureJudge the
// judge's). Errors: an adapter's configuration error.
func NewModelRouter(cfg Config, logger *slog.Logger) (ports.LLM, error) {
	c, err := NewOpenAI(cfg, logger, nil)
	if err != nil {
		return nil, err
	}
	providers, err := newModelProviders(cfg, nil)
	if err != nil {
		return nil, err
	}
	providers[llmroute.ProviderOpenAI] = unconfigured{}
	if c != nil {
		providers[llmroute.ProviderOpenAI] = c
	}
	return llmroute.New(llmroute.Config{
		Providers: providers, Routes: cfg.Models.Routes, Default: cfg.Models.Default,
		Capabilities: cfg.Models.Capabilities, Log: logger,
	})
}

// trustCABundle adds the certificates of the PEM file at path (AWS_CA_BUNDLE)
// to the roots tr trusts, beside the system's; "" changes nothing.
func trustCABundle(tr *http.Transport, path string) error {
	if path == "" {
		return nil
	}
	pem, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("AWS_CA_BUNDLE: %w", err)
	}
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	if !roots.AppendCertsFromPEM(pem) {
		return fmt.Errorf("AWS_CA_BUNDLE: %s holds no PEM certificate", path)
	}
	if tr.TLSClientConfig == nil {
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	tr.TLSClientConfig.RootCAs = roots
	return nil
}
