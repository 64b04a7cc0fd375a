package openai

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// chunk is what the adapter reads of one chunk of a streamed chat
// completion: go-openai's ChatCompletionStreamResponse without the fields
// it has no use for.
type chunk struct {
	ID      string        `json:"id"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	Usage   *chunkUsage   `json:"usage"`
}

type chunkChoice struct {
	Index        int        `json:"index"`
	Delta        chunkDelta `json:"delta"`
	FinishReason string     `json:"finish_reason"`
}

type chunkDelta struct {
	Content   string          `json:"content"`
	Refusal   string          `json:"refusal"`
	ToolCalls []chunkToolCall `json:"tool_calls"`
}

type chunkToolCall struct {
	Index    *int          `json:"index"`
	ID       string        `json:"id"`
	Function chunkFunction `json:"function"`
}

type chunkFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type chunkUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
}

// decodeChunk decodes the JSON of a chunk into c as encoding/json does,
// errors included (*json.SyntaxError, *json.UnmarshalTypeError). A chunk of
// the usual shape is read by a scanner of its own, several times faster than
// encoding/json (this runs for every token a model streams); anything it is
// not sure of goes to encoding/json.
func decodeChunk(data []byte, c *chunk) error {
	if fastChunk(data, c) {
		return nil
	}
	*c = chunk{}
	return json.Unmarshal(data, c)
}

// fastChunk decodes data into c and reports true when data is valid JSON and
// c holds exactly what json.Unmarshal would give; it reports false (c then
// holds anything) for whatever it does not handle: invalid JSON, a field of
// the wrong type, a key spelt in another case or with escapes, a repeated
// key, a number that is not a plain integer, a surrogate escape, invalid
// UTF-8, deep nesting.
func fastChunk(data []byte, c *chunk) bool {
	*c = chunk{}
	s := scanner{b: data}
	s.ws()
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "id":
			return s.nullOr(func() bool { return s.str(&c.ID) })
		case "model":
			return s.nullOr(func() bool { return s.str(&c.Model) })
		case "choices":
			return s.nullOr(func() bool {
				c.Choices = []chunkChoice{}
				return s.array(func() bool {
					c.Choices = append(c.Choices, chunkChoice{})
					return s.choice(&c.Choices[len(c.Choices)-1])
				})
			})
		case "usage":
			return s.nullOr(func() bool {
				c.Usage = &chunkUsage{}
				return s.object(func(key []byte) bool {
					switch string(key) {
					case "prompt_tokens":
						return s.nullOr(func() bool { return s.int(&c.Usage.PromptTokens) })
					case "completion_tokens":
						return s.nullOr(func() bool { return s.int(&c.Usage.CompletionTokens) })
					}
					return s.other(key, "prompt_tokens", "completion_tokens")
				})
			})
		}
		return s.other(key, "id", "model", "choices", "usage")
	})
	s.ws()
	return ok && s.i == len(s.b)
}

func (s *scanner) choice(ch *chunkChoice) bool {
	if s.peek() != '{' { // null would be a zero choice: rare enough for encoding/json
		return false
	}
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "index":
			return s.nullOr(func() bool { return s.int(&ch.Index) })
		case "finish_reason":
			return s.nullOr(func() bool { return s.str(&ch.FinishReason) })
		case "delta":
			d := &ch.Delta
			return s.nullOr(func() bool {
				return s.object(func(key []byte) bool {
					switch string(key) {
					case "content":
						return s.nullOr(func() bool { return s.str(&d.Content) })
					case "refusal":
						return s.nullOr(func() bool { return s.str(&d.Refusal) })
					case "tool_calls":
						return s.nullOr(func() bool {
							d.ToolCalls = []chunkToolCall{}
							return s.array(func() bool {
								d.ToolCalls = append(d.ToolCalls, chunkToolCall{})
								return s.toolCall(&d.ToolCalls[len(d.ToolCalls)-1])
							})
						})
					}
					return s.other(key, "content", "refusal", "tool_calls")
				})
			})
		}
		return s.other(key, "index", "finish_reason", "delta")
	})
}

func (s *scanner) toolCall(tc *chunkToolCall) bool {
	if s.peek() != '{' {
		return false
	}
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "index":
			return s.nullOr(func() bool {
				var n int
				if !s.int(&n) {
					return false
				}
				tc.Index = &n
				return true
			})
		case "id":
			return s.nullOr(func() bool { return s.str(&tc.ID) })
		case "function":
			f := &tc.Function
			return s.nullOr(func() bool {
				return s.object(func(key []byte) bool {
					switch string(key) {
					case "name":
						return s.nullOr(func() bool { return s.str(&f.Name) })
					case "arguments":
						return s.nullOr(func() bool { return s.str(&f.Arguments) })
					}
					return s.other(key, "name", "arguments")
				})
			})
		}
		return s.other(key, "index", "id", "function")
	})
}

// scanner reads JSON from b at i, strictly: every method reports false on
// anything invalid or unexpected.
type scanner struct {
	b     []byte
	i     int
	depth int
}

// maxDepth bounds nesting; deeper documents are left to encoding/json.
const maxDepth = 64

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// nullOr reads null, or the value read by value.
func (s *scanner) nullOr(value func() bool) bool {
	if bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return true
	}
	return value()
}

// other skips the value of key, a key other than names; it reports false
// when encoding/json would take key for one of names (its match ignores
// case) or the key holds an escape or a byte outside ASCII, whose folding
// is left to encoding/json.
func (s *scanner) other(key []byte, names ...string) bool {
	for _, c := range key {
		if c == '\\' || c >= utf8.RuneSelf {
			return false
		}
	}
	for _, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return false
		}
	}
	return s.skip()
}

// object reads an object, calling field for each key with the scanner at
// its value, which field must read. A key seen twice is refused: encoding/json
// merges repeated objects, which field does not.
func (s *scanner) object(field func(key []byte) bool) bool {
	if s.peek() != '{' || s.depth >= maxDepth {
		return false
	}
	s.depth++
	s.i++
	s.ws()
	if s.peek() == '}' {
		s.i++
		s.depth--
		return true
	}
	var seen [16][]byte
	n := 0
	for {
		key, ok := s.rawString()
		if !ok {
			return false
		}
		for _, k := range seen[:min(n, len(seen))] {
			if bytes.Equal(k, key) {
				return false
			}
		}
		if n >= len(seen) {
			return false // more keys than a chunk has: leave it to encoding/json
		}
		seen[n] = key
		n++
		s.ws()
		if s.peek() != ':' {
			return false
		}
		s.i++
		s.ws()
		if !field(key) {
			return false
		}
		s.ws()
		switch s.peek() {
		case ',':
			s.i++
			s.ws()
		case '}':
			s.i++
			s.depth--
			return true
		default:
			return false
		}
	}
}

// array reads an array, calling elem with the scanner at each element.
func (s *scanner) array(elem func() bool) bool {
	if s.peek() != '[' || s.depth >= maxDepth {
		return false
	}
	s.depth++
	s.i++
	s.ws()
	if s.peek() == ']' {
		s.i++
		s.depth--
		return true
	}
	for {
		if !elem() {
			return false
		}
		s.ws()
		switch s.peek() {
		case ',':
			s.i++
			s.ws()
		case ']':
			s.i++
			s.depth--
			return true
		default:
			return false
		}
	}
}

// rawString reads a string and returns its bytes between the quotes,
// escapes undecoded, after checking them.
func (s *scanner) rawString() ([]byte, bool) {
	if s.peek() != '"' {
		return nil, false
	}
	start := s.i + 1
	for i := start; i < len(s.b); i++ {
		switch c := s.b[i]; {
		case c == '"':
			s.i = i + 1
			raw := s.b[start:i]
			return raw, utf8.Valid(raw)
		case c < 0x20:
			return nil, false
		case c == '\\':
			i++
			if i >= len(s.b) {
				return nil, false
			}
			switch s.b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if _, ok := hex4(s.b[i+1:]); !ok {
					return nil, false
				}
				i += 4
			default:
				return nil, false
			}
		}
	}
	return nil, false
}

// str reads a string into *dst, decoding its escapes; a surrogate escape is
// refused (encoding/json's handling of unpaired ones is its own).
func (s *scanner) str(dst *string) bool {
	raw, ok := s.rawString()
	if !ok {
		return false
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		*dst = string(raw)
		return true
	}
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		switch raw[i] {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, _ := hex4(raw[i+1:])
			if r >= 0xD800 && r < 0xE000 {
				return false
			}
			out = utf8.AppendRune(out, r)
			i += 4
		default: // '"', '\\', '/'
			out = append(out, raw[i])
		}
	}
	*dst = string(out)
	return true
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// int reads an integer without fraction or exponent, of at most 18 digits.
func (s *scanner) int(dst *int) bool {
	i, neg := s.i, false
	if i < len(s.b) && s.b[i] == '-' {
		neg = true
		i++
	}
	start := i
	n := 0
	for i < len(s.b) && s.b[i] >= '0' && s.b[i] <= '9' {
		n = n*10 + int(s.b[i]-'0')
		i++
	}
	digits := i - start
	if digits == 0 || digits > 18 || (digits > 1 && s.b[start] == '0') {
		return false
	}
	if i < len(s.b) && (s.b[i] == '.' || s.b[i] == 'e' || s.b[i] == 'E') {
		return false
	}
	if neg {
		n = -n
	}
	*dst, s.i = n, i
	return true
}

// skip reads any value, checking it.
func (s *scanner) skip() bool {
	switch c := s.peek(); {
	case c == '{':
		return s.object(func(key []byte) bool { return s.skip() })
	case c == '[':
		return s.array(s.skip)
	case c == '"':
		_, ok := s.rawString()
		return ok
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	}
	return false
}

func (s *scanner) literal(lit string) bool {
	if !bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		return false
	}
	s.i += len(lit)
	return true
}

// number reads a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() bool {
	i := s.i
	if i < len(s.b) && s.b[i] == '-' {
		i++
	}
	digits := func() int {
		start := i
		for i < len(s.b) && s.b[i] >= '0' && s.b[i] <= '9' {
			i++
		}
		return i - start
	}
	if i < len(s.b) && s.b[i] == '0' {
		i++
	} else if digits() == 0 {
		return false
	}
	if i < len(s.b) && s.b[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s.b) && (s.b[i] == 'e' || s.b[i] == 'E') {
		i++
		if i < len(s.b) && (s.b[i] == '+' || s.b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	s.i = i
	return true
}
