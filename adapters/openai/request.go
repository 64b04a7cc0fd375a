package openai

import (
	"encoding/json"
	"fmt"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/devpilot/devpilot/ports"
)

// emptyObjectSchema is sent for tools that take no arguments: OpenAI rejects
// a null parameters schema.
var emptyObjectSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// buildRequest maps a ports.ChatRequest to go-openai's request. It returns an
// invalid Error (Code invalid_request) for a request no provider could accept.
func (c *Client) buildRequest(req ports.ChatRequest) (goopenai.ChatCompletionRequest, error) {
	out := goopenai.ChatCompletionRequest{
		Model:         req.Model,
		StreamOptions: &goopenai.StreamOptions{IncludeUsage: true},
	}
	if out.Model == "" {
		out.Model = c.model
	}
	if len(req.Messages) == 0 {
		return out, invalidRequest("the conversation has no messages")
	}
	if req.MaxTokens < 0 {
		return out, invalidRequest("max tokens must not be negative")
	}
	if c.legacyMaxTokens {
		out.MaxTokens = req.MaxTokens
	} else {
		out.MaxCompletionTokens = req.MaxTokens
	}
	for i, m := range req.Messages {
		msg, err := mapMessage(m)
		if err != nil {
			return out, invalidRequest(fmt.Sprintf("message %d: %s", i, err))
		}
		out.Messages = append(out.Messages, msg)
	}
	for _, t := range req.Tools {
		if t.Name == "" {
			return out, invalidRequest("a tool has no name")
		}
		params := t.Parameters
		if len(params) == 0 {
			params = emptyObjectSchema
		} else if !json.Valid(params) {
			return out, invalidRequest(fmt.Sprintf("tool %s: the parameters schema is not valid JSON", t.Name))
		}
		out.Tools = append(out.Tools, goopenai.Tool{
			Type: goopenai.ToolTypeFunction,
			Function: &goopenai.FunctionDefinition{
				Name:        t.Name,
				Description: t.Description,
				Parameters:  params,
			},
		})
	}
	if f := req.ResponseFormat; f != nil {
		if len(f.Schema) == 0 || !json.Valid(f.Schema) {
			return out, invalidRequest("the response format schema is not valid JSON")
		}
		name := f.Name
		if name == "" {
			name = "response"
		}
		out.ResponseFormat = &goopenai.ChatCompletionResponseFormat{
			Type: goopenai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &goopenai.ChatCompletionResponseFormatJSONSchema{
				Name:   name,
				Schema: f.Schema,
				Strict: f.Strict,
			},
		}
	}
	return out, nil
}

func mapMessage(m ports.Message) (goopenai.ChatCompletionMessage, error) {
	out := goopenai.ChatCompletionMessage{Content: m.Content}
	switch m.Role {
	case ports.MessageSystem:
		out.Role = goopenai.ChatMessageRoleSystem
		out.Name = m.Name
	case ports.MessageUser:
		out.Role = goopenai.ChatMessageRoleUser
		out.Name = m.Name
	case ports.MessageAssistant:
		out.Role = goopenai.ChatMessageRoleAssistant
		out.Name = m.Name
		for _, tc := range m.ToolCalls {
			if tc.ID == "" || tc.Name == "" {
				return out, fmt.Errorf("a tool call has no id or no name")
			}
			args := tc.Arguments
			if args == "" {
				args = "{}"
			}
			out.ToolCalls = append(out.ToolCalls, goopenai.ToolCall{
				ID:       tc.ID,
				Type:     goopenai.ToolTypeFunction,
				Function: goopenai.FunctionCall{Name: tc.Name, Arguments: args},
			})
		}
	case ports.MessageTool:
		if m.ToolCallID == "" {
			return out, fmt.Errorf("a tool message has no tool call id")
		}
		out.Role = goopenai.ChatMessageRoleTool
		out.ToolCallID = m.ToolCallID
	default:
		return out, fmt.Errorf("unknown role %q", m.Role)
	}
	return out, nil
}

func invalidRequest(message string) *ports.Error {
	return &ports.Error{Kind: ports.KindInvalid, Code: ports.CodeInvalidRequest, Message: message}
}
