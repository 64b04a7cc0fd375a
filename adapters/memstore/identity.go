package memstore

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/devpilot/devpilot/ports"
)

var (
	_ ports.OrgStore          = (*Store)(nil)
	_ ports.UserStore         = (*Store)(nil)
	_ ports.TokenStore        = (*Store)(nil)
	_ ports.IdentityLinkStore = (*Store)(nil)
)

type identityData struct {
	orgs   map[string]ports.Org
	users  map[string]ports.User
	tokens map[string]ports.APIToken
	links  map[linkKey]ports.IdentityLink
}

// linkKey is a provider identity: its issuer and subject.
type linkKey struct{ issuer, subject string }

func (d *identityData) init() {
	d.orgs = map[string]ports.Org{}
	d.users = map[string]ports.User{}
	d.tokens = map[string]ports.APIToken{}
	d.links = map[linkKey]ports.IdentityLink{}
}

// CreateOrg stores a new org; conflict when the id or name is taken.
func (s *Store) CreateOrg(ctx context.Context, org ports.Org) error {
	defer s.lock()()
	if _, ok := s.identity.orgs[org.ID]; ok {
		return ports.Errorf(ports.KindConflict, "org %s exists already", org.ID)
	}
	for _, o := range s.identity.orgs {
		if o.Name == org.Name {
			return ports.Errorf(ports.KindConflict, "org name %q is taken", org.Name)
		}
	}
	org.CreatedAt = utc(org.CreatedAt)
	put(ctx, s, s.identity.orgs, org.ID, org)
	return nil
}

// GetOrg returns the org with the id; not_found when absent.
func (s *Store) GetOrg(_ context.Context, id string) (ports.Org, error) {
	defer s.lock()()
	if o, ok := s.identity.orgs[id]; ok {
		return o, nil
	}
	return ports.Org{}, ports.NotFound("org", id)
}

// GetOrgByName returns the org with the name; not_found when absent.
func (s *Store) GetOrgByName(_ context.Context, name string) (ports.Org, error) {
	defer s.lock()()
	for _, o := range s.identity.orgs {
		if o.Name == name {
			return o, nil
		}
	}
	return ports.Org{}, ports.NotFound("org", name)
}

// CreateUser stores a new user; conflict when the id is taken, or when the
// user is verified and a verified user has the email (in any case) already;
// not_found when the org does not exist.
func (s *Store) CreateUser(ctx context.Context, user ports.User) error {
	defer s.lock()()
	if _, ok := s.identity.orgs[user.OrgID]; !ok {
		return ports.NotFound("org", user.OrgID)
	}
	if _, ok := s.identity.users[user.ID]; ok {
		return ports.Errorf(ports.KindConflict, "user %s exists already", user.ID)
	}
	if _, ok := s.verifiedUserByEmail(user.Email); ok && user.EmailVerified {
		return ports.Errorf(ports.KindConflict, "email %q is taken", user.Email)
	}
	user.CreatedAt = utc(user.CreatedAt)
	user.RemovedAt = utcPtr(user.RemovedAt)
	put(ctx, s, s.identity.users, user.ID, user)
	return nil
}

// verifiedUserByEmail returns the verified user with the email, compared
// case-insensitively (s.mu held).
func (s *Store) verifiedUserByEmail(email string) (ports.User, bool) {
	for _, u := range s.identity.users {
		if u.EmailVerified && strings.EqualFold(u.Email, email) {
			return u, true
		}
	}
	return ports.User{}, false
}

// GetUser returns the user with the id; not_found when absent.
func (s *Store) GetUser(_ context.Context, id string) (ports.User, error) {
	defer s.lock()()
	if u, ok := s.identity.users[id]; ok {
		return u, nil
	}
	return ports.User{}, ports.NotFound("user", id)
}

// GetVerifiedUserByEmail returns the verified user with the email
// (compared case-insensitively); not_found when none.
func (s *Store) GetVerifiedUserByEmail(_ context.Context, email string) (ports.User, error) {
	defer s.lock()()
	if u, ok := s.verifiedUserByEmail(email); ok {
		return u, nil
	}
	return ports.User{}, ports.NotFound("verified user", email)
}

// ListUsersByEmail returns every user with the email (compared
// case-insensitively), of any org, oldest first.
func (s *Store) ListUsersByEmail(_ context.Context, email string) ([]ports.User, error) {
	defer s.lock()()
	var out []ports.User
	for _, u := range s.identity.users {
		if strings.EqualFold(u.Email, email) {
			out = append(out, u)
		}
	}
	slices.SortFunc(out, func(a, b ports.User) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// VerifyUserEmail marks the user's email verified; not_found when the
// user is absent, conflict when another verified user has the email.
func (s *Store) VerifyUserEmail(ctx context.Context, userID string) error {
	defer s.lock()()
	u, ok := s.identity.users[userID]
	if !ok {
		return ports.NotFound("user", userID)
	}
	if u.EmailVerified {
		return nil
	}
	if other, ok := s.verifiedUserByEmail(u.Email); ok && other.ID != u.ID {
		return ports.Errorf(ports.KindConflict, "email %q is another user's", u.Email)
	}
	u.EmailVerified = true
	put(ctx, s, s.identity.users, u.ID, u)
	return nil
}

// ListUsers returns a page of the org's users by email then id, and the
// next page's cursor; invalid for a bad cursor.
func (s *Store) ListUsers(_ context.Context, orgID string, page ports.Page) ([]ports.User, string, error) {
	defer s.lock()()
	var users []ports.User
	for _, u := range s.identity.users {
		if u.OrgID == orgID && u.RemovedAt == nil {
			users = append(users, u)
		}
	}
	return paginate(users, page, keyset[ports.User]{key: func(u ports.User) (string, string) { return u.Email, u.ID }})
}

// SetUserRole changes the role of the org's user; not_found when the user
// is absent or another org's; invalid for an unknown role; conflict (code
// ports.CodeLastAdmin) when it would take the org's last admin away.
func (s *Store) SetUserRole(ctx context.Context, orgID, userID string, role ports.Role) error {
	if !role.Valid() {
		return ports.Invalid("unknown role", ports.FieldError{Field: "role", Reason: "must be admin, operator or member"})
	}
	defer s.lock()()
	u, ok := s.identity.users[userID]
	if !ok || u.OrgID != orgID {
		return ports.NotFound("user", userID)
	}
	if role != ports.RoleAdmin {
		if err := s.keepsAnAdmin(u); err != nil {
			return err
		}
	}
	u.Role = role
	put(ctx, s, s.identity.users, u.ID, u)
	return nil
}

// keepsAnAdmin returns nil unless u is an active admin and the only one of
// their org, and then the conflict (code ports.CodeLastAdmin) that keeps
// them (s.mu held).
func (s *Store) keepsAnAdmin(u ports.User) error {
	if u.Role != ports.RoleAdmin || u.RemovedAt != nil {
		return nil
	}
	for _, o := range s.identity.users {
		if o.OrgID == u.OrgID && o.ID != u.ID && o.Role == ports.RoleAdmin && o.RemovedAt == nil {
			return nil
		}
	}
	return &ports.Error{Kind: ports.KindConflict, Code: ports.CodeLastAdmin,
		Message: fmt.Sprintf("%s is the organisation's last admin", u.Email)}
}

// RemoveUser marks the org's user removed at the time given; not_found
// when the user is absent or another org's, conflict when removed already
// or (code ports.CodeLastAdmin) when they are the org's last admin.
func (s *Store) RemoveUser(ctx context.Context, orgID, userID string, at time.Time) error {
	defer s.lock()()
	u, ok := s.identity.users[userID]
	if !ok || u.OrgID != orgID {
		return ports.NotFound("user", userID)
	}
	if u.RemovedAt != nil {
		return ports.Errorf(ports.KindConflict, "user %s was removed already", userID)
	}
	if err := s.keepsAnAdmin(u); err != nil {
		return err
	}
	u.RemovedAt = utcPtr(&at)
	put(ctx, s, s.identity.users, u.ID, u)
	return nil
}

func cloneToken(t ports.APIToken) ports.APIToken {
	t.Hash = bytes.Clone(t.Hash)
	t.Scopes = slices.Clone(t.Scopes)
	t.ExpiresAt, t.LastUsedAt, t.RevokedAt = utcPtr(t.ExpiresAt), utcPtr(t.LastUsedAt), utcPtr(t.RevokedAt)
	return t
}

// CreateToken stores a new token; conflict when the id or hash exists
// already; not_found when the user does not exist.
func (s *Store) CreateToken(ctx context.Context, token ports.APIToken) error {
	defer s.lock()()
	return s.createToken(ctx, token)
}

// CreateTokenWithin stores a new API token as CreateToken does, unless its
// user has limit API tokens active at token.CreatedAt: then it is a
// conflict (code ports.CodeTooManyTokens).
func (s *Store) CreateTokenWithin(ctx context.Context, token ports.APIToken, limit int) error {
	defer s.lock()()
	if _, ok := s.identity.users[token.UserID]; !ok {
		return ports.NotFound("user", token.UserID)
	}
	active := 0
	for _, t := range s.identity.tokens {
		if t.UserID == token.UserID && !t.IsSession() && t.Status(token.CreatedAt) == ports.TokenActive {
			active++
		}
	}
	if active >= limit {
		return &ports.Error{Kind: ports.KindConflict, Code: ports.CodeTooManyTokens,
			Message: fmt.Sprintf("user %s has %d active tokens, the limit is %d", token.UserID, active, limit)}
	}
	return s.createToken(ctx, token)
}

// createToken is CreateToken with s.mu held.
func (s *Store) createToken(ctx context.Context, token ports.APIToken) error {
	if _, ok := s.identity.users[token.UserID]; !ok {
		return ports.NotFound("user", token.UserID)
	}
	if _, ok := s.identity.tokens[token.ID]; ok {
		return ports.Errorf(ports.KindConflict, "token %s exists already", token.ID)
	}
	for _, t := range s.identity.tokens {
		if bytes.Equal(t.Hash, token.Hash) {
			return ports.Errorf(ports.KindConflict, "token hash exists already")
		}
	}
	token = cloneToken(token)
	token.CreatedAt = utc(token.CreatedAt)
	if token.Kind == "" {
		token.Kind = ports.TokenAPI
	}
	if len(token.Scopes) == 0 {
		token.Scopes = slices.Clone(ports.DefaultScopes)
	}
	put(ctx, s, s.identity.tokens, token.ID, token)
	return nil
}

// GetTokenByHash returns the token with the hash, revoked or not, and its
// user; not_found when absent.
func (s *Store) GetTokenByHash(_ context.Context, hash []byte) (ports.APIToken, ports.User, error) {
	defer s.lock()()
	for _, t := range s.identity.tokens {
		if bytes.Equal(t.Hash, hash) {
			u, ok := s.identity.users[t.UserID]
			if !ok {
				break
			}
			return cloneToken(t), u, nil
		}
	}
	return ports.APIToken{}, ports.User{}, &ports.Error{Kind: ports.KindNotFound, Message: "token not found"}
}

// GetToken returns the token with the id; not_found when absent.
func (s *Store) GetToken(_ context.Context, id string) (ports.APIToken, error) {
	defer s.lock()()
	if t, ok := s.identity.tokens[id]; ok {
		return cloneToken(t), nil
	}
	return ports.APIToken{}, ports.NotFound("token", id)
}

// ListTokens returns tokens newest first, filtered by org and user; an empty
// orgID or userID does not filter.
func (s *Store) ListTokens(_ context.Context, orgID, userID string) ([]ports.APIToken, error) {
	defer s.lock()()
	var out []ports.APIToken
	for _, t := range s.identity.tokens {
		if (orgID == "" || t.OrgID == orgID) && (userID == "" || t.UserID == userID) {
			out = append(out, cloneToken(t))
		}
	}
	slices.SortFunc(out, func(a, b ports.APIToken) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
	return out, nil
}

// RevokeToken marks the org's token revoked at the time given; not_found
// when absent or another org's, conflict when revoked already.
func (s *Store) RevokeToken(ctx context.Context, orgID, id string, at time.Time) error {
	defer s.lock()()
	t, ok := s.identity.tokens[id]
	if !ok || t.OrgID != orgID {
		return ports.NotFound("token", id)
	}
	if t.RevokedAt != nil {
		return ports.Errorf(ports.KindConflict, "token %s is revoked already", id)
	}
	t.RevokedAt = utcPtr(&at)
	put(ctx, s, s.identity.tokens, id, t)
	return nil
}

// TouchToken records a use at the time given, unless a use at or after
// notBefore is recorded already; not_found when absent.
func (s *Store) TouchToken(ctx context.Context, id string, at, notBefore time.Time) error {
	defer s.lock()()
	t, ok := s.identity.tokens[id]
	if !ok {
		return ports.NotFound("token", id)
	}
	if t.LastUsedAt != nil && !t.LastUsedAt.Before(notBefore) {
		return nil
	}
	t.LastUsedAt = utcPtr(&at)
	put(ctx, s, s.identity.tokens, id, t)
	return nil
}

// DeleteExpiredTokens deletes tokens that expired, or were revoked, before
// the time given and returns how many it deleted.
func (s *Store) DeleteExpiredTokens(ctx context.Context, before time.Time) (int, error) {
	defer s.lock()()
	n := 0
	for id, t := range s.identity.tokens {
		if (t.ExpiresAt != nil && t.ExpiresAt.Before(before)) || (t.RevokedAt != nil && t.RevokedAt.Before(before)) {
			del(ctx, s, s.identity.tokens, id)
			n++
		}
	}
	return n, nil
}

// WatchRevocations returns errors.ErrUnsupported: a Store is one process's
// memory, so there are no other processes' revocations to watch.
func (s *Store) WatchRevocations(context.Context, func(string), func()) error {
	return errors.ErrUnsupported
}

// LinkIdentity stores a new link; conflict when the issuer and subject are
// linked already, or the user has a link at that issuer; not_found when
// the user does not exist.
func (s *Store) LinkIdentity(ctx context.Context, link ports.IdentityLink) error {
	defer s.lock()()
	if _, ok := s.identity.users[link.UserID]; !ok {
		return ports.NotFound("user", link.UserID)
	}
	k := linkKey{link.Issuer, link.Subject}
	if _, ok := s.identity.links[k]; ok {
		return ports.Errorf(ports.KindConflict, "identity %s is linked already", link.Subject)
	}
	for _, l := range s.identity.links {
		if l.UserID == link.UserID && l.Issuer == link.Issuer {
			return ports.Errorf(ports.KindConflict, "user %s has an identity at %s already", link.UserID, link.Issuer)
		}
	}
	link.CreatedAt = utc(link.CreatedAt)
	put(ctx, s, s.identity.links, k, link)
	return nil
}

// GetLinkedUser returns the user linked to the issuer and subject;
// not_found when none is.
func (s *Store) GetLinkedUser(_ context.Context, issuer, subject string) (ports.User, error) {
	defer s.lock()()
	if l, ok := s.identity.links[linkKey{issuer, subject}]; ok {
		if u, ok := s.identity.users[l.UserID]; ok {
			return u, nil
		}
	}
	return ports.User{}, ports.NotFound("user linked to", subject)
}
