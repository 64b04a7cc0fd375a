package ports

import (
	"context"
	"encoding/json"
)

//go:generate go tool mockgen -typed -destination ../testkit/mocks/llm.go -package mocks . LLM

// SandboxModel is the model name the sandbox's scripted model (devpilot's
// demo model behind its fake OpenAI, or any other scripted responder there)
// answers with, so that what devpilot records as a version's or an item's
// model says it was not written by AI. A sandbox that keeps a real
// provider (the eval's KeepModel) records that provider's model name.
const SandboxModel = "devpilot-sandbox-model"

// IsSandboxModel reports whether model is the sandbox's scripted model.
func IsSandboxModel(model string) bool { return model == SandboxModel }

// MessageRole says who speaks in a conversation with a model.
type MessageRole string

// The roles of a conversation.
const (
	MessageSystem    MessageRole = "system"
	MessageUser      MessageRole = "user"
	MessageAssistant MessageRole = "assistant"
	MessageTool      MessageRole = "tool"
)

// Message is one message of a conversation as the model sees it.
type Message struct {
	Role    MessageRole
	Content string
	// ToolCalls are the calls an assistant message makes.
	ToolCalls []ToolCall
	// ToolCallID and Name say which call a tool message answers.
	ToolCallID string
	Name       string
}

// ToolCall is one call of a tool by the model. Arguments is the JSON text
// exactly as the model produced it, which may be invalid.
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// ToolDefinition describes a tool to the model: a snake_case name, what it
// does, and the JSON Schema of its arguments.
type ToolDefinition struct {
	Name        string
	Description string
	Parameters  json.RawMessage
	// Strict asks the provider to hold the model's arguments to Parameters
	// exactly (OpenAI's strict function calling). Parameters must then be in
	// the strict subset: every property required (optional ones nullable)
	// and additionalProperties false on every object.
	Strict bool
}

// JSONSchemaFormat asks the model for a JSON answer matching Schema.
type JSONSchemaFormat struct {
	Name   string
	Schema json.RawMessage
	Strict bool
}

// ChatRequest is one call of the model.
type ChatRequest struct {
	// Model overrides the adapter's configured model when not empty.
	Model    string
	Messages []Message
	Tools    []ToolDefinition
	// MaxTokens bounds the completion; 0 leaves it to the provider.
	MaxTokens int
	// ResponseFormat, when set, asks for structured output.
	ResponseFormat *JSONSchemaFormat
	// Temperature, when not nil, is the sampling temperature (0 to 2);
	// nil leaves it to the provider. A model that takes none is sent none.
	Temperature *float64
	// Seed, when not nil, asks the provider for deterministic sampling,
	// where it offers it; nil sends none.
	Seed *int64
}

// FinishReason says why the model stopped.
type FinishReason string

// The finish reasons a completion can end with.
const (
	FinishStop          FinishReason = "stop"
	FinishToolCalls     FinishReason = "tool_calls"
	FinishLength        FinishReason = "length"
	FinishContentFilter FinishReason = "content_filter"
)

// Usage counts the tokens of one call. PromptTokens counts every input
// token, those read from or written to the provider's prompt cache included;
// CacheReadTokens and CacheWriteTokens say how many of them were (0 from a
// provider that does not report it).
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	CacheReadTokens  int
	CacheWriteTokens int
}

// ChatResult is a finished completion: all its text, its complete tool calls
// in the order the model made them, why it finished, and what it used.
type ChatResult struct {
	Content      string
	ToolCalls    []ToolCall
	FinishReason FinishReason
	Usage        Usage
	Model        string
	// ID is the provider's identifier of the completion ("chatcmpl-…"),
	// "" when it sent none.
	ID string
	// Provider names the provider that answered ("openai", "anthropic",
	// "bedrock"); "" from an adapter that does not say.
	Provider string
}

// LLM error codes, set as Error.Code on the kinds named.
const (
	// CodeContextLength (invalid): the conversation is too long for the model.
	CodeContextLength = "context_length"
	// CodeInvalidRequest (invalid): the provider rejected the request.
	CodeInvalidRequest = "invalid_request"
	// CodeTruncated (upstream): the stream ended before the model finished.
	CodeTruncated = "truncated"
)

// ErrContextLength matches (errors.Is) a model's refusal of a conversation
// too long for it: an invalid Error with CodeContextLength.
var ErrContextLength = &Error{Kind: KindInvalid, Code: CodeContextLength}

// LLM is a chat model that streams its answers and calls tools.
type LLM interface {
	// Chat runs one completion. Text deltas are passed to onDelta as they
	// arrive (onDelta may be nil); an error from onDelta aborts the call and
	// is returned. Tool calls are assembled and returned complete in the
	// result. Errors: rate_limited (with RetryAfter), unavailable, timeout,
	// invalid (Code invalid_request or context_length), upstream (Code
	// truncated when the stream was cut), and ctx's error when it ends.
	Chat(ctx context.Context, req ChatRequest, onDelta func(delta string) error) (ChatResult, error)
}
