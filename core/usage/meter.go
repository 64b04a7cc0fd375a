// Package usage accounts for the tokens models use: Meter records every
// model call's tokens against the organisation, user and feature it was made
// for, and Service reports them, grouped by day, model, user or feature.
package usage

import (
	"cmp"
	"context"
	"log/slog"

	"github.com/devpilot/devpilot/ports"
)

// FeatureOther is the feature of a model call made without an attribution
// naming one.
const FeatureOther ports.Feature = "other"

// Meter is a ports.LLM that records the tokens of every call of the LLM it
// wraps in a UsageStore, against the ports.Attribution of the call's
// context (by default the principal's organisation and user). A call whose
// provider reported no tokens (it failed) is not recorded; a call with
// tokens and no organisation to charge is logged, as is a store failure:
// the call's answer is returned either way.
//
// With Budgets (Enforce), a call charged to an organisation that has used
// its monthly token budget is refused before the model is called, with the
// budget_exceeded Error of Budgets.Check.
type Meter struct {
	llm     ports.LLM
	store   ports.UsageStore
	budgets *Budgets
	clock   ports.Clock
	model   string
	log     *slog.Logger
}

var _ ports.LLM = (*Meter)(nil)

// NewMeter returns llm metered into store (llm may be nil when m only
// meters a Transcriber). model names the calls whose
// request and result name none (the adapter's default model); log nil
// discards.
func NewMeter(llm ports.LLM, store ports.UsageStore, clock ports.Clock, model string, log *slog.Logger) *Meter {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Meter{llm: llm, store: store, clock: clock, model: model, log: log.With("core", "usage")}
}

// Enforce makes m refuse calls over the budgets of b, and returns m. Call it
// before m is used.
func (m *Meter) Enforce(b *Budgets) *Meter {
	m.budgets = b
	return m
}

// Chat implements ports.LLM: it checks the organisation's budget, runs the
// call, then records its usage. Errors: budget_exceeded (rate_limited), a
// store's error reading the budget, the model's.
func (m *Meter) Chat(ctx context.Context, req ports.ChatRequest, onDelta func(string) error) (ports.ChatResult, error) {
	if m.budgets != nil {
		if a, _ := ports.AttributionFrom(ctx); a.OrgID != "" {
			if err := m.budgets.Check(ctx, a.OrgID); err != nil {
				return ports.ChatResult{}, err
			}
		}
	}
	res, err := m.llm.Chat(ctx, req, onDelta)
	if res.Usage.PromptTokens > 0 || res.Usage.CompletionTokens > 0 {
		m.record(ctx, usageModel(res, cmp.Or(res.Model, req.Model, m.model, "unknown")), res.Usage)
	}
	return res, err
}

// usageModel is the model a call's usage is recorded for: model, prefixed
// with "provider:" when a provider other than OpenAI answered (OpenAI's
// models are recorded bare, as they were before there were other providers).
func usageModel(res ports.ChatResult, model string) string {
	if res.Provider != "" && res.Provider != "openai" {
		return res.Provider + ":" + model
	}
	return model
}

func (m *Meter) record(ctx context.Context, model string, u ports.Usage) {
	a, _ := ports.AttributionFrom(ctx)
	a.Feature = cmp.Or(a.Feature, FeatureOther)
	if a.OrgID == "" {
		m.log.ErrorContext(ctx, "a model call's usage has no organisation to charge", "feature", a.Feature, "model", model,
			"prompt_tokens", u.PromptTokens, "completion_tokens", u.CompletionTokens)
		return
	}
	if m.budgets != nil {
		m.budgets.Charge(a.OrgID, int64(u.PromptTokens)+int64(u.CompletionTokens))
	}
	r := ports.UsageRecord{Attribution: a, Model: model, Day: m.clock.Now(),
		PromptTokens: int64(u.PromptTokens), CompletionTokens: int64(u.CompletionTokens), Calls: 1}
	// The call happened whatever becomes of its context now.
	if err := m.store.AddUsage(context.WithoutCancel(ctx), r); err != nil {
		m.log.ErrorContext(ctx, "recording a model call's usage", "org_id", a.OrgID, "feature", a.Feature, "model", model,
			"prompt_tokens", u.PromptTokens, "completion_tokens", u.CompletionTokens, "err", err)
	}
}

// Transcriber returns t metered as m meters model calls: each
// transcription's reported tokens (the GPT transcription models report
// them; whisper-1 reports none) are recorded against the call's
// attribution, and, with Budgets, a transcription charged to an
// organisation over its budget is refused before t is called. m's LLM is
// not used and may be nil.
func (m *Meter) Transcriber(t ports.Transcriber) ports.Transcriber {
	return &meteredTranscriber{m: m, next: t}
}

type meteredTranscriber struct {
	m    *Meter
	next ports.Transcriber
}

// Transcribe implements ports.Transcriber. Errors: budget_exceeded
// (rate_limited), a store's error reading the budget, the transcriber's.
func (t *meteredTranscriber) Transcribe(ctx context.Context, r ports.TranscriptionRequest) (ports.Transcription, error) {
	if t.m.budgets != nil {
		if a, _ := ports.AttributionFrom(ctx); a.OrgID != "" {
			if err := t.m.budgets.Check(ctx, a.OrgID); err != nil {
				return ports.Transcription{}, err
			}
		}
	}
	res, err := t.next.Transcribe(ctx, r)
	if res.Usage.PromptTokens > 0 || res.Usage.CompletionTokens > 0 {
		t.m.record(ctx, cmp.Or(res.Model, r.Model, "unknown"), res.Usage)
	}
	return res, err
}
