package ports

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text is UTF-8 on both databases alike. A caller's text that holds invalid
// UTF-8, NUL or another C0 control character (tab, line feed and carriage
// return excepted), a byte-order mark, or a bidirectional override or
// isolate is refused, naming its field (TextFault). Text devpilot did not
// get from its caller (model output, provider and webhook data) is never
// refused for that: CleanText drops those characters before it is stored.

// TextFault returns why s is not acceptable text from a caller, as a reason
// for a FieldError, or "" when it is acceptable.
func TextFault(s string) string {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
				if c == 0 {
					return "must not contain NUL (U+0000)"
				}
				return "must not contain control characters other than tab, line feed and carriage return"
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			return "must be valid UTF-8"
		case r == '\uFEFF':
			return "must not contain a byte-order mark (U+FEFF)"
		case isBidiControl(r):
			return "must not contain bidirectional override or isolate characters (U+202A-U+202E, U+2066-U+2069)"
		}
		i += size
	}
	return ""
}

// CleanText returns s as text fit to store: invalid UTF-8 becomes U+FFFD;
// NUL, the other C0 control characters but tab, line feed and carriage
// return, byte-order marks and bidirectional overrides and isolates are
// dropped. It returns s itself when there is nothing to clean.
func CleanText(s string) string {
	if TextFault(s) == "" {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 || c == '\t' || c == '\n' || c == '\r' {
				b.WriteByte(c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r != '\uFEFF' && !isBidiControl(r) {
			b.WriteRune(r) // RuneError for an invalid byte
		}
		i += size
	}
	return b.String()
}

// isBidiControl reports whether r overrides or isolates the direction of the
// text around it (the embedding, override and isolate controls), which can
// make text display other than it reads.
func isBidiControl(r rune) bool {
	return (r >= '\u202A' && r <= '\u202E') || (r >= '\u2066' && r <= '\u2069')
}

// CleanJSON returns raw, a JSON value from a model or a provider, with
// CleanText applied to every string and object key in it, escapes
// included (encoding/json turns a lone surrogate escape into U+FFFD). It
// returns raw itself when nothing needs cleaning or raw is not valid JSON,
// which is for its reader to refuse.
func CleanJSON(raw []byte) []byte {
	if !needsJSONClean(raw) {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return raw
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(cleanValue(v)); err != nil {
		return raw
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// needsJSONClean reports whether raw holds a character CleanText drops,
// raw or as a \u escape: a C0 control, a surrogate, U+FEFF or a
// bidirectional control.
func needsJSONClean(raw []byte) bool {
	if TextFault(string(raw)) != "" {
		return true
	}
	for i := bytes.Index(raw, []byte(`\u`)); i >= 0; {
		// An escaped backslash followed by "u" is text, not an escape.
		backslashes := 0
		for j := i - 1; j >= 0 && raw[j] == '\\'; j-- {
			backslashes++
		}
		if backslashes%2 == 0 && i+6 <= len(raw) {
			if r, err := strconv.ParseUint(string(raw[i+2:i+6]), 16, 32); err == nil {
				r := rune(r)
				if (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || (r >= 0xD800 && r <= 0xDFFF) || r == 0xFEFF || isBidiControl(r) {
					return true
				}
			}
		}
		next := bytes.Index(raw[i+2:], []byte(`\u`))
		if next < 0 {
			break
		}
		i += 2 + next
	}
	return false
}

func cleanValue(v any) any {
	switch x := v.(type) {
	case string:
		return CleanText(x)
	case []any:
		for i := range x {
			x[i] = cleanValue(x[i])
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[CleanText(k)] = cleanValue(e)
		}
		return out
	}
	return v
}

// OneLine returns s with each run of white space (line breaks included)
// made one space and none at either end: a title or a name fit for one line
// of a prompt, a log or a message.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Line returns s as one line of at most n bytes (Clip): each run of white
// space and control characters made one space, none at either end. It
// suits text from outside (a title, a provider's message) quoted in a
// message or a prompt.
func Line(s string, n int) string {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	return Clip(s, n)
}

// ClipBytes returns the longest prefix of s of at most max bytes that ends
// at a rune boundary, and whether it is shorter than s.
func ClipBytes(s string, max int) (string, bool) {
	if len(s) <= max {
		return s, false
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut], true
}

// Clip returns s, or when it is longer than n bytes, its ClipBytes prefix
// marked with "…" (so at most n+3 bytes).
func Clip(s string, n int) string {
	if c, cut := ClipBytes(s, n); cut {
		return c + "…"
	}
	return s
}
