package httpapi

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/trace"

	"github.com/devpilot/devpilot/ports"
)

const (
	headerRequestID  = "X-Request-Id"
	maxRequestIDLen  = 128
	routeUnmatched   = "unmatched"
	statusClientGone = 499 // nginx's "client closed request", for logs and metrics only
)

// reqInfo is what the outer middleware learns from the inner layers of one
// request: the route pattern, the caller, the outcome. It is only touched by
// the request's own goroutine.
type reqInfo struct {
	id     string
	log    *slog.Logger // made on first use
	rec    *recorder
	route  string
	userID string
	quiet  bool
	// quietAlways logs the request at debug whatever its status: its
	// handler logged what an operator needs (/readyz: a change of reason).
	quietAlways bool
	clientGone  bool
	aborted     bool
	// bodyTimedOut is set when the request body did not arrive by its
	// deadline: the answer is 408 and the connection is closed.
	bodyTimedOut bool
	// span is the request's server span; nil when tracing is off.
	span trace.Span
}

type reqInfoKey struct{}

type bodyLimitKey struct{}

// infoFrom returns the request's reqInfo, or a detached one outside the
// middleware (handlers called directly in tests).
func infoFrom(ctx context.Context) *reqInfo {
	if info, ok := ctx.Value(reqInfoKey{}).(*reqInfo); ok {
		return info
	}
	return &reqInfo{route: routeUnmatched}
}

// requestID returns the request id of ctx, or "".
func requestID(ctx context.Context) string { return infoFrom(ctx).id }

// logFor returns the logger for the request in ctx, which adds its request id.
func (s *Server) logFor(ctx context.Context) *slog.Logger {
	info := infoFrom(ctx)
	if info.id == "" {
		return s.log
	}
	if info.log == nil {
		info.log = s.log.With(slog.String("request_id", info.id))
	}
	return info.log
}

// observe assigns the request id and, once the request is over, records the
// metrics and writes the access log line.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get(headerRequestID)
		if !saneRequestID(id) {
			id = newRequestID()
		}
		h := w.Header()
		h.Set(headerRequestID, id)
		// No response is for a cache (tokens, private data), nor to be
		// sniffed as another type. SSE streams set Cache-Control: no-cache
		// instead, so that proxies pass events on as they come.
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		r, body := watchBody(r)
		rec := &recorder{ResponseWriter: w, body: body}
		info := &reqInfo{id: id, rec: rec, route: routeUnmatched}

		s.metrics.inFlight.Inc()
		r = s.spans.start(r, info)
		defer s.finish(r, info, start) // deferred so that aborted requests are counted too
		defer rec.letGoOfUnreadBody()
		next.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), reqInfoKey{}, info)))
	})
}

// unreadBodyLinger is how long the connection of a request answered
// without reading its body waits, once the answer is sent, for the rest of
// that body before it is closed: long enough for a client that sent it all
// to read the answer before the close (as net/http's own delay before
// closing after a request it found too large), short enough that clients
// that announce a body and never send it cannot hold descriptors.
const unreadBodyLinger = 500 * time.Millisecond

// bodyWatch is an HTTP/1 request's body as it arrived, which knows whether
// it was read to its end.
type bodyWatch struct {
	io.ReadCloser
	length int64 // the Content-Length, -1 when unknown (chunked)
	read   atomic.Int64
	eof    atomic.Bool
}

// watchBody returns a copy of r whose body is watched by the bodyWatch it
// returns too; r itself, net/http's, keeps its own body, which the server
// inspects once the handler is done. It returns r and nil when r has no
// body, or is not HTTP/1 (an HTTP/2 stream's unread body ends with the
// stream, not with the connection).
func watchBody(r *http.Request) (*http.Request, *bodyWatch) {
	if r.ProtoMajor != 1 || r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return r, nil
	}
	b := &bodyWatch{ReadCloser: r.Body, length: r.ContentLength}
	r = r.WithContext(r.Context())
	r.Body = b
	return r, b
}

func (b *bodyWatch) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.read.Add(int64(n))
	if errors.Is(err, io.EOF) {
		b.eof.Store(true)
	}
	return n, err
}

// unread reports whether some of the body may still be on its way: it was
// not read to its end.
func (b *bodyWatch) unread() bool {
	if b == nil || b.eof.Load() {
		return false
	}
	return b.length < 0 || b.read.Load() < b.length
}

// closeIfBodyUnread marks the response Connection: close when the request's
// body was not read to its end as the response starts. net/http would
// otherwise read what is left of the body, without a deadline, before
// answering (to keep the connection for the next request): a request
// refused before its body is read (no token, no such route, a webhook
// without a good signature) would wait for bytes that a hostile client
// never sends. It is answered at once instead, and its connection closed.
func (w *recorder) closeIfBodyUnread() {
	if w.status == 0 && w.body.unread() {
		w.ResponseWriter.Header().Set("Connection", "close")
	}
}

// letGoOfUnreadBody runs once the handler is done: when the body was not
// read to its end, the answer goes out with Connection: close and the read
// of what is left (net/http's, on closing the body) may wait
// unreadBodyLinger, no longer, before the connection is closed.
func (w *recorder) letGoOfUnreadBody() {
	if !w.body.unread() {
		return
	}
	w.closeIfBodyUnread() // a handler that wrote nothing: net/http answers 200 next
	_ = http.NewResponseController(w.ResponseWriter).SetReadDeadline(time.Now().Add(unreadBodyLinger))
}

func (s *Server) finish(r *http.Request, info *reqInfo, start time.Time) {
	elapsed := time.Since(start)
	s.metrics.inFlight.Dec()

	status := info.rec.status
	switch {
	case info.clientGone:
		status = statusClientGone
	case status == 0 && info.aborted:
		status = http.StatusInternalServerError
	case status == 0:
		status = http.StatusOK // what net/http sends for a handler that wrote nothing
	}
	s.metrics.observe(r.Method, info.route, status, elapsed)
	sent := status
	if info.clientGone {
		sent = info.rec.status // 0: nothing reached the client
	}
	s.spans.end(r, info, sent, status)

	level := slog.LevelInfo
	if info.quiet && status < 400 || info.quietAlways {
		level = slog.LevelDebug
	}
	attrs := []slog.Attr{
		slog.String("request_id", info.id),
		slog.String("method", r.Method),
		slog.String("route", info.route),
		slog.String("path", r.URL.Path),
		slog.Int("status", status),
		slog.Int64("bytes", info.rec.bytes),
		slog.Duration("duration", elapsed),
	}
	if info.userID != "" {
		attrs = append(attrs, slog.String("user_id", info.userID))
	}
	if info.aborted {
		attrs = append(attrs, slog.Bool("aborted", true))
	}
	s.log.LogAttrs(r.Context(), level, "http request", attrs...)
}

// saneRequestID accepts 1 to 128 visible ASCII characters.
func saneRequestID(id string) bool {
	if id == "" || len(id) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x21 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

func newRequestID() string {
	if id, err := uuid.NewV7(); err == nil {
		return id.String()
	}
	return uuid.NewString()
}

// recorder remembers the status and size of the response it passes
// through, and closes the connection of a request whose body it answers
// unread (see closeIfBodyUnread).
type recorder struct {
	http.ResponseWriter
	status int // the final status sent; 0 until then
	bytes  int64
	body   *bodyWatch // nil: the request has no body to watch
}

func (w *recorder) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.closeIfBodyUnread()
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.closeIfBodyUnread()
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Flush sends buffered data to the client; SSE handlers call it per event.
func (w *recorder) Flush() {
	if w.status == 0 {
		w.closeIfBodyUnread()
		w.status = http.StatusOK
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// rootWriter returns the innermost ResponseWriter, so http.MaxBytesReader can
// tell the server to close the connection after an oversized body.
func rootWriter(w http.ResponseWriter) http.ResponseWriter {
	for {
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return w
		}
		w = u.Unwrap()
	}
}

// recoverer turns a panic outside the router into a 500 problem; the router's
// PanicHandler does the same for panics in routes.
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				s.recovered(w, r, v)
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// recovered handles a recovered panic value: log it with the stack and answer
// 500, or, when the response has started, abort the connection so the client
// sees a broken response rather than a truncated one that looks whole.
func (s *Server) recovered(w http.ResponseWriter, r *http.Request, v any) {
	info := infoFrom(r.Context())
	if v == http.ErrAbortHandler { // net/http compares the same way
		info.aborted = true
		panic(v)
	}
	s.logFor(r.Context()).Error("panic serving request",
		slog.Any("panic", v),
		slog.String("route", info.route),
		slog.String("stack", string(debug.Stack())))
	if info.rec != nil && info.rec.status != 0 {
		info.aborted = true
		panic(http.ErrAbortHandler)
	}
	s.writeProblem(w, r, internalProblem(r.Context()), nil)
}

const (
	challengeBearer       = "Bearer"
	challengeInvalidToken = `Bearer error="invalid_token"`
)

// authenticate resolves the request's bearer token within ctx. On failure it
// sets WWW-Authenticate and returns an unauthenticated Error; an Identity
// fault (such as the database being down) is returned as it is, not as a 401.
func (s *Server) authenticate(ctx context.Context, w http.ResponseWriter, r *http.Request) (ports.Principal, error) {
	if r.Header.Get("Authorization") == "" && s.d.SignIn != nil {
		if c, err := r.Cookie(sessionCookie); err == nil && c.Value != "" {
			return s.authenticateSession(ctx, w, r, c.Value)
		}
	}
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimLeft(token, " ")
	switch {
	case scheme == "":
		w.Header().Set("WWW-Authenticate", challengeBearer)
		return ports.Principal{}, &ports.Error{Kind: ports.KindUnauthenticated, Message: "missing bearer token"}
	case !strings.EqualFold(scheme, "Bearer") || token == "":
		w.Header().Set("WWW-Authenticate", challengeBearer)
		return ports.Principal{}, &ports.Error{Kind: ports.KindUnauthenticated, Message: "the Authorization header must be \"Bearer <token>\""}
	case !b64token(token):
		w.Header().Set("WWW-Authenticate", challengeInvalidToken)
		return ports.Principal{}, &ports.Error{Kind: ports.KindUnauthenticated, Message: "malformed bearer token"}
	}
	p, err := s.d.Identity.Authenticate(ctx, token)
	if err == nil && (p.UserID == "" || p.Session) { // a session's secret belongs in its cookie only
		err = &ports.Error{Kind: ports.KindUnauthenticated, Message: "invalid token"}
	}
	if err != nil {
		if ports.IsKind(err, ports.KindUnauthenticated) {
			w.Header().Set("WWW-Authenticate", challengeInvalidToken)
		}
		return ports.Principal{}, err
	}
	return p, nil
}

// authenticateSession resolves a console session cookie within ctx: it
// must hold a live session (not an API token), and a write must pass the
// CSRF check.
func (s *Server) authenticateSession(ctx context.Context, w http.ResponseWriter, r *http.Request, secret string) (ports.Principal, error) {
	refused := func() (ports.Principal, error) {
		w.Header().Set("WWW-Authenticate", challengeBearer)
		http.SetCookie(w, sessionCookieFor("", time.Time{}))
		return ports.Principal{}, &ports.Error{Kind: ports.KindUnauthenticated, Message: "your console session ended: sign in again"}
	}
	if !b64token(secret) {
		return refused()
	}
	p, err := s.d.Identity.Authenticate(ctx, secret)
	switch {
	case ports.IsKind(err, ports.KindUnauthenticated), err == nil && (p.UserID == "" || !p.Session):
		return refused()
	case err != nil:
		return ports.Principal{}, err
	}
	if err := s.checkCSRF(r, secret); err != nil {
		return ports.Principal{}, err
	}
	return p, nil
}

// b64token reports whether s has RFC 6750's b64token syntax, within a sane length.
func b64token(s string) bool {
	if len(s) > 4096 {
		return false
	}
	i := 0
	for ; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~+/", c) >= 0) {
			break
		}
	}
	if i == 0 {
		return false
	}
	for ; i < len(s); i++ {
		if s[i] != '=' {
			return false
		}
	}
	return true
}
