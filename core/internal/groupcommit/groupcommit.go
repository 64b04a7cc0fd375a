// Package groupcommit writes the items of concurrent callers together: one
// write (a statement, a transaction) for whatever arrived while earlier
// writes were under way, instead of one each. Nothing waits at low load, and
// batches grow with the load.
//
// Concurrent Do calls join one open batch; the first to join leads it. The
// leader waits for one of the writer slots (so the batch gathers whatever
// arrives meanwhile), closes the batch to newcomers and writes it, in its
// own goroutine: there is no background goroutine and nothing to stop, and
// a caller waiting for its write (an HTTP request, say) is what keeps the
// write alive during a graceful shutdown.
//
// A member whose ctx ends returns at once. A leader leaving before the
// write starts hands the batch to a member still waiting (or to the next
// item to join it); a batch every member left before its write is dropped,
// unwritten. A write once started runs to its end with a context of its own
// (bounded by Config.Timeout, carrying none of the leader's values, such as
// a transaction), so a member may have returned ctx's error while its item
// was written.
package groupcommit

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Config bounds a Committer's batches. Zero values take the defaults.
type Config struct {
	// MaxItems closes a batch once it holds that many items (128).
	MaxItems int
	// MaxWeight closes a batch once the weights of its items reach it; 0
	// means no bound. One item alone may exceed it.
	MaxWeight int
	// Writers bounds the batches written at once (2); 1 suits a database
	// with a single writer.
	Writers int
	// Timeout bounds each write, which runs detached from its members'
	// contexts (30 s).
	Timeout time.Duration
}

// Defaults of Config.
const (
	DefaultMaxItems = 128
	DefaultWriters  = 2
	DefaultTimeout  = 30 * time.Second
)

// WriteFunc writes items together and returns one result per item, in
// order. It runs with a context of its own, never within a caller's
// transaction.
type WriteFunc[T, R any] func(ctx context.Context, items []T) ([]R, error)

// Committer is a group commit of items of type T whose writes yield an R
// each. Its zero value is not usable: call New.
type Committer[T, R any] struct {
	write  WriteFunc[T, R]
	weight func(T) int
	cfg    Config
	slots  chan struct{} // a token per batch being written

	mu   sync.Mutex
	open *batch[T, R] // the batch newcomers join; nil when none is open
	// joined, when set (by tests), is told the size of the open batch each
	// time an item joins it, with mu held.
	joined func(n int)
}

// batch is items written together, and the outcome they share.
type batch[T, R any] struct {
	items   []T
	weight  int
	waiting int           // members that have not returned
	led     bool          // a member is leading it
	handoff chan struct{} // closed when the batch needs a new leader
	done    chan struct{} // closed when the write ended; then results, err are set
	results []R
	err     error
}

// New returns a Committer writing with write; weight, when not nil, weighs
// each item for Config.MaxWeight.
func New[T, R any](cfg Config, weight func(T) int, write WriteFunc[T, R]) *Committer[T, R] {
	if cfg.MaxItems <= 0 {
		cfg.MaxItems = DefaultMaxItems
	}
	if cfg.Writers <= 0 {
		cfg.Writers = DefaultWriters
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	return &Committer[T, R]{write: write, weight: weight, cfg: cfg, slots: make(chan struct{}, cfg.Writers)}
}

// OnJoined makes c call fn with the size of the open batch each time an
// item joins it, for tests that need to know a batch has formed; fn must
// not block.
func (c *Committer[T, R]) OnJoined(fn func(n int)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.joined = fn
}

// Do writes item with the items joining concurrently and returns its
// result. When the batch's write fails and the batch held others, item is
// written again on its own, so one bad item, or a conflict between
// concurrent batches, fails only itself; the error returned is that of the
// second write, or the batch's for a batch of one.
func (c *Committer[T, R]) Do(ctx context.Context, item T) (R, error) {
	var zero R
	w := 0
	if c.weight != nil {
		w = c.weight(item)
	}
	c.mu.Lock()
	b := c.open
	if b == nil {
		b = &batch[T, R]{handoff: make(chan struct{}), done: make(chan struct{})}
		c.open = b
	}
	i := len(b.items)
	b.items = append(b.items, item)
	b.weight += w
	b.waiting++
	if len(b.items) >= c.cfg.MaxItems || (c.cfg.MaxWeight > 0 && b.weight >= c.cfg.MaxWeight) {
		c.open = nil // full: the next item starts a batch
	}
	lead := !b.led
	b.led = true
	if c.joined != nil {
		c.joined(len(b.items))
	}
	c.mu.Unlock()

	for done := false; !done; {
		switch c.wait(ctx, b, lead) {
		case written:
			done = true
		case left:
			return zero, ctx.Err()
		case leading:
			lead = true
		case following:
		}
	}
	if b.err == nil {
		return b.results[i], nil
	}
	if len(b.items) == 1 {
		return zero, b.err
	}
	alone, cancel := valueless(ctx)
	defer cancel()
	rs, err := c.write(alone, []T{item})
	if err != nil {
		return zero, err
	}
	return rs[0], nil
}

// valueless returns a context that ends when ctx ends, without ctx's
// values: items are written in transactions of their own, never in one a
// caller's ctx carries, which a batch would fill with other calls' items.
func valueless(ctx context.Context) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancelCause(context.Background())
	stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	return c, func() {
		stop()
		cancel(context.Canceled)
	}
}

// How a wait for a batch ended.
type waited int

const (
	written   waited = iota // the batch's write ended
	left                    // ctx ended, and the member left the batch
	leading                 // the member must lead the batch now
	following               // the batch's leader left: wait again (or lead)
)

// wait leads b to its write, or waits for its leader to write it, until ctx
// ends.
func (c *Committer[T, R]) wait(ctx context.Context, b *batch[T, R], lead bool) waited {
	if lead {
		select {
		case c.slots <- struct{}{}:
		case <-ctx.Done():
			c.leave(b, true)
			return left
		}
		c.mu.Lock()
		if c.open == b {
			c.open = nil
		}
		c.mu.Unlock()
		wctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
		b.results, b.err = c.write(wctx, b.items)
		cancel()
		if b.err == nil && len(b.results) != len(b.items) {
			b.err = fmt.Errorf("groupcommit: the write returned %d results for %d items", len(b.results), len(b.items))
		}
		<-c.slots
		close(b.done)
		return written
	}
	c.mu.Lock()
	if !b.led { // its leader left
		b.led = true
		c.mu.Unlock()
		return leading
	}
	handoff := b.handoff
	c.mu.Unlock()
	select {
	case <-b.done:
		return written
	case <-handoff:
		return following
	case <-ctx.Done():
		select {
		case <-b.done: // written all the same
			return written
		default:
		}
		c.leave(b, false)
		return left
	}
}

// leave takes a member whose ctx ended out of b: the last member to leave
// drops b (its items are not written); a leader leaving hands b to the
// members still waiting.
func (c *Committer[T, R]) leave(b *batch[T, R], leader bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b.waiting--
	if b.waiting == 0 {
		if c.open == b {
			c.open = nil
		}
		return
	}
	if leader {
		b.led = false
		close(b.handoff)
		b.handoff = make(chan struct{})
	}
}
