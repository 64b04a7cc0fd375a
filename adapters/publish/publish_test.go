package publish_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/publish"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fakewordpress"
	"github.com/devpilot/devpilot/testkit/fixture"
)

func post() ports.WebhookPost {
	return ports.WebhookPost{Secret: "whsec_test", DeliveryID: "0193d2b4-0000-7000-8000-000000000001",
		PublishedAt: time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC),
		Item:        ports.PublishedItem{ID: "item-1", Title: "Hello «world»", Body: "# Hi\n", Format: "markdown", Version: 4}}
}

func TestWebhookSignsAndReadsTheRemoteURL(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []*http.Request
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got, bodies = append(got, r), append(bodies, b)
		mu.Unlock()
		if r.Header.Get(publish.HeaderSignature) != publish.Sign("whsec_test", b) {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`{"url":"https://example.com/p/1"}`))
	}))
	defer srv.Close()
	c := publish.New(publish.Config{AllowPrivate: true})
	p := post()
	p.URL = srv.URL
	res, err := c.Webhook(t.Context(), p)
	if err != nil || res.RemoteURL != "https://example.com/p/1" {
		t.Fatalf("Webhook = %+v, %v", res, err)
	}
	if got[0].Header.Get(publish.HeaderDelivery) != p.DeliveryID || got[0].Header.Get("Content-Type") != "application/json; charset=utf-8" {
		t.Errorf("headers %v", got[0].Header)
	}
	var body struct {
		DeliveryID  string              `json:"delivery_id"`
		Item        ports.PublishedItem `json:"item"`
		PublishedAt time.Time           `json:"published_at"`
	}
	if err := json.Unmarshal(bodies[0], &body); err != nil || body.DeliveryID != p.DeliveryID || body.Item.Title != p.Item.Title || !body.PublishedAt.Equal(p.PublishedAt) {
		t.Errorf("body %s (%v)", bodies[0], err)
	}
}

func TestWebhookErrors(t *testing.T) {
	t.Parallel()
	var status atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st := int(status.Load())
		if st == 0 {
			time.Sleep(300 * time.Millisecond)
			return
		}
		w.WriteHeader(st)
		_, _ = w.Write([]byte("nope"))
	}))
	defer srv.Close()
	c := publish.New(publish.Config{AllowPrivate: true, Timeout: 100 * time.Millisecond})
	p := post()
	p.URL = srv.URL
	for _, tc := range []struct {
		status    int
		kind      ports.Kind
		transient bool
	}{{0, ports.KindTimeout, true}, {500, ports.KindUnavailable, true}, {503, ports.KindUnavailable, true},
		{429, ports.KindRateLimited, true}, {404, ports.KindUpstream, false}, {302, ports.KindUpstream, false}} {
		status.Store(int32(tc.status))
		_, err := c.Webhook(t.Context(), p)
		if ports.KindOf(err) != tc.kind || ports.Transient(err) != tc.transient {
			t.Errorf("HTTP %d: %v (%s, transient %v), want %s", tc.status, err, ports.KindOf(err), ports.Transient(err), tc.kind)
		}
	}
	p.URL = "http://127.0.0.1:1/"
	if _, err := c.Webhook(t.Context(), p); !ports.Transient(err) {
		t.Errorf("connection refused: %v, want transient", err)
	}
}

func TestRefusesPrivateAddresses(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Error("a private address was called") }))
	defer srv.Close()
	c := publish.New(publish.Config{})
	p := post()
	p.URL = strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	if _, err := c.Webhook(t.Context(), p); !errors.Is(err, ports.ErrInvalid) {
		t.Errorf("webhook to %s: %v, want invalid", p.URL, err)
	}
	if _, err := c.WordPress(t.Context(), ports.WordPressPost{SiteURL: srv.URL, Username: "u", Password: "p"}); !errors.Is(err, ports.ErrInvalid) {
		t.Errorf("wordpress at %s: %v, want invalid", srv.URL, err)
	}
}

func TestWordPress(t *testing.T) {
	t.Parallel()
	wp := fakewordpress.New("editor", "abcd efgh ijkl")
	defer wp.Close()
	c := publish.New(publish.Config{AllowPrivate: true})
	res, err := c.WordPress(t.Context(), ports.WordPressPost{SiteURL: wp.URL() + "/", Username: "editor", Password: "abcd efgh ijkl",
		Title: "Hello", Content: "<p>Hi</p>"})
	if err != nil || res.RemoteURL != wp.URL()+"/?p=1" {
		t.Fatalf("WordPress = %+v, %v", res, err)
	}
	if posts := wp.Posts(); len(posts) != 1 || posts[0].Status != "publish" || posts[0].Title != "Hello" || posts[0].Content != "<p>Hi</p>" {
		t.Errorf("posts %+v", posts)
	}
	_, err = c.WordPress(t.Context(), ports.WordPressPost{SiteURL: wp.URL(), Username: "editor", Password: "wrong-secret"})
	if ports.KindOf(err) != ports.KindUpstream || strings.Contains(err.Error(), "wrong-secret") {
		t.Errorf("bad password: %v", err)
	}
	wp.Fail(502)
	if _, err := c.WordPress(t.Context(), ports.WordPressPost{SiteURL: wp.URL(), Username: "editor", Password: "abcd efgh ijkl"}); !ports.Transient(err) {
		t.Errorf("HTTP 502: %v, want transient", err)
	}
}

// A URL whose host is a local address in any spelling is refused before
// anything is sent, even when a target stored before the guard holds one.
func TestRefusesEverySpellingOfALocalAddress(t *testing.T) {
	t.Parallel()
	c := publish.New(publish.Config{})
	for _, host := range fixture.LocalHostSpellings {
		p := post()
		p.URL = "http://" + host + ":1/in"
		if _, err := c.Webhook(t.Context(), p); !errors.Is(err, ports.ErrInvalid) {
			t.Errorf("webhook to %s: %v, want invalid", p.URL, err)
		}
		if _, err := c.WordPress(t.Context(), ports.WordPressPost{SiteURL: "https://" + host, Username: "u", Password: "p"}); !errors.Is(err, ports.ErrInvalid) {
			t.Errorf("wordpress at %s: %v, want invalid", host, err)
		}
	}
}

// staticResolver answers every name with its addresses.
type staticResolver []netip.Addr

func (r staticResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return r, nil
}

// A public-looking name that resolves to a non-public address is refused
// when it is called, before a socket is made (the dialer's Control, which
// checks again as it connects, is TestControlRefusesNonPublicAddresses).
func TestDialRefusesNamesThatResolveToNonPublicAddresses(t *testing.T) {
	t.Parallel()
	for _, a := range fixture.NonPublicAddrs {
		c := publish.New(publish.Config{Resolver: staticResolver{netip.MustParseAddr(a)}, Timeout: 2 * time.Second})
		p := post()
		p.URL = "http://hooks.example.com:9/in"
		if _, err := c.Webhook(t.Context(), p); !errors.Is(err, ports.ErrInvalid) || !strings.Contains(err.Error(), "local or private") {
			t.Errorf("a name resolving to %s: %v, want invalid (local or private)", a, err)
		}
	}
	// A name with a public and a private address is refused whole.
	c := publish.New(publish.Config{Resolver: staticResolver{netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("127.0.0.1")}})
	p := post()
	p.URL = "http://hooks.example.com:9/in"
	if _, err := c.Webhook(t.Context(), p); !errors.Is(err, ports.ErrInvalid) {
		t.Errorf("a name resolving to a public and a private address: %v, want invalid", err)
	}
	// The resolver is the one used: with private addresses allowed, a name
	// resolving to the loopback reaches a local server.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"url":"https://example.com/1"}`))
	}))
	defer srv.Close()
	_, port, _ := strings.Cut(strings.TrimPrefix(srv.URL, "http://"), ":")
	c = publish.New(publish.Config{AllowPrivate: true, Resolver: staticResolver{netip.MustParseAddr("127.0.0.1")}})
	p.URL = "http://hooks.example.com:" + port + "/in"
	if res, err := c.Webhook(t.Context(), p); err != nil || res.RemoteURL != "https://example.com/1" {
		t.Errorf("allowed private: %+v, %v", res, err)
	}
}

// A WordPress answer that echoes the credentials is quoted with every
// spelling of them redacted: the password as given and without spaces,
// the Basic-auth base64 of user:password, and percent-encoded forms.
func TestWordPressErrorRedactsEchoedCredentials(t *testing.T) {
	t.Parallel()
	const user, password = "editor", "abcd efgh/ijkl+mnop"
	wp := fakewordpress.New(user, password)
	defer wp.Close()
	wp.EchoCredentials()
	c := publish.New(publish.Config{AllowPrivate: true})
	forbidden := []string{password, strings.ReplaceAll(password, " ", ""), base64.StdEncoding.EncodeToString([]byte(user + ":" + password)),
		url.QueryEscape(password), url.PathEscape(password), strings.ToLower(url.QueryEscape(password)), "abcd+efgh", "efgh%2Fijkl", "ijkl+mnop"}
	check := func(name string, err error, kind ports.Kind) {
		t.Helper()
		if ports.KindOf(err) != kind {
			t.Errorf("%s: %v, want %s", name, err, kind)
		}
		// Nothing errors.Unwrap reaches holds a spelling of the credentials.
		for u := errors.Unwrap(err); u != nil; u = errors.Unwrap(u) {
			for _, f := range forbidden {
				if strings.Contains(u.Error(), f) {
					t.Errorf("%s: errors.Unwrap reached %T holding %q", name, u, f)
				}
			}
		}
		for _, text := range []string{err.Error(), ports.Public(err).Message} {
			if !strings.Contains(text, ports.RedactedText) {
				t.Errorf("%s: %q does not show the echo redacted", name, text)
			}
			for _, f := range forbidden {
				if strings.Contains(text, f) {
					t.Errorf("%s: %q holds %q", name, text, f)
				}
			}
		}
	}
	wp.Fail(400)
	_, err := c.WordPress(t.Context(), ports.WordPressPost{SiteURL: wp.URL(), Username: user, Password: password, Title: "t"})
	check("HTTP 400", err, ports.KindUpstream)
	wp.Fail(503)
	_, err = c.WordPress(t.Context(), ports.WordPressPost{SiteURL: wp.URL(), Username: user, Password: password, Title: "t"})
	check("HTTP 503", err, ports.KindUnavailable)
}
