package fakeopenai

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Turn is a scripted Response as a fake of another provider's wire format
// (Anthropic's Messages API, Amazon Bedrock's Converse) reads it, so that
// such a fake shares this server's script, responder and record: a test
// enqueues the same Responses whichever wire the adapter under test speaks.
type Turn struct {
	// Status is not 0 for an error answer: the fake answers it with its own
	// wire's error of that status (429 throttling, 529 or 503 overloaded,
	// 400 invalid request, …). ErrorType, ErrorCode and ErrorMessage are
	// read from Body when it is OpenAI's JSON error object; Header holds
	// the answer's headers (Retry-After).
	Status       int
	Header       http.Header
	Body         []byte
	ErrorType    string
	ErrorCode    string
	ErrorMessage string
	// Hangup cuts the connection without an answer.
	Hangup bool

	// Deltas are the pieces of text streamed in order (their concatenation
	// is the answer's text); Calls the tool calls made after the text, with
	// their ids filled in ("call_<n>" when the script set none).
	Deltas []string
	Calls  []Call
	// Finish is OpenAI's finish reason: stop, tool_calls, length or
	// content_filter.
	Finish string
	// Model is the model the answer names: the script's, else the request's.
	Model string
	// PromptTokens and CompletionTokens are the usage to report.
	PromptTokens, CompletionTokens int

	// ResponseDelay is waited before answering at all, FirstTokenDelay
	// after the headers of a stream, TokenDelay between deltas.
	ResponseDelay, FirstTokenDelay, TokenDelay time.Duration

	// CutAfter, when not negative, is the number of deltas (text pieces,
	// then one per call) after which the stream is spoilt the way Cut
	// says: "truncate" ends the body cleanly without its end events,
	// "abort" cuts the connection, "error" sends an error event (of
	// CutStatus) and ends.
	CutAfter  int
	Cut       string
	CutStatus int
}

// Text is the concatenation of the turn's deltas.
func (t Turn) Text() string {
	var s string
	for _, d := range t.Deltas {
		s += d
	}
	return s
}

// TakeTurn records req (already decoded by a fake of another wire format into
// this package's Request: its Path, Header and Body set, and Model,
// Messages, Tools, ToolChoice, ResponseFormat, MaxTokens and Stream as that
// wire's request says) and returns what the fake answers it: a context-limit
// refusal (SetContextLimit), else the next scripted response or the
// responder's, narrowed to the offered tools (SetOfferedToolsOnly). ok is
// false when there is neither a script nor a responder; that is reported as
// a test failure, and the caller answers a 500 of its own wire.
func (s *Server) TakeTurn(req Request) (turn Turn, seq int, ok bool) {
	seq = s.record(req)
	resp, over := s.overContextLimit(&req)
	if !over {
		resp, ok = s.nextChat(&req)
		if !ok {
			s.errorf("fakeopenai: no response scripted for request %d (%s %s)", seq, req.Method, req.Path)
			return Turn{}, seq, false
		}
		resp = s.offeredOnlyResponse(&req, resp)
	}
	return s.named(resp).turn(&req), seq, true
}

func (r Response) turn(req *Request) Turn {
	t := Turn{
		ResponseDelay: r.responseDelay, FirstTokenDelay: r.firstTokenDelay, TokenDelay: r.tokenDelay,
		Header: r.header.Clone(), CutAfter: -1,
	}
	switch r.kind {
	case kindHangup:
		t.Hangup = true
		return t
	case kindError:
		t.Status, t.Body = r.status, r.body
		var e struct {
			Error struct {
				Type    string `json:"type"`
				Code    any    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(r.body, &e) == nil {
			t.ErrorType, t.ErrorMessage = e.Error.Type, e.Error.Message
			if c, ok := e.Error.Code.(string); ok {
				t.ErrorCode = c
			}
		}
		return t
	}
	t.Deltas = r.textDeltas()
	for i, c := range r.calls {
		c.ID = r.callID(i)
		if c.ID == "" {
			c.ID = fmt.Sprintf("call_%d", i)
		}
		t.Calls = append(t.Calls, c)
	}
	t.Finish = r.finishReason()
	t.Model = r.model
	if t.Model == "" {
		t.Model = req.Model
	}
	u := r.usageFor(req, len(t.Deltas)+len(t.Calls))
	t.PromptTokens, t.CompletionTokens = u.PromptTokens, u.CompletionTokens
	for _, f := range r.faults {
		at := f.at
		if at == afterAll {
			at = len(t.Deltas) + len(t.Calls)
		}
		if t.CutAfter >= 0 && at >= t.CutAfter {
			continue
		}
		switch f.kind {
		case faultTruncate:
			t.CutAfter, t.Cut = at, "truncate"
		case faultAbort:
			t.CutAfter, t.Cut = at, "abort"
		case faultError:
			t.CutAfter, t.Cut, t.CutStatus = at, "error", f.status
		}
	}
	return t
}
