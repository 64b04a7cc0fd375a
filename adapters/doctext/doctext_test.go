package doctext_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/adapters/doctext"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
)

func TestExtract(t *testing.T) {
	twoPages := fixture.PDF("Hello (PDF) world", "Second page text")
	docx := fixture.DOCX("First paragraph & more", "Second paragraph")
	tests := []struct {
		name     string
		ct       string
		data     []byte
		max      int64
		want     string
		kind     ports.Kind
		contains string
	}{
		{name: "pdf pages", ct: ports.MediaPDF, data: twoPages, max: 1 << 20,
			want: "[page 1]\nHello (PDF) world\n\n[page 2]\nSecond page text\n"},
		{name: "pdf page without text keeps its marker", ct: ports.MediaPDF, data: fixture.PDF("", "only text"), max: 1 << 20,
			want: "[page 1]\n\n\n[page 2]\nonly text\n"},
		{name: "pdf 2.0", ct: ports.MediaPDF, data: bytes.Replace(fixture.PDF("two"), []byte("%PDF-1.4"), []byte("%PDF-2.0"), 1), max: 1 << 20,
			want: "[page 1]\ntwo\n"},
		{name: "docx paragraphs", ct: ports.MediaDOCX, data: docx, max: 1 << 20,
			want: "[paragraph 1] First paragraph & more\n\n[paragraph 2] Second paragraph\n"},
		{name: "scanned pdf", ct: ports.MediaPDF, data: fixture.PDF("", ""), max: 1 << 20,
			kind: ports.KindInvalid, contains: "no text layer"},
		{name: "pdf text over the cap", ct: ports.MediaPDF, data: twoPages, max: 20,
			kind: ports.KindPayloadTooLarge},
		{name: "docx text over the cap", ct: ports.MediaDOCX, data: docx, max: 10,
			kind: ports.KindPayloadTooLarge},
		{name: "corrupt pdf", ct: ports.MediaPDF, data: []byte("%PDF-1.4\ngarbage\n%%EOF\n"), max: 1 << 20,
			kind: ports.KindInvalid, contains: "not a readable PDF"},
		{name: "not a pdf", ct: ports.MediaPDF, data: []byte("hello"), max: 1 << 20,
			kind: ports.KindInvalid},
		{name: "truncated pdf", ct: ports.MediaPDF, data: twoPages[:len(twoPages)/2], max: 1 << 20,
			kind: ports.KindInvalid},
		{name: "pdf with a broken xref offset", ct: ports.MediaPDF,
			data: bytes.Replace(twoPages, []byte("startxref\n"), []byte("startxref\n9"), 1), max: 1 << 20,
			kind: ports.KindInvalid},
		{name: "truncated docx", ct: ports.MediaDOCX, data: docx[:len(docx)-40], max: 1 << 20,
			kind: ports.KindInvalid, contains: "not a readable Word document"},
		{name: "docx that is not a zip", ct: ports.MediaDOCX, data: []byte("PK nonsense"), max: 1 << 20,
			kind: ports.KindInvalid},
		{name: "empty docx", ct: ports.MediaDOCX, data: fixture.DOCX(), max: 1 << 20,
			kind: ports.KindInvalid, contains: "holds no text"},
		{name: "other type", ct: "text/plain", data: []byte("x"), max: 1 << 20,
			kind: ports.KindUnsupportedMedia},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := doctext.New().Extract(context.Background(), tt.ct, "f", bytes.NewReader(tt.data), tt.max)
			if tt.kind == "" {
				if err != nil {
					t.Fatalf("Extract: %v", err)
				}
				if got != tt.want {
					t.Fatalf("Extract = %q, want %q", got, tt.want)
				}
				return
			}
			var pe *ports.Error
			if !errors.As(err, &pe) || pe.Kind != tt.kind {
				t.Fatalf("Extract = %q, %v; want a %s error", got, err, tt.kind)
			}
			if !strings.Contains(pe.Message, tt.contains) {
				t.Fatalf("message %q does not contain %q", pe.Message, tt.contains)
			}
		})
	}
}

func TestExtractRawCap(t *testing.T) {
	big := bytes.NewReader(make([]byte, ports.MaxDocumentBytes+1))
	_, err := doctext.New().Extract(context.Background(), ports.MediaPDF, "big.pdf", big, 1<<20)
	var pe *ports.Error
	if !errors.As(err, &pe) || pe.Kind != ports.KindPayloadTooLarge {
		t.Fatalf("Extract = %v, want payload_too_large", err)
	}
}

func TestExtractPageCap(t *testing.T) {
	x := &doctext.Extractor{MaxPages: 1}
	_, err := x.Extract(context.Background(), ports.MediaPDF, "p.pdf", bytes.NewReader(fixture.PDF("a", "b")), 1<<20)
	var pe *ports.Error
	if !errors.As(err, &pe) || pe.Kind != ports.KindInvalid || !strings.Contains(pe.Message, "more than 1") {
		t.Fatalf("Extract = %v, want invalid: more than 1 page", err)
	}
}

func TestExtractCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := doctext.New().Extract(ctx, ports.MediaDOCX, "d.docx", bytes.NewReader(fixture.DOCX("x")), 1<<20)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Extract = %v, want context.Canceled", err)
	}
}

func TestDocumentType(t *testing.T) {
	tests := []struct{ declared, name, head, want string }{
		{"application/pdf", "x", "", ports.MediaPDF},
		{"application/octet-stream", "Spec.PDF", "", ports.MediaPDF},
		{"", "noext", "%PDF-1.7", ports.MediaPDF},
		{ports.MediaDOCX + "; charset=binary", "x", "", ports.MediaDOCX},
		{"application/octet-stream", "brief.docx", "", ports.MediaDOCX},
		{"text/plain", "notes.txt", "hello", ""},
	}
	for _, tt := range tests {
		if got := ports.DocumentType(tt.declared, tt.name, []byte(tt.head)); got != tt.want {
			t.Errorf("DocumentType(%q, %q, %q) = %q, want %q", tt.declared, tt.name, tt.head, got, tt.want)
		}
	}
}
