// Package llmroute is a ports.LLM that routes each model call to the models
// configured for its feature (chat, title, spec, digest, content, judge), in
// order: when a provider is unavailable, times out, rate-limits or is not
// configured before it produced any output, the next model of the list is
// tried. The answer names the provider and model that gave it.
package llmroute

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/devpilot/devpilot/ports"
)

// The providers a Target may name.
const (
	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
	ProviderBedrock   = "bedrock"
)

// Providers lists every provider a Target may name.
var Providers = []string{ProviderOpenAI, ProviderAnthropic, ProviderBedrock}

// FeatureJudge is the feature of the evaluation's judge (hosts/eval); it is
// no ports.Feature because the judge's tokens are not accounted.
const FeatureJudge ports.Feature = "judge"

// Target is one model of a failover list: a provider and the provider's
// model id.
type Target struct {
	Provider string
	Model    string
}

// String returns "provider:model".
func (t Target) String() string { return t.Provider + ":" + t.Model }

// ParseTargets parses an ordered failover list,
// "provider:model[,provider:model…]", where provider is one of Providers.
// A model id may itself hold colons (Bedrock's "anthropic.claude…-v1:0"):
// only the first one separates the provider. Errors say what is wrong
// with which entry; an empty list is an error.
func ParseTargets(s string) ([]Target, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("is empty: give provider:model[,provider:model…]")
	}
	var out []Target
	for entry := range strings.SplitSeq(s, ",") {
		entry = strings.TrimSpace(entry)
		provider, model, ok := strings.Cut(entry, ":")
		provider, model = strings.TrimSpace(provider), strings.TrimSpace(model)
		switch {
		case entry == "":
			return nil, fmt.Errorf("%q has an empty entry", s)
		case !ok || provider == "" || model == "":
			return nil, fmt.Errorf("%q: entry %q is not provider:model", s, entry)
		case !slices.Contains(Providers, provider):
			return nil, fmt.Errorf("%q: unknown provider %q (one of %s)", s, provider, strings.Join(Providers, ", "))
		case strings.ContainsFunc(model, func(r rune) bool { return r <= ' ' || r == 0x7f }):
			return nil, fmt.Errorf("%q: model %q holds a space or control character", s, model)
		}
		t := Target{Provider: provider, Model: model}
		if slices.Contains(out, t) {
			return nil, fmt.Errorf("%q names %s twice", s, t)
		}
		out = append(out, t)
	}
	return out, nil
}

// Config is what a Router routes over.
type Config struct {
	// Providers holds the adapter of every configured provider by name
	// (one of Providers). A target naming a provider absent here fails
	// over with a not-configured error.
	Providers map[string]ports.LLM
	// Routes holds each feature's failover list; a feature without one
	// (or a call without a feature) uses Default.
	Routes map[ports.Feature][]Target
	// Default is the failover list of the features Routes does not name.
	Default []Target
	// Capabilities are the models' capabilities (see Capabilities.For);
	// a call's MaxTokens above its model's MaxOutput is lowered to it.
	Capabilities Capabilities
	// Log, when not nil, records each failover.
	Log *slog.Logger
}

// Router is a ports.LLM over the configured providers (see the package
// documentation). It is safe for concurrent use.
type Router struct {
	cfg Config
}

// New returns a Router over cfg. It fails when Default is empty or a list
// names an unknown provider.
func New(cfg Config) (*Router, error) {
	if len(cfg.Default) == 0 {
		return nil, errors.New("llmroute: no default route")
	}
	for f, ts := range cfg.Routes {
		for _, t := range append(slices.Clone(ts), cfg.Default...) {
			if !slices.Contains(Providers, t.Provider) {
				return nil, fmt.Errorf("llmroute: route %q names unknown provider %q", f, t.Provider)
			}
		}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Router{cfg: cfg}, nil
}

// Route returns the failover list of feature.
func (r *Router) Route(feature ports.Feature) []Target {
	if ts := r.cfg.Routes[feature]; len(ts) > 0 {
		return ts
	}
	return r.cfg.Default
}

// Chat implements ports.LLM: it calls the models of the call's feature
// (ports.AttributionFrom) in order, each with the request's Model replaced
// by the target's, until one answers or fails in a way that is not worth
// another provider's try (see FailsOver), or has already passed text to
// onDelta. The result's Provider and Model name who answered. Errors: the
// last model's error.
func (r *Router) Chat(ctx context.Context, req ports.ChatRequest, onDelta func(string) error) (ports.ChatResult, error) {
	a, _ := ports.AttributionFrom(ctx)
	targets := r.Route(a.Feature)
	var err error
	for i, t := range targets {
		llm := r.cfg.Providers[t.Provider]
		if llm == nil {
			err = ports.NotConfigured("provider_not_configured", "model provider "+t.Provider+" is not configured")
		} else {
			var sent atomic.Bool
			wrapped := onDelta
			if onDelta != nil {
				wrapped = func(d string) error {
					sent.Store(true)
					return onDelta(d)
				}
			}
			treq := req
			treq.Model = t.Model
			if c := r.cfg.Capabilities.For(t.Model); c.MaxOutput > 0 && treq.MaxTokens > c.MaxOutput {
				treq.MaxTokens = c.MaxOutput
			}
			var res ports.ChatResult
			res, err = llm.Chat(ctx, treq, wrapped)
			if err == nil {
				res.Provider = cmp.Or(res.Provider, t.Provider)
				res.Model = cmp.Or(res.Model, t.Model)
				return res, nil
			}
			if sent.Load() {
				return res, err
			}
		}
		if i == len(targets)-1 || !FailsOver(ctx, err) {
			return ports.ChatResult{}, err
		}
		r.cfg.Log.WarnContext(ctx, "model provider failed before answering; trying the next",
			"feature", a.Feature, "failed", t.String(), "next", targets[i+1].String(), "err", err)
	}
	return ports.ChatResult{}, err
}

// FailsOver reports whether a model call that failed with err before any
// output is worth trying on the next provider: the provider was unavailable
// (overloaded, throttled), timed out, rate-limited the call, or is not
// configured. An organisation's exhausted token budget, ctx's end and
// every other error are not.
func FailsOver(ctx context.Context, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	if errors.Is(err, ports.ErrNotConfigured) {
		return true
	}
	e, ok := ports.AsError(err)
	if !ok || e.Code == ports.CodeBudgetExceeded {
		return false
	}
	switch e.Kind {
	case ports.KindUnavailable, ports.KindTimeout, ports.KindRateLimited:
		return true
	}
	return false
}
