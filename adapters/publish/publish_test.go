package publish_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/publish"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fakewordpress"
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
