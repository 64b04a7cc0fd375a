// Package identity is the core of who may call devpilot: organisations, users,
// their roles, and the opaque API tokens they authenticate with.
package identity

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/mail"
	"slices"
	"strings"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// TokenPrefix starts every API token, so leaked tokens are easy to recognise.
const TokenPrefix = "dp_"

const (
	tokenBytes     = 32
	base62Alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	// A 32-byte number needs at most 43 base-62 digits; tokens are padded to that.
	tokenDigits    = 43
	maxOrgName     = 100
	maxTokenName   = 100
	displayPrefix  = len(TokenPrefix) + 6
	defaultTouch   = time.Minute
	revokedKeepFor = 30 * 24 * time.Hour
)

// Deps are the ports a Service needs.
type Deps struct {
	Orgs   ports.OrgStore
	Users  ports.UserStore
	Tokens ports.TokenStore
	// Audit, when set, records what users do to their tokens.
	Audit ports.AuditStore
	// SignIn, when set, signs console users in through an OpenID Connect
	// provider, admitting new users by SignInPolicy.
	SignIn       ports.SignInProvider
	SignInPolicy SignInPolicy
	Tx           ports.Transactor
	Clock        ports.Clock
	IDs          ports.IDs
	// Random is the source of token bytes; nil means crypto/rand.
	Random io.Reader
	// TouchEvery throttles last_used_at writes per token; zero means one minute.
	TouchEvery time.Duration
	// CacheFor is how long Authenticate may trust a token it verified without
	// reading it again; zero means it reads it on every call. A token revoked
	// through this Service is forgotten at once, and one revoked by another
	// process (the CLI, another replica) as soon as WatchRevocations hears of
	// it; where the store cannot watch, it may be accepted for up to CacheFor.
	CacheFor time.Duration
	// Invitations keeps the organisations' invitations; nil refuses them
	// (unavailable).
	Invitations ports.InvitationStore
	// Links keeps which identity at the sign-in provider (issuer and
	// subject) signs in as which user. With it, a person who signed in
	// once is found by who the provider says they are; nil finds them by
	// their verified email every time.
	Links ports.IdentityLinkStore
}

// Service issues, authenticates and revokes API tokens.
type Service struct {
	d     Deps
	cache principalCache
}

// New returns a Service over the given ports.
func New(d Deps) *Service {
	if d.Random == nil {
		d.Random = rand.Reader
	}
	if d.TouchEvery <= 0 {
		d.TouchEvery = defaultTouch
	}
	return &Service{d: d}
}

// IssueTokenInput says whom a new token is for. The org and the user are
// created when they do not exist yet; an existing user keeps their role.
type IssueTokenInput struct {
	Email   string
	OrgName string
	Role    ports.Role // for a new user; "" means member
	Name    string     // a label for the token
	TTL     time.Duration
	// Scopes bound what the token may do (see ports.ValidScope); none is
	// ports.DefaultScopes.
	Scopes []string
}

// IssuedToken is a freshly issued token. Token is the only copy of the secret.
type IssuedToken struct {
	Token  string
	Record ports.APIToken
	User   ports.User
	Org    ports.Org
}

// IssueToken creates a token for the user (and the user and org if needed).
// It is an operator action, not scoped to a principal: the user it creates
// has a verified email, as the operator vouches for it. Errors: invalid
// input; conflict when the email belongs to a verified user of another
// org.
func (s *Service) IssueToken(ctx context.Context, in IssueTokenInput) (IssuedToken, error) {
	email, err := normaliseEmail(in.Email)
	if err != nil {
		return IssuedToken{}, err
	}
	orgName := strings.TrimSpace(in.OrgName)
	var fields []ports.FieldError
	if orgName == "" || len(orgName) > maxOrgName {
		fields = append(fields, ports.FieldError{Field: "org", Reason: fmt.Sprintf("must be 1 to %d characters", maxOrgName)})
	} else if reason := ports.TextFault(orgName); reason != "" {
		fields = append(fields, ports.FieldError{Field: "org", Reason: reason})
	}
	if in.Role == "" {
		in.Role = ports.RoleMember
	}
	if !in.Role.Valid() {
		fields = append(fields, ports.FieldError{Field: "role", Reason: "must be admin, operator or member"})
	}
	if len(in.Name) > maxTokenName {
		fields = append(fields, ports.FieldError{Field: "name", Reason: fmt.Sprintf("must be at most %d characters", maxTokenName)})
	} else if reason := ports.TextFault(in.Name); reason != "" {
		fields = append(fields, ports.FieldError{Field: "name", Reason: reason})
	}
	if in.TTL < 0 {
		fields = append(fields, ports.FieldError{Field: "ttl", Reason: "must not be negative"})
	}
	scopes, err := ports.CheckScopes(in.Scopes)
	var bad *ports.Error
	if errors.As(err, &bad) {
		fields = append(fields, bad.Fields...)
	}
	if len(fields) > 0 {
		return IssuedToken{}, ports.Invalid("invalid token request", fields...)
	}

	secret, err := s.newSecret()
	if err != nil {
		return IssuedToken{}, err
	}
	now := s.d.Clock.Now()
	var out IssuedToken
	err = s.d.Tx.WithinTx(ctx, func(ctx context.Context) error {
		org, err := s.orgByName(ctx, orgName, now)
		if err != nil {
			return err
		}
		user, err := s.userByEmail(ctx, org, email, in.Role, now)
		if err != nil {
			return err
		}
		rec := s.tokenRecord(secret, user, in.Name, now, in.TTL)
		rec.Scopes = scopes
		if err := s.d.Tokens.CreateToken(ctx, rec); err != nil {
			return err
		}
		out = IssuedToken{Token: secret, Record: rec, User: user, Org: org}
		return nil
	})
	return out, err
}

// tokenRecord is the stored form of a new token of user's with secret: its
// SHA-256, the prefix shown in lists, and its expiry ttl after now (none for
// 0).
func (s *Service) tokenRecord(secret string, user ports.User, name string, now time.Time, ttl time.Duration) ports.APIToken {
	hash := sha256.Sum256([]byte(secret))
	rec := ports.APIToken{ID: s.d.IDs.NewID(), UserID: user.ID, OrgID: user.OrgID, Name: name,
		Prefix: secret[:displayPrefix], Hash: hash[:], CreatedAt: now}
	if ttl > 0 {
		exp := now.Add(ttl)
		rec.ExpiresAt = &exp
	}
	return rec
}

func (s *Service) orgByName(ctx context.Context, name string, now time.Time) (ports.Org, error) {
	org, err := s.d.Orgs.GetOrgByName(ctx, name)
	if !errors.Is(err, ports.ErrNotFound) {
		return org, err
	}
	org = ports.Org{ID: s.d.IDs.NewID(), Name: name, CreatedAt: now}
	return org, s.d.Orgs.CreateOrg(ctx, org)
}

// userByEmail is the verified user with the email, in org, or a new one
// there: the operator vouches for the address.
func (s *Service) userByEmail(ctx context.Context, org ports.Org, email string, role ports.Role, now time.Time) (ports.User, error) {
	user, err := s.d.Users.GetVerifiedUserByEmail(ctx, email)
	switch {
	case err == nil && user.OrgID != org.ID:
		return ports.User{}, ports.Errorf(ports.KindConflict, "user %s belongs to another organisation", email)
	case err == nil && user.RemovedAt != nil:
		return ports.User{}, ports.Errorf(ports.KindConflict, "user %s was removed from the organisation", email)
	case !errors.Is(err, ports.ErrNotFound):
		return user, err
	}
	user = ports.User{ID: s.d.IDs.NewID(), OrgID: org.ID, Email: email, EmailVerified: true, Role: role, CreatedAt: now}
	return user, s.d.Users.CreateUser(ctx, user)
}

func (s *Service) newSecret() (string, error) { return s.newSecretWith(TokenPrefix) }

// newSecretWith returns prefix and 32 random bytes in base 62, padded to
// tokenDigits digits.
func (s *Service) newSecretWith(prefix string) (string, error) {
	b := make([]byte, tokenBytes)
	if _, err := io.ReadFull(s.d.Random, b); err != nil {
		return "", ports.Wrap(ports.KindInternal, err, "generating a secret")
	}
	digits := new(big.Int).SetBytes(b).Text(62)
	return prefix + strings.Repeat("0", tokenDigits-len(digits)) + digits, nil
}

// Authenticate resolves a bearer token to the principal it stands for.
// Every failure (malformed, unknown, revoked, expired, user gone) is the same
// unauthenticated Error, so callers learn nothing about which tokens exist.
func (s *Service) Authenticate(ctx context.Context, token string) (ports.Principal, error) {
	if !wellFormed(token) {
		return ports.Principal{}, errBadToken
	}
	hash := sha256.Sum256([]byte(token))
	now := s.d.Clock.Now()
	if s.d.CacheFor > 0 {
		if e, ok := s.cache.get(hash, now); ok {
			if now.Sub(e.touched) >= s.d.TouchEvery {
				if err := s.touch(ctx, e.p.TokenID, now); err != nil {
					return ports.Principal{}, err
				}
				e.touched = now
				s.cache.put(hash, e, now)
			}
			return e.p, nil
		}
	}
	rec, user, err := s.d.Tokens.GetTokenByHash(ctx, hash[:])
	if errors.Is(err, ports.ErrNotFound) {
		return ports.Principal{}, errBadToken
	}
	if err != nil {
		return ports.Principal{}, err
	}
	if rec.Status(now) != ports.TokenActive || user.RemovedAt != nil {
		return ports.Principal{}, errBadToken
	}
	p := ports.Principal{UserID: user.ID, OrgID: user.OrgID, Role: user.Role, TokenID: rec.ID, Session: rec.IsSession()}
	if !p.Session {
		p.Scopes = rec.Scopes
	}
	e := cachedPrincipal{
		p:     p,
		until: now.Add(s.d.CacheFor),
	}
	if rec.LastUsedAt != nil {
		e.touched = *rec.LastUsedAt
	}
	if now.Sub(e.touched) >= s.d.TouchEvery {
		if err := s.touch(ctx, rec.ID, now); err != nil {
			return ports.Principal{}, err
		}
		e.touched = now
	}
	if s.d.CacheFor > 0 {
		if rec.ExpiresAt != nil && rec.ExpiresAt.Before(e.until) {
			e.until = *rec.ExpiresAt
		}
		s.cache.put(hash, e, now)
	}
	return e.p, nil
}

// touch records that the token was used at now, unless a use within
// TouchEvery is recorded already (by another request or replica).
func (s *Service) touch(ctx context.Context, tokenID string, now time.Time) error {
	err := s.d.Tokens.TouchToken(ctx, tokenID, now, now.Add(-s.d.TouchEvery))
	if err != nil && !errors.Is(err, ports.ErrNotFound) {
		return err
	}
	return nil
}

var errBadToken = &ports.Error{Kind: ports.KindUnauthenticated, Message: "missing, invalid, expired or revoked token"}

func wellFormed(token string) bool { return wellFormedWith(token, TokenPrefix) }

// wellFormedWith reports whether secret is prefix and tokenDigits base-62
// digits, as newSecretWith makes them.
func wellFormedWith(secret, prefix string) bool {
	if len(secret) != len(prefix)+tokenDigits || !strings.HasPrefix(secret, prefix) {
		return false
	}
	for _, c := range secret[len(prefix):] {
		if !strings.ContainsRune(base62Alphabet, c) {
			return false
		}
	}
	return true
}

// Me is the caller as the API shows it.
type Me struct {
	User ports.User
	Org  ports.Org
}

// Me returns the authenticated caller and their org. Errors: unauthenticated
// without a principal; not_found when the user has been removed.
func (s *Service) Me(ctx context.Context) (Me, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return Me{}, err
	}
	user, err := s.d.Users.GetUser(ctx, p.UserID)
	if err != nil {
		return Me{}, err
	}
	org, err := s.d.Orgs.GetOrg(ctx, user.OrgID)
	if err != nil {
		return Me{}, err
	}
	return Me{User: user, Org: org}, nil
}

// TokenInfo is a stored token with the email of its user, for listings.
type TokenInfo struct {
	ports.APIToken
	Email   string
	OrgName string
}

// ListTokens lists tokens, optionally only those of one org (by name) and of
// the users with one email (verified or not: an email may name several).
// It is an operator action. Errors: not_found for an unknown org or email.
func (s *Service) ListTokens(ctx context.Context, orgName, email string) ([]TokenInfo, error) {
	var orgID string
	if orgName != "" {
		org, err := s.d.Orgs.GetOrgByName(ctx, strings.TrimSpace(orgName))
		if err != nil {
			return nil, err
		}
		orgID = org.ID
	}
	var recs []ports.APIToken
	if email != "" {
		addr, err := normaliseEmail(email)
		if err != nil {
			return nil, err
		}
		users, err := s.d.Users.ListUsersByEmail(ctx, addr)
		if err != nil {
			return nil, err
		}
		if len(users) == 0 {
			return nil, ports.NotFound("user", addr)
		}
		for _, u := range users {
			mine, err := s.d.Tokens.ListTokens(ctx, orgID, u.ID)
			if err != nil {
				return nil, err
			}
			recs = append(recs, mine...)
		}
		slices.SortFunc(recs, func(a, b ports.APIToken) int {
			return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
		})
	} else {
		var err error
		if recs, err = s.d.Tokens.ListTokens(ctx, orgID, ""); err != nil {
			return nil, err
		}
	}
	users := map[string]ports.User{}
	orgs := map[string]ports.Org{}
	out := make([]TokenInfo, 0, len(recs))
	for _, rec := range recs {
		u, ok := users[rec.UserID]
		if !ok {
			var err error
			if u, err = s.d.Users.GetUser(ctx, rec.UserID); err != nil {
				return nil, err
			}
			users[rec.UserID] = u
		}
		o, ok := orgs[rec.OrgID]
		if !ok {
			var err error
			if o, err = s.d.Orgs.GetOrg(ctx, rec.OrgID); err != nil {
				return nil, err
			}
			orgs[rec.OrgID] = o
		}
		out = append(out, TokenInfo{APIToken: rec, Email: u.Email, OrgName: o.Name})
	}
	return out, nil
}

// RevokeToken revokes the token with the id. It is an operator action.
// Errors: not_found for an unknown id; conflict when revoked already.
func (s *Service) RevokeToken(ctx context.Context, id string) error {
	rec, err := s.d.Tokens.GetToken(ctx, id)
	if err != nil {
		return err
	}
	if err := s.d.Tokens.RevokeToken(ctx, rec.OrgID, rec.ID, s.d.Clock.Now()); err != nil {
		return err
	}
	s.cache.forget(rec.ID)
	return nil
}

// WatchRevocations keeps the tokens that any process revokes out of the
// cache of verified tokens, as the store reports them, until ctx ends; when
// the store may have missed some, the whole cache is dropped. It returns nil
// at once when nothing is cached or the store cannot watch (revocations then
// take up to Deps.CacheFor), else the store's reason for stopping (ctx's
// error when ctx ended).
func (s *Service) WatchRevocations(ctx context.Context) error {
	if s.d.CacheFor <= 0 {
		return nil
	}
	err := s.d.Tokens.WatchRevocations(ctx, s.cache.forget, s.cache.clear)
	if errors.Is(err, errors.ErrUnsupported) {
		return nil
	}
	return err
}

// PruneTokensArgs is the background job that deletes tokens that expired or
// were revoked more than 30 days ago.
type PruneTokensArgs struct{}

// Kind names the job for the queue.
func (PruneTokensArgs) Kind() string { return "identity.prune_tokens" }

// PruneTokens deletes tokens expired or revoked over 30 days ago and returns
// how many it deleted.
func (s *Service) PruneTokens(ctx context.Context) (int, error) {
	return s.d.Tokens.DeleteExpiredTokens(ctx, s.d.Clock.Now().Add(-revokedKeepFor))
}

func normaliseEmail(s string) (string, error) {
	s = strings.TrimSpace(s)
	addr, err := mail.ParseAddress(s)
	if err != nil || addr.Address != s || len(s) > 254 {
		return "", ports.Invalid("invalid email", ports.FieldError{Field: "email", Reason: "must be a plain email address"})
	}
	return strings.ToLower(s), nil
}
