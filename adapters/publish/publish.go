// Package publish sends approved content to publishing targets over HTTP: a
// signed webhook delivery and a WordPress post (REST API with an
// application password). It implements ports.ContentPublisher with
// net/http, one attempt per call; the content core retries.
//
// Unless Config.AllowPrivate, it never connects to a loopback, private,
// link-local or unspecified address, whatever a host name resolves to, and
// it follows no redirects, so a target cannot point it inside the network.
package publish

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/devpilot/devpilot/ports"
)

// DefaultTimeout bounds one call, from connecting to the end of the answer.
const DefaultTimeout = 10 * time.Second

// maxAnswer bounds how much of an answer is read.
const maxAnswer = 1 << 20

// The headers of a webhook delivery.
const (
	HeaderDelivery  = "X-Devpilot-Delivery"
	HeaderSignature = "X-Devpilot-Signature-256"
	HeaderEvent     = "X-Devpilot-Event"
)

// Config tunes the Client. Zero values take the defaults named.
type Config struct {
	// Timeout bounds one call (DefaultTimeout).
	Timeout time.Duration
	// AllowPrivate lets targets be loopback and private addresses (tests,
	// the sandbox).
	AllowPrivate bool
	// UserAgent is sent with every call ("devpilot").
	UserAgent string
}

// Client is the ports.ContentPublisher over net/http.
type Client struct {
	cfg  Config
	http *http.Client
}

var _ ports.ContentPublisher = (*Client)(nil)

var errPrivate = errors.New("publish: the target resolves to a local or private address")

// New returns a Client.
func New(cfg Config) *Client {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "devpilot"
	}
	dialer := &net.Dialer{Timeout: cfg.Timeout, Control: func(_, address string, _ syscall.RawConn) error {
		if cfg.AllowPrivate {
			return nil
		}
		ap, err := netip.ParseAddrPort(address)
		if err != nil || !publicAddr(ap.Addr()) {
			return errPrivate
		}
		return nil
	}}
	tr := &http.Transport{Proxy: nil, DialContext: dialer.DialContext, TLSHandshakeTimeout: cfg.Timeout,
		ResponseHeaderTimeout: cfg.Timeout, MaxIdleConnsPerHost: 2, IdleConnTimeout: 30 * time.Second}
	return &Client{cfg: cfg, http: &http.Client{Transport: tr, Timeout: cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// publicAddr is content.PublicAddr (the adapter does not import the core).
func publicAddr(addr netip.Addr) bool {
	addr = addr.Unmap()
	return addr.IsValid() && !addr.IsLoopback() && !addr.IsPrivate() && !addr.IsLinkLocalUnicast() &&
		!addr.IsLinkLocalMulticast() && !addr.IsInterfaceLocalMulticast() && !addr.IsMulticast() && !addr.IsUnspecified() &&
		!netip.MustParsePrefix("100.64.0.0/10").Contains(addr) && !netip.MustParsePrefix("0.0.0.0/8").Contains(addr)
}

// Sign returns the X-Devpilot-Signature-256 value of body under secret:
// "sha256=" and the hex HMAC-SHA256.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// webhookBody is what a webhook receives.
type webhookBody struct {
	DeliveryID  string              `json:"delivery_id"`
	Event       string              `json:"event"`
	Item        ports.PublishedItem `json:"item"`
	PublishedAt time.Time           `json:"published_at"`
}

// Webhook implements ports.ContentPublisher: it POSTs {"delivery_id",
// "event","item","published_at"} signed with the secret; any 2xx is
// success, and the remote URL is the answer's Location header or its JSON
// "url".
func (c *Client) Webhook(ctx context.Context, p ports.WebhookPost) (ports.PublishResult, error) {
	body, err := json.Marshal(webhookBody{DeliveryID: p.DeliveryID, Event: "content.published", Item: p.Item, PublishedAt: p.PublishedAt.UTC()})
	if err != nil {
		return ports.PublishResult{}, ports.Wrap(ports.KindInternal, err, "encode the delivery")
	}
	h := http.Header{}
	h.Set(HeaderDelivery, p.DeliveryID)
	h.Set(HeaderSignature, Sign(p.Secret, body))
	h.Set(HeaderEvent, "content.published")
	res, answer, err := c.post(ctx, "the webhook", p.URL, h, body)
	if err != nil {
		return ports.PublishResult{}, err
	}
	out := ports.PublishResult{RemoteURL: res.Header.Get("Location")}
	var v struct {
		URL string `json:"url"`
	}
	if out.RemoteURL == "" && json.Unmarshal(answer, &v) == nil {
		out.RemoteURL = v.URL
	}
	out.RemoteURL = cleanURL(out.RemoteURL)
	return out, nil
}

// WordPress implements ports.ContentPublisher: POST
// {site}/wp-json/wp/v2/posts with Basic auth, status publish; the remote URL
// is the post's link.
func (c *Client) WordPress(ctx context.Context, p ports.WordPressPost) (ports.PublishResult, error) {
	body, err := json.Marshal(map[string]string{"title": p.Title, "content": p.Content, "status": "publish"})
	if err != nil {
		return ports.PublishResult{}, ports.Wrap(ports.KindInternal, err, "encode the post")
	}
	h := http.Header{}
	req, _ := http.NewRequest(http.MethodPost, "http://x", nil)
	req.SetBasicAuth(p.Username, p.Password)
	h.Set("Authorization", req.Header.Get("Authorization"))
	_, answer, err := c.post(ctx, "WordPress", strings.TrimRight(p.SiteURL, "/")+"/wp-json/wp/v2/posts", h, body)
	if err != nil {
		return ports.PublishResult{}, ports.Redact(err, p.Password)
	}
	var v struct {
		Link string `json:"link"`
	}
	_ = json.Unmarshal(answer, &v)
	return ports.PublishResult{RemoteURL: cleanURL(v.Link)}, nil
}

// cleanURL keeps a remote URL only when it is a short http(s) URL.
func cleanURL(s string) string {
	if len(s) > 2000 || !utf8.ValidString(s) || !(strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://")) {
		return ""
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, s)
}

// post sends body as JSON and reads the answer: nil for a 2xx; otherwise
// a retryable Error for a 5xx, a 429, a timeout or a connection failure,
// upstream for any other answer, invalid for a private address.
func (c *Client) post(ctx context.Context, what, url string, h http.Header, body []byte) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, ports.Errorf(ports.KindInvalid, "%s URL cannot be called: %v", what, err)
	}
	req.Header = h
	req.Header.Set("Content-Type", "application/json; charset=utf-8")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.cfg.UserAgent)
	res, err := c.http.Do(req)
	if err != nil {
		return nil, nil, c.callError(what, err)
	}
	defer res.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(res.Body, maxAnswer))
	if err != nil && res.StatusCode/100 != 2 {
		return nil, nil, c.callError(what, err)
	}
	switch {
	case res.StatusCode/100 == 2:
		return res, answer, nil
	case res.StatusCode == http.StatusTooManyRequests:
		return nil, nil, &ports.Error{Kind: ports.KindRateLimited, RetryAfter: time.Second, Message: fmt.Sprintf("%s answered HTTP 429", what)}
	case res.StatusCode >= 500:
		return nil, nil, ports.Errorf(ports.KindUnavailable, "%s answered HTTP %d%s", what, res.StatusCode, snippet(answer))
	}
	return nil, nil, ports.Errorf(ports.KindUpstream, "%s answered HTTP %d%s", what, res.StatusCode, snippet(answer))
}

func (c *Client) callError(what string, err error) error {
	if errors.Is(err, errPrivate) {
		return ports.Wrap(ports.KindInvalid, err, what+" resolves to a local or private address, which devpilot does not call")
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) {
		return ports.Wrap(ports.KindTimeout, err, fmt.Sprintf("%s did not answer within %s", what, c.cfg.Timeout))
	}
	return ports.Wrap(ports.KindUnavailable, err, what+" cannot be reached")
}

// snippet is the start of an answer's text for an error message.
func snippet(b []byte) string {
	s := strings.ToValidUTF8(string(b), "")
	s = strings.Join(strings.Fields(s), " ")
	if s == "" {
		return ""
	}
	if r := []rune(s); len(r) > 200 {
		s = string(r[:200]) + "…"
	}
	return ": " + s
}
