package scm_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync/atomic"
	"testing"

	"github.com/devpilot/devpilot/core/scm"
	"github.com/devpilot/devpilot/ports"
)

// outcome is what one ReceiveWebhook call answered.
type outcome struct {
	dup bool
	err error
}

// gate holds the write of every batch holding one of ids until released,
// and tells when such a write started, with its context.
type gate struct {
	started chan context.Context
	release chan struct{}
}

func newGate(e *env, ids ...string) *gate {
	g := &gate{started: make(chan context.Context, 8), release: make(chan struct{})}
	e.scm.mu.Lock()
	defer e.scm.mu.Unlock()
	e.scm.beforeRecord = func(ctx context.Context, ds []ports.WebhookDelivery) {
		if slices.ContainsFunc(ds, func(d ports.WebhookDelivery) bool { return slices.Contains(ids, d.ID) }) {
			g.started <- ctx
			<-g.release
		}
	}
	return g
}

// joins reports the size of the open batch each time a delivery joins it.
func joins(e *env) chan int {
	c := make(chan int, 256)
	scm.OnWebhookJoined(e.svc, func(n int) { c <- n })
	return c
}

// waitJoined waits until the open batch holds n deliveries.
func waitJoined(t *testing.T, joined chan int, n int) {
	t.Helper()
	for got := range joined {
		if got == n {
			return
		}
	}
}

// bodyNonce makes each body receiveAsync sends its own, so that only ids
// make repeats (a repeated body is a replay: see TestReceiveWebhookReplay).
var bodyNonce atomic.Int64

// receiveAsync calls ReceiveWebhook with ctx in a goroutine; its outcome
// arrives on the channel returned.
func (e *env) receiveAsync(ctx context.Context, id string) chan outcome {
	body := bytes.Replace(payload(e.t, "ping"), []byte("{"), fmt.Appendf(nil, `{"nonce":%d,`, bodyNonce.Add(1)), 1)
	c := make(chan outcome, 1)
	go func() {
		dup, err := e.svc.ReceiveWebhook(ctx, scm.WebhookInput{Event: "ping", DeliveryID: id, Signature: sign(secret, body), Body: bytes.NewReader(body)})
		c <- outcome{dup, err}
	}()
	return c
}

// recorded returns the delivery ids of each RecordDeliveries call and of the
// delivery jobs (the ids of each), each sorted.
func (e *env) calls() (recorded, enqueued [][]string) {
	e.scm.mu.Lock()
	defer e.scm.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	sorted := func(calls [][]string) [][]string {
		out := make([][]string, len(calls))
		for i, c := range calls {
			out[i] = slices.Sorted(slices.Values(c))
		}
		return out
	}
	return sorted(e.scm.recorded), sorted(e.enqueuedIDs)
}

// storedIDs returns the ids of the deliveries stored, of those the service
// asked to record.
func storedIDs(e *env) []string {
	recorded, _ := e.calls()
	var ids []string
	for _, id := range slices.Concat(recorded...) {
		if _, ok := e.delivery(id); ok && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

func jobIDs(e *env) []string {
	var ids []string
	for _, j := range e.jobs() {
		if !j.inTx {
			e.t.Errorf("job %v enqueued outside a transaction", j.args)
		}
		ids = append(ids, j.args.(scm.ProcessDeliveriesArgs).DeliveryIDs...)
	}
	sort.Strings(ids)
	return ids
}

func TestReceiveWebhookAloneWritesAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, scm.Config{})
	for _, id := range []string{"d1", "d2", "d1"} {
		if o := <-e.receiveAsync(t.Context(), id); o.err != nil {
			t.Fatal(o.err)
		}
	}
	recorded, enqueued := e.calls()
	if want := [][]string{{"d1"}, {"d2"}, {"d1"}}; !slices.EqualFunc(recorded, want, slices.Equal) {
		t.Errorf("RecordDeliveries calls %v, want %v", recorded, want)
	}
	if want := [][]string{{"d1"}, {"d2"}}; !slices.EqualFunc(enqueued, want, slices.Equal) {
		t.Errorf("delivery jobs %v, want %v", enqueued, want)
	}
}

// TestReceiveWebhookOwnTransaction calls ReceiveWebhook with a transaction
// in ctx: the delivery is stored in a transaction of its own all the same,
// alone or retried alone, as a batch holds other calls' deliveries.
func TestReceiveWebhookOwnTransaction(t *testing.T) {
	t.Parallel()
	e := newEnv(t, scm.Config{WebhookWriters: 1})
	e.scm.poisoned = map[string]error{"bad": &ports.Error{Kind: ports.KindUnavailable, Message: "database is down"}}
	inCallersTx := context.WithValue(t.Context(), txKey{}, &txMark{})
	if o := <-e.receiveAsync(inCallersTx, "d1"); o.err != nil || o.dup {
		t.Errorf("ReceiveWebhook = %v, %v", o.dup, o.err)
	}
	g := newGate(e, "first")
	first := e.receiveAsync(t.Context(), "first")
	<-g.started
	joined := joins(e)
	bad := e.receiveAsync(inCallersTx, "bad")
	waitJoined(t, joined, 1)
	good := e.receiveAsync(inCallersTx, "good")
	waitJoined(t, joined, 2)
	close(g.release)
	<-first
	if o := <-bad; o.err == nil {
		t.Error("the poisoned delivery was stored")
	}
	if o := <-good; o.err != nil || o.dup {
		t.Errorf("ReceiveWebhook retried alone = %v, %v", o.dup, o.err)
	}
	if recorded, _ := e.calls(); len(recorded) != 5 || len(recorded[2]) != 2 {
		t.Errorf("RecordDeliveries calls %v, want d1, first, the batch, then each alone", recorded)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.nestedTx {
		t.Error("a delivery was written in the transaction of the caller's ctx")
	}
}

// TestReceiveWebhookGroupCommit holds a first write, so that the deliveries
// arriving meanwhile, one of them twice, gather in one batch: one
// RecordDeliveries, one job for the batch, and each call its own answer.
func TestReceiveWebhookGroupCommit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, scm.Config{WebhookWriters: 1})
	g := newGate(e, "first")
	first := e.receiveAsync(t.Context(), "first")
	<-g.started
	joined := joins(e)

	ids := []string{"d1", "d2", "d3", "d2", "d4"}
	results := make([]chan outcome, len(ids))
	for i, id := range ids {
		results[i] = e.receiveAsync(t.Context(), id)
	}
	waitJoined(t, joined, len(ids))
	close(g.release)

	if o := <-first; o.err != nil || o.dup {
		t.Errorf("first = %v, %v", o.dup, o.err)
	}
	dups := map[string]int{}
	for i, c := range results {
		o := <-c
		if o.err != nil {
			t.Errorf("%s: %v", ids[i], o.err)
		}
		if o.dup {
			dups[ids[i]]++
		}
	}
	if len(dups) != 1 || dups["d2"] != 1 {
		t.Errorf("duplicates %v, want d2 once", dups)
	}
	recorded, enqueued := e.calls()
	if want := [][]string{{"first"}, {"d1", "d2", "d2", "d3", "d4"}}; !slices.EqualFunc(recorded, want, slices.Equal) {
		t.Errorf("RecordDeliveries calls %v, want %v", recorded, want)
	}
	if want := [][]string{{"first"}, {"d1", "d2", "d3", "d4"}}; !slices.EqualFunc(enqueued, want, slices.Equal) {
		t.Errorf("delivery jobs %v, want %v", enqueued, want)
	}
	if got, want := jobIDs(e), []string{"d1", "d2", "d3", "d4", "first"}; !slices.Equal(got, want) {
		t.Errorf("jobs %v, want %v", got, want)
	}
}

// TestReceiveWebhookBatchBounds closes a batch at Config.WebhookBatch.
func TestReceiveWebhookBatchBounds(t *testing.T) {
	t.Parallel()
	e := newEnv(t, scm.Config{WebhookWriters: 1, WebhookBatch: 2})
	g := newGate(e, "first")
	first := e.receiveAsync(t.Context(), "first")
	<-g.started
	joined := joins(e)
	var results []chan outcome
	for _, id := range []string{"d1", "d2", "d3"} {
		results = append(results, e.receiveAsync(t.Context(), id))
		<-joined
	}
	close(g.release)
	for _, c := range append(results, first) {
		if o := <-c; o.err != nil || o.dup {
			t.Errorf("ReceiveWebhook = %v, %v", o.dup, o.err)
		}
	}
	recorded, _ := e.calls()
	sizes := []int{}
	for _, r := range recorded {
		sizes = append(sizes, len(r))
	}
	slices.Sort(sizes)
	if want := []int{1, 1, 2}; !slices.Equal(sizes, want) {
		t.Errorf("batch sizes %v (%v), want %v", sizes, recorded, want)
	}
}

// TestReceiveWebhookBatchFailure fails a batch for one delivery in it: the
// others are stored on their own, and only its call fails; when every one
// fails, every call gets the error.
func TestReceiveWebhookBatchFailure(t *testing.T) {
	t.Parallel()
	broken := &ports.Error{Kind: ports.KindUnavailable, Message: "database is down"}
	tests := []struct {
		name     string
		poisoned []string
		stored   []string
	}{
		{"one poisoned", []string{"bad"}, []string{"bad-not", "first", "good1", "good2"}},
		{"all failing", []string{"bad", "good1", "good2", "bad-not"}, []string{"first"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, scm.Config{WebhookWriters: 1})
			e.scm.poisoned = map[string]error{}
			for _, id := range tt.poisoned {
				e.scm.poisoned[id] = broken
			}
			g := newGate(e, "first")
			first := e.receiveAsync(t.Context(), "first")
			<-g.started
			joined := joins(e)
			ids := []string{"good1", "bad", "good2", "bad-not"}
			results := make([]chan outcome, len(ids))
			for i, id := range ids {
				results[i] = e.receiveAsync(t.Context(), id)
			}
			waitJoined(t, joined, len(ids))
			close(g.release)
			if o := <-first; o.err != nil {
				t.Errorf("first: %v", o.err)
			}
			for i, c := range results {
				o := <-c
				if want := slices.Contains(tt.poisoned, ids[i]); (o.err != nil) != want || o.dup {
					t.Errorf("%s = %v, %v; want an error: %v", ids[i], o.dup, o.err, want)
				}
				if o.err != nil && !errors.Is(o.err, broken) {
					t.Errorf("%s: error %v, want %v", ids[i], o.err, broken)
				}
			}
			recorded, _ := e.calls()
			if len(recorded) != 2+len(ids) || len(recorded[1]) != len(ids) {
				t.Errorf("RecordDeliveries calls %v, want the batch then each alone", recorded)
			}
			if got := storedIDs(e); !slices.Equal(got, tt.stored) {
				t.Errorf("stored %v, want %v", got, tt.stored)
			}
			if got := jobIDs(e); !slices.Equal(got, tt.stored) {
				t.Errorf("jobs %v, want %v", got, tt.stored)
			}
		})
	}
}

// TestReceiveWebhookLeaderLeaves cancels the leader of a batch waiting for
// its turn: it returns at once, and another member writes the batch, its
// delivery too.
func TestReceiveWebhookLeaderLeaves(t *testing.T) {
	t.Parallel()
	e := newEnv(t, scm.Config{WebhookWriters: 1})
	g := newGate(e, "first")
	first := e.receiveAsync(t.Context(), "first")
	<-g.started
	joined := joins(e)

	ctx, cancel := context.WithCancel(t.Context())
	leader := e.receiveAsync(ctx, "leader")
	waitJoined(t, joined, 1)
	follower := e.receiveAsync(t.Context(), "follower")
	waitJoined(t, joined, 2)
	cancel()
	if o := <-leader; !errors.Is(o.err, context.Canceled) {
		t.Errorf("cancelled leader = %v, %v; want it cancelled while the first write is held", o.dup, o.err)
	}
	close(g.release)
	for _, c := range []chan outcome{first, follower} {
		if o := <-c; o.err != nil || o.dup {
			t.Errorf("ReceiveWebhook = %v, %v", o.dup, o.err)
		}
	}
	recorded, _ := e.calls()
	if want := [][]string{{"first"}, {"follower", "leader"}}; !slices.EqualFunc(recorded, want, slices.Equal) {
		t.Errorf("RecordDeliveries calls %v, want %v", recorded, want)
	}
	// The cancelled call's delivery was stored: its retry is a duplicate.
	if dup, err := e.receive("ping", "leader", payload(t, "ping")); err != nil || !dup {
		t.Errorf("retry of the cancelled delivery = %v, %v; want a duplicate", dup, err)
	}
}

// TestReceiveWebhookLeadersLeave cancels two leaders of a batch in turn: the
// last member left writes it.
func TestReceiveWebhookLeadersLeave(t *testing.T) {
	t.Parallel()
	e := newEnv(t, scm.Config{WebhookWriters: 1})
	g := newGate(e, "first")
	first := e.receiveAsync(t.Context(), "first")
	<-g.started
	joined := joins(e)

	ctxA, cancelA := context.WithCancel(t.Context())
	a := e.receiveAsync(ctxA, "a")
	waitJoined(t, joined, 1)
	ctxB, cancelB := context.WithCancel(t.Context())
	b := e.receiveAsync(ctxB, "b")
	waitJoined(t, joined, 2)
	c := e.receiveAsync(t.Context(), "c")
	waitJoined(t, joined, 3)
	cancelA()
	if o := <-a; !errors.Is(o.err, context.Canceled) {
		t.Errorf("a = %v, %v", o.dup, o.err)
	}
	cancelB()
	if o := <-b; !errors.Is(o.err, context.Canceled) {
		t.Errorf("b = %v, %v", o.dup, o.err)
	}
	close(g.release)
	for _, ch := range []chan outcome{first, c} {
		if o := <-ch; o.err != nil || o.dup {
			t.Errorf("ReceiveWebhook = %v, %v", o.dup, o.err)
		}
	}
	recorded, _ := e.calls()
	if want := [][]string{{"first"}, {"a", "b", "c"}}; !slices.EqualFunc(recorded, want, slices.Equal) {
		t.Errorf("RecordDeliveries calls %v, want %v", recorded, want)
	}
}

// TestReceiveWebhookAllLeave cancels the only member of a batch waiting for
// its turn: the batch is dropped, and its delivery is not stored.
func TestReceiveWebhookAllLeave(t *testing.T) {
	t.Parallel()
	e := newEnv(t, scm.Config{WebhookWriters: 1})
	g := newGate(e, "first")
	first := e.receiveAsync(t.Context(), "first")
	<-g.started
	joined := joins(e)
	ctx, cancel := context.WithCancel(t.Context())
	gone := e.receiveAsync(ctx, "gone")
	waitJoined(t, joined, 1)
	cancel()
	if o := <-gone; !errors.Is(o.err, context.Canceled) {
		t.Errorf("cancelled call = %v, %v", o.dup, o.err)
	}
	later := e.receiveAsync(t.Context(), "later")
	waitJoined(t, joined, 1) // a batch of its own
	close(g.release)
	for _, c := range []chan outcome{first, later} {
		if o := <-c; o.err != nil || o.dup {
			t.Errorf("ReceiveWebhook = %v, %v", o.dup, o.err)
		}
	}
	recorded, _ := e.calls()
	if want := [][]string{{"first"}, {"later"}}; !slices.EqualFunc(recorded, want, slices.Equal) {
		t.Errorf("RecordDeliveries calls %v, want %v", recorded, want)
	}
	if dup, err := e.receive("ping", "gone", payload(t, "ping")); err != nil || dup {
		t.Errorf("retry of the dropped delivery = %v, %v; want it stored now", dup, err)
	}
}

// TestReceiveWebhookLeavesDuringWrite cancels a member while its batch is
// being written: it returns at once, and the write goes on, its context
// not cancelled, and stores both.
func TestReceiveWebhookLeavesDuringWrite(t *testing.T) {
	t.Parallel()
	e := newEnv(t, scm.Config{WebhookWriters: 1})
	g := newGate(e, "first", "leader")
	first := e.receiveAsync(t.Context(), "first")
	<-g.started
	joined := joins(e)

	leaderCtx, cancelLeader := context.WithCancel(t.Context())
	leader := e.receiveAsync(leaderCtx, "leader")
	waitJoined(t, joined, 1)
	memberCtx, cancelMember := context.WithCancel(t.Context())
	member := e.receiveAsync(memberCtx, "member")
	waitJoined(t, joined, 2)
	g.release <- struct{}{} // the first write goes on
	if o := <-first; o.err != nil {
		t.Fatalf("first: %v", o.err)
	}
	writeCtx := <-g.started // the batch of leader and member is being written
	cancelMember()
	cancelLeader()
	if o := <-member; !errors.Is(o.err, context.Canceled) {
		t.Errorf("member cancelled during the write = %v, %v", o.dup, o.err)
	}
	if writeCtx.Err() != nil {
		t.Errorf("the write's context ended with its members': %v", writeCtx.Err())
	}
	close(g.release)
	if o := <-leader; o.err != nil || o.dup {
		t.Errorf("leader = %v, %v; want it stored: it was writing", o.dup, o.err)
	}
	if got, want := storedIDs(e), []string{"first", "leader", "member"}; !slices.Equal(got, want) {
		t.Errorf("stored %v, want %v", got, want)
	}
	if got, want := jobIDs(e), []string{"first", "leader", "member"}; !slices.Equal(got, want) {
		t.Errorf("jobs %v, want %v", got, want)
	}
}

// TestReceiveWebhookConcurrently races many calls, repeats included, over
// two writers: each id is stored and enqueued once.
func TestReceiveWebhookConcurrently(t *testing.T) {
	t.Parallel()
	e := newEnv(t, scm.Config{WebhookBatch: 8})
	const n = 200
	results := make([]chan outcome, n)
	for i := range n {
		results[i] = e.receiveAsync(t.Context(), fmt.Sprintf("d%d", i%50))
	}
	dups := 0
	for _, c := range results {
		o := <-c
		if o.err != nil {
			t.Fatal(o.err)
		}
		if o.dup {
			dups++
		}
	}
	if dups != n-50 || len(storedIDs(e)) != 50 || len(jobIDs(e)) != 50 {
		t.Errorf("%d duplicates, %d stored, %d jobs; want %d, 50, 50", dups, len(storedIDs(e)), len(jobIDs(e)), n-50)
	}
}
