package httpapi

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// TestClientAddr: reads are counted per IP address, an IPv4-mapped one as
// IPv4 and an IPv6 one by its /64, which one client usually holds whole.
func TestClientAddr(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ remote, want string }{
		{"192.0.2.7:5123", "192.0.2.7"},
		{"[::ffff:192.0.2.7]:80", "192.0.2.7"},
		{"[2001:db8:1:2::1]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff:ffff:ffff:ffff]:1", "2001:db8:1:2::/64"},
		{"[2001:db8:1:3::1]:443", "2001:db8:1:3::/64"},
		{"pipe", "pipe"},
	} {
		if got := clientAddr(&http.Request{RemoteAddr: tc.remote}); got != tc.want {
			t.Errorf("clientAddr(%q) = %q, want %q", tc.remote, got, tc.want)
		}
	}
}

// TestClientReads: an address has at most limit reads at once; one more is
// refused rate_limited with a Retry-After once the wait is over, while
// another address is served; a read released (once or twice) frees its
// slot, and an address with none under way is forgotten.
func TestClientReads(t *testing.T) {
	t.Parallel()
	c := newClientReads(2, 20*time.Millisecond)
	ctx := context.Background()
	r1, err1 := c.acquire(ctx, "a")
	r2, err2 := c.acquire(ctx, "a")
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	_, err := c.acquire(ctx, "a")
	if pe, ok := ports.AsError(err); !ok || pe.Kind != ports.KindRateLimited || pe.RetryAfter <= 0 {
		t.Fatalf("a third read of a: %v, want rate_limited with a Retry-After", err)
	}
	rb, err := c.acquire(ctx, "b")
	if err != nil {
		t.Fatalf("b while a is at its limit: %v", err)
	}
	r1()
	r1() // released twice: one slot only
	r3, err := c.acquire(ctx, "a")
	if err != nil {
		t.Fatalf("a after a release: %v", err)
	}
	if _, err := c.acquire(ctx, "a"); err == nil {
		t.Fatal("a released twice gave two slots back")
	}
	one := newClientReads(1, time.Hour)
	if _, err := one.acquire(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := one.acquire(canceled, "x"); !errors.Is(err, context.Canceled) {
		t.Fatalf("a wait whose request ended: %v, want its context's error", err)
	}
	r2()
	r3()
	rb()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.by) != 0 {
		t.Errorf("addresses kept with no read under way: %v", c.by)
	}
}

// TestWebhookBodyDeadline: a webhook body has 10 s to arrive (the server's
// body deadline when shorter), whatever the server's body deadline for
// other routes.
func TestWebhookBodyDeadline(t *testing.T) {
	t.Parallel()
	for _, server := range []time.Duration{0, 5 * time.Second, time.Minute} {
		s := New(Config{BodyReadTimeout: server, RequestTimeout: 2 * time.Minute}, Deps{Identity: stubIdentity{}, Ready: stubReadiness{},
			SCM: stubSCM{}, Tokens: stubTokens{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		others := s.cfg.BodyReadTimeout
		for _, rt := range s.registered {
			want := others
			if strings.HasSuffix(rt.pattern, "/webhooks/scm") {
				want = min(others, 10*time.Second)
			}
			if rt.bodyTimeout != want {
				t.Errorf("server body deadline %v: %s %s has %v, want %v", server, rt.method, rt.pattern, rt.bodyTimeout, want)
			}
		}
	}
}
