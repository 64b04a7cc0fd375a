package app_test

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
)

// netRequest is one request of the page as the browser's network events
// tell it.
type netRequest struct {
	url       string
	status    int64 // as the server answered it: 304 for a revalidation the cache then answers 200
	wire      int64 // the status on the wire, when the browser tells it
	encoding  string
	fromCache bool    // served by the browser's cache, the server never asked
	bytes     float64 // bytes received over the network, headers included
	done      bool
}

// netLog records the page's requests from the DevTools network events.
type netLog struct {
	mu    sync.Mutex
	order []network.RequestID
	reqs  map[network.RequestID]*netRequest
}

// watchNetwork starts recording the requests of b's page.
func watchNetwork(b *browser) *netLog {
	b.t.Helper()
	l := &netLog{reqs: map[network.RequestID]*netRequest{}}
	err := chromedp.Listen(b.ctx, func(ev any) {
		l.mu.Lock()
		defer l.mu.Unlock()
		get := func(id network.RequestID) *netRequest {
			r := l.reqs[id]
			if r == nil {
				r = &netRequest{}
				l.reqs[id] = r
				l.order = append(l.order, id)
			}
			return r
		}
		switch ev := ev.(type) {
		case *network.EventRequestWillBeSent:
			get(ev.RequestID).url = ev.Request.URL
		case *network.EventRequestServedFromCache:
			get(ev.RequestID).fromCache = true
		case *network.EventResponseReceived:
			r := get(ev.RequestID)
			r.status = ev.Response.Status
			r.fromCache = r.fromCache || ev.Response.FromDiskCache || ev.Response.FromPrefetchCache || ev.Response.FromServiceWorker
			for k, v := range ev.Response.Headers {
				if strings.EqualFold(k, "Content-Encoding") {
					r.encoding = fmt.Sprint(v)
				}
			}
		case *network.EventResponseReceivedExtraInfo:
			get(ev.RequestID).wire = ev.StatusCode
		case *network.EventLoadingFinished:
			r := get(ev.RequestID)
			r.bytes, r.done = ev.EncodedDataLength, true
		case *network.EventLoadingFailed:
			get(ev.RequestID).done = true
		}
	})
	if err != nil {
		b.t.Fatal(err)
	}
	return l
}

// visit is what one page load asked of the network.
type visit struct {
	static, api           []*netRequest // the requests that reached the server
	cached                int           // the requests the browser's cache answered
	staticBytes, apiBytes float64
}

// take returns the requests recorded since the last take, once every one
// has finished, and forgets them.
func (l *netLog) take(t *testing.T) visit {
	t.Helper()
	time.Sleep(500 * time.Millisecond) // late requests (icons, the manifest) start
	deadline := time.Now().Add(10 * time.Second)
	for {
		l.mu.Lock()
		pending := 0
		for _, r := range l.reqs {
			if !r.done && !strings.HasPrefix(r.url, "data:") {
				pending++
			}
		}
		if pending == 0 || time.Now().After(deadline) {
			break
		}
		l.mu.Unlock()
		time.Sleep(50 * time.Millisecond)
	}
	defer l.mu.Unlock()
	var v visit
	for _, id := range l.order {
		r := l.reqs[id]
		if r.wire != 0 {
			r.status = r.wire
		}
		u, err := url.Parse(r.url)
		switch {
		case err != nil || u.Scheme == "data" || r.url == "":
		case r.fromCache:
			v.cached++
		case strings.HasPrefix(u.Path, "/api/") || strings.HasPrefix(u.Path, "/auth/"):
			v.api = append(v.api, r)
			v.apiBytes += r.bytes
		default:
			v.static = append(v.static, r)
			v.staticBytes += r.bytes
		}
	}
	l.order, l.reqs = nil, map[network.RequestID]*netRequest{}
	return v
}

func (v visit) String() string {
	paths := func(rs []*netRequest) string {
		var out []string
		for _, r := range rs {
			u, _ := url.Parse(r.url)
			out = append(out, fmt.Sprintf("%s %d", u.Path, r.status))
		}
		sort.Strings(out)
		return strings.Join(out, ", ")
	}
	return fmt.Sprintf("%d console requests reached the server (%.0f bytes: %s); %d API calls (%.0f bytes: %s); %d answered by the browser's cache",
		len(v.static), v.staticBytes, paths(v.static), len(v.api), v.apiBytes, paths(v.api), v.cached)
}

// TestConsoleDeliveryCaching loads the console's sign-in page in a browser
// with an empty cache, then again (a second visit: a navigation to the same
// address), then reloads it, counting the requests that reach the server
// (issue 35): after the first visit, the console itself is one request, the
// page revalidated (304); its files come from the browser's cache under
// their hashed URLs. The sign-in page's API calls (the session, the
// single-sign-on configuration, the sandbox's demo token) are data, counted
// and reported apart. Signed in, a reload again fetches no console file.
func TestConsoleDeliveryCaching(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			first := startBrowser(t, d)
			b := first.newContext() // its own, empty, cache
			net := watchNetwork(b)
			signInPage := func() {
				b.t.Helper()
				b.do(chromedp.Navigate(b.base + "/"))
				b.do(chromedp.WaitVisible(chromedp.ID("demo-signin")))
			}

			signInPage()
			v1 := net.take(t)
			t.Logf("first visit: %s", v1)
			if len(v1.static) < 10 {
				t.Errorf("first visit: %s; the console's files were not fetched", v1)
			}
			for _, r := range v1.static {
				if r.status != 200 {
					t.Errorf("first visit: %s answered %d", r.url, r.status)
				}
				if strings.HasSuffix(r.url, ".js") && r.encoding != "br" {
					t.Errorf("first visit: %s sent with Content-Encoding %q, want br", r.url, r.encoding)
				}
			}

			for _, how := range []string{"second visit", "reload"} {
				if how == "reload" {
					b.do(chromedp.Reload())
					b.do(chromedp.WaitVisible(chromedp.ID("demo-signin")))
				} else {
					signInPage()
				}
				v := net.take(t)
				t.Logf("%s: %s", how, v)
				if len(v.static) > 1 || len(v.static) == 1 && v.static[0].status != 304 {
					t.Errorf("%s: %s; want only the page, revalidated (304)", how, v)
				}
				if v.cached < 10 {
					t.Errorf("%s: only %d requests from the cache", how, v.cached)
				}
			}

			// The console cached works: sign in, and a signed-in reload too
			// fetches no console file.
			b.signInDemo()
			net.take(t)
			b.do(chromedp.Reload())
			b.do(chromedp.WaitVisible(chromedp.CSS(`#nav a[href="#/chat"]`)))
			v := net.take(t)
			t.Logf("signed-in reload: %s", v)
			if len(v.static) > 1 {
				t.Errorf("signed-in reload: %s", v)
			}
			if who := b.text("#who"); !strings.Contains(who, "demo@example.com") {
				t.Errorf("after the reload, signed in as %q", who)
			}
		})
	}
}
