package fakebedrock

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// The Converse request, as far as the fake reads it.
type wireRequest struct {
	Messages        []wireMessage `json:"messages"`
	System          []wireBlock   `json:"system"`
	InferenceConfig *struct {
		MaxTokens   int      `json:"maxTokens"`
		Temperature *float64 `json:"temperature"`
	} `json:"inferenceConfig"`
	ToolConfig *struct {
		Tools []struct {
			ToolSpec *struct {
				Name        string `json:"name"`
				Description string `json:"description"`
				InputSchema struct {
					JSON json.RawMessage `json:"json"`
				} `json:"inputSchema"`
				Strict bool `json:"strict"`
			} `json:"toolSpec"`
			CachePoint json.RawMessage `json:"cachePoint"`
		} `json:"tools"`
		ToolChoice *struct {
			Auto json.RawMessage `json:"auto"`
			Any  json.RawMessage `json:"any"`
			Tool *struct {
				Name string `json:"name"`
			} `json:"tool"`
		} `json:"toolChoice"`
	} `json:"toolConfig"`
}

type wireMessage struct {
	Role    string      `json:"role"`
	Content []wireBlock `json:"content"`
}

// wireBlock is a content block (or a system block) of any kind.
type wireBlock struct {
	Text    *string `json:"text"`
	ToolUse *struct {
		ToolUseID string          `json:"toolUseId"`
		Name      string          `json:"name"`
		Input     json.RawMessage `json:"input"`
	} `json:"toolUse"`
	ToolResult *struct {
		ToolUseID string `json:"toolUseId"`
		Content   []struct {
			Text *string         `json:"text"`
			JSON json.RawMessage `json:"json"`
		} `json:"content"`
		Status string `json:"status"`
	} `json:"toolResult"`
	CachePoint json.RawMessage `json:"cachePoint"`
}

// validationError is a request Bedrock refuses.
type validationError struct{ message string }

func (e *validationError) Error() string { return e.message }

func invalid(format string, args ...any) error {
	return &validationError{message: fmt.Sprintf(format, args...)}
}

// decoded is a request translated for the script, with what the answer
// needs to know.
type decoded struct {
	req fakeopenai.Request
	// structured is the forced tool whose input is the answer, "";
	// forced is true when the request forces a tool (any or one).
	structured string
	forced     bool
	// prefix hashes the request up to its last cachePoint; prefixTokens
	// estimates its tokens. hasCache is false without a cachePoint.
	prefix       [sha256.Size]byte
	prefixTokens int
	hasCache     bool
}

// decode validates body as Bedrock does and translates it.
func decode(body []byte, d *decoded) error {
	var w wireRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&w); err != nil {
		return invalid("Malformed input request: %v, please reformat your input and try again.", err)
	}
	r := &d.req
	if w.InferenceConfig != nil {
		if w.InferenceConfig.MaxTokens < 0 {
			return invalid("The maximum tokens you requested exceeds the model limit.")
		}
		r.MaxTokens = w.InferenceConfig.MaxTokens
		r.Temperature = w.InferenceConfig.Temperature
	}

	// The cached prefix: tools, system, messages, up to the last
	// cachePoint, in the order a model reads them.
	h := sha256.New()
	var prefix fakeopenai.Request
	var pending fakeopenai.Request // read since the last cachePoint
	mark := func() {
		d.hasCache = true
		prefix.Tools = append(prefix.Tools, pending.Tools...)
		prefix.Messages = append(prefix.Messages, pending.Messages...)
		pending = fakeopenai.Request{}
		d.prefix = sha256.Sum256(append(h.Sum(nil), []byte(r.Model)...))
	}
	fmt.Fprintf(h, "%s\x00", r.Model)

	// Tools.
	toolNames := map[string]fakeopenai.Tool{}
	if tc := w.ToolConfig; tc != nil {
		if len(tc.Tools) == 0 {
			return invalid("The value at toolConfig.tools must contain at least one tool.")
		}
		for i, t := range tc.Tools {
			switch {
			case t.ToolSpec != nil:
				if t.ToolSpec.Name == "" {
					return invalid("The toolConfig.tools.%d.toolSpec.name field is blank.", i)
				}
				if _, dup := toolNames[t.ToolSpec.Name]; dup {
					return invalid("The toolConfig.tools field contains duplicate tool names: %s.", t.ToolSpec.Name)
				}
				schema := bytes.TrimSpace(t.ToolSpec.InputSchema.JSON)
				if len(schema) == 0 || schema[0] != '{' {
					return invalid("The toolConfig.tools.%d.toolSpec.inputSchema.json field must be a JSON object.", i)
				}
				tool := fakeopenai.Tool{Type: "function", Name: t.ToolSpec.Name, Description: t.ToolSpec.Description, Parameters: schema,
					Strict: t.ToolSpec.Strict || requiresEvery(schema)}
				toolNames[tool.Name] = tool
				r.Tools = append(r.Tools, tool)
				pending.Tools = append(pending.Tools, tool)
				fmt.Fprintf(h, "tool\x00%s\x00%s\x00%s\x00", tool.Name, tool.Description, schema)
			case t.CachePoint != nil:
				if i == 0 {
					return invalid("A cachePoint cannot be the first element of toolConfig.tools.")
				}
				mark()
			default:
				return invalid("The toolConfig.tools.%d field has no toolSpec.", i)
			}
		}
		if ch := tc.ToolChoice; ch != nil {
			switch {
			case ch.Tool != nil:
				tool, ok := toolNames[ch.Tool.Name]
				if !ok {
					return invalid("The tool %s named in toolChoice is not in toolConfig.tools.", ch.Tool.Name)
				}
				d.structured, d.forced = tool.Name, true
			case ch.Any != nil:
				r.ToolChoice = json.RawMessage(`"required"`)
				d.forced = true
			}
		}
	}

	// System.
	for i, b := range w.System {
		switch {
		case b.Text != nil:
			if strings.TrimSpace(*b.Text) == "" {
				return invalid("The text field in the SystemContentBlock object at system.%d is blank. Add text to the text field, and try again.", i)
			}
			m := fakeopenai.Message{Role: "system", Content: *b.Text}
			r.Messages = append(r.Messages, m)
			pending.Messages = append(pending.Messages, m)
			fmt.Fprintf(h, "system\x00%s\x00", *b.Text)
		case b.CachePoint != nil:
			if i == 0 {
				return invalid("A cachePoint cannot be the first element of system.")
			}
			mark()
		default:
			return invalid("The system.%d field is not a supported SystemContentBlock.", i)
		}
	}

	// Messages.
	if len(w.Messages) == 0 {
		return invalid("A conversation must start with a user message. Try again with a conversation that starts with a user message.")
	}
	var calls map[string]string // toolUseId → name of the previous assistant message's toolUse blocks
	for i, m := range w.Messages {
		switch {
		case i == 0 && m.Role != "user":
			return invalid("A conversation must start with a user message. Try again with a conversation that starts with a user message.")
		case m.Role != "user" && m.Role != "assistant":
			return invalid("1 validation error detected: Value '%s' at 'messages.%d.member.role' failed to satisfy constraint: Member must satisfy enum value set: [user, assistant]", m.Role, i+1)
		case i > 0 && w.Messages[i-1].Role == m.Role:
			return invalid("A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.")
		case len(m.Content) == 0:
			return invalid("The content field in the Message object at messages.%d is empty. Add a ContentBlock object to the content field and try again.", i)
		}
		var texts []string
		var toolMsgs []fakeopenai.Message
		var toolCalls []fakeopenai.Call
		answered := map[string]bool{}
		next := map[string]string{}
		flush := func() {
			msg := fakeopenai.Message{Role: m.Role, Content: strings.Join(texts, "\n"), ToolCalls: toolCalls}
			var add []fakeopenai.Message
			add = append(add, toolMsgs...)
			if len(texts) > 0 || len(toolCalls) > 0 {
				add = append(add, msg)
			}
			r.Messages = append(r.Messages, add...)
			pending.Messages = append(pending.Messages, add...)
			texts, toolMsgs, toolCalls = nil, nil, nil
		}
		for j, b := range m.Content {
			switch {
			case b.Text != nil:
				if strings.TrimSpace(*b.Text) == "" {
					return invalid("The text field in the ContentBlock object at messages.%d.content.%d is blank. Add text to the text field, and try again.", i, j)
				}
				texts = append(texts, *b.Text)
				fmt.Fprintf(h, "%s\x00text\x00%s\x00", m.Role, *b.Text)
			case b.ToolUse != nil:
				if m.Role != "assistant" {
					return invalid("The toolUse content block at messages.%d.content.%d is only allowed in an assistant message.", i, j)
				}
				if w.ToolConfig == nil {
					return invalid("The toolConfig field must be defined when using toolUse and toolResult content blocks.")
				}
				input := bytes.TrimSpace(b.ToolUse.Input)
				if len(input) == 0 || input[0] != '{' {
					return invalid("The input field of the toolUse content block at messages.%d.content.%d must be a JSON object.", i, j)
				}
				toolCalls = append(toolCalls, fakeopenai.Call{ID: b.ToolUse.ToolUseID, Name: b.ToolUse.Name, Arguments: string(input)})
				next[b.ToolUse.ToolUseID] = b.ToolUse.Name
				fmt.Fprintf(h, "toolUse\x00%s\x00%s\x00%s\x00", b.ToolUse.ToolUseID, b.ToolUse.Name, input)
			case b.ToolResult != nil:
				if m.Role != "user" {
					return invalid("The toolResult content block at messages.%d.content.%d is only allowed in a user message.", i, j)
				}
				if w.ToolConfig == nil {
					return invalid("The toolConfig field must be defined when using toolUse and toolResult content blocks.")
				}
				name, ok := calls[b.ToolResult.ToolUseID]
				if !ok || answered[b.ToolResult.ToolUseID] {
					return invalid("The toolResult blocks at messages.%d.content contain an id %s that does not match a toolUse block of the previous turn.", i, b.ToolResult.ToolUseID)
				}
				answered[b.ToolResult.ToolUseID] = true
				var parts []string
				for _, c := range b.ToolResult.Content {
					switch {
					case c.Text != nil:
						parts = append(parts, *c.Text)
					case c.JSON != nil:
						parts = append(parts, string(c.JSON))
					}
				}
				content := strings.Join(parts, "\n")
				toolMsgs = append(toolMsgs, fakeopenai.Message{Role: "tool", Content: content, ToolCallID: b.ToolResult.ToolUseID, Name: name})
				fmt.Fprintf(h, "toolResult\x00%s\x00%s\x00", b.ToolResult.ToolUseID, content)
			case b.CachePoint != nil:
				flush()
				mark()
			default:
				return invalid("The messages.%d.content.%d field is not a supported ContentBlock.", i, j)
			}
		}
		flush()
		if m.Role == "user" {
			for id := range calls {
				if !answered[id] {
					return invalid("Expected toolResult blocks at messages.%d.content for the following Ids: %s", i, id)
				}
			}
		}
		calls = next
	}
	if d.structured != "" {
		tool := toolNames[d.structured]
		r.ResponseFormat = &fakeopenai.ResponseFormat{Type: "json_schema",
			JSONSchema: &fakeopenai.JSONSchema{Name: tool.Name, Schema: tool.Parameters, Strict: true}}
		var kept []fakeopenai.Tool
		for _, t := range r.Tools {
			if t.Name != d.structured {
				kept = append(kept, t)
			}
		}
		r.Tools = kept
	}
	if d.hasCache {
		d.prefixTokens = fakeopenai.EstimateTokens(&prefix) - 3 // no reply priming in a prefix
	}
	return nil
}

// requiresEvery reports whether schema is an object schema in the strict
// subset: no other properties, every one of them required. A model holds
// to what such a schema requires (a nullable property is sent as null), as
// OpenAI's strict function calling does, so the tool reaches the script as
// Strict and the demo model answers it as it answers OpenAI's strict tools.
func requiresEvery(schema json.RawMessage) bool {
	var s struct {
		Properties           map[string]json.RawMessage `json:"properties"`
		Required             []string                   `json:"required"`
		AdditionalProperties *bool                      `json:"additionalProperties"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 || s.AdditionalProperties == nil || *s.AdditionalProperties {
		return false
	}
	req := make(map[string]bool, len(s.Required))
	for _, r := range s.Required {
		req[r] = true
	}
	for k := range s.Properties {
		if !req[k] {
			return false
		}
	}
	return true
}
