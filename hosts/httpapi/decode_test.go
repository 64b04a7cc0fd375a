package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// decodeTarget has a field of every JSON type, and a few that refuse values
// in their own way (time, small integers, unsigned).
type decodeTarget struct {
	Message string  `json:"message"`
	Count   int     `json:"count"`
	Small   int8    `json:"small"`
	Size    uint    `json:"size"`
	Ratio   float64 `json:"ratio"`
	OK      bool    `json:"ok"`
	Context *struct {
		Page string `json:"current_page"`
	} `json:"context"`
	Prefs []struct {
		Instruction string `json:"instruction"`
	} `json:"preferences"`
	Labels map[string]int  `json:"labels"`
	At     time.Time       `json:"at"`
	Raw    json.RawMessage `json:"raw"`
	Any    any             `json:"any"`
}

const testBodyLimit = 256

func decodeRequest(contentType string, body []byte) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	return r.WithContext(context.WithValue(r.Context(), bodyLimitKey{}, int64(testBodyLimit)))
}

func TestDecodeJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, ct, body string
		kind           ports.Kind // "" for success
		fields         []ports.FieldError
		detail         string // a substring of the message
	}{
		{name: "valid", ct: "application/json", body: `{"message":"hi","context":{"current_page":"/x"}}`},
		{name: "charset", ct: "application/json; charset=utf-8", body: `{}`},
		{name: "upper-case type", ct: "Application/JSON", body: `{}`},
		{name: "sloppy parameter", ct: "application/json; charset", body: `{}`},
		{name: "surrounding whitespace", ct: "application/json", body: " \n\t{}\r\n "},
		{name: "no content type", ct: "", body: `{}`, kind: ports.KindUnsupportedMedia},
		{name: "text/plain", ct: "text/plain", body: `{}`, kind: ports.KindUnsupportedMedia},
		{name: "json suffix", ct: "application/merge-patch+json", body: `{}`, kind: ports.KindUnsupportedMedia},
		{name: "form", ct: "application/x-www-form-urlencoded", body: `a=b`, kind: ports.KindUnsupportedMedia},
		{name: "garbage type", ct: ";;;", body: `{}`, kind: ports.KindUnsupportedMedia},
		{name: "empty", ct: "application/json", body: ``, kind: ports.KindMalformed, detail: "empty"},
		{name: "whitespace only", ct: "application/json", body: " \n ", kind: ports.KindMalformed, detail: "empty"},
		{name: "syntax error", ct: "application/json", body: `{"message":x}`, kind: ports.KindMalformed, detail: "offset 12"},
		{name: "truncated", ct: "application/json", body: `{"message":"hi"`, kind: ports.KindMalformed, detail: "offset 15"},
		{name: "not JSON", ct: "application/json", body: `message=hi`, kind: ports.KindMalformed, detail: "offset 1"},
		{name: "byte order mark", ct: "application/json", body: "\ufeff{}", kind: ports.KindMalformed},
		{name: "trailing value", ct: "application/json", body: `{} {}`, kind: ports.KindMalformed, detail: "after the JSON value at offset 3"},
		{name: "trailing garbage", ct: "application/json", body: `{}x`, kind: ports.KindMalformed, detail: "offset 2"},
		{name: "too large", ct: "application/json", body: `{"message":"` + strings.Repeat("a", testBodyLimit) + `"}`, kind: ports.KindPayloadTooLarge},
		{name: "unknown field", ct: "application/json", body: `{"mesage":"hi"}`, kind: ports.KindInvalid,
			fields: []ports.FieldError{{Field: "mesage", Reason: "unknown field"}}},
		{name: "unknown nested field", ct: "application/json", body: `{"context":{"page":"x"}}`, kind: ports.KindInvalid,
			fields: []ports.FieldError{{Field: "page", Reason: "unknown field"}}},
		{name: "unknown field with quotes", ct: "application/json", body: `{"a\"b":1}`, kind: ports.KindInvalid,
			fields: []ports.FieldError{{Field: `a"b`, Reason: "unknown field"}}},
		{name: "string for int", ct: "application/json", body: `{"count":"3"}`, kind: ports.KindInvalid,
			fields: []ports.FieldError{{Field: "count", Reason: "must be integer"}}},
		{name: "fraction for int", ct: "application/json", body: `{"count":1.5}`, kind: ports.KindInvalid,
			fields: []ports.FieldError{{Field: "count", Reason: "must be integer"}}},
		{name: "negative for uint", ct: "application/json", body: `{"size":-1}`, kind: ports.KindInvalid,
			fields: []ports.FieldError{{Field: "size", Reason: "must be non-negative integer"}}},
		{name: "overflow", ct: "application/json", body: `{"small":300}`, kind: ports.KindInvalid,
			fields: []ports.FieldError{{Field: "small", Reason: "must be integer"}}},
		{name: "number for string, nested", ct: "application/json", body: `{"context":{"current_page":1}}`, kind: ports.KindInvalid,
			fields: []ports.FieldError{{Field: "context.current_page", Reason: "must be string"}}},
		{name: "in an array", ct: "application/json", body: `{"preferences":[{"instruction":true}]}`, kind: ports.KindInvalid,
			fields: []ports.FieldError{{Field: "preferences.instruction", Reason: "must be string"}}},
		{name: "object for array", ct: "application/json", body: `{"preferences":{}}`, kind: ports.KindInvalid,
			fields: []ports.FieldError{{Field: "preferences", Reason: "must be array"}}},
		{name: "string for bool", ct: "application/json", body: `{"ok":"true"}`, kind: ports.KindInvalid,
			fields: []ports.FieldError{{Field: "ok", Reason: "must be boolean"}}},
		{name: "string for number", ct: "application/json", body: `{"ratio":"1"}`, kind: ports.KindInvalid,
			fields: []ports.FieldError{{Field: "ratio", Reason: "must be number"}}},
		{name: "array for object", ct: "application/json", body: `{"labels":[1]}`, kind: ports.KindInvalid,
			fields: []ports.FieldError{{Field: "labels", Reason: "must be object"}}},
		{name: "top-level array", ct: "application/json", body: `[1,2]`, kind: ports.KindInvalid, detail: "must be object"},
		{name: "top-level string", ct: "application/json", body: `"hi"`, kind: ports.KindInvalid, detail: "must be object"},
		{name: "top-level null", ct: "application/json", body: `null`, kind: ports.KindInvalid, detail: "not null"},
		{name: "bad time", ct: "application/json", body: `{"at":"yesterday"}`, kind: ports.KindInvalid, detail: "invalid value"},
		{name: "deep nesting", ct: "application/json", body: strings.Repeat("[", 100) + strings.Repeat("]", 100), kind: ports.KindInvalid},
		// Hostile text: each class is refused, naming the field.
		{name: "NUL escape", ct: "application/json", body: `{"message":"a\u0000b"}`, kind: ports.KindInvalid,
			fields: []ports.FieldError{{Field: "message", Reason: "must not contain NUL (U+0000)"}}},
		{name: "raw control character", ct: "application/json", body: "{\"message\":\"a\x01b\"}", kind: ports.KindMalformed},
		{name: "escaped control character, nested", ct: "application/json", body: `{"context":{"current_page":"\u001b[2J"}}`, kind: ports.KindInvalid,
			fields: []ports.FieldError{{Field: "context.current_page", Reason: "must not contain control characters other than tab, line feed and carriage return"}}},
		{name: "lone surrogate", ct: "application/json", body: `{"preferences":[{"instruction":"ok"},{"instruction":"x\ud800y"}]}`, kind: ports.KindInvalid,
			fields: []ports.FieldError{{Field: "preferences[1].instruction", Reason: "must not contain a lone UTF-16 surrogate escape such as \\ud800"}}},
		{name: "low surrogate first", ct: "application/json", body: `{"message":"\udc00\ud800"}`, kind: ports.KindInvalid,
			fields: []ports.FieldError{{Field: "message", Reason: "must not contain a lone UTF-16 surrogate escape such as \\ud800"}}},
		{name: "BOM in a string", ct: "application/json", body: `{"message":"\ufeffhi"}`, kind: ports.KindInvalid,
			fields: []ports.FieldError{{Field: "message", Reason: "must not contain a byte-order mark (U+FEFF)"}}},
		{name: "bidi override", ct: "application/json", body: "{\"message\":\"abc\u202edcb\"}", kind: ports.KindInvalid,
			fields: []ports.FieldError{{Field: "message", Reason: "must not contain bidirectional override or isolate characters (U+202A-U+202E, U+2066-U+2069)"}}},
		{name: "invalid UTF-8", ct: "application/json", body: "{\"message\":\"a\xffb\"}", kind: ports.KindMalformed, detail: "offset 13"},
		{name: "encoded surrogate", ct: "application/json", body: "{\"message\":\"\xed\xa0\x80\"}", kind: ports.KindMalformed, detail: "UTF-8"},
		{name: "hostile map key", ct: "application/json", body: `{"labels":{"a\u0000":1}}`, kind: ports.KindInvalid,
			fields: []ports.FieldError{{Field: "labels", Reason: `key "a\x00" must not contain NUL (U+0000)`}}},
		{name: "several faults", ct: "application/json", body: `{"message":"\u0000","context":{"current_page":"\u0007"}}`, kind: ports.KindInvalid, detail: "(and 1 more)",
			fields: []ports.FieldError{{Field: "message", Reason: "must not contain NUL (U+0000)"},
				{Field: "context.current_page", Reason: "must not contain control characters other than tab, line feed and carriage return"}}},
		{name: "tab newline emoji pair", ct: "application/json", body: `{"message":"a\tb\nc\r\ud83d\ude80 \u00e9"}`},
		{name: "hostile text in raw and any is theirs", ct: "application/json", body: `{"raw":{"k":"\u0000"},"any":["\ud800",{"\u202e":1}]}`},
		{name: "duplicate key in raw", ct: "application/json", body: `{"raw":{"k":1,"k":2}}`, kind: ports.KindInvalid,
			fields: []ports.FieldError{{Field: "raw.k", Reason: "appears twice in one object"}}},
		// Keys: exact names, each once.
		{name: "duplicate key", ct: "application/json", body: `{"ok":false,"ok":true}`, kind: ports.KindInvalid,
			fields: []ports.FieldError{{Field: "ok", Reason: "appears twice in one object"}}},
		{name: "duplicate nested key", ct: "application/json", body: `{"preferences":[{"instruction":"a","instruction":"b"}]}`, kind: ports.KindInvalid,
			fields: []ports.FieldError{{Field: "preferences[0].instruction", Reason: "appears twice in one object"}}},
		{name: "key in another case", ct: "application/json", body: `{"ok":false,"OK":true}`, kind: ports.KindInvalid,
			fields: []ports.FieldError{{Field: "OK", Reason: "unknown field (names are case-sensitive)"}}},
		{name: "nested key in another case", ct: "application/json", body: `{"context":{"Current_Page":"/"}}`, kind: ports.KindInvalid,
			fields: []ports.FieldError{{Field: "context.Current_Page", Reason: "unknown field (names are case-sensitive)"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var dst decodeTarget
			err := decodeJSON(httptest.NewRecorder(), decodeRequest(tt.ct, []byte(tt.body)), &dst)
			if tt.kind == "" {
				if err != nil {
					t.Fatalf("decodeJSON = %v", err)
				}
				return
			}
			pe, ok := ports.AsError(err)
			if !ok || pe.Kind != tt.kind {
				t.Fatalf("decodeJSON = %#v, want kind %s", err, tt.kind)
			}
			if !reflect.DeepEqual(pe.Fields, tt.fields) {
				t.Errorf("fields = %+v, want %+v", pe.Fields, tt.fields)
			}
			if !strings.Contains(pe.Message, tt.detail) {
				t.Errorf("message %q does not contain %q", pe.Message, tt.detail)
			}
		})
	}
}

func TestDecodeJSONValues(t *testing.T) {
	t.Parallel()
	var dst decodeTarget
	body := `{"message":"hé","count":-3,"size":7,"ratio":0.5,"ok":true,"context":{"current_page":"/p"},` +
		`"preferences":[{"instruction":"be brief"}],"labels":{"a":1},"at":"2025-01-02T03:04:05Z","raw":[1],"any":null}`
	if err := decodeJSON(httptest.NewRecorder(), decodeRequest("application/json", []byte(body)), &dst); err != nil {
		t.Fatal(err)
	}
	if dst.Message != "hé" || dst.Count != -3 || dst.Size != 7 || !dst.OK || dst.Context.Page != "/p" ||
		dst.Prefs[0].Instruction != "be brief" || dst.Labels["a"] != 1 || dst.At.Year() != 2025 || string(dst.Raw) != "[1]" {
		t.Errorf("decoded %+v", dst)
	}
}

func TestDecodeJSONDefaultLimit(t *testing.T) {
	t.Parallel()
	body := `{"message":"` + strings.Repeat("a", int(DefaultBodyLimit)) + `"}`
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	var dst decodeTarget
	if err := decodeJSON(httptest.NewRecorder(), r, &dst); !errors.Is(err, ports.ErrPayloadTooLarge) {
		t.Errorf("decodeJSON = %v, want payload_too_large", err)
	}
}

func TestDecodeJSONTooDeep(t *testing.T) {
	t.Parallel()
	body := `{"any":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	var dst decodeTarget
	if err := decodeJSON(httptest.NewRecorder(), r, &dst); !errors.Is(err, ports.ErrMalformed) {
		t.Errorf("decodeJSON = %v, want malformed", err)
	}
}

func TestWriteJSON(t *testing.T) {
	t.Parallel()
	rr := httptest.NewRecorder()
	if err := writeJSON(rr, http.StatusCreated, map[string]string{"html": "<b>&"}); err != nil {
		t.Fatal(err)
	}
	if rr.Code != 201 || rr.Header().Get("Content-Type") != "application/json; charset=utf-8" ||
		rr.Body.String() != `{"html":"<b>&"}`+"\n" {
		t.Errorf("got %d %q %q", rr.Code, rr.Header().Get("Content-Type"), rr.Body)
	}

	rr = httptest.NewRecorder()
	err := writeJSON(rr, http.StatusOK, map[string]any{"f": func() {}})
	if !errors.Is(err, ports.ErrInternal) || rr.Body.Len() != 0 {
		t.Errorf("unencodable value: err %v, wrote %q", err, rr.Body)
	}
}

// FuzzDecodeJSON checks that no request body or content type makes decodeJSON
// panic or fail with anything but a client error.
func FuzzDecodeJSON(f *testing.F) {
	for _, seed := range []struct{ ct, body string }{
		{"application/json", `{"message":"hi","count":1,"context":{"current_page":"/"}}`},
		{"application/json; charset=utf-8", `{"preferences":[{"instruction":"x"}],"labels":{"k":2}}`},
		{"application/json", `{"at":"2025-01-02T03:04:05Z","raw":{"a":[1,2]},"any":[null,true,1e400]}`},
		{"application/json", `{"small":128,"size":-0,"ratio":1e309}`},
		{"application/json", `{"message":"\ud800"}`},
		{"application/json", `{"message":"\ud83d\ude80","context":{"current_page":"\u0000"},"OK":true,"ok":false}`},
		{"application/json", "{\"labels\":{\"\xff\":1}}"},
		{"text/plain", `{}`},
		{"application/json", ``},
	} {
		f.Add(seed.ct, []byte(seed.body))
	}
	allowed := map[ports.Kind]bool{
		ports.KindMalformed: true, ports.KindInvalid: true,
		ports.KindPayloadTooLarge: true, ports.KindUnsupportedMedia: true,
	}
	f.Fuzz(func(t *testing.T, contentType string, body []byte) {
		var dst decodeTarget
		err := decodeJSON(httptest.NewRecorder(), decodeRequest(contentType, body), &dst)
		if err == nil {
			return
		}
		pe, ok := err.(*ports.Error)
		if !ok || !allowed[pe.Kind] {
			t.Fatalf("decodeJSON(%q, %q) = %#v, want a client *ports.Error", contentType, body, err)
		}
		if pe.Message == "" {
			t.Fatalf("decodeJSON(%q, %q): empty message", contentType, body)
		}
	})
}
