package fakeopenai

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// StructuredOutput is the kind of provider the fake plays when a chat
// request asks for structured output: the rules it applies to the request's
// response_format (and to its strict tools) before answering, rejecting what
// that provider rejects with that provider's 400 error body. A rejected
// request is recorded and consumes no scripted response.
type StructuredOutput string

// The kinds of provider the fake can play.
const (
	// StructuredOutputAny, the default, accepts every response_format.
	StructuredOutputAny StructuredOutput = ""
	// StructuredOutputOpenAI is OpenAI's API. A json_schema response_format
	// (or a function tool) with strict: true must be a schema its
	// Structured Outputs accept: an object at the root, every object with
	// additionalProperties false and every property required, and none of
	// the keywords of StrictForbiddenKeywords. A json_object
	// response_format needs the word "json" in the messages.
	StructuredOutputOpenAI StructuredOutput = "openai"
	// StructuredOutputLlamaCpp is the llama.cpp server, which compiles a
	// json_schema response_format (strict or not) into a GBNF grammar with
	// its json-schema-to-grammar: a pattern that does not start with ^ and
	// end with $ fails the conversion, and one whose escapes the GBNF parser
	// does not know (a backslash before a letter other than x, u, U, t, r,
	// n: \s, \S, \d, \w ...) fails the grammar. json_object is accepted.
	StructuredOutputLlamaCpp StructuredOutput = "llama.cpp"
	// StructuredOutputJSONObject is a provider with JSON mode only, as
	// DeepSeek's API: a json_schema response_format is refused, and a
	// json_object one needs the word "json" in the messages.
	StructuredOutputJSONObject StructuredOutput = "json_object"
)

// StrictForbiddenKeywords are the JSON Schema keywords the fake's
// StructuredOutputOpenAI refuses in a strict schema: those OpenAI's
// Structured Outputs documentation lists as unsupported.
var StrictForbiddenKeywords = []string{
	"allOf", "not", "if", "then", "else", "dependentRequired", "dependentSchemas",
	"minLength", "maxLength",
	"patternProperties", "unevaluatedProperties", "propertyNames", "minProperties", "maxProperties",
	"unevaluatedItems", "contains", "minContains", "maxContains", "uniqueItems",
}

// Option configures a fake at its creation.
type Option func(*Server)

// WithStructuredOutput makes the fake play the kind of provider m (see
// SetStructuredOutput).
func WithStructuredOutput(m StructuredOutput) Option {
	return func(s *Server) { s.structured = m }
}

// SetStructuredOutput makes the fake play the kind of provider m from the
// next chat request on; StructuredOutputAny accepts everything again.
func (s *Server) SetStructuredOutput(m StructuredOutput) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.structured = m
}

// rejectStructured answers 400, as the provider the fake plays would, a
// request that provider refuses, and reports whether it did.
func (s *Server) rejectStructured(w http.ResponseWriter, req *Request) bool {
	s.mu.Lock()
	mode := s.structured
	s.mu.Unlock()
	var rf ResponseFormat
	if req.ResponseFormat != nil {
		rf = *req.ResponseFormat
	}
	switch mode {
	case StructuredOutputOpenAI:
		if rf.Type == "json_object" && !mentionsJSON(req) {
			invalidRequest(w, "messages", "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.")
			return true
		}
		if rf.Type == "json_schema" && rf.JSONSchema != nil && rf.JSONSchema.Strict {
			if problem := strictProblem(rf.JSONSchema.Schema); problem != "" {
				invalidRequest(w, "response_format", fmt.Sprintf("Invalid schema for response_format '%s': %s", rf.JSONSchema.Name, problem))
				return true
			}
		}
		for i, t := range req.Tools {
			if !t.Strict {
				continue
			}
			if problem := strictProblem(t.Parameters); problem != "" {
				invalidRequest(w, fmt.Sprintf("tools[%d].function.parameters", i),
					fmt.Sprintf("Invalid schema for function '%s': %s", t.Name, problem))
				return true
			}
		}
	case StructuredOutputLlamaCpp:
		if rf.Type != "json_schema" || rf.JSONSchema == nil {
			break
		}
		if problem := llamaCppProblem(rf.JSONSchema.Schema); problem != "" {
			// llama.cpp's server sends its OpenAI-style error with a
			// numeric code.
			b, err := json.Marshal(map[string]any{"error": map[string]any{
				"code":    http.StatusBadRequest,
				"message": problem,
				"type":    "invalid_request_error",
			}})
			if err != nil {
				panic(err)
			}
			writeError(w, http.StatusBadRequest, nil, b)
			return true
		}
	case StructuredOutputJSONObject:
		switch {
		case rf.Type == "json_schema":
			writeError(w, http.StatusBadRequest, nil, errorBody("invalid_request_error", "invalid_request_error",
				"This response_format type is unavailable now"))
			return true
		case rf.Type == "json_object" && !mentionsJSON(req):
			writeError(w, http.StatusBadRequest, nil, errorBody("invalid_request_error", "invalid_request_error",
				"Prompt must contain the word 'json' in some form to use 'response_format' of type 'json_object'"))
			return true
		}
	}
	return false
}

// mentionsJSON reports whether some message of req contains "json", in any
// case.
func mentionsJSON(req *Request) bool {
	for _, m := range req.Messages {
		if strings.Contains(strings.ToLower(m.Content), "json") {
			return true
		}
	}
	return false
}

// strictProblem says why OpenAI's Structured Outputs would refuse schema in
// strict mode, in OpenAI's words; "" when it would not.
func strictProblem(raw json.RawMessage) string {
	var root any
	if err := json.Unmarshal(raw, &root); err != nil {
		return "the schema is not valid JSON."
	}
	obj, _ := root.(map[string]any)
	if t, _ := obj["type"].(string); t != "object" {
		got := "None"
		if t != "" {
			got = `"` + t + `"`
		}
		return fmt.Sprintf("schema must be a JSON Schema of 'type: \"object\"', got 'type: %s'.", got)
	}
	problem := ""
	walkSchemas(root, nil, func(s map[string]any, path []any) bool {
		for _, k := range StrictForbiddenKeywords {
			if _, ok := s[k]; ok {
				problem = fmt.Sprintf("In context=%s, '%s' is not permitted.", pyTuple(path), k)
				return false
			}
		}
		props, hasProps := s["properties"].(map[string]any)
		if t, _ := s["type"].(string); t != "object" && !hasProps {
			return true
		}
		if ap, ok := s["additionalProperties"].(bool); !ok || ap {
			problem = fmt.Sprintf("In context=%s, 'additionalProperties' is required to be supplied and to be false.", pyTuple(path))
			return false
		}
		required := map[string]bool{}
		list, _ := s["required"].([]any)
		for _, r := range list {
			if name, ok := r.(string); ok {
				required[name] = true
			}
		}
		names := make([]string, 0, len(props))
		for name := range props {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			if !required[name] {
				problem = fmt.Sprintf("In context=%s, 'required' is required to be supplied and to be an array including every key in properties. Missing '%s'.", pyTuple(path), name)
				return false
			}
		}
		return true
	})
	return problem
}

// llamaCppProblem says why llama.cpp's server would refuse schema, in its
// words: the first pattern its json-schema-to-grammar cannot convert, or
// whose grammar its GBNF parser cannot read; "" when neither. A schema that
// is not JSON has no problem here (the server would fail earlier, on the
// body).
func llamaCppProblem(raw json.RawMessage) string {
	var root any
	if json.Unmarshal(raw, &root) != nil {
		return ""
	}
	problem := ""
	walkSchemas(root, nil, func(s map[string]any, _ []any) bool {
		p, ok := s["pattern"].(string)
		switch {
		case !ok:
			return true
		case !strings.HasPrefix(p, "^") || !strings.HasSuffix(p, "$"):
			problem = "JSON schema conversion failed:\nPattern must start with '^' and end with '$'"
		case unknownGBNFEscape(p):
			problem = "Failed to parse grammar"
		}
		return problem == ""
	})
	return problem
}

// unknownGBNFEscape reports whether pattern has a backslash before a letter
// that llama.cpp's GBNF parser does not take as an escape (it knows x, u,
// U, t, r and n).
func unknownGBNFEscape(pattern string) bool {
	for i := 0; i < len(pattern)-1; i++ {
		if pattern[i] != '\\' {
			continue
		}
		e := pattern[i+1]
		if ('a' <= e && e <= 'z' || 'A' <= e && e <= 'Z') && !strings.ContainsRune("xuUtrn", rune(e)) {
			return true
		}
		i++
	}
	return false
}

// walkSchemas calls visit on schema and on each of its subschemas (under
// properties, $defs, definitions, items, prefixItems, anyOf, oneOf, allOf,
// additionalProperties, not), depth first in a stable order, with the path
// of keys and indexes that leads to it, until visit returns false. It
// reports whether the walk went to its end.
func walkSchemas(schema any, path []any, visit func(s map[string]any, path []any) bool) bool {
	s, ok := schema.(map[string]any)
	if !ok {
		return true
	}
	if !visit(s, path) {
		return false
	}
	sub := func(v any, p ...any) bool {
		return walkSchemas(v, append(slices.Clone(path), p...), visit)
	}
	for _, k := range []string{"properties", "$defs", "definitions"} {
		m, _ := s[k].(map[string]any)
		names := make([]string, 0, len(m))
		for name := range m {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			if !sub(m[name], k, name) {
				return false
			}
		}
	}
	for _, k := range []string{"items", "additionalProperties", "not"} {
		if list, ok := s[k].([]any); ok {
			for i, v := range list {
				if !sub(v, k, i) {
					return false
				}
			}
		} else if !sub(s[k], k) {
			return false
		}
	}
	for _, k := range []string{"prefixItems", "anyOf", "oneOf", "allOf"} {
		list, _ := s[k].([]any)
		for i, v := range list {
			if !sub(v, k, i) {
				return false
			}
		}
	}
	return true
}

// pyTuple writes path as OpenAI's errors show a context: a Python tuple.
func pyTuple(path []any) string {
	parts := make([]string, len(path))
	for i, p := range path {
		switch p := p.(type) {
		case string:
			parts[i] = "'" + p + "'"
		case int:
			parts[i] = strconv.Itoa(p)
		}
	}
	if len(parts) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}
