// Package tool is the vocabulary every area of devpilot shares to offer
// operations to the assistant: a Tool with its Effect and Area, the Registry
// that checks calls against each tool's JSON Schema and routes a page's tools
// to the model, an organisation's confirmation Policy, and the encoding of a
// call's outcome. Areas register their tools here without importing the
// assistant, which runs them.
package tool

import (
	"encoding/json"

	"github.com/devpilot/devpilot/ports"
)

// PageContext is where the user is in the console when they ask: the page
// and the project selected there. Routing offers the page's area's tools
// (Registry.Route), and a tool's FillProject takes the selected project.
type PageContext struct {
	CurrentPage       string
	SelectedProjectID string
}

// Policy is an organisation's tool policy, read once for a turn or a call:
// which reads it marked always_confirm. The zero Policy belongs to no
// organisation and marks nothing.
type Policy struct {
	orgID  string
	marked map[string]bool
}

// NewPolicy returns the policy of the organisation orgID marking the reads
// named in alwaysConfirm.
func NewPolicy(orgID string, alwaysConfirm ...string) Policy {
	p := Policy{orgID: orgID}
	for _, name := range alwaysConfirm {
		if p.marked == nil {
			p.marked = make(map[string]bool, len(alwaysConfirm))
		}
		p.marked[name] = true
	}
	return p
}

// OrgID is the organisation the policy is of, "" for the zero Policy.
func (p Policy) OrgID() string { return p.orgID }

// Confirms reports whether a call of t waits for a human decision under the
// policy: every write does, and a read the organisation marked.
func (p Policy) Confirms(t Tool) bool {
	return t.Effect != EffectRead || p.marked[t.Name]
}

// Execution is what running a call outside the chat loop did: ran it
// (Outcome, also for a call refused for its name or arguments) or asked for
// a confirmation (Confirmation). Arguments is the call's JSON when it parses.
type Execution struct {
	Call         ports.ToolCall
	Arguments    json.RawMessage
	Outcome      *ports.ToolOutcome
	Confirmation *ports.Confirmation
}

// message is the JSON a tool message carries: {"ok":true,"result":…} or
// {"ok":false,"error":"…"}.
type message struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// Content encodes an outcome as the model reads it in a tool message
// ({"ok":true,"result":…} or {"ok":false,"error":"…"}); a call answered
// outside the chat (by voice) is stored the same way, so that it reads back
// alike in later turns.
func Content(o ports.ToolOutcome) string {
	m := message{OK: o.OK, Error: o.Error}
	if o.OK {
		m.Result = o.Result
		if len(m.Result) == 0 {
			m.Result = json.RawMessage("null")
		}
	}
	b, err := json.Marshal(m)
	if err != nil { // a Result that is not JSON
		b, _ = json.Marshal(message{Error: "the result could not be encoded"})
	}
	return string(b)
}

// Outcome reads a tool message back; content Content did not write is a
// failure described by the content itself.
func Outcome(content string) ports.ToolOutcome {
	var m message
	if err := json.Unmarshal([]byte(content), &m); err != nil {
		return ports.ToolOutcome{OK: false, Error: content}
	}
	return ports.ToolOutcome{OK: m.OK, Result: m.Result, Error: m.Error}
}

// DecodeArgs decodes a call's arguments, already checked against the tool's
// schema, into v. Errors: invalid when they do not fit v after all.
func DecodeArgs(raw json.RawMessage, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		return ports.Wrap(ports.KindInvalid, err, "the arguments do not fit the tool's schema")
	}
	return nil
}
