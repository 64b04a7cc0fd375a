package httpapi

import (
	"net/http"
	"strings"

	"github.com/devpilot/devpilot/core/spec"
)

// exportSpec answers GET /pse/sessions/{id}/export: the session's current
// stage documents as a zip archive (format=zip, the default) or one Markdown
// document (format=md), to be saved as a file. Its ETag changes with the
// session and its stages, so a client that has the export already gets a 304
// for If-None-Match. An unknown format is 422 naming format.
func (s *Server) exportSpec(w http.ResponseWriter, r *http.Request) error {
	format := spec.ExportFormat(r.URL.Query().Get("format"))
	x, err := s.d.Spec.ExportSession(r.Context(), pathParam(r, "session_id"), format)
	if err != nil {
		return err
	}
	etag := `"` + x.Tag() + `"`
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("Cache-Control", "private, no-cache")
	if noneMatch(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	contentType := "application/zip"
	if x.Format == spec.ExportMarkdown {
		contentType = "text/markdown; charset=utf-8"
	}
	h.Set("Content-Type", contentType)
	// FileName holds only letters, digits, dashes and its extension's dot.
	h.Set("Content-Disposition", `attachment; filename="`+x.FileName()+`"`)
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	return x.Write(w)
}

// noneMatch reports whether an If-None-Match header names etag (or is "*"),
// by the weak comparison RFC 9110 prescribes for it.
func noneMatch(header, etag string) bool {
	for _, tag := range strings.Split(header, ",") {
		tag = strings.TrimSpace(tag)
		if tag == "*" || strings.TrimPrefix(tag, "W/") == etag {
			return true
		}
	}
	return false
}
