package fakebedrock

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// maxBody bounds a request body, as Bedrock bounds a request.
const maxBody = 32 << 20

func (s *Server) handle(w http.ResponseWriter, r *http.Request, stream bool) {
	if !authenticate(w, r) {
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "ValidationException", "The request body is too large.", nil)
		return
	}
	d := decoded{req: fakeopenai.Request{
		Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header.Clone(), Body: body,
		Model: r.PathValue("modelId"), Stream: stream,
	}}
	if err := decode(body, &d); err != nil {
		writeError(w, http.StatusBadRequest, "ValidationException", err.Error(), nil)
		return
	}
	if d.forced && s.forceRefused(d.req.Model) {
		writeError(w, http.StatusBadRequest, "ValidationException",
			"This model doesn't support the toolConfig.toolChoice.tool field. Remove toolConfig.toolChoice.tool and try again.", nil)
		return
	}
	if d.hasCache && s.cachingRefused(d.req.Model) {
		writeError(w, http.StatusBadRequest, "ValidationException",
			"You invoked an unsupported model or your request did not allow prompt caching. See the documentation for more information.", nil)
		return
	}
	turn, seq, ok := s.script.TakeTurn(d.req)
	if !ok {
		writeError(w, http.StatusInternalServerError, "InternalServerException",
			fmt.Sprintf("fakebedrock: no response scripted for request %d (%s %s)", seq, r.Method, r.URL.Path), nil)
		return
	}
	ctx := r.Context()
	if !sleep(ctx, turn.ResponseDelay) {
		return
	}
	if turn.Hangup {
		panic(http.ErrAbortHandler)
	}
	if turn.Status != 0 {
		code, msg := wireError(turn.Status, turn.ErrorCode, turn.ErrorMessage)
		writeError(w, status(turn.Status), code, msg, turn.Header)
		return
	}
	read, write := s.cacheUsage(&d, turn.PromptTokens)
	a := answer{turn: turn, structured: d.structured, seq: seq, model: d.req.Model,
		input: turn.PromptTokens - read - write, cacheRead: read, cacheWrite: write}
	for k, vs := range turn.Header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("X-Amzn-Requestid", a.requestID())
	if stream {
		a.stream(ctx, w)
	} else {
		a.whole(ctx, w)
	}
}

// cacheUsage is the cache reads and writes of a request whose prompt is
// prompt tokens: its prefix's tokens, read when that prefix was seen
// before, else written.
func (s *Server) cacheUsage(d *decoded, prompt int) (read, write int) {
	if !d.hasCache {
		return 0, 0
	}
	n := min(max(d.prefixTokens, 0), max(prompt, 0))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cached[d.prefix] {
		return n, 0
	}
	s.cached[d.prefix] = true
	return 0, n
}

// status is the HTTP status Bedrock answers a scripted error status with.
func status(s int) int {
	switch s {
	case 529:
		return http.StatusServiceUnavailable
	case http.StatusUnauthorized:
		return http.StatusForbidden
	}
	return s
}

// wireError is Bedrock's exception for a scripted error status, with
// OpenAI's error code and message when the script gave them.
func wireError(status int, code, message string) (string, string) {
	lower := strings.ToLower(code + " " + message)
	switch {
	case status == http.StatusTooManyRequests:
		return "ThrottlingException", "Too many requests, please wait before trying again."
	case status == http.StatusServiceUnavailable, status == 529, status == http.StatusBadGateway, status == http.StatusGatewayTimeout:
		return "ServiceUnavailableException", "Bedrock is unable to process your request."
	case status == http.StatusRequestTimeout:
		return "ModelTimeoutException", "Model has timed out in processing the request. Try your request again."
	case status == http.StatusBadRequest && (strings.Contains(lower, "context_length") || strings.Contains(lower, "context length")):
		return "ValidationException", "Input is too long for requested model."
	case status == http.StatusBadRequest, status == http.StatusUnprocessableEntity:
		return "ValidationException", nonEmpty(message, "The request is invalid.")
	case status == http.StatusUnauthorized, status == http.StatusForbidden:
		return "AccessDeniedException", "You don't have access to the model with the specified model ID."
	case status == http.StatusNotFound:
		return "ResourceNotFoundException", "The provided model identifier is invalid."
	}
	return "InternalServerException", "The server encountered an internal error while processing the request."
}

func nonEmpty(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

// writeError answers Bedrock's restJson1 error: the X-Amzn-ErrorType header
// and a JSON message.
func writeError(w http.ResponseWriter, status int, code, message string, header http.Header) {
	for k, vs := range header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-Errortype", code+":http://internal.amazon.com/coral/com.amazon.bedrock/")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]string{"message": message})
	_, _ = w.Write(b)
}

// answer is one successful answer being written.
type answer struct {
	turn                         fakeopenai.Turn
	structured                   string
	model                        string // the request's
	seq                          int
	input, cacheRead, cacheWrite int
}

func (a *answer) requestID() string {
	return fmt.Sprintf("fakebedrock-%08d-0000-0000-0000-000000000000", a.seq)
}

// stopReason is Bedrock's stop reason of the turn.
func (a *answer) stopReason() string {
	switch a.turn.Finish {
	case "tool_calls":
		return "tool_use"
	case "length":
		return "max_tokens"
	case "content_filter":
		return "content_filtered"
	}
	if a.structured != "" {
		return "tool_use"
	}
	return "end_turn"
}

func (a *answer) usage() map[string]any {
	return map[string]any{
		"inputTokens":           a.input,
		"outputTokens":          a.turn.CompletionTokens,
		"totalTokens":           a.input + a.cacheRead + a.cacheWrite + a.turn.CompletionTokens,
		"cacheReadInputTokens":  a.cacheRead,
		"cacheWriteInputTokens": a.cacheWrite,
	}
}

// trace is the answer's trace: for a turn whose model is not the
// request's (the script named one, as the sandbox names its demo model),
// a prompt router's trace naming it as the model that answered; nil
// otherwise.
func (a *answer) trace() map[string]any {
	if a.turn.Model == "" || a.turn.Model == a.model {
		return nil
	}
	return map[string]any{"promptRouter": map[string]any{"invokedModelId": a.turn.Model}}
}

// structuredID is the toolUseId of the structured answer's tool use.
func (a *answer) structuredID() string { return fmt.Sprintf("tooluse_fake%06d", a.seq) }

// event is one event of the stream: its type and JSON payload.
type event struct {
	typ     string
	payload map[string]any
}

// events are the turn's events between messageStart and messageStop, and
// the number of those that count as deltas for the turn's faults at each
// position (a delta event is a text piece or a whole tool call).
func (a *answer) events() (evs [][]event) {
	idx := 0
	if a.structured != "" {
		// The JSON answer, as the forced tool's input.
		first := true
		for _, d := range a.turn.Deltas {
			var e []event
			if first {
				e = append(e, event{"contentBlockStart", map[string]any{"contentBlockIndex": idx,
					"start": map[string]any{"toolUse": map[string]any{"toolUseId": a.structuredID(), "name": a.structured}}}})
				first = false
			}
			e = append(e, event{"contentBlockDelta", map[string]any{"contentBlockIndex": idx,
				"delta": map[string]any{"toolUse": map[string]any{"input": d}}}})
			evs = append(evs, e)
		}
		if !first {
			evs[len(evs)-1] = append(evs[len(evs)-1], event{"contentBlockStop", map[string]any{"contentBlockIndex": idx}})
			idx++
		}
	} else {
		for i, d := range a.turn.Deltas {
			e := []event{{"contentBlockDelta", map[string]any{"contentBlockIndex": idx, "delta": map[string]any{"text": d}}}}
			if i == len(a.turn.Deltas)-1 {
				e = append(e, event{"contentBlockStop", map[string]any{"contentBlockIndex": idx}})
			}
			evs = append(evs, e)
		}
		if len(a.turn.Deltas) > 0 {
			idx++
		}
	}
	for _, c := range a.turn.Calls {
		evs = append(evs, []event{
			{"contentBlockStart", map[string]any{"contentBlockIndex": idx,
				"start": map[string]any{"toolUse": map[string]any{"toolUseId": c.ID, "name": c.Name}}}},
			{"contentBlockDelta", map[string]any{"contentBlockIndex": idx,
				"delta": map[string]any{"toolUse": map[string]any{"input": c.Arguments}}}},
			{"contentBlockStop", map[string]any{"contentBlockIndex": idx}},
		})
		idx++
	}
	return evs
}

// stream writes the answer as an event stream.
func (a *answer) stream(ctx context.Context, w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	if !sleep(ctx, a.turn.FirstTokenDelay) {
		return
	}
	enc := eventstream.NewEncoder()
	send := func(e event) bool {
		var msg eventstream.Message
		msg.Headers.Set(":event-type", eventstream.StringValue(e.typ))
		msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
		msg.Headers.Set(":message-type", eventstream.StringValue("event"))
		e.payload["p"] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"[:8+len(e.typ)%16]
		msg.Payload, _ = json.Marshal(e.payload)
		if err := enc.Encode(w, msg); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	// fault spoils the stream at position at, when the turn says so, and
	// reports whether the stream goes on.
	fault := func(at int) bool {
		if a.turn.CutAfter < 0 || a.turn.CutAfter != at {
			return true
		}
		switch a.turn.Cut {
		case "abort":
			panic(http.ErrAbortHandler)
		case "error":
			code, message := wireError(cmpOr(a.turn.CutStatus, http.StatusInternalServerError), "", "")
			var msg eventstream.Message
			msg.Headers.Set(":exception-type", eventstream.StringValue(streamException(code)))
			msg.Headers.Set(":content-type", eventstream.StringValue("application/json"))
			msg.Headers.Set(":message-type", eventstream.StringValue("exception"))
			msg.Payload, _ = json.Marshal(map[string]string{"message": message})
			_ = enc.Encode(w, msg)
			_ = rc.Flush()
		}
		return false
	}
	if !send(event{"messageStart", map[string]any{"role": "assistant"}}) {
		return
	}
	evs := a.events()
	for i, group := range evs {
		if !fault(i) {
			return
		}
		if i > 0 && !sleep(ctx, a.turn.TokenDelay) {
			return
		}
		for _, e := range group {
			if !send(e) {
				return
			}
		}
	}
	if !fault(len(evs)) {
		return
	}
	if !send(event{"messageStop", map[string]any{"stopReason": a.stopReason()}}) {
		return
	}
	meta := map[string]any{"usage": a.usage(), "metrics": map[string]any{"latencyMs": 1}}
	if tr := a.trace(); tr != nil {
		meta["trace"] = tr
	}
	send(event{"metadata", meta})
}

// whole writes the answer as Converse's JSON.
func (a *answer) whole(ctx context.Context, w http.ResponseWriter) {
	if !sleep(ctx, a.turn.FirstTokenDelay) {
		return
	}
	var content []map[string]any
	text := a.turn.Text()
	switch {
	case a.structured != "":
		var input any = map[string]any{}
		if json.Valid([]byte(text)) {
			input = json.RawMessage(text)
		}
		content = append(content, map[string]any{"toolUse": map[string]any{"toolUseId": a.structuredID(), "name": a.structured, "input": input}})
	case text != "":
		content = append(content, map[string]any{"text": text})
	}
	for _, c := range a.turn.Calls {
		var input any = map[string]any{}
		if json.Valid([]byte(c.Arguments)) {
			input = json.RawMessage(c.Arguments)
		}
		content = append(content, map[string]any{"toolUse": map[string]any{"toolUseId": c.ID, "name": c.Name, "input": input}})
	}
	out := map[string]any{
		"output":     map[string]any{"message": map[string]any{"role": "assistant", "content": content}},
		"stopReason": a.stopReason(),
		"usage":      a.usage(),
		"metrics":    map[string]any{"latencyMs": 1},
	}
	if tr := a.trace(); tr != nil {
		out["trace"] = tr
	}
	body, err := json.Marshal(out)
	if err != nil {
		panic(err)
	}
	if a.turn.CutAfter >= 0 {
		switch a.turn.Cut {
		case "truncate":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(body[:len(body)/2])
			return
		case "abort":
			panic(http.ErrAbortHandler)
		case "error":
			code, msg := wireError(cmpOr(a.turn.CutStatus, http.StatusInternalServerError), "", "")
			writeError(w, status(cmpOr(a.turn.CutStatus, http.StatusInternalServerError)), code, msg, nil)
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, bytes.NewReader(body))
}

func cmpOr(v, def int) int {
	if v == 0 {
		return def
	}
	return v
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

// streamException is the member of ConverseStream's event union an
// exception is sent as: the exceptions a stream can carry by their own
// name, any other as modelStreamErrorException.
func streamException(code string) string {
	switch code {
	case "InternalServerException", "ValidationException", "ThrottlingException", "ServiceUnavailableException":
		return strings.ToLower(code[:1]) + code[1:]
	}
	return "modelStreamErrorException"
}
