package anthropic

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/devpilot/devpilot/ports"
)

// emptyObjectSchema is the input schema of a tool that takes no arguments:
// Anthropic requires an object schema for every tool.
var emptyObjectSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// emptyInput is the input sent for a past tool call whose arguments are
// not a JSON object: Anthropic refuses any other input.
var emptyInput = json.RawMessage(`{}`)

// answerToolDescription describes the tool a structured answer is forced
// through.
const answerToolDescription = "Give your answer by calling this tool: its input is the answer, " +
	"a JSON object that matches the input schema exactly."

// built is a request ready to be sent, and the name of the tool whose input
// is the structured answer ("" when none is asked for).
type built struct {
	params     anthropic.MessageNewParams
	answerTool string
}

// buildParams maps a ports.ChatRequest to the Messages API:
//
//   - every system message becomes a block of the system parameter, in
//     order, the last one marked for the prompt cache (cache_control
//     ephemeral): with the tools, which come first in Anthropic's cache
//     order and whose last definition is marked too, that is the static
//     prefix of every call;
//   - user and assistant messages become turns of text blocks; an
//     assistant's tool calls become tool_use blocks after its text; tool
//     messages become tool_result blocks of a user turn, so the results of
//     one assistant turn travel in one user message, as the API requires;
//     consecutive turns of one role are merged, so roles alternate;
//   - a ResponseFormat becomes a tool named after it with its schema as
//     the input schema, and tool_choice forcing that tool: the structured
//     answer is that call's input;
//   - MaxTokens is the request's, else Config.MaxTokens.
//
// Temperature and Seed are not sent: the Messages API version the SDK
// speaks (2026-10-21) takes no sampling parameters. It returns an invalid
// Error (Code invalid_request) for a request no provider could accept.
func (c *Client) buildParams(req ports.ChatRequest) (*built, error) {
	b := &built{}
	p := &b.params
	p.Model = cmp.Or(req.Model, c.model)
	if len(req.Messages) == 0 {
		return b, invalidRequest("the conversation has no messages")
	}
	if req.MaxTokens < 0 {
		return b, invalidRequest("max tokens must not be negative")
	}
	p.MaxTokens = int64(req.MaxTokens)
	if p.MaxTokens == 0 {
		p.MaxTokens = int64(c.maxTokens)
	}
	for i, m := range req.Messages {
		if err := addMessage(p, m); err != nil {
			return b, invalidRequest(fmt.Sprintf("message %d: %s", i, err))
		}
	}
	if len(p.Messages) == 0 {
		return b, invalidRequest("the conversation has no user or assistant messages")
	}
	if n := len(p.System); n > 0 {
		p.System[n-1].CacheControl = anthropic.NewCacheControlEphemeralParam()
	}
	for _, t := range req.Tools {
		tool, err := toolParam(t.Name, t.Description, t.Parameters)
		if err != nil {
			return b, err
		}
		if t.Strict {
			tool.Strict = anthropic.Bool(true)
		}
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: tool})
	}
	if f := req.ResponseFormat; f != nil {
		if f.Name == "" {
			return b, invalidRequest("the response format has no name")
		}
		for _, t := range req.Tools {
			if t.Name == f.Name {
				return b, invalidRequest(fmt.Sprintf("the response format %s has the name of a tool", f.Name))
			}
		}
		tool, err := toolParam(f.Name, answerToolDescription, f.Schema)
		if err != nil {
			return b, err
		}
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: tool})
		p.ToolChoice = anthropic.ToolChoiceParamOfTool(f.Name)
		b.answerTool = f.Name
	}
	if n := len(p.Tools); n > 0 {
		p.Tools[n-1].OfTool.CacheControl = anthropic.NewCacheControlEphemeralParam()
	}
	return b, nil
}

// toolParam is a tool definition with schema as its input schema, sent as
// it is.
func toolParam(name, description string, schema json.RawMessage) (*anthropic.ToolParam, error) {
	if name == "" {
		return nil, invalidRequest("a tool has no name")
	}
	if len(bytes.TrimSpace(schema)) == 0 {
		schema = emptyObjectSchema
	} else if !json.Valid(schema) {
		return nil, invalidRequest(fmt.Sprintf("tool %s: the schema is not valid JSON", name))
	}
	t := &anthropic.ToolParam{
		Name:        name,
		InputSchema: param.Override[anthropic.ToolInputSchemaParam](json.RawMessage(schema)),
	}
	if description != "" {
		t.Description = anthropic.String(description)
	}
	return t, nil
}

// addMessage adds m to p: to the system blocks, or as blocks of a turn,
// merged into the last turn when that has the same role.
func addMessage(p *anthropic.MessageNewParams, m ports.Message) error {
	var (
		blocks []anthropic.ContentBlockParamUnion
		user   bool
	)
	switch m.Role {
	case ports.MessageSystem:
		if strings.TrimSpace(m.Content) != "" {
			p.System = append(p.System, anthropic.TextBlockParam{Text: m.Content})
		}
		return nil
	case ports.MessageUser:
		user = true
		text := m.Content
		if strings.TrimSpace(text) == "" {
			// The API refuses empty text blocks, and a turn without content.
			text = "(empty message)"
		}
		blocks = append(blocks, anthropic.NewTextBlock(text))
	case ports.MessageAssistant:
		if strings.TrimSpace(m.Content) != "" {
			blocks = append(blocks, anthropic.NewTextBlock(m.Content))
		}
		for _, tc := range m.ToolCalls {
			if tc.ID == "" || tc.Name == "" {
				return fmt.Errorf("a tool call has no id or no name")
			}
			blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, toolInput(tc.Arguments), tc.Name))
		}
		if len(blocks) == 0 {
			return nil // an empty turn says nothing, and the API refuses it
		}
	case ports.MessageTool:
		if m.ToolCallID == "" {
			return fmt.Errorf("a tool message has no tool call id")
		}
		user = true
		r := anthropic.ToolResultBlockParam{ToolUseID: m.ToolCallID}
		if m.Content != "" {
			r.Content = []anthropic.ToolResultBlockParamContentUnion{{OfText: &anthropic.TextBlockParam{Text: m.Content}}}
		}
		blocks = append(blocks, anthropic.ContentBlockParamUnion{OfToolResult: &r})
	default:
		return fmt.Errorf("unknown role %q", m.Role)
	}
	if n := len(p.Messages); n > 0 {
		last := &p.Messages[n-1]
		switch {
		case user && last.OfUser != nil:
			last.OfUser.Content = mergeUser(last.OfUser.Content, blocks)
			return nil
		case !user && last.OfAssistant != nil:
			last.OfAssistant.Content = append(last.OfAssistant.Content, blocks...)
			return nil
		}
	}
	if user {
		p.Messages = append(p.Messages, anthropic.NewUserMessage(blocks...))
	} else {
		p.Messages = append(p.Messages, anthropic.NewAssistantMessage(blocks...))
	}
	return nil
}

// mergeUser appends blocks to a user turn's content, keeping its
// tool_result blocks first, as the API requires of a turn that answers tool
// calls.
func mergeUser(content, blocks []anthropic.ContentBlockParamUnion) []anthropic.ContentBlockParamUnion {
	out := make([]anthropic.ContentBlockParamUnion, 0, len(content)+len(blocks))
	for _, list := range [][]anthropic.ContentBlockParamUnion{content, blocks} {
		for _, b := range list {
			if b.OfToolResult != nil {
				out = append(out, b)
			}
		}
	}
	for _, list := range [][]anthropic.ContentBlockParamUnion{content, blocks} {
		for _, b := range list {
			if b.OfToolResult == nil {
				out = append(out, b)
			}
		}
	}
	return out
}

// toolInput is the input of a past tool call: its arguments when they are
// a JSON object, else an empty object.
func toolInput(args string) json.RawMessage {
	raw := bytes.TrimSpace([]byte(args))
	if len(raw) == 0 || raw[0] != '{' || !json.Valid(raw) {
		return emptyInput
	}
	return json.RawMessage(raw)
}

func invalidRequest(message string) *ports.Error {
	return &ports.Error{Kind: ports.KindInvalid, Code: ports.CodeInvalidRequest, Message: message}
}
