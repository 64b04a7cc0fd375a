package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/julienschmidt/httprouter"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/devpilot/devpilot/ports"
)

// routes registers every endpoint, one line each. Options: public (no auth),
// streaming (no request timeout, no HEAD twin), maxBody(n) (body limit),
// quiet (access log at debug when successful), costly (per-user rate limit). For example:
//
//	s.handle(http.MethodPost, "/api/v1/agent/chat", s.chat, streaming)
func (s *Server) routes() {
	s.operationRoutes()
	s.handle(http.MethodGet, "/openapi.json", s.openapi, public, quiet)

	s.handle(http.MethodGet, "/api/v1/me", s.me)
	s.consoleRoutes()
	if s.d.Assistant != nil {
		s.assistantRoutes()
	}
	if s.d.Spec != nil {
		s.specRoutes()
	}
	if s.d.Cloud != nil {
		s.cloudRoutes()
	}
	if s.d.SCM != nil {
		s.scmRoutes()
	}
	if s.d.Content != nil {
		s.contentRoutes()
	}
	if s.d.Voice != nil {
		s.voiceRoutes()
	}
	if s.d.Usage != nil {
		s.usageRoutes()
	}
	if s.d.Tokens != nil {
		s.tokenRoutes()
	}
	if s.d.Members != nil {
		s.memberRoutes()
	}
	if s.d.SignIn != nil {
		s.signInRoutes()
	}
	if s.d.Invitations != nil {
		s.invitationRoutes()
	}
	if s.d.MCP != nil {
		s.mcpRoutes()
	}
	if s.d.AuditLog != nil {
		s.handle(http.MethodGet, "/api/v1/audit", s.listOrgAudit)
	}
	if s.d.Permissions != nil {
		s.permissionRoutes()
	}
}

// operationRoutes are the probes and the metrics, which every Server serves.
func (s *Server) operationRoutes() {
	s.handle(http.MethodGet, "/livez", s.livez, public, quiet)
	s.handle(http.MethodGet, "/readyz", s.readyz, public, quiet)
	s.handle(http.MethodGet, "/metrics", s.metricsEndpoint(), public, quiet)
}

// handlerFunc is what every endpoint implements: write a response, or return
// an error for writeError to turn into a problem response.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

type route struct {
	method    string
	pattern   string
	h         handlerFunc
	public    bool
	streaming bool
	quiet     bool
	bodyLimit int64
	// costly routes take from the caller's rate bucket (see takeRate).
	costly  bool
	timeout time.Duration
	// bodyTimeout bounds reading the request body, from the request's start.
	bodyTimeout time.Duration
	// scope is what a token's scopes must allow (see routeAreas).
	scope routeScope
}

type routeOption func(*route)

var (
	// public skips authentication.
	public routeOption = func(rt *route) { rt.public = true }
	// streaming exempts the route from the request timeout (SSE).
	streaming routeOption = func(rt *route) { rt.streaming = true }
	// quiet logs successful requests at debug level (probes, scrapes).
	quiet routeOption = func(rt *route) { rt.quiet = true }
)

// timeout sets the route's request timeout, for a route that waits on a slow
// provider longer than the server's default; a longer timeout gives the
// request's body that long to arrive too (a large upload).
func timeout(d time.Duration) routeOption {
	return func(rt *route) {
		rt.timeout = d
		rt.bodyTimeout = max(rt.bodyTimeout, d)
	}
}

// bodyTimeoutAtMost shortens the time the route's body has to arrive to d,
// when the server's is longer.
func bodyTimeoutAtMost(d time.Duration) routeOption {
	return func(rt *route) { rt.bodyTimeout = min(rt.bodyTimeout, d) }
}

// maxBody sets the route's body limit in bytes.
func maxBody(n int64) routeOption { return func(rt *route) { rt.bodyLimit = n } }

// handle registers h for method and pattern, wrapped with the per-route
// middleware. A GET route that does not stream answers HEAD too.
func (s *Server) handle(method, pattern string, h handlerFunc, opts ...routeOption) {
	rt := route{method: method, pattern: pattern, h: h, bodyLimit: s.cfg.BodyLimit, timeout: s.cfg.RequestTimeout,
		bodyTimeout: s.cfg.BodyReadTimeout}
	for _, o := range opts {
		o(&rt)
	}
	if !rt.streaming {
		rt.bodyTimeout = min(rt.bodyTimeout, rt.timeout) // never past the request's own deadline
	}
	rt.scope, _ = scopeForRoute(method, pattern)
	s.registered = append(s.registered, rt)
	wrapped := s.wrap(rt)
	s.router.Handle(method, pattern, wrapped)
	if method == http.MethodGet && !rt.streaming {
		s.router.Handle(http.MethodHead, pattern, wrapped)
	}
}

// errRequestTimeout is the cause of a request context that ran out of time,
// which tells it apart from a client that went away.
var errRequestTimeout = errors.New("request timeout")

// wrap is the per-route middleware: route label, path params, timeout, the
// deadline of the body, auth, the rate limit of costly routes, body limit, the Idempotency-Key convention
// on authenticated writes, then the handler, whose error becomes a problem
// response.
func (s *Server) wrap(rt route) httprouter.Handle {
	idempotent := s.idempotent(rt)
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		info := infoFrom(r.Context())
		info.route = rt.pattern
		info.quiet = rt.quiet
		if hasBody(r) {
			body := newDeadlineBody(w, r.Body, rt.bodyTimeout, info)
			defer body.clear()
			r.Body = body
		}

		ctx := r.Context()
		if len(ps) > 0 {
			ctx = context.WithValue(ctx, httprouter.ParamsKey, ps)
		}
		if !rt.streaming {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeoutCause(ctx, rt.timeout, errRequestTimeout)
			defer cancel()
		}
		ctx = context.WithValue(ctx, bodyLimitKey{}, rt.bodyLimit)
		if !rt.public {
			p, err := s.authenticate(ctx, w, r)
			if err != nil {
				s.writeError(w, r.WithContext(ctx), err)
				return
			}
			info.userID = p.UserID
			if err := checkScope(w, p, rt.method, rt.pattern, rt.scope); err != nil {
				s.writeError(w, r.WithContext(ctx), err)
				return
			}
			ctx = ports.WithPrincipal(ctx, p)
		}
		r = r.WithContext(ctx)
		if !rt.public { // before any body is read or any work is done
			if err := s.checkPermission(r, rt.method, rt.pattern); err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		if rt.costly { // before any body is read or any work is done
			if err := s.takeRate(r); err != nil {
				s.writeError(w, r, err)
				return
			}
		}

		if r.ContentLength > rt.bodyLimit {
			s.writeError(w, r, tooLarge(rt.bodyLimit))
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			r.Body = http.MaxBytesReader(rootWriter(w), r.Body, rt.bodyLimit)
		}
		if rt.streaming && hasBody(r) {
			// A stream outlives any body deadline: read the body (within its
			// limit) under the deadline now, then stream without one.
			if err := bufferBody(r); err != nil {
				s.writeError(w, r, err)
				return
			}
		}

		if idempotent && r.Header[headerIdempotencyKey] != nil {
			s.serveIdempotent(w, r, rt)
			return
		}
		if err := rt.h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	}
}

// pathParam returns the value of the route's :name segment.
func pathParam(r *http.Request, name string) string {
	return httprouter.ParamsFromContext(r.Context()).ByName(name)
}

// newRouter returns an httprouter whose 404, 405 and panics answer with
// problem+json.
//
// Automatic redirects are off: RedirectTrailingSlash and RedirectFixedPath
// would answer a POST to "/api/v1/x/" or "/API/v1/x" with a 307 and an HTML
// body that API clients do not expect to follow. A path that does not match
// exactly is a 404 problem, which says when a trailing slash is the reason.
func (s *Server) newRouter() *httprouter.Router {
	rtr := httprouter.New()
	rtr.RedirectTrailingSlash = false
	rtr.RedirectFixedPath = false
	rtr.HandleMethodNotAllowed = true
	rtr.HandleOPTIONS = true
	rtr.GlobalOPTIONS = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent) // the router has set Allow
	})
	rtr.NotFound = http.HandlerFunc(s.notFound)
	rtr.MethodNotAllowed = http.HandlerFunc(s.methodNotAllowed)
	rtr.PanicHandler = s.recovered
	return rtr
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	detail := fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path)
	if _, _, tsr := s.router.Lookup(r.Method, r.URL.Path); tsr {
		detail += " (a route differs only by a trailing slash)"
	}
	s.writeError(w, r, &ports.Error{Kind: ports.KindNotFound, Message: detail})
}

func (s *Server) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	s.writeError(w, r, &ports.Error{
		Kind:    kindMethodNotAllowed,
		Message: fmt.Sprintf("method %s is not allowed on %s; allowed: %s", r.Method, r.URL.Path, w.Header().Get("Allow")),
	})
}

func (s *Server) metricsEndpoint() handlerFunc {
	h := promhttp.HandlerFor(s.registry, promhttp.HandlerOpts{
		ErrorLog: promLogger{s.log},
	})
	return func(w http.ResponseWriter, r *http.Request) error {
		h.ServeHTTP(w, r)
		return nil
	}
}

// hasBody reports whether r may carry a body to read.
func hasBody(r *http.Request) bool {
	return r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0
}

// deadlineBody is a request body that must arrive by a deadline: a read
// past it fails, marks the request (writeError then answers 408 and closes
// the connection), and the deadline is lifted once the body is read, so that
// it never cuts what follows (the connection's check for a client that
// left, a stream).
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	info *reqInfo
	once sync.Once
}

// newDeadlineBody sets the connection's read deadline d from now for body;
// where the connection cannot take one (in-process tests), body is read
// without.
func newDeadlineBody(w http.ResponseWriter, body io.ReadCloser, d time.Duration, info *reqInfo) *deadlineBody {
	b := &deadlineBody{ReadCloser: body, rc: http.NewResponseController(w), info: info}
	if d > 0 {
		_ = b.rc.SetReadDeadline(time.Now().Add(d))
	}
	return b
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == nil:
	case errors.Is(err, os.ErrDeadlineExceeded):
		b.info.bodyTimedOut = true
	default: // io.EOF, or the body is broken: no more reads to bound
		b.clear()
	}
	return n, err
}

func (b *deadlineBody) Close() error {
	b.clear()
	return b.ReadCloser.Close()
}

// clear lifts the read deadline, once, unless the body timed out (the
// connection is closed then).
func (b *deadlineBody) clear() {
	b.once.Do(func() {
		if !b.info.bodyTimedOut {
			_ = b.rc.SetReadDeadline(time.Time{})
		}
	})
}

// bufferBody reads r's body into memory and replaces it with that copy.
func bufferBody(r *http.Request) error {
	b, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	if err != nil {
		return bodyError(err, "reading the request body")
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	return nil
}
