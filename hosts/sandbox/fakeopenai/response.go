package fakeopenai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"time"
)

// Call is one tool call a scripted model makes. An empty ID is replaced by
// "call_<n>" unless the response omits ids on purpose (OmitToolCallIDs).
type Call struct {
	ID        string
	Name      string
	Arguments string
}

type responseKind int

const (
	kindCompletion responseKind = iota
	kindError
	kindHangup
)

type faultKind int

const (
	faultTruncate  faultKind = iota // end the body cleanly, without finish_reason or [DONE]
	faultAbort                      // cut the connection
	faultMalformed                  // one chunk that is not JSON, then carry on
	faultError                      // an error event, then end the stream
)

// afterAll places a fault after the last delta.
const afterAll = -1

type fault struct {
	at     int
	kind   faultKind
	status int
	header http.Header
	body   []byte
}

// Response is one scripted answer of the server. Build one with Text,
// TextChunks, ToolCalls, ClientSecret, Error or a typed error helper, then
// refine it with its methods, each of which returns a modified copy:
//
//	fakeopenai.Text("hello world").WithTokenDelay(time.Millisecond).Truncated()
//
// A completion is streamed as chunks when the request sets "stream": true and
// returned as one JSON object otherwise. Streams start with a chunk carrying
// the assistant role, then one chunk per delta (a piece of text or a tool-call
// fragment), a chunk with the finish_reason, a usage chunk when the request
// asked for stream_options.include_usage, and data: [DONE].
//
// The realtime and transcription endpoints answer errors, Hangup and
// delays (WithResponseDelay) the same way, and spoil their JSON body with
// Truncated, AbortedAfter, MalformedAfter and FailAfter as a chat response
// that does not stream does. A transcription answers the text of Text (and
// WithLanguage); a realtime request the value of ClientSecret (and
// WithModel).
type Response struct {
	kind   responseKind
	status int
	header http.Header
	body   []byte

	text      string
	chunks    []string
	chunkSize int
	calls     []Call
	finish    string
	model     string
	usage     *[2]int
	secret    string
	language  string

	responseDelay   time.Duration
	firstTokenDelay time.Duration
	tokenDelay      time.Duration

	wholeCalls    bool
	omitIndex     bool
	sameIndex     bool
	firstIndex    int
	duplicates    bool
	argChunkSize  int
	interleave    bool
	callsOneChunk bool
	omitIDs       bool

	faults []fault
}

// Text is a completion whose content is text, streamed one word (with its
// leading space) per delta, finishing with "stop".
func Text(text string) Response {
	return Response{kind: kindCompletion, text: text}
}

// TextChunks is a completion whose content is the concatenation of parts,
// streamed one part per delta.
func TextChunks(parts ...string) Response {
	r := Response{kind: kindCompletion, chunks: slices.Clone(parts)}
	for _, p := range parts {
		r.text += p
	}
	return r
}

// ToolCalls is a completion that calls tools, finishing with "tool_calls".
// By default it streams the way OpenAI does: for each call in turn, a fragment
// with its index, id, type and name, then its arguments; the methods named
// after tool calls reproduce what other servers do.
func ToolCalls(calls ...Call) Response {
	return Response{kind: kindCompletion, calls: slices.Clone(calls)}
}

// ClientSecret is a realtime client secret whose value is value (a random
// "ek_…" when empty), for EnqueueRealtime. The session names the request's
// model unless WithModel says otherwise.
func ClientSecret(value string) Response {
	return Response{kind: kindCompletion, secret: value}
}

// Error is a failed request: status with body verbatim as application/json.
// Use it for bodies the typed helpers do not cover, such as non-JSON ones.
func Error(status int, body string) Response {
	return Response{kind: kindError, status: status, body: []byte(body)}
}

// APIError is a failed request with an OpenAI error body
// {"error":{"message","type","param","code"}}; an empty code is sent as null.
func APIError(status int, typ, code, message string) Response {
	return Response{kind: kindError, status: status, body: errorBody(typ, code, message)}
}

// RateLimited is a 429 rate_limit_exceeded error with a Retry-After header of
// retryAfter rounded up to whole seconds (no header when retryAfter is 0).
func RateLimited(retryAfter time.Duration) Response {
	r := APIError(http.StatusTooManyRequests, "requests", "rate_limit_exceeded",
		"Rate limit reached for requests. Please try again later.")
	if retryAfter > 0 {
		r = r.WithHeader("Retry-After", fmt.Sprint(int(math.Ceil(retryAfter.Seconds()))))
	}
	return r
}

// QuotaExceeded is the 429 OpenAI sends when the account has no credit left.
func QuotaExceeded() Response {
	return APIError(http.StatusTooManyRequests, "insufficient_quota", "insufficient_quota",
		"You exceeded your current quota, please check your plan and billing details.")
}

// ServerError is a 500 server_error.
func ServerError() Response {
	return APIError(http.StatusInternalServerError, "server_error", "",
		"The server had an error while processing your request. Sorry about that!")
}

// Overloaded is a 503 the way OpenAI answers when the engine is overloaded.
func Overloaded() Response {
	return APIError(http.StatusServiceUnavailable, "server_error", "",
		"The engine is currently overloaded, please try again later")
}

// ContextLengthExceeded is the 400 context_length_exceeded error.
func ContextLengthExceeded() Response {
	return Error(http.StatusBadRequest, `{"error":{"message":"This model's maximum context length is 128000 tokens. `+
		`However, your messages resulted in 130412 tokens. Please reduce the length of the messages.",`+
		`"type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`)
}

// Unauthorized is the 401 invalid_api_key error.
func Unauthorized() Response {
	return APIError(http.StatusUnauthorized, "invalid_request_error", "invalid_api_key",
		"Incorrect API key provided: sk-test***. You can find your API key at https://platform.openai.com/account/api-keys.")
}

// Hangup closes the connection without answering, as a crashed proxy would.
func Hangup() Response {
	return Response{kind: kindHangup}
}

func (r Response) clone() Response {
	r.chunks = slices.Clone(r.chunks)
	r.calls = slices.Clone(r.calls)
	r.faults = slices.Clone(r.faults)
	r.header = r.header.Clone()
	return r
}

// WithToolCalls adds tool calls after the text of a completion.
func (r Response) WithToolCalls(calls ...Call) Response {
	r = r.clone()
	r.calls = append(r.calls, calls...)
	return r
}

// WithChunkSize streams the text n runes per delta instead of word by word.
func (r Response) WithChunkSize(n int) Response {
	r = r.clone()
	r.chunks, r.chunkSize = nil, n
	return r
}

// WithHeader adds a response header.
func (r Response) WithHeader(key, value string) Response {
	r = r.clone()
	if r.header == nil {
		r.header = http.Header{}
	}
	r.header.Add(key, value)
	return r
}

// WithFinishReason replaces the finish_reason, for example with "length" or
// "content_filter".
func (r Response) WithFinishReason(reason string) Response {
	r.finish = reason
	return r
}

// WithModel sets the model the response names; by default it echoes the
// request's model.
func (r Response) WithModel(model string) Response {
	r.model = model
	return r
}

// WithLanguage sets the language a transcription reports, a Whisper
// language name such as "german"; by default it is the name of the
// request's language hint, or "english".
func (r Response) WithLanguage(name string) Response {
	r.language = name
	return r
}

// WithUsage sets the usage reported; by default the prompt counts one token
// per word of the request's messages and the completion one per delta.
func (r Response) WithUsage(promptTokens, completionTokens int) Response {
	r.usage = &[2]int{promptTokens, completionTokens}
	return r
}

// WithResponseDelay waits d before answering at all, headers included.
func (r Response) WithResponseDelay(d time.Duration) Response {
	r.responseDelay = d
	return r
}

// WithFirstTokenDelay waits d after the stream's headers are sent and before
// its first chunk (before the body of a response that does not stream).
func (r Response) WithFirstTokenDelay(d time.Duration) Response {
	r.firstTokenDelay = d
	return r
}

// WithTokenDelay waits d between deltas.
func (r Response) WithTokenDelay(d time.Duration) Response {
	r.tokenDelay = d
	return r
}

func (r Response) withFault(f fault) Response {
	r = r.clone()
	r.faults = append(r.faults, f)
	return r
}

// Truncated ends the stream cleanly after the last delta, without a
// finish_reason and without [DONE], as a provider that gives up does. A
// response that does not stream sends half of its JSON body.
func (r Response) Truncated() Response { return r.TruncatedAfter(afterAll) }

// TruncatedAfter ends the stream cleanly after n deltas, without a
// finish_reason and without [DONE].
func (r Response) TruncatedAfter(n int) Response {
	return r.withFault(fault{at: n, kind: faultTruncate})
}

// AbortedAfter cuts the connection after n deltas, so the client sees an
// unexpected EOF rather than the end of the body.
func (r Response) AbortedAfter(n int) Response {
	return r.withFault(fault{at: n, kind: faultAbort})
}

// MalformedAfter sends one chunk that is not valid JSON after n deltas, then
// carries on. A response that does not stream sends a body that is not JSON.
func (r Response) MalformedAfter(n int) Response {
	return r.withFault(fault{at: n, kind: faultMalformed})
}

// FailAfter sends the body of errResp (built by Error, APIError or a typed
// error helper) as an error event after n deltas and ends the stream, as
// providers report failures once a stream has started. A response that does
// not stream answers with errResp itself.
func (r Response) FailAfter(n int, errResp Response) Response {
	return r.withFault(fault{at: n, kind: faultError, status: errResp.status, header: errResp.header, body: errResp.body})
}

// WholeToolCalls sends each tool call as one fragment carrying its id, name
// and complete arguments, as Ollama does.
func (r Response) WholeToolCalls() Response {
	r.wholeCalls = true
	return r
}

// OmitToolCallIndex leaves the index out of every tool-call fragment, as
// early Ollama releases did.
func (r Response) OmitToolCallIndex() Response {
	r.omitIndex = true
	return r
}

// SameToolCallIndex gives every tool call index 0 (or FirstToolCallIndex), as
// later Ollama releases did for parallel calls.
func (r Response) SameToolCallIndex() Response {
	r.sameIndex = true
	return r
}

// FirstToolCallIndex numbers tool calls from n instead of 0.
func (r Response) FirstToolCallIndex(n int) Response {
	r.firstIndex = n
	return r
}

// DuplicateToolCallEntries sends a call's header (id and name) and the first
// piece of its arguments as two entries with the same index in one chunk, as
// vLLM does with speculative decoding.
func (r Response) DuplicateToolCallEntries() Response {
	r.duplicates = true
	return r
}

// SplitArguments streams each call's arguments n runes per fragment instead
// of in one fragment.
func (r Response) SplitArguments(n int) Response {
	r.argChunkSize = n
	return r
}

// InterleaveToolCalls sends the fragments of parallel calls in turn (the
// first fragment of each call, then the second of each, and so on) instead
// of one call after the other.
func (r Response) InterleaveToolCalls() Response {
	r.interleave = true
	return r
}

// ToolCallsInOneChunk sends every tool call, whole, as entries of a single
// chunk.
func (r Response) ToolCallsInOneChunk() Response {
	r.callsOneChunk = true
	return r
}

// OmitToolCallIDs leaves the id out of every tool call, as llama.cpp and
// some Ollama models do.
func (r Response) OmitToolCallIDs() Response {
	r.omitIDs = true
	return r
}

// finishReason is the scripted finish_reason or the natural one.
func (r Response) finishReason() string {
	switch {
	case r.finish != "":
		return r.finish
	case len(r.calls) > 0:
		return "tool_calls"
	default:
		return "stop"
	}
}

func (r Response) callID(i int) string {
	if r.omitIDs {
		return ""
	}
	if id := r.calls[i].ID; id != "" {
		return id
	}
	return fmt.Sprintf("call_%d", i)
}

func (r Response) callIndex(i int) *int {
	if r.omitIndex {
		return nil
	}
	n := r.firstIndex
	if !r.sameIndex {
		n += i
	}
	return &n
}

// textDeltas splits the text into its streamed pieces.
func (r Response) textDeltas() []string {
	switch {
	case r.chunks != nil:
		return r.chunks
	case r.chunkSize > 0:
		return splitRunes(r.text, r.chunkSize)
	default:
		return splitWords(r.text)
	}
}

// toolDeltas returns the tool-call entries of each chunk that carries them.
func (r Response) toolDeltas() [][]chunkToolCall {
	if len(r.calls) == 0 {
		return nil
	}
	perCall := make([][][]chunkToolCall, len(r.calls))
	for i, c := range r.calls {
		head := chunkToolCall{Index: r.callIndex(i), ID: r.callID(i), Type: "function"}
		head.Function.Name = c.Name
		if r.wholeCalls || r.callsOneChunk {
			head.Function.Arguments = c.Arguments
			perCall[i] = [][]chunkToolCall{{head}}
			continue
		}
		pieces := []string{c.Arguments}
		if r.argChunkSize > 0 {
			pieces = splitRunes(c.Arguments, r.argChunkSize)
		}
		var chunks [][]chunkToolCall
		for j, p := range pieces {
			piece := chunkToolCall{Index: r.callIndex(i)}
			piece.Function.Arguments = p
			if j == 0 && r.duplicates {
				chunks = append(chunks, []chunkToolCall{head, piece})
				continue
			}
			if j == 0 {
				chunks = append(chunks, []chunkToolCall{head})
			}
			chunks = append(chunks, []chunkToolCall{piece})
		}
		if len(chunks) == 0 {
			chunks = [][]chunkToolCall{{head}}
		}
		perCall[i] = chunks
	}
	var out [][]chunkToolCall
	switch {
	case r.callsOneChunk:
		var all []chunkToolCall
		for _, c := range perCall {
			all = append(all, c[0]...)
		}
		out = append(out, all)
	case r.interleave:
		for j := 0; ; j++ {
			sent := false
			for _, c := range perCall {
				if j < len(c) {
					out = append(out, c[j])
					sent = true
				}
			}
			if !sent {
				break
			}
		}
	default:
		for _, c := range perCall {
			out = append(out, c...)
		}
	}
	return out
}

func splitWords(s string) []string {
	var out []string
	start := 0
	for i := 1; i < len(s); i++ {
		if isSpace(s[i]) && !isSpace(s[i-1]) {
			out = append(out, s[start:i])
			start = i
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

func isSpace(b byte) bool { return b == ' ' || b == '\n' || b == '\t' || b == '\r' }

func splitRunes(s string, n int) []string {
	var out []string
	rs := []rune(s)
	for len(rs) > 0 {
		k := min(n, len(rs))
		out = append(out, string(rs[:k]))
		rs = rs[k:]
	}
	return out
}

// compactJSON returns b without insignificant space when it is JSON, so an
// error event matches the `data: {"error":` prefix clients look for.
func compactJSON(b []byte) []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return b
	}
	return buf.Bytes()
}
