package ports

import "context"

//go:generate go tool mockgen -typed -destination ../testkit/mocks/signin.go -package mocks . SignInProvider

// ExternalIdentity is who an OpenID Connect provider says signed in, taken
// from an ID token whose signature, issuer, audience, expiry and nonce were
// verified.
type ExternalIdentity struct {
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
