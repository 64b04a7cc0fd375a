package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/ports"
)

// Tokens is what /api/v1/tokens calls: each user's own API tokens.
type Tokens interface {
	OwnTokens(ctx context.Context) ([]ports.APIToken, error)
	CreateOwnToken(ctx context.Context, name string, ttl time.Duration, scopes []string) (identity.IssuedToken, error)
	RevokeOwnToken(ctx context.Context, id string) error
}

// AuditLog is what /api/v1/audit calls: the organisation's audit log, for
// admins.
type AuditLog interface {
	Audit(ctx context.Context, page ports.Page) ([]ports.AuditEntry, string, error)
}

// tokenRoutes serve the caller's own API tokens.
func (s *Server) tokenRoutes() {
	s.handle(http.MethodGet, "/api/v1/tokens", s.listOwnTokens)
	s.handle(http.MethodPost, "/api/v1/tokens", s.createOwnToken)
	s.handle(http.MethodDelete, "/api/v1/tokens/:token_id", s.revokeOwnToken)
}

func (s *Server) listOrgAudit(w http.ResponseWriter, r *http.Request) error {
	page, err := pageParams(r)
	if err != nil {
		return err
	}
	entries, next, err := s.d.AuditLog.Audit(r.Context(), page)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, list(mapSlice(entries, auditOut), next))
}

// tokenJSON is a token as listed: never its secret.
type tokenJSON struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Prefix     string     `json:"prefix"`
	Kind       string     `json:"kind"`
	Scopes     []string   `json:"scopes"`
	Status     string     `json:"status"`
	CreatedAt  time.Time  `json:"created_at"`
	ExpiresAt  *time.Time `json:"expires_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
}

func tokenOut(t ports.APIToken, now time.Time) tokenJSON {
	utc := func(p *time.Time) *time.Time {
		if p == nil {
			return nil
		}
		v := p.UTC()
		return &v
	}
	kind := ports.TokenAPI
	if t.IsSession() {
		kind = ports.TokenSession
	}
	scopes := t.Scopes
	if len(scopes) == 0 {
		scopes = ports.DefaultScopes
	}
	return tokenJSON{ID: t.ID, Name: t.Name, Prefix: t.Prefix, Kind: string(kind), Scopes: scopes, Status: string(t.Status(now)), CreatedAt: t.CreatedAt.UTC(),
		ExpiresAt: utc(t.ExpiresAt), LastUsedAt: utc(t.LastUsedAt), RevokedAt: utc(t.RevokedAt)}
}

func (s *Server) listOwnTokens(w http.ResponseWriter, r *http.Request) error {
	tokens, err := s.d.Tokens.OwnTokens(r.Context())
	if err != nil {
		return err
	}
	now := time.Now()
	return writeJSON(w, http.StatusOK, list(mapSlice(tokens, func(t ports.APIToken) tokenJSON { return tokenOut(t, now) }), ""))
}

type createTokenRequest struct {
	Name          *string `json:"name"`
	ExpiresInDays *int    `json:"expires_in_days"`
	// Scopes are what the token may do; absent or empty is read and write.
	Scopes []string `json:"scopes"`
}

// createdTokenJSON is a new token: the only time its secret is shown.
type createdTokenJSON struct {
	tokenJSON
	Token string `json:"token"`
}

func (s *Server) createOwnToken(w http.ResponseWriter, r *http.Request) error {
	var req createTokenRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.Name == nil || req.ExpiresInDays == nil {
		var fields []string
		if req.Name == nil {
			fields = append(fields, "name")
		}
		if req.ExpiresInDays == nil {
			fields = append(fields, "expires_in_days")
		}
		return missing(fields...)
	}
	days := *req.ExpiresInDays
	if days < 1 || days > 366 {
		return ports.Invalid("invalid token request", ports.FieldError{Field: "expires_in_days", Reason: "must be from 1 to 366"})
	}
	issued, err := s.d.Tokens.CreateOwnToken(r.Context(), *req.Name, time.Duration(days)*24*time.Hour, req.Scopes)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, createdTokenJSON{tokenJSON: tokenOut(issued.Record, issued.Record.CreatedAt), Token: issued.Token})
}

func (s *Server) revokeOwnToken(w http.ResponseWriter, r *http.Request) error {
	if err := s.d.Tokens.RevokeOwnToken(r.Context(), pathParam(r, "token_id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
