package github

import (
	"context"
	"path"
	"strings"
	"unicode/utf8"

	gh "github.com/google/go-github/v84/github"

	"github.com/devpilot/devpilot/ports"
)

// ReadTree returns the files (blobs) of the repository at ref, the default
// branch (HEAD) when ref is "", with GitHub's recursive tree listing; it
// reports whether GitHub cut the listing short (GitHub caps one listing at
// 100,000 entries or 7 MB). Errors: not_found for an unknown repository or
// ref, and an empty repository has no files.
func (c *Client) ReadTree(ctx context.Context, token, owner, repo, ref string) ([]ports.SCMTreeEntry, bool, error) {
	if err := checkRepo(owner, repo); err != nil {
		return nil, false, err
	}
	if ref == "" {
		ref = "HEAD"
	}
	if err := checkRef(ref); err != nil {
		return nil, false, err
	}
	var tree *gh.Tree
	resp, err := c.call(ctx, opReadTree, token, "GitHub repository "+owner+"/"+repo+" at "+ref, func(ctx context.Context, api *gh.Client) (resp *gh.Response, err error) {
		tree, resp, err = api.Git.GetTree(ctx, owner, repo, ref, true)
		return resp, err
	})
	if err != nil {
		if emptyRepository(resp) {
			return []ports.SCMTreeEntry{}, false, nil
		}
		return nil, false, err
	}
	out := make([]ports.SCMTreeEntry, 0, len(tree.Entries))
	for _, e := range tree.Entries {
		if e.GetType() != "blob" || e.GetPath() == "" {
			continue
		}
		out = append(out, ports.SCMTreeEntry{Path: e.GetPath(), Size: int64(e.GetSize())})
	}
	return out, tree.GetTruncated(), nil
}

// ReadFile returns the file at filePath and ref (the default branch when
// "") through the contents API, its content cut to maxBytes (at a rune
// boundary). GitHub serves files up to 1 MB this way; a larger one comes back
// empty and Truncated. Errors: not_found when there is no such file; invalid
// (field path) for a path that is not a clean relative path, or names a
// directory.
func (c *Client) ReadFile(ctx context.Context, token, owner, repo, ref, filePath string, maxBytes int) (ports.SCMFile, error) {
	if err := checkRepo(owner, repo); err != nil {
		return ports.SCMFile{}, err
	}
	if err := checkPath(filePath); err != nil {
		return ports.SCMFile{}, err
	}
	if ref != "" {
		if err := checkRef(ref); err != nil {
			return ports.SCMFile{}, err
		}
	}
	var file *gh.RepositoryContent
	var dir []*gh.RepositoryContent
	_, err := c.call(ctx, opReadFile, token, "file "+filePath+" of GitHub repository "+owner+"/"+repo, func(ctx context.Context, api *gh.Client) (resp *gh.Response, err error) {
		file, dir, resp, err = api.Repositories.GetContents(ctx, owner, repo, filePath, &gh.RepositoryContentGetOptions{Ref: ref})
		return resp, err
	})
	if err != nil {
		return ports.SCMFile{}, err
	}
	if file == nil || dir != nil || file.GetType() != "file" {
		return ports.SCMFile{}, ports.Invalid("not a file: "+filePath, ports.FieldError{Field: "path", Reason: "not a file"})
	}
	out := ports.SCMFile{Path: filePath, Size: int64(file.GetSize())}
	if file.GetEncoding() == "none" {
		out.Truncated = out.Size > 0
		return out, nil
	}
	content, err := file.GetContent()
	if err != nil {
		return ports.SCMFile{}, &ports.Error{Kind: ports.KindUpstream, Message: msgMalformed, Err: err}
	}
	if maxBytes > 0 && len(content) > maxBytes {
		cut := maxBytes
		for cut > 0 && !utf8.RuneStart(content[cut]) {
			cut--
		}
		content, out.Truncated = content[:cut], true
	}
	out.Content = content
	return out, nil
}

// checkPath accepts a clean, relative, slash-separated path.
func checkPath(p string) error {
	if p == "" || len(p) > 4096 || strings.HasPrefix(p, "/") || path.Clean(p) != p || p == "." ||
		strings.HasPrefix(p, "../") || p == ".." || strings.Contains(p, "/../") || strings.ContainsAny(p, "\x00\\?#") {
		return ports.Invalid("not a file path: "+p, ports.FieldError{Field: "path", Reason: "invalid"})
	}
	return nil
}

// checkRef accepts the names git allows for branches, tags and commits,
// loosely: no spaces, controls, "..", or the characters git forbids.
func checkRef(ref string) error {
	if ref == "" || len(ref) > 255 || strings.Contains(ref, "..") || strings.ContainsAny(ref, " ~^:?*[\\#%\x00\x7f") ||
		strings.HasPrefix(ref, "/") || strings.HasSuffix(ref, "/") {
		return ports.Invalid("not a git ref: "+ref, ports.FieldError{Field: "ref", Reason: "invalid"})
	}
	return nil
}
