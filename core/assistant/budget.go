package assistant

import (
	"encoding/json"
	"fmt"

	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/ports"
)

// DefaultHistoryTokens is the budget of a model call's prompt (messages and
// tools) unless Config.HistoryTokens says otherwise: well inside the
// 128k-token context of today's chat models, leaving room for the answer.
const DefaultHistoryTokens = 64000

// Tokens are estimated, not counted: about 4 bytes of English or JSON to a
// token (OpenAI's rule of thumb), plus a few for each message's framing. No
// tokenizer is in the module graph, and the estimate only has to keep a call
// well inside the budget; a provider's context-length error is handled by
// trimming harder and trying once more.
const (
	bytesPerToken   = 4
	messageOverhead = 4
	// oldToolAnswer bounds, in bytes, what is kept of each tool answer of
	// earlier turns once the history is over its budget.
	oldToolAnswer = 1500
	// minToolAnswer is the least kept of a tool answer of the current turn.
	minToolAnswer = 400
)

// EstimateTokens estimates the tokens of a prompt: its messages and tools.
func EstimateTokens(msgs []ports.Message, tools []ports.ToolDefinition) int {
	n := 0
	for _, m := range msgs {
		n += messageTokens(m)
	}
	for _, t := range tools {
		n += (len(t.Name)+len(t.Description)+len(t.Parameters))/bytesPerToken + messageOverhead
	}
	return n
}

func messageTokens(m ports.Message) int {
	n := len(m.Content) + len(m.Name)
	for _, c := range m.ToolCalls {
		n += len(c.Name) + len(c.Arguments) + len(c.ID)
	}
	return n/bytesPerToken + messageOverhead
}

// fitHistory trims msgs (the system prompt first, the history after it) so
// that, with tools, they fit in budget tokens. In order, until they fit:
// the tool answers of earlier turns are cut short; the oldest turns are left
// out whole (a turn starts at a user message, so no tool answer loses its
// call), with a note saying so; the tool answers of the current turn are cut
// short. The system prompt and the last user message are always kept. It
// reports whether anything was trimmed.
func fitHistory(msgs []ports.Message, tools []ports.ToolDefinition, budget int) ([]ports.Message, bool) {
	total := EstimateTokens(msgs, tools)
	if total <= budget || len(msgs) < 2 {
		return msgs, false
	}
	last := len(msgs) - 1
	for last > 0 && msgs[last].Role != ports.MessageUser {
		last--
	}
	out := make([]ports.Message, len(msgs))
	copy(out, msgs)
	// 1. Earlier turns' tool answers, oldest first.
	for i := 1; i < last && total > budget; i++ {
		total -= shorten(&out[i], oldToolAnswer)
	}
	// 2. The oldest turns, whole.
	dropped, from := 0, 1
	for total > budget && from < last {
		end := from + 1
		for end < last && out[end].Role != ports.MessageUser {
			end++
		}
		for _, m := range out[from:end] {
			total -= messageTokens(m)
		}
		dropped += end - from
		from = end
	}
	if dropped > 0 {
		note := ports.Message{Role: ports.MessageSystem, Content: fmt.Sprintf(
			"(%d earlier messages of this conversation were left out to fit the model's context. Ask the user, or look things up again, if you need them.)", dropped)}
		total += messageTokens(note)
		out = append([]ports.Message{out[0], note}, out[from:]...)
	}
	// 3. The current turn's tool answers, shared out.
	if total > budget {
		var answers []int
		for i := range out {
			if out[i].Role == ports.MessageTool {
				answers = append(answers, i)
			}
		}
		if len(answers) > 0 {
			over := (total - budget) * bytesPerToken
			for _, i := range answers {
				keep := max(len(out[i].Content)-over/len(answers), minToolAnswer)
				total -= shorten(&out[i], keep)
			}
		}
	}
	return out, true
}

// shorten cuts a tool message's content to about keep bytes, as valid JSON
// when it was ours, and returns the tokens saved.
func shorten(m *ports.Message, keep int) int {
	if m.Role != ports.MessageTool || len(m.Content) <= keep {
		return 0
	}
	before := messageTokens(*m)
	head, _ := ports.ClipBytes(m.Content, keep)
	text := head + "… (cut short to fit the model's context; call the tool again for all of it)"
	if o := tool.Outcome(m.Content); o.OK || o.Error != m.Content {
		// Ours: keep it a tool message the model can read as JSON.
		b, _ := json.Marshal(map[string]any{"ok": o.OK, "truncated": true, "partial": text})
		text = string(b)
	}
	m.Content = text
	return before - messageTokens(*m)
}
