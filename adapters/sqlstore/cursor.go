package sqlstore

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/devpilot/devpilot/ports"
)

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

// timeKey is the cursor key of a time-ordered row: the time in
// timestampLayout, so it compares exactly with the stored column.
func timeKey(at time.Time) string { return at.UTC().Format(timestampLayout) }

// keyset says how a list pages: by (key, id) column expressions, descending
// or ascending; whether the key is a timestamp; and the cursor key and id of
// a row.
type keyset[R any] struct {
	key, id string
	desc    bool
	byTime  bool
	last    func(R) (key, id string)
}

// listPage runs query (a SELECT … WHERE …) with args as one page of a keyset
// list: it adds the cursor's condition, the order and the limit, and returns
// the page's rows and the next page's cursor ("" at the end). A malformed
// cursor is the error malformedCursor returns.
func listPage[R any](ctx context.Context, c conn, query string, args []any, page ports.Page, ks keyset[R]) ([]R, string, error) {
	limit := page.Size()
	op, dir := ">", ""
	if ks.desc {
		op, dir = "<", " DESC"
	}
	if page.Cursor != "" {
		key, id, err := decodeKeyCursor(page.Cursor)
		if err != nil {
			return nil, "", err
		}
		var keyArg any = key
		if ks.byTime {
			var ts timestamp
			if err := ts.parse(key); err != nil {
				return nil, "", malformedCursor()
			}
			keyArg = ts
		}
		query += fmt.Sprintf(" AND (%s, %s) %s (?, ?)", ks.key, ks.id, op)
		args = append(args, keyArg, id)
	}
	query += fmt.Sprintf(" ORDER BY %s%s, %s%s LIMIT ?", ks.key, dir, ks.id, dir)
	args = append(args, limit+1)
	var rows []R
	if err := c.list(ctx, &rows, query, args...); err != nil {
		return nil, "", err
	}
	if len(rows) <= limit {
		return rows, "", nil
	}
	rows = rows[:limit]
	return rows, encodeKeyCursor(ks.last(rows[limit-1])), nil
}
