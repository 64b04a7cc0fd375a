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

// IsID reports whether s has the form of a devpilot id: a UUID string
// (8-4-4-4-12 hexadecimal digits, either case). Stores compare ids as text,
// so a core refuses anything else as not found before asking them.
func IsID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}
