package groupcommit_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/devpilot/devpilot/core/internal/groupcommit"
)

// recorder is a WriteFunc that records its batches and can be held until
// released, so tests can make a batch form behind it.
type recorder struct {
	mu      sync.Mutex
	batches [][]int
	fail    func(items []int) error
	hold    chan struct{} // when set, the first write waits for it
	started chan struct{} // when set, closed as the held write starts
}

func (r *recorder) write(_ context.Context, items []int) ([]int, error) {
	r.mu.Lock()
	r.batches = append(r.batches, slices.Clone(items))
	hold := r.hold
	r.hold = nil
	r.mu.Unlock()
	if hold != nil {
		if r.started != nil {
			close(r.started)
		}
		<-hold
	}
	if r.fail != nil {
		if err := r.fail(items); err != nil {
			return nil, err
		}
	}
	out := make([]int, len(items))
	for i, v := range items {
		out[i] = v * 10
	}
	return out, nil
}

// gather runs Do for each item behind a held first write (item 0), and
// returns the results once all are done.
func gather(t *testing.T, r *recorder, items []int) ([]int, []error) {
	t.Helper()
	c := groupcommit.New(groupcommit.Config{Writers: 1}, nil, r.write)
	joined := make(chan int, 100)
	release := make(chan struct{})
	r.hold, r.started = release, make(chan struct{})
	results := make([]int, len(items)+1)
	errs := make([]error, len(items)+1)
	var wg sync.WaitGroup
	wg.Go(func() { results[0], errs[0] = c.Do(t.Context(), 0) })
	<-r.started // item 0 is being written: the others form the next batch
	c.OnJoined(func(n int) { joined <- n })
	for i, v := range items {
		wg.Go(func() { results[i+1], errs[i+1] = c.Do(t.Context(), v) })
	}
	for n := range joined {
		if n == len(items) {
			break
		}
	}
	close(release)
	wg.Wait()
	return results, errs
}

func TestConcurrentItemsShareOneWrite(t *testing.T) {
	r := &recorder{}
	results, errs := gather(t, r, []int{1, 2, 3, 4})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("item %d: %v", i, err)
		}
	}
	want := []int{0, 10, 20, 30, 40}
	if !slices.Equal(results, want) {
		t.Fatalf("results %v, want %v", results, want)
	}
	if len(r.batches) != 2 || len(r.batches[1]) != 4 {
		t.Fatalf("batches %v, want [[0] [4 items]]", r.batches)
	}
}

func TestAFailedBatchIsRetriedItemByItem(t *testing.T) {
	bad := errors.New("item 3 is bad")
	r := &recorder{fail: func(items []int) error {
		if slices.Contains(items, 3) {
			return bad
		}
		return nil
	}}
	results, errs := gather(t, r, []int{1, 2, 3})
	if !errors.Is(errs[3], bad) {
		t.Fatalf("item 3: %v, want its own error", errs[3])
	}
	for _, i := range []int{0, 1, 2} {
		if errs[i] != nil || results[i] != i*10 {
			t.Fatalf("item %d: %d, %v", i, results[i], errs[i])
		}
	}
}

func TestMaxItemsClosesABatch(t *testing.T) {
	var mu sync.Mutex
	var sizes []int
	c := groupcommit.New(groupcommit.Config{MaxItems: 2, Writers: 1}, nil, func(_ context.Context, items []int) ([]int, error) {
		mu.Lock()
		sizes = append(sizes, len(items))
		mu.Unlock()
		return items, nil
	})
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if _, err := c.Do(t.Context(), i); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	total := 0
	for _, n := range sizes {
		if n > 2 {
			t.Fatalf("a batch of %d items, over MaxItems 2", n)
		}
		total += n
	}
	if total != 20 {
		t.Fatalf("%d items written, want 20", total)
	}
}

func TestAWriteReturningTooFewResultsFails(t *testing.T) {
	c := groupcommit.New(groupcommit.Config{}, nil, func(context.Context, []int) ([]int, error) { return nil, nil })
	if _, err := c.Do(t.Context(), 1); err == nil {
		t.Fatal("no error for a write without results")
	}
}

func TestACallerWhoseContextEndsLeaves(t *testing.T) {
	r := &recorder{}
	c := groupcommit.New(groupcommit.Config{Writers: 1}, nil, r.write)
	release := make(chan struct{})
	r.hold, r.started = release, make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = c.Do(t.Context(), 0) // holds the only writer slot
	}()
	<-r.started
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := c.Do(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("Do with an ended context: %v", err)
	}
	close(release)
	<-done
	if got, err := c.Do(t.Context(), 2); err != nil || got != 20 {
		t.Fatalf("Do after: %d, %v", got, err)
	}
	for _, b := range r.batches {
		if slices.Contains(b, 1) {
			t.Fatalf("the item whose caller left was written: %v", r.batches)
		}
	}
}
