package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/devpilot/devpilot/ports"
)

// decodeJSON reads the request body, which must be one JSON value of
// Content-Type application/json within the route's body limit, into dst.
// Every error is a *ports.Error: unsupported_media_type (415),
// payload_too_large (413), malformed (400: empty, not UTF-8, not JSON,
// trailing data) or invalid (422: unknown field or one in another case, a
// key twice in an object, wrong type, null where an object is due, a string
// that is not acceptable text; see checkJSON).
func decodeJSON(w http.ResponseWriter, r *http.Request, dst any) error {
	if err := requireJSON(r.Header.Get("Content-Type")); err != nil {
		return err
	}
	if r.Body == nil {
		return unmarshalJSON(nil, dst)
	}
	limit, ok := r.Context().Value(bodyLimitKey{}).(int64)
	if !ok {
		limit = DefaultBodyLimit
	}
	body, err := io.ReadAll(http.MaxBytesReader(rootWriter(w), r.Body, limit))
	if err != nil {
		if tooBig, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return tooLarge(tooBig.Limit)
		}
		return ports.Wrap(ports.KindMalformed, err, "the request body could not be read")
	}
	return unmarshalJSON(body, dst)
}

func requireJSON(contentType string) error {
	mt, _, err := mime.ParseMediaType(contentType)
	if (err == nil || errors.Is(err, mime.ErrInvalidMediaParameter)) && mt == "application/json" {
		return nil
	}
	if contentType == "" {
		contentType = "none"
	}
	return &ports.Error{
		Kind:    ports.KindUnsupportedMedia,
		Message: fmt.Sprintf("the request body must be application/json, not %.100q", contentType),
	}
}

func tooLarge(limit int64) *ports.Error {
	return &ports.Error{Kind: ports.KindPayloadTooLarge, Message: fmt.Sprintf("the request body is larger than %d bytes", limit)}
}

func malformed(format string, args ...any) *ports.Error {
	return &ports.Error{Kind: ports.KindMalformed, Message: fmt.Sprintf(format, args...)}
}

func unmarshalJSON(body []byte, dst any) error {
	start := skipSpace(body, 0)
	if start == len(body) {
		return malformed("the request body is empty")
	}
	if !utf8.Valid(body) {
		return malformed("the request body is not valid UTF-8 (first bad byte at offset %d)", invalidUTF8At(body))
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeError(err, len(body))
	}
	if end := skipSpace(body, int(dec.InputOffset())); end != len(body) {
		return malformed("unexpected data after the JSON value at offset %d", end)
	}
	if body[start] == 'n' && wantsObject(dst) {
		return ports.Invalid("the request body must be a JSON object, not null")
	}
	return checkJSON(body, reflect.TypeOf(dst))
}

// invalidUTF8At returns the offset of b's first byte that is not part of a
// valid UTF-8 sequence.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return len(b)
}

// skipSpace returns the offset of the first non-whitespace byte at or after i.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

func decodeError(err error, size int) error {
	if e, ok := errors.AsType[*json.SyntaxError](err); ok {
		return malformed("malformed JSON at offset %d: %s", e.Offset, strings.TrimPrefix(e.Error(), "json: "))
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return malformed("malformed JSON at offset %d: unexpected end of input", size)
	}
	if e, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		want := "must be " + jsonTypeName(e.Type)
		if e.Field == "" {
			return ports.Invalid("the request body " + want)
		}
		return ports.Invalid(fmt.Sprintf("field %q %s", e.Field, want), ports.FieldError{Field: e.Field, Reason: want})
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if unq, uerr := strconv.Unquote(name); uerr == nil {
			name = unq
		}
		return ports.Invalid(fmt.Sprintf("unknown field %q", name), ports.FieldError{Field: name, Reason: "unknown field"})
	}
	if _, ok := errors.AsType[*json.InvalidUnmarshalError](err); ok {
		return ports.Wrap(ports.KindInternal, err, "decoding into a non-pointer") // a handler bug
	}
	if pe, ok := ports.AsError(err); ok && (pe.Kind == ports.KindMalformed || pe.Kind == ports.KindInvalid) {
		return pe // from a field type's own UnmarshalJSON
	}
	// A field type's UnmarshalJSON refused the value, such as a bad time.
	return &ports.Error{Kind: ports.KindInvalid, Message: "invalid value: " + strings.TrimPrefix(err.Error(), "json: "), Err: err}
}

// jsonTypeName names the JSON type that decodes into t.
func jsonTypeName(t reflect.Type) string {
	if t == nil {
		return "valid"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Struct, reflect.Map:
		return "object"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return "base64 string"
		}
		return "array"
	case reflect.Array:
		return "array"
	default:
		return "valid"
	}
}

// wantsObject reports whether dst points to a struct or a map, which a
// top-level null would leave untouched.
func wantsObject(dst any) bool {
	t := reflect.TypeOf(dst)
	if t == nil || t.Kind() != reflect.Pointer {
		return false
	}
	k := t.Elem().Kind()
	return k == reflect.Struct || k == reflect.Map
}

// writeJSON writes v as JSON with the status. It returns an internal Error,
// having written nothing, when v cannot be encoded; write errors are the
// client's problem and are ignored.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	body, err := marshalJSON(v)
	if err != nil {
		return ports.Wrap(ports.KindInternal, err, "encoding the response")
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
	return nil
}

func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
