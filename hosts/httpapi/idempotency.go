package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// The Idempotency-Key convention (docs/api.md, "Conventions").
const (
	headerIdempotencyKey      = "Idempotency-Key"
	headerIdempotentReplayed  = "Idempotent-Replayed"
	maxIdempotencyKeyLen      = 255
	idempotencyTTL            = 24 * time.Hour   // how long a response is replayed
	idempotencyLeaseMargin    = time.Minute      // a claim lapses this long after the route's timeout
	maxIdempotentResponseBody = 1 << 20          // larger response bodies are not kept
	idempotencyMemoryBody     = 1 << 20          // larger request bodies are spooled to a file
	idempotencySettleTimeout  = 10 * time.Second // bounds Complete and Release after the handler
)

// Codes of the problems the convention answers with.
const (
	codeIdempotencyKeyReused        = "idempotency_key_reused"
	codeIdempotencyKeyInUse         = "idempotency_key_in_use"
	codeIdempotentResponseTooLarge  = "idempotency_response_too_large"
	codeIdempotentReplayUnavailable = "idempotency_replay_unavailable"
)

// replayedHeaders are the response headers kept with a response and replayed.
var replayedHeaders = []string{"Content-Type", "Location", "ETag", "X-Content-Type-Options", headerCallID, headerSessionID}

// idempotent reports whether rt takes part in the Idempotency-Key convention:
// an authenticated write that does not stream, on a server with a store.
func (s *Server) idempotent(rt route) bool {
	if s.d.Idempotency == nil || rt.public || rt.streaming {
		return false
	}
	switch rt.method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// serveIdempotent serves a request of an idempotent route that carries an
// Idempotency-Key, after authentication: the first request with a key runs
// the handler and its response (below 500, and not 429) is kept for
// idempotencyTTL, its body sealed with Deps.IdempotencySeal (it may hold a
// secret shown once: a new API token, an invitation's or a webhook's
// secret); a retry with the same key and the same request gets that
// response again, marked Idempotent-Replayed; the same key with another
// request is 422, and while the first request runs, 409.
func (s *Server) serveIdempotent(w http.ResponseWriter, r *http.Request, rt route) {
	key, err := idempotencyKey(r.Header)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := ports.RequirePrincipal(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	hash, cleanup, err := hashRequest(r)
	defer cleanup()
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	now := time.Now()
	rec := ports.IdempotencyRecord{
		Owner:  ports.IdempotencyOwner{OrgID: p.OrgID, UserID: p.UserID},
		Key:    key,
		Method: r.Method, Route: rt.pattern, RequestHash: hash,
		CreatedAt: now, ExpiresAt: now.Add(rt.timeout + idempotencyLeaseMargin),
	}
	stored, claimed, err := s.d.Idempotency.Begin(r.Context(), rec)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !claimed {
		s.replay(w, r, rec, stored)
		return
	}

	cw := &captureWriter{ResponseWriter: w}
	settled := false
	defer func() {
		if !settled { // the handler panicked
			s.settle(r, rec, nil)
		}
	}()
	if err := rt.h(cw, r); err != nil {
		s.writeError(cw, r, err)
	}
	settled = true
	s.settle(r, rec, cw)
}

// idempotencyKey returns the request's one Idempotency-Key, or a malformed
// Error when it is repeated, empty, too long or not visible ASCII.
func idempotencyKey(h http.Header) (string, error) {
	values := h.Values(headerIdempotencyKey)
	if len(values) != 1 {
		return "", &ports.Error{Kind: ports.KindMalformed, Message: "send one Idempotency-Key header"}
	}
	key := values[0]
	bad := key == "" || len(key) > maxIdempotencyKeyLen
	for i := 0; i < len(key) && !bad; i++ {
		bad = key[i] < 0x21 || key[i] > 0x7e
	}
	if bad {
		return "", &ports.Error{Kind: ports.KindMalformed, Message: "the Idempotency-Key header must be 1 to 255 visible ASCII characters"}
	}
	return key, nil
}

// hashRequest returns the SHA-256 of r's method, path with query, and body,
// and puts an equal body back in r for the handler: in memory up to
// idempotencyMemoryBody, spooled to a temporary file beyond, which cleanup
// (never nil) removes. The body is bounded by the route's limit already; an
// error is payload_too_large or malformed.
func hashRequest(r *http.Request) (hash []byte, cleanup func(), err error) {
	cleanup = func() {}
	h := sha256.New()
	_, _ = io.WriteString(h, r.Method+" "+r.URL.RequestURI()+"\n")
	if r.Body == nil || r.Body == http.NoBody {
		return h.Sum(nil), cleanup, nil
	}
	var buf bytes.Buffer
	n, err := io.CopyN(io.MultiWriter(&buf, h), r.Body, idempotencyMemoryBody+1)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, cleanup, bodyError(err, "reading the request body")
	}
	if n <= idempotencyMemoryBody {
		r.Body = io.NopCloser(bytes.NewReader(buf.Bytes()))
		return h.Sum(nil), cleanup, nil
	}
	spool, err := os.CreateTemp("", "devpilot-body-*")
	if err != nil {
		return nil, cleanup, fmt.Errorf("spooling the request body: %w", err)
	}
	cleanup = func() {
		_ = spool.Close()
		_ = os.Remove(spool.Name())
	}
	if _, err := spool.Write(buf.Bytes()); err != nil {
		return nil, cleanup, fmt.Errorf("spooling the request body: %w", err)
	}
	if _, err := io.Copy(io.MultiWriter(spool, h), r.Body); err != nil {
		if _, ok := errors.AsType[*os.PathError](err); ok { // writing the file failed
			return nil, cleanup, fmt.Errorf("spooling the request body: %w", err)
		}
		return nil, cleanup, bodyError(err, "reading the request body")
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return nil, cleanup, fmt.Errorf("spooling the request body: %w", err)
	}
	r.Body = io.NopCloser(spool)
	return h.Sum(nil), cleanup, nil
}

// replay answers a request whose key the owner used before: with the kept
// response when the request is the same and completed, else with a problem.
func (s *Server) replay(w http.ResponseWriter, r *http.Request, rec, stored ports.IdempotencyRecord) {
	switch {
	case stored.Method != rec.Method || stored.Route != rec.Route || !bytes.Equal(stored.RequestHash, rec.RequestHash):
		s.writeError(w, r, &ports.Error{Kind: ports.KindInvalid, Code: codeIdempotencyKeyReused,
			Message: "this Idempotency-Key was used with a different request (method, path or body); use a new key for a new request"})
	case !stored.Completed:
		w.Header().Set("Retry-After", "1")
		s.writeError(w, r, &ports.Error{Kind: ports.KindConflict, Code: codeIdempotencyKeyInUse,
			Message: "a request with this Idempotency-Key is in progress; retry when it has finished"})
	case stored.Response.BodyOmitted:
		if loc := stored.Response.Header["Location"]; loc != "" {
			w.Header().Set("Location", loc)
		}
		s.writeError(w, r, &ports.Error{Kind: ports.KindConflict, Code: codeIdempotentResponseTooLarge,
			Message: fmt.Sprintf("the request with this Idempotency-Key was done (status %d), but its response was over %d bytes and was not kept; read the result instead",
				stored.Response.Status, maxIdempotentResponseBody)})
	default:
		resp := stored.Response
		body, err := s.openResponse(rec, resp)
		if err != nil {
			s.logFor(r.Context()).Error("opening a kept idempotent response", slog.Any("error", err))
			s.writeError(w, r, &ports.Error{Kind: ports.KindConflict, Code: codeIdempotentReplayUnavailable,
				Message: fmt.Sprintf("the request with this Idempotency-Key was done (status %d), but its kept response can no longer be read; read the result instead",
					resp.Status)})
			return
		}
		resp.Body = body
		h := w.Header()
		for name, value := range resp.Header {
			h.Set(name, value)
		}
		h.Set(headerIdempotentReplayed, "true")
		if bodyAllowed(resp.Status) {
			h.Set("Content-Length", strconv.Itoa(len(resp.Body)))
		}
		w.WriteHeader(resp.Status)
		if bodyAllowed(resp.Status) {
			_, _ = w.Write(resp.Body)
		}
	}
}

func bodyAllowed(status int) bool {
	return status != http.StatusNoContent && status != http.StatusNotModified && status >= 200
}

// settle records the outcome of the handler that held rec's claim: Complete
// with the response when it should be replayed, else Release, so a retry
// runs the handler again. It releases the claim when cw is nil (the handler
// panicked), the client went away before a response, the status is 5xx, or
// 429 (not done; retry later). Store failures are logged: the claim then
// lapses at its ExpiresAt.
func (s *Server) settle(r *http.Request, rec ports.IdempotencyRecord, cw *captureWriter) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), idempotencySettleTimeout)
	defer cancel()
	status := 0
	if cw != nil {
		status = cw.status
		if status == 0 && r.Context().Err() == nil {
			status = http.StatusOK // what net/http sends for a handler that wrote nothing
		}
	}
	if status == 0 || status >= 500 || status == http.StatusTooManyRequests {
		if err := s.d.Idempotency.Release(ctx, rec.Owner, rec.Key); err != nil {
			s.logFor(r.Context()).Error("releasing an idempotency key", slog.Any("error", err))
		}
		return
	}
	resp := ports.IdempotentResponse{Status: status, Header: cw.header, Body: cw.body.Bytes(), BodyOmitted: cw.omitted}
	sealed, err := s.sealResponse(rec, resp)
	if err != nil { // never keep the body in plain text: forget the key instead
		s.logFor(r.Context()).Error("sealing an idempotent response", slog.Any("error", err))
		if err := s.d.Idempotency.Release(ctx, rec.Owner, rec.Key); err != nil {
			s.logFor(r.Context()).Error("releasing an idempotency key", slog.Any("error", err))
		}
		return
	}
	resp.Body = sealed
	if err := s.d.Idempotency.Complete(ctx, rec.Owner, rec.Key, resp, rec.CreatedAt.Add(idempotencyTTL)); err != nil {
		s.logFor(r.Context()).Error("completing an idempotency key", slog.Any("error", err))
	}
}

// sealResponse returns resp's body sealed with Deps.IdempotencySeal and
// bound to rec (responseAAD), or nil when the body is empty or omitted.
func (s *Server) sealResponse(rec ports.IdempotencyRecord, resp ports.IdempotentResponse) ([]byte, error) {
	if resp.BodyOmitted || len(resp.Body) == 0 {
		return nil, nil
	}
	sealed, err := s.d.IdempotencySeal.Seal(resp.Body, responseAAD(rec, resp.Status))
	if err != nil {
		return nil, err
	}
	return []byte(sealed), nil
}

// openResponse returns the body sealResponse kept for stored, read by the
// request rec that sent the same key: an internal Error when it does not
// open (another record's body, a key no longer configured, a body kept in
// plain text before bodies were sealed).
func (s *Server) openResponse(rec ports.IdempotencyRecord, stored ports.IdempotentResponse) ([]byte, error) {
	if len(stored.Body) == 0 {
		return nil, nil
	}
	return s.d.IdempotencySeal.Open(string(stored.Body), responseAAD(rec, stored.Status))
}

// responseAAD binds a kept response body to its record: the owner, the key,
// the request (method, route and hash) and the status, so that a body
// copied into another record, or under another status, does not open.
func responseAAD(rec ports.IdempotencyRecord, status int) []byte {
	var b bytes.Buffer
	for _, part := range []string{"devpilot idempotent response v1", rec.Owner.OrgID, rec.Owner.UserID, rec.Key,
		rec.Method, rec.Route, hex.EncodeToString(rec.RequestHash), strconv.Itoa(status)} {
		b.WriteString(strconv.Itoa(len(part)))
		b.WriteByte(':')
		b.WriteString(part)
	}
	return b.Bytes()
}

// captureWriter passes a response through and keeps a copy of it: the
// status, the replayedHeaders as they were when the status was sent, and the
// body up to maxIdempotentResponseBody (beyond, none of it).
type captureWriter struct {
	http.ResponseWriter
	status  int
	header  map[string]string
	body    bytes.Buffer
	omitted bool
}

// WriteHeader keeps the final status and the replayed headers, and sends them.
func (w *captureWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.sent(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write sends b and keeps what was sent, unless the body outgrew
// maxIdempotentResponseBody.
func (w *captureWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.sent(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(b)
	switch {
	case w.omitted:
	case w.body.Len()+n > maxIdempotentResponseBody:
		w.omitted = true
		w.body = bytes.Buffer{}
	default:
		w.body.Write(b[:n])
	}
	return n, err
}

func (w *captureWriter) sent(code int) {
	w.status = code
	for _, name := range replayedHeaders {
		if v := w.Header().Get(name); v != "" {
			if w.header == nil {
				w.header = map[string]string{}
			}
			w.header[name] = v
		}
	}
}

// Unwrap lets http.ResponseController and rootWriter reach the writer below.
func (w *captureWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
