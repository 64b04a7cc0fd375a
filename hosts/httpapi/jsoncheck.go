package httpapi

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/devpilot/devpilot/ports"
)

// encoding/json matches object keys to struct fields without regard to
// case, lets the last of two equal keys win and turns a lone surrogate
// escape into U+FFFD. checkJSON walks a body that has already decoded,
// alongside the type it decoded into, and refuses what the decoder let
// through: a key that names a field in another case, a key that appears twice
// in one object, and a string that is not acceptable text (ports.TextFault,
// or a lone surrogate escape). Values decoded into json.RawMessage, any or a
// type with its own UnmarshalJSON are opaque: their keys and strings are the
// caller's data for someone else (a function's payload, a tool's arguments).

// maxTextFaults bounds the fields one problem names.
const maxTextFaults = 20

// checkJSON returns an invalid Error naming each offending field, or nil.
// body must be one valid JSON value.
func checkJSON(body []byte, t reflect.Type) error {
	c := jsonChecker{data: body}
	c.value(t, "")
	if len(c.faults) == 0 {
		return nil
	}
	msg := fmt.Sprintf("field %q %s", c.faults[0].Field, c.faults[0].Reason)
	if c.faults[0].Field == "" {
		msg = "the request body " + c.faults[0].Reason
	}
	if len(c.faults) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(c.faults)-1)
	}
	return ports.Invalid(msg, c.faults...)
}

type jsonChecker struct {
	data   []byte
	pos    int
	faults []ports.FieldError
}

func (c *jsonChecker) fault(path, reason string) {
	if len(c.faults) < maxTextFaults {
		c.faults = append(c.faults, ports.FieldError{Field: path, Reason: reason})
	}
}

func (c *jsonChecker) space() {
	for c.pos < len(c.data) {
		switch c.data[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// opaque reports whether values of t are checked by their own decoder or
// are data the request carries for someone else.
func opaque(t reflect.Type) bool {
	if t == nil || t.Kind() == reflect.Interface {
		return true
	}
	pt := reflect.PointerTo(t)
	return t.Implements(unmarshalerType) || pt.Implements(unmarshalerType) ||
		t.Implements(textUnmarshalerType) || pt.Implements(textUnmarshalerType)
}

// value checks the value at pos, which decodes into t (nil: unchecked).
func (c *jsonChecker) value(t reflect.Type, path string) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && opaque(t) {
		t = nil
	}
	c.space()
	if c.pos >= len(c.data) {
		return
	}
	switch c.data[c.pos] {
	case '{':
		c.object(t, path)
	case '[':
		c.array(t, path)
	case '"':
		s, lone := c.str()
		if t == nil || t.Kind() != reflect.String {
			return // a []byte's base64, or unchecked
		}
		if lone {
			c.fault(path, "must not contain a lone UTF-16 surrogate escape such as \\ud800")
		} else if reason := ports.TextFault(s); reason != "" {
			c.fault(path, reason)
		}
	default: // number, true, false, null
		for c.pos < len(c.data) && !strings.ContainsRune(",]} \t\n\r", rune(c.data[c.pos])) {
			c.pos++
		}
	}
}

func (c *jsonChecker) object(t reflect.Type, path string) {
	var fields map[string]reflect.Type
	if t != nil {
		switch t.Kind() {
		case reflect.Struct:
			fields = jsonFields(t)
		case reflect.Map:
		default:
			t = nil
		}
	}
	seen := make(map[string]bool)
	c.pos++ // {
	for {
		c.space()
		if c.data[c.pos] == '}' {
			c.pos++
			return
		}
		key, lone := c.str()
		c.space()
		c.pos++ // :
		keyPath := joinPath(path, key)
		var elem reflect.Type
		switch {
		case seen[key]:
			c.fault(keyPath, "appears twice in one object")
		case t == nil:
		case fields != nil:
			ft, ok := fields[key]
			if !ok {
				c.fault(keyPath, "unknown field (names are case-sensitive)")
			}
			elem = ft
		default: // a map
			if lone {
				c.fault(keyPath, "key must not contain a lone UTF-16 surrogate escape such as \\ud800")
			} else if reason := ports.TextFault(key); reason != "" {
				c.fault(path, "key "+strconv.Quote(key)+" "+reason)
			}
			elem = t.Elem()
		}
		seen[key] = true
		c.value(elem, keyPath)
		c.space()
		if c.data[c.pos] == ',' {
			c.pos++
		}
	}
}

func (c *jsonChecker) array(t reflect.Type, path string) {
	var elem reflect.Type
	if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
		elem = t.Elem()
	}
	c.pos++ // [
	for i := 0; ; i++ {
		c.space()
		if c.data[c.pos] == ']' {
			c.pos++
			return
		}
		c.value(elem, path+"["+strconv.Itoa(i)+"]")
		c.space()
		if c.data[c.pos] == ',' {
			c.pos++
		}
	}
}

// str decodes the string literal at pos and reports whether it held a
// surrogate escape that is not half of a pair.
func (c *jsonChecker) str() (s string, lone bool) {
	c.pos++ // opening quote
	start := c.pos
	for c.pos < len(c.data) && c.data[c.pos] != '"' && c.data[c.pos] != '\\' {
		c.pos++
	}
	if c.pos < len(c.data) && c.data[c.pos] == '"' {
		c.pos++
		return string(c.data[start : c.pos-1]), false
	}
	var b strings.Builder
	b.Write(c.data[start:c.pos])
	for c.pos < len(c.data) {
		ch := c.data[c.pos]
		switch {
		case ch == '"':
			c.pos++
			return b.String(), lone
		case ch != '\\':
			b.WriteByte(ch)
			c.pos++
			continue
		}
		c.pos++ // backslash
		esc := c.data[c.pos]
		c.pos++
		switch esc {
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r := c.hex4()
			if utf16.IsSurrogate(r) {
				if r < 0xDC00 && c.pos+6 <= len(c.data) && c.data[c.pos] == '\\' && c.data[c.pos+1] == 'u' {
					save := c.pos
					c.pos += 2
					if r2 := c.hex4(); r2 >= 0xDC00 && r2 <= 0xDFFF {
						b.WriteRune(utf16.DecodeRune(r, r2))
						continue
					}
					c.pos = save
				}
				lone = true
				b.WriteRune(utf8.RuneError)
				continue
			}
			b.WriteRune(r)
		default: // " \ /
			b.WriteByte(esc)
		}
	}
	return b.String(), lone
}

func (c *jsonChecker) hex4() rune {
	n, _ := strconv.ParseUint(string(c.data[c.pos:c.pos+4]), 16, 32)
	c.pos += 4
	return rune(n)
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

var fieldCache sync.Map // reflect.Type → map[string]reflect.Type

// jsonFields returns the JSON names of t's fields, as encoding/json sees
// them (exported, not "-", embedded structs' fields promoted), with the type
// each decodes into.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]reflect.Type)
	}
	m := make(map[string]reflect.Type)
	addFields(m, t, 0)
	fieldCache.Store(t, m)
	return m
}

func addFields(m map[string]reflect.Type, t reflect.Type, depth int) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && depth < 8 {
				addFields(m, ft, depth+1)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := m[name]; !dup || depth == 0 {
			m[name] = f.Type
		}
	}
}
