// Package fakeanthropic is a fake of Anthropic's Messages API for tests and
// the sandbox. It speaks the real wire format well enough for Anthropic's
// official Go SDK (server-sent events message_start, content_block_start,
// content_block_delta with text_delta and input_json_delta,
// content_block_stop, message_delta, message_stop and ping; the JSON
// message when a request does not stream; Anthropic's error JSON), refuses
// what the real API refuses (a missing API key or anthropic-version,
// max_tokens missing, roles that do not alternate, a tool_result that
// answers no tool_use of the previous turn, empty content, unknown roles),
// and answers each request from the script of a *fakeopenai.Server
// (TakeTurn), so a test enqueues the same Responses (and a sandbox serves
// the same demo model) whichever wire the adapter under test speaks.
//
// A request is read into a fakeopenai.Request of the same conversation:
// system blocks first as system messages, tool_result blocks as tool
// messages, tool_use blocks as the assistant's ToolCalls. A request whose
// tool_choice forces one tool is a request for a structured answer: that
// tool is its ResponseFormat (json_schema, named after the tool) and not
// one of its Tools, and the turn's text, which is JSON, is answered as the
// input of a call of that tool.
//
// Prompt caching is simulated: a request that marks blocks with
// cache_control has the part of it up to its last mark (tools, system,
// messages, in that order) cached. The first request with a given prefix
// reports it as cache_creation_input_tokens, later ones as
// cache_read_input_tokens; its size is estimated at 4 bytes a token, and
// at most the turn's prompt tokens (no minimum length is applied).
package fakeanthropic

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// Server is a fake Anthropic Messages API: started by New, or an
// http.Handler from NewHandler. It is safe for concurrent use.
type Server struct {
	script *fakeopenai.Server
	srv    *httptest.Server
	mux    *http.ServeMux

	mu    sync.Mutex
	cache map[[32]byte]bool
}

// maxCached bounds the prefixes remembered for prompt caching; past it the
// cache is emptied, as a real cache's entries expire.
const maxCached = 1024

// New starts a fake answering from script's turns, closed when the test
// ends. A request that finds no turn (see fakeopenai.Server.TakeTurn) is
// answered with a 500 api_error and reported as a test failure.
func New(t testing.TB, script *fakeopenai.Server) *Server {
	t.Helper()
	s := newServer(script)
	s.srv = httptest.NewServer(s)
	t.Cleanup(s.srv.Close)
	return s
}

// NewHandler returns a fake answering from script's turns that is not
// listening and belongs to no test: serve it with any http.Server (it is an
// http.Handler), as a sandbox does. URL is "" for such a fake.
func NewHandler(script *fakeopenai.Server) *Server { return newServer(script) }

func newServer(script *fakeopenai.Server) *Server {
	s := &Server{script: script, cache: map[[32]byte]bool{}}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("POST /v1/messages", s.handleMessages)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, nil, "not_found_error", fmt.Sprintf("Not found: %s %s", r.Method, r.URL.Path))
	})
	return s
}

// URL is the base URL of the API, without /v1: what Config.BaseURL (or
// ANTHROPIC_BASE_URL) should be set to; "" for a NewHandler fake.
func (s *Server) URL() string {
	if s.srv == nil {
		return ""
	}
	return s.srv.URL
}

// ServeHTTP serves one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

var versionPattern = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

func (s *Server) handleMessages(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusBadRequest, nil, "invalid_request_error", "could not read the request body")
		return
	}
	if !authorized(r) {
		writeError(w, http.StatusUnauthorized, nil, "authentication_error", "x-api-key header is required")
		return
	}
	switch v := r.Header.Get("Anthropic-Version"); {
	case v == "":
		writeError(w, http.StatusBadRequest, nil, "invalid_request_error", "anthropic-version: header is required")
		return
	case !versionPattern.MatchString(v):
		writeError(w, http.StatusBadRequest, nil, "invalid_request_error", fmt.Sprintf("anthropic-version: invalid version %q", v))
		return
	}
	d, err := decode(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, nil, "invalid_request_error", err.Error())
		return
	}
	req := d.toScript(r.URL.Path, r.Header.Clone(), body)
	turn, seq, ok := s.script.TakeTurn(req)
	if !ok {
		writeError(w, http.StatusInternalServerError, nil, "api_error",
			fmt.Sprintf("fakeanthropic: no response scripted for request %d", seq))
		return
	}
	a := &answer{turn: turn, id: fmt.Sprintf("msg_fake%06d", seq), tool: d.answerTool, toolID: fmt.Sprintf("toolu_fake%06d", seq)}
	a.usage = s.usage(d, turn)
	a.serve(w, r, d.w.Stream)
}

// authorized reports whether r carries an API key (x-api-key) or a bearer
// token, as the API accepts either.
func authorized(r *http.Request) bool {
	if strings.TrimSpace(r.Header.Get("X-Api-Key")) != "" {
		return true
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && strings.TrimSpace(token) != ""
}

// usage is what a turn reports for d, with the prompt cache simulated.
func (s *Server) usage(d *decoded, turn fakeopenai.Turn) usageJSON {
	u := usageJSON{InputTokens: turn.PromptTokens, OutputTokens: turn.CompletionTokens}
	prefix := d.cachePrefix()
	if prefix == nil {
		return u
	}
	cached := min((len(prefix)+3)/4, turn.PromptTokens)
	if cached <= 0 {
		return u
	}
	key := sha256.Sum256(prefix)
	s.mu.Lock()
	seen := s.cache[key]
	if !seen {
		if len(s.cache) >= maxCached {
			clear(s.cache)
		}
		s.cache[key] = true
	}
	s.mu.Unlock()
	u.InputTokens -= cached
	if seen {
		u.CacheReadInputTokens = cached
	} else {
		u.CacheCreationInputTokens = cached
	}
	return u
}

// errorTypes are the error types of Anthropic's API by status.
var errorTypes = map[int]string{
	http.StatusBadRequest:            "invalid_request_error",
	http.StatusUnauthorized:          "authentication_error",
	http.StatusPaymentRequired:       "billing_error",
	http.StatusForbidden:             "permission_error",
	http.StatusNotFound:              "not_found_error",
	http.StatusRequestEntityTooLarge: "request_too_large",
	http.StatusTooManyRequests:       "rate_limit_error",
	http.StatusInternalServerError:   "api_error",
	http.StatusGatewayTimeout:        "timeout_error",
	StatusOverloaded:                 "overloaded_error",
}

// StatusOverloaded is the status Anthropic's API answers when it is
// overloaded.
const StatusOverloaded = 529

// errorFor is the status, type and message of Anthropic's error for a
// turn's error status and OpenAI-shaped error: 503 becomes 529
// overloaded_error, a context length error Anthropic's "prompt is too
// long".
func errorFor(status int, code, message string) (int, string, string) {
	if status == http.StatusServiceUnavailable {
		status = StatusOverloaded
	}
	typ, ok := errorTypes[status]
	if !ok {
		typ = "api_error"
	}
	switch {
	case code == "context_length_exceeded" || strings.Contains(message, "maximum context length"):
		limit, got := 200000, 200001
		if m := contextNumbers.FindStringSubmatch(message); m != nil {
			_, _ = fmt.Sscan(m[1], &limit)
			_, _ = fmt.Sscan(m[2], &got)
		}
		message = fmt.Sprintf("prompt is too long: %d tokens > %d maximum", got, limit)
	case typ == "overloaded_error":
		message = "Overloaded"
	case typ == "rate_limit_error" && message == "":
		message = "Number of request tokens has exceeded your per-minute rate limit"
	case typ == "authentication_error":
		message = "invalid x-api-key"
	case message == "":
		message = http.StatusText(status)
	}
	return status, typ, message
}

var contextNumbers = regexp.MustCompile(`maximum context length is (\d+) tokens.*?resulted in (\d+) tokens`)

// errorBody is Anthropic's error JSON.
func errorBody(typ, message string) []byte {
	b, err := json.Marshal(map[string]any{
		"type":       "error",
		"error":      map[string]string{"type": typ, "message": message},
		"request_id": "req_fake",
	})
	if err != nil {
		panic(err)
	}
	return b
}

func writeError(w http.ResponseWriter, status int, header http.Header, typ, message string) {
	for k, vs := range header {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Request-Id", "req_fake")
	w.WriteHeader(status)
	_, _ = w.Write(errorBody(typ, message))
}
