// Package oidc signs console users in with an OpenID Connect provider: the
// authorization code flow with PKCE (golang.org/x/oauth2) and ID token
// verification (github.com/coreos/go-oidc). It implements
// ports.SignInProvider.
//
// Failures map to ports.Error kinds: a code the provider refuses or an ID
// token that does not verify (signature, issuer, audience, expiry, nonce) →
// unauthenticated; the provider unreachable or failing → upstream; no answer
// within Config.Timeout → timeout.
package oidc

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	gooidc "github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/devpilot/devpilot/ports"
)

// DefaultTimeout bounds each call to the provider when Config.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// DefaultGroupsClaim is the ID token claim read for groups when
// Config.GroupsClaim is empty.
const DefaultGroupsClaim = "groups"

// Config says which provider to sign in with and as which client.
type Config struct {
	// IssuerURL is the provider's issuer; its discovery document is read
	// from IssuerURL/.well-known/openid-configuration.
	IssuerURL    string
	ClientID     string
	ClientSecret string
	// RedirectURL is devpilot's callback, registered with the provider
	// (https://devpilot.example.com/auth/oidc/callback).
	RedirectURL string
	// Scopes are asked for besides openid; nil means email and profile.
	Scopes []string
	// GroupsClaim names the claim that lists the user's groups.
	GroupsClaim string
	// Timeout bounds each call to the provider.
	Timeout time.Duration
	// Client makes the calls; nil means http.DefaultClient's transport.
	Client *http.Client
	// Now is the clock ID tokens' expiry is checked against; nil: time.Now.
	Now func() time.Time
}

// String hides the client secret.
func (c Config) String() string {
	secret := ""
	if c.ClientSecret != "" {
		secret = ports.RedactedText
	}
	return fmt.Sprintf("oidc.Config{IssuerURL: %q, ClientID: %q, ClientSecret: %q, RedirectURL: %q}",
		c.IssuerURL, c.ClientID, secret, c.RedirectURL)
}

// Provider is a ports.SignInProvider. It reads the discovery document on
// first use and keeps it, so devpilot starts while the provider is down.
type Provider struct {
	cfg    Config
	client *http.Client

	mu       sync.Mutex
	provider *gooidc.Provider // nil until discovered
}

var _ ports.SignInProvider = (*Provider)(nil)

// New returns a Provider for cfg; it makes no call yet.
func New(cfg Config) (*Provider, error) {
	if cfg.IssuerURL == "" || cfg.ClientID == "" || cfg.RedirectURL == "" {
		return nil, errors.New("oidc: IssuerURL, ClientID and RedirectURL are required")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.GroupsClaim == "" {
		cfg.GroupsClaim = DefaultGroupsClaim
	}
	if cfg.Scopes == nil {
		cfg.Scopes = []string{"email", "profile"}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	client := &http.Client{Timeout: cfg.Timeout}
	if cfg.Client != nil {
		c := *cfg.Client
		c.Timeout = cfg.Timeout
		client = &c
	}
	return &Provider{cfg: cfg, client: client}, nil
}

// discover returns the provider's metadata, reading it on first success.
func (p *Provider) discover(ctx context.Context) (*gooidc.Provider, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.provider != nil {
		return p.provider, nil
	}
	ctx, cancel := context.WithTimeout(gooidc.ClientContext(ctx, p.client), p.cfg.Timeout)
	defer cancel()
	provider, err := gooidc.NewProvider(ctx, p.cfg.IssuerURL)
	if err != nil {
		return nil, upstream(err, "reading the identity provider's discovery document")
	}
	p.provider = provider
	return provider, nil
}

func (p *Provider) oauth(provider *gooidc.Provider) *oauth2.Config {
	return &oauth2.Config{
		ClientID:     p.cfg.ClientID,
		ClientSecret: p.cfg.ClientSecret,
		Endpoint:     provider.Endpoint(),
		RedirectURL:  p.cfg.RedirectURL,
		Scopes:       append([]string{gooidc.ScopeOpenID}, p.cfg.Scopes...),
	}
}

// AuthURL implements ports.SignInProvider.
func (p *Provider) AuthURL(ctx context.Context, state, nonce, verifier string) (string, error) {
	provider, err := p.discover(ctx)
	if err != nil {
		return "", err
	}
	return p.oauth(provider).AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), gooidc.Nonce(nonce)), nil
}

// Exchange implements ports.SignInProvider.
func (p *Provider) Exchange(ctx context.Context, code, verifier, nonce string) (ports.ExternalIdentity, error) {
	provider, err := p.discover(ctx)
	if err != nil {
		return ports.ExternalIdentity{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	ctx = context.WithValue(gooidc.ClientContext(ctx, p.client), oauth2.HTTPClient, p.client)
	tok, err := p.oauth(provider).Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.Response != nil && re.Response.StatusCode < 500 {
			return ports.ExternalIdentity{}, refused("the identity provider refused the sign-in code")
		}
		return ports.ExternalIdentity{}, upstream(err, "redeeming the sign-in code")
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return ports.ExternalIdentity{}, &ports.Error{Kind: ports.KindUpstream, Message: "the identity provider sent no ID token"}
	}
	idt, err := provider.VerifierContext(ctx, &gooidc.Config{ClientID: p.cfg.ClientID, Now: p.cfg.Now}).Verify(ctx, raw)
	if err != nil {
		var expired *gooidc.TokenExpiredError
		switch {
		case errors.As(err, &expired):
			return ports.ExternalIdentity{}, refused("the ID token has expired")
		case timedOut(err):
			return ports.ExternalIdentity{}, upstream(err, "fetching the identity provider's keys")
		}
		return ports.ExternalIdentity{}, refused("the ID token is not valid for devpilot")
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(nonce)) != 1 || nonce == "" {
		return ports.ExternalIdentity{}, refused("the ID token's nonce does not match this sign-in")
	}
	var claims map[string]any
	if err := idt.Claims(&claims); err != nil {
		return ports.ExternalIdentity{}, refused("the ID token's claims cannot be read")
	}
	out := ports.ExternalIdentity{Issuer: idt.Issuer, Subject: idt.Subject}
	out.Email, _ = claims["email"].(string)
	switch v := claims["email_verified"].(type) {
	case bool:
		out.EmailVerified = v
	case string: // some providers send "true"
		out.EmailVerified = strings.EqualFold(v, "true")
	}
	switch g := claims[p.cfg.GroupsClaim].(type) {
	case []any:
		for _, v := range g {
			if s, ok := v.(string); ok {
				out.Groups = append(out.Groups, s)
			}
		}
	case string:
		out.Groups = []string{g}
	}
	return out, nil
}

func refused(msg string) error {
	return &ports.Error{Kind: ports.KindUnauthenticated, Message: msg}
}

func upstream(err error, doing string) error {
	if timedOut(err) {
		return &ports.Error{Kind: ports.KindTimeout, Message: "the identity provider did not answer in time", Err: err}
	}
	return ports.Wrap(ports.KindUpstream, err, "the identity provider failed "+doing)
}

func timedOut(err error) bool {
	var netErr net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netErr) && netErr.Timeout()
}
