package spec

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/devpilot/devpilot/ports"
)

// findingsFunc lists what a valid answer still gets wrong against the
// earlier stages (uncovered requirements, unknown ids, forward
// dependencies): the traceability and story-rule findings that are sent
// back to the model in the repair turn. nil findings mean clean.
type findingsFunc func(doc any) []string

// answer is a valid model answer with the findings it was checked for.
type answer struct {
	out      output
	res      ports.ChatResult
	findings []string
}

// askRepairing calls the model for stage st and validates the answer. An
// invalid answer (not JSON, not the schema, broken id rules) is sent back
// once with its problems, as before; a valid answer with findings is sent
// back once, in a repair turn that lists them. Of the valid answers, the
// one with the fewest findings is kept (the first on a tie), so a repair
// turn never makes the result worse: an invalid repaired answer, or a
// failed repair call, leaves the first answer in place. At most three calls
// are made (invalid, valid with findings, repaired).
//
// A transient model error before any valid answer is returned as it is; any
// other, and a second invalid answer, is a failure.
func (s *Service) askRepairing(ctx context.Context, st ports.Stage, msgs []ports.Message, findings findingsFunc, log *slog.Logger) (output, ports.ChatResult, error) {
	req := ports.ChatRequest{Model: s.cfg.Model, Messages: msgs, MaxTokens: s.cfg.MaxTokens, ResponseFormat: responseFormat(st)}
	var (
		best         *answer
		answered     bool // the first answer came (for the statistics)
		retried      bool // the invalid-answer turn was used
		repaired     bool // the findings turn was used
		lastProblems []string
	)
	for {
		res, err := s.chat(ctx, req)
		if err != nil {
			if best != nil {
				log.WarnContext(ctx, "the repair call failed; keeping the first answer", "err", err)
				return best.out, best.res, nil
			}
			if transient(err) {
				return output{}, ports.ChatResult{}, err
			}
			return output{}, ports.ChatResult{}, failureOf(err)
		}
		out, problems := parseOutput(st, res.Content)
		if !answered {
			answered = true
			if !isRepairAsk(ctx) {
				statsOf(ctx).answered(problems == nil)
			}
		}
		if problems != nil {
			statsOf(ctx).invalidAnswer()
		}
		if problems == nil {
			var found []string
			if findings != nil {
				found = findings(out.doc)
			}
			if best == nil || len(found) < len(best.findings) {
				best = &answer{out: out, res: res, findings: found}
			}
			if len(best.findings) == 0 || repaired {
				if repaired {
					log.InfoContext(ctx, "repair turn done", "findings_left", len(best.findings))
				}
				return best.out, best.res, nil
			}
			repaired = true
			statsOf(ctx).repairTurn()
			log.InfoContext(ctx, "the model's answer has findings; asking for a repair", "findings", len(found), "first", found[0])
			req.Messages = append(slices.Clone(req.Messages),
				ports.Message{Role: ports.MessageAssistant, Content: res.Content},
				ports.Message{Role: ports.MessageUser, Content: repairMessage(st, found)})
			continue
		}
		if best != nil {
			log.InfoContext(ctx, "the repaired answer is invalid; keeping the first answer", "first", problems[0])
			return best.out, best.res, nil
		}
		switch res.FinishReason {
		case ports.FinishLength:
			problems = append([]string{"the answer was cut off at the token limit; keep it shorter"}, problems...)
		case ports.FinishContentFilter:
			problems = append([]string{"the answer was stopped by the provider's content filter"}, problems...)
		}
		lastProblems = problems
		log.InfoContext(ctx, "the model's answer is invalid", "retried", retried, "problems", len(problems), "first", problems[0])
		if retried {
			break
		}
		retried = true
		req.Messages = append(slices.Clone(req.Messages),
			ports.Message{Role: ports.MessageAssistant, Content: res.Content},
			ports.Message{Role: ports.MessageUser, Content: retryMessage(lastProblems)})
	}
	return output{}, ports.ChatResult{}, &failure{Code: CodeInvalidOutput, Message: invalidOutputMessage(st, lastProblems)}
}

// repairMessage tells the model what its valid answer gets wrong against
// the earlier stages, and asks for the whole document again.
func repairMessage(st ports.Stage, findings []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Your %s answer is valid JSON, but it does not trace to the earlier stages:\n", st)
	for i, f := range findings {
		if i == maxProblems {
			fmt.Fprintf(&b, "- … and %d more\n", len(findings)-maxProblems)
			break
		}
		b.WriteString("- " + f + "\n")
	}
	b.WriteString("Fix every one of these: cover every id that is not covered, use only ids that exist in the earlier stages, " +
		"and depend only on items that come earlier. Keep everything else as it is. " +
		"Answer again with the complete, corrected JSON object and nothing else.")
	return b.String()
}
