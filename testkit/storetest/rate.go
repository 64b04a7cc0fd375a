package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// rateStores is the rate store under test.
type rateStores struct {
	Rates ports.RateStore
}

// TestRates runs the contract of ports.RateStore. newStores is called by
// every subtest (subtests run in parallel) and may return stores over a
// shared database; each subtest uses keys of its own.
func TestRates(t *testing.T, newStores Factory) {
	runSuite(t, view(newStores, Stores.rate, needRate), []suiteCase[rateStores]{
		{"LimitReachedAtN", testRateLimit},
		{"Rollover", testRateRollover},
		{"KeysIsolated", testRateKeys},
		{"ClockBehind", testRateClockBehind},
		{"Invalid", testRateInvalid},
		{"RaceTake", testRateRace},
	})
}

// rateStart is the start of a minute window, in a non-UTC zone.
var rateStart = time.Date(2030, 5, 6, 7, 8, 0, 0, time.FixedZone("UTC+5:30", 5*3600+1800))

func take(t *testing.T, s rateStores, key string, window time.Duration, limit int, now time.Time) (bool, time.Duration) {
	t.Helper()
	ok, after, err := s.Rates.TakeRate(t.Context(), key, window, limit, now)
	if err != nil {
		t.Fatalf("TakeRate(%s, %v, %d, %v): %v", key, window, limit, now, err)
	}
	return ok, after
}

func testRateLimit(t *testing.T, s rateStores) {
	key := "rate:" + newID()
	for i := range 3 {
		now := rateStart.Add(time.Duration(i) * 10 * time.Second)
		ok, after := take(t, s, key, time.Minute, 3, now)
		if !ok {
			t.Fatalf("take %d of 3 refused", i+1)
		}
		if want := time.Minute - time.Duration(i)*10*time.Second; after != want {
			t.Errorf("take %d: retryAfter %v, want %v", i+1, after, want)
		}
	}
	for i := range 2 {
		now := rateStart.Add(45*time.Second + time.Duration(i)*time.Second)
		ok, after := take(t, s, key, time.Minute, 3, now)
		if ok {
			t.Fatalf("take %d over a limit of 3 allowed", 4+i)
		}
		if want := 15*time.Second - time.Duration(i)*time.Second; after != want {
			t.Errorf("take %d: retryAfter %v, want %v (the rest of the window)", 4+i, after, want)
		}
	}
}

func testRateRollover(t *testing.T, s rateStores) {
	key := "rate:" + newID()
	for i := range 2 {
		if ok, _ := take(t, s, key, time.Minute, 2, rateStart.Add(time.Duration(i)*time.Second)); !ok {
			t.Fatalf("take %d refused", i+1)
		}
	}
	if ok, _ := take(t, s, key, time.Minute, 2, rateStart.Add(59*time.Second)); ok {
		t.Fatal("take 3 of the first window allowed")
	}
	next := rateStart.Add(time.Minute + 500*time.Millisecond)
	for i := range 2 {
		ok, after := take(t, s, key, time.Minute, 2, next)
		if !ok {
			t.Fatalf("take %d of the next window refused", i+1)
		}
		if want := time.Minute - 500*time.Millisecond; after != want {
			t.Errorf("retryAfter %v in the next window, want %v", after, want)
		}
	}
	if ok, _ := take(t, s, key, time.Minute, 2, next); ok {
		t.Fatal("take 3 of the next window allowed")
	}
	// A window later than the next, not adjacent: counting starts again.
	if ok, _ := take(t, s, key, time.Minute, 2, rateStart.Add(time.Hour)); !ok {
		t.Fatal("first take an hour later refused")
	}
}

func testRateKeys(t *testing.T, s rateStores) {
	ann, bo := "rate:"+newID(), "rate:"+newID()
	take(t, s, ann, time.Minute, 1, rateStart)
	if ok, _ := take(t, s, ann, time.Minute, 1, rateStart); ok {
		t.Fatal("ann's second take allowed")
	}
	if ok, _ := take(t, s, bo, time.Minute, 1, rateStart); !ok {
		t.Fatal("bo's first take refused: keys share a count")
	}
}

// testRateClockBehind: a take stamped in an earlier window than the key's
// (a replica whose clock is behind) counts in the newer window, and never
// sets the window back.
func testRateClockBehind(t *testing.T, s rateStores) {
	key := "rate:" + newID()
	later := rateStart.Add(time.Minute)
	take(t, s, key, time.Minute, 2, later)
	if ok, _ := take(t, s, key, time.Minute, 2, rateStart.Add(59*time.Second)); !ok {
		t.Fatal("second take refused")
	}
	if ok, _ := take(t, s, key, time.Minute, 2, later); ok {
		t.Fatal("third take allowed: the late take reset the window")
	}
}

func testRateInvalid(t *testing.T, s rateStores) {
	for _, tc := range []struct {
		key    string
		window time.Duration
		limit  int
	}{{"", time.Minute, 1}, {"k", 0, 1}, {"k", -time.Second, 1}, {"k", time.Minute, 0}} {
		_, _, err := s.Rates.TakeRate(t.Context(), tc.key, tc.window, tc.limit, rateStart)
		if !errors.Is(err, ports.ErrInvalid) {
			t.Errorf("TakeRate(%q, %v, %d): %v, want invalid", tc.key, tc.window, tc.limit, err)
		}
	}
}

func testRateRace(t *testing.T, s rateStores) {
	key := "rate:" + newID()
	const n, k = 16, 5
	allowed := make([]bool, n)
	for i, err := range race(n, func(i int) error {
		var err error
		allowed[i], _, err = s.Rates.TakeRate(t.Context(), key, time.Minute, k, rateStart)
		return err
	}) {
		if err != nil {
			t.Errorf("TakeRate %d: %v", i, err)
		}
	}
	got := 0
	for _, ok := range allowed {
		if ok {
			got++
		}
	}
	if got != k {
		t.Errorf("%d of %d concurrent takes allowed, want %d", got, n, k)
	}
}
