package github

import (
	"context"
	"errors"
	"net/http"

	gh "github.com/google/go-github/v84/github"

	"github.com/devpilot/devpilot/ports"
)

// WriteFile implements ports.SCMProvider with the contents API: it reads the
// file's current blob (GET /repos/{o}/{r}/contents/{path}), returns at once
// when it holds w.Content already (so a publish retried after a crash makes
// no second commit), and otherwise creates or updates it in one commit
// (PUT, with the current sha when the file exists). Errors: as ReadFile,
// and conflict when the file changed between the read and the write.
func (c *Client) WriteFile(ctx context.Context, token, owner, repo string, w ports.SCMFileWrite) (string, error) {
	if err := checkRepo(owner, repo); err != nil {
		return "", err
	}
	if err := checkPath(w.Path); err != nil {
		return "", err
	}
	if w.Branch != "" {
		if err := checkRef(w.Branch); err != nil {
			return "", err
		}
	}
	what := "file " + w.Path + " of GitHub repository " + owner + "/" + repo
	var cur *gh.RepositoryContent
	resp, err := c.call(ctx, opWriteFile, token, what, func(ctx context.Context, api *gh.Client) (resp *gh.Response, err error) {
		cur, _, resp, err = api.Repositories.GetContents(ctx, owner, repo, w.Path, &gh.RepositoryContentGetOptions{Ref: w.Branch})
		return resp, err
	})
	switch {
	case err == nil && cur == nil:
		return "", ports.Invalid("not a file: "+w.Path, ports.FieldError{Field: "path", Reason: "a directory"})
	case err == nil:
		if content, cerr := cur.GetContent(); cerr == nil && cur.GetEncoding() != "none" && content == w.Content {
			return cur.GetHTMLURL(), nil
		}
	case errors.Is(err, ports.ErrNotFound) && resp != nil && resp.StatusCode == http.StatusNotFound:
		cur = nil // a new file (an unknown repository fails the write below)
	default:
		return "", err
	}
	opts := &gh.RepositoryContentFileOptions{Message: gh.Ptr(w.Message), Content: []byte(w.Content)}
	if w.Branch != "" {
		opts.Branch = gh.Ptr(w.Branch)
	}
	if cur != nil {
		opts.SHA = gh.Ptr(cur.GetSHA())
	}
	var res *gh.RepositoryContentResponse
	_, err = c.call(ctx, opWriteFile, token, what, func(ctx context.Context, api *gh.Client) (resp *gh.Response, err error) {
		if cur != nil {
			res, resp, err = api.Repositories.UpdateFile(ctx, owner, repo, w.Path, opts)
		} else {
			res, resp, err = api.Repositories.CreateFile(ctx, owner, repo, w.Path, opts)
		}
		return resp, err
	})
	if err != nil {
		return "", err
	}
	if res.Content != nil {
		return res.Content.GetHTMLURL(), nil
	}
	return res.Commit.GetHTMLURL(), nil
}
