package ports

//go:generate go tool mockgen -typed -destination ../testkit/mocks/doctext.go -package mocks . DocumentText

import (
	"context"
	"io"
	"mime"
	"path"
	"strings"
)

// The document types DocumentText extracts: a PDF with a text layer and a
// Word document (Office Open XML, .docx).
const (
	MediaPDF  = "application/pdf"
	MediaDOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
)

// MaxDocumentBytes bounds an uploaded document file before extraction
// (20 MiB); the extracted text has its own, smaller cap.
const MaxDocumentBytes = 20 << 20

// DocumentText extracts the text of an uploaded document, so a
// specification session can take a PDF or a Word file as an input.
//
// Extract reads at most MaxDocumentBytes of r (more is KindPayloadTooLarge)
// and returns the document's text as UTF-8 fit to store (CleanText): a PDF's
// pages each after a "[page N]" line, a Word document's paragraphs each
// starting "[paragraph N] " and separated by blank lines, so that citations
// can point at them. Text longer than max
// bytes is KindPayloadTooLarge. A file that cannot be read (corrupt,
// truncated, encrypted), one that holds no text (a scanned PDF), or one
// whose extraction does not finish in time is KindInvalid with a message
// for the uploader. contentType is MediaPDF or MediaDOCX (DocumentType);
// name is the file's name, for messages.
type DocumentText interface {
	Extract(ctx context.Context, contentType, name string, r io.Reader, max int64) (string, error)
}

// DocumentType returns the document type (MediaPDF or MediaDOCX) of an
// upload by its declared media type, its file name's extension or its first
// bytes (head, which may be nil), or "" when it is none of them.
func DocumentType(declared, name string, head []byte) string {
	mt, _, _ := mime.ParseMediaType(declared)
	switch {
	case mt == MediaPDF || strings.EqualFold(path.Ext(name), ".pdf") || strings.HasPrefix(string(head), "%PDF-"):
		return MediaPDF
	case mt == MediaDOCX || strings.EqualFold(path.Ext(name), ".docx"):
		return MediaDOCX
	}
	return ""
}
