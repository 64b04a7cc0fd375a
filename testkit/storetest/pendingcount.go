package storetest

import (
	"testing"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// testCountPendingConfirmations checks the count over every organisation of
// the confirmations still waiting: pending and expiring after now. Its
// confirmations expire centuries after those of the other subtests sharing
// the store, so that counting at its own times sees only its own.
func testCountPendingConfirmations(t *testing.T, s assistantStores) {
	ctx := t.Context()
	now := time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC)
	count := func(what string, at time.Time, want int64) {
		t.Helper()
		n, err := s.Confirmations.CountPendingConfirmations(ctx, at)
		if err != nil {
			t.Fatalf("CountPendingConfirmations %s: %v", what, err)
		}
		if n != want {
			t.Errorf("CountPendingConfirmations %s = %d, want %d", what, n, want)
		}
	}
	count("before any is created", now, 0)

	owner, cs := newChat(t, s)
	confirmation := func(cs ports.ChatSession, expires time.Time) ports.Confirmation {
		c := newConfirmation(cs)
		c.CreatedAt, c.ExpiresAt = now.Add(-time.Hour), expires
		return mustCreateConfirmation(t, s, c)
	}
	confirmation(cs, now.Add(time.Millisecond))
	confirmation(cs, now.Add(time.Hour))
	later := confirmation(cs, now.Add(24*time.Hour))
	confirmation(cs, now)                        // expires at now: not waiting any more
	confirmation(cs, now.Add(-time.Millisecond)) // expired, though not marked so
	approved := confirmation(cs, now.Add(time.Hour))
	mustDecide(t, s, owner, approved.ID, approval(owner.UserID, now.Add(-time.Minute)))
	rejected := confirmation(cs, now.Add(time.Hour))
	reject := approval(owner.UserID, now.Add(-time.Minute))
	reject.Status = ports.ConfirmationRejected
	mustDecide(t, s, owner, rejected.ID, reject)
	_, other := newChat(t, s) // another organisation's counts too
	confirmation(other, now.Add(time.Hour))

	count("at now", now, 4)
	count("half an hour later", now.Add(30*time.Minute), 3)
	mustDecide(t, s, owner, later.ID, approval(owner.UserID, now))
	count("after one more is approved", now, 3)
	count("a day later", now.Add(24*time.Hour), 0)
}
