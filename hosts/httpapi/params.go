package httpapi

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// pageParams reads ?limit and ?cursor, with the paging rule of every list
// (ports.Page.Checked: 50 by default, 1 to 200).
func pageParams(r *http.Request) (ports.Page, error) {
	q := r.URL.Query()
	page := ports.Page{Cursor: q.Get("cursor")}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n == 0 {
			n = -1 // not a whole number from 1: refused with the rule's message
		}
		page.Limit = n
	}
	return page.Checked()
}

// listJSON is the shape of every list response.
type listJSON[T any] struct {
	Items      []T     `json:"items"`
	NextCursor *string `json:"next_cursor"`
}

// list wraps items and the next cursor ("" at the end, sent as null).
func list[T any](items []T, next string) listJSON[T] {
	out := listJSON[T]{Items: items}
	if out.Items == nil {
		out.Items = []T{}
	}
	if next != "" {
		out.NextCursor = &next
	}
	return out
}

// missing is the 400 for required fields a request left out.
func missing(fields ...string) error {
	errs := make([]ports.FieldError, len(fields))
	for i, f := range fields {
		errs[i] = ports.FieldError{Field: f, Reason: "required"}
	}
	return &ports.Error{Kind: ports.KindMalformed, Message: "missing required field: " + strings.Join(fields, ", "), Fields: errs}
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
