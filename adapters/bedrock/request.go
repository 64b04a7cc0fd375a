package bedrock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	sdkaws "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/devpilot/devpilot/ports"
)

// cachePoints says where a request's cachePoint blocks go.
type cachePoints int

const (
	noCachePoints             cachePoints = iota
	systemCachePoint                      // after the system prompt
	systemAndToolsCachePoints             // after the system prompt and after the tools
)

// claude3First matches the Claude 3 models that predate Bedrock's prompt
// caching.
var claude3First = regexp.MustCompile(`anthropic\.claude-3-(haiku|sonnet|opus)-`)

// cacheFor is where the requests to model get cachePoint blocks.
func (c *Client) cacheFor(model string) cachePoints {
	switch c.promptCache {
	case PromptCacheOff:
		return noCachePoints
	case PromptCacheOn:
		return systemAndToolsCachePoints
	}
	if _, refused := c.noCache.Load(model); refused {
		return noCachePoints
	}
	lower := strings.ToLower(model)
	switch {
	case claude3First.MatchString(lower):
		return noCachePoints
	case strings.Contains(lower, "anthropic.claude"):
		return systemAndToolsCachePoints
	case strings.Contains(lower, "amazon.nova"):
		return systemCachePoint
	case strings.Contains(lower, "application-inference-profile/"):
		return systemAndToolsCachePoints // unknown: tried until refused
	case strings.Contains(lower, "."):
		return noCachePoints // another provider's model (meta., mistral., cohere., …)
	}
	return systemAndToolsCachePoints
}

// rawDocument is a document given as JSON text, sent as it is: an input
// schema keeps the order of its properties (models write them in that
// order) and its empty objects and arrays, which the SDK's document
// encoder of decoded values would turn into null.
type rawDocument struct {
	// Interface gives the type the SDK's marker method; only
	// MarshalSmithyDocument and UnmarshalSmithyDocument are ever called.
	document.Interface
	raw []byte
}

// MarshalSmithyDocument returns the document's JSON.
func (d rawDocument) MarshalSmithyDocument() ([]byte, error) { return d.raw, nil }

// UnmarshalSmithyDocument decodes the document's JSON into v.
func (d rawDocument) UnmarshalSmithyDocument(v any) error { return json.Unmarshal(d.raw, v) }

// newRawDocument returns raw, compacted, as a document; ok is false when
// raw is not a JSON object.
func newRawDocument(raw []byte) (document.Interface, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' || !json.Valid(raw) {
		return nil, false
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return nil, false
	}
	return rawDocument{Interface: document.NewLazyDocument(nil), raw: b.Bytes()}, true
}

// toolNamePattern is what Bedrock accepts as a tool's name.
var toolNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// structuredToolName is the name of the tool that carries a response
// format's schema: the format's name when Bedrock accepts it.
func structuredToolName(f *ports.JSONSchemaFormat) string {
	if toolNamePattern.MatchString(f.Name) {
		return f.Name
	}
	return "response"
}

// useToolInstruction asks a model that cannot be forced to use the tool
// that carries the answer.
const useToolInstruction = "Answer only by calling the tool %s once, with the whole answer as its input; write no other text."

// Placeholders for text Bedrock refuses to see blank.
const (
	blankUserText   = "(empty message)"
	blankToolResult = "(no output)"
	unanswered      = "(no result was recorded for this call)"
)

// text is s as it is sent: valid UTF-8 without NUL and the other control
// characters ports.CleanText drops.
func text(s string) string { return ports.CleanText(s) }

func blank(s string) bool { return strings.TrimSpace(s) == "" }

// buildInput translates req into a ConverseStream request for model, with
// cachePoint blocks where cache says. structured is the name of the tool
// that carries the response format, "" without one; force forces its use
// with toolChoice, else the system prompt asks for it.
func (c *Client) buildInput(req ports.ChatRequest, model string, cache cachePoints, force bool) (*bedrockruntime.ConverseStreamInput, string, error) {
	in := &bedrockruntime.ConverseStreamInput{ModelId: sdkaws.String(model)}

	// Tools.
	var tools []types.Tool
	names := map[string]bool{}
	for _, t := range req.Tools {
		if !toolNamePattern.MatchString(t.Name) {
			return nil, "", invalidRequest(fmt.Sprintf("the tool name %q is not one Bedrock accepts", t.Name))
		}
		schema, ok := newRawDocument(t.Parameters)
		if !ok {
			if len(bytes.TrimSpace(t.Parameters)) != 0 {
				return nil, "", invalidRequest(fmt.Sprintf("the parameters of tool %q are not a JSON Schema object", t.Name))
			}
			schema, _ = newRawDocument([]byte(`{"type":"object","properties":{}}`))
		}
		spec := &types.ToolSpecification{Name: sdkaws.String(t.Name), InputSchema: &types.ToolInputSchemaMemberJson{Value: schema}}
		if d := text(t.Description); !blank(d) {
			spec.Description = sdkaws.String(d)
		}
		tools = append(tools, &types.ToolMemberToolSpec{Value: *spec})
		names[t.Name] = true
	}
	var structured string
	var choice types.ToolChoice
	if f := req.ResponseFormat; f != nil {
		schema, ok := newRawDocument(f.Schema)
		if !ok {
			return nil, "", invalidRequest("the response format schema is not a JSON object")
		}
		structured = structuredToolName(f)
		for names[structured] {
			structured += "_"
		}
		tools = append(tools, &types.ToolMemberToolSpec{Value: types.ToolSpecification{
			Name:        sdkaws.String(structured),
			Description: sdkaws.String("Write the answer: its input is the whole answer, as the schema describes."),
			InputSchema: &types.ToolInputSchemaMemberJson{Value: schema},
		}})
		if force {
			choice = &types.ToolChoiceMemberTool{Value: types.SpecificToolChoice{Name: sdkaws.String(structured)}}
		}
	}
	if len(tools) > 0 {
		if cache == systemAndToolsCachePoints {
			tools = append(tools, &types.ToolMemberCachePoint{Value: types.CachePointBlock{Type: types.CachePointTypeDefault}})
		}
		in.ToolConfig = &types.ToolConfiguration{Tools: tools, ToolChoice: choice}
	}

	// System prompt and messages.
	msgs, system := convertMessages(req.Messages, len(tools) > 0)
	if structured != "" && !force {
		system = append(system, &types.SystemContentBlockMemberText{Value: fmt.Sprintf(useToolInstruction, structured)})
	}
	if len(system) > 0 && cache != noCachePoints {
		// After the first system message, the static prefix; later ones
		// (a note that history was left out) change from turn to turn.
		system = append(system[:1:1], append([]types.SystemContentBlock{
			&types.SystemContentBlockMemberCachePoint{Value: types.CachePointBlock{Type: types.CachePointTypeDefault}},
		}, system[1:]...)...)
	}
	in.System = system
	in.Messages = msgs

	// Inference configuration.
	var inf types.InferenceConfiguration
	set := false
	if n := max(req.MaxTokens, 0); n > 0 || c.maxTokens > 0 {
		if n == 0 {
			n = c.maxTokens
		}
		inf.MaxTokens, set = sdkaws.Int32(int32(min(n, math.MaxInt32))), true
	}
	if t := req.Temperature; t != nil {
		// Bedrock's models take 0 to 1; ports' range is OpenAI's 0 to 2.
		inf.Temperature, set = sdkaws.Float32(float32(min(max(*t, 0), 1))), true
	}
	if set {
		in.InferenceConfig = &inf
	}
	return in, structured, nil
}

// convertMessages translates the conversation into Bedrock's messages and
// system blocks. Bedrock wants a conversation that starts with a user
// message and alternates user and assistant, blocks that are not blank,
// and every tool result in the user message right after the assistant
// message that called it: consecutive messages of one role are merged
// (tool results are user content), a conversation that starts with the
// assistant gets a user message before it, and blank text gets a
// placeholder. A tool message answering no call of the assistant message
// before it is sent as text, and so are tool calls and results when the
// request offers no tools (Bedrock refuses tool blocks without a
// toolConfig).
func convertMessages(in []ports.Message, withTools bool) ([]types.Message, []types.SystemContentBlock) {
	var system []types.SystemContentBlock
	var out []types.Message
	// calls are the ids of the tool calls of the last assistant message
	// whose results may still come, pending those still unanswered in
	// order.
	calls := map[string]bool{}
	var pending []string
	add := func(role types.ConversationRole, blocks ...types.ContentBlock) {
		if len(blocks) == 0 {
			return
		}
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			return
		}
		out = append(out, types.Message{Role: role, Content: blocks})
	}
	textBlock := func(s string) types.ContentBlock { return &types.ContentBlockMemberText{Value: s} }
	toolResult := func(id, content string) types.ContentBlock {
		return &types.ContentBlockMemberToolResult{Value: types.ToolResultBlock{
			ToolUseId: sdkaws.String(id),
			Content:   []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: content}},
		}}
	}
	// answerPending answers the calls left unanswered before the next
	// turn, as Bedrock requires.
	answerPending := func() {
		for _, id := range pending {
			add(types.ConversationRoleUser, toolResult(id, unanswered))
		}
		pending = pending[:0]
		clear(calls)
	}
	for _, m := range in {
		switch m.Role {
		case ports.MessageSystem:
			if s := text(m.Content); !blank(s) {
				system = append(system, &types.SystemContentBlockMemberText{Value: s})
			}
		case ports.MessageAssistant:
			answerPending()
			var blocks []types.ContentBlock
			if s := text(m.Content); !blank(s) {
				blocks = append(blocks, textBlock(s))
			}
			for _, call := range m.ToolCalls {
				if !withTools || call.ID == "" || calls[call.ID] || !toolNamePattern.MatchString(call.Name) {
					blocks = append(blocks, textBlock(fmt.Sprintf("(called the tool %s with %s)", text(call.Name), text(call.Arguments))))
					continue
				}
				input, ok := newRawDocument([]byte(call.Arguments))
				if !ok {
					input, _ = newRawDocument([]byte("{}"))
				}
				blocks = append(blocks, &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{
					ToolUseId: sdkaws.String(call.ID), Name: sdkaws.String(call.Name), Input: input,
				}})
				calls[call.ID] = true
				pending = append(pending, call.ID)
			}
			if len(blocks) == 0 {
				continue
			}
			if len(out) == 0 {
				add(types.ConversationRoleUser, textBlock(blankUserText))
			}
			add(types.ConversationRoleAssistant, blocks...)
		case ports.MessageTool:
			content := text(m.Content)
			if blank(content) {
				content = blankToolResult
			}
			if !calls[m.ToolCallID] {
				add(types.ConversationRoleUser, textBlock(fmt.Sprintf("(result of the tool %s: %s)", text(m.Name), content)))
				continue
			}
			delete(calls, m.ToolCallID)
			pending = slices.DeleteFunc(pending, func(id string) bool { return id == m.ToolCallID })
			add(types.ConversationRoleUser, toolResult(m.ToolCallID, content))
		default: // user, and any role Bedrock has no place for
			answerPending()
			s := text(m.Content)
			if blank(s) {
				s = blankUserText
			}
			add(types.ConversationRoleUser, textBlock(s))
		}
	}
	answerPending()
	if len(out) == 0 {
		add(types.ConversationRoleUser, textBlock(blankUserText))
	}
	return out, system
}

func invalidRequest(msg string) *ports.Error {
	return &ports.Error{Kind: ports.KindInvalid, Code: ports.CodeInvalidRequest, Message: "bedrock: " + msg}
}
