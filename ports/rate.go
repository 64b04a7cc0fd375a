package ports

//go:generate go tool mockgen -typed -destination ../testkit/mocks/rate.go -package mocks . RateStore

import (
	"context"
	"time"
)

// RateStore counts requests per key in fixed windows of time, kept where
// every replica of the service sees the same counts, so that a rate limit
// holds across replicas.
type RateStore interface {
	// TakeRate counts one request for key in the window of length window
	// that holds now (windows start at multiples of window since the zero
	// time, so every caller agrees on them) and reports whether it is within
	// limit: the first limit requests of a window are allowed, the rest are
	// not. retryAfter is the time from now to the window's end, when the
	// count starts again. Concurrent takes are all counted: of n at once
	// with room for k, exactly k are allowed. Errors: invalid when key is
	// empty, window is not positive or limit is below 1; the store's own
	// (unavailable, internal).
	TakeRate(ctx context.Context, key string, window time.Duration, limit int, now time.Time) (allowed bool, retryAfter time.Duration, err error)
}

// CheckRateTake is the rule every RateStore applies to a take: invalid
// when key is empty, window is not positive or limit is below 1.
func CheckRateTake(key string, window time.Duration, limit int) error {
	var fields []FieldError
	if key == "" {
		fields = append(fields, FieldError{Field: "key", Reason: "required"})
	}
	if window <= 0 {
		fields = append(fields, FieldError{Field: "window", Reason: "must be positive"})
	}
	if limit < 1 {
		fields = append(fields, FieldError{Field: "limit", Reason: "must be at least 1"})
	}
	if fields != nil {
		return Invalid("invalid rate take", fields...)
	}
	return nil
}

// RateWindow returns the start of the window of length window that holds
// now, and the time from now to its end.
func RateWindow(window time.Duration, now time.Time) (start time.Time, left time.Duration) {
	start = now.Truncate(window)
	return start, start.Add(window).Sub(now)
}
