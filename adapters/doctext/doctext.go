// Package doctext is ports.DocumentText: the text of an uploaded PDF (its
// text layer, read with github.com/ledongthuc/pdf, a pure-Go reader) or Word
// document (a .docx is a zip of XML parts: word/document.xml is read with
// archive/zip and encoding/xml).
//
// Extraction runs on a copy of the upload held in memory (at most
// ports.MaxDocumentBytes), in its own goroutine, under a deadline and a page
// cap, and a panic in the PDF reader is recovered: a hostile or corrupt file
// is an invalid upload (422), never a hung request or a 500.
package doctext

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/ledongthuc/pdf"

	"github.com/devpilot/devpilot/ports"
)

// Defaults of Extractor's limits.
const (
	DefaultTimeout  = 20 * time.Second
	DefaultMaxPages = 2000
	// DefaultMaxXMLBytes bounds the uncompressed word/document.xml of a
	// .docx, so that a zip bomb is refused before it is read whole.
	DefaultMaxXMLBytes = 64 << 20
)

// Extractor implements ports.DocumentText. Its zero value uses the
// defaults.
type Extractor struct {
	// Timeout bounds one extraction (DefaultTimeout when zero).
	Timeout time.Duration
	// MaxPages bounds a PDF's page count (DefaultMaxPages when zero).
	MaxPages int
	// MaxXMLBytes bounds a .docx's uncompressed document part
	// (DefaultMaxXMLBytes when zero).
	MaxXMLBytes int64
}

var _ ports.DocumentText = (*Extractor)(nil)

// New returns an Extractor with the default limits.
func New() *Extractor { return &Extractor{} }

// NoTextLayer is the message for a PDF without a text layer.
const NoTextLayer = "this PDF has no text layer (a scan?): upload its text or an OCR'd PDF"

// Extract implements ports.DocumentText.
func (x *Extractor) Extract(ctx context.Context, contentType, name string, r io.Reader, max int64) (string, error) {
	if contentType != ports.MediaPDF && contentType != ports.MediaDOCX {
		return "", &ports.Error{Kind: ports.KindUnsupportedMedia, Message: fmt.Sprintf("cannot extract the text of %q documents", contentType)}
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	data, err := io.ReadAll(io.LimitReader(r, ports.MaxDocumentBytes+1))
	if err != nil {
		return "", fmt.Errorf("reading %q: %w", name, err)
	}
	if len(data) > ports.MaxDocumentBytes {
		return "", &ports.Error{Kind: ports.KindPayloadTooLarge,
			Message: fmt.Sprintf("file %.200q is larger than %d bytes", name, ports.MaxDocumentBytes)}
	}
	timeout := x.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type result struct {
		text string
		err  error
	}
	done := make(chan result, 1)
	hook := testHook
	go func() {
		defer func() {
			if v := recover(); v != nil {
				done <- result{err: unreadable(contentType, name, fmt.Errorf("%v", v))}
			}
		}()
		if hook != nil {
			hook()
		}
		var res result
		if contentType == ports.MediaPDF {
			res.text, res.err = x.pdfText(runCtx, name, data, max)
		} else {
			res.text, res.err = x.docxText(runCtx, name, data, max)
		}
		done <- res
	}()
	select {
	case res := <-done:
		return res.text, res.err
	case <-runCtx.Done():
		if err := ctx.Err(); err != nil {
			return "", err
		}
		return "", ports.Invalid(fmt.Sprintf("reading the text of %.200q took longer than %s: upload its text instead", name, timeout),
			ports.FieldError{Field: "file", Reason: "extraction timed out"})
	}
}

// testHook, when set by a test, runs first in the extraction goroutine.
var testHook func()

func unreadable(contentType, name string, cause error) *ports.Error {
	what := "PDF"
	if contentType == ports.MediaDOCX {
		what = "Word document (.docx)"
	}
	msg := fmt.Sprintf("file %.200q is not a readable %s: %.300s", name, what, cause.Error())
	return ports.Invalid(msg, ports.FieldError{Field: "file", Reason: "not a readable " + what})
}

func textTooLarge(name string, max int64) *ports.Error {
	return &ports.Error{Kind: ports.KindPayloadTooLarge,
		Message: fmt.Sprintf("the text of %.200q is larger than %d bytes", name, max)}
}

func (x *Extractor) pdfText(ctx context.Context, name string, data []byte, max int64) (string, error) {
	rd, err := pdf.NewReader(bytes.NewReader(asPDF17(data)), int64(len(data)))
	if err != nil {
		return "", unreadable(ports.MediaPDF, name, err)
	}
	maxPages := x.MaxPages
	if maxPages <= 0 {
		maxPages = DefaultMaxPages
	}
	n := rd.NumPage()
	switch {
	case n <= 0:
		return "", unreadable(ports.MediaPDF, name, errors.New("it has no pages"))
	case n > maxPages:
		return "", ports.Invalid(fmt.Sprintf("file %.200q has %d pages, more than %d", name, n, maxPages),
			ports.FieldError{Field: "file", Reason: "at most " + strconv.Itoa(maxPages) + " pages"})
	}
	var b strings.Builder
	hasText := false
	for i := 1; i <= n; i++ {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		page := rd.Page(i)
		var text string
		if !page.V.IsNull() {
			if text, err = page.GetPlainText(nil); err != nil {
				return "", unreadable(ports.MediaPDF, name, fmt.Errorf("page %d: %w", i, err))
			}
		}
		text = strings.TrimSpace(ports.CleanText(text))
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "[page %d]\n", i)
		if text != "" {
			hasText = true
			b.WriteString(text)
		}
		if int64(b.Len()) > max {
			return "", textTooLarge(name, max)
		}
	}
	if !hasText {
		return "", ports.Invalid(NoTextLayer, ports.FieldError{Field: "file", Reason: "no text layer"})
	}
	return b.String() + "\n", nil
}

// asPDF17 returns data with a PDF 2.0 header ("%PDF-2.0") read as
// "%PDF-1.7": the reader checks for a 1.x header only, and what it reads of
// the file (objects, cross-reference tables and streams) is the same in
// 2.0. data itself is not changed.
func asPDF17(data []byte) []byte {
	if !bytes.HasPrefix(data, []byte("%PDF-2.")) {
		return data
	}
	out := bytes.Clone(data)
	copy(out, "%PDF-1.7")
	return out
}

// The namespaces of WordprocessingML's main part: transitional and strict.
const (
	wordNS       = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
	wordStrictNS = "http://purl.oclc.org/ooxml/wordprocessingml/main"
)

var errXMLTooLarge = errors.New("document part too large")

// cappedReader fails with errXMLTooLarge past n bytes.
type cappedReader struct {
	r io.Reader
	n int64
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.n <= 0 {
		return 0, errXMLTooLarge
	}
	if int64(len(p)) > c.n {
		p = p[:c.n]
	}
	k, err := c.r.Read(p)
	c.n -= int64(k)
	return k, err
}

func (x *Extractor) docxText(ctx context.Context, name string, data []byte, max int64) (string, error) {
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return "", unreadable(ports.MediaDOCX, name, err)
	}
	var part *zip.File
	for _, f := range zr.File {
		if f.Name == "word/document.xml" {
			part = f
			break
		}
	}
	if part == nil {
		return "", unreadable(ports.MediaDOCX, name, errors.New("it has no word/document.xml"))
	}
	rc, err := part.Open()
	if err != nil {
		return "", unreadable(ports.MediaDOCX, name, err)
	}
	defer rc.Close()
	limit := x.MaxXMLBytes
	if limit <= 0 {
		limit = DefaultMaxXMLBytes
	}
	dec := xml.NewDecoder(&cappedReader{r: rc, n: limit})
	var out, par strings.Builder
	inText := false
	paragraphs := 0 // numbered like PDF pages, so a citation can name its place
	for tokens := 0; ; tokens++ {
		if tokens%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return "", err
			}
		}
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, errXMLTooLarge) {
			return "", &ports.Error{Kind: ports.KindPayloadTooLarge,
				Message: fmt.Sprintf("the document part of %.200q is larger than %d bytes uncompressed", name, limit)}
		}
		if err != nil {
			return "", unreadable(ports.MediaDOCX, name, err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if t.Name.Space != wordNS && t.Name.Space != wordStrictNS {
				continue
			}
			switch t.Name.Local {
			case "t":
				inText = true
			case "tab":
				par.WriteByte('\t')
			case "br", "cr":
				par.WriteByte('\n')
			}
		case xml.EndElement:
			if t.Name.Space != wordNS && t.Name.Space != wordStrictNS {
				continue
			}
			switch t.Name.Local {
			case "t":
				inText = false
			case "p":
				text := strings.TrimSpace(ports.CleanText(par.String()))
				par.Reset()
				if text == "" {
					continue
				}
				if out.Len() > 0 {
					out.WriteString("\n\n")
				}
				paragraphs++
				fmt.Fprintf(&out, "[paragraph %d] %s", paragraphs, text)
			}
		case xml.CharData:
			if inText {
				par.Write(t)
			}
		}
		if int64(out.Len()+par.Len()) > max {
			return "", textTooLarge(name, max)
		}
	}
	if out.Len() == 0 {
		return "", ports.Invalid(fmt.Sprintf("the Word document %.200q holds no text", name),
			ports.FieldError{Field: "file", Reason: "no text"})
	}
	return out.String() + "\n", nil
}
