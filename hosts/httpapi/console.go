package httpapi

import (
	"errors"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/devpilot/devpilot/hosts/httpapi/console"
	"github.com/devpilot/devpilot/ports"
)

// consoleCSP is the Content-Security-Policy of every console response: the
// console's own scripts and styles only (no inline script, no eval), calls to
// this origin only, never framed.
const consoleCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; media-src 'self' blob:; font-src 'self'; manifest-src 'self'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// consoleRoutes serves the web console (package console) at / and
// /console/…, outside the API's middleware: the files are public, need no
// body, and are not API operations. GET /api/v1/sandbox, an API operation,
// tells a client whether this is a sandbox and, if so, the demo token.
func (s *Server) consoleRoutes() {
	files := console.FS()
	index, err := fs.ReadFile(files, "index.html")
	if err != nil {
		panic("httpapi: the console has no index.html: " + err.Error())
	}
	// The console's files are logged at debug when served: a visit asks
	// for dozens of them, which would bury every other line at info.
	serveIndex := func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
		infoFrom(r.Context()).route = "/"
		infoFrom(r.Context()).quiet = true
		consoleHeaders(w.Header())
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(index)))
		if r.Method != http.MethodHead {
			_, _ = w.Write(index)
		}
	}
	serveAsset := func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		infoFrom(r.Context()).route = "/console/*path"
		infoFrom(r.Context()).quiet = true
		name := strings.TrimPrefix(path.Clean(ps.ByName("path")), "/")
		body, err := consoleFile(files, name, r.URL.Path)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		consoleHeaders(w.Header())
		ct, ok := consoleTypes[path.Ext(name)]
		if !ok {
			ct = "application/octet-stream"
		}
		w.Header().Set("Content-Type", ct)
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		if r.Method != http.MethodHead {
			_, _ = w.Write(body)
		}
	}
	for _, m := range []string{http.MethodGet, http.MethodHead} {
		s.router.Handle(m, "/", serveIndex)
		s.router.Handle(m, "/console/*path", serveAsset)
	}
	s.handle(http.MethodGet, "/api/v1/sandbox", s.sandbox, public)
}

// consoleFile reads the console's file name (a cleaned path under
// /console/, which asked for it). What is no file of the console is
// not_found: the folder itself however it is spelt ("/console/",
// "/console/.", "/console//"), a directory, index.html (served at / only),
// a name the file system refuses. Errors: not_found; internal when the
// embedded file cannot be read.
func consoleFile(files fs.FS, name, asked string) ([]byte, error) {
	notFound := &ports.Error{Kind: ports.KindNotFound, Message: "no console file at " + asked}
	if name == "" || name == "." || name == "index.html" || !fs.ValidPath(name) {
		return nil, notFound
	}
	fi, err := fs.Stat(files, name)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, fs.ErrInvalid):
		return nil, notFound
	case err != nil:
		return nil, ports.Wrap(ports.KindInternal, err, "reading a console file")
	case fi.IsDir():
		return nil, notFound
	}
	body, err := fs.ReadFile(files, name)
	if err != nil {
		return nil, ports.Wrap(ports.KindInternal, err, "reading a console file")
	}
	return body, nil
}

// consoleTypes are the console's file types, fixed here rather than taken
// from the machine's MIME database, which may name JavaScript otherwise.
var consoleTypes = map[string]string{
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".html": "text/html; charset=utf-8",
	".png":  "image/png",
	".svg":  "image/svg+xml",
	".json": "application/json",
	// The web app manifest (the console's name, icons and colours, for
	// installing it): its registered type.
	".webmanifest": "application/manifest+json",
}

// consoleHeaders are the security headers of a console response.
func consoleHeaders(h http.Header) {
	h.Set("Content-Security-Policy", consoleCSP)
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
}

// sandbox answers {"sandbox":true,"demo_token"} when devpilot runs with its
// sandbox providers (demo data, fakes on loopback), so that a console can
// offer the demo user; 404 otherwise.
func (s *Server) sandbox(w http.ResponseWriter, r *http.Request) error {
	if s.d.Providers != ProvidersSandbox || s.d.DemoToken == nil || s.d.DemoToken() == "" {
		return &ports.Error{Kind: ports.KindNotFound, Message: "devpilot is not running in sandbox mode"}
	}
	return writeJSON(w, http.StatusOK, map[string]any{"sandbox": true, "demo_token": s.d.DemoToken()})
}
