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
	// AuditVerifyEmail records a user proving their email through the
	// identity provider (CompleteEmailVerification).
	AuditVerifyEmail = "user.verify_email"
)

// DefaultSessionTTL is how long a console sign-in session lasts when
// SignInPolicy.SessionTTL is zero.
const DefaultSessionTTL = 12 * time.Hour

// SignInPolicy says who may sign in to the console through the identity
// provider, and as what. A person who signed in before signs in as the same
// user again (found by the provider's issuer and subject); a user whose
// email devpilot knows to be theirs (created with the CLI, or by an earlier
// sign-in) signs in as themselves, in their organisation with their role,
// once the provider has verified that email. A user who joined through an
// invitation is not reached by their email (it was never proven theirs).
// Anyone else is created in Org when their email's domain is in Domains or
// they are in one of Groups or AdminGroups; they are an admin when in one
// of AdminGroups.
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

// VerifyEmailURL is SignInURL for the caller proving their email through
// the provider (see CompleteEmailVerification): it returns the caller's
// user id, which the attempt keeps, with the URL. Errors: unauthenticated
// without a principal; those of SignInURL.
func (s *Service) VerifyEmailURL(ctx context.Context, state, nonce, verifier string) (string, string, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return "", "", err
	}
	to, err := s.SignInURL(ctx, state, nonce, verifier)
	return to, p.UserID, err
}

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
// the policy admits them), links the user to the provider's issuer and
// subject, and opens a console session for them. It is audited. Errors:
// unauthenticated when the provider's answer does not verify; forbidden
// when the email is not verified or the policy does not admit the user,
// the user was removed, or the user is linked to another identity at the
// provider; not_found when sign-in is not configured; upstream when the
// provider fails.
func (s *Service) CompleteSignIn(ctx context.Context, code, verifier, nonce string) (SignedIn, error) {
	return s.completeSignIn(ctx, code, verifier, nonce, s.signInUser)
}

// CompleteEmailVerification finishes a sign-in that the user userID started
// while authenticated (VerifyEmailURL's attempt), to prove that their email
// is theirs: it redeems the provider's code as CompleteSignIn does, and
// when the provider verified that same address, marks the user's email
// verified and links them to the provider's issuer and subject, so that
// signing in through the provider reaches them from then on; it opens a
// console session for them. This is how a user who joined through an
// invitation becomes reachable by sign-in: the invitation proved that they
// had its link, this proves that they own the mailbox. Audited
// (user.verify_email and session.sign_in). Errors: those of CompleteSignIn;
// forbidden when the provider signed in another address than the user's,
// the user was removed, another user has the address verified already,
// or the provider's identity is linked to another user.
func (s *Service) CompleteEmailVerification(ctx context.Context, code, verifier, nonce, userID string) (SignedIn, error) {
	return s.completeSignIn(ctx, code, verifier, nonce, func(ctx context.Context, ext ports.ExternalIdentity, email string, now time.Time) (ports.User, error) {
		return s.verifyUser(ctx, ext, email, userID, now)
	})
}

// completeSignIn redeems the code for a verified identity, finds the user
// it signs in as with resolve, and opens an audited console session for
// them, in one transaction.
func (s *Service) completeSignIn(ctx context.Context, code, verifier, nonce string,
	resolve func(ctx context.Context, ext ports.ExternalIdentity, email string, now time.Time) (ports.User, error)) (SignedIn, error) {
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
		user, err := resolve(ctx, ext, email, now)
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
		args, _ := json.Marshal(map[string]any{"issuer": ext.Issuer, "subject": ext.Subject, "expires_at": rec.ExpiresAt.UTC()})
		if err := s.audit(ctx, p, AuditSignIn, "session/"+rec.ID, args, now); err != nil {
			return err
		}
		out = SignedIn{Secret: secret, Session: rec, User: user, Org: org}
		return nil
	})
	return out, err
}

// verifyUser is the user userID once the provider proved email theirs:
// their email is marked verified (if it was not) and they are linked to
// ext. It is audited when the email becomes verified.
func (s *Service) verifyUser(ctx context.Context, ext ports.ExternalIdentity, email, userID string, now time.Time) (ports.User, error) {
	user, err := s.d.Users.GetUser(ctx, userID)
	switch {
	case errors.Is(err, ports.ErrNotFound):
		return ports.User{}, &ports.Error{Kind: ports.KindForbidden, Message: "you were removed from the organisation"}
	case err != nil:
		return ports.User{}, err
	case user.RemovedAt != nil:
		return ports.User{}, &ports.Error{Kind: ports.KindForbidden, Message: "you were removed from the organisation"}
	case user.Email != email:
		return ports.User{}, &ports.Error{Kind: ports.KindForbidden,
			Message: "the identity provider signed you in as " + email + ", not as " + user.Email + ": sign in to it with that address"}
	}
	if s.d.Links != nil && ext.Issuer != "" && ext.Subject != "" {
		linked, err := s.d.Links.GetLinkedUser(ctx, ext.Issuer, ext.Subject)
		switch {
		case err == nil && linked.ID != user.ID:
			return ports.User{}, &ports.Error{Kind: ports.KindForbidden,
				Message: "your identity at the identity provider signs in to another devpilot account already"}
		case errors.Is(err, ports.ErrNotFound):
			err = s.d.Links.LinkIdentity(ctx, ports.IdentityLink{Issuer: ext.Issuer, Subject: ext.Subject, UserID: user.ID, CreatedAt: now})
			if errors.Is(err, ports.ErrConflict) {
				return ports.User{}, &ports.Error{Kind: ports.KindForbidden,
					Message: "your devpilot account is linked to another identity at the identity provider: ask an admin"}
			}
			if err != nil {
				return ports.User{}, err
			}
		case err != nil:
			return ports.User{}, err
		}
	}
	if user.EmailVerified {
		return user, nil
	}
	if err := s.d.Users.VerifyUserEmail(ctx, user.ID); err != nil {
		if errors.Is(err, ports.ErrConflict) {
			return ports.User{}, &ports.Error{Kind: ports.KindForbidden,
				Message: "another devpilot account has " + email + " verified already: sign in through the identity provider to reach it"}
		}
		return ports.User{}, err
	}
	user.EmailVerified = true
	p := ports.Principal{UserID: user.ID, OrgID: user.OrgID, Role: user.Role}
	args, _ := json.Marshal(map[string]any{"email": email, "issuer": ext.Issuer, "subject": ext.Subject})
	if err := s.audit(ctx, p, AuditVerifyEmail, "user/"+user.ID, args, now); err != nil {
		return ports.User{}, err
	}
	return user, nil
}

// signInUser is the user ext signs in as: the one linked to ext's issuer
// and subject; else the verified user with the email, who is linked to
// ext from then on; else a new, verified user the policy admits, linked
// likewise. A user whose email is not verified (one who joined through an
// invitation) is never reached by an email match: that would hand the
// account of whoever claimed an address to its owner, and what the owner
// then does to whoever planted it.
func (s *Service) signInUser(ctx context.Context, ext ports.ExternalIdentity, email string, now time.Time) (ports.User, error) {
	removed := &ports.Error{Kind: ports.KindForbidden, Message: "you were removed from the organisation"}
	linkable := s.d.Links != nil && ext.Issuer != "" && ext.Subject != ""
	if linkable {
		user, err := s.d.Links.GetLinkedUser(ctx, ext.Issuer, ext.Subject)
		switch {
		case err == nil && user.RemovedAt != nil:
			return ports.User{}, removed
		case err == nil:
			return user, nil
		case !errors.Is(err, ports.ErrNotFound):
			return ports.User{}, err
		}
	}
	link := func(user ports.User) (ports.User, error) {
		if !linkable {
			return user, nil
		}
		err := s.d.Links.LinkIdentity(ctx, ports.IdentityLink{Issuer: ext.Issuer, Subject: ext.Subject, UserID: user.ID, CreatedAt: now})
		if errors.Is(err, ports.ErrConflict) {
			// The user signs in as another identity at this provider: the
			// address was given to someone else, or a concurrent first
			// sign-in won.
			return ports.User{}, &ports.Error{Kind: ports.KindForbidden,
				Message: "the devpilot account of " + email + " belongs to another identity at your identity provider: ask an admin"}
		}
		return user, err
	}
	user, err := s.d.Users.GetVerifiedUserByEmail(ctx, email)
	switch {
	case err == nil && user.RemovedAt != nil:
		return ports.User{}, removed
	case err == nil:
		return link(user)
	case !errors.Is(err, ports.ErrNotFound):
		return ports.User{}, err
	}
	pol := s.d.SignInPolicy
	role, ok := pol.admit(email, ext.Groups)
	if !ok || pol.Org == "" {
		return ports.User{}, &ports.Error{Kind: ports.KindForbidden,
			Message: "your account is not allowed to sign in to this devpilot: ask an admin for an invitation"}
	}
	org, err := s.orgByName(ctx, pol.Org, now)
	if err != nil {
		return ports.User{}, err
	}
	user = ports.User{ID: s.d.IDs.NewID(), OrgID: org.ID, Email: email, EmailVerified: true, Role: role, CreatedAt: now}
	if err := s.d.Users.CreateUser(ctx, user); err != nil {
		return ports.User{}, err
	}
	return link(user)
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
