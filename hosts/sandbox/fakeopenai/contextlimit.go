package fakeopenai

import (
	"fmt"
	"net/http"
)

// SetContextLimit makes the fake a model with a context window of n tokens:
// a chat completion request whose estimated prompt tokens (EstimateTokens)
// exceed n is answered with OpenAI's 400 context_length_exceeded error, as
// such a model's API does, before the script or the responder is consulted
// (the request is recorded all the same). 0, the default, removes the limit.
func (s *Server) SetContextLimit(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.contextLimit = n
}

// EstimateTokens estimates the prompt tokens of a chat completion request
// by OpenAI's rule of thumb of 4 bytes of text a token: over every
// message's content, tool calls and name, the tools' definitions and the
// response format's schema, plus 4 tokens of framing a message and 3 for
// the reply's priming.
func EstimateTokens(r *Request) int {
	bytes := 0
	n := 3
	for _, m := range r.Messages {
		n += 4
		bytes += len(m.Content) + len(m.Name)
		for _, c := range m.ToolCalls {
			bytes += len(c.Name) + len(c.Arguments)
		}
	}
	for _, t := range r.Tools {
		bytes += len(t.Name) + len(t.Description) + len(t.Parameters)
	}
	if r.ResponseFormat != nil && r.ResponseFormat.JSONSchema != nil {
		bytes += len(r.ResponseFormat.JSONSchema.Schema)
	}
	return n + (bytes+3)/4
}

// ContextLengthExceededFor is OpenAI's 400 context_length_exceeded error of
// a model with a window of limit tokens for a request of got tokens.
func ContextLengthExceededFor(limit, got int) Response {
	return Error(http.StatusBadRequest, fmt.Sprintf(`{"error":{"message":"This model's maximum context length is %d tokens. `+
		`However, your messages resulted in %d tokens. Please reduce the length of the messages.",`+
		`"type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`, limit, got))
}

// overContextLimit returns the error answer for a request over the
// context limit, if one is set and it is.
func (s *Server) overContextLimit(req *Request) (Response, bool) {
	s.mu.Lock()
	limit := s.contextLimit
	s.mu.Unlock()
	if limit <= 0 {
		return Response{}, false
	}
	if got := EstimateTokens(req); got > limit {
		return ContextLengthExceededFor(limit, got), true
	}
	return Response{}, false
}
