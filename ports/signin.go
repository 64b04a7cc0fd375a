package ports

import (
	"context"
	"time"
)

//go:generate go tool mockgen -typed -destination ../testkit/mocks/signin.go -package mocks . SignInProvider,IdentityLinkStore

// ExternalIdentity is who an OpenID Connect provider says signed in, taken
// from an ID token whose signature, issuer, audience, expiry and nonce were
// verified.
type ExternalIdentity struct {
	// Issuer and Subject name the person at the provider for good (iss and
	// sub): unlike the email, they are never given to someone else.
	Issuer        string
	Subject       string
	Email         string
	EmailVerified bool
	// Groups are the values of the provider's group claim, if it sends one.
	Groups []string
}

// SignInProvider is the identity provider the console signs in with
// (OpenID Connect, authorization code flow with PKCE).
type SignInProvider interface {
	// AuthURL returns where to send the browser to sign in: the provider's
	// authorization endpoint with state, nonce and the S256 challenge of
	// verifier. Upstream when the provider's discovery document cannot be
	// read.
	AuthURL(ctx context.Context, state, nonce, verifier string) (string, error)
	// Exchange redeems the authorization code with the PKCE verifier and
	// returns the identity in the ID token, which must carry nonce.
	// Unauthenticated when the code is refused or the ID token is not valid
	// (signature, issuer, audience, expiry, nonce); upstream when the
	// provider fails or cannot be reached.
	Exchange(ctx context.Context, code, verifier, nonce string) (ExternalIdentity, error)
}

// IdentityLink ties a person at an identity provider (Issuer and Subject)
// to the devpilot user they sign in as, so that later sign-ins find that
// user by who the provider says they are rather than by email.
type IdentityLink struct {
	Issuer    string
	Subject   string
	UserID    string
	CreatedAt time.Time
}

// IdentityLinkStore keeps the links between provider identities and users.
type IdentityLinkStore interface {
	// LinkIdentity stores a new link; conflict when the issuer and subject
	// are linked already, or when the user has a link at that issuer
	// already; not_found when the user does not exist.
	LinkIdentity(ctx context.Context, link IdentityLink) error
	// GetLinkedUser returns the user linked to the issuer and subject;
	// not_found when none is.
	GetLinkedUser(ctx context.Context, issuer, subject string) (User, error)
}
