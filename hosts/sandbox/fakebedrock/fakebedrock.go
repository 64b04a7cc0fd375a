// Package fakebedrock is a fake of Amazon Bedrock's runtime API for tests
// and the sandbox: POST /model/{modelId}/converse-stream (the binary AWS
// event stream, application/vnd.amazon.eventstream) and
// POST /model/{modelId}/converse (JSON), well enough for aws-sdk-go-v2's
// bedrockruntime client.
//
// It shares the script, responder and record of a fakeopenai.Server: each
// request is translated into a fakeopenai.Request (its Path, Header and
// Body as received; Model the model id, unescaped; the system blocks as
// leading "system" messages; tool results as "tool" messages; toolUse
// blocks as ToolCalls; the tools; MaxTokens; Stream for converse-stream)
// and answered with the Turn that Server.TakeTurn returns, so a test
// enqueues the same Responses whichever wire the adapter speaks, and the
// sandbox's demo model answers unchanged. A request that forces the use of
// one tool (toolChoice.tool) is a request for structured output: it
// becomes a json_schema ResponseFormat named after that tool, with its
// input schema, the tool is left out of Tools, and the turn's text (the
// JSON answer) is sent as that tool's toolUse input. A turn that names a
// model of its own (fakeopenai's WithModel or SetModel: the sandbox's demo
// model) names it in the metadata's trace.promptRouter.invokedModelId, as
// Bedrock names the model a prompt router chose.
//
// Like Bedrock, it requires a SigV4 Authorization header scoped to the
// bedrock service (any access key; the signature is not checked) and
// refuses with a ValidationException what Bedrock refuses: no messages, a
// conversation that does not start with the user or does not alternate,
// empty content, blank text, tool results that answer no toolUse of the
// message before, toolUse left unanswered, tool blocks without a
// toolConfig, a forced tool that is not offered. A Turn's error becomes
// Bedrock's: 429 ThrottlingException, 503 and 529
// ServiceUnavailableException, 500 InternalServerException, 400
// ValidationException ("Input is too long for requested model." for a
// context length error), 401 and 403 AccessDeniedException, 404
// ResourceNotFoundException, 408 ModelTimeoutException. A cut stream ends
// without messageStop, an aborted one drops the connection, and an error
// fault sends an exception event.
//
// Prompt caching: usage reports cacheWriteInputTokens the first time a
// request's prefix up to its last cachePoint is seen and
// cacheReadInputTokens afterwards (the prefix's estimated tokens, within
// the turn's prompt tokens: inputTokens + cache reads + cache writes is the
// turn's PromptTokens). Bedrock's minimum cacheable prefix is not modelled.
// A request with a cachePoint for a model without prompt caching is refused
// as Bedrock refuses it (RefusePromptCaching), and so is a forced tool for
// a model that cannot be forced (RefuseForcedTools).
package fakebedrock

import (
	"crypto/sha256"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// Server is a fake Bedrock runtime: started by New, or an http.Handler from
// NewHandler. It is safe for concurrent use.
type Server struct {
	script *fakeopenai.Server
	srv    *httptest.Server
	t      testing.TB
	mux    *http.ServeMux

	mu      sync.Mutex
	cached  map[[sha256.Size]byte]bool
	noCache map[string]bool
	noForce map[string]bool
}

// New starts a fake answering from script's turns, closed when the test
// ends.
func New(t testing.TB, script *fakeopenai.Server) *Server {
	t.Helper()
	s := newServer(script)
	s.t = t
	s.srv = httptest.NewServer(s)
	t.Cleanup(s.srv.Close)
	return s
}

// NewHandler returns a fake answering from script's turns that is not
// listening and belongs to no test: serve it with any http.Server, as the
// sandbox does. URL is "" for it.
func NewHandler(script *fakeopenai.Server) *Server { return newServer(script) }

func newServer(script *fakeopenai.Server) *Server {
	s := &Server{script: script, cached: map[[sha256.Size]byte]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /model/{modelId}/converse-stream", func(w http.ResponseWriter, r *http.Request) { s.handle(w, r, true) })
	mux.HandleFunc("POST /model/{modelId}/converse", func(w http.ResponseWriter, r *http.Request) { s.handle(w, r, false) })
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "UnknownOperationException", "Unknown operation "+r.Method+" "+r.URL.Path, nil)
	})
	s.mux = mux
	return s
}

// RefusePromptCaching makes the fake refuse a request for model that
// carries a cachePoint, as Bedrock refuses one for a model without prompt
// caching, with its ValidationException ("You invoked an unsupported model
// or your request did not allow prompt caching. …"). It always refuses
// them for the model families of Bedrock that have no prompt caching
// (Meta, Mistral, Cohere, AI21, DeepSeek, Qwen, …: a model id with a
// provider prefix other than anthropic. or amazon.nova).
func (s *Server) RefusePromptCaching(model string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.noCache == nil {
		s.noCache = map[string]bool{}
	}
	s.noCache[model] = true
}

// RefuseForcedTools makes the fake refuse a request for model that forces
// a tool (toolChoice tool or any), as Bedrock refuses it for a model that
// cannot be forced, with its ValidationException ("This model doesn't
// support the toolConfig.toolChoice.tool field. …"). It always refuses it
// for the model families of Bedrock that have no forced tool choice (all
// but Anthropic's, Amazon Nova and Mistral Large).
func (s *Server) RefuseForcedTools(model string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.noForce == nil {
		s.noForce = map[string]bool{}
	}
	s.noForce[model] = true
}

// forceRefused reports whether the fake refuses a forced tool for model.
func (s *Server) forceRefused(model string) bool {
	s.mu.Lock()
	refused := s.noForce[model]
	s.mu.Unlock()
	if refused {
		return true
	}
	id, known := modelID(model)
	return known && !strings.HasPrefix(id, "anthropic.") && !strings.HasPrefix(id, "amazon.nova") &&
		!strings.HasPrefix(id, "mistral.mistral-large")
}

// cachingRefused reports whether the fake refuses cachePoints for model.
func (s *Server) cachingRefused(model string) bool {
	s.mu.Lock()
	refused := s.noCache[model]
	s.mu.Unlock()
	if refused {
		return true
	}
	id, known := modelID(model)
	return known && !strings.HasPrefix(id, "anthropic.") && !strings.HasPrefix(id, "amazon.nova")
}

// modelID is the foundation model id of model (a model id, an inference
// profile id or the ARN of either), lower case; known is false for an
// application inference profile and a bare name, which may be any model.
func modelID(model string) (id string, known bool) {
	lower := strings.ToLower(model)
	if strings.Contains(lower, ":inference-profile/") || strings.Contains(lower, ":foundation-model/") {
		lower = lower[strings.LastIndex(lower, "/")+1:]
	}
	if strings.HasPrefix(lower, "arn:") {
		return "", false // an application inference profile: any model
	}
	for _, p := range []string{"us.", "eu.", "apac.", "us-gov.", "global.", "jp.", "au.", "ca."} {
		lower = strings.TrimPrefix(lower, p)
	}
	return lower, strings.Contains(lower, ".")
}

// URL is the fake's base URL, for the adapter's Config.Endpoint; "" for a
// NewHandler fake.
func (s *Server) URL() string {
	if s.srv == nil {
		return ""
	}
	return s.srv.URL
}

// ServeHTTP serves one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// authPattern is a SigV4 Authorization header as the SDK writes it.
var authPattern = regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([^/,\s]+)/(\d{8})/([^/,\s]+)/([^/,\s]+)/aws4_request, ?SignedHeaders=([a-z0-9;\-]+), ?Signature=([0-9a-f]{64})$`)

// authenticate checks r's SigV4 Authorization header and answers 403 as
// Bedrock does when it is missing or malformed.
func authenticate(w http.ResponseWriter, r *http.Request) bool {
	h := r.Header.Get("Authorization")
	if h == "" {
		writeError(w, http.StatusForbidden, "MissingAuthenticationTokenException", "Missing Authentication Token", nil)
		return false
	}
	m := authPattern.FindStringSubmatch(h)
	if m == nil {
		writeError(w, http.StatusForbidden, "IncompleteSignatureException",
			"Authorization header requires 'Credential', 'SignedHeaders' and 'Signature' parameters.", nil)
		return false
	}
	if m[4] != "bedrock" {
		writeError(w, http.StatusForbidden, "InvalidSignatureException", "Credential should be scoped to correct service: 'bedrock'.", nil)
		return false
	}
	return true
}
