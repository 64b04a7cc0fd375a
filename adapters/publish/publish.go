// Package publish sends approved content to publishing targets over HTTP: a
// signed webhook delivery and a WordPress post (REST API with an
// application password). It implements ports.ContentPublisher with
// net/http, one attempt per call; the content core retries.
//
// Unless Config.AllowPrivate, it calls only a URL whose host passes
// ports.CheckPublicHost (a plain ASCII name or a canonical IP address) and
// connects only to addresses that are ports.PublicAddr, whatever a host
// name resolves to (the dialer checks every address it connects to), and
// it follows no redirects, so a target cannot point it inside the network.
// An error quotes the remote's answer only with the target's credentials
// removed in every spelling an echo could use.
package publish

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/devpilot/devpilot/adapters/publicdial"
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
	// Resolver finds a host name's addresses (net.DefaultResolver); tests
	// set one that answers with the addresses they need.
	Resolver Resolver
}

// Resolver looks up the IP addresses of a host name; *net.Resolver is one.
type Resolver = publicdial.Resolver

// Client is the ports.ContentPublisher over net/http.
type Client struct {
	cfg  Config
	http *http.Client
}

var _ ports.ContentPublisher = (*Client)(nil)

// errPrivate is the dialer's refusal of an address that is not public.
var errPrivate = publicdial.ErrPrivate

// New returns a Client.
func New(cfg Config) *Client {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "devpilot"
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	dialer := &net.Dialer{Timeout: cfg.Timeout, Control: publicdial.Control(cfg.AllowPrivate)}
	tr := &http.Transport{Proxy: nil, DialContext: publicdial.DialContext(dialer, cfg.Resolver, cfg.AllowPrivate), TLSHandshakeTimeout: cfg.Timeout,
		ResponseHeaderTimeout: cfg.Timeout, MaxIdleConnsPerHost: 2, IdleConnTimeout: 30 * time.Second}
	return &Client{cfg: cfg, http: &http.Client{Transport: tr, Timeout: cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
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
	res, answer, err := c.post(ctx, "the webhook", p.URL, h, body, nil)
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
	_, answer, err := c.post(ctx, "WordPress", strings.TrimRight(p.SiteURL, "/")+"/wp-json/wp/v2/posts", h, body,
		CredentialForms(p.Username, p.Password))
	if err != nil {
		return ports.PublishResult{}, err
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
// upstream for any other answer, invalid for a URL whose host is not a
// plain public name or address, or a private address. No text of secrets
// (the credentials in every spelling) is in an error.
func (c *Client) post(ctx context.Context, what, rawURL string, h http.Header, body []byte, secrets []string) (*http.Response, []byte, error) {
	res, answer, err := c.send(ctx, what, rawURL, h, body, secrets)
	for _, s := range secrets {
		err = ports.Redact(err, s)
	}
	return res, answer, err
}

func (c *Client) send(ctx context.Context, what, rawURL string, h http.Header, body []byte, secrets []string) (*http.Response, []byte, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, nil, ports.Errorf(ports.KindInvalid, "%s URL is not an absolute http or https URL", what)
	}
	if reason := ports.CheckPublicHost(u.Hostname()); reason != "" && !c.cfg.AllowPrivate {
		return nil, nil, ports.Errorf(ports.KindInvalid, "%s URL cannot be called: its host %s", what, reason)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(body))
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
	if res.StatusCode/100 == 2 {
		return res, answer, nil
	}
	quoted := ports.Quote(string(answer), secrets...)
	if quoted != "" {
		quoted = ": " + quoted
	}
	switch {
	case res.StatusCode == http.StatusTooManyRequests:
		return nil, nil, &ports.Error{Kind: ports.KindRateLimited, RetryAfter: time.Second, Message: fmt.Sprintf("%s answered HTTP 429", what)}
	case res.StatusCode >= 500:
		return nil, nil, ports.Errorf(ports.KindUnavailable, "%s answered HTTP %d%s", what, res.StatusCode, quoted)
	}
	return nil, nil, ports.Errorf(ports.KindUpstream, "%s answered HTTP %d%s", what, res.StatusCode, quoted)
}

// CredentialForms returns the spellings of a Basic-auth credential a
// remote might echo in an answer, longest first: the password as given and
// without its spaces (WordPress application passwords are shown with
// spaces and accepted without), and each of them and "user:password" in
// standard and URL-safe base64 (padded or not) and percent-encoded (as a
// query value or a path, with upper- or lower-case hex); the passwords
// also JSON- and HTML-escaped.
func CredentialForms(user, password string) []string {
	if password == "" {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, pw := range []string{password, strings.ReplaceAll(password, " ", "")} {
		for _, s := range []string{pw, user + ":" + pw} {
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
				add(enc.EncodeToString([]byte(s)))
			}
			for _, esc := range []string{url.QueryEscape(s), url.PathEscape(s)} {
				add(esc)
				add(percentHex.ReplaceAllStringFunc(esc, strings.ToLower))
			}
		}
		add(pw)
		if j, err := json.Marshal(pw); err == nil {
			add(string(j[1 : len(j)-1]))
		}
		add(html.EscapeString(pw))
	}
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

var percentHex = regexp.MustCompile(`%[0-9A-F]{2}`)

func (c *Client) callError(what string, err error) error {
	if errors.Is(err, errPrivate) {
		return ports.Wrap(ports.KindInvalid, err, what+" resolves to a local or private address, which devpilot does not call")
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) {
		return ports.Wrap(ports.KindTimeout, err, fmt.Sprintf("%s did not answer within %s", what, c.cfg.Timeout))
	}
	return ports.Wrap(ports.KindUnavailable, err, what+" cannot be reached")
}
