// Package system implements the Clock and IDs ports with the real clock and
// UUIDv7 identifiers.
package system

import (
	"time"

	"github.com/google/uuid"

	"github.com/devpilot/devpilot/ports"
)

// Clock is the wall clock.
type Clock struct{}

// Now returns the current time in UTC, to the microsecond: what both
// databases keep, so a time read back equals the one written.
func (Clock) Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// IDs generates UUIDv7 strings: unique, and sortable by creation time.
type IDs struct{}

// NewID returns a new UUIDv7. It panics only if the system's random source
// fails, which leaves nothing sensible to do.
func (IDs) NewID() string { return uuid.Must(uuid.NewV7()).String() }

var (
	_ ports.Clock = Clock{}
	_ ports.IDs   = IDs{}
)
