package fakeanthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

type usageJSON struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
}

// answer is a turn as the fake answers one request.
type answer struct {
	turn   fakeopenai.Turn
	id     string
	tool   string // the forced tool whose input is the turn's text; "" for none
	toolID string
	usage  usageJSON
}

// block is one content block of an answer and the pieces it streams in.
type block struct {
	start  map[string]any
	kind   string // text_delta or input_json_delta
	pieces []string
}

// blocks are the answer's content blocks: the text (or, for a forced
// tool, its call carrying the text as input), then the tool calls.
func (a *answer) blocks() []block {
	var out []block
	t := a.turn
	switch {
	case a.tool != "":
		out = append(out, block{
			start:  map[string]any{"type": "tool_use", "id": a.toolID, "name": a.tool, "input": map[string]any{}},
			kind:   "input_json_delta",
			pieces: t.Deltas,
		})
	case len(t.Deltas) > 0:
		out = append(out, block{start: map[string]any{"type": "text", "text": ""}, kind: "text_delta", pieces: t.Deltas})
	}
	for _, c := range t.Calls {
		args := c.Arguments
		if args == "" {
			args = "{}"
		}
		out = append(out, block{
			start:  map[string]any{"type": "tool_use", "id": c.ID, "name": c.Name, "input": map[string]any{}},
			kind:   "input_json_delta",
			pieces: []string{args},
		})
	}
	return out
}

// stopReason maps the turn's OpenAI finish reason.
func (a *answer) stopReason() string {
	switch a.turn.Finish {
	case "length":
		return "max_tokens"
	case "content_filter":
		return "refusal"
	case "tool_calls":
		return "tool_use"
	}
	if a.tool != "" || len(a.turn.Calls) > 0 {
		return "tool_use"
	}
	return "end_turn"
}

func (a *answer) model() string {
	if a.turn.Model != "" {
		return a.turn.Model
	}
	return "claude-fake"
}

// sleep waits d or until ctx ends, and reports whether it waited all of d.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (a *answer) serve(w http.ResponseWriter, r *http.Request, stream bool) {
	t := a.turn
	if !sleep(r.Context(), t.ResponseDelay) {
		return
	}
	if t.Hangup {
		panic(http.ErrAbortHandler)
	}
	if t.Status != 0 {
		status, typ, msg := errorFor(t.Status, t.ErrorCode, t.ErrorMessage)
		writeError(w, status, t.Header, typ, msg)
		return
	}
	for k, vs := range t.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("Request-Id", "req_"+a.id)
	if stream {
		a.stream(w, r)
	} else {
		a.complete(w, r)
	}
}

func (a *answer) stream(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	if !sleep(ctx, a.turn.FirstTokenDelay) {
		return
	}
	send := func(event string, data any) bool {
		b, err := json.Marshal(data)
		if err != nil {
			panic(err)
		}
		if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	start := a.usage
	start.OutputTokens = 1
	if !send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": a.id, "type": "message", "role": "assistant", "model": a.model(), "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": start,
	}}) || !send("ping", map[string]any{"type": "ping"}) {
		return
	}
	// cut spoils the stream at delta n as the turn says, and reports
	// whether the stream goes on.
	n := 0
	cut := func() bool {
		if a.turn.CutAfter < 0 || n != a.turn.CutAfter {
			return true
		}
		switch a.turn.Cut {
		case "abort":
			panic(http.ErrAbortHandler)
		case "error":
			status := a.turn.CutStatus
			if status == 0 {
				status = http.StatusInternalServerError
			}
			_, typ, msg := errorFor(status, "", "")
			send("error", map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
		}
		return false
	}
	for i, b := range a.blocks() {
		if !send("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": b.start}) {
			return
		}
		for _, p := range b.pieces {
			if !cut() {
				return
			}
			if n > 0 && !sleep(ctx, a.turn.TokenDelay) {
				return
			}
			delta := map[string]any{"type": b.kind}
			if b.kind == "text_delta" {
				delta["text"] = p
			} else {
				delta["partial_json"] = p
			}
			if !send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": delta}) {
				return
			}
			n++
		}
		if !send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i}) {
			return
		}
	}
	if !cut() {
		return
	}
	if !send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": a.stopReason(), "stop_sequence": nil}, "usage": a.usage}) {
		return
	}
	send("message_stop", map[string]any{"type": "message_stop"})
}

func (a *answer) complete(w http.ResponseWriter, r *http.Request) {
	if !sleep(r.Context(), a.turn.FirstTokenDelay) {
		return
	}
	var content []map[string]any
	for _, b := range a.blocks() {
		c := map[string]any{}
		for k, v := range b.start {
			c[k] = v
		}
		var joined string
		for _, p := range b.pieces {
			joined += p
		}
		if b.kind == "text_delta" {
			c["text"] = joined
		} else {
			var input any = map[string]any{}
			if json.Valid([]byte(joined)) {
				input = json.RawMessage(joined)
			}
			c["input"] = input
		}
		content = append(content, c)
	}
	if content == nil {
		content = []map[string]any{}
	}
	body, err := json.Marshal(map[string]any{
		"id": a.id, "type": "message", "role": "assistant", "model": a.model(), "content": content,
		"stop_reason": a.stopReason(), "stop_sequence": nil, "usage": a.usage,
	})
	if err != nil {
		panic(err)
	}
	if a.turn.CutAfter >= 0 {
		switch a.turn.Cut {
		case "error":
			_, typ, msg := errorFor(a.turn.CutStatus, "", "")
			status := a.turn.CutStatus
			if status == 0 {
				status = http.StatusInternalServerError
			}
			writeError(w, status, nil, typ, msg)
			return
		case "abort":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(body[:len(body)/2])
			_ = http.NewResponseController(w).Flush()
			panic(http.ErrAbortHandler)
		default:
			body = body[:len(body)/2]
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}
