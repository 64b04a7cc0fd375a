package httpapi

import (
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// DefaultMCPWatchInterval is how often a replica with an open
// subscriptions/listen stream looks for changes of its callers'
// specification sessions.
const DefaultMCPWatchInterval = 3 * time.Second

// specFeed tells the subscriptions/listen streams open on this replica
// that a caller's specification sessions changed, whichever replica (or
// worker) changed them. It keeps no state shared between replicas: while
// at least one stream of an owner is open, one poller of that owner asks
// the database every interval for the owner's sessions as they stand and
// compares a fingerprint of them with the last one. The cost is one poll
// per interval per owner with an open stream, however many streams the
// owner has.
type specFeed struct {
	interval time.Duration
	// probe reads the fingerprint of the sessions the principal in ctx
	// owns.
	probe func(ctx context.Context) (string, error)
	log   *slog.Logger

	mu       sync.Mutex
	watchers map[ports.Owner]*specWatch
}

// specWatch is one owner's poller and the streams it tells.
type specWatch struct {
	subs   map[chan struct{}]struct{}
	cancel context.CancelFunc
	done   chan struct{} // closed when the poller has returned
}

func newSpecFeed(interval time.Duration, probe func(context.Context) (string, error), log *slog.Logger) *specFeed {
	if interval <= 0 {
		interval = DefaultMCPWatchInterval
	}
	return &specFeed{interval: interval, probe: probe, log: log, watchers: map[ports.Owner]*specWatch{}}
}

// subscribe returns a channel that receives a value after each change of
// p's sessions (changes close together may come as one), and the function
// that ends the subscription; the last one of an owner stops its poller
// and waits for it to return.
func (f *specFeed) subscribe(p ports.Principal) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	owner := p.Owner()
	f.mu.Lock()
	w := f.watchers[owner]
	if w == nil {
		ctx, cancel := context.WithCancel(ports.WithPrincipal(context.Background(), p))
		w = &specWatch{subs: map[chan struct{}]struct{}{}, cancel: cancel, done: make(chan struct{})}
		f.watchers[owner] = w
		go f.poll(ctx, owner, w)
	}
	w.subs[ch] = struct{}{}
	f.mu.Unlock()
	var once sync.Once
	return ch, func() {
		once.Do(func() {
			f.mu.Lock()
			delete(w.subs, ch)
			last := len(w.subs) == 0
			if last {
				delete(f.watchers, owner)
			}
			f.mu.Unlock()
			if last {
				w.cancel()
				<-w.done
			}
		})
	}
}

// pollers reports how many owners are being watched.
func (f *specFeed) pollers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.watchers)
}

// poll watches owner's sessions until ctx ends, telling w's subscribers of
// each change.
func (f *specFeed) poll(ctx context.Context, owner ports.Owner, w *specWatch) {
	defer close(w.done)
	last, err := f.probe(ctx)
	known := err == nil
	t := time.NewTicker(f.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cur, err := f.probe(ctx)
		if err != nil {
			if ctx.Err() == nil {
				f.log.WarnContext(ctx, "watching specification sessions for MCP clients", "org", owner.OrgID, "err", err)
			}
			continue
		}
		if known && cur == last {
			continue
		}
		changed := known
		last, known = cur, true
		if !changed {
			continue
		}
		f.mu.Lock()
		for ch := range w.subs {
			select {
			case ch <- struct{}{}:
			default: // one is pending already
			}
		}
		f.mu.Unlock()
	}
}

// specFingerprint is the probe of a specFeed: a hash of the first page of
// the caller's sessions (most recently updated first) with what changes
// when one is created, renamed, generated, regenerated, edited or deleted.
func (s *Server) specFingerprint(ctx context.Context) (string, error) {
	sessions, next, err := s.d.Spec.ListSessions(ctx, ports.Page{Limit: mcpPageSessions})
	if err != nil {
		return "", err
	}
	h := fnv.New64a()
	var b strings.Builder
	for _, ss := range sessions {
		b.Reset()
		fmt.Fprintf(&b, "%s|%s|%s|%s|%s|%d\n", ss.ID, ss.Name, ss.Status, ss.CurrentStage, ss.GenerationID, ss.UpdatedAt.UnixNano())
		_, _ = h.Write([]byte(b.String()))
	}
	_, _ = h.Write([]byte(next))
	return fmt.Sprintf("%d:%x", len(sessions), h.Sum64()), nil
}
