package fakeopenai

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// created is the fixed "created" timestamp of every response, so that
// responses are reproducible.
const created = 1735689600

type chunkToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chunkDelta struct {
	Role      string          `json:"role,omitempty"`
	Content   *string         `json:"content,omitempty"`
	ToolCalls []chunkToolCall `json:"tool_calls,omitempty"`
}

type chunkChoice struct {
	Index        int             `json:"index"`
	Delta        chunkDelta      `json:"delta"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
}

type usageJSON struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type chunkJSON struct {
	ID                string          `json:"id"`
	Object            string          `json:"object"`
	Created           int64           `json:"created"`
	Model             string          `json:"model"`
	SystemFingerprint string          `json:"system_fingerprint"`
	Choices           []chunkChoice   `json:"choices"`
	Usage             json.RawMessage `json:"usage,omitempty"`
}

type completionMessage struct {
	Role      string          `json:"role"`
	Content   *string         `json:"content"`
	Refusal   *string         `json:"refusal"`
	ToolCalls []chunkToolCall `json:"tool_calls,omitempty"`
}

type completionJSON struct {
	ID                string `json:"id"`
	Object            string `json:"object"`
	Created           int64  `json:"created"`
	Model             string `json:"model"`
	SystemFingerprint string `json:"system_fingerprint"`
	Choices           []struct {
		Index        int               `json:"index"`
		Message      completionMessage `json:"message"`
		Logprobs     json.RawMessage   `json:"logprobs"`
		FinishReason string            `json:"finish_reason"`
	} `json:"choices"`
	Usage usageJSON `json:"usage"`
}

// event is one streamed delta: a piece of text or tool-call entries.
type event struct {
	content   *string
	toolCalls []chunkToolCall
}

func (r Response) events() []event {
	var evs []event
	for _, t := range r.textDeltas() {
		evs = append(evs, event{content: &t})
	}
	for _, tc := range r.toolDeltas() {
		evs = append(evs, event{toolCalls: tc})
	}
	return evs
}

func (r Response) usageFor(req *Request, deltas int) usageJSON {
	u := usageJSON{CompletionTokens: deltas}
	if r.usage != nil {
		u.PromptTokens, u.CompletionTokens = r.usage[0], r.usage[1]
	} else {
		for _, m := range req.Messages {
			u.PromptTokens += len(strings.Fields(m.Content))
		}
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
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

func serveChat(w http.ResponseWriter, r *http.Request, req *Request, resp Response, seq int) {
	ctx := r.Context()
	if !sleep(ctx, resp.responseDelay) {
		return
	}
	switch resp.kind {
	case kindHangup:
		panic(http.ErrAbortHandler)
	case kindError:
		writeError(w, resp.status, resp.header, resp.body)
		return
	}
	for k, vs := range resp.header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	model := resp.model
	if model == "" {
		model = req.Model
	}
	id := fmt.Sprintf("chatcmpl-fake%06d", seq)
	if req.Stream {
		streamChat(ctx, w, req, resp, id, model)
	} else {
		completeChat(ctx, w, req, resp, id, model)
	}
}

func streamChat(ctx context.Context, w http.ResponseWriter, req *Request, resp Response, id, model string) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	if !sleep(ctx, resp.firstTokenDelay) {
		return
	}

	var usageField json.RawMessage
	if req.IncludeUsage {
		usageField = json.RawMessage("null")
	}
	send := func(data []byte) bool {
		if _, err := fmt.Fprintf(w, "data: %s\n\n", data); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	sendChunk := func(d chunkDelta, finish *string) bool {
		b, err := json.Marshal(chunkJSON{
			ID: id, Object: "chat.completion.chunk", Created: created, Model: model,
			SystemFingerprint: "fp_fake",
			Choices:           []chunkChoice{{Delta: d, Logprobs: json.RawMessage("null"), FinishReason: finish}},
			Usage:             usageField,
		})
		if err != nil {
			panic(err)
		}
		return send(b)
	}
	// runFaults applies the faults placed at position at and reports whether
	// the stream goes on.
	runFaults := func(at int, last bool) bool {
		for _, f := range resp.faults {
			if f.at != at && !(last && (f.at == afterAll || f.at > at)) {
				continue
			}
			switch f.kind {
			case faultTruncate:
				return false
			case faultAbort:
				panic(http.ErrAbortHandler)
			case faultMalformed:
				if !send([]byte(`{"id":"` + id + `","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"`)) {
					return false
				}
			case faultError:
				send(compactJSON(f.body))
				return false
			}
		}
		return true
	}

	empty := ""
	if !sendChunk(chunkDelta{Role: "assistant", Content: &empty}, nil) {
		return
	}
	evs := resp.events()
	for i, ev := range evs {
		if !runFaults(i, false) {
			return
		}
		if i > 0 && !sleep(ctx, resp.tokenDelay) {
			return
		}
		if !sendChunk(chunkDelta{Content: ev.content, ToolCalls: ev.toolCalls}, nil) {
			return
		}
	}
	if !runFaults(len(evs), true) {
		return
	}
	finish := resp.finishReason()
	if !sendChunk(chunkDelta{}, &finish) {
		return
	}
	if req.IncludeUsage {
		u, err := json.Marshal(resp.usageFor(req, len(evs)))
		if err != nil {
			panic(err)
		}
		b, err := json.Marshal(chunkJSON{
			ID: id, Object: "chat.completion.chunk", Created: created, Model: model,
			SystemFingerprint: "fp_fake", Choices: []chunkChoice{}, Usage: u,
		})
		if err != nil {
			panic(err)
		}
		if !send(b) {
			return
		}
	}
	send([]byte("[DONE]"))
}

func completeChat(ctx context.Context, w http.ResponseWriter, req *Request, resp Response, id, model string) {
	if !sleep(ctx, resp.firstTokenDelay) {
		return
	}
	evs := resp.events()
	var out completionJSON
	out.ID, out.Object, out.Created, out.Model = id, "chat.completion", created, model
	out.SystemFingerprint = "fp_fake"
	out.Choices = make([]struct {
		Index        int               `json:"index"`
		Message      completionMessage `json:"message"`
		Logprobs     json.RawMessage   `json:"logprobs"`
		FinishReason string            `json:"finish_reason"`
	}, 1)
	c := &out.Choices[0]
	c.Message.Role = "assistant"
	if resp.text != "" || len(resp.calls) == 0 {
		text := resp.text
		c.Message.Content = &text
	}
	for i, call := range resp.calls {
		tc := chunkToolCall{ID: resp.callID(i), Type: "function"}
		tc.Function.Name, tc.Function.Arguments = call.Name, call.Arguments
		c.Message.ToolCalls = append(c.Message.ToolCalls, tc)
	}
	c.Logprobs = json.RawMessage("null")
	c.FinishReason = resp.finishReason()
	out.Usage = resp.usageFor(req, len(evs))
	body, err := json.Marshal(out)
	if err != nil {
		panic(err)
	}
	writeBody(w, "application/json", body, resp.faults)
}

// writeBody answers 200 with body, spoilt by the faults of a response that
// does not stream: half of it (Truncated), half of it and a cut connection
// (AbortedAfter), a prefix that is not JSON (MalformedAfter), or an error
// instead (FailAfter).
func writeBody(w http.ResponseWriter, contentType string, body []byte, faults []fault) {
	for _, f := range faults {
		switch f.kind {
		case faultTruncate:
			w.Header().Set("Content-Type", contentType)
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(body[:len(body)/2])
			return
		case faultAbort:
			w.Header().Set("Content-Type", contentType)
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(body[:len(body)/2])
			_ = http.NewResponseController(w).Flush()
			panic(http.ErrAbortHandler)
		case faultMalformed:
			body = append([]byte("{not json "), body...)
		case faultError:
			status := f.status
			if status == 0 {
				status = http.StatusInternalServerError
			}
			writeError(w, status, f.header, f.body)
			return
		}
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}
