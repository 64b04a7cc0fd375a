package ports

import "time"

//go:generate go tool mockgen -typed -destination ../testkit/mocks/clock.go -package mocks . Clock,IDs

// Clock tells the time, so cores and stores can be tested deterministically.
type Clock interface {
	// Now returns the current time in UTC.
	Now() time.Time
}

// IDs generates identifiers: UUIDv7 strings in production.
type IDs interface {
	// NewID returns a new unique id.
	NewID() string
}
