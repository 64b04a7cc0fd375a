package fakeopenai

import "strings"

// WithOfferedToolsOnly makes the fake a model that can call only the tools
// it is offered (see SetOfferedToolsOnly).
func WithOfferedToolsOnly() Option {
	return func(s *Server) { s.offeredOnly = true }
}

// SetOfferedToolsOnly makes the fake, from the next chat request on, answer
// as a real model must when a scripted response calls a tool the request
// does not offer in its tools: it cannot call it, so it answers with text
// instead (CannotCall), finishing with "stop". The scripted response is
// consumed all the same. false lets scripts call any tool again (the
// default).
func (s *Server) SetOfferedToolsOnly(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.offeredOnly = on
}

// CannotCallPrefix starts the text a WithOfferedToolsOnly fake answers in
// place of calls to tools it was not offered.
const CannotCallPrefix = "I cannot do that: I do not have the tool "

// offeredOnlyResponse replaces resp, when the fake can call only offered tools and
// resp calls one req does not offer, by the text a model answers then.
func (s *Server) offeredOnlyResponse(req *Request, resp Response) Response {
	s.mu.Lock()
	on := s.offeredOnly
	s.mu.Unlock()
	if !on || resp.kind != kindCompletion || len(resp.calls) == 0 {
		return resp
	}
	var missing []string
	for _, c := range resp.calls {
		if _, ok := req.Tool(c.Name); !ok {
			missing = append(missing, c.Name)
		}
	}
	if len(missing) == 0 {
		return resp
	}
	return Text(CannotCallPrefix + strings.Join(missing, ", ") + ".")
}
