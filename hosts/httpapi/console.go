package httpapi

import (
	"net/http"
	"path"
	"strings"

	"github.com/julienschmidt/httprouter"

	"github.com/devpilot/devpilot/ports"
)

// consoleCSP is the Content-Security-Policy of every console response: the
// console's own scripts and styles only (no inline script but index.html's
// import map, allowed by its hash; no eval), calls to this origin only,
// never framed.
const consoleCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; media-src 'self' blob:; font-src 'self'; manifest-src 'self'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// consoleRoutes serves the web console (package console) at / and
// /console/…, outside the API's middleware: the files are public, need no
// body, and are not API operations. How they are cached and compressed is
// consoleassets.go's. GET /api/v1/sandbox, an API operation, tells a client
// whether this is a sandbox and, if so, the demo token.
func (s *Server) consoleRoutes() {
	assets, err := defaultConsoleAssets()
	if err != nil {
		panic("httpapi: " + err.Error()) // the embedded files are fixed at build time
	}
	s.serveConsole(assets)
	s.handle(http.MethodGet, "/api/v1/sandbox", s.sandbox, public)
}

// serveConsole routes / and /console/… to assets.
func (s *Server) serveConsole(assets *consoleAssets) {
	// The console's files are logged at debug when served: a visit asks
	// for dozens of them, which would bury every other line at info.
	serveIndex := func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
		infoFrom(r.Context()).route = "/"
		infoFrom(r.Context()).quiet = true
		assets.index.serve(w, r, assets.csp, cacheRevalidate)
	}
	serveAsset := func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		infoFrom(r.Context()).route = "/console/*path"
		infoFrom(r.Context()).quiet = true
		// What is no file of the console is not_found: the folder itself
		// however it is spelt ("/console/", "/console/.", "/console//"), a
		// directory, index.html (served at / only), a name outside it.
		name := strings.TrimPrefix(path.Clean(ps.ByName("path")), "/")
		if a := assets.byHashed[name]; a != nil {
			a.serve(w, r, assets.csp, cacheImmutable)
			return
		}
		if a := assets.byPlain[name]; a != nil {
			a.serve(w, r, assets.csp, cacheRevalidate)
			return
		}
		s.writeError(w, r, &ports.Error{Kind: ports.KindNotFound, Message: "no console file at " + r.URL.Path})
	}
	for _, m := range []string{http.MethodGet, http.MethodHead} {
		s.router.Handle(m, "/", serveIndex)
		s.router.Handle(m, "/console/*path", serveAsset)
	}
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

// consoleHeaders sets the security headers of a console response; csp is
// consoleCSP with the hash of index.html's import map.
func consoleHeaders(h http.Header, csp string) {
	h.Set("Content-Security-Policy", csp)
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
