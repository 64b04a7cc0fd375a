package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/rs/cors"
)

// corsMaxAge is how long, in seconds, a browser may cache a preflight's
// answer (Chromium caps it at two hours).
const corsMaxAge = 600

// CheckOrigins checks Config.CORSOrigins: either the one entry "*", or
// serialized origins, scheme "http" or "https", a host and an optional port,
// lower case, with no path, query, fragment or user information
// ("https://app.example.com", "http://localhost:5173").
func CheckOrigins(origins []string) error {
	for i, o := range origins {
		if o == "*" {
			if len(origins) > 1 {
				return fmt.Errorf(`"*" stands for every origin and cannot be listed with others`)
			}
			continue
		}
		u, err := url.Parse(o)
		switch {
		case strings.Contains(o, "*"):
			return fmt.Errorf("origin %d %q: list each origin; patterns are not taken", i+1, o)
		case err != nil:
			return fmt.Errorf("origin %d %q: %v", i+1, o, err)
		case u.Scheme != "http" && u.Scheme != "https":
			return fmt.Errorf("origin %d %q: the scheme must be http or https", i+1, o)
		case u.Host == "" || u.User != nil || u.Opaque != "":
			return fmt.Errorf("origin %d %q: give scheme://host[:port]", i+1, o)
		case u.Path != "" || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(o, "?") || strings.HasSuffix(o, "#"):
			return fmt.Errorf("origin %d %q: an origin has no path, query or fragment (no trailing slash either)", i+1, o)
		case o != strings.ToLower(o):
			return fmt.Errorf("origin %d %q: write the origin in lower case, as browsers send it", i+1, o)
		}
	}
	return nil
}

// withCORS answers cross-origin requests from the configured origins, per
// the Fetch standard: a preflight (OPTIONS with Origin and
// Access-Control-Request-Method) is answered 204 with the methods and
// headers the API takes, and other requests carry
// Access-Control-Allow-Origin and the response headers a client may read.
// Listed origins are echoed, with Vary: Origin, and may send credentials;
// "*" allows every origin without credentials, so a credentialed response is
// never "*". Without origins next is returned as it is: no CORS headers.
func withCORS(origins []string, next http.Handler) http.Handler {
	if len(origins) == 0 {
		return next
	}
	everyOrigin := len(origins) == 1 && origins[0] == "*"
	return cors.New(cors.Options{
		AllowedOrigins: origins,
		AllowedMethods: []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete},
		AllowedHeaders: []string{"Authorization", "Content-Type", "Accept", "If-Match", "Last-Event-ID",
			headerIdempotencyKey, "X-Request-Id"},
		ExposedHeaders: []string{"X-Request-Id", "Retry-After", "ETag", "Location", "WWW-Authenticate",
			headerIdempotentReplayed, headerCallID, headerSessionID},
		AllowCredentials: !everyOrigin,
		MaxAge:           corsMaxAge,
	}).Handler(next)
}
