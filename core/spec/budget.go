package spec

import (
	"context"
	"errors"
	"log/slog"

	"github.com/devpilot/devpilot/ports"
)

// DefaultContextBudget is Config.ContextBudget's default, in estimated
// tokens: well under the 128k-token window of the models devpilot is used
// with, which leaves room for the answer and for text that takes more
// tokens than estimateTokens counts (see there).
const DefaultContextBudget = 48000

// minContextBudget keeps a tiny budget from cutting the inputs into pieces
// too small to say anything.
const minContextBudget = 2000

// estimateTokens estimates the tokens of text: 4 bytes a token, OpenAI's
// rule of thumb for English. Text in other scripts takes more tokens per
// byte (up to about twice as many for CJK); the default budget's distance
// from the model's window is that margin, and a provider's context-length
// error still takes the digest path.
func estimateTokens(text string) int { return (len(text) + 3) / 4 }

// perMessageTokens is what each message costs beyond its text (role and
// framing), as OpenAI counts it.
const perMessageTokens = 4

// estimateRequest estimates the prompt tokens of a request: its messages
// and the JSON Schema its answer must match.
func estimateRequest(msgs []ports.Message, format *ports.JSONSchemaFormat) int {
	n := 3 // the reply's priming
	for _, m := range msgs {
		n += perMessageTokens + estimateTokens(m.Content)
	}
	if format != nil {
		n += estimateTokens(string(format.Schema))
	}
	return n
}

// minDigestTokens is the least estimated size of the inputs that a
// context-length refusal sends down the digest path: a digest of less would
// not make the request shorter.
const minDigestTokens = 1000

// inputTokens estimates the tokens of the inputs' text.
func inputTokens(inputs []ports.SpecInput) int {
	n := 0
	for _, in := range inputs {
		n += estimateTokens(in.Content)
	}
	return n
}

// askWithinBudget asks for args.Stage from the raw inputs and the earlier
// artifacts, repairing findings once — unless the inputs are too long. They
// are when the request's estimated tokens exceed Config.ContextBudget, or
// when the provider refuses the request as too long for its context window
// (or refused one at least as long before: the service remembers the
// shortest refused, so each stage does not try again).
// Then the stage is asked from the digest of the inputs (the session's
// stored digest when it is current, else made and stored once, see digest)
// and the earlier artifacts. Inputs that fit are always given verbatim,
// even when a digest made for an earlier stage is stored. A refusal for
// inputs too small to digest (minDigestTokens) fails as before. section
// goes into the user message after the earlier stages, either way.
func (s *Service) askWithinBudget(ctx context.Context, args GenerateStageArgs, inputs []ports.SpecInput,
	before map[ports.Stage]ports.SpecArtifact, standards []ports.Standard, section string, findings findingsFunc, log *slog.Logger) (output, ports.ChatResult, error) {
	st := args.Stage
	msgs := buildMessagesWith(st, inputs, before, standards, section)
	n := estimateRequest(msgs, responseFormat(st))
	refused := int(s.refusedTokens.Load())
	switch {
	case n > s.cfg.ContextBudget:
		log.InfoContext(ctx, "the inputs exceed the context budget; using their digest", "estimated_tokens", n, "budget", s.cfg.ContextBudget)
	case refused > 0 && n >= refused && inputTokens(inputs) >= minDigestTokens:
		log.InfoContext(ctx, "the provider refused a request as long before; using the digest of the inputs", "estimated_tokens", n, "refused_tokens", refused)
	default:
		out, res, err := s.askRepairing(ctx, st, msgs, findings, log)
		if !errors.Is(err, ports.ErrContextLength) || inputTokens(inputs) < minDigestTokens {
			return out, res, err
		}
		s.noteRefused(n)
		log.WarnContext(ctx, "the model's context window is too small for the inputs; using their digest", "estimated_tokens", n, "err", err)
	}
	d, ok, err := s.storedDigest(ctx, args.SessionID, inputs)
	if err != nil {
		return output{}, ports.ChatResult{}, err
	}
	if !ok {
		if d, err = s.digest(ctx, args.SessionID, inputs, log); err != nil {
			return output{}, ports.ChatResult{}, err
		}
	}
	msgs = buildMessagesWith(st, digestAsInputs(d), before, standards, section)
	log.InfoContext(ctx, "asking from the digest of the inputs", "estimated_tokens", estimateRequest(msgs, responseFormat(st)))
	return s.askRepairing(ctx, st, msgs, findings, log)
}

// noteRefused remembers that the provider refused a request of n estimated
// tokens as too long, keeping the fewest.
func (s *Service) noteRefused(n int) {
	for {
		cur := s.refusedTokens.Load()
		if cur > 0 && cur <= int64(n) || s.refusedTokens.CompareAndSwap(cur, int64(n)) {
			return
		}
	}
}
