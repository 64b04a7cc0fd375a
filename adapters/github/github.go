// Package github implements ports.SCMProvider for GitHub and GitHub
// Enterprise Server with go-github (REST reads with the user's token) and
// golang.org/x/oauth2 (the OAuth web flow with PKCE S256), and
// ports.SCMWebhooks (Webhooks) for GitHub's webhook deliveries.
//
// Failures become ports.Error, with the cause kept for logs and the token
// never in a message:
//
//   - a primary or secondary rate limit (403 or 429 with rate-limit
//     headers) → rate_limited, RetryAfter until X-RateLimit-Reset or
//     Retry-After;
//   - 401 → upstream with Code "token_revoked";
//   - 404 → not_found;
//   - no answer within Config.Timeout → timeout;
//   - 5xx, a refused or broken connection → unavailable;
//   - any other answer, or one that cannot be read → upstream;
//   - a cursor, repository name or search query GitHub could not accept →
//     invalid, before any request;
//   - the caller cancelling ctx → an error wrapping context.Canceled (not
//     a ports.Error).
//
// Lists page like GitHub: Page.Limit is per_page (1..100, 30 by default)
// and the cursor is the page number, except ListActivity, whose cursor is
// GitHub's opaque activity cursor.
package github

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	gh "github.com/google/go-github/v84/github"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/oauth2"

	"github.com/devpilot/devpilot/ports"
)

// Defaults of Config.
const (
	DefaultWebURL  = "https://github.com"
	DefaultAPIURL  = "https://api.github.com/"
	DefaultTimeout = 15 * time.Second
)

// Scopes are the OAuth scopes devpilot asks for: private repositories'
// contents and metadata, and the user's profile.
var Scopes = []string{"repo", "read:user"}

// Config configures a Client. For GitHub Enterprise Server set WebURL to the
// server (https://ghe.example.com) and APIURL to its REST API
// (https://ghe.example.com/api/v3/); an APIURL other than DefaultAPIURL gets
// /api/v3/ appended unless it ends in it already or its host starts with
// "api." (go-github's WithEnterpriseURLs rule).
type Config struct {
	// ClientID and ClientSecret are the OAuth app's credentials. Required.
	ClientID     string
	ClientSecret string
	// WebURL is where the OAuth endpoints are, DefaultWebURL when empty.
	WebURL string
	// APIURL is the REST API's base URL, DefaultAPIURL when empty.
	APIURL string
	// HTTPClient sends every request; a new http.Client when nil.
	HTTPClient *http.Client
	// Timeout bounds each call, DefaultTimeout when zero or negative.
	Timeout time.Duration
	// Metrics, when set, receives the devpilot_github_calls_total counter
	// (by operation, a fixed name per method such as list_commits, and
	// outcome: ok, canceled or the kind of the error returned) and the
	// devpilot_github_call_duration_seconds histogram (by operation) of
	// every request. Collectors registered already are reused. Nothing is
	// measured when nil.
	Metrics prometheus.Registerer
}

// String describes the configuration without the client secret.
func (c Config) String() string {
	secret := "none"
	if c.ClientSecret != "" {
		secret = ports.RedactedText
	}
	return fmt.Sprintf("github.Config{ClientID: %q, ClientSecret: %s, WebURL: %q, APIURL: %q, Timeout: %s}",
		c.ClientID, secret, c.WebURL, c.APIURL, c.Timeout)
}

// GoString is String, so %#v does not print the secret either.
func (c Config) GoString() string { return c.String() }

// Client is a ports.SCMProvider for one GitHub or GitHub Enterprise Server.
// It is safe for concurrent use.
type Client struct {
	oauth   *oauth2.Config
	api     *gh.Client
	hc      *http.Client
	webURL  string
	timeout time.Duration
	now     func() time.Time
	metrics *callMetrics
}

var _ ports.SCMProvider = (*Client)(nil)

// New returns a Client for cfg. It returns an internal Error when the client
// id or secret is missing or a URL is not an absolute http(s) URL.
func New(cfg Config) (*Client, error) {
	if cfg.ClientID == "" || cfg.ClientSecret == "" {
		return nil, ports.Errorf(ports.KindInternal, "github: the OAuth client id and secret are required")
	}
	web := strings.TrimSuffix(cmp.Or(cfg.WebURL, DefaultWebURL), "/")
	if err := checkURL(web); err != nil {
		return nil, ports.Errorf(ports.KindInternal, "github: web URL %q: %v", web, err)
	}
	apiURL := cmp.Or(cfg.APIURL, DefaultAPIURL)
	if err := checkURL(apiURL); err != nil {
		return nil, ports.Errorf(ports.KindInternal, "github: API URL %q: %v", apiURL, err)
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	api := gh.NewClient(hc)
	if apiURL != DefaultAPIURL {
		var err error
		if api, err = api.WithEnterpriseURLs(apiURL, web); err != nil {
			return nil, ports.Errorf(ports.KindInternal, "github: API URL %q: %v", apiURL, err)
		}
	}
	api.UserAgent = "devpilot (" + api.UserAgent + ")"
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &Client{
		oauth: &oauth2.Config{
			ClientID:     cfg.ClientID,
			ClientSecret: cfg.ClientSecret,
			Endpoint: oauth2.Endpoint{
				AuthURL:   web + "/login/oauth/authorize",
				TokenURL:  web + "/login/oauth/access_token",
				AuthStyle: oauth2.AuthStyleInParams,
			},
			Scopes: Scopes,
		},
		api:     api,
		hc:      hc,
		webURL:  web,
		timeout: timeout,
		now:     time.Now,
		metrics: newCallMetrics(cfg.Metrics),
	}, nil
}

func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("not an absolute http(s) URL")
	}
	return nil
}

// AuthorizeURL is GitHub's authorize page for state, the PKCE S256
// challenge and redirectURI (left out when empty, so GitHub uses the app's
// registered callback URL), asking for Scopes. It never fails: a Client is
// configured.
func (c *Client) AuthorizeURL(state, codeChallenge, redirectURI string) (string, error) {
	opts := []oauth2.AuthCodeOption{
		oauth2.SetAuthURLParam("code_challenge", codeChallenge),
		oauth2.SetAuthURLParam("code_challenge_method", "S256"),
	}
	if redirectURI != "" {
		opts = append(opts, oauth2.SetAuthURLParam("redirect_uri", redirectURI))
	}
	return c.oauth.AuthCodeURL(state, opts...), nil
}

// Exchange trades an authorization code and its PKCE verifier for a token.
// redirectURI must be the one AuthorizeURL was given. Errors: invalid (with
// Code bad_verification_code, pkce_failed, redirect_uri_mismatch or
// incorrect_client_credentials) when GitHub refuses the exchange, and the
// errors of every call (see the package's error mapping).
func (c *Client) Exchange(ctx context.Context, code, codeVerifier, redirectURI string) (ports.SCMToken, error) {
	if code == "" {
		return ports.SCMToken{}, ports.Invalid("the GitHub authorization code is missing", ports.FieldError{Field: "code", Reason: "required"})
	}
	cctx, cancel := context.WithTimeout(context.WithValue(ctx, oauth2.HTTPClient, c.hc), c.timeout)
	defer cancel()
	opts := []oauth2.AuthCodeOption{oauth2.VerifierOption(codeVerifier)}
	if redirectURI != "" {
		opts = append(opts, oauth2.SetAuthURLParam("redirect_uri", redirectURI))
	}
	start := time.Now()
	tok, err := c.oauth.Exchange(cctx, code, opts...)
	if err != nil {
		err = c.exchangeFailed(ctx, err)
	}
	c.metrics.observe(opExchange, time.Since(start), err)
	if err != nil {
		return ports.SCMToken{}, err
	}
	out := ports.SCMToken{
		AccessToken:  tok.AccessToken,
		TokenType:    tok.TokenType,
		RefreshToken: tok.RefreshToken,
	}
	if scope, ok := tok.Extra("scope").(string); ok {
		out.Scope = scope
	}
	if !tok.Expiry.IsZero() {
		exp := tok.Expiry.UTC()
		out.Expiry = &exp
	}
	return out, nil
}
