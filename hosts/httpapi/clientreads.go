package httpapi

import (
	"context"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// The bounds on webhook bodies, which are read before anything says who
// sent them (the signature is checked at their end).
const (
	// DefaultWebhookReadsPerClient is Config.WebhookReadsPerClient's
	// default: a quarter of the bodies the SCM core reads at once
	// (scm.DefaultWebhookReaders, 16), so that one address never holds
	// them all.
	DefaultWebhookReadsPerClient = 4
	// webhookReadWait is how long a delivery waits for one of its
	// address's reads to end before it is refused.
	webhookReadWait = 2 * time.Second
	// webhookRetryAfter is the Retry-After of a delivery so refused.
	webhookRetryAfter = 5 * time.Second
	// webhookBodyTimeout bounds the time a webhook body takes to arrive
	// (Config.BodyReadTimeout when that is shorter): GitHub gives up on a
	// delivery not answered within 10 s, so a body still arriving then
	// comes from someone else.
	webhookBodyTimeout = 10 * time.Second
)

// clientReads bounds the unauthenticated bodies read at once from each
// client address.
type clientReads struct {
	limit int
	wait  time.Duration
	mu    sync.Mutex
	by    map[string]*clientSlots // the addresses with a read under way or waiting
}

// clientSlots are one address's reads: a slot is taken for each read under
// way; refs counts the requests holding or waiting for one, so that the
// entry goes once none does.
type clientSlots struct {
	slots chan struct{}
	refs  int
}

func newClientReads(limit int, wait time.Duration) *clientReads {
	return &clientReads{limit: limit, wait: wait, by: map[string]*clientSlots{}}
}

// acquire takes one of addr's reads, waiting up to c.wait for one to end,
// and returns its release (safe to call more than once). Errors:
// rate_limited with a RetryAfter when none ends in time; ctx's error.
func (c *clientReads) acquire(ctx context.Context, addr string) (func(), error) {
	c.mu.Lock()
	cs := c.by[addr]
	if cs == nil {
		cs = &clientSlots{slots: make(chan struct{}, c.limit)}
		c.by[addr] = cs
	}
	cs.refs++
	c.mu.Unlock()
	drop := func() {
		c.mu.Lock()
		if cs.refs--; cs.refs == 0 {
			delete(c.by, addr)
		}
		c.mu.Unlock()
	}
	taken := func() (func(), error) {
		return sync.OnceFunc(func() {
			<-cs.slots
			drop()
		}), nil
	}
	select {
	case cs.slots <- struct{}{}:
		return taken()
	default:
	}
	t := time.NewTimer(c.wait)
	defer t.Stop()
	select {
	case cs.slots <- struct{}{}:
		return taken()
	case <-t.C:
		drop()
		return nil, &ports.Error{Kind: ports.KindRateLimited, RetryAfter: webhookRetryAfter,
			Message: "too many webhook deliveries from your address are being received at once; retry after the seconds in Retry-After"}
	case <-ctx.Done():
		drop()
		return nil, ctx.Err()
	}
}

// clientAddr is the address r's reads are counted under: the peer's IP
// address (an IPv4-mapped one as IPv4), or for IPv6 its /64, which one
// client usually holds whole. Behind a proxy it is the proxy's: headers
// such as X-Forwarded-For are the client's to write, so they are not
// believed.
func clientAddr(r *http.Request) string {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	a := ap.Addr().Unmap()
	if a.Is6() {
		if p, err := a.Prefix(64); err == nil {
			return p.String()
		}
	}
	return a.String()
}
