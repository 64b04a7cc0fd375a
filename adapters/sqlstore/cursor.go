package sqlstore

import (
	"encoding/base64"
	"strings"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// Keyset page limits: ports.Page.Limit defaults to and is capped at these.
const (
	defaultPageLimit = 50
	maxPageLimit     = 200
)

// pageLimit returns how many rows the page asks for: defaultPageLimit when
// Limit is not positive, at most maxPageLimit.
func pageLimit(page ports.Page) int {
	if page.Limit <= 0 {
		return defaultPageLimit
	}
	return min(page.Limit, maxPageLimit)
}

// encodeCursor returns the opaque cursor of a keyset page that continues
// after the row with the time and id given: base64url of "TIME ID", TIME in
// timestampLayout, so it compares exactly with the stored column.
func encodeCursor(at time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(at.UTC().Format(timestampLayout) + " " + id))
}

// decodeCursor reads a cursor from encodeCursor; a malformed one is an
// invalid error naming the field "cursor".
func decodeCursor(cursor string) (timestamp, string, error) {
	malformed := ports.Invalid("malformed cursor", ports.FieldError{Field: "cursor", Reason: "malformed"})
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return timestamp{}, "", malformed
	}
	at, id, ok := strings.Cut(string(raw), " ")
	if !ok || id == "" {
		return timestamp{}, "", malformed
	}
	var ts timestamp
	if err := ts.parse(at); err != nil {
		return timestamp{}, "", malformed
	}
	return ts, id, nil
}
