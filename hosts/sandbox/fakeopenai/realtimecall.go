package fakeopenai

import (
	"context"
	crand "crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// AnswerSDP is the SDP answer the fake gives every realtime call.
const AnswerSDP = "v=0\r\no=- 4227147428 1719357865 IN IP4 127.0.0.1\r\ns=-\r\nc=IN IP4 0.0.0.0\r\nt=0 0\r\n" +
	"a=group:BUNDLE 0 1\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=mid:0\r\na=rtpmap:111 opus/48000/2\r\n" +
	"m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\na=mid:1\r\na=sctp-port:5000\r\n"

// maxCallForm bounds the multipart form of a call request the fake reads.
const maxCallForm = 1 << 20

// RealtimeCallRequest is one request to POST /v1/realtime/calls that carried
// a multipart form: the offer and the session decoded as a client secret
// request's (RealtimeRequest; its ExpiresAfter fields stay zero). CallID is
// the id the call got, "" when the request was refused.
type RealtimeCallRequest struct {
	RealtimeRequest
	SDP    string
	CallID string
}

// RealtimeResponse is one response of a scripted call: the sideband reports
// it in a response.done event with this usage.
type RealtimeResponse struct {
	ID                string
	InputTokens       int
	OutputTokens      int
	CachedTokens      int
	InputAudioTokens  int
	OutputAudioTokens int
}

// CallScript is what the sideband of a call does on every join: it sends
// session.created, then a response.done event for each of Responses (a
// response listed twice is sent twice, and every join sends them all
// again, as a provider replaying events would), then ends the call
// (closes with 1000, and later joins get 404), or with Hold stays open until
// EndCall or DropSideband.
type CallScript struct {
	Responses []RealtimeResponse
	Hold      bool
	// CloseCode, when set (and Hold is not), closes the sideband with this
	// WebSocket status (1011, say) after the responses instead, and the call
	// goes on: a later join plays the script again.
	CloseCode int
}

// fakeCall is the state of one call.
type fakeCall struct {
	script CallScript
	joins  int
	ended  chan struct{} // closed by EndCall or the end of a script without Hold
	drop   chan struct{} // a signal to the open sideband to drop without a close
}

// EnqueueRealtimeCall appends responses to the call script: each valid
// request to POST /v1/realtime/calls consumes the next one; only errors and
// hang-ups are used (any other answers normally). Without one, the request
// gets a new call.
func (s *Server) EnqueueRealtimeCall(responses ...Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.realtimeCalls = append(s.realtimeCalls, responses...)
}

// ScriptCalls makes script the sideband behaviour of the calls created from
// now on (the default: no responses, the call ends at once).
func (s *Server) ScriptCalls(script CallScript) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.callScript = script
}

// ScriptCall sets the sideband behaviour of call id for its next joins. It
// reports whether the call exists.
func (s *Server) ScriptCall(id string, script CallScript) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.calls[id]
	if ok {
		c.script = script
	}
	return ok
}

// EndCall ends call id: an open sideband is closed with 1000 after what it
// has sent, and later joins get 404. It reports whether the call existed.
func (s *Server) EndCall(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.calls[id]
	if ok {
		select {
		case <-c.ended:
		default:
			close(c.ended)
		}
	}
	return ok
}

// DropSideband drops the open sideband of call id without a close frame, as a
// failing network would, once it has sent its script (at once when it has,
// else when it has, or else the next join's); the call goes on, and may be
// joined again. It reports whether the call exists and no drop was pending.
func (s *Server) DropSideband(id string) bool {
	s.mu.Lock()
	c, ok := s.calls[id]
	s.mu.Unlock()
	if !ok {
		return false
	}
	select {
	case c.drop <- struct{}{}:
		return true
	default:
		return false
	}
}

// SidebandJoins returns how many times the sideband of call id was joined.
func (s *Server) SidebandJoins(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.calls[id]; ok {
		return c.joins
	}
	return 0
}

// RealtimeCallRequests returns a copy of every call request received so far
// that carried a form, in arrival order.
func (s *Server) RealtimeCallRequests() []RealtimeCallRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]RealtimeCallRequest, len(s.callReqs))
	copy(out, s.callReqs)
	return out
}

func (s *Server) handleRealtimeCall(w http.ResponseWriter, r *http.Request) {
	if !authorized(w, r) {
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxCallForm)
	if err := r.ParseMultipartForm(maxCallForm); err != nil {
		invalidRequest(w, "", "The request body must be multipart/form-data with the fields sdp and session: "+err.Error())
		return
	}
	req := RealtimeCallRequest{RealtimeRequest: RealtimeRequest{Header: r.Header.Clone()}, SDP: r.FormValue("sdp")}
	sessJSON := r.FormValue("session")
	var wire wireRealtimeRequest
	var decodeErr error
	if sessJSON != "" {
		req.Body = []byte(sessJSON)
		wire.Session = new(wireSession)
		if decodeErr = json.Unmarshal([]byte(sessJSON), wire.Session); decodeErr == nil {
			req.fill(&wire)
		}
	}
	param, msg := "", ""
	switch {
	case !strings.HasPrefix(req.SDP, "v=0"):
		param, msg = "sdp", "Invalid SDP offer: it must start with 'v=0'."
	case decodeErr != nil:
		param, msg = "session", "We could not parse the JSON of 'session': "+decodeErr.Error()
	case sessJSON != "":
		param, msg = validateRealtime(&wire)
	}
	if msg != "" {
		s.mu.Lock()
		s.callReqs = appendBounded(s, s.callReqs, req)
		s.mu.Unlock()
		invalidRequest(w, param, msg)
		return
	}
	if resp, ok := s.next(&s.realtimeCalls); ok {
		if !sleep(r.Context(), resp.responseDelay) {
			return
		}
		switch resp.kind {
		case kindHangup:
			panic(http.ErrAbortHandler)
		case kindError:
			writeError(w, resp.status, resp.header, resp.body)
			return
		}
	}
	req.CallID = "rtc_" + crand.Text()
	s.mu.Lock()
	s.callReqs = appendBounded(s, s.callReqs, req)
	if s.calls == nil {
		s.calls = map[string]*fakeCall{}
	}
	s.calls[req.CallID] = &fakeCall{script: s.callScript, ended: make(chan struct{}), drop: make(chan struct{}, 1)}
	s.mu.Unlock()
	w.Header().Set("Location", "/v1/realtime/calls/"+req.CallID)
	w.Header().Set("Content-Type", "application/sdp")
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write([]byte(AnswerSDP))
}

// handleSideband serves GET /v1/realtime?call_id=: the sideband WebSocket of
// a call (see CallScript).
func (s *Server) handleSideband(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("call_id")
	if id == "" {
		invalidRequest(w, "call_id", "The fake serves only sideband connections: the query must name a call_id.")
		return
	}
	if !authorized(w, r) {
		return
	}
	s.mu.Lock()
	c, ok := s.calls[id]
	if ok {
		select {
		case <-c.ended:
			ok = false
		default:
			c.joins++
		}
	}
	var script CallScript
	if ok {
		script = c.script
	}
	s.mu.Unlock()
	if !ok {
		writeError(w, http.StatusNotFound, nil, errorBody("invalid_request_error", "call_not_found", fmt.Sprintf("Call '%s' not found.", id)))
		return
	}
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return // Accept has answered
	}
	defer conn.CloseNow()
	ctx := r.Context()
	// The fake does not read what the client sends; CloseRead answers its
	// pings and close.
	ctx = conn.CloseRead(ctx)
	send := func(v any) bool {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return conn.Write(wctx, websocket.MessageText, b) == nil
	}
	if !send(map[string]any{"type": "session.created", "event_id": "event_" + crand.Text(),
		"session": map[string]any{"type": "realtime", "object": "realtime.session", "id": "sess_" + crand.Text()}}) {
		return
	}
	for _, resp := range script.Responses {
		if !send(responseDone(resp)) {
			return
		}
	}
	if !script.Hold && script.CloseCode != 0 {
		_ = conn.Close(websocket.StatusCode(script.CloseCode), "the fake was told to close so")
		return
	}
	if !script.Hold {
		s.EndCall(id)
	}
	select {
	case <-c.ended:
		_ = conn.Close(websocket.StatusNormalClosure, "the call ended")
	case <-c.drop:
	case <-ctx.Done():
	}
}

// responseDone is the response.done event of r, as OpenAI's GA Realtime API
// sends it.
func responseDone(r RealtimeResponse) map[string]any {
	return map[string]any{
		"type":     "response.done",
		"event_id": "event_" + crand.Text(),
		"response": map[string]any{
			"object": "realtime.response", "id": r.ID, "status": "completed", "status_details": nil,
			"output": []any{}, "conversation_id": "conv_fake", "output_modalities": []string{"audio"},
			"usage": map[string]any{
				"total_tokens": r.InputTokens + r.OutputTokens, "input_tokens": r.InputTokens, "output_tokens": r.OutputTokens,
				"input_token_details": map[string]any{
					"text_tokens": r.InputTokens - r.InputAudioTokens, "audio_tokens": r.InputAudioTokens,
					"cached_tokens": r.CachedTokens, "cached_tokens_details": map[string]any{"text_tokens": 0, "audio_tokens": 0},
				},
				"output_token_details": map[string]any{
					"text_tokens": r.OutputTokens - r.OutputAudioTokens, "audio_tokens": r.OutputAudioTokens,
				},
			},
		},
	}
}
