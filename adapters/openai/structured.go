package openai

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/devpilot/devpilot/ports"
)

// StructuredOutput is what a model's provider accepts when a ChatRequest asks
// for structured output (ports.JSONSchemaFormat). The full schema never
// leaves the core, which validates every answer against it and asks for a
// repair when the answer misses; this setting only decides what is sent.
type StructuredOutput string

// The structured output capabilities Config accepts.
const (
	// StructuredStrict sends response_format json_schema with the schema as
	// it is and the request's strict flag: OpenAI's Structured Outputs
	// (and Azure OpenAI's), which enforce the schema while decoding.
	StructuredStrict StructuredOutput = "strict"
	// StructuredLenient sends response_format json_schema without strict,
	// with the keywords of LenientStrippedKeywords taken out of the schema
	// on the wire: for OpenAI-compatible servers that compile the schema
	// into a grammar (llama.cpp, Ollama, vLLM, LM Studio), which refuse or
	// misread those keywords.
	StructuredLenient StructuredOutput = "lenient"
	// StructuredJSONObject sends response_format json_object and puts the
	// schema, as compact JSON, into the system message with a one-line
	// instruction: for providers that enforce JSON but no schema (DeepSeek,
	// older servers).
	StructuredJSONObject StructuredOutput = "json_object"
)

// StructuredOutputs lists the capabilities, the default first.
var StructuredOutputs = []StructuredOutput{StructuredStrict, StructuredLenient, StructuredJSONObject}

// Valid reports whether s is one of StructuredOutputs.
func (s StructuredOutput) Valid() bool {
	for _, v := range StructuredOutputs {
		if s == v {
			return true
		}
	}
	return false
}

// LenientStrippedKeywords are the JSON Schema keywords StructuredLenient
// removes from every schema object of the wire schema, wherever they occur
// (a property that happens to bear such a name is kept):
//
//   - format, minLength, maxLength: llama.cpp's json-schema-to-grammar knows
//     four formats and expands a length bound into one grammar repetition
//     per character; vLLM's xgrammar backend refuses other formats and
//     drops lengths beside a pattern or format.
//   - multipleOf, uniqueItems, contains, minContains, maxContains,
//     patternProperties, propertyNames, minProperties, maxProperties,
//     dependentRequired, dependentSchemas, unevaluatedProperties,
//     unevaluatedItems, not, if, then, else: no grammar converter enforces
//     them (llama.cpp ignores or rejects them; vLLM lists them as
//     unsupported by xgrammar) and OpenAI's strict mode does not permit
//     them.
//
// A pattern is removed unless llama.cpp can compile it (see grammarPattern).
// Every removal only widens what the wire schema allows: the core still
// validates the answer against the whole schema.
var LenientStrippedKeywords = []string{
	"format", "minLength", "maxLength",
	"multipleOf", "uniqueItems", "contains", "minContains", "maxContains",
	"patternProperties", "propertyNames", "minProperties", "maxProperties",
	"dependentRequired", "dependentSchemas", "unevaluatedProperties", "unevaluatedItems",
	"not", "if", "then", "else",
}

var lenientStripped = func() map[string]bool {
	m := make(map[string]bool, len(LenientStrippedKeywords))
	for _, k := range LenientStrippedKeywords {
		m[k] = true
	}
	return m
}()

// grammarPattern reports whether a pattern survives on the wire in lenient
// mode. llama.cpp's json-schema-to-grammar refuses a pattern that does not
// start with ^ and end with $ ("Pattern must start with '^' and end with
// '$'"), and grammar engines match a pattern against the whole string where
// JSON Schema searches in it, so an unanchored "\\S" ("some non-blank
// character") would mean "exactly one character" there. Anchoring is not
// enough either: the converter copies a pattern's escapes into the GBNF
// grammar, whose parser knows only \x, \u, \U, \t, \r and \n among the
// letter escapes ("unknown escape" for \s, \S, \d, \w and the others, so
// "^[\\s\\S]*\\S[\\s\\S]*$" fails too), and it drops lookarounds. So only
// an anchored pattern free of those is kept.
func grammarPattern(p string) bool {
	if len(p) < 2 || p[0] != '^' || p[len(p)-1] != '$' {
		return false
	}
	if strings.Contains(p, "(?=") || strings.Contains(p, "(?!") || strings.Contains(p, "(?<") {
		return false
	}
	for i := 0; i < len(p)-1; i++ {
		if p[i] != '\\' {
			continue
		}
		if e := p[i+1]; ('a' <= e && e <= 'z' || 'A' <= e && e <= 'Z') && !strings.ContainsRune(gbnfLetterEscapes, rune(e)) {
			return false
		}
		i++ // skip the escaped character
	}
	return true
}

// gbnfLetterEscapes are the letters llama.cpp's GBNF parser accepts after a
// backslash (parse_char in llama-grammar.cpp).
const gbnfLetterEscapes = "xuUtrn"

// LenientSchema returns schema as StructuredLenient sends it: the keywords
// of LenientStrippedKeywords and the patterns grammar engines cannot compile
// removed from every subschema, the order of everything else kept (grammar
// engines generate properties in the order they are declared). It returns
// an invalid Error (Code invalid_request) when schema is not JSON.
func LenientSchema(schema json.RawMessage) (json.RawMessage, error) {
	var out bytes.Buffer
	if err := lenientSchema(&out, schema); err != nil {
		return nil, invalidRequest("the response format schema cannot be read: " + err.Error())
	}
	return out.Bytes(), nil
}

// Keywords whose value is a schema, a map of names to schemas, or an array
// of schemas; among them only those LenientStrippedKeywords keeps.
var (
	schemaValued = map[string]bool{"items": true, "additionalProperties": true, "additionalItems": true}
	schemaMaps   = map[string]bool{"properties": true, "$defs": true, "definitions": true}
	schemaArrays = map[string]bool{"anyOf": true, "oneOf": true, "allOf": true, "prefixItems": true}
)

// lenientSchema writes the lenient form of one schema (an object, or a
// boolean schema, which is kept).
func lenientSchema(out *bytes.Buffer, raw json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		if !json.Valid(raw) {
			return fmt.Errorf("%.40q is not JSON", raw)
		}
		return json.Compact(out, raw)
	}
	return eachMember(raw, out, func(key string, val json.RawMessage) (bool, error) {
		switch {
		case lenientStripped[key]:
			return false, nil
		case key == "pattern":
			var p string
			if json.Unmarshal(val, &p) == nil && grammarPattern(p) {
				return true, json.Compact(out, val)
			}
			return false, nil
		case schemaValued[key]:
			if bytes.HasPrefix(bytes.TrimSpace(val), []byte("[")) {
				return true, eachElement(val, out, lenientSchema)
			}
			return true, lenientSchema(out, val)
		case schemaMaps[key]:
			return true, eachMember(val, out, func(_ string, sub json.RawMessage) (bool, error) {
				return true, lenientSchema(out, sub)
			})
		case schemaArrays[key]:
			return true, eachElement(val, out, lenientSchema)
		}
		return true, json.Compact(out, val)
	})
}

// eachMember writes the JSON object raw to out member by member, in order:
// for each member, f decides whether it is kept and, when it is, writes its
// value (out already holds the key and colon). A member f drops is taken out
// again.
func eachMember(raw json.RawMessage, out *bytes.Buffer, f func(key string, val json.RawMessage) (bool, error)) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fmt.Errorf("%.40q is not a JSON object", raw)
	}
	out.WriteByte('{')
	first := true
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := t.(string)
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return err
		}
		mark := out.Len()
		if !first {
			out.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		out.Write(k)
		out.WriteByte(':')
		keep, err := f(key, val)
		if err != nil {
			return err
		}
		if !keep {
			out.Truncate(mark)
			continue
		}
		first = false
	}
	if _, err := dec.Token(); err != nil {
		return err
	}
	out.WriteByte('}')
	return nil
}

// eachElement writes the JSON array raw to out, each element through f.
func eachElement(raw json.RawMessage, out *bytes.Buffer, f func(*bytes.Buffer, json.RawMessage) error) error {
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return err
	}
	out.WriteByte('[')
	for i, e := range elems {
		if i > 0 {
			out.WriteByte(',')
		}
		if err := f(out, e); err != nil {
			return err
		}
	}
	out.WriteByte(']')
	return nil
}

// jsonObjectInstruction introduces the schema in the system message of a
// StructuredJSONObject request. It names JSON, as OpenAI and DeepSeek
// require of a json_object request.
const jsonObjectInstruction = "Answer with one JSON object, and nothing else, that matches this JSON Schema (%s):\n"

// responseFormat fills in out's response format for f under mode, adding
// the schema to the messages for StructuredJSONObject.
func responseFormat(out *goopenai.ChatCompletionRequest, f *ports.JSONSchemaFormat, mode StructuredOutput) error {
	if len(f.Schema) == 0 || !json.Valid(f.Schema) {
		return invalidRequest("the response format schema is not valid JSON")
	}
	name := f.Name
	if name == "" {
		name = "response"
	}
	switch mode {
	case StructuredLenient:
		schema, err := LenientSchema(f.Schema)
		if err != nil {
			return err
		}
		out.ResponseFormat = &goopenai.ChatCompletionResponseFormat{
			Type:       goopenai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &goopenai.ChatCompletionResponseFormatJSONSchema{Name: name, Schema: schema},
		}
	case StructuredJSONObject:
		var compact bytes.Buffer
		if err := json.Compact(&compact, f.Schema); err != nil {
			return invalidRequest("the response format schema is not valid JSON")
		}
		text := fmt.Sprintf(jsonObjectInstruction, name) + compact.String()
		if len(out.Messages) > 0 && out.Messages[0].Role == goopenai.ChatMessageRoleSystem {
			out.Messages[0].Content += "\n\n" + text
		} else {
			out.Messages = append([]goopenai.ChatCompletionMessage{{Role: goopenai.ChatMessageRoleSystem, Content: text}}, out.Messages...)
		}
		out.ResponseFormat = &goopenai.ChatCompletionResponseFormat{Type: goopenai.ChatCompletionResponseFormatTypeJSONObject}
	default:
		out.ResponseFormat = &goopenai.ChatCompletionResponseFormat{
			Type:       goopenai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &goopenai.ChatCompletionResponseFormatJSONSchema{Name: name, Schema: f.Schema, Strict: f.Strict},
		}
	}
	return nil
}

// structuredOutput is the capability of model: its own, or the default.
func (c *Client) structuredOutput(model string) StructuredOutput {
	if m, ok := c.structuredByModel[model]; ok {
		return m
	}
	return c.structured
}
