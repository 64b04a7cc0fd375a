package httpapi_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/devpilot/devpilot/hosts/httpapi"
	"github.com/devpilot/devpilot/ports"
)

// fakeRates allows the first limit takes of each key, and fails every take
// when err is set.
type fakeRates struct {
	mu    sync.Mutex
	err   error
	after time.Duration
	taken map[string]int
	calls []rateCall
}

type rateCall struct {
	key    string
	window time.Duration
	limit  int
}

func (f *fakeRates) TakeRate(_ context.Context, key string, window time.Duration, limit int, _ time.Time) (bool, time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, rateCall{key, window, limit})
	if f.err != nil {
		return false, 0, f.err
	}
	if f.taken == nil {
		f.taken = map[string]int{}
	}
	f.taken[key]++
	return f.taken[key] <= limit, f.after, nil
}

// readFlag is a body that records whether it was read.
type readFlag struct {
	io.Reader
	read bool
}

func (b *readFlag) Read(p []byte) (int, error) {
	b.read = true
	return b.Reader.Read(p)
}

func withRates(r ports.RateStore, limit int, window time.Duration) envOption {
	return func(c *httpapi.Config, d *httpapi.Deps) {
		c.RateLimit, c.RateWindow = limit, window
		d.Rates = r
	}
}

func TestCostlyRouteRateLimit(t *testing.T) {
	t.Parallel()
	rates := &fakeRates{after: 1500 * time.Millisecond}
	e := newEnv(t, withRates(rates, 2, 30*time.Second))
	ran := 0
	e.srv.HandleForTest(http.MethodPost, "/test/costly", func(w http.ResponseWriter, r *http.Request) error {
		ran++
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
		return nil
	}, httpapi.Costly)
	e.srv.HandleForTest(http.MethodPost, "/test/cheap", func(w http.ResponseWriter, r *http.Request) error {
		w.WriteHeader(http.StatusNoContent)
		return nil
	})

	for i := range 2 {
		if rr := e.do(request(http.MethodPost, "/test/costly", goodToken, strings.NewReader("x"))); rr.Code != http.StatusNoContent {
			t.Fatalf("request %d: status %d, want 204", i+1, rr.Code)
		}
	}
	body := &readFlag{Reader: strings.NewReader("a large upload")}
	rr := e.do(request(http.MethodPost, "/test/costly", goodToken, body))
	p := problemOf(t, rr, http.StatusTooManyRequests)
	if p.Code != string(ports.KindRateLimited) {
		t.Errorf("code %q, want rate_limited", p.Code)
	}
	if got := rr.Header().Get("Retry-After"); got != "2" {
		t.Errorf("Retry-After %q, want 2 (1.5s rounded up)", got)
	}
	if ran != 2 || body.read {
		t.Errorf("over the limit: handler ran %d times (want 2), body read %v (want false)", ran, body.read)
	}
	if want := (rateCall{"rate:" + alice.UserID, 30 * time.Second, 2}); rates.calls[0] != want {
		t.Errorf("take %+v, want %+v", rates.calls[0], want)
	}
	// Unauthenticated requests are refused before any take; other routes take none.
	problemOf(t, e.do(request(http.MethodPost, "/test/costly", "", nil)), http.StatusUnauthorized)
	if rr := e.do(request(http.MethodPost, "/test/cheap", goodToken, nil)); rr.Code != http.StatusNoContent {
		t.Errorf("a route that is not costly: status %d", rr.Code)
	}
	if len(rates.calls) != 3 {
		t.Errorf("%d takes, want 3 (the costly requests of an authenticated caller)", len(rates.calls))
	}
}

func TestCostlyRouteRetryAfterAtLeastOneSecond(t *testing.T) {
	t.Parallel()
	rates := &fakeRates{after: 10 * time.Millisecond}
	e := newEnv(t, withRates(rates, 1, time.Minute))
	e.srv.HandleForTest(http.MethodPost, "/test/costly", func(w http.ResponseWriter, r *http.Request) error {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}, httpapi.Costly)
	e.do(request(http.MethodPost, "/test/costly", goodToken, nil))
	rr := e.do(request(http.MethodPost, "/test/costly", goodToken, nil))
	problemOf(t, rr, http.StatusTooManyRequests)
	if got := rr.Header().Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After %q, want 1", got)
	}
}

func TestCostlyRouteFailsOpen(t *testing.T) {
	t.Parallel()
	rates := &fakeRates{err: &ports.Error{Kind: ports.KindUnavailable, Message: "database down"}}
	e := newEnv(t, withRates(rates, 1, time.Minute))
	e.srv.HandleForTest(http.MethodPost, "/test/costly", func(w http.ResponseWriter, r *http.Request) error {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}, httpapi.Costly)
	for i := range 3 {
		if rr := e.do(request(http.MethodPost, "/test/costly", goodToken, nil)); rr.Code != http.StatusNoContent {
			t.Fatalf("request %d with a failing counter: status %d, want 204", i+1, rr.Code)
		}
	}
	if n := len(e.logs.records(t, "rate limit not checked: the counter failed, letting the request through")); n != 3 {
		t.Errorf("%d warnings logged, want 3", n)
	}
	mfs, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range mfs {
		if mf.GetName() == "devpilot_http_rate_limit_errors_total" {
			found = true
			if v := mf.GetMetric()[0].GetCounter().GetValue(); v != 3 {
				t.Errorf("devpilot_http_rate_limit_errors_total = %v, want 3", v)
			}
		}
	}
	if !found {
		t.Error("devpilot_http_rate_limit_errors_total not registered")
	}
}

func TestRateLimitOff(t *testing.T) {
	t.Parallel()
	rates := &fakeRates{}
	e := newEnv(t, withRates(rates, 0, 0))
	e.srv.HandleForTest(http.MethodPost, "/test/costly", func(w http.ResponseWriter, r *http.Request) error {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}, httpapi.Costly)
	for range 5 {
		if rr := e.do(request(http.MethodPost, "/test/costly", goodToken, nil)); rr.Code != http.StatusNoContent {
			t.Fatalf("status %d with no limit", rr.Code)
		}
	}
	if len(rates.calls) != 0 {
		t.Errorf("%d takes with no limit, want 0", len(rates.calls))
	}
}

// A public costly route (accepting an invitation) takes from the bucket of
// the client's address, so a stranger cannot guess at it without limit.
func TestPublicCostlyRouteRateLimitByAddress(t *testing.T) {
	t.Parallel()
	rates := &fakeRates{after: time.Second}
	e := newEnv(t, withRates(rates, 1, time.Minute))
	e.srv.HandleForTest(http.MethodPost, "/test/public-costly", func(w http.ResponseWriter, r *http.Request) error {
		w.WriteHeader(http.StatusNoContent)
		return nil
	}, httpapi.Public, httpapi.Costly)
	from := func(addr string) *http.Request {
		req := request(http.MethodPost, "/test/public-costly", "", nil)
		req.RemoteAddr = addr
		return req
	}
	if rr := e.do(from("192.0.2.7:5000")); rr.Code != http.StatusNoContent {
		t.Fatalf("first request: %d", rr.Code)
	}
	problemOf(t, e.do(from("192.0.2.7:6000")), http.StatusTooManyRequests) // another port, the same address
	if rr := e.do(from("198.51.100.1:5000")); rr.Code != http.StatusNoContent {
		t.Fatalf("another address: %d", rr.Code)
	}
	if want := (rateCall{"rate:addr:192.0.2.7", time.Minute, 1}); rates.calls[0] != want {
		t.Errorf("take %+v, want %+v", rates.calls[0], want)
	}
}
