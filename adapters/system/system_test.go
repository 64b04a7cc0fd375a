package system_test

import (
	"testing"

	"github.com/google/uuid"

	"github.com/devpilot/devpilot/adapters/system"
)

func TestIDsAreOrderedUUIDv7(t *testing.T) {
	t.Parallel()
	var ids system.IDs
	prev := ""
	for range 1000 {
		id := ids.NewID()
		u, err := uuid.Parse(id)
		if err != nil || u.Version() != 7 {
			t.Fatalf("NewID() = %q: not a UUIDv7 (%v)", id, err)
		}
		if id <= prev {
			t.Fatalf("NewID() = %q after %q: not increasing", id, prev)
		}
		prev = id
	}
}

func TestClockIsUTC(t *testing.T) {
	t.Parallel()
	if loc := (system.Clock{}).Now().Location(); loc.String() != "UTC" {
		t.Fatalf("Now() location = %v, want UTC", loc)
	}
}
