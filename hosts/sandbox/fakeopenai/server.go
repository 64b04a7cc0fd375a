// Package fakeopenai is an OpenAI-compatible HTTP server for tests. It speaks
// the real Chat Completions wire format (JSON, and server-sent events when the
// request asks to stream), answers each request with the next scripted
// Response, and records every request it receives, so adapters built on real
// SDKs can be tested over real HTTP without reaching the internet.
//
// It also serves the realtime client secrets endpoint
// (POST /v1/realtime/client_secrets) and audio transcriptions
// (POST /v1/audio/transcriptions, and Azure's deployment route), each with a
// script of its own (EnqueueRealtime, EnqueueTranscription) and a record of
// its own (RealtimeRequests, TranscriptionRequests). Unlike chat, these
// answer a request that finds no scripted response with their normal answer.
//
// Realtime calls (WebRTC's unified interface) are served too: POST
// /v1/realtime/calls takes the multipart offer and session and answers a
// canned SDP (AnswerSDP) with the new call's Location, and the call's
// sideband WebSocket (GET /v1/realtime?call_id=) plays a CallScript of
// response.done events with usage (ScriptCalls, ScriptCall, EndCall,
// DropSideband).
//
// Scripted responses can reproduce what providers do in the wild: rate limits
// with Retry-After, server errors, cut and malformed streams, slow tokens, and
// the tool-call fragment quirks of Ollama, vLLM and llama.cpp.
//
// A chat request that finds the script empty goes to the responder, when one
// is set (SetResponder): that is how a sandbox serves a deterministic demo
// model from a NewHandler fake, with no test around it.
//
// The fake accepts every response_format unless told to play a kind of
// provider (WithStructuredOutput, SetStructuredOutput): OpenAI's strict
// Structured Outputs, the llama.cpp server, or a JSON-mode-only API, each
// refusing with its own 400 what it would refuse.
//
// It lives under hosts/sandbox because the sandbox serves it in the binary
// (`devpilot run` without a model configured); tests import it from here.
package fakeopenai

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Server is a fake OpenAI API: started by New or NewTLS, or an http.Handler
// from NewHandler. It is safe for concurrent use.
type Server struct {
	t   testing.TB // nil for a NewHandler fake
	srv *httptest.Server
	mux http.Handler

	mu        sync.Mutex
	chat      []Response
	responder func(*Request) Response
	// model is the model every chat answer names when its Response sets
	// none (SetModel); "" echoes the request's.
	model    string
	requests []Request
	seq      int
	// history bounds each record of requests to its newest entries; 0 keeps
	// them all.
	history int
	// structured is the kind of provider the fake plays for structured
	// output (see SetStructuredOutput).
	structured StructuredOutput
	// contextLimit is SetContextLimit's window; 0 for none.
	contextLimit int
	// offeredOnly makes scripted tool calls of tools not offered answer
	// text (SetOfferedToolsOnly).
	offeredOnly bool

	realtime          []Response
	realtimeReqs      []RealtimeRequest
	transcription     []Response
	transcriptionReqs []TranscriptionRequest

	realtimeCalls []Response
	callReqs      []RealtimeCallRequest
	callScript    CallScript
	calls         map[string]*fakeCall
}

// New starts a fake server that is closed when the test ends. Chat requests
// that find no scripted response (and no responder, see SetResponder) are
// answered with a 500 error and reported as a test failure. opts configure
// the fake (WithStructuredOutput).
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := newServer(t, opts)
	s.srv = httptest.NewServer(s)
	t.Cleanup(s.srv.Close)
	return s
}

// NewTLS is New served over HTTPS with HTTP/2, as OpenAI's API is. Clients
// must trust CACertPEM (in-process: the server's Client; another process:
// SSL_CERT_FILE).
func NewTLS(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := newServer(t, opts)
	s.srv = httptest.NewUnstartedServer(s)
	s.srv.EnableHTTP2 = true
	s.srv.StartTLS()
	t.Cleanup(s.srv.Close)
	return s
}

// HandlerHistory is how many requests of each kind (chat, realtime,
// transcription) a NewHandler fake keeps for Requests, RealtimeRequests and
// TranscriptionRequests: the newest ones, so that a long-running sandbox
// does not grow without bound.
const HandlerHistory = 16

// NewHandler returns a fake that is not listening and belongs to no test:
// serve it with any http.Server (it is an http.Handler), as a sandbox does,
// under a base URL ending in /v1 for the OpenAI flavour of the API. A chat
// request that finds no scripted response goes to the responder
// (SetResponder); without one it is answered with a 500 error, and nothing
// is reported. URL and AzureURL are "" and CACertPEM is nil for such a fake.
// opts configure the fake (WithStructuredOutput).
func NewHandler(opts ...Option) *Server {
	s := newServer(nil, opts)
	s.history = HandlerHistory
	return s
}

func newServer(t testing.TB, opts []Option) *Server {
	s := &Server{t: t}
	for _, opt := range opts {
		opt(s)
	}
	s.mux = s.routes()
	return s
}

// ServeHTTP serves one request of any of the fake's endpoints.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// SetResponder makes f answer every chat completion request that finds the
// script empty, instead of the 500 error (and, for a New fake, the test
// failure) such a request otherwise gets; scripted responses still come
// first. f is called concurrently for concurrent requests and must be safe
// for that; it must not modify the request. nil removes the responder.
func (s *Server) SetResponder(f func(*Request) Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.responder = f
}

// SetModel makes every chat answer whose Response names no model
// (WithModel) name model instead of echoing the request's: a sandbox sets
// the name of its scripted model, so what devpilot records as the model is
// what answered. "" echoes the request's model again.
func (s *Server) SetModel(model string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.model = model
}

// named is resp naming the fake's model (SetModel) when it names none.
func (s *Server) named(resp Response) Response {
	s.mu.Lock()
	defer s.mu.Unlock()
	if resp.model == "" {
		resp.model = s.model
	}
	return resp
}

// errorf reports a test failure; a NewHandler fake has no test to fail.
func (s *Server) errorf(format string, args ...any) {
	if s.t != nil {
		s.t.Errorf(format, args...)
	}
}

// appendBounded appends v to list, keeping at most the newest s.history
// entries when that is set. The caller holds s.mu.
func appendBounded[T any](s *Server, list []T, v T) []T {
	list = append(list, v)
	if s.history > 0 && len(list) > s.history {
		list = append(list[:0:0], list[len(list)-s.history:]...)
	}
	return list
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	mux.HandleFunc("POST /openai/deployments/{deployment}/chat/completions", s.handleChat)
	mux.HandleFunc("POST /v1/realtime/client_secrets", s.handleRealtime)
	mux.HandleFunc("POST /v1/realtime/calls", s.handleRealtimeCall)
	mux.HandleFunc("GET /v1/realtime", s.handleSideband)
	mux.HandleFunc("POST /v1/audio/transcriptions", s.handleTranscription)
	mux.HandleFunc("POST /openai/deployments/{deployment}/audio/transcriptions", s.handleTranscription)
	mux.HandleFunc("/", s.handleUnknown)
	return mux
}

// CACertPEM returns the PEM of the certificate a NewTLS server presents; nil
// for a plain HTTP server.
func (s *Server) CACertPEM() []byte {
	if s.srv == nil {
		return nil
	}
	cert := s.srv.Certificate()
	if cert == nil {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
}

// URL is the base URL of the OpenAI API, ending in /v1: what OPENAI_BASE_URL
// or an SDK's base URL should be set to; "" for a NewHandler fake.
func (s *Server) URL() string {
	if s.srv == nil {
		return ""
	}
	return s.srv.URL + "/v1"
}

// AzureURL is the base URL of the Azure OpenAI flavour of the API, under which
// chat completions are served at /openai/deployments/{deployment}/chat/completions;
// "" for a NewHandler fake.
func (s *Server) AzureURL() string {
	if s.srv == nil {
		return ""
	}
	return s.srv.URL
}

// Enqueue appends responses to the chat completions script: each request to
// the chat completions endpoint consumes the next one.
func (s *Server) Enqueue(responses ...Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chat = append(s.chat, responses...)
}

// Pending is the number of scripted chat responses not yet consumed.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.chat)
}

// Requests returns a copy of every request received so far by the chat
// completions endpoint and by paths the server does not serve, in arrival
// order (for a NewHandler fake, the newest HandlerHistory of them). Realtime
// and transcription requests are in RealtimeRequests and
// TranscriptionRequests.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.requests))
	copy(out, s.requests)
	return out
}

// record stores r and returns its 1-based sequence number.
func (s *Server) record(r Request) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = appendBounded(s, s.requests, r)
	s.seq++
	return s.seq
}

// nextChat pops the next scripted chat response, or asks the responder for
// one when the script is empty; ok is false when there is neither.
func (s *Server) nextChat(req *Request) (Response, bool) {
	s.mu.Lock()
	if len(s.chat) > 0 {
		r := s.chat[0]
		s.chat = s.chat[1:]
		s.mu.Unlock()
		return r, true
	}
	f := s.responder
	s.mu.Unlock()
	if f == nil {
		return Response{}, false
	}
	return f(req), true
}

// next pops the first response of script.
func (s *Server) next(script *[]Response) (Response, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(*script) == 0 {
		return Response{}, false
	}
	r := (*script)[0]
	*script = (*script)[1:]
	return r, true
}

// readRequest reads r, decodes its body with decode when not nil, and records
// it. A body that cannot be read is answered with a 400 and reported as a
// test failure; one that cannot be decoded is answered with a 400.
func (s *Server) readRequest(w http.ResponseWriter, r *http.Request, decode func([]byte, *Request) error) (Request, int, bool) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		s.errorf("fakeopenai: reading %s %s: %v", r.Method, r.URL.Path, err)
		writeError(w, http.StatusBadRequest, nil, errorBody("invalid_request_error", "", "could not read the request body"))
		return Request{}, 0, false
	}
	req := Request{
		Method: r.Method,
		Path:   r.URL.Path,
		Query:  r.URL.Query(),
		Header: r.Header.Clone(),
		Body:   body,
	}
	var decodeErr error
	if decode != nil {
		decodeErr = decode(body, &req)
	}
	seq := s.record(req)
	if decodeErr != nil {
		writeError(w, http.StatusBadRequest, nil, errorBody("invalid_request_error", "",
			"We could not parse the JSON body of your request: "+decodeErr.Error()))
		return req, seq, false
	}
	return req, seq, true
}

func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	req, seq, ok := s.readRequest(w, r, decodeChat)
	if !ok {
		return
	}
	if s.rejectStructured(w, &req) {
		return
	}
	if resp, over := s.overContextLimit(&req); over {
		serveChat(w, r, &req, s.named(resp), seq)
		return
	}
	resp, ok := s.nextChat(&req)
	if !ok {
		s.errorf("fakeopenai: no response scripted for request %d (%s %s)", seq, r.Method, r.URL.Path)
		writeError(w, http.StatusInternalServerError, nil, errorBody("fakeopenai_error", "no_response_scripted",
			fmt.Sprintf("fakeopenai: no response scripted for request %d (%s %s)", seq, r.Method, r.URL.Path)))
		return
	}
	serveChat(w, r, &req, s.named(s.offeredOnlyResponse(&req, resp)), seq)
}

func (s *Server) handleUnknown(w http.ResponseWriter, r *http.Request) {
	_, _, ok := s.readRequest(w, r, nil)
	if !ok {
		return
	}
	writeError(w, http.StatusNotFound, nil, errorBody("invalid_request_error", "unknown_url",
		fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path)))
}

// errorBody builds the JSON error object of the OpenAI API.
func errorBody(typ, code, message string) []byte {
	var c any
	if code != "" {
		c = code
	}
	b, err := json.Marshal(map[string]any{"error": map[string]any{
		"message": message,
		"type":    typ,
		"param":   nil,
		"code":    c,
	}})
	if err != nil {
		panic(err)
	}
	return b
}

// authorized reports whether r carries an API key: a non-empty bearer token,
// or an api-key header as Azure's clients send. It answers 401 with
// OpenAI's error when not.
func authorized(w http.ResponseWriter, r *http.Request) bool {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if (ok && strings.TrimSpace(token) != "") || r.Header.Get("Api-Key") != "" {
		return true
	}
	writeError(w, http.StatusUnauthorized, nil, errorBody("invalid_request_error", "",
		"You didn't provide an API key. You need to provide your API key in an Authorization header "+
			"using Bearer auth (i.e. Authorization: Bearer YOUR_KEY)."))
	return false
}

// invalidRequest answers 400 with OpenAI's error for a request of the wrong
// shape.
func invalidRequest(w http.ResponseWriter, param, message string) {
	b, err := json.Marshal(map[string]any{"error": map[string]any{
		"message": message,
		"type":    "invalid_request_error",
		"param":   param,
		"code":    nil,
	}})
	if err != nil {
		panic(err)
	}
	writeError(w, http.StatusBadRequest, nil, b)
}

func writeError(w http.ResponseWriter, status int, header http.Header, body []byte) {
	for k, vs := range header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
