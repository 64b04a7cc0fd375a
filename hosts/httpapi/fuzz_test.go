package httpapi

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"

	"github.com/devpilot/devpilot/ports"
)

// clientKinds are the error kinds a request's own content may cause.
var clientKinds = map[ports.Kind]bool{
	ports.KindMalformed: true, ports.KindInvalid: true,
	ports.KindPayloadTooLarge: true, ports.KindUnsupportedMedia: true,
}

// FuzzLastEventID checks that no Last-Event-ID header or ?after= value makes
// the resume parser panic or answer other than an id or a malformed error.
func FuzzLastEventID(f *testing.F) {
	for _, seed := range [][2]string{{"42", ""}, {"", "7"}, {" 9 ", ""}, {"-1", ""}, {"9223372036854775808", ""}, {"1e3", ""}, {"\x00", "\xff"}} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, header, after string) {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/agent/sessions/x/stream?after="+url.QueryEscape(after), nil)
		if header != "" {
			r.Header["Last-Event-Id"] = []string{header}
		}
		n, err := lastEventID(r)
		if err != nil {
			if pe, ok := ports.AsError(err); !ok || pe.Kind != ports.KindMalformed || len(pe.Fields) != 1 {
				t.Fatalf("lastEventID(%q, %q) = %#v, want a malformed error naming the field", header, after, err)
			}
			return
		}
		if n < 0 {
			t.Fatalf("lastEventID(%q, %q) = %d", header, after, n)
		}
		if v, err := strconv.ParseInt(header, 10, 64); err == nil && v >= 0 && v != n {
			t.Fatalf("Last-Event-ID %q read as %d", header, n)
		}
	})
}

// FuzzReadSpecForm checks that no multipart body makes the PSE upload
// reader panic or fail with anything but a client error, and that what it
// accepts is acceptable text.
func FuzzReadSpecForm(f *testing.F) {
	seed := func(fields map[string]string, name, content string) []byte {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		_ = mw.SetBoundary("fuzzboundary")
		for k, v := range fields {
			_ = mw.WriteField(k, v)
		}
		if name != "" {
			fw, _ := mw.CreateFormFile("file", name)
			_, _ = fw.Write([]byte(content))
		}
		_ = mw.Close()
		return buf.Bytes()
	}
	f.Add(seed(map[string]string{"name": "Checkout", "kind": "transcript"}, "call.md", "# Call\nWe agreed."))
	f.Add(seed(map[string]string{"name": "a\x00b"}, "x.txt", "text"))
	f.Add(seed(nil, "notes.txt", "nul\x00byte"))
	f.Add(seed(nil, "bom.md", "\ufeff# Title"))
	f.Add(seed(nil, "doc.pdf", "%PDF-1.7"))
	f.Add([]byte("--fuzzboundary\r\nContent-Disposition: form-data; name=\"file\"; filename=\"\xff.md\"\r\n\r\nx\r\n--fuzzboundary--"))
	f.Add([]byte("not multipart at all"))
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest(http.MethodPost, "/pse/sessions", bytes.NewReader(body))
		r.Header.Set("Content-Type", "multipart/form-data; boundary=fuzzboundary")
		r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, 1<<20)
		form, err := readSpecForm(r, nil)
		if err != nil {
			if pe, ok := ports.AsError(err); !ok || !clientKinds[pe.Kind] {
				t.Fatalf("readSpecForm(%q) = %#v, want a client *ports.Error", body, err)
			}
			return
		}
		if reason := ports.TextFault(form.name); reason != "" {
			t.Fatalf("accepted name %q: %s", form.name, reason)
		}
		for _, in := range form.inputs {
			if reason := ports.TextFault(in.Content + in.Title); reason != "" {
				t.Fatalf("accepted file %q: %s", in.Title, reason)
			}
		}
	})
}
