package spec

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"sync"

	"github.com/devpilot/devpilot/ports"
)

// PromptVersion names what stage is asked with: the first 12 hex digits of
// the SHA-256 of the system prompt's template, the stage's guidance and its
// JSON Schema, so a change to any of them gives a new version (the
// organisation's standards, which vary by org, are not part of it). Every
// artifact records the version it was generated with, and the evaluation
// harness its reports. It is "" for an unknown stage.
func PromptVersion(stage ports.Stage) string {
	sc, ok := schemas[stage]
	if !ok {
		return ""
	}
	return promptVersion(systemPrompt+standardsIntro, stageGuidance[stage], sc.raw)
}

// promptVersion hashes the parts, each with its length, so that no two
// splits of the same text hash alike.
func promptVersion(template, guidance string, schema []byte) string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(template), []byte(guidance), schema} {
		fmt.Fprintf(h, "%d:", len(part))
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// genStats collects the statistics of one stage's generation as its calls
// happen, and carries the stage's sampling settings to them. generate puts
// one in the context of the stage's work; chat, askRepairing and askDigest
// update the one they find there (none outside a stage's generation). It
// is safe for the concurrent calls of batches; a nil *genStats ignores
// everything.
type genStats struct {
	temperature *float64
	seed        *int64

	mu sync.Mutex
	g  ports.SpecGeneration
}

type statsKey struct{}

// withStats is ctx carrying st.
func withStats(ctx context.Context, st *genStats) context.Context {
	return context.WithValue(ctx, statsKey{}, st)
}

type repairAskKey struct{}

// asRepairAsk marks ctx's ask as a repair turn of an ask answered before
// (the cross-PRP repair asks a PRP's call again): its first answer is
// not another batch's.
func asRepairAsk(ctx context.Context) context.Context {
	return context.WithValue(ctx, repairAskKey{}, true)
}

func isRepairAsk(ctx context.Context) bool {
	b, _ := ctx.Value(repairAskKey{}).(bool)
	return b
}

// statsOf is the collector ctx carries, nil when none.
func statsOf(ctx context.Context) *genStats {
	st, _ := ctx.Value(statsKey{}).(*genStats)
	return st
}

// newStats is the collector of stage's generation, with its sampling
// settings from cfg.
func newStats(cfg Config, stage ports.Stage) *genStats {
	st := &genStats{}
	if t, ok := cfg.Temperature[stage]; ok {
		st.temperature = &t
	}
	if cfg.Seed != nil {
		seed := *cfg.Seed
		st.seed = &seed
	}
	return st
}

// sample sets the stage's temperature and seed on req where it has none.
func (st *genStats) sample(req *ports.ChatRequest) {
	if st == nil {
		return
	}
	if req.Temperature == nil && st.temperature != nil {
		t := *st.temperature
		req.Temperature = &t
	}
	if req.Seed == nil && st.seed != nil {
		n := *st.seed
		req.Seed = &n
	}
}

func (st *genStats) update(f func(g *ports.SpecGeneration)) {
	if st == nil {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	f(&st.g)
}

// called counts one model call and its usage.
func (st *genStats) called(res ports.ChatResult) {
	st.update(func(g *ports.SpecGeneration) {
		g.Calls++
		g.PromptTokens += res.Usage.PromptTokens
		g.CompletionTokens += res.Usage.CompletionTokens
	})
}

// answered counts an ask's first answer, valid or not.
func (st *genStats) answered(valid bool) {
	st.update(func(g *ports.SpecGeneration) {
		g.Batches++
		if valid {
			g.FirstTryValid++
		}
	})
}

// invalidAnswer counts an answer that failed validation.
func (st *genStats) invalidAnswer() {
	st.update(func(g *ports.SpecGeneration) { g.InvalidAnswers++ })
}

// repairTurn counts a turn that sends findings back to the model.
func (st *genStats) repairTurn() {
	st.update(func(g *ports.SpecGeneration) { g.RepairTurns++ })
}

// snapshot is what was collected, with the sampling settings; its
// FindingsByKind and DurationMS are for the caller to fill in.
func (st *genStats) snapshot() ports.SpecGeneration {
	if st == nil {
		return ports.SpecGeneration{}
	}
	st.mu.Lock()
	g := st.g
	st.mu.Unlock()
	g.FindingsByKind = maps.Clone(g.FindingsByKind)
	if st.temperature != nil {
		t := *st.temperature
		g.Temperature = &t
	}
	if st.seed != nil {
		n := *st.seed
		g.Seed = &n
	}
	return g
}

// findingsByKind counts the findings of c, and notes (about the
// generation itself: a repository that could not be read) as
// FindingRepository. It is never nil.
func findingsByKind(c checks, notes []string) map[string]int {
	out := map[string]int{}
	for k, n := range c.byKind() {
		out[string(k)] += n
	}
	if len(notes) > 0 {
		out[string(FindingRepository)] += len(notes)
	}
	return out
}
