package usage_test

import (
	"sync"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/memstore"
	"github.com/devpilot/devpilot/core/usage"
	"github.com/devpilot/devpilot/ports"
)

// Checks and charges of one organisation from many goroutines at once,
// each check reading the stores afresh (the clock moves past the cache's
// life), must not race (run with -race): the race TestSpecLongTranscript
// found, a spec stage's parallel calls charging while others checked.
func TestBudgetsConcurrentCheckAndCharge(t *testing.T) {
	store := memstore.New()
	clock := &steppingClock{now: time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC), step: usage.BudgetCacheTTL}
	b := usage.NewBudgets(store, store, clock, 1_000_000)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if err := b.Check(t.Context(), "org-1"); err != nil {
					t.Error(err)
					return
				}
				b.Charge("org-1", 3)
			}
		})
	}
	wg.Wait()
}

// steppingClock moves step forward at every reading.
type steppingClock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

func (c *steppingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(c.step)
	return c.now
}

var _ ports.Clock = (*steppingClock)(nil)
