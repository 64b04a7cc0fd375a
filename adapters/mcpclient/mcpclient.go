// Package mcpclient is the ports.MCPClient over the official MCP Go SDK
// (github.com/modelcontextprotocol/go-sdk), on its Streamable HTTP client
// transport. It keeps one session per server (and set of headers) in the
// process, caches each server's tool list for Config.ToolsTTL and drops
// the cache when the server notifies that its list changed; a replica
// that missed the notification refreshes when the TTL ends.
//
// Unless Config.AllowPrivate, it connects only to addresses that are
// ports.PublicAddr, whatever a host name resolves to (the dialer checks
// every address it connects to), and follows no redirects. Every answer to
// a request is read at most Config.MaxResponse bytes far: a larger one
// fails the call instead of being buffered whole. Header values (the
// server's credentials) are sent and never logged nor put in an error.
package mcpclient

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/devpilot/devpilot/adapters/publicdial"
	"github.com/devpilot/devpilot/ports"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Config tunes the Client. Zero values take the defaults named.
type Config struct {
	// ToolsTTL bounds how long a server's tool list is cached (1 minute).
	ToolsTTL time.Duration
	// MaxResponse bounds the bytes read of one answer (4 MiB).
	MaxResponse int64
	// MaxText bounds the text of a call's result (256 KiB); the rest is
	// cut and MCPResult.Truncated set.
	MaxText int
	// MaxTools bounds the tools read of one server (500).
	MaxTools int
	// DialTimeout bounds connecting (5 s).
	DialTimeout time.Duration
	// AllowPrivate lets servers be loopback and private addresses (tests,
	// the sandbox).
	AllowPrivate bool
	// Resolver finds a host name's addresses (net.DefaultResolver).
	Resolver Resolver
	// Logger hears what the SDK logs (nil discards).
	Logger *slog.Logger
}

// Resolver looks up the IP addresses of a host name; *net.Resolver is one.
type Resolver = publicdial.Resolver

// Client is the ports.MCPClient.
type Client struct {
	cfg  Config
	base http.RoundTripper
	mu   sync.Mutex
	conn map[string]*conn // by server id and endpoint hash
}

var _ ports.MCPClient = (*Client)(nil)

// conn is one server's session and tool cache.
type conn struct {
	mu      sync.Mutex
	session *mcp.ClientSession
	end     context.CancelFunc // ends the session's context
	tools   []ports.MCPTool
	fetched time.Time
	stale   bool
}

// New returns a Client.
func New(cfg Config) *Client {
	if cfg.ToolsTTL <= 0 {
		cfg.ToolsTTL = time.Minute
	}
	if cfg.MaxResponse <= 0 {
		cfg.MaxResponse = 4 << 20
	}
	if cfg.MaxText <= 0 {
		cfg.MaxText = 256 << 10
	}
	if cfg.MaxTools <= 0 {
		cfg.MaxTools = 500
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = 5 * time.Second
	}
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	dialer := &net.Dialer{Timeout: cfg.DialTimeout, Control: publicdial.Control(cfg.AllowPrivate)}
	tr := &http.Transport{Proxy: nil, DialContext: publicdial.DialContext(dialer, cfg.Resolver, cfg.AllowPrivate),
		TLSHandshakeTimeout: cfg.DialTimeout, MaxIdleConnsPerHost: 4, IdleConnTimeout: 90 * time.Second}
	return &Client{cfg: cfg, base: tr, conn: map[string]*conn{}}
}

// errPrivate is the dialer's refusal of an address that is not public.
var errPrivate = publicdial.ErrPrivate

// errTooLarge fails reading an answer past Config.MaxResponse.
var errTooLarge = errors.New("the server's answer is too large")

// roundTripper sends the server's headers and bounds what is read of the
// answers to requests (not of the standing event stream, a GET, whose
// events the transport bounds one by one).
type roundTripper struct {
	base    http.RoundTripper
	headers map[string]string
	max     int64
}

func (t roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("User-Agent", "devpilot")
	resp, err := t.base.RoundTrip(req)
	if err != nil || req.Method == http.MethodGet {
		return resp, err
	}
	trip, _ := req.Context().Value(tripKey{}).(context.CancelCauseFunc)
	resp.Body = &capped{r: resp.Body, left: t.max, trip: trip}
	return resp, nil
}

// tripKey keys, in a call's context, the function that ends the call with
// errTooLarge when its answer is too large, so that the call fails at once
// with that cause rather than wait for an answer that will not come.
type tripKey struct{}

// capped reads at most left bytes, then fails with errTooLarge (and trips
// the call, when it knows it).
type capped struct {
	r    io.ReadCloser
	left int64
	trip context.CancelCauseFunc
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		if c.trip != nil {
			c.trip(errTooLarge)
		}
		return 0, errTooLarge
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}

func (c *capped) Close() error { return c.r.Close() }

// key identifies a server's session: its id, address and headers.
func key(ep ports.MCPEndpoint) string {
	h := sha256.New()
	h.Write([]byte(ep.URL))
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range ep.Headers {
			if !yield(k) {
				return
			}
		}
	})
	for _, k := range names {
		h.Write([]byte{0})
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write([]byte(ep.Headers[k]))
	}
	return ep.ServerID + ":" + hex.EncodeToString(h.Sum(nil))
}

func (c *Client) connFor(ep ports.MCPEndpoint) *conn {
	k := key(ep)
	c.mu.Lock()
	defer c.mu.Unlock()
	cn, ok := c.conn[k]
	if !ok {
		// A server's older sessions (another address or headers) go.
		for old, o := range c.conn {
			if strings.HasPrefix(old, ep.ServerID+":") {
				o.drop()
				delete(c.conn, old)
			}
		}
		cn = &conn{}
		c.conn[k] = cn
	}
	return cn
}

// drop closes the session, if any; the next use connects anew. The
// cached list goes too: without a session no notification says it changed.
func (cn *conn) drop() {
	cn.mu.Lock()
	s, end := cn.session, cn.end
	cn.session, cn.end, cn.stale = nil, nil, true
	cn.mu.Unlock()
	if s != nil {
		go func() { // closing may wait on the server; nobody waits for it
			s.Close()
			end()
		}()
	}
}

// sessionFor returns the server's session, connecting when it has none.
func (c *Client) sessionFor(ctx context.Context, ep ports.MCPEndpoint, cn *conn) (*mcp.ClientSession, error) {
	cn.mu.Lock()
	defer cn.mu.Unlock()
	if cn.session != nil {
		return cn.session, nil
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "devpilot", Version: "1"}, &mcp.ClientOptions{
		Logger: c.cfg.Logger,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			cn.mu.Lock()
			cn.stale = true
			cn.mu.Unlock()
		},
	})
	tr := &mcp.StreamableClientTransport{
		Endpoint: ep.URL,
		HTTPClient: &http.Client{
			Transport:     roundTripper{base: c.base, headers: ep.Headers, max: c.cfg.MaxResponse},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		MaxRetries: 1,
		// Larger than MaxResponse, so that the answer's cap trips first
		// and the call fails at once.
		MaxEventSize: int(2 * c.cfg.MaxResponse),
	}
	// The session outlives the call that opens it (its event stream brings
	// tools/list_changed), so it is opened under a context of its own,
	// ended when the session is dropped; the caller waits for it only as
	// long as its own context allows.
	life, end := context.WithCancel(context.Background())
	type opened struct {
		s   *mcp.ClientSession
		err error
	}
	ch := make(chan opened, 1)
	go func() {
		s, err := client.Connect(life, tr, nil)
		ch <- opened{s, err}
	}()
	select {
	case o := <-ch:
		if o.err != nil {
			end()
			return nil, mapErr(ctx, "connecting", o.err)
		}
		cn.session, cn.end = o.s, end
		return o.s, nil
	case <-ctx.Done():
		end()
		go func() {
			if o := <-ch; o.s != nil {
				o.s.Close()
			}
		}()
		return nil, mapErr(ctx, "connecting", ctx.Err())
	}
}

// ListTools implements ports.MCPClient.
func (c *Client) ListTools(ctx context.Context, ep ports.MCPEndpoint) ([]ports.MCPTool, error) {
	return c.list(ctx, ep, false)
}

// Refresh implements ports.MCPClient.
func (c *Client) Refresh(ctx context.Context, ep ports.MCPEndpoint) ([]ports.MCPTool, error) {
	return c.list(ctx, ep, true)
}

func (c *Client) list(ctx context.Context, ep ports.MCPEndpoint, fresh bool) ([]ports.MCPTool, error) {
	cn := c.connFor(ep)
	cn.mu.Lock()
	if !fresh && !cn.stale && cn.tools != nil && time.Since(cn.fetched) < c.cfg.ToolsTTL {
		tools := cn.tools
		cn.mu.Unlock()
		return tools, nil
	}
	cn.mu.Unlock()
	tools, err := c.fetch(ctx, ep, cn)
	if err != nil && ctx.Err() == nil && isBroken(err) {
		// The session may have ended on the server (a restart): once more
		// with a new one. Listing changes nothing.
		cn.drop()
		tools, err = c.fetch(ctx, ep, cn)
	}
	if err != nil {
		cn.drop()
		return nil, err
	}
	return tools, nil
}

func (c *Client) fetch(ctx context.Context, ep ports.MCPEndpoint, cn *conn) ([]ports.MCPTool, error) {
	s, err := c.sessionFor(ctx, ep, cn)
	if err != nil {
		return nil, err
	}
	cn.mu.Lock()
	cn.stale = false // a notification from here on makes the list stale again
	cn.mu.Unlock()
	tools := []ports.MCPTool{}
	for t, err := range s.Tools(ctx, nil) {
		if err != nil {
			return nil, mapErr(ctx, "listing tools", err)
		}
		if len(tools) == c.cfg.MaxTools {
			break
		}
		tools = append(tools, toolOf(t))
	}
	cn.mu.Lock()
	cn.tools, cn.fetched = tools, time.Now()
	cn.mu.Unlock()
	return tools, nil
}

func toolOf(t *mcp.Tool) ports.MCPTool {
	out := ports.MCPTool{Name: t.Name, Description: t.Description}
	if t.Annotations != nil {
		out.ReadOnly = t.Annotations.ReadOnlyHint
		// The spec's default for a tool that is not read-only is destructive.
		out.Destructive = !t.Annotations.ReadOnlyHint && (t.Annotations.DestructiveHint == nil || *t.Annotations.DestructiveHint)
	} else {
		out.Destructive = true
	}
	if t.InputSchema != nil {
		if b, err := json.Marshal(t.InputSchema); err == nil {
			out.InputSchema = b
		}
	}
	return out
}

// CallTool implements ports.MCPClient. A call is never repeated: it may
// have done its work before the connection broke.
func (c *Client) CallTool(ctx context.Context, ep ports.MCPEndpoint, name string, args json.RawMessage) (ports.MCPResult, error) {
	cn := c.connFor(ep)
	s, err := c.sessionFor(ctx, ep, cn)
	if err != nil {
		return ports.MCPResult{}, err
	}
	var arguments any = map[string]any{}
	if len(args) > 0 {
		arguments = args
	}
	cctx, trip := context.WithCancelCause(ctx)
	defer trip(nil)
	res, err := s.CallTool(context.WithValue(cctx, tripKey{}, trip), &mcp.CallToolParams{Name: name, Arguments: arguments})
	if err != nil {
		if errors.Is(context.Cause(cctx), errTooLarge) {
			cn.drop() // the answer was left unread
			return ports.MCPResult{}, &ports.Error{Kind: ports.KindUpstream,
				Message: fmt.Sprintf("calling %s: the server's answer is larger than %d bytes; it was not read", ports.Clip(name, 64), c.cfg.MaxResponse), Err: err}
		}
		if isBroken(err) || ctx.Err() != nil {
			cn.drop()
		}
		return ports.MCPResult{}, mapErr(ctx, "calling "+ports.Clip(name, 64), err)
	}
	return c.result(res), nil
}

// result is the text of a call's answer: its text contents, one per
// line, else its structured content as JSON; other contents are named.
func (c *Client) result(res *mcp.CallToolResult) ports.MCPResult {
	var b strings.Builder
	for _, ct := range res.Content {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		switch v := ct.(type) {
		case *mcp.TextContent:
			b.WriteString(v.Text)
		case *mcp.ImageContent:
			b.WriteString("[an image (" + v.MIMEType + ") was left out]")
		case *mcp.AudioContent:
			b.WriteString("[audio (" + v.MIMEType + ") was left out]")
		case *mcp.ResourceLink:
			b.WriteString("[a link to the resource " + v.URI + "]")
		case *mcp.EmbeddedResource:
			if v.Resource != nil && v.Resource.Text != "" {
				b.WriteString(v.Resource.Text)
			} else {
				b.WriteString("[an embedded resource was left out]")
			}
		default:
			b.WriteString("[a content item devpilot does not read was left out]")
		}
		if b.Len() > c.cfg.MaxText {
			break
		}
	}
	if b.Len() == 0 && res.StructuredContent != nil {
		if j, err := json.Marshal(res.StructuredContent); err == nil {
			b.Write(j)
		}
	}
	text, cut := ports.ClipBytes(b.String(), c.cfg.MaxText)
	return ports.MCPResult{Text: text, IsError: res.IsError, Truncated: cut}
}

// isBroken reports whether err says the session or its connection is gone.
func isBroken(err error) bool {
	if errors.Is(err, mcp.ErrConnectionClosed) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNREFUSED) {
		return true
	}
	msg := err.Error()
	return strings.Contains(msg, "session not found") || strings.Contains(msg, "404") || strings.Contains(msg, "connection")
}

// mapErr makes an error of the SDK one of the port's kinds, with a message
// that holds no header value (the SDK's errors name the URL at most).
func mapErr(ctx context.Context, doing string, err error) error {
	msg := ports.Clip(ports.OneLine(err.Error()), 300)
	switch {
	case ctx.Err() != nil:
		return &ports.Error{Kind: ports.KindTimeout, Message: doing + ": it did not answer in time", Err: err}
	case errors.Is(err, errPrivate):
		return &ports.Error{Kind: ports.KindInvalid, Message: doing + ": the server resolves to a local or private address", Err: err}
	case errors.Is(err, errTooLarge) || strings.Contains(msg, "too large") || strings.Contains(msg, "exceeds"):
		return &ports.Error{Kind: ports.KindUpstream, Message: doing + ": the server's answer is too large", Err: err}
	case isBroken(err):
		return &ports.Error{Kind: ports.KindUnavailable, Message: doing + ": the server could not be reached or broke off (" + msg + ")", Err: err}
	}
	return &ports.Error{Kind: ports.KindUpstream, Message: doing + ": " + msg, Err: err}
}

// Close closes every session.
func (c *Client) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, cn := range c.conn {
		cn.drop()
		delete(c.conn, k)
	}
}
