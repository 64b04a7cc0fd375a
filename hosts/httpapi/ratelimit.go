package httpapi

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// rateKeyPrefix begins the rate key of a user: one bucket per user holds
// every costly route, since the limit guards one budget (the model and
// provider calls, and the replicas' capacity) whichever route spends it.
const rateKeyPrefix = "rate:"

// costly marks a route that calls a model or provider, or a public route
// that must not be open to guessing (accepting an invitation): after
// authentication, each request takes one from the caller's rate bucket
// (Config.RateLimit per Config.RateWindow), before any body is read.
var costly routeOption = func(rt *route) { rt.costly = true }

// limited wraps h with the check costly makes, for a handler dispatched
// inside a route that is not costly as a whole (content generation).
func (s *Server) limited(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		if err := s.takeRate(r); err != nil {
			return err
		}
		return h(w, r)
	}
}

// takeRate takes one from the caller's bucket (the user's; on a public
// route, the one of the address the request came from): nil when within the limit,
// when no limit is set, or when the store fails (a failing counter must not
// stop the service: the request goes through, logged and counted in
// devpilot_http_rate_limit_errors_total); rate_limited with RetryAfter the
// rest of the window when over.
func (s *Server) takeRate(r *http.Request) error {
	if s.d.Rates == nil || s.cfg.RateLimit <= 0 {
		return nil
	}
	key := rateKeyPrefix + "addr:" + clientHost(r)
	if p, ok := ports.PrincipalFrom(r.Context()); ok {
		key = rateKeyPrefix + p.UserID
	}
	allowed, after, err := s.d.Rates.TakeRate(r.Context(), key, s.cfg.RateWindow, s.cfg.RateLimit, time.Now())
	if err != nil {
		s.metrics.rateErrors.Inc()
		s.logFor(r.Context()).Warn("rate limit not checked: the counter failed, letting the request through",
			slog.String("route", infoFrom(r.Context()).route), slog.Any("error", err))
		return nil
	}
	if allowed {
		return nil
	}
	return &ports.Error{Kind: ports.KindRateLimited, RetryAfter: max(after, time.Second),
		Message: fmt.Sprintf("over the rate limit of %d costly requests per %v; retry after the seconds in Retry-After",
			s.cfg.RateLimit, s.cfg.RateWindow)}
}

// clientHost is the host of the address r came from (the last proxy's, when
// there is one).
func clientHost(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
