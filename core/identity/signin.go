package identity

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// The audit actions of console sign-in.
const (
	AuditSignIn  = "session.sign_in"
	AuditSignOut = "session.sign_out"
)

// DefaultSessionTTL is how long a console sign-in session lasts when
// SignInPolicy.SessionTTL is zero.
const DefaultSessionTTL = 12 * time.Hour

// SignInPolicy says who may sign in to the console through the identity
// provider, and as what. A user devpilot knows already (invited, or created
// with the CLI) signs in as themselves, in their organisation with their
// role, once the provider has verified their email. Anyone else is created
// in Org when their email's domain is in Domains or they are in one of
// Groups or AdminGroups; they are an admin when in one of AdminGroups.
type SignInPolicy struct {
	// Org is the name of the organisation new users join; it is created
	// when it does not exist.
	Org string
	// Domains are email domains (example.com) whose users may join.
	Domains []string
	// Groups are values of the provider's group claim whose users may join
	// as members.
	Groups []string
	// AdminGroups are values of the group claim whose users join as admins.
	AdminGroups []string
	// SessionTTL is how long a sign-in lasts; zero means DefaultSessionTTL.
	SessionTTL time.Duration
}

// SignedIn is a new console session: Secret is the only copy of the value
// the session cookie carries.
type SignedIn struct {
	Secret  string
	Session ports.APIToken
	User    ports.User
	Org     ports.Org
}

var errNoSignIn = &ports.Error{Kind: ports.KindNotFound, Message: "sign-in with an identity provider is not configured"}

// SignInEnabled reports whether the console can sign in through an identity
// provider.
func (s *Service) SignInEnabled() bool { return s.d.SignIn != nil }

// SignInURL returns where to send a browser to sign in, for one attempt
// identified by state, nonce and the PKCE verifier (the caller keeps all
// three until the provider sends the browser back). Errors: not_found when
// sign-in is not configured; upstream when the provider cannot be read.
func (s *Service) SignInURL(ctx context.Context, state, nonce, verifier string) (string, error) {
	if s.d.SignIn == nil {
		return "", errNoSignIn
	}
	return s.d.SignIn.AuthURL(ctx, state, nonce, verifier)
}

// CompleteSignIn redeems the provider's code for a verified identity, maps
// it to a user by the SignInPolicy (creating the user, and the org, when
// the policy admits them) and opens a console session for them. It is
// audited. Errors: unauthenticated when the provider's answer does not
// verify; forbidden when the email is not verified or the policy does not
// admit the user, or the user was removed; not_found when sign-in is not
// configured; upstream when the provider fails.
func (s *Service) CompleteSignIn(ctx context.Context, code, verifier, nonce string) (SignedIn, error) {
	if s.d.SignIn == nil {
		return SignedIn{}, errNoSignIn
	}
	ext, err := s.d.SignIn.Exchange(ctx, code, verifier, nonce)
	if err != nil {
		return SignedIn{}, err
	}
	if !ext.EmailVerified {
		return SignedIn{}, &ports.Error{Kind: ports.KindForbidden, Message: "the identity provider has not verified your email address"}
	}
	email, err := normaliseEmail(ext.Email)
	if err != nil {
		return SignedIn{}, &ports.Error{Kind: ports.KindForbidden, Message: "the identity provider sent no usable email address"}
	}
	secret, err := s.newSecret()
	if err != nil {
		return SignedIn{}, err
	}
	now := s.d.Clock.Now()
	ttl := s.d.SignInPolicy.SessionTTL
	if ttl <= 0 {
		ttl = DefaultSessionTTL
	}
	var out SignedIn
	err = s.d.Tx.WithinTx(ctx, func(ctx context.Context) error {
		user, err := s.signInUser(ctx, email, ext.Groups, now)
		if err != nil {
			return err
		}
		org, err := s.d.Orgs.GetOrg(ctx, user.OrgID)
		if err != nil {
			return err
		}
		rec := s.tokenRecord(secret, user, "console sign-in", now, ttl)
		rec.Kind = ports.TokenSession
		if err := s.d.Tokens.CreateToken(ctx, rec); err != nil {
			return err
		}
		p := ports.Principal{UserID: user.ID, OrgID: user.OrgID, Role: user.Role, TokenID: rec.ID, Session: true}
		args, _ := json.Marshal(map[string]any{"subject": ext.Subject, "expires_at": rec.ExpiresAt.UTC()})
		if err := s.audit(ctx, p, AuditSignIn, "session/"+rec.ID, args, now); err != nil {
			return err
		}
		out = SignedIn{Secret: secret, Session: rec, User: user, Org: org}
		return nil
	})
	return out, err
}

// signInUser is the user email signs in as: the existing one, or a new one
// the policy admits.
func (s *Service) signInUser(ctx context.Context, email string, groups []string, now time.Time) (ports.User, error) {
	user, err := s.d.Users.GetUserByEmail(ctx, email)
	switch {
	case err == nil && user.RemovedAt != nil:
		return ports.User{}, &ports.Error{Kind: ports.KindForbidden, Message: "you were removed from the organisation"}
	case err == nil:
		return user, nil
	case !errors.Is(err, ports.ErrNotFound):
		return ports.User{}, err
	}
	pol := s.d.SignInPolicy
	role, ok := pol.admit(email, groups)
	if !ok || pol.Org == "" {
		return ports.User{}, &ports.Error{Kind: ports.KindForbidden,
			Message: "your account is not allowed to sign in to this devpilot: ask an admin for an invitation"}
	}
	org, err := s.orgByName(ctx, pol.Org, now)
	if err != nil {
		return ports.User{}, err
	}
	user = ports.User{ID: s.d.IDs.NewID(), OrgID: org.ID, Email: email, Role: role, CreatedAt: now}
	return user, s.d.Users.CreateUser(ctx, user)
}

// admit says whether a new user with the email and groups may join, and as
// what.
func (pol SignInPolicy) admit(email string, groups []string) (ports.Role, bool) {
	in := func(set []string) bool {
		return slices.ContainsFunc(groups, func(g string) bool { return slices.Contains(set, g) })
	}
	if in(pol.AdminGroups) {
		return ports.RoleAdmin, true
	}
	_, domain, _ := strings.Cut(email, "@")
	if in(pol.Groups) || slices.ContainsFunc(pol.Domains, func(d string) bool { return strings.EqualFold(d, domain) }) {
		return ports.RoleMember, true
	}
	return "", false
}

// SignOut ends the caller's console session: its cookie stops working at
// once on every replica that watches revocations. It is audited. Errors:
// unauthenticated without a principal; invalid when the caller is not
// signed in with a session (an API token is revoked through RevokeOwnToken).
func (s *Service) SignOut(ctx context.Context) error {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return err
	}
	if !p.Session {
		return ports.Errorf(ports.KindInvalid, "only a console session signs out; revoke an API token instead")
	}
	now := s.d.Clock.Now()
	err = s.d.Tx.WithinTx(ctx, func(ctx context.Context) error {
		if err := s.d.Tokens.RevokeToken(ctx, p.OrgID, p.TokenID, now); err != nil {
			return err
		}
		return s.audit(ctx, p, AuditSignOut, "session/"+p.TokenID, nil, now)
	})
	if err != nil && !ports.IsKind(err, ports.KindConflict) { // signed out already
		return err
	}
	s.cache.forget(p.TokenID)
	return nil
}
