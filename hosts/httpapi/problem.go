package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"

	"github.com/devpilot/devpilot/ports"
)

// ProblemTypeBase prefixes every problem type URI.
const ProblemTypeBase = "https://devpilot.dev/problems/"

// Transport-only kinds: no core ever returns them. kindMethodNotAllowed is
// the router's 405; kindRequestTimeout is a request body that did not
// arrive within its deadline (408, and the connection is closed).
const (
	kindMethodNotAllowed ports.Kind = "method_not_allowed"
	kindRequestTimeout   ports.Kind = "request_timeout"
)

type problemClass struct {
	status int
	title  string
	slug   string
}

// problemClasses is the one table from error kind to HTTP status.
var problemClasses = map[ports.Kind]problemClass{
	ports.KindMalformed:            {http.StatusBadRequest, "Malformed Request", "malformed"},
	ports.KindInvalid:              {http.StatusUnprocessableEntity, "Invalid Request", "invalid"},
	ports.KindUnauthenticated:      {http.StatusUnauthorized, "Unauthenticated", "unauthenticated"},
	ports.KindForbidden:            {http.StatusForbidden, "Forbidden", "forbidden"},
	ports.KindNotFound:             {http.StatusNotFound, "Not Found", "not-found"},
	kindMethodNotAllowed:           {http.StatusMethodNotAllowed, "Method Not Allowed", "method-not-allowed"},
	kindRequestTimeout:             {http.StatusRequestTimeout, "Request Timeout", "request-timeout"},
	ports.KindConflict:             {http.StatusConflict, "Conflict", "conflict"},
	ports.KindGone:                 {http.StatusGone, "Gone", "gone"},
	ports.KindPreconditionFailed:   {http.StatusPreconditionFailed, "Precondition Failed", "precondition-failed"},
	ports.KindPayloadTooLarge:      {http.StatusRequestEntityTooLarge, "Payload Too Large", "payload-too-large"},
	ports.KindUnsupportedMedia:     {http.StatusUnsupportedMediaType, "Unsupported Media Type", "unsupported-media-type"},
	ports.KindPreconditionRequired: {http.StatusPreconditionRequired, "Precondition Required", "precondition-required"},
	ports.KindRateLimited:          {http.StatusTooManyRequests, "Too Many Requests", "rate-limited"},
	ports.KindUpstream:             {http.StatusBadGateway, "Upstream Failure", "upstream"},
	ports.KindUnavailable:          {http.StatusServiceUnavailable, "Service Unavailable", "unavailable"},
	ports.KindTimeout:              {http.StatusGatewayTimeout, "Timeout", "timeout"},
	ports.KindInternal:             {http.StatusInternalServerError, "Internal Error", "internal"},
}

// maxProblemErrors bounds a problem's errors[]: the detail says how many
// more were left out.
const maxProblemErrors = 50

// problem is an RFC 9457 problem details body.
type problem struct {
	Type      string             `json:"type"`
	Title     string             `json:"title"`
	Status    int                `json:"status"`
	Detail    string             `json:"detail"`
	Code      string             `json:"code"`
	RequestID string             `json:"request_id,omitempty"`
	Errors    []ports.FieldError `json:"errors,omitempty"`
}

func newProblem(ctx context.Context, kind ports.Kind, code, detail string) problem {
	c := problemClasses[kind]
	if detail == "" {
		detail = c.title
	}
	return problem{
		Type:      ProblemTypeBase + c.slug,
		Title:     c.title,
		Status:    c.status,
		Detail:    detail,
		Code:      code,
		RequestID: requestID(ctx),
	}
}

// publicProblem is the problem for pe: what ports.Public tells of it. An
// Error without a message is described by its kind's title.
func publicProblem(ctx context.Context, pe *ports.Error) problem {
	pub := ports.Public(pe)
	detail := pub.Message
	if pe.Message == "" && pub.Kind != ports.KindInternal {
		detail = ""
	}
	return newProblem(ctx, pub.Kind, pub.Code, detail)
}

func internalProblem(ctx context.Context) problem {
	return publicProblem(ctx, ports.ErrInternal)
}

// writeError answers a failed request with a problem response. It is the only
// place that turns errors into statuses. A client that went away gets nothing
// (logged at debug as 499); a response already started is left alone.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	ctx := r.Context()
	log := s.logFor(ctx)
	info := infoFrom(ctx)
	// A body that ran out of time fails its read, and the connection's
	// failed read cancels ctx too: that is no client going away.
	if ctx.Err() != nil && !errors.Is(context.Cause(ctx), errRequestTimeout) && !info.bodyTimedOut {
		info.clientGone = true
		log.Debug("request canceled by the client", slog.Any("error", err))
		return
	}

	pe := classify(ctx, err)
	if info.bodyTimedOut { // whatever the handler made of the failed read
		pe = &ports.Error{Kind: kindRequestTimeout, Err: err,
			Message: "the request body did not arrive in time; the connection is closed"}
		if r.ProtoMajor == 1 {
			w.Header().Set("Connection", "close")
		}
	}
	started := info.rec != nil && info.rec.status != 0
	attrs := []any{slog.String("route", info.route), slog.String("kind", string(pe.Kind)), slog.Any("error", err)}
	switch {
	case pe.Kind == ports.KindInternal:
		log.Error("internal error", attrs...)
	case started:
		log.Warn("error after the response started", attrs...)
	case problemClasses[pe.Kind].status >= 500:
		log.Warn("request failed", attrs...)
	default:
		log.Debug("request rejected", attrs...)
	}
	if started {
		return
	}

	p := publicProblem(ctx, pe)
	if pe.Kind != ports.KindInternal {
		p.Errors = pe.Fields
	}
	if n := len(p.Errors); n > maxProblemErrors {
		p.Errors = p.Errors[:maxProblemErrors]
		p.Detail += fmt.Sprintf(" (errors lists the first %d of %d; the rest are omitted)", maxProblemErrors, n)
	}
	s.writeProblem(w, r, p, pe)
}

// classify returns the Error that decides the response: err's own, the
// request timeout when the handler ran out of time, or internal.
func classify(ctx context.Context, err error) *ports.Error {
	pe, ok := ports.AsError(err)
	timedOut := ctx.Err() != nil && errors.Is(context.Cause(ctx), errRequestTimeout)
	if timedOut && (!ok || pe.Kind == ports.KindInternal || errors.Is(err, context.DeadlineExceeded)) {
		return &ports.Error{Kind: ports.KindTimeout, Message: "the request took too long", Err: err}
	}
	if !ok {
		return &ports.Error{Kind: ports.KindInternal, Err: err}
	}
	if _, known := problemClasses[pe.Kind]; !known {
		return &ports.Error{Kind: ports.KindInternal, Err: err}
	}
	return pe
}

// writeProblem writes p; pe, when given, supplies Retry-After.
func (s *Server) writeProblem(w http.ResponseWriter, r *http.Request, p problem, pe *ports.Error) {
	h := w.Header()
	h.Del("Content-Length")
	if p.Status == http.StatusUnauthorized && h.Get("WWW-Authenticate") == "" {
		h.Set("WWW-Authenticate", challengeBearer)
	}
	if p.Status == http.StatusTooManyRequests || p.Status == http.StatusServiceUnavailable {
		secs := 0.0
		if pe != nil {
			secs = math.Ceil(pe.RetryAfter.Seconds())
		}
		if secs < 1 && p.Status == http.StatusTooManyRequests {
			secs = 1
		}
		if secs >= 1 {
			h.Set("Retry-After", strconv.FormatFloat(secs, 'f', 0, 64))
		}
	}
	body, err := marshalJSON(p)
	if err != nil { // cannot happen: problem holds only strings and ints
		s.logFor(r.Context()).Error("encoding a problem", slog.Any("error", err))
		return
	}
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(p.Status)
	_, _ = w.Write(body)
}
