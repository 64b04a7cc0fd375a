package openai

import "github.com/devpilot/devpilot/ports"

// fragment is one entry of a streamed delta's tool_calls. Index is nil when
// the server left it out.
type fragment struct {
	Index     *int
	ID        string
	Name      string
	Arguments string
}

// assembler builds complete tool calls out of streamed fragments. OpenAI
// numbers each call with an index and sends its id and name once, then pieces
// of its arguments under the same index; other servers omit the index, repeat
// it for every call, start above 0, or send several entries for one call in
// a chunk. The rules, applied to each fragment in order:
//
//  1. A fragment with no id, name or arguments says nothing and is skipped.
//  2. A fragment with a known id continues the call with that id, unless it
//     names an index that call was not given: then it continues the call
//     holding that index, or starts a new one.
//  3. A fragment with a new id starts a new call, even when its index is
//     taken (the new call takes the index over), except that it completes a
//     call holding its index that has no id yet.
//  4. A fragment with no id and an index continues the call holding that
//     index, or starts a new call holding it.
//  5. A fragment with neither id nor index continues the last call a fragment
//     went to, or starts the first call.
//
// Continuing a call appends the fragment's arguments and sets its name if it
// has none yet (servers that repeat the name do not double it). Calls are
// returned in the order they were first seen.
type assembler struct {
	calls   []ports.ToolCall
	indexOf []*int
	byID    map[string]int
	byIndex map[int]int
	last    int
}

func (a *assembler) add(f fragment) {
	if f.ID == "" && f.Name == "" && f.Arguments == "" {
		return
	}
	if a.byID == nil {
		a.byID = map[string]int{}
		a.byIndex = map[int]int{}
	}
	pos := a.target(f)
	if pos < 0 {
		pos = len(a.calls)
		a.calls = append(a.calls, ports.ToolCall{})
		a.indexOf = append(a.indexOf, nil)
	}
	c := &a.calls[pos]
	if c.ID == "" && f.ID != "" {
		c.ID = f.ID
		if _, seen := a.byID[f.ID]; !seen {
			a.byID[f.ID] = pos
		}
	}
	if c.Name == "" {
		c.Name = f.Name
	}
	c.Arguments += f.Arguments
	if f.Index != nil {
		idx := *f.Index
		a.byIndex[idx] = pos
		if a.indexOf[pos] == nil {
			a.indexOf[pos] = &idx
		}
	}
	a.last = pos
}

// target returns the position of the call f continues, or -1 for a new call.
func (a *assembler) target(f fragment) int {
	held := func() int {
		if f.Index == nil {
			return -1
		}
		if pos, ok := a.byIndex[*f.Index]; ok {
			return pos
		}
		return -1
	}
	switch {
	case f.ID != "":
		if pos, ok := a.byID[f.ID]; ok {
			own := a.indexOf[pos]
			if f.Index == nil || own == nil || *own == *f.Index {
				return pos
			}
			return held()
		}
		if pos := held(); pos >= 0 && a.calls[pos].ID == "" {
			return pos
		}
		return -1
	case f.Index != nil:
		return held()
	case len(a.calls) > 0:
		return a.last
	default:
		return -1
	}
}

// result returns the calls assembled so far, in first-seen order.
func (a *assembler) result() []ports.ToolCall {
	if len(a.calls) == 0 {
		return nil
	}
	out := make([]ports.ToolCall, len(a.calls))
	copy(out, a.calls)
	return out
}
