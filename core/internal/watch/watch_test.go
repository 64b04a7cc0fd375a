package watch_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devpilot/devpilot/core/internal/watch"
)

func TestPollEmitsEachChange(t *testing.T) {
	states := []int{1, 1, 2, 2, 2, 3}
	var reads atomic.Int32
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var got []int
	err := watch.Poll(ctx, time.Millisecond,
		func(context.Context) (int, error) {
			i := int(reads.Add(1)) - 1
			if i >= len(states) {
				cancel()
				return states[len(states)-1], nil
			}
			return states[i], nil
		},
		func(a, b int) bool { return a != b },
		func(v int) error { got = append(got, v); return nil })
	if err != nil || len(got) != 3 || got[0] != 1 || got[1] != 2 || got[2] != 3 {
		t.Fatalf("emitted %v, %v; want [1 2 3]", got, err)
	}
}

func TestPollEnds(t *testing.T) {
	boom := errors.New("boom")
	read := func(context.Context) (int, error) { return 0, boom }
	if err := watch.Poll(t.Context(), time.Millisecond, read, func(a, b int) bool { return a != b }, func(int) error { return nil }); !errors.Is(err, boom) {
		t.Fatalf("a read error: %v", err)
	}
	ok := func(context.Context) (int, error) { return 1, nil }
	if err := watch.Poll(t.Context(), time.Millisecond, ok, func(a, b int) bool { return a != b }, func(int) error { return boom }); err != nil {
		t.Fatalf("an emit error ends quietly: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := watch.Poll(ctx, time.Millisecond, ok, func(a, b int) bool { return a != b }, func(int) error { return nil }); err != nil {
		t.Fatalf("an ended context: %v", err)
	}
}
