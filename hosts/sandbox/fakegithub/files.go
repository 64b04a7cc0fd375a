package fakegithub

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"path"
	"sort"
	"strconv"
	"strings"
)

// maxContentsSize is the largest file the contents API serves with its
// content; a larger one comes back with encoding "none" and no content.
const maxContentsSize = 1 << 20

// Files seeds files on the repository's default branch, by slash-separated
// path from the root, replacing any with the same path. The git trees and
// contents endpoints serve them.
func (r *Repo) Files(files map[string]string) *Repo {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	if r.files == nil {
		r.files = map[string]string{}
	}
	for p, content := range files {
		r.files[strings.Trim(p, "/")] = content
	}
	return r
}

type treeEntryJSON struct {
	Path string `json:"path"`
	Mode string `json:"mode"`
	Type string `json:"type"`
	SHA  string `json:"sha"`
	Size *int   `json:"size,omitempty"`
	URL  string `json:"url"`
}

type treeJSON struct {
	SHA       string          `json:"sha"`
	URL       string          `json:"url"`
	Tree      []treeEntryJSON `json:"tree"`
	Truncated bool            `json:"truncated"`
}

// treeSHA is the fake's id of the default branch's root tree.
func (r *Repo) treeSHA() string { return fakeSHA(r.FullName(), "tree") }

// knownRef reports whether ref names the repository's default branch: HEAD,
// its name, its root tree or its newest commit. Callers hold s.mu.
func (r *Repo) knownRef(ref string) bool {
	if ref == "" || ref == "HEAD" || ref == r.defaultBranch || ref == "refs/heads/"+r.defaultBranch || ref == r.treeSHA() {
		return true
	}
	return len(r.commits) > 0 && ref == r.commits[len(r.commits)-1].SHA
}

// handleTree serves GET /repos/{owner}/{repo}/git/trees/{sha}[?recursive=1]
// for the default branch: the top level, or with recursive every directory
// and file.
func (s *Server) handleTree(c *call) {
	r := s.repo(c, docTrees)
	if r == nil {
		return
	}
	if len(r.files) == 0 && len(r.commits) == 0 {
		c.errorf(http.StatusConflict, docTrees, "Git Repository is empty.")
		return
	}
	if !r.knownRef(c.pathValue("sha")) {
		c.errorf(http.StatusNotFound, docTrees, "Not Found")
		return
	}
	recursive := c.r.URL.Query().Get("recursive") != ""
	base := c.api + "/repos/" + r.FullName() + "/git"
	dirs := map[string]bool{}
	var entries []treeEntryJSON
	for p, content := range r.files {
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
		if !recursive && strings.Contains(p, "/") {
			continue
		}
		size, sha := len(content), fakeSHA(r.FullName(), "blob", p, content)
		entries = append(entries, treeEntryJSON{Path: p, Mode: "100644", Type: "blob", SHA: sha, Size: &size, URL: base + "/blobs/" + sha})
	}
	for d := range dirs {
		if !recursive && strings.Contains(d, "/") {
			continue
		}
		sha := fakeSHA(r.FullName(), "tree", d)
		entries = append(entries, treeEntryJSON{Path: d, Mode: "040000", Type: "tree", SHA: sha, URL: base + "/trees/" + sha})
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Path < entries[j].Path })
	if entries == nil {
		entries = []treeEntryJSON{}
	}
	c.writeJSON(http.StatusOK, treeJSON{SHA: r.treeSHA(), URL: base + "/trees/" + r.treeSHA(), Tree: entries})
}

type contentJSON struct {
	Type        string  `json:"type"`
	Encoding    string  `json:"encoding,omitempty"`
	Size        int     `json:"size"`
	Name        string  `json:"name"`
	Path        string  `json:"path"`
	Content     *string `json:"content,omitempty"`
	SHA         string  `json:"sha"`
	URL         string  `json:"url"`
	HTMLURL     string  `json:"html_url"`
	DownloadURL *string `json:"download_url"`
}

// handleContents serves GET /repos/{owner}/{repo}/contents/{path}[?ref=]: a
// file as base64 in lines of 60 characters (encoding "none" above 1 MB), a
// directory as the list of its entries.
func (s *Server) handleContents(c *call) {
	r := s.repo(c, docContents)
	if r == nil {
		return
	}
	if ref := c.r.URL.Query().Get("ref"); ref != "" && !r.knownRef(ref) {
		c.errorf(http.StatusNotFound, docContents, "No commit found for the ref %s", ref)
		return
	}
	p := strings.Trim(c.pathValue("path"), "/")
	if content, ok := r.files[p]; ok {
		c.writeJSON(http.StatusOK, r.fileJSON(c, p, content, true))
		return
	}
	var list []contentJSON
	seen := map[string]bool{}
	for fp, content := range r.files {
		rest, ok := strings.CutPrefix(fp, p+"/")
		if p == "" {
			rest, ok = fp, true
		}
		if !ok {
			continue
		}
		if dir, _, nested := strings.Cut(rest, "/"); nested {
			dp := strings.TrimPrefix(p+"/"+dir, "/")
			if !seen[dp] {
				seen[dp] = true
				list = append(list, contentJSON{Type: "dir", Name: dir, Path: dp, SHA: fakeSHA(r.FullName(), "tree", dp),
					URL: c.api + "/repos/" + r.FullName() + "/contents/" + dp, HTMLURL: c.web + "/" + r.FullName() + "/tree/" + r.defaultBranch + "/" + dp})
			}
			continue
		}
		list = append(list, r.fileJSON(c, fp, content, false))
	}
	if list == nil {
		c.errorf(http.StatusNotFound, docContents, "Not Found")
		return
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Path < list[j].Path })
	c.writeJSON(http.StatusOK, list)
}

// fileJSON describes a file, with its content when withContent.
func (r *Repo) fileJSON(c *call, p, content string, withContent bool) contentJSON {
	download := c.web + "/raw/" + r.FullName() + "/" + r.defaultBranch + "/" + p
	out := contentJSON{Type: "file", Size: len(content), Name: path.Base(p), Path: p,
		SHA: fakeSHA(r.FullName(), "blob", p, content), URL: c.api + "/repos/" + r.FullName() + "/contents/" + p,
		HTMLURL: c.web + "/" + r.FullName() + "/blob/" + r.defaultBranch + "/" + p, DownloadURL: &download}
	if !withContent {
		return out
	}
	if len(content) > maxContentsSize {
		empty := ""
		out.Encoding, out.Content = "none", &empty
		return out
	}
	enc := base64.StdEncoding.EncodeToString([]byte(content))
	var b strings.Builder
	for len(enc) > 60 {
		b.WriteString(enc[:60] + "\n")
		enc = enc[60:]
	}
	b.WriteString(enc + "\n")
	wrapped := b.String()
	out.Encoding, out.Content = "base64", &wrapped
	return out
}

// FileCommit is a commit made through the contents API (PUT
// /repos/{owner}/{repo}/contents/{path}).
type FileCommit struct {
	SHA     string
	Path    string
	Message string
	Content string
	Login   string // who made it
}

// File returns a file of the default branch and whether it exists.
func (r *Repo) File(p string) (string, bool) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	content, ok := r.files[strings.Trim(p, "/")]
	return content, ok
}

// FileCommits returns the commits made through the contents API, oldest
// first.
func (r *Repo) FileCommits() []FileCommit {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	return append([]FileCommit(nil), r.fileCommits...)
}

type putContentsRequest struct {
	Message *string `json:"message"`
	Content *string `json:"content"`
	SHA     string  `json:"sha"`
	Branch  string  `json:"branch"`
}

type fileCommitJSON struct {
	SHA     string `json:"sha"`
	HTMLURL string `json:"html_url"`
	Message string `json:"message"`
}

// handlePutContents serves PUT /repos/{owner}/{repo}/contents/{path} as
// GitHub does: the file is created (201) or replaced (200, when "sha" names
// its current blob) on the default branch in one commit; an existing file
// without "sha" is 422, a stale "sha" 409; a token that cannot push is 404
// (a repository it cannot see) or 403.
func (s *Server) handlePutContents(c *call) {
	r := s.repo(c, docPutContents)
	if r == nil {
		return
	}
	if c.tok == nil || !r.affiliated(c.tok.user) {
		c.errorf(http.StatusForbidden, docPutContents, "Resource not accessible by integration")
		return
	}
	var req putContentsRequest
	if err := json.NewDecoder(io.LimitReader(c.r.Body, 50<<20)).Decode(&req); err != nil {
		c.errorf(http.StatusBadRequest, docPutContents, "Problems parsing JSON")
		return
	}
	if req.Message == nil || req.Content == nil {
		c.errorf(http.StatusUnprocessableEntity, docPutContents, "Invalid request.\n\n\"message\" and \"content\" are required.")
		return
	}
	if req.Branch != "" && !r.knownRef(req.Branch) {
		c.errorf(http.StatusNotFound, docPutContents, "Branch %s not found", req.Branch)
		return
	}
	raw, err := base64.StdEncoding.DecodeString(*req.Content)
	if err != nil {
		c.errorf(http.StatusUnprocessableEntity, docPutContents, "content is not valid Base64")
		return
	}
	p := strings.Trim(c.pathValue("path"), "/")
	old, exists := r.files[p]
	status := http.StatusCreated
	if exists {
		cur := fakeSHA(r.FullName(), "blob", p, old)
		switch {
		case req.SHA == "":
			c.errorf(http.StatusUnprocessableEntity, docPutContents, "Invalid request.\n\n\"sha\" wasn't supplied.")
			return
		case req.SHA != cur:
			c.errorf(http.StatusConflict, docPutContents, "%s does not match %s", p, req.SHA)
			return
		}
		status = http.StatusOK
	}
	if r.files == nil {
		r.files = map[string]string{}
	}
	r.files[p] = string(raw)
	commit := FileCommit{SHA: fakeSHA(r.FullName(), "commit", p, string(raw), strconv.Itoa(len(r.fileCommits))), Path: p,
		Message: *req.Message, Content: string(raw), Login: c.tok.user.login}
	r.fileCommits = append(r.fileCommits, commit)
	c.writeJSON(status, map[string]any{
		"content": r.fileJSON(c, p, string(raw), false),
		"commit":  fileCommitJSON{SHA: commit.SHA, HTMLURL: c.web + "/" + r.FullName() + "/commit/" + commit.SHA, Message: commit.Message},
	})
}
