package scm

import (
	"context"
	"sync"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// The defaults of the webhook group commit (see Config).
const (
	DefaultWebhookBatch   = 128
	DefaultWebhookWriters = 2
	// webhookBatchBytes closes a batch once its payloads reach it, so a
	// batch stays a modest statement; one delivery alone may exceed it.
	webhookBatchBytes = 8 << 20
	// webhookWriteTimeout bounds the write of a batch, which runs detached
	// from its members' contexts.
	webhookWriteTimeout = 30 * time.Second
)

// ingest is the group commit of webhook deliveries. Concurrent
// ReceiveWebhook calls join one open batch; the first to join leads it. The
// leader waits for one of the writer slots (so the batch gathers whatever
// arrives while earlier batches are written: nothing waits at low load, and
// batches grow with the load), closes the batch to newcomers and writes it
// in one transaction, in its own goroutine: there is no background
// goroutine and nothing to stop, and a graceful HTTP shutdown waits for the
// batches its requests lead.
//
// A member whose ctx ends returns at once. A leader leaving before the write
// starts hands the batch to a member still waiting (or to the next delivery
// to join it); a batch every member left before its write is dropped,
// unwritten. A write once started runs to its end with a context of its
// own (bounded by webhookWriteTimeout, and carrying none of the leader's
// values, such as a transaction), so a member may have returned ctx's error
// while its delivery is stored: the provider's retry is then answered as a
// duplicate, which is what the provider needs.
type ingest struct {
	write    func(ctx context.Context, ds []ports.WebhookDelivery) ([]bool, error)
	maxBatch int
	slots    chan struct{} // a token per batch being written

	mu   sync.Mutex
	open *batch // the batch newcomers join; nil when none is open
	// joined, when set (by tests), is told the size of the open batch each
	// time a delivery joins it, with mu held.
	joined func(n int)
}

// batch is deliveries written together, and the outcome they share.
type batch struct {
	ds      []ports.WebhookDelivery
	bytes   int
	waiting int           // members that have not returned
	led     bool          // a member is leading it
	handoff chan struct{} // closed when the batch needs a new leader
	done    chan struct{} // closed when the write ended; then stored, err are set
	stored  []bool
	err     error
}

func newIngest(maxBatch, writers int, write func(context.Context, []ports.WebhookDelivery) ([]bool, error)) *ingest {
	return &ingest{write: write, maxBatch: maxBatch, slots: make(chan struct{}, writers)}
}

// record writes d with the deliveries recorded concurrently and reports
// whether it was stored (false: its id was stored before, or earlier in the
// batch). When the batch's write fails and the batch held others, d is
// written again on its own with ctx, so one bad delivery, or a conflict
// between concurrent batches, fails only itself; the error returned is that
// of the second write, or the batch's for a batch of one.
func (g *ingest) record(ctx context.Context, d ports.WebhookDelivery) (bool, error) {
	g.mu.Lock()
	b := g.open
	if b == nil {
		b = &batch{handoff: make(chan struct{}), done: make(chan struct{})}
		g.open = b
	}
	i := len(b.ds)
	b.ds = append(b.ds, d)
	b.bytes += len(d.Payload)
	b.waiting++
	if len(b.ds) >= g.maxBatch || b.bytes >= webhookBatchBytes {
		g.open = nil // full: the next delivery starts a batch
	}
	lead := !b.led
	b.led = true
	if g.joined != nil {
		g.joined(len(b.ds))
	}
	g.mu.Unlock()

	for done := false; !done; {
		switch g.wait(ctx, b, lead) {
		case written:
			done = true
		case left:
			return false, ctx.Err()
		case leading:
			lead = true
		case following:
		}
	}
	if b.err == nil {
		return b.stored[i], nil
	}
	if len(b.ds) == 1 {
		return false, b.err
	}
	alone, cancel := valueless(ctx)
	defer cancel()
	stored, err := g.write(alone, []ports.WebhookDelivery{d})
	if err != nil {
		return false, err
	}
	return stored[0], nil
}

// valueless returns a context that ends when ctx ends, without ctx's
// values: deliveries are written in transactions of their own, never in one
// a caller's ctx carries, which a batch would fill with other calls'
// deliveries.
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
func (g *ingest) wait(ctx context.Context, b *batch, lead bool) waited {
	if lead {
		select {
		case g.slots <- struct{}{}:
		case <-ctx.Done():
			g.leave(b, true)
			return left
		}
		g.mu.Lock()
		if g.open == b {
			g.open = nil
		}
		g.mu.Unlock()
		wctx, cancel := context.WithTimeout(context.Background(), webhookWriteTimeout)
		b.stored, b.err = g.write(wctx, b.ds)
		cancel()
		<-g.slots
		close(b.done)
		return written
	}
	g.mu.Lock()
	if !b.led { // its leader left
		b.led = true
		g.mu.Unlock()
		return leading
	}
	handoff := b.handoff
	g.mu.Unlock()
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
		g.leave(b, false)
		return left
	}
}

// leave takes a member whose ctx ended out of b: the last member to leave
// drops b (its deliveries are not written); a leader leaving hands b to the
// members still waiting.
func (g *ingest) leave(b *batch, leader bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	b.waiting--
	if b.waiting == 0 {
		if g.open == b {
			g.open = nil
		}
		return
	}
	if leader {
		b.led = false
		close(b.handoff)
		b.handoff = make(chan struct{})
	}
}

// storeDeliveries records ds and enqueues the processing of those stored,
// in one transaction.
func (s *Service) storeDeliveries(ctx context.Context, ds []ports.WebhookDelivery) ([]bool, error) {
	var stored []bool
	err := s.d.Tx.WithinTx(ctx, func(ctx context.Context) error {
		var err error
		if stored, err = s.d.Store.RecordDeliveries(ctx, ds); err != nil {
			return err
		}
		if len(stored) != len(ds) {
			return ports.Errorf(ports.KindInternal, "recording %d webhook deliveries: %d results", len(ds), len(stored))
		}
		jobs := make([]ports.JobArgs, 0, len(ds))
		for i, d := range ds {
			if stored[i] {
				jobs = append(jobs, ProcessDeliveryArgs{DeliveryID: d.ID})
			}
		}
		if len(jobs) == 0 {
			return nil
		}
		return s.d.Jobs.EnqueueMany(ctx, jobs, ports.EnqueueOptions{})
	})
	if err != nil {
		return nil, err
	}
	return stored, nil
}
