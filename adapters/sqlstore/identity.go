package sqlstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lib/pq"

	"github.com/devpilot/devpilot/ports"
)

var (
	_ ports.OrgStore          = (*Identity)(nil)
	_ ports.UserStore         = (*Identity)(nil)
	_ ports.TokenStore        = (*Identity)(nil)
	_ ports.IdentityLinkStore = (*Identity)(nil)
)

// Identity keeps orgs, users, API tokens and sign-in identity links; it
// implements ports.OrgStore, ports.UserStore, ports.TokenStore and
// ports.IdentityLinkStore, with the errors those ports document.
type Identity struct {
	db *DB
}

// NewIdentity returns the identity stores over db.
func NewIdentity(db *DB) *Identity {
	return &Identity{db: db}
}

type orgRow struct {
	ID        string    `db:"id"`
	Name      string    `db:"name"`
	CreatedAt timestamp `db:"created_at"`
}

func (r orgRow) org() ports.Org {
	return ports.Org{ID: r.ID, Name: r.Name, CreatedAt: time.Time(r.CreatedAt)}
}

const orgColumns = "id, name, created_at"

// CreateOrg implements ports.OrgStore.
func (s *Identity) CreateOrg(ctx context.Context, org ports.Org) error {
	_, err := s.db.write(ctx).exec(ctx,
		"INSERT INTO orgs ("+orgColumns+") VALUES (?, ?, ?)",
		org.ID, org.Name, timestamp(org.CreatedAt))
	return storeErr(err, "org "+org.Name, "")
}

// GetOrg implements ports.OrgStore.
func (s *Identity) GetOrg(ctx context.Context, id string) (ports.Org, error) {
	var r orgRow
	err := s.db.read(ctx).get(ctx, &r, "SELECT "+orgColumns+" FROM orgs WHERE id = ?", id)
	return r.org(), storeErr(err, "org "+id, "")
}

// GetOrgByName implements ports.OrgStore.
func (s *Identity) GetOrgByName(ctx context.Context, name string) (ports.Org, error) {
	var r orgRow
	err := s.db.read(ctx).get(ctx, &r, "SELECT "+orgColumns+" FROM orgs WHERE name = ?", name)
	return r.org(), storeErr(err, "org "+name, "")
}

type userRow struct {
	ID            string     `db:"id"`
	OrgID         string     `db:"org_id"`
	Email         string     `db:"email"`
	EmailVerified bool       `db:"email_verified"`
	Role          string     `db:"role"`
	CreatedAt     timestamp  `db:"created_at"`
	RemovedAt     *timestamp `db:"removed_at"`
}

func (r userRow) user() ports.User {
	return ports.User{ID: r.ID, OrgID: r.OrgID, Email: r.Email, EmailVerified: r.EmailVerified, Role: ports.Role(r.Role),
		CreatedAt: time.Time(r.CreatedAt), RemovedAt: r.RemovedAt.timePtr()}
}

const userColumns = "id, org_id, email, email_verified, role, created_at, removed_at"

// CreateUser implements ports.UserStore. It stores the email lower-cased;
// a unique index over the verified users' emails decides a race between
// two verified users.
func (s *Identity) CreateUser(ctx context.Context, user ports.User) error {
	email := strings.ToLower(user.Email)
	_, err := s.db.write(ctx).exec(ctx,
		"INSERT INTO users ("+userColumns+") VALUES (?, ?, ?, ?, ?, ?, ?)",
		user.ID, user.OrgID, email, user.EmailVerified, string(user.Role), timestamp(user.CreatedAt), timestampPtr(user.RemovedAt))
	return storeErr(err, "user "+email, "org "+user.OrgID)
}

// GetUser implements ports.UserStore.
func (s *Identity) GetUser(ctx context.Context, id string) (ports.User, error) {
	var r userRow
	err := s.db.read(ctx).get(ctx, &r, "SELECT "+userColumns+" FROM users WHERE id = ?", id)
	return r.user(), storeErr(err, "user "+id, "")
}

// GetVerifiedUserByEmail implements ports.UserStore.
func (s *Identity) GetVerifiedUserByEmail(ctx context.Context, email string) (ports.User, error) {
	email = strings.ToLower(email)
	var r userRow
	err := s.db.read(ctx).get(ctx, &r, "SELECT "+userColumns+" FROM users WHERE email = ? AND email_verified", email)
	return r.user(), storeErr(err, "verified user "+email, "")
}

// ListUsersByEmail implements ports.UserStore.
func (s *Identity) ListUsersByEmail(ctx context.Context, email string) ([]ports.User, error) {
	email = strings.ToLower(email)
	var rows []userRow
	if err := s.db.read(ctx).list(ctx, &rows, "SELECT "+userColumns+" FROM users WHERE email = ? ORDER BY created_at, id", email); err != nil {
		return nil, storeErr(err, "users "+email, "")
	}
	users := make([]ports.User, len(rows))
	for i, r := range rows {
		users[i] = r.user()
	}
	return users, nil
}

// VerifyUserEmail implements ports.UserStore; the unique index over the
// verified users' emails refuses a second one.
func (s *Identity) VerifyUserEmail(ctx context.Context, userID string) error {
	c := s.db.write(ctx)
	n, err := c.exec(ctx, "UPDATE users SET email_verified = ? WHERE id = ?", true, userID)
	if err != nil {
		return storeErr(err, "verified email of user "+userID, "")
	}
	if n == 0 {
		return ports.NotFound("user", userID)
	}
	return nil
}

// ListUsers implements ports.UserStore, by email then id; a page holds at
// most page.Size() items.
func (s *Identity) ListUsers(ctx context.Context, orgID string, page ports.Page) ([]ports.User, string, error) {
	rows, next, err := listPage(ctx, s.db.read(ctx), "SELECT "+userColumns+" FROM users WHERE org_id = ? AND removed_at IS NULL", []any{orgID}, page,
		keyset[userRow]{key: "email", id: "id", last: func(r userRow) (string, string) { return r.Email, r.ID }})
	if err != nil {
		return nil, "", storeErr(err, "users of org "+orgID, "")
	}
	users := make([]ports.User, len(rows))
	for i, r := range rows {
		users[i] = r.user()
	}
	return users, next, nil
}

// SetUserRole implements ports.UserStore. Unless it makes the user an
// admin, it first locks the org's row (see lockOrgAdmins), then changes the
// role with one conditional UPDATE that keeps another active admin.
func (s *Identity) SetUserRole(ctx context.Context, orgID, userID string, role ports.Role) error {
	if !role.Valid() {
		return ports.Invalid("unknown role", ports.FieldError{Field: "role", Reason: "must be admin, operator or member"})
	}
	return s.db.WithinTx(ctx, func(ctx context.Context) error {
		c := s.db.write(ctx)
		query, args := "UPDATE users SET role = ? WHERE id = ? AND org_id = ?", []any{string(role), userID, orgID}
		if role != ports.RoleAdmin {
			if err := s.lockOrgAdmins(ctx, orgID); err != nil {
				return err
			}
			query += keepsAnAdmin
			args = append(args, orgID, userID)
		}
		n, err := c.exec(ctx, query, args...)
		if err != nil {
			return storeErr(err, "user "+userID, "")
		}
		if n == 0 {
			return s.whyUnchanged(ctx, orgID, userID)
		}
		return nil
	})
}

// keepsAnAdmin ends an UPDATE of one user of an org (arguments: the org's
// id and the user's) so that it changes no active admin unless another
// active admin remains.
const keepsAnAdmin = ` AND (role <> 'admin' OR removed_at IS NOT NULL OR EXISTS (
	SELECT 1 FROM users o WHERE o.org_id = ? AND o.id <> ? AND o.role = 'admin' AND o.removed_at IS NULL))`

// lockOrgAdmins locks the org's row until the transaction in ctx ends, on
// PostgreSQL, so that the changes that may take an admin away from the org
// run one at a time: each sees the admins the one before left (READ
// COMMITTED takes a new snapshot per statement). On SQLite the one writer
// connection runs one transaction at a time already.
func (s *Identity) lockOrgAdmins(ctx context.Context, orgID string) error {
	if s.db.Dialect != DialectPostgres {
		return nil
	}
	_, err := s.db.write(ctx).exec(ctx, "SELECT 1 FROM orgs WHERE id = ? FOR NO KEY UPDATE", orgID)
	return storeErr(err, "org "+orgID, "")
}

// whyUnchanged says why an UPDATE of the org's user changed nothing:
// not_found, conflict (removed already) or conflict (last admin).
func (s *Identity) whyUnchanged(ctx context.Context, orgID, userID string) error {
	var r userRow
	if err := s.db.write(ctx).get(ctx, &r, "SELECT "+userColumns+" FROM users WHERE id = ? AND org_id = ?", userID, orgID); err != nil {
		return storeErr(err, "user "+userID, "")
	}
	if r.RemovedAt != nil {
		return ports.Errorf(ports.KindConflict, "user %s was removed already", userID)
	}
	return &ports.Error{Kind: ports.KindConflict, Code: ports.CodeLastAdmin,
		Message: fmt.Sprintf("%s is the organisation's last admin", r.Email)}
}

// RemoveUser implements ports.UserStore, as SetUserRole: it locks the
// org's row, then removes the user with one conditional UPDATE.
func (s *Identity) RemoveUser(ctx context.Context, orgID, userID string, at time.Time) error {
	return s.db.WithinTx(ctx, func(ctx context.Context) error {
		if err := s.lockOrgAdmins(ctx, orgID); err != nil {
			return err
		}
		n, err := s.db.write(ctx).exec(ctx, "UPDATE users SET removed_at = ? WHERE id = ? AND org_id = ? AND removed_at IS NULL"+keepsAnAdmin,
			timestamp(at), userID, orgID, orgID, userID)
		if err != nil {
			return storeErr(err, "user "+userID, "")
		}
		if n == 0 {
			return s.whyUnchanged(ctx, orgID, userID)
		}
		return nil
	})
}

type tokenRow struct {
	ID         string     `db:"id"`
	UserID     string     `db:"user_id"`
	OrgID      string     `db:"org_id"`
	Name       string     `db:"name"`
	Prefix     string     `db:"prefix"`
	Hash       []byte     `db:"hash"`
	Kind       string     `db:"kind"`
	Scopes     string     `db:"scopes"`
	CreatedAt  timestamp  `db:"created_at"`
	ExpiresAt  *timestamp `db:"expires_at"`
	LastUsedAt *timestamp `db:"last_used_at"`
	RevokedAt  *timestamp `db:"revoked_at"`
}

func (r tokenRow) token() ports.APIToken {
	return ports.APIToken{
		ID: r.ID, UserID: r.UserID, OrgID: r.OrgID, Name: r.Name, Prefix: r.Prefix, Hash: r.Hash,
		Kind:       ports.TokenKind(r.Kind),
		Scopes:     tokenScopes(r.Scopes),
		CreatedAt:  time.Time(r.CreatedAt),
		ExpiresAt:  r.ExpiresAt.timePtr(),
		LastUsedAt: r.LastUsedAt.timePtr(),
		RevokedAt:  r.RevokedAt.timePtr(),
	}
}

const tokenColumns = "id, user_id, org_id, name, prefix, hash, kind, scopes, created_at, expires_at, last_used_at, revoked_at"

// tokenScopes are the scopes of a stored token: its column splits on
// spaces; an empty one is nil, the default.
func tokenScopes(col string) []string {
	if f := strings.Fields(col); len(f) > 0 {
		return f
	}
	return nil
}

// scopesColumn is how a token's scopes are stored: space-separated, the
// default's when there are none.
func scopesColumn(scopes []string) string {
	if len(scopes) == 0 {
		scopes = ports.DefaultScopes
	}
	return strings.Join(scopes, " ")
}

// tokenKind is the stored kind of a token: the zero Kind is an API token.
func tokenKind(k ports.TokenKind) string {
	if k == "" {
		return string(ports.TokenAPI)
	}
	return string(k)
}

// CreateToken implements ports.TokenStore.
func (s *Identity) CreateToken(ctx context.Context, t ports.APIToken) error {
	_, err := s.db.write(ctx).exec(ctx,
		"INSERT INTO api_tokens ("+tokenColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		t.ID, t.UserID, t.OrgID, t.Name, t.Prefix, t.Hash, tokenKind(t.Kind), scopesColumn(t.Scopes), timestamp(t.CreatedAt),
		timestampPtr(t.ExpiresAt), timestampPtr(t.LastUsedAt), timestampPtr(t.RevokedAt))
	return storeErr(err, "token "+t.ID, "user "+t.UserID)
}

// CreateTokenWithin implements ports.TokenStore. In one transaction it
// locks the user's row (FOR NO KEY UPDATE on PostgreSQL, which still lets
// other rows refer to it; SQLite's one writer runs one transaction at a
// time already), counts the user's active API tokens, and inserts.
func (s *Identity) CreateTokenWithin(ctx context.Context, t ports.APIToken, limit int) error {
	return s.db.WithinTx(ctx, func(ctx context.Context) error {
		c := s.db.write(ctx)
		lock := ""
		if s.db.Dialect == DialectPostgres {
			lock = " FOR NO KEY UPDATE"
		}
		found, err := c.exists(ctx, "SELECT 1 FROM users WHERE id = ?"+lock, t.UserID)
		switch {
		case err != nil:
			return storeErr(err, "user "+t.UserID, "")
		case !found:
			return ports.NotFound("user", t.UserID)
		}
		var active int
		err = c.get(ctx, &active, `SELECT count(*) FROM api_tokens
			WHERE user_id = ? AND kind = ? AND revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?)`,
			t.UserID, string(ports.TokenAPI), timestamp(t.CreatedAt))
		if err != nil {
			return storeErr(err, "tokens of user "+t.UserID, "")
		}
		if active >= limit {
			return &ports.Error{Kind: ports.KindConflict, Code: ports.CodeTooManyTokens,
				Message: fmt.Sprintf("user %s has %d active tokens, the limit is %d", t.UserID, active, limit)}
		}
		return s.CreateToken(ctx, t)
	})
}

// GetTokenByHash implements ports.TokenStore.
func (s *Identity) GetTokenByHash(ctx context.Context, hash []byte) (ports.APIToken, ports.User, error) {
	var r struct {
		tokenRow
		UserOrgID     string     `db:"user_org_id"`
		UserEmail     string     `db:"user_email"`
		UserVerified  bool       `db:"user_email_verified"`
		UserRole      string     `db:"user_role"`
		UserCreatedAt timestamp  `db:"user_created_at"`
		UserRemovedAt *timestamp `db:"user_removed_at"`
	}
	err := s.db.read(ctx).get(ctx, &r, `SELECT t.id, t.user_id, t.org_id, t.name, t.prefix, t.hash, t.kind, t.scopes, t.created_at,
			t.expires_at, t.last_used_at, t.revoked_at,
			u.org_id AS user_org_id, u.email AS user_email, u.email_verified AS user_email_verified, u.role AS user_role, u.created_at AS user_created_at,
			u.removed_at AS user_removed_at
		FROM api_tokens t JOIN users u ON u.id = t.user_id WHERE t.hash = ?`, hash)
	if err != nil {
		return ports.APIToken{}, ports.User{}, storeErr(err, "token", "")
	}
	user := userRow{ID: r.UserID, OrgID: r.UserOrgID, Email: r.UserEmail, EmailVerified: r.UserVerified, Role: r.UserRole, CreatedAt: r.UserCreatedAt, RemovedAt: r.UserRemovedAt}
	return r.token(), user.user(), nil
}

// GetToken implements ports.TokenStore.
func (s *Identity) GetToken(ctx context.Context, id string) (ports.APIToken, error) {
	var r tokenRow
	err := s.db.read(ctx).get(ctx, &r, "SELECT "+tokenColumns+" FROM api_tokens WHERE id = ?", id)
	return r.token(), storeErr(err, "token "+id, "")
}

// ListTokens implements ports.TokenStore.
func (s *Identity) ListTokens(ctx context.Context, orgID, userID string) ([]ports.APIToken, error) {
	query := "SELECT " + tokenColumns + " FROM api_tokens WHERE 1 = 1"
	var args []any
	if orgID != "" {
		query += " AND org_id = ?"
		args = append(args, orgID)
	}
	if userID != "" {
		query += " AND user_id = ?"
		args = append(args, userID)
	}
	query += " ORDER BY created_at DESC, id DESC"
	var rows []tokenRow
	if err := s.db.read(ctx).list(ctx, &rows, query, args...); err != nil {
		return nil, storeErr(err, "tokens", "")
	}
	tokens := make([]ports.APIToken, len(rows))
	for i, r := range rows {
		tokens[i] = r.token()
	}
	return tokens, nil
}

// RevokeToken implements ports.TokenStore.
func (s *Identity) RevokeToken(ctx context.Context, orgID, id string, at time.Time) error {
	c := s.db.write(ctx)
	revoke := "UPDATE api_tokens SET revoked_at = ? WHERE id = ? AND org_id = ? AND revoked_at IS NULL"
	var n int64
	var err error
	if s.db.Dialect == DialectPostgres {
		// The notification goes out when the revocation commits.
		err = c.get(ctx, &n, `WITH r AS (`+revoke+` RETURNING id),
			n AS (SELECT pg_notify('`+revokedChannel+`', id) FROM r)
			SELECT count(*) FROM n`, timestamp(at), id, orgID)
	} else {
		n, err = c.exec(ctx, revoke, timestamp(at), id, orgID)
	}
	if err != nil || n == 1 {
		return storeErr(err, "token "+id, "")
	}
	found, err := c.exists(ctx, "SELECT 1 FROM api_tokens WHERE id = ? AND org_id = ?", id, orgID)
	switch {
	case err != nil:
		return storeErr(err, "token "+id, "")
	case !found:
		return ports.NotFound("token", id)
	}
	return ports.Errorf(ports.KindConflict, "token %s is revoked already", id)
}

// revokedChannel is the PostgreSQL notification channel RevokeToken
// announces a revoked token's id on.
const revokedChannel = "devpilot_token_revoked"

// WatchRevocations implements ports.TokenStore on PostgreSQL, with LISTEN on
// a connection of its own (reconnected after a loss, which is reported as
// lost); on SQLite it returns errors.ErrUnsupported.
func (s *Identity) WatchRevocations(ctx context.Context, revoked func(tokenID string), lost func()) error {
	if s.db.Dialect != DialectPostgres {
		return errors.ErrUnsupported
	}
	events := make(chan struct{}, 1)
	l := pq.NewListener(s.db.dsn, 100*time.Millisecond, 10*time.Second, func(ev pq.ListenerEventType, _ error) {
		if ev == pq.ListenerEventDisconnected {
			select {
			case events <- struct{}{}:
			default:
			}
		}
	})
	stop := context.AfterFunc(ctx, func() { _ = l.Close() })
	defer stop()
	defer l.Close()
	if err := l.Listen(revokedChannel); err != nil {
		return cmp.Or(ctx.Err(), storeErr(err, "token revocations", ""))
	}
	lost() // in place now; what came before is unknown
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-events:
			lost()
		case n, ok := <-l.Notify:
			switch {
			case !ok:
				return cmp.Or(ctx.Err(), error(ports.Errorf(ports.KindUnavailable, "token revocations: the listener closed")))
			case n == nil: // reconnected: what was said meanwhile is gone
				lost()
			default:
				revoked(n.Extra)
			}
		}
	}
}

// TouchToken implements ports.TokenStore.
func (s *Identity) TouchToken(ctx context.Context, id string, at, notBefore time.Time) error {
	c := s.db.write(ctx)
	n, err := c.exec(ctx,
		"UPDATE api_tokens SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)",
		timestamp(at), id, timestamp(notBefore))
	if err != nil || n == 1 {
		return storeErr(err, "token "+id, "")
	}
	found, err := c.exists(ctx, "SELECT 1 FROM api_tokens WHERE id = ?", id)
	switch {
	case err != nil:
		return storeErr(err, "token "+id, "")
	case !found:
		return ports.NotFound("token", id)
	}
	return nil
}

// DeleteExpiredTokens implements ports.TokenStore.
func (s *Identity) DeleteExpiredTokens(ctx context.Context, before time.Time) (int, error) {
	n, err := s.db.write(ctx).exec(ctx,
		"DELETE FROM api_tokens WHERE expires_at < ? OR revoked_at < ?",
		timestamp(before), timestamp(before))
	if err != nil {
		return 0, storeErr(err, "expired tokens", "")
	}
	return int(n), nil
}

// LinkIdentity implements ports.IdentityLinkStore.
func (s *Identity) LinkIdentity(ctx context.Context, link ports.IdentityLink) error {
	_, err := s.db.write(ctx).exec(ctx,
		"INSERT INTO identity_links (issuer, subject, user_id, created_at) VALUES (?, ?, ?, ?)",
		link.Issuer, link.Subject, link.UserID, timestamp(link.CreatedAt))
	return storeErr(err, "identity link of user "+link.UserID, "user "+link.UserID)
}

// GetLinkedUser implements ports.IdentityLinkStore.
func (s *Identity) GetLinkedUser(ctx context.Context, issuer, subject string) (ports.User, error) {
	var r userRow
	err := s.db.read(ctx).get(ctx, &r, `SELECT u.id, u.org_id, u.email, u.email_verified, u.role, u.created_at, u.removed_at
		FROM identity_links l JOIN users u ON u.id = l.user_id WHERE l.issuer = ? AND l.subject = ?`, issuer, subject)
	return r.user(), storeErr(err, "user linked to "+subject, "")
}
