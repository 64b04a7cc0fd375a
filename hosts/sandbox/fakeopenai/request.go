package fakeopenai

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
)

// Request is one request the server received. Method, Path, Query, Header and
// Body are set for every request; the other fields are decoded from the body
// of a chat completion request.
type Request struct {
	Method string
	Path   string
	Query  url.Values
	Header http.Header
	Body   []byte

	Model               string
	Messages            []Message
	Tools               []Tool
	ToolChoice          json.RawMessage
	MaxTokens           int
	MaxCompletionTokens int
	ResponseFormat      *ResponseFormat
	Stream              bool
	// IncludeUsage is stream_options.include_usage.
	IncludeUsage bool
	// Temperature and Seed are the request's, nil when it sent none.
	Temperature *float64
	Seed        *int64
}

// Message is one message of a chat completion request.
type Message struct {
	Role string
	// Content is the text of the message; the text parts joined when the
	// request sent content as an array of parts.
	Content    string
	Name       string
	ToolCalls  []Call
	ToolCallID string
}

// Tool is one function tool offered to the model.
type Tool struct {
	Type        string
	Name        string
	Description string
	Parameters  json.RawMessage
	Strict      bool
}

// ResponseFormat is the response_format of a request.
type ResponseFormat struct {
	Type       string
	JSONSchema *JSONSchema
}

// JSONSchema is the json_schema of a response_format.
type JSONSchema struct {
	Name   string
	Schema json.RawMessage
	Strict bool
}

// ResponseSchemaName is the name of the JSON Schema the request asks the
// answer to match (response_format.json_schema.name), or "" when it asks for
// no schema.
func (r *Request) ResponseSchemaName() string {
	if r.ResponseFormat == nil || r.ResponseFormat.JSONSchema == nil {
		return ""
	}
	return r.ResponseFormat.JSONSchema.Name
}

// Tool returns the function tool of the request with the name, if it offers
// one.
func (r *Request) Tool(name string) (Tool, bool) {
	for _, t := range r.Tools {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// LastMessage is the request's last message; the zero Message when it has
// none.
func (r *Request) LastMessage() Message {
	if len(r.Messages) == 0 {
		return Message{}
	}
	return r.Messages[len(r.Messages)-1]
}

type wireRequest struct {
	Model               string          `json:"model"`
	Messages            []wireMessage   `json:"messages"`
	Tools               []wireTool      `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	MaxTokens           int             `json:"max_tokens"`
	MaxCompletionTokens int             `json:"max_completion_tokens"`
	ResponseFormat      *struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
			Strict bool            `json:"strict"`
		} `json:"json_schema"`
	} `json:"response_format"`
	Stream        bool `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Temperature *float64 `json:"temperature"`
	Seed        *int64   `json:"seed"`
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Name       string          `json:"name"`
	ToolCalls  []wireToolCall  `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

type wireToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments,omitempty"`
	} `json:"function"`
}

type wireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Strict      bool            `json:"strict"`
	} `json:"function"`
}

func decodeChat(body []byte, r *Request) error {
	var w wireRequest
	if err := json.Unmarshal(body, &w); err != nil {
		return err
	}
	r.Model = w.Model
	r.ToolChoice = w.ToolChoice
	r.MaxTokens = w.MaxTokens
	r.MaxCompletionTokens = w.MaxCompletionTokens
	r.Stream = w.Stream
	r.Temperature, r.Seed = w.Temperature, w.Seed
	r.IncludeUsage = w.StreamOptions != nil && w.StreamOptions.IncludeUsage
	for _, m := range w.Messages {
		content, err := decodeContent(m.Content)
		if err != nil {
			return err
		}
		msg := Message{Role: m.Role, Content: content, Name: m.Name, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, Call{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
		}
		r.Messages = append(r.Messages, msg)
	}
	for _, t := range w.Tools {
		r.Tools = append(r.Tools, Tool{
			Type:        t.Type,
			Name:        t.Function.Name,
			Description: t.Function.Description,
			Parameters:  t.Function.Parameters,
			Strict:      t.Function.Strict,
		})
	}
	if f := w.ResponseFormat; f != nil {
		r.ResponseFormat = &ResponseFormat{Type: f.Type}
		if s := f.JSONSchema; s != nil {
			r.ResponseFormat.JSONSchema = &JSONSchema{Name: s.Name, Schema: s.Schema, Strict: s.Strict}
		}
	}
	return nil
}

// decodeContent reads a message's content: a string, null, or an array of
// parts whose text parts are joined.
func decodeContent(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}
