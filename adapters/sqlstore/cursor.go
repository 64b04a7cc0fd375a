package sqlstore

import (
	"encoding/base64"
	"strings"
	"time"

	"github.com/devpilot/devpilot/ports"
)

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
