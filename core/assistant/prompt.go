package assistant

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// DefaultSystemPrompt is the system prompt when Config.SystemPrompt is empty.
const DefaultSystemPrompt = `You are devpilot, the assistant of a product team. You help with specifications, cloud services, content and code repositories, using the tools you are given. Use tools to look things up instead of guessing. Tools that change something run only after the user approves them: ask for such a change by calling the tool, then wait for the result. Be brief and precise.`

// systemPrompt is the base prompt, the user's standing instructions and the
// context of the request.
func systemPrompt(base string, prefs []ports.Preference, page *PageContext) string {
	base = strings.TrimSpace(base)
	onPage := page != nil && (page.CurrentPage != "" || page.SelectedProjectID != "")
	if len(prefs) == 0 && !onPage {
		return base
	}
	var b strings.Builder
	b.WriteString(base)
	if len(prefs) > 0 {
		b.WriteString("\n\nThe user's standing instructions (follow them unless they conflict with the above):")
		for _, p := range prefs {
			b.WriteString("\n- ")
			b.WriteString(oneLine(p.Instruction))
		}
	}
	if onPage {
		b.WriteString("\n\nContext of this request:")
		if page.CurrentPage != "" {
			b.WriteString("\n- Current page: " + oneLine(page.CurrentPage))
		}
		if page.SelectedProjectID != "" {
			b.WriteString("\n- Selected project id: " + page.SelectedProjectID)
		}
	}
	return b.String()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Answers synthesised for tool calls that have no stored answer.
const (
	answerAwaiting = "not run yet: awaiting the user's confirmation"
	answerExpired  = "not run: the confirmation expired without a decision"
	answerRejected = "not run: the user rejected it"
	answerApproved = "approved by the user, but no outcome was recorded"
	answerMissing  = "no result was recorded for this call"
)

// buildMessages is what the model sees: the system prompt, then the stored
// history in order, with every assistant tool call answered by a tool message
// right after it. Tool messages are stored when the answer comes (a
// confirmation may be decided turns later), so they are moved to their call;
// calls without an answer get one made up from their confirmation, and
// answers to no call are left out.
func buildMessages(system string, history []ports.ChatMessage, confs []ports.Confirmation, now time.Time) []ports.Message {
	answers := map[string]ports.Message{}
	for _, m := range history {
		if m.Role == ports.MessageTool {
			if _, dup := answers[m.ToolCallID]; !dup {
				answers[m.ToolCallID] = m.Message
			}
		}
	}
	byCall := make(map[string]ports.Confirmation, len(confs))
	for _, c := range confs {
		byCall[c.ToolCallID] = c
	}
	out := []ports.Message{{Role: ports.MessageSystem, Content: system}}
	answered := map[string]bool{}
	for _, m := range history {
		switch m.Role {
		case ports.MessageUser:
			out = append(out, m.Message)
		case ports.MessageAssistant:
			if m.Content == "" && len(m.ToolCalls) == 0 {
				continue
			}
			out = append(out, m.Message)
			for _, call := range m.ToolCalls {
				if answered[call.ID] {
					continue // a duplicate id: answered once already
				}
				answered[call.ID] = true
				a, ok := answers[call.ID]
				if !ok {
					a = ports.Message{Role: ports.MessageTool, ToolCallID: call.ID, Name: call.Name,
						Content: toolContent(failed(unanswered(byCall, call.ID, now)))}
				}
				out = append(out, a)
			}
		}
	}
	return out
}

func unanswered(byCall map[string]ports.Confirmation, callID string, now time.Time) string {
	c, ok := byCall[callID]
	if !ok {
		return answerMissing
	}
	switch effectiveStatus(c, now) {
	case ports.ConfirmationPending:
		return answerAwaiting
	case ports.ConfirmationExpired:
		return answerExpired
	case ports.ConfirmationRejected:
		return answerRejected
	default:
		return answerApproved
	}
}

// effectiveStatus is a confirmation's status, counting a pending one past
// its expiry as expired before a store has marked it so.
func effectiveStatus(c ports.Confirmation, now time.Time) ports.ConfirmationStatus {
	if c.Status == ports.ConfirmationPending && !now.Before(c.ExpiresAt) {
		return ports.ConfirmationExpired
	}
	return c.Status
}

func failed(reason string) ports.ToolOutcome { return ports.ToolOutcome{OK: false, Error: reason} }

// toolMessage is the JSON a tool message carries: {"ok":true,"result":…} or
// {"ok":false,"error":"…"}.
type toolMessage struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

func toolContent(o ports.ToolOutcome) string {
	m := toolMessage{OK: o.OK, Error: o.Error}
	if o.OK {
		m.Result = o.Result
		if len(m.Result) == 0 {
			m.Result = json.RawMessage("null")
		}
	}
	b, err := json.Marshal(m)
	if err != nil { // a Result that is not JSON
		b, _ = json.Marshal(toolMessage{Error: "the result could not be encoded"})
	}
	return string(b)
}

// outcomeOf reads a tool message back; content that is not ours is a failure
// described by the content itself.
func outcomeOf(content string) ports.ToolOutcome {
	var m toolMessage
	if err := json.Unmarshal([]byte(content), &m); err != nil {
		return failed(content)
	}
	return ports.ToolOutcome{OK: m.OK, Result: m.Result, Error: m.Error}
}

// Instructions are a base prompt followed by the user's standing
// instructions, worded as the chat system prompt words them; the voice host
// gives them to realtime sessions.
func Instructions(base string, prefs []ports.Preference) string {
	return systemPrompt(base, prefs, nil)
}

// ToolContent encodes an outcome as the chat loop stores it in a tool
// message ({"ok":true,"result":…} or {"ok":false,"error":"…"}), so that a
// call answered elsewhere (by voice) reads back the same in later turns.
func ToolContent(o ports.ToolOutcome) string { return toolContent(o) }
