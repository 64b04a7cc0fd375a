package httpapi

import (
	"bytes"
	"context"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/devpilot/devpilot/ports"
)

// fakeDocs records what it is asked to extract and answers text or err.
type fakeDocs struct {
	gotType, gotName string
	gotMax           int64
	gotBody          string
	text             string
	err              error
}

func (f *fakeDocs) Extract(_ context.Context, ct, name string, r io.Reader, max int64) (string, error) {
	b, _ := io.ReadAll(r)
	f.gotType, f.gotName, f.gotMax, f.gotBody = ct, name, max, string(b)
	return f.text, f.err
}

// A document upload goes to Deps.Documents by type, extension or content,
// whole (the sniffed bytes included), and is stored as text/plain; without
// an extractor it is 415 as before; the extractor's error is the answer.
func TestReadSpecFormDocuments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, filename, ct, body string
		docs                     *fakeDocs
		wantType                 string
		wantKind                 ports.Kind
	}{
		{name: "pdf by type", filename: "a", ct: ports.MediaPDF, body: "%PDF-1.4 x", docs: &fakeDocs{text: "[page 1]\nhi\n"}, wantType: ports.MediaPDF},
		{name: "pdf by content", filename: "a.bin", ct: "application/octet-stream", body: "%PDF-1.4 x", docs: &fakeDocs{text: "t"}, wantType: ports.MediaPDF},
		{name: "docx by extension", filename: "a.DOCX", ct: "application/octet-stream", body: "PK\x03\x04", docs: &fakeDocs{text: "t"}, wantType: ports.MediaDOCX},
		{name: "extractor error", filename: "s.pdf", ct: ports.MediaPDF, body: "%PDF-1.4", docs: &fakeDocs{err: ports.Invalid("no text layer")}, wantKind: ports.KindInvalid},
		{name: "no extractor", filename: "s.pdf", ct: ports.MediaPDF, body: "%PDF-1.4", wantKind: ports.KindUnsupportedMedia},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			mw := multipart.NewWriter(&buf)
			_ = mw.WriteField("name", "docs")
			part, _ := mw.CreatePart(map[string][]string{
				"Content-Disposition": {`form-data; name="file"; filename="` + tt.filename + `"`},
				"Content-Type":        {tt.ct},
			})
			_, _ = part.Write([]byte(tt.body))
			_ = mw.Close()
			r := httptest.NewRequest(http.MethodPost, "/pse/sessions", &buf)
			r.Header.Set("Content-Type", mw.FormDataContentType())
			var docs ports.DocumentText
			if tt.docs != nil {
				docs = tt.docs
			}
			form, err := readSpecForm(r, docs)
			if tt.wantKind != "" {
				if pe, ok := ports.AsError(err); !ok || pe.Kind != tt.wantKind {
					t.Fatalf("readSpecForm = %v, want %s", err, tt.wantKind)
				}
				return
			}
			if err != nil || len(form.inputs) != 1 {
				t.Fatalf("readSpecForm = %+v, %v", form, err)
			}
			in := form.inputs[0]
			if tt.docs.gotType != tt.wantType || tt.docs.gotBody != tt.body || tt.docs.gotName != tt.filename || tt.docs.gotMax <= 0 {
				t.Fatalf("extractor got %q %q %d %q", tt.docs.gotType, tt.docs.gotName, tt.docs.gotMax, tt.docs.gotBody)
			}
			if in.ContentType != "text/plain" || in.Content != tt.docs.text {
				t.Fatalf("input = %+v", in)
			}
		})
	}
}
