package httpapi

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// fakeSpecs is a probe of specFeed: each user's fingerprint, with a count
// of the polls and a signal after each.
type fakeSpecs struct {
	mu     sync.Mutex
	value  map[string]string
	polls  map[string]int
	polled map[string]chan struct{}
}

func (f *fakeSpecs) probe(ctx context.Context) (string, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return "", err
	}
	f.mu.Lock()
	v := f.value[p.UserID]
	f.polls[p.UserID]++
	ch := f.polled[p.UserID]
	f.mu.Unlock()
	select {
	case ch <- struct{}{}:
	default:
	}
	return v, nil
}

func (f *fakeSpecs) set(user, v string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.value[user] = v
}

func (f *fakeSpecs) count(user string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.polls[user]
}

// waitPolls waits for n more polls of user's sessions.
func (f *fakeSpecs) waitPolls(t *testing.T, user string, n int) {
	t.Helper()
	for range n {
		<-f.polled[user]
	}
}

// TestSpecFeed: one poller per owner however many subscribers it has;
// a change reaches the owner's subscribers only; the last unsubscribe
// ends the owner's poller (it returns before unsubscribe does).
func TestSpecFeed(t *testing.T) {
	specs := &fakeSpecs{value: map[string]string{}, polls: map[string]int{},
		polled: map[string]chan struct{}{"u1": make(chan struct{}), "u2": make(chan struct{})}}
	feed := newSpecFeed(time.Millisecond, specs.probe, slog.New(slog.DiscardHandler))
	u1 := ports.Principal{OrgID: "o1", UserID: "u1"}
	u2 := ports.Principal{OrgID: "o2", UserID: "u2"}

	a, stopA := feed.subscribe(u1)
	b, stopB := feed.subscribe(u1)
	c, stopC := feed.subscribe(u2)
	defer stopC()
	if n := feed.pollers(); n != 2 {
		t.Fatalf("pollers for two owners: %d", n)
	}
	specs.waitPolls(t, "u1", 2)
	specs.waitPolls(t, "u2", 2)
	select {
	case <-a:
		t.Fatal("told of a change before any")
	case <-c:
		t.Fatal("told of a change before any")
	default:
	}

	specs.set("u1", "regenerated")
	<-a
	<-b
	specs.waitPolls(t, "u2", 3)
	select {
	case <-c:
		t.Fatal("another owner's subscriber was told of the change")
	default:
	}

	stopA()
	if n := feed.pollers(); n != 2 {
		t.Fatalf("pollers with one subscriber of u1 left: %d", n)
	}
	stopB()
	stopB() // twice is once
	if n := feed.pollers(); n != 1 {
		t.Fatalf("pollers after u1's last unsubscribe: %d", n)
	}
	before := specs.count("u1")
	specs.waitPolls(t, "u2", 3)
	if after := specs.count("u1"); after != before {
		t.Fatalf("u1's poller polled after its last unsubscribe: %d then %d", before, after)
	}
}
