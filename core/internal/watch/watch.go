// Package watch follows a record's state for a progress stream: it reads
// the record at an interval and hands on each state that differs from the
// last one handed on. Everything comes from the store, so it works on any
// replica, whichever one committed the change.
package watch

import (
	"context"
	"time"
)

// Poll calls emit with read's first answer, then with each later answer
// that changed reports different from the last one emitted, reading every
// every, until ctx ends (nil) or emit fails (nil: the client is gone). A
// read error is returned, unless ctx has ended.
func Poll[T any](ctx context.Context, every time.Duration, read func(context.Context) (T, error), changed func(a, b T) bool, emit func(T) error) error {
	var sent *T
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		v, err := read(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		if sent == nil || changed(*sent, v) {
			if err := emit(v); err != nil {
				return nil
			}
			sent = &v
		}
		t.Reset(every)
	}
}
