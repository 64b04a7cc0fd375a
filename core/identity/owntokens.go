package identity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// The bounds of the tokens users create for themselves.
const (
	// MinOwnTokenTTL and MaxOwnTokenTTL bound a token's lifetime: every
	// token a user creates expires.
	MinOwnTokenTTL = time.Hour
	MaxOwnTokenTTL = 366 * 24 * time.Hour
	// MaxOwnTokens bounds a user's tokens that still authenticate.
	MaxOwnTokens = 50
)

// The audit actions of identity.
const (
	AuditTokenCreate = "token.create"
	AuditTokenRevoke = "token.revoke"
)

// maxOwnTokensListed bounds OwnTokens: revoked and expired tokens are kept
// for a while, so a user who makes and revokes many has more than
// MaxOwnTokens.
const maxOwnTokensListed = 200

// OwnTokens returns the caller's tokens, newest first, at most the newest
// 200: those that authenticate, and revoked and expired ones until they
// are pruned. The secrets are not kept; Prefix shows how each begins.
func (s *Service) OwnTokens(ctx context.Context) ([]ports.APIToken, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return nil, err
	}
	tokens, err := s.d.Tokens.ListTokens(ctx, p.OrgID, p.UserID)
	if len(tokens) > maxOwnTokensListed {
		tokens = tokens[:maxOwnTokensListed]
	}
	return tokens, err
}

// CreateOwnToken issues the caller a new token named name that expires
// after ttl, with scopes (none: ports.DefaultScopes); the returned Token is
// the only copy of its secret. It is audited. Errors: invalid (fields
// name: 1 to 100 characters of clean text; expires_in: from MinOwnTokenTTL
// to MaxOwnTokenTTL; scopes or scopes[i]: see ports.CheckScopes);
// forbidden (code insufficient_scope) when the caller's own token has
// narrower scopes than it asks for; conflict (code too_many_tokens) when
// the caller has MaxOwnTokens that still authenticate.
func (s *Service) CreateOwnToken(ctx context.Context, name string, ttl time.Duration, scopes []string) (IssuedToken, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return IssuedToken{}, err
	}
	name = strings.TrimSpace(name)
	var fields []ports.FieldError
	switch {
	case name == "" || len(name) > maxTokenName:
		fields = append(fields, ports.FieldError{Field: "name", Reason: fmt.Sprintf("must be 1 to %d characters", maxTokenName)})
	case ports.TextFault(name) != "":
		fields = append(fields, ports.FieldError{Field: "name", Reason: ports.TextFault(name)})
	}
	if ttl < MinOwnTokenTTL || ttl > MaxOwnTokenTTL {
		fields = append(fields, ports.FieldError{Field: "expires_in", Reason: "must be from 1 hour to 366 days"})
	}
	scopes, err = ports.CheckScopes(scopes)
	var bad *ports.Error
	if errors.As(err, &bad) {
		fields = append(fields, bad.Fields...)
	}
	if len(fields) > 0 {
		return IssuedToken{}, ports.Invalid("invalid token request", fields...)
	}
	if !p.Session && !ports.ScopesWithin(scopes, p.Scopes) {
		return IssuedToken{}, &ports.Error{Kind: ports.KindForbidden, Code: ports.CodeInsufficientScope,
			Message: fmt.Sprintf("a token may only create tokens that can do no more than itself: this one has the scopes %s", strings.Join(p.Scopes, " "))}
	}
	secret, err := s.newSecret()
	if err != nil {
		return IssuedToken{}, err
	}
	now := s.d.Clock.Now()
	var out IssuedToken
	err = s.d.Tx.WithinTx(ctx, func(ctx context.Context) error {
		user, err := s.d.Users.GetUser(ctx, p.UserID)
		if err != nil {
			return err
		}
		org, err := s.d.Orgs.GetOrg(ctx, p.OrgID)
		if err != nil {
			return err
		}
		// The store counts and creates in one atomic step, so concurrent
		// creations cannot pass the limit together.
		rec := s.tokenRecord(secret, user, name, now, ttl)
		rec.Scopes = scopes
		if err := s.d.Tokens.CreateTokenWithin(ctx, rec, MaxOwnTokens); err != nil {
			if errors.Is(err, ports.ErrTooManyTokens) {
				return &ports.Error{Kind: ports.KindConflict, Code: ports.CodeTooManyTokens,
					Message: fmt.Sprintf("you have %d tokens that still work, the most there may be; revoke one first", MaxOwnTokens)}
			}
			return err
		}
		args, _ := json.Marshal(map[string]any{"name": name, "expires_at": rec.ExpiresAt.UTC(), "scopes": scopes})
		if err := s.audit(ctx, p, AuditTokenCreate, "token/"+rec.ID, args, now); err != nil {
			return err
		}
		out = IssuedToken{Token: secret, Record: rec, User: user, Org: org}
		return nil
	})
	return out, err
}

// RevokeOwnToken revokes one of the caller's tokens; it stops working at
// once on every replica that watches revocations (see WatchRevocations),
// this request's token included. It is audited. Errors: not_found for a
// token that is absent or another user's; conflict when it is revoked
// already.
func (s *Service) RevokeOwnToken(ctx context.Context, id string) error {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return err
	}
	notFound := ports.NotFound("token", id)
	if !ports.IsID(id) {
		return notFound
	}
	now := s.d.Clock.Now()
	err = s.d.Tx.WithinTx(ctx, func(ctx context.Context) error {
		rec, err := s.d.Tokens.GetToken(ctx, id)
		if err != nil {
			return err
		}
		if rec.OrgID != p.OrgID || rec.UserID != p.UserID {
			return notFound
		}
		if err := s.d.Tokens.RevokeToken(ctx, rec.OrgID, rec.ID, now); err != nil {
			return err
		}
		args, _ := json.Marshal(map[string]any{"name": rec.Name})
		return s.audit(ctx, p, AuditTokenRevoke, "token/"+rec.ID, args, now)
	})
	if err != nil {
		return err
	}
	s.cache.forget(id)
	return nil
}

// audit records an identity action of p's, when the Service has an audit
// log.
func (s *Service) audit(ctx context.Context, p ports.Principal, action, resource string, args json.RawMessage, at time.Time) error {
	if s.d.Audit == nil {
		return nil
	}
	return s.d.Audit.RecordAudit(ctx, ports.AuditEntry{ID: s.d.IDs.NewID(), OrgID: p.OrgID, UserID: p.UserID,
		Action: action, Resource: resource, Arguments: args, Outcome: ports.AuditOK, At: at})
}

// Audit returns a page of the caller's organisation's audit log, newest
// first: every audited action, of identity (tokens) and of the other areas
// (cloud writes); for admins. Errors: forbidden for a member; invalid for
// a bad limit or cursor.
func (s *Service) Audit(ctx context.Context, page ports.Page) ([]ports.AuditEntry, string, error) {
	p, err := requireAdmin(ctx, "read its audit log")
	if err != nil {
		return nil, "", err
	}
	if s.d.Audit == nil {
		return nil, "", &ports.Error{Kind: ports.KindUnavailable, Message: "there is no audit log"}
	}
	if page, err = page.Checked(); err != nil {
		return nil, "", err
	}
	return s.d.Audit.ListAudit(ctx, p.OrgID, "", page)
}
