package scm

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/devpilot/devpilot/ports"
)

// CallbackInput is what the provider sends the user back with: a code and
// the state, or an error and its description when the user (or the
// provider) refused.
type CallbackInput struct {
	Code             string
	State            string
	Error            string
	ErrorDescription string
	// Binding is the secret Authorize gave the browser that started the
	// flow, as that browser brings it back (its cookie); "" when it has none.
	Binding string
}

// Authorization is a started connection: where to send the user, and the
// secret that ties the flow to the browser that started it.
type Authorization struct {
	// URL is the provider's authorize page.
	URL string
	// Binding is the secret to keep in the starting browser (an HttpOnly
	// cookie) until the callback, which refuses to complete without it.
	Binding string
	// CallbackURL is where the provider sends the browser back: the cookie
	// belongs to its path, and is Secure when it is https.
	CallbackURL string
	// TTL is how long the state, and so the binding, lives.
	TTL time.Duration
}

// CallbackResult is a completed connection: the connection (without its
// sealed token), how many repositories it sees, and where the user asked to
// go afterwards ("" when nowhere in particular).
type CallbackResult struct {
	Connection    ports.SCMConnection
	Repositories  int
	RedirectAfter string
}

// maxStateLen bounds a callback's state before the store is asked about it;
// the states devpilot makes are 43 characters.
const maxStateLen = 256

// Authorize starts connecting the caller's provider account: it stores a
// single-use state bound to the caller and to a secret for the caller's
// browser to keep (Authorization.Binding), expiring after Config.StateTTL,
// with a PKCE verifier, and returns the provider's authorize URL carrying the
// state and the verifier's S256 challenge. redirectAfter, where to send the
// user once connected, is "", a path ("/settings") or a URL on the origin of
// Config.PublicURL. Errors: invalid (field redirect_after) for anything else;
// unavailable when Config.PublicURL is not an absolute http(s) URL, or when
// the provider is not configured (naming what to set); internal when no
// random bytes can be read.
func (s *Service) Authorize(ctx context.Context, redirectAfter string) (Authorization, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return Authorization{}, err
	}
	if err := s.configured(); err != nil {
		return Authorization{}, err
	}
	if err := s.checkRedirect(redirectAfter); err != nil {
		return Authorization{}, err
	}
	var secrets [3]string // state, PKCE verifier, browser binding
	for i := range secrets {
		if secrets[i], err = s.random(); err != nil {
			return Authorization{}, err
		}
	}
	state, verifier, binding := secrets[0], secrets[1], secrets[2]
	authorizeURL, err := s.d.Provider.AuthorizeURL(state, challenge(verifier), s.redirectURI())
	if err != nil {
		return Authorization{}, err
	}
	now := s.d.Clock.Now()
	st := ports.OAuthState{State: state, OrgID: p.OrgID, UserID: p.UserID, CodeVerifier: verifier,
		RedirectAfter: redirectAfter, BindingHash: bindingHash(binding), CreatedAt: now, ExpiresAt: now.Add(s.cfg.StateTTL)}
	if err := s.d.Store.CreateOAuthState(ctx, st); err != nil {
		return Authorization{}, err
	}
	return Authorization{URL: authorizeURL, Binding: binding, CallbackURL: s.redirectURI(), TTL: s.cfg.StateTTL}, nil
}

// bindingHash is what is stored of a browser binding: its hex SHA-256.
func bindingHash(binding string) string {
	sum := sha256.Sum256([]byte(binding))
	return hex.EncodeToString(sum[:])
}

// boundTo reports, in constant time, whether binding is the secret whose
// hash the state keeps. A state without one is bound to no browser, and
// matches none.
func boundTo(st ports.OAuthState, binding string) bool {
	if st.BindingHash == "" || binding == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(bindingHash(binding)), []byte(st.BindingHash)) == 1
}

// Callback completes a connection: it consumes the state (which says who
// started it), checks that the browser completing it is the one that started
// it (in.Binding is the secret Authorize gave it), trades the code and the state's PKCE verifier for a token,
// learns whose it is, stores the connection (active, the token sealed and
// bound to the connection's id, which a reconnection keeps) and records the
// repositories the token can see (up to 1,000). Errors: malformed with the
// provider's words when it sent an error instead of a code, or when
// code or state is missing, and (code invalid_state) when the state is
// unknown, used or expired, and (code browser_mismatch) when in.Binding is
// missing or is not the state's (the state is used up all the same); malformed too when the provider refuses the code
// (wrong, used, or not matching the verifier); unavailable when
// Config.PublicURL is not set; the provider's other errors.
func (s *Service) Callback(ctx context.Context, in CallbackInput) (CallbackResult, error) {
	if in.Error != "" {
		msg := s.providerName() + ": " + ports.Line(in.Error, 100)
		if d := ports.Line(in.ErrorDescription, 500); d != "" {
			msg += ": " + d
		}
		return CallbackResult{}, &ports.Error{Kind: ports.KindMalformed, Message: msg}
	}
	var fields []ports.FieldError
	for _, f := range [][2]string{{"code", in.Code}, {"state", in.State}} {
		if f[1] == "" {
			fields = append(fields, ports.FieldError{Field: f[0], Reason: "required"})
		}
	}
	if err := ports.FieldsError(ports.KindMalformed, fields...); err != nil {
		return CallbackResult{}, err
	}
	if err := s.configured(); err != nil {
		return CallbackResult{}, err
	}
	if len(in.State) > maxStateLen {
		return CallbackResult{}, badState(nil)
	}
	st, err := s.d.Store.ConsumeOAuthState(ctx, in.State, s.d.Clock.Now())
	if errors.Is(err, ports.ErrNotFound) || errors.Is(err, ports.ErrGone) {
		return CallbackResult{}, badState(err)
	}
	if err != nil {
		return CallbackResult{}, err
	}
	if !boundTo(st, in.Binding) {
		return CallbackResult{}, browserMismatch()
	}
	tok, err := s.d.Provider.Exchange(ctx, in.Code, st.CodeVerifier, s.redirectURI())
	if err != nil {
		if e, ok := ports.AsError(err); ok && e.Kind == ports.KindInvalid {
			// A refused code is a bad request, like a bad state.
			return CallbackResult{}, &ports.Error{Kind: ports.KindMalformed, Code: e.Code, Message: e.Message, Fields: e.Fields, Err: err}
		}
		return CallbackResult{}, err
	}
	token := tok.AccessToken
	if token == "" {
		return CallbackResult{}, ports.Errorf(ports.KindUpstream, "%s gave no access token", s.providerName())
	}
	user, err := s.d.Provider.User(ctx, token)
	if err != nil {
		return CallbackResult{}, ports.Redact(err, token)
	}
	owner := ports.Owner{OrgID: st.OrgID, UserID: st.UserID}
	conn, err := s.saveConnection(ctx, owner, user.Login, tok.Scope, token)
	if err != nil {
		return CallbackResult{}, err
	}
	n, err := s.recordRepositories(ctx, conn, token)
	if err != nil {
		return CallbackResult{}, err
	}
	conn.SealedToken = ""
	return CallbackResult{Connection: conn, Repositories: n, RedirectAfter: st.RedirectAfter}, nil
}

// browserMismatch refuses a callback the starting browser did not make:
// without the binding, a link one user crafted could connect another
// user's provider account to the crafter's devpilot account.
func browserMismatch() error {
	return &ports.Error{Kind: ports.KindMalformed, Code: CodeBrowserMismatch,
		Message: "this connection was not started in this browser, or it took too long: start again at " + AuthorizePath}
}

func badState(cause error) error {
	return &ports.Error{Kind: ports.KindMalformed, Code: CodeInvalidState, Message: "unknown, used or expired state", Err: cause}
}

// saveConnection stores the owner's connection with the token sealed,
// reusing the id of the one it replaces, since the seal is bound to it.
func (s *Service) saveConnection(ctx context.Context, owner ports.Owner, login, scopes, token string) (ports.SCMConnection, error) {
	now := s.d.Clock.Now()
	conn := ports.SCMConnection{OrgID: owner.OrgID, UserID: owner.UserID, Provider: s.cfg.Provider, Login: login,
		Scopes: ports.Line(scopes, 500), Status: ports.SCMActive, CreatedAt: now, UpdatedAt: now}
	switch old, err := s.d.Store.GetConnection(ctx, owner, s.cfg.Provider); {
	case err == nil:
		conn.ID, conn.CreatedAt = old.ID, old.CreatedAt
	case errors.Is(err, ports.ErrNotFound):
		conn.ID = s.d.IDs.NewID()
	default:
		return ports.SCMConnection{}, err
	}
	// A connection stored meanwhile by a concurrent callback keeps its id:
	// seal again for that id.
	for range 2 {
		sealed, err := s.d.Cipher.Seal([]byte(token), []byte(conn.ID))
		if err != nil {
			return ports.SCMConnection{}, ports.Wrap(ports.KindInternal, err, "the access token cannot be sealed")
		}
		conn.SealedToken = sealed
		saved, err := s.d.Store.SaveConnection(ctx, conn)
		if err != nil {
			return ports.SCMConnection{}, err
		}
		if saved.ID == conn.ID {
			return saved, nil
		}
		conn.ID, conn.CreatedAt = saved.ID, saved.CreatedAt
	}
	return ports.SCMConnection{}, ports.Errorf(ports.KindConflict, "the %s connection changed while it was being saved; try again", s.providerName())
}

// recordRepositories stores the repositories the token sees, following up
// to repoPages pages, and returns how many there are.
func (s *Service) recordRepositories(ctx context.Context, conn ports.SCMConnection, token string) (int, error) {
	var repos []ports.Repository
	now := s.d.Clock.Now()
	cursor := ""
	for page := 0; page < repoPages; page++ {
		list, next, err := s.d.Provider.ListRepos(ctx, token, ports.Page{Limit: repoPageSize, Cursor: cursor})
		if err != nil {
			return 0, s.providerError(ctx, conn, ports.Redact(err, token))
		}
		for _, r := range list {
			repos = append(repos, ports.Repository{ID: s.d.IDs.NewID(), OrgID: conn.OrgID, UserID: conn.UserID,
				ConnectionID: conn.ID, SCMRepo: r, CreatedAt: now, UpdatedAt: now})
		}
		if cursor = next; cursor == "" {
			break
		}
	}
	complete := cursor == ""
	if !complete {
		s.log.WarnContext(ctx, "the connection sees more repositories than are recorded", "connection_id", conn.ID, "recorded", len(repos))
	}
	var saved []ports.Repository
	if len(repos) > 0 {
		var err error
		if saved, err = s.d.Store.SaveRepositories(ctx, conn.ID, repos, now); err != nil {
			return 0, err
		}
	}
	if complete { // what the connection no longer sees goes
		if _, err := s.d.Store.PruneRepositories(ctx, conn.ID, now); err != nil {
			return 0, err
		}
	}
	return len(saved), nil
}

// configured fails with unavailable unless the redirect URI can be built.
func (s *Service) configured() error {
	if s.public == nil {
		return &ports.Error{Kind: ports.KindUnavailable, Message: "connecting " + s.providerName() + " is not configured: the public URL is not set"}
	}
	return nil
}

func (s *Service) redirectURI() string { return s.public.String() + CallbackPath }

// CallbackURL is where the provider sends the browser back after
// authorizing: the public URL and CallbackPath.
func (s *Service) CallbackURL() string { return s.redirectURI() }

func (s *Service) origin() string { return s.public.Scheme + "://" + s.public.Host }

// checkRedirect accepts "", a path on this origin, or an absolute URL on
// it; anything a browser could take to another origin is refused.
func (s *Service) checkRedirect(raw string) error {
	if raw == "" {
		return nil
	}
	bad := ports.FieldsError(ports.KindInvalid, ports.FieldError{Field: "redirect_after",
		Reason: "must be a path such as /settings or a URL on " + s.origin()})
	if len(raw) > MaxRedirectLen {
		return ports.FieldsError(ports.KindInvalid, ports.FieldError{Field: "redirect_after", Reason: "must be at most 2048 characters"})
	}
	// Browsers read a backslash as a slash, and drop tabs and newlines.
	if strings.ContainsFunc(raw, func(r rune) bool { return r == '\\' || unicode.IsSpace(r) || unicode.IsControl(r) }) {
		return bad
	}
	u, err := url.Parse(raw)
	if err != nil {
		return bad
	}
	if strings.HasPrefix(raw, "/") {
		if strings.HasPrefix(raw, "//") {
			return bad
		}
		return nil
	}
	if u.Opaque != "" || u.User != nil || !strings.EqualFold(u.Scheme, s.public.Scheme) || !strings.EqualFold(u.Host, s.public.Host) {
		return bad
	}
	return nil
}

// random returns 32 random bytes, base64url without padding (43 characters).
func (s *Service) random() (string, error) {
	var b [32]byte
	if _, err := io.ReadFull(s.d.Random, b[:]); err != nil {
		return "", ports.Wrap(ports.KindInternal, err, "no random bytes")
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// challenge is the PKCE S256 challenge of a verifier (RFC 7636).
func challenge(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
