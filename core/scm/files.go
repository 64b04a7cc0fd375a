package scm

import (
	"context"

	"github.com/devpilot/devpilot/ports"
)

var _ ports.RepoFiles = (*Service)(nil)

// CheckRepo implements ports.RepoFiles: it returns the owner's connected
// repository. Errors: not_found when the owner has no such repository.
func (s *Service) CheckRepo(ctx context.Context, owner ports.Owner, repoID string) (ports.Repository, error) {
	if !ports.IsID(repoID) {
		return ports.Repository{}, ports.NotFound("repository", repoID)
	}
	return s.d.Store.GetRepository(ctx, owner, repoID)
}

// WriteFile implements ports.RepoFiles for an owner (not the principal in
// ctx: a background job writes for whoever made its target): the file is
// written through the owner's connection in one commit, unless it holds
// that content already. Errors: not_found for the repository;
// precondition_failed (not_connected) without a connection; upstream
// (connection_broken) when its token stopped working; the provider's.
func (s *Service) WriteFile(ctx context.Context, owner ports.Owner, w ports.RepoFileWrite) (ports.PublishResult, error) {
	repo, err := s.CheckRepo(ctx, owner, w.RepoID)
	if err != nil {
		return ports.PublishResult{}, err
	}
	conn, err := s.connection(ctx, ports.Principal{OrgID: owner.OrgID, UserID: owner.UserID})
	if err != nil {
		return ports.PublishResult{}, err
	}
	type result struct{ url string }
	out, _, err := list(ctx, s, conn, func(token string) ([]result, string, error) {
		url, err := s.d.Provider.WriteFile(ctx, token, repo.Owner, repo.Name,
			ports.SCMFileWrite{Path: w.Path, Branch: w.Branch, Content: w.Content, Message: w.Message})
		return []result{{url}}, "", err
	})
	if err != nil {
		return ports.PublishResult{}, err
	}
	return ports.PublishResult{RemoteURL: out[0].url}, nil
}
