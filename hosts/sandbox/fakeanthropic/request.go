package fakeanthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// wireRequest is the body of a Messages API request, as far as the fake
// reads it.
type wireRequest struct {
	Model      string          `json:"model"`
	MaxTokens  *int            `json:"max_tokens"`
	Messages   []wireMessage   `json:"messages"`
	System     json.RawMessage `json:"system"`
	Tools      []wireTool      `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
	Stream     bool            `json:"stream"`
}

type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type wireBlock struct {
	Type         string          `json:"type"`
	Text         *string         `json:"text"`
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	ToolUseID    string          `json:"tool_use_id"`
	Content      json.RawMessage `json:"content"`
	IsError      bool            `json:"is_error"`
	CacheControl json.RawMessage `json:"cache_control"`
}

type wireTool struct {
	Type         string          `json:"type"`
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	Strict       bool            `json:"strict"`
	CacheControl json.RawMessage `json:"cache_control"`
}

type wireToolChoice struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

// decoded is a request read and checked: its blocks, and what it asks.
type decoded struct {
	w        wireRequest
	system   []wireBlock
	messages [][]wireBlock // the blocks of each message
	// answerTool is the tool forced by tool_choice, whose input is the
	// structured answer; "" when no tool is forced.
	answerTool string
}

// invalid is a request the real API refuses with a 400
// invalid_request_error.
type invalid struct{ message string }

func (e *invalid) Error() string { return e.message }

func refuse(format string, args ...any) error { return &invalid{message: fmt.Sprintf(format, args...)} }

var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,128}$`)

// blocks reads a content or system value: a string (one text block) or an
// array of blocks.
func blocks(raw json.RawMessage) ([]wireBlock, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []wireBlock{{Type: "text", Text: &s}}, nil
	}
	var out []wireBlock
	err := json.Unmarshal(raw, &out)
	return out, err
}

// decode reads and checks body the way the Messages API does, refusing
// what it refuses (an *invalid error).
func decode(body []byte) (*decoded, error) {
	d := &decoded{}
	if err := json.Unmarshal(body, &d.w); err != nil {
		return nil, refuse("There was an issue with your request body: %v", err)
	}
	w := &d.w
	if w.Model == "" {
		return nil, refuse("model: Field required")
	}
	if w.MaxTokens == nil {
		return nil, refuse("max_tokens: Field required")
	}
	if *w.MaxTokens < 0 {
		return nil, refuse("max_tokens: Input should be greater than or equal to 0")
	}
	sys, err := blocks(w.System)
	if err != nil {
		return nil, refuse("system: Input should be a valid string or a list of text blocks")
	}
	for i, b := range sys {
		if b.Type != "text" || b.Text == nil {
			return nil, refuse("system.%d.type: Input tag '%s' found using 'type' does not match the expected tags: 'text'", i, b.Type)
		}
		if *b.Text == "" {
			return nil, refuse("system.%d.text: text content blocks must be non-empty", i)
		}
	}
	d.system = sys
	if len(w.Messages) == 0 {
		return nil, refuse("messages: at least one message is required")
	}
	names := map[string]bool{}
	for i, t := range w.Tools {
		if t.Type != "" && t.Type != "custom" {
			continue // a server tool
		}
		if !toolName.MatchString(t.Name) {
			return nil, refuse("tools.%d.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'", i)
		}
		if names[t.Name] {
			return nil, refuse("tools: Tool names must be unique.")
		}
		names[t.Name] = true
		var schema struct {
			Type string `json:"type"`
		}
		if len(t.InputSchema) == 0 {
			return nil, refuse("tools.%d.custom.input_schema: Field required", i)
		}
		if err := json.Unmarshal(t.InputSchema, &schema); err != nil || schema.Type != "object" {
			return nil, refuse("tools.%d.custom.input_schema.type: Input should be 'object'", i)
		}
	}
	if len(w.ToolChoice) > 0 && string(w.ToolChoice) != "null" {
		var tc wireToolChoice
		if err := json.Unmarshal(w.ToolChoice, &tc); err != nil {
			return nil, refuse("tool_choice: Input should be an object")
		}
		switch tc.Type {
		case "auto", "any", "none":
		case "tool":
			if !names[tc.Name] {
				return nil, refuse("tool_choice.tool.name: Tool '%s' not found in tools", tc.Name)
			}
			d.answerTool = tc.Name
		default:
			return nil, refuse("tool_choice.type: Input tag '%s' found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool', 'none'", tc.Type)
		}
	}
	var pending map[string]bool // tool_use ids of the previous assistant turn
	for i, m := range w.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return nil, refuse("messages.%d.role: Input should be 'user' or 'assistant'", i)
		}
		if i == 0 && m.Role != "user" {
			return nil, refuse("messages: first message must use the \"user\" role")
		}
		if i > 0 && w.Messages[i-1].Role == m.Role {
			return nil, refuse("messages: roles must alternate between \"user\" and \"assistant\", but found multiple \"%s\" roles in a row", m.Role)
		}
		bs, err := blocks(m.Content)
		if err != nil {
			return nil, refuse("messages.%d.content: Input should be a valid string or a list of content blocks", i)
		}
		last := i == len(w.Messages)-1
		if len(bs) == 0 && !(last && m.Role == "assistant") {
			return nil, refuse("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
		}
		uses := map[string]bool{}
		answered := map[string]bool{}
		seenOther := false
		for j, b := range bs {
			switch b.Type {
			case "text":
				if b.Text == nil || *b.Text == "" {
					return nil, refuse("messages.%d.content.%d.text: text content blocks must be non-empty", i, j)
				}
				if m.Role == "assistant" && strings.TrimSpace(*b.Text) == "" && !last {
					return nil, refuse("messages.%d.content.%d.text: text content blocks must contain non-whitespace text", i, j)
				}
				seenOther = true
			case "tool_use":
				if m.Role != "assistant" {
					return nil, refuse("messages.%d.content.%d: tool_use blocks can only be in assistant messages", i, j)
				}
				if b.ID == "" || b.Name == "" {
					return nil, refuse("messages.%d.content.%d.tool_use: id and name are required", i, j)
				}
				var obj map[string]any
				if json.Unmarshal(b.Input, &obj) != nil || obj == nil {
					return nil, refuse("messages.%d.content.%d.tool_use.input: Input should be a valid dictionary", i, j)
				}
				uses[b.ID] = true
			case "tool_result":
				if m.Role != "user" {
					return nil, refuse("messages.%d.content.%d: tool_result blocks can only be in user messages", i, j)
				}
				if seenOther {
					return nil, refuse("messages.%d: tool_result blocks must be at the start of the content, before any other block", i)
				}
				if !pending[b.ToolUseID] {
					return nil, refuse("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. "+
						"Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, b.ToolUseID)
				}
				if _, err := blocks(b.Content); err != nil {
					return nil, refuse("messages.%d.content.%d.tool_result.content: Input should be a valid string or a list of blocks", i, j)
				}
				answered[b.ToolUseID] = true
			default:
				return nil, refuse("messages.%d.content.%d.type: Input tag '%s' found using 'type' does not match any of the expected tags", i, j, b.Type)
			}
		}
		if m.Role == "user" {
			for id := range pending {
				if !answered[id] {
					return nil, refuse("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. "+
						"Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i-1, id)
				}
			}
		}
		pending = uses
		d.messages = append(d.messages, bs)
	}
	return d, nil
}

// toScript is the request as the shared script reads it: a Chat
// Completions request of the same conversation.
func (d *decoded) toScript(path string, header map[string][]string, body []byte) fakeopenai.Request {
	w := &d.w
	r := fakeopenai.Request{
		Method: "POST", Path: path, Header: header, Body: body,
		Model: w.Model, MaxTokens: *w.MaxTokens, Stream: w.Stream, ToolChoice: w.ToolChoice,
	}
	for _, b := range d.system {
		r.Messages = append(r.Messages, fakeopenai.Message{Role: "system", Content: *b.Text})
	}
	names := map[string]string{} // the tool of each tool_use id
	for i, bs := range d.messages {
		role := w.Messages[i].Role
		var text strings.Builder
		var calls []fakeopenai.Call
		for _, b := range bs {
			switch b.Type {
			case "text":
				text.WriteString(*b.Text)
			case "tool_use":
				calls = append(calls, fakeopenai.Call{ID: b.ID, Name: b.Name, Arguments: string(b.Input)})
				names[b.ID] = b.Name
			case "tool_result":
				r.Messages = append(r.Messages, fakeopenai.Message{Role: "tool", ToolCallID: b.ToolUseID,
					Name: names[b.ToolUseID], Content: resultText(b.Content)})
			}
		}
		if role == "assistant" || text.Len() > 0 {
			r.Messages = append(r.Messages, fakeopenai.Message{Role: role, Content: text.String(), ToolCalls: calls})
		}
	}
	for _, t := range w.Tools {
		if t.Name == d.answerTool {
			r.ResponseFormat = &fakeopenai.ResponseFormat{Type: "json_schema",
				JSONSchema: &fakeopenai.JSONSchema{Name: t.Name, Schema: t.InputSchema, Strict: t.Strict}}
			continue
		}
		r.Tools = append(r.Tools, fakeopenai.Tool{Type: "function", Name: t.Name, Description: t.Description,
			Parameters: t.InputSchema, Strict: t.Strict})
	}
	return r
}

// resultText is the text of a tool_result's content.
func resultText(raw json.RawMessage) string {
	bs, _ := blocks(raw)
	var b strings.Builder
	for _, blk := range bs {
		if blk.Type == "text" && blk.Text != nil {
			b.WriteString(*blk.Text)
		}
	}
	return b.String()
}

// cachePrefix is the part of the request up to its last cache_control
// breakpoint, in Anthropic's cache order (tools, system, messages), as
// bytes to hash; nil when the request marks none.
func (d *decoded) cachePrefix() []byte {
	var segs [][]byte
	last := -1
	add := func(seg []byte, marked bool) {
		segs = append(segs, seg)
		if marked {
			last = len(segs) - 1
		}
	}
	marked := func(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }
	for _, t := range d.w.Tools {
		add([]byte(t.Name+"\x00"+t.Description+"\x00"+string(t.InputSchema)), marked(t.CacheControl))
	}
	for _, b := range d.system {
		add([]byte(*b.Text), marked(b.CacheControl))
	}
	for i, bs := range d.messages {
		for _, b := range bs {
			text := ""
			if b.Text != nil {
				text = *b.Text
			}
			add([]byte(d.w.Messages[i].Role+"\x00"+b.Type+"\x00"+text+"\x00"+b.ID+string(b.Input)+b.ToolUseID+string(b.Content)),
				marked(b.CacheControl))
		}
	}
	if last < 0 {
		return nil
	}
	return bytes.Join(segs[:last+1], []byte{0xff})
}
