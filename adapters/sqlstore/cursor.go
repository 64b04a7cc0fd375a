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

// encodeKeyCursor returns the opaque cursor of a keyset page that continues
// after the row with the sort key and id given: each base64url-encoded,
// joined by a dot, so any bytes survive in either.
func encodeKeyCursor(key, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(key)) + "." + base64.RawURLEncoding.EncodeToString([]byte(id))
}

// decodeKeyCursor reads a cursor from encodeKeyCursor; a malformed one, or
// one without an id, is the error malformedCursor returns.
func decodeKeyCursor(cursor string) (key, id string, err error) {
	k, i, ok := strings.Cut(cursor, ".")
	if !ok {
		return "", "", malformedCursor()
	}
	rawKey, errKey := base64.RawURLEncoding.DecodeString(k)
	rawID, errID := base64.RawURLEncoding.DecodeString(i)
	if errKey != nil || errID != nil || len(rawID) == 0 {
		return "", "", malformedCursor()
	}
	return string(rawKey), string(rawID), nil
}

// malformedCursor is the invalid error, naming the field "cursor", for a
// cursor no list returned.
func malformedCursor() error {
	return ports.Invalid("malformed cursor", ports.FieldError{Field: "cursor", Reason: "malformed"})
}

// encodeCursor is encodeKeyCursor for a page ordered by a time: the key is
// the time in timestampLayout, so it compares exactly with the stored column.
func encodeCursor(at time.Time, id string) string {
	return encodeKeyCursor(at.UTC().Format(timestampLayout), id)
}

// decodeCursor reads a cursor from encodeCursor; a malformed one is the
// error malformedCursor returns.
func decodeCursor(cursor string) (timestamp, string, error) {
	key, id, err := decodeKeyCursor(cursor)
	if err != nil {
		return timestamp{}, "", err
	}
	var ts timestamp
	if err := ts.parse(key); err != nil {
		return timestamp{}, "", malformedCursor()
	}
	return ts, id, nil
}
