package ports

import (
	"context"
	"time"
)

//go:generate go tool mockgen -typed -destination ../testkit/mocks/identity.go -package mocks . OrgStore,UserStore,TokenStore

// Role is a user's role within an organisation.
type Role string

// The roles a user can hold.
const (
	RoleAdmin Role = "admin"
	// RoleOperator may run the writes an organisation's permission policy
	// gives operators (by default: cloud writes and publishing) but does
	// not administer the organisation.
	RoleOperator Role = "operator"
	RoleMember   Role = "member"
)

// Roles are the known roles, from the most to the least powerful.
var Roles = []Role{RoleAdmin, RoleOperator, RoleMember}

// Valid reports whether r is a known role.
func (r Role) Valid() bool { return r == RoleAdmin || r == RoleOperator || r == RoleMember }

// Principal is the authenticated caller every use case acts for.
type Principal struct {
	UserID  string
	OrgID   string
	Role    Role
	TokenID string // the API token that authenticated the call, if any
	// Session is true when the call was authenticated by a console sign-in
	// session (a cookie) rather than an API token.
	Session bool
	// Scopes are the API token's scopes (see ValidScope); nil when the
	// call is not bound by any (a console session, an unscoped token).
	Scopes []string
}

// IsAdmin reports whether the principal administers its organisation.
func (p Principal) IsAdmin() bool { return p.Role == RoleAdmin }

type principalKey struct{}

// WithPrincipal returns a context that carries p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal carried by ctx, if any.
func PrincipalFrom(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok && p.UserID != ""
}

// RequirePrincipal returns the principal carried by ctx, or an unauthenticated
// Error when there is none.
func RequirePrincipal(ctx context.Context) (Principal, error) {
	p, ok := PrincipalFrom(ctx)
	if !ok {
		return Principal{}, &Error{Kind: KindUnauthenticated, Message: "authentication required"}
	}
	return p, nil
}

// Org is an organisation: the unit that owns users and shared resources.
type Org struct {
	ID        string
	Name      string
	CreatedAt time.Time
}

// User is a person (or service identity) within one organisation.
type User struct {
	ID    string
	OrgID string
	Email string
	Role  Role
	// EmailVerified is true when Email is proven to be this user's: the
	// identity provider verified it when they signed in, or the operator
	// created them (devpilot token create). A user who joined through an
	// invitation has it false: an invitation proves only that its holder
	// had the link, not that they own the mailbox, so such a user is never
	// reached by an email match at sign-in. At most one verified user has
	// a given email; unverified ones may share it with anyone.
	EmailVerified bool
	CreatedAt     time.Time
	// RemovedAt is when an admin removed the user from the organisation;
	// a removed user is refused authentication. Nil for a member.
	RemovedAt *time.Time
}

// APIToken is a stored API token. The token itself is never stored: only the
// SHA-256 of it (Hash) and a short non-secret Prefix for recognising it.
type APIToken struct {
	ID     string
	UserID string
	OrgID  string
	Name   string
	Prefix string
	Hash   []byte
	// Kind says what the secret is for: an API token ("" or TokenAPI) or a
	// console sign-in session (TokenSession).
	Kind TokenKind
	// Scopes bound what an API token may do (see ValidScope); none (nil)
	// is DefaultScopes. Console sessions are not scoped.
	Scopes     []string
	CreatedAt  time.Time
	ExpiresAt  *time.Time
	LastUsedAt *time.Time
	RevokedAt  *time.Time
}

// TokenKind tells API tokens from console sign-in sessions, which are stored
// alike (a hash, an expiry, a revocation) and so are revoked alike.
type TokenKind string

// The kinds of stored token.
const (
	// TokenAPI is a bearer token for API clients; the zero Kind means it too.
	TokenAPI TokenKind = "api"
	// TokenSession is a console sign-in session: its secret travels only in
	// an HttpOnly cookie.
	TokenSession TokenKind = "session"
)

// IsSession reports whether the token is a console sign-in session.
func (t APIToken) IsSession() bool { return t.Kind == TokenSession }

// TokenStatus says whether an API token still authenticates.
type TokenStatus string

// The statuses of an API token.
const (
	TokenActive  TokenStatus = "active"  // neither revoked nor expired: it authenticates
	TokenRevoked TokenStatus = "revoked" // revoked, whether or not it has expired too
	TokenExpired TokenStatus = "expired" // its ExpiresAt is not after now
)

// Status is the token's status at now: revoked once RevokedAt is set,
// expired from ExpiresAt on, active otherwise. Only an active token
// authenticates.
func (t APIToken) Status(now time.Time) TokenStatus {
	switch {
	case t.RevokedAt != nil:
		return TokenRevoked
	case t.ExpiresAt != nil && !now.Before(*t.ExpiresAt):
		return TokenExpired
	}
	return TokenActive
}

// The codes of the conflicts by which the identity stores keep their limits.
const (
	// CodeLastAdmin refuses to leave an organisation that has an admin
	// without one (UserStore.SetUserRole and RemoveUser).
	CodeLastAdmin = "last_admin"
	// CodeTooManyTokens refuses a token past a user's limit
	// (TokenStore.CreateTokenWithin).
	CodeTooManyTokens = "too_many_tokens"
)

// Sentinels for errors.Is, matching the conflicts of the codes above.
var (
	ErrLastAdmin     = &Error{Kind: KindConflict, Code: CodeLastAdmin}
	ErrTooManyTokens = &Error{Kind: KindConflict, Code: CodeTooManyTokens}
)

// OrgStore keeps organisations.
type OrgStore interface {
	// CreateOrg stores a new org; conflict when the name is taken.
	CreateOrg(ctx context.Context, org Org) error
	// GetOrg returns the org with the id; not_found when absent.
	GetOrg(ctx context.Context, id string) (Org, error)
	// GetOrgByName returns the org with the name; not_found when absent.
	GetOrgByName(ctx context.Context, name string) (Org, error)
}

// UserStore keeps users.
type UserStore interface {
	// CreateUser stores a new user; conflict when the id is taken, or when
	// the user is verified and a verified user has the email already (an
	// unverified user's email may be anyone's); not_found when the org does
	// not exist.
	CreateUser(ctx context.Context, user User) error
	// GetUser returns the user with the id; not_found when absent.
	GetUser(ctx context.Context, id string) (User, error)
	// GetVerifiedUserByEmail returns the verified user with the email
	// (compared case-insensitively), removed or not; not_found when no
	// verified user has it.
	GetVerifiedUserByEmail(ctx context.Context, email string) (User, error)
	// ListUsersByEmail returns every user with the email (compared
	// case-insensitively), verified or not, removed or not, of any org,
	// oldest first.
	ListUsersByEmail(ctx context.Context, email string) ([]User, error)
	// VerifyUserEmail marks the user's email verified (the identity
	// provider proved it theirs); nothing changes when it is already.
	// Errors: not_found when the user is absent; conflict when another
	// verified user has the email.
	VerifyUserEmail(ctx context.Context, userID string) error
	// ListUsers returns a page of the org's users by email, removed ones
	// left out, and the next page's cursor ("" at the end); invalid for a
	// bad cursor.
	ListUsers(ctx context.Context, orgID string, page Page) ([]User, string, error)
	// SetUserRole changes the role of the org's user; not_found when the
	// user is absent or another org's; invalid for an unknown role;
	// conflict (code CodeLastAdmin) when the user is the org's last admin
	// (not removed) and role is not admin. The check and the change are
	// one atomic step: of concurrent calls that would each leave the other
	// admins, only as many succeed as leave one.
	SetUserRole(ctx context.Context, orgID, userID string, role Role) error
	// RemoveUser marks the org's user removed at the time given, which
	// ListUsers then leaves out; not_found when the user is absent or
	// another org's, conflict when removed already, conflict (code
	// CodeLastAdmin) when the user is the org's last admin (atomically, as
	// SetUserRole).
	RemoveUser(ctx context.Context, orgID, userID string, at time.Time) error
}

// TokenStore keeps API tokens.
type TokenStore interface {
	// CreateToken stores a new token; conflict when the hash exists already;
	// not_found when the user does not exist.
	CreateToken(ctx context.Context, token APIToken) error
	// CreateTokenWithin stores a new API token as CreateToken does, unless
	// its user has limit API tokens (console sessions aside) that are
	// active at token.CreatedAt, neither revoked nor expired: then it is a
	// conflict (code CodeTooManyTokens) and nothing is stored. The count
	// and the insert are one atomic step, so concurrent calls never leave
	// the user more than limit active tokens.
	CreateTokenWithin(ctx context.Context, token APIToken, limit int) error
	// GetTokenByHash returns the token with the SHA-256 hash, revoked or not,
	// and its user, in one look-up (it runs on every request); not_found
	// when absent.
	GetTokenByHash(ctx context.Context, hash []byte) (APIToken, User, error)
	// GetToken returns the token with the id; not_found when absent.
	GetToken(ctx context.Context, id string) (APIToken, error)
	// ListTokens returns tokens newest first, filtered by org and user; an
	// empty orgID or userID does not filter.
	ListTokens(ctx context.Context, orgID, userID string) ([]APIToken, error)
	// RevokeToken marks the org's token revoked at the time given; not_found
	// when absent or another org's, conflict when revoked already.
	RevokeToken(ctx context.Context, orgID, id string, at time.Time) error
	// TouchToken records a use at the time given, unless a use at or after
	// notBefore is recorded already (so busy tokens are not written on every
	// request); not_found when absent.
	TouchToken(ctx context.Context, id string, at, notBefore time.Time) error
	// DeleteExpiredTokens deletes tokens that expired, or were revoked, before
	// the time given and returns how many it deleted.
	DeleteExpiredTokens(ctx context.Context, before time.Time) (int, error)
	// WatchRevocations reports the tokens that any process revokes until ctx
	// ends: lost once the watch is in place (what was revoked before it may
	// have been missed), revoked with the id of each token revoked from then
	// on, and lost again whenever some may have been missed (the watch lost
	// its connection). The two are called from one goroutine, not
	// necessarily the caller's. It returns errors.ErrUnsupported at once when
	// the store cannot watch, else the reason it stopped (ctx's error when
	// ctx ended).
	WatchRevocations(ctx context.Context, revoked func(tokenID string), lost func()) error
}
