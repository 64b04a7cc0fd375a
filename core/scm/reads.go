package scm

import (
	"context"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/devpilot/devpilot/ports"
)

// ListRepos returns a page of the caller's recorded repositories by full
// name, and the next page's cursor ("" at the end). A zero Limit means 30.
// Errors: invalid for a limit outside 1..100 or a bad cursor.
func (s *Service) ListRepos(ctx context.Context, page ports.Page) ([]ports.Repository, string, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return nil, "", err
	}
	if page, err = checkPage(page); err != nil {
		return nil, "", err
	}
	return s.d.Store.ListRepositories(ctx, p.Owner(), page)
}

// ListCommits returns a page of a repository's commits, newest first, and
// the next page's cursor. repoID is devpilot's id of one of the caller's
// repositories. Errors: as Activity.
func (s *Service) ListCommits(ctx context.Context, repoID string, page ports.Page) ([]ports.SCMCommit, string, error) {
	repo, conn, page, err := s.repoCall(ctx, repoID, page)
	if err != nil {
		return nil, "", err
	}
	return list(ctx, s, conn, func(token string) ([]ports.SCMCommit, string, error) {
		return s.d.Provider.ListCommits(ctx, token, repo.Owner, repo.Name, page)
	})
}

// ListPulls returns a page of a repository's pull requests, newest first,
// and the next page's cursor. Errors: as Activity.
func (s *Service) ListPulls(ctx context.Context, repoID string, page ports.Page) ([]ports.SCMPull, string, error) {
	repo, conn, page, err := s.repoCall(ctx, repoID, page)
	if err != nil {
		return nil, "", err
	}
	return list(ctx, s, conn, func(token string) ([]ports.SCMPull, string, error) {
		return s.d.Provider.ListPulls(ctx, token, repo.Owner, repo.Name, page)
	})
}

// SearchCommits searches the commits the caller's connection can see with
// the provider's query syntax, and returns a page of them and the next
// page's cursor. Errors: malformed (field q) when q is blank; invalid (q)
// when it is longer than 256 characters; otherwise as Activity.
func (s *Service) SearchCommits(ctx context.Context, q string, page ports.Page) ([]ports.SCMCommit, string, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return nil, "", err
	}
	q = strings.TrimSpace(q)
	if q == "" {
		return nil, "", ports.FieldsError(ports.KindMalformed, ports.FieldError{Field: "q", Reason: "required"})
	}
	if utf8.RuneCountInString(q) > MaxQueryLen {
		return nil, "", ports.FieldsError(ports.KindInvalid, ports.FieldError{Field: "q", Reason: "must be at most 256 characters"})
	}
	if page, err = checkPage(page); err != nil {
		return nil, "", err
	}
	conn, err := s.connection(ctx, p)
	if err != nil {
		return nil, "", err
	}
	return list(ctx, s, conn, func(token string) ([]ports.SCMCommit, string, error) {
		return s.d.Provider.SearchCommits(ctx, token, q, page)
	})
}

// repoCall is the first step of a read of one repository: the caller, the
// page, the repository and the caller's connection.
func (s *Service) repoCall(ctx context.Context, repoID string, page ports.Page) (ports.Repository, ports.SCMConnection, ports.Page, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return ports.Repository{}, ports.SCMConnection{}, page, err
	}
	if page, err = checkPage(page); err != nil {
		return ports.Repository{}, ports.SCMConnection{}, page, err
	}
	repo, err := s.repository(ctx, p, repoID)
	if err != nil {
		return ports.Repository{}, ports.SCMConnection{}, page, err
	}
	conn, err := s.connection(ctx, p)
	return repo, conn, page, err
}

// repository returns the caller's repository: not_found when absent or
// another user's.
func (s *Service) repository(ctx context.Context, p ports.Principal, id string) (ports.Repository, error) {
	if !ports.IsID(id) {
		return ports.Repository{}, ports.NotFound("repository", id)
	}
	return s.d.Store.GetRepository(ctx, p.Owner(), id)
}

// connection returns the caller's connection, as stored: precondition_failed
// (not_connected) when there is none, upstream (connection_broken) when its
// token stopped working.
func (s *Service) connection(ctx context.Context, p ports.Principal) (ports.SCMConnection, error) {
	conn, err := s.d.Store.GetConnection(ctx, p.Owner(), s.cfg.Provider)
	if errors.Is(err, ports.ErrNotFound) {
		return conn, &ports.Error{Kind: ports.KindPreconditionFailed, Code: CodeNotConnected,
			Message: "connect " + s.providerName() + " first: GET " + AuthorizePath, Err: err}
	}
	if err != nil {
		return conn, err
	}
	if conn.Status == ports.SCMBroken {
		return conn, s.broken(nil)
	}
	return conn, nil
}

func (s *Service) broken(cause error) error {
	return &ports.Error{Kind: ports.KindUpstream, Code: CodeConnectionBroken,
		Message: "the " + s.providerName() + " connection is broken: the token was revoked or expired; reconnect at " + AuthorizePath, Err: cause}
}

// list runs a provider read with the connection's token, opened for this
// call only, and returns its error with no trace of the token.
func list[T any](ctx context.Context, s *Service, conn ports.SCMConnection, fn func(token string) ([]T, string, error)) ([]T, string, error) {
	token, err := s.d.Cipher.Open(conn.SealedToken, []byte(conn.ID))
	if err != nil {
		return nil, "", ports.Wrap(ports.KindInternal, err, "the token of the "+s.providerName()+" connection cannot be opened")
	}
	items, next, err := fn(string(token))
	if err != nil {
		return nil, "", s.providerError(ctx, conn, ports.Redact(err, string(token)))
	}
	return items, next, nil
}

// providerError marks the connection broken when the provider no longer
// accepts its token, and returns the error the caller sees.
func (s *Service) providerError(ctx context.Context, conn ports.SCMConnection, err error) error {
	if e, ok := ports.AsError(err); !ok || e.Code != CodeTokenRevoked {
		return err
	}
	reason := "the token was revoked or expired"
	if merr := s.d.Store.MarkConnectionBroken(detached(ctx), conn.ID, reason, s.d.Clock.Now()); merr != nil {
		s.log.ErrorContext(ctx, "cannot mark the connection broken", "connection_id", conn.ID, "err", merr)
	} else {
		s.log.InfoContext(ctx, "connection broken", "connection_id", conn.ID, "reason", reason)
	}
	return s.broken(err)
}
