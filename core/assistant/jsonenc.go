package assistant

import "unicode/utf8"

// appendContentData appends the JSON of d, byte for byte what json.Marshal
// gives, without reflection: a content event is encoded for every token a
// model streams.
func appendContentData(b []byte, d ContentData) []byte {
	b = append(b, `{"session_id":`...)
	b = appendJSONString(b, d.SessionID)
	b = append(b, `,"message_id":`...)
	b = appendJSONString(b, d.MessageID)
	b = append(b, `,"delta":`...)
	b = appendJSONString(b, d.Delta)
	return append(b, '}')
}

// appendJSONString appends s as a JSON string escaped as encoding/json
// escapes it: <, > and & as \u003c, \u003e and \u0026, control characters,
// U+2028 and U+2029 escaped, invalid UTF-8 as \ufffd.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
