// Package demomodel is the DEMO model of devpilot's sandbox. It is not AI: it
// answers Chat Completions requests with fixed rules, so that `devpilot run`
// without an API key can show every feature end to end. Served as the
// responder of a fakeopenai.NewHandler fake, with the real OpenAI adapter
// pointed at it, it
//
//   - routes the assistant's chat turns by keywords ("what runs in
//     production", "scale api to 3", "costs", "commits", "briefs", "specs", …)
//     to the tools offered in the request, with arguments that satisfy each
//     tool's JSON Schema and ids taken from earlier tool results, and
//     summarises the results in a few plain sentences;
//   - writes structurally valid specification stages (spec_scope, spec_prd,
//     spec_epics, spec_stories, spec_prps) built from the raw material and
//     the earlier stages in the prompt, with ids and traceability that pass
//     the specification engine's checks;
//   - digests long specification inputs as core/spec asks when they exceed
//     its context budget (input_digest_map: the key facts of a chunk, each
//     citing its input; input_digest_reduce: partial digests merged);
//   - answers a repair or revision turn as it answered the first request,
//     which passes the checks already;
//   - writes content drafts (content_draft) from the brief in the prompt,
//     within its length and without the brand's banned words;
//   - names conversations from their first message;
//   - and answers anything else with a short generic text.
//
// In faithful mode (see Faithful) the specification stages and digests are
// built only from what each request contains, every fact carried forward,
// so that what a call is not given cannot reach its answer.
//
// The answers are deterministic (the same request gets the same answer; only
// cost queries read the clock, see WithClock) and the Model is safe for
// concurrent use.
package demomodel

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// Model is the sandbox's demo model. Its zero value is not usable; call New.
type Model struct {
	now      func() time.Time
	schemas  *schemaCache
	faithful bool
}

// Option configures a Model.
type Option func(*Model)

// WithClock sets where the model reads today's date, which only cost
// queries use (the last 30 days by default); time.Now when not set.
func WithClock(now func() time.Time) Option {
	return func(m *Model) { m.now = now }
}

// New returns a demo model.
func New(opts ...Option) *Model {
	m := &Model{now: time.Now, schemas: newSchemaCache()}
	for _, o := range opts {
		o(m)
	}
	return m
}

// Respond answers one chat completion request; it has the signature of
// fakeopenai.Server.SetResponder's argument. It never fails: a request it
// cannot make sense of gets a short text.
func (m *Model) Respond(req *fakeopenai.Request) fakeopenai.Response {
	if kind := digestKind(req); kind != "" {
		if m.faithful {
			return jsonResponse(faithfulDigest(kind, req))
		}
		return jsonResponse(digestAnswer(kind, req))
	}
	switch name := req.ResponseSchemaName(); {
	case strings.HasPrefix(name, specSchemaPrefix) && m.faithful:
		return jsonResponse(faithfulArtifact(strings.TrimPrefix(name, specSchemaPrefix), withoutCitations(req)))
	case strings.HasPrefix(name, specSchemaPrefix):
		return jsonResponse(specArtifact(strings.TrimPrefix(name, specSchemaPrefix), withoutCitations(req)))
	case name == contentSchemaName:
		return jsonResponse(contentDraft(req))
	case name != "":
		return jsonResponse(instanceOf(req.ResponseFormat.JSONSchema.Schema))
	}
	if isTitleRequest(req) {
		return fakeopenai.Text(title(req))
	}
	if len(req.Tools) > 0 {
		return m.assist(req)
	}
	return fakeopenai.Text(genericAnswer)
}

const genericAnswer = "This is devpilot's demo model, which answers with fixed rules instead of AI. " +
	"Set OPENAI_API_KEY (or DEVPILOT_LLM_* settings) to talk to a real model."

// jsonResponse streams a JSON document in pieces of a few hundred
// characters rather than word by word.
func jsonResponse(v any) fakeopenai.Response {
	b, err := json.Marshal(v)
	if err != nil { // every value built here encodes
		b = []byte("{}")
	}
	return fakeopenai.Text(string(b)).WithChunkSize(256)
}

// callIDPrefix is a prefix for the ids of the tool calls of one answer:
// derived from the whole conversation, so the ids are the same for the same
// request and differ between the rounds of a conversation.
func callIDPrefix(req *fakeopenai.Request) string {
	h := sha256.New()
	for _, msg := range req.Messages {
		h.Write([]byte(msg.Role))
		h.Write([]byte{0})
		h.Write([]byte(msg.Content))
		h.Write([]byte{0})
		h.Write([]byte(msg.ToolCallID))
		for _, c := range msg.ToolCalls {
			h.Write([]byte(c.ID))
			h.Write([]byte{0})
		}
		h.Write([]byte{1})
	}
	return "call_demo_" + hex.EncodeToString(h.Sum(nil)[:6]) + "_"
}
