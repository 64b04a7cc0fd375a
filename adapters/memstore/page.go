package memstore

import (
	"cmp"
	"encoding/base64"
	"slices"
	"strings"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// timeKeyLayout formats times so that their strings sort as the times do.
const timeKeyLayout = "2006-01-02T15:04:05.000000000Z"

// timeKey is the sort key of a time-ordered record.
func timeKey(t time.Time) string { return t.UTC().Format(timeKeyLayout) }

func malformedCursor() error {
	return ports.Invalid("malformed cursor", ports.FieldError{Field: "cursor", Reason: "malformed"})
}

// keyset says how a list pages: by the (key, id) of each record, descending
// or ascending, the key being a timeKey when byTime.
type keyset[R any] struct {
	desc   bool
	byTime bool
	key    func(R) (key, id string)
}

// paginate sorts items by the keyset and returns the page after page.Cursor
// and the next page's cursor ("" at the end); invalid for a malformed cursor.
func paginate[R any](items []R, page ports.Page, ks keyset[R]) ([]R, string, error) {
	limit := page.Size()
	compare := func(ak, ai, bk, bi string) int {
		c := cmp.Or(strings.Compare(ak, bk), strings.Compare(ai, bi))
		if ks.desc {
			return -c
		}
		return c
	}
	slices.SortFunc(items, func(a, b R) int {
		ak, ai := ks.key(a)
		bk, bi := ks.key(b)
		return compare(ak, ai, bk, bi)
	})
	if page.Cursor != "" {
		ck, ci, err := decodeCursor(page.Cursor, ks.byTime)
		if err != nil {
			return nil, "", err
		}
		i := 0
		for i < len(items) {
			k, id := ks.key(items[i])
			if compare(k, id, ck, ci) > 0 {
				break
			}
			i++
		}
		items = items[i:]
	}
	if len(items) <= limit {
		return items, "", nil
	}
	items = items[:limit]
	k, id := ks.key(items[limit-1])
	return items, base64.RawURLEncoding.EncodeToString([]byte(k)) + "." + base64.RawURLEncoding.EncodeToString([]byte(id)), nil
}

// decodeCursor reads a cursor paginate returned.
func decodeCursor(cursor string, byTime bool) (key, id string, err error) {
	k, i, ok := strings.Cut(cursor, ".")
	if !ok {
		return "", "", malformedCursor()
	}
	rawKey, errKey := base64.RawURLEncoding.DecodeString(k)
	rawID, errID := base64.RawURLEncoding.DecodeString(i)
	if errKey != nil || errID != nil || len(rawID) == 0 {
		return "", "", malformedCursor()
	}
	if byTime {
		if _, err := time.Parse(timeKeyLayout, string(rawKey)); err != nil {
			return "", "", malformedCursor()
		}
	}
	return string(rawKey), string(rawID), nil
}
