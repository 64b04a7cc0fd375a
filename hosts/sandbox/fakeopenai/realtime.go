package fakeopenai

import (
	"bytes"
	"cmp"
	crand "crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// DefaultRealtimeModel is the model a realtime session gets when the request
// names none.
const DefaultRealtimeModel = "gpt-realtime"

// RealtimeRequest is one request to POST /v1/realtime/client_secrets. Header
// and Body are set for every request; the other fields are decoded from a
// body that is JSON.
type RealtimeRequest struct {
	Header http.Header
	Body   []byte

	// SessionType is session.type, "realtime" for a valid request.
	SessionType  string
	Model        string
	Instructions string
	// Voice is session.audio.output.voice.
	Voice      string
	Tools      []Tool
	ToolChoice json.RawMessage
	// ExpiresAfterAnchor and ExpiresAfterSeconds are expires_after's anchor
	// and seconds; 0 seconds when the request leaves them out.
	ExpiresAfterAnchor  string
	ExpiresAfterSeconds int
}

type wireRealtimeRequest struct {
	ExpiresAfter *struct {
		Anchor  string `json:"anchor"`
		Seconds *int   `json:"seconds"`
	} `json:"expires_after"`
	Session *wireSession `json:"session"`
}

// wireSession is the session of a client secret or call request.
type wireSession struct {
	Type         string `json:"type"`
	Model        string `json:"model"`
	Instructions string `json:"instructions"`
	Audio        *struct {
		Output *struct {
			Voice string `json:"voice"`
		} `json:"output"`
	} `json:"audio"`
	Tools []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
}

// EnqueueRealtime appends responses to the realtime script: each request to
// the client secrets endpoint that passes validation consumes the next one.
// Without one, the request gets a new secret (ClientSecret("")).
func (s *Server) EnqueueRealtime(responses ...Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.realtime = append(s.realtime, responses...)
}

// RealtimeRequests returns a copy of every client secret request received so
// far, in arrival order (for a NewHandler fake, the newest HandlerHistory of
// them).
func (s *Server) RealtimeRequests() []RealtimeRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]RealtimeRequest, len(s.realtimeReqs))
	copy(out, s.realtimeReqs)
	return out
}

func (s *Server) handleRealtime(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s.errorf("fakeopenai: reading %s %s: %v", r.Method, r.URL.Path, err)
		invalidRequest(w, "", "could not read the request body")
		return
	}
	req := RealtimeRequest{Header: r.Header.Clone(), Body: body}
	var wire wireRealtimeRequest
	decodeErr := json.Unmarshal(body, &wire)
	if decodeErr == nil {
		req.fill(&wire)
	}
	s.mu.Lock()
	s.realtimeReqs = appendBounded(s, s.realtimeReqs, req)
	s.mu.Unlock()

	if !authorized(w, r) {
		return
	}
	if decodeErr != nil {
		invalidRequest(w, "", "We could not parse the JSON body of your request: "+decodeErr.Error())
		return
	}
	if param, msg := validateRealtime(&wire); msg != "" {
		invalidRequest(w, param, msg)
		return
	}
	resp, ok := s.next(&s.realtime)
	if !ok {
		resp = ClientSecret("")
	}
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
	for k, vs := range resp.header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	writeBody(w, "application/json", realtimeAnswer(&req, resp), resp.faults)
}

func (req *RealtimeRequest) fill(w *wireRealtimeRequest) {
	if e := w.ExpiresAfter; e != nil {
		req.ExpiresAfterAnchor = e.Anchor
		if e.Seconds != nil {
			req.ExpiresAfterSeconds = *e.Seconds
		}
	}
	sess := w.Session
	if sess == nil {
		return
	}
	req.SessionType, req.Model, req.Instructions, req.ToolChoice = sess.Type, sess.Model, sess.Instructions, sess.ToolChoice
	if a := sess.Audio; a != nil && a.Output != nil {
		req.Voice = a.Output.Voice
	}
	for _, t := range sess.Tools {
		req.Tools = append(req.Tools, Tool{Type: t.Type, Name: t.Name, Description: t.Description, Parameters: t.Parameters})
	}
}

// validateRealtime checks what OpenAI checks of a client secret request that
// the adapters could get wrong. It returns the offending parameter and a
// message, or "" when the request is valid.
func validateRealtime(w *wireRealtimeRequest) (param, message string) {
	if e := w.ExpiresAfter; e != nil {
		if e.Anchor != "created_at" {
			return "expires_after.anchor", fmt.Sprintf("Invalid value: '%s'. Supported values are: 'created_at'.", e.Anchor)
		}
		if e.Seconds != nil && (*e.Seconds < 10 || *e.Seconds > 7200) {
			return "expires_after.seconds", fmt.Sprintf("Invalid 'expires_after.seconds': %d. Expected a value between 10 and 7200.", *e.Seconds)
		}
	}
	sess := w.Session
	if sess == nil || sess.Type == "" {
		return "session.type", "Missing required parameter: 'session.type'."
	}
	if sess.Type != "realtime" {
		return "session.type", fmt.Sprintf("Invalid value: '%s'. Supported values are: 'realtime'.", sess.Type)
	}
	for i, t := range sess.Tools {
		switch {
		case t.Type != "function":
			return fmt.Sprintf("session.tools[%d].type", i), fmt.Sprintf("Invalid value: '%s'. Supported values are: 'function' and 'mcp'.", t.Type)
		case t.Name == "":
			return fmt.Sprintf("session.tools[%d].name", i), fmt.Sprintf("Missing required parameter: 'session.tools[%d].name'.", i)
		case !isJSONObject(t.Parameters):
			return fmt.Sprintf("session.tools[%d].parameters", i), fmt.Sprintf("Invalid type for 'session.tools[%d].parameters': expected an object.", i)
		}
	}
	return "", ""
}

func isJSONObject(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	var m map[string]json.RawMessage
	return len(raw) > 0 && raw[0] == '{' && json.Unmarshal(raw, &m) == nil
}

// realtimeAnswer is the body of a successful client secret response.
func realtimeAnswer(req *RealtimeRequest, resp Response) []byte {
	seconds := req.ExpiresAfterSeconds
	if seconds == 0 {
		seconds = 600
	}
	value := cmp.Or(resp.secret, "ek_"+crand.Text())
	tools := []json.RawMessage{}
	for _, t := range req.Tools {
		b, err := json.Marshal(map[string]any{
			"type": t.Type, "name": t.Name, "description": t.Description, "parameters": t.Parameters,
		})
		if err != nil {
			panic(err)
		}
		tools = append(tools, b)
	}
	toolChoice := req.ToolChoice
	if len(toolChoice) == 0 {
		toolChoice = json.RawMessage(`"auto"`)
	}
	b, err := json.Marshal(map[string]any{
		"value":      value,
		"expires_at": time.Now().Unix() + int64(seconds),
		"session": map[string]any{
			"type":              "realtime",
			"object":            "realtime.session",
			"id":                "sess_" + crand.Text(),
			"model":             cmp.Or(resp.model, req.Model, DefaultRealtimeModel),
			"output_modalities": []string{"audio"},
			"instructions":      req.Instructions,
			"audio": map[string]any{
				"output": map[string]any{"voice": cmp.Or(req.Voice, "alloy"), "format": map[string]any{"type": "audio/pcm", "rate": 24000}},
			},
			"tools":             tools,
			"tool_choice":       toolChoice,
			"max_output_tokens": "inf",
		},
	})
	if err != nil {
		panic(err)
	}
	return b
}
