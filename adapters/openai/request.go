package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/devpilot/devpilot/ports"
)

// emptyObjectSchema is sent for tools that take no arguments: OpenAI rejects
// a null parameters schema.
var emptyObjectSchema = json.RawMessage(`{"type":"object","properties":{}}`)

// call is a request ready to be sent: go-openai's request without its
// tools, and the tools, encoded once for all the calls that offer them. The
// body go-openai encodes is completed with the tools on its way out (see
// recordingDoer): encoding the tool catalogue's schemas on every call, as
// go-openai does, costs more than the rest of a typical request.
//
// A temperature of exactly 0 is sent the same way: go-openai's Temperature
// is a float32 with omitempty, so its encoding leaves a 0 out, and the
// provider would sample at its default (1 at OpenAI) instead of greedily.
type call struct {
	req   goopenai.ChatCompletionRequest
	tools *toolSet // nil without tools
	// zeroTemperature sends "temperature":0, which c.req cannot.
	zeroTemperature bool
}

// toolsKey introduces the tools in a request body.
const toolsKey = `,"tools":`

// zeroTemperature is an explicit temperature of 0 in a request body.
const zeroTemperature = `,"temperature":0`

// withTools completes body, an encoding of c.req in n bytes ending with its
// closing brace, with what go-openai does not encode: c's tools, and a
// temperature of 0. The brace gives way to them and a closing brace. It
// returns the whole body and its length.
func (c *call) withTools(body io.Reader, n int64) (io.Reader, int64) {
	if c.tools == nil && !c.zeroTemperature {
		return body, n
	}
	parts := []io.Reader{io.LimitReader(body, n-1)}
	if c.zeroTemperature {
		parts = append(parts, strings.NewReader(zeroTemperature))
		n += int64(len(zeroTemperature))
	}
	if c.tools != nil {
		parts = append(parts, strings.NewReader(toolsKey), bytes.NewReader(c.tools.json))
		n += int64(len(toolsKey) + len(c.tools.json))
	}
	return io.MultiReader(append(parts, strings.NewReader("}"))...), n
}

// body encodes the request as it is sent, and returns its length.
func (c *call) body() (io.Reader, int64, error) {
	b, err := json.Marshal(&c.req)
	if err != nil {
		return nil, 0, err
	}
	if len(b) < 2 || b[len(b)-1] != '}' {
		return nil, 0, fmt.Errorf("openai: the request encodes as %.20q…, not as an object", b)
	}
	r, n := c.withTools(bytes.NewReader(b), int64(len(b)))
	return r, n, nil
}

// buildRequest maps a ports.ChatRequest to a call of go-openai's streaming
// API. It returns an invalid Error (Code invalid_request) for a request no
// provider could accept.
func (c *Client) buildRequest(req ports.ChatRequest) (*call, error) {
	cl := &call{req: goopenai.ChatCompletionRequest{
		Model:         req.Model,
		Stream:        true, // as go-openai sends it, so that body encodes the same
		StreamOptions: &goopenai.StreamOptions{IncludeUsage: true},
	}}
	out := &cl.req
	if out.Model == "" {
		out.Model = c.model
	}
	if len(req.Messages) == 0 {
		return cl, invalidRequest("the conversation has no messages")
	}
	if req.MaxTokens < 0 {
		return cl, invalidRequest("max tokens must not be negative")
	}
	if c.legacyMaxTokens {
		//lint:ignore SA1019 legacyMaxTokens is for servers that know only max_tokens.
		out.MaxTokens = req.MaxTokens
	} else {
		out.MaxCompletionTokens = req.MaxTokens
	}
	out.Messages = make([]goopenai.ChatCompletionMessage, 0, len(req.Messages))
	for i, m := range req.Messages {
		msg, err := mapMessage(m)
		if err != nil {
			return cl, invalidRequest(fmt.Sprintf("message %d: %s", i, err))
		}
		out.Messages = append(out.Messages, msg)
	}
	tools, err := c.mapTools(req.Tools, c.structuredOutput(out.Model))
	if err != nil {
		return cl, err
	}
	cl.tools = tools
	if err := sampling(cl, req); err != nil {
		return cl, err
	}
	if f := req.ResponseFormat; f != nil {
		if err := responseFormat(out, f, c.structuredOutput(out.Model)); err != nil {
			return cl, err
		}
	}
	return cl, nil
}

// sampling sets req's temperature and seed on cl. A model that takes no
// temperature (OpenAI's reasoning models, which go-openai refuses one for)
// is sent none. It returns an invalid Error for a temperature outside 0 to
// 2.
func sampling(cl *call, req ports.ChatRequest) error {
	out := &cl.req
	if t := req.Temperature; t != nil {
		if !(*t >= 0 && *t <= 2) {
			return invalidRequest(fmt.Sprintf("temperature %v is not from 0 to 2", *t))
		}
		if takesTemperature(out.Model) {
			out.Temperature = float32(*t)
			cl.zeroTemperature = *t == 0
		}
	}
	if req.Seed != nil {
		seed := int(*req.Seed)
		out.Seed = &seed
	}
	return nil
}

// takesTemperature reports whether go-openai lets a request for model set
// a temperature other than the default.
func takesTemperature(model string) bool {
	probe := goopenai.ChatCompletionRequest{Model: model, Temperature: 0.5}
	return goopenai.NewReasoningValidator().Validate(probe) == nil
}

// toolSet is a list of tool definitions, encoded for a structured output
// mode, and their encoding, a JSON array.
type toolSet struct {
	defs []ports.ToolDefinition
	mode StructuredOutput
	json []byte
}

// mapTools encodes tool definitions as OpenAI's tools. The assistant offers
// the same tools on every call, so the last encoding is reused while the
// definitions are the same. It returns nil for no tools, and an invalid
// Error for a tool without a name or with parameters that are not JSON.
// Only a strict provider gets a tool's strict flag; under lenient and
// json_object a tool's schema loses what StructuredLenient strips, as a
// response schema does, since such servers compile both into grammars.
func (c *Client) mapTools(defs []ports.ToolDefinition, mode StructuredOutput) (*toolSet, error) {
	if len(defs) == 0 {
		return nil, nil
	}
	if last := c.lastTools.Load(); last != nil && last.mode == mode && sameTools(last.defs, defs) {
		return last, nil
	}
	tools := make([]goopenai.Tool, len(defs))
	for i, t := range defs {
		if t.Name == "" {
			return nil, invalidRequest("a tool has no name")
		}
		params := t.Parameters
		if len(params) == 0 {
			params = emptyObjectSchema
		} else if !json.Valid(params) {
			return nil, invalidRequest(fmt.Sprintf("tool %s: the parameters schema is not valid JSON", t.Name))
		}
		strict := t.Strict && mode == StructuredStrict
		if mode != StructuredStrict {
			lenient, err := LenientSchema(params)
			if err != nil {
				return nil, invalidRequest(fmt.Sprintf("tool %s: %v", t.Name, err))
			}
			params = lenient
		}
		tools[i] = goopenai.Tool{
			Type: goopenai.ToolTypeFunction,
			Function: &goopenai.FunctionDefinition{
				Name:        t.Name,
				Description: t.Description,
				Parameters:  params,
				Strict:      strict,
			},
		}
	}
	b, err := json.Marshal(tools)
	if err != nil {
		return nil, invalidRequest(fmt.Sprintf("the tools cannot be encoded: %v", err))
	}
	set := &toolSet{defs: defs, mode: mode, json: b}
	c.lastTools.Store(set)
	return set, nil
}

// sameTools reports whether a and b define the same tools.
func sameTools(a, b []ports.ToolDefinition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Strict != b[i].Strict || a[i].Description != b[i].Description || !bytes.Equal(a[i].Parameters, b[i].Parameters) {
			return false
		}
	}
	return true
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
