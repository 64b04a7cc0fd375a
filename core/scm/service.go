// Package scm is the core of devpilot's source-control integration: a user
// connects their GitHub account (OAuth web flow with PKCE), devpilot records
// the repositories the token can see, reads commits, pull requests and
// activity for the API and the assistant, and turns the provider's webhook
// deliveries into repository activity in the background.
//
// The access token is sealed with the Cipher, bound to the connection's id,
// before it reaches the store; it is opened only for the duration of one
// provider call and is never returned, logged or put in an error. A token the
// provider no longer accepts marks the connection broken, and it is not used
// again until the user reconnects.
package scm

import (
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/devpilot/devpilot/core/internal/groupcommit"
	"github.com/devpilot/devpilot/ports"
)

// Config tunes the SCM core. Zero values take the defaults named.
type Config struct {
	// PublicURL is where devpilot is reached from browsers, such as
	// https://devpilot.example.com; the OAuth redirect URI is built from it
	// and redirect_after must stay on its origin.
	PublicURL string
	// WebhookSecret signs the provider's webhook deliveries; none configured
	// refuses every delivery (unavailable).
	WebhookSecret []byte
	// StateTTL is how long an OAuth authorisation may take (10 minutes).
	StateTTL time.Duration
	// Provider names the provider connections are made to ("github").
	Provider string
	// WebhookBatch bounds the webhook deliveries stored in one transaction
	// (DefaultWebhookBatch); 1 stores each on its own.
	WebhookBatch int
	// WebhookWriters bounds the transactions storing webhook deliveries at
	// once (DefaultWebhookWriters). Deliveries arriving while they are all
	// under way wait, and are stored together in the next.
	WebhookWriters int
	// WebhookReaders bounds the webhook bodies read (and verified) at once
	// (DefaultWebhookReaders). A delivery arriving while they are all under
	// way waits up to WebhookReadWait (DefaultWebhookReadWait), then is
	// refused as unavailable with a RetryAfter.
	WebhookReaders  int
	WebhookReadWait time.Duration
	// SpoolThreshold is the most of one webhook body held in memory before
	// its signature is verified (DefaultSpoolThreshold); beyond it the body
	// goes to a temporary file in SpoolDir (os.TempDir() when ""), removed
	// once the delivery is handled.
	SpoolThreshold int
	SpoolDir       string
	// ReplayWindow is how long the digest of a delivery's raw body is
	// remembered (DefaultReplayWindow): the same body signed once and sent
	// again within it, under another delivery id or another event's name,
	// is a duplicate.
	ReplayWindow time.Duration
}

// The defaults and limits of the SCM core.
const (
	DefaultStateTTL  = 10 * time.Minute
	DefaultProvider  = "github"
	DefaultPageLimit = ports.DefaultPageLimit
	// MaxPageLimit is the largest limit a list accepts (ports.MaxPageLimit);
	// pages from the provider hold at most ProviderPageLimit items, so a
	// larger limit is served as that many with a next cursor.
	MaxPageLimit      = ports.MaxPageLimit
	ProviderPageLimit = 100
	MaxQueryLen       = 256
	MaxRedirectLen    = 2048
	// CallbackPath is where the provider sends the user back, under PublicURL.
	CallbackPath = "/scm-oauth/callback"
	// AuthorizePath is where a user starts (again) to connect.
	AuthorizePath = "/scm-oauth/authorize"
	// repoPages and repoPageSize bound the repositories recorded on connect.
	repoPages    = 10
	repoPageSize = 100
)

// Error codes of the SCM core, set as ports.Error.Code.
const (
	// CodeNotConnected (precondition_failed): the caller has no connection.
	CodeNotConnected = "not_connected"
	// CodeConnectionBroken (upstream): the connection's token stopped working.
	CodeConnectionBroken = "connection_broken"
	// CodeInvalidState (malformed): an OAuth callback's state is unknown,
	// used or expired.
	CodeInvalidState = "invalid_state"
	// CodeBrowserMismatch (malformed): an OAuth callback comes from a
	// browser without the binding of the one that started the flow.
	CodeBrowserMismatch = "browser_mismatch"
	// CodeTokenRevoked is the provider's code for a token it no longer
	// accepts (see ports.SCMProvider).
	CodeTokenRevoked = "token_revoked"
)

func (c Config) withDefaults() Config {
	if c.StateTTL <= 0 {
		c.StateTTL = DefaultStateTTL
	}
	if strings.TrimSpace(c.Provider) == "" {
		c.Provider = DefaultProvider
	}
	if c.WebhookBatch <= 0 {
		c.WebhookBatch = DefaultWebhookBatch
	}
	if c.WebhookWriters <= 0 {
		c.WebhookWriters = DefaultWebhookWriters
	}
	if c.WebhookReaders <= 0 {
		c.WebhookReaders = DefaultWebhookReaders
	}
	if c.WebhookReadWait <= 0 {
		c.WebhookReadWait = DefaultWebhookReadWait
	}
	if c.SpoolThreshold <= 0 {
		c.SpoolThreshold = DefaultSpoolThreshold
	}
	if c.ReplayWindow <= 0 {
		c.ReplayWindow = DefaultReplayWindow
	}
	return c
}

// Deps are the ports a Service needs. Random nil is crypto/rand; Observer
// nil hears nothing; Logger nil discards logs.
type Deps struct {
	Store    ports.SCMStore
	Provider ports.SCMProvider
	// Webhooks reads the provider's webhook deliveries; without it
	// ReceiveWebhook and ProcessDelivery are unavailable.
	Webhooks ports.SCMWebhooks
	Cipher   ports.Cipher
	Jobs     ports.JobQueue
	Tx       ports.Transactor
	Clock    ports.Clock
	IDs      ports.IDs
	Random   io.Reader
	// Observer hears the webhook deliveries received and processed.
	Observer ports.Observer
	Logger   *slog.Logger
}

// Service is the SCM core's use cases. Reads and Authorize act for the
// principal in ctx and fail with unauthenticated without one; Callback,
// ReceiveWebhook and ProcessDelivery are public (the state, the signature or
// the job says who). Errors of the provider pass through with their kinds
// (rate_limited with RetryAfter, upstream, timeout, unavailable, not_found).
type Service struct {
	cfg    Config
	d      Deps
	log    *slog.Logger
	public *url.URL // nil when Config.PublicURL is not an absolute http(s) URL
	ingest *groupcommit.Committer[pendingDelivery, bool]
	// readers holds a token for each webhook body being read.
	readers chan struct{}
	// buffered, when set (by tests), hears how many bytes of a webhook body
	// are held in memory each time that grows.
	buffered func(n int)
}

// New returns a Service over the given ports.
func New(cfg Config, d Deps) *Service {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Random == nil {
		d.Random = rand.Reader
	}
	if d.Observer == nil {
		d.Observer = ports.NopObserver{}
	}
	s := &Service{cfg: cfg.withDefaults(), d: d, log: d.Logger.With("core", "scm")}
	s.ingest = newIngest(s.cfg.WebhookBatch, s.cfg.WebhookWriters, s.storeDeliveries)
	s.readers = make(chan struct{}, s.cfg.WebhookReaders)
	if u, err := url.Parse(strings.TrimRight(cfg.PublicURL, "/")); err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" {
		s.public = u
	}
	return s
}

// providerName is the provider as people know it.
func (s *Service) providerName() string {
	if s.cfg.Provider == "github" {
		return "GitHub"
	}
	return s.cfg.Provider
}

func checkPage(page ports.Page) (ports.Page, error) {
	page, err := page.Checked()
	if err != nil {
		return page, err
	}
	page.Limit = min(page.Limit, ProviderPageLimit)
	return page, nil
}

// detached keeps ctx's values but not its cancellation, for bookkeeping
// that must happen even when the caller has gone.
func detached(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }
