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

func TestClockIsUTCToTheMicrosecond(t *testing.T) {
	t.Parallel()
	now := (system.Clock{}).Now()
	if now.Location().String() != "UTC" || now.Nanosecond()%1000 != 0 {
		t.Fatalf("Now() = %v: want UTC, whole microseconds", now)
	}
}
