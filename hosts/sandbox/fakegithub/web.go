package fakegithub

import (
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"
)

// The fake's web pages: the html_url links it hands out (a repository, a
// commit, a pull request, an issue, and anything else under a repository,
// such as a file or a release) open a small HTML page rather than the
// REST API's JSON 404, so that a link followed in a browser (the sandbox's
// console) leads somewhere. They show every seeded repository, as GitHub
// would to a signed-in member, and answer an HTML 404 for an unknown
// repository, commit, pull request or issue.

// webPage is what a page shows.
type webPage struct {
	Title   string
	Repo    string
	RepoURL string
	Kind    string
	Lines   []string
	Body    string
}

var webTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}} · fake GitHub</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem;color:#1f2328}
header{color:#59636e;font-size:.9rem}pre{white-space:pre-wrap;background:#f6f8fa;padding:.75rem;border-radius:6px}
a{color:#0969da}</style></head>
<body><header>devpilot sandbox · fake GitHub{{if .Repo}} · <a href="{{.RepoURL}}">{{.Repo}}</a>{{end}}</header>
<main><p class="kind">{{.Kind}}</p><h1>{{.Title}}</h1>
{{range .Lines}}<p>{{.}}</p>{{end}}{{if .Body}}<pre>{{.Body}}</pre>{{end}}
<p><small>This page is served by devpilot's fake GitHub: the sandbox has no real repositories.</small></p></main></body></html>
`))

// serveWeb answers a GET of a web page under a seeded repository and
// reports whether it did; the caller answers the JSON 404 otherwise.
func (s *Server) serveWeb(c *call) bool {
	if c.r.Method != http.MethodGet && c.r.Method != http.MethodHead || c.api != c.web {
		return false
	}
	parts := strings.Split(strings.Trim(c.route.URL.Path, "/"), "/")
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.lookupRepo(parts[0], parts[1])
	if r == nil {
		return false
	}
	repoURL := c.web + "/" + r.FullName()
	page := webPage{Repo: r.FullName(), RepoURL: repoURL}
	found := true
	rest := parts[2:]
	switch {
	case len(rest) == 0:
		page.Kind, page.Title = "Repository", r.FullName()
		page.Lines = []string{r.description, "Default branch: " + r.defaultBranch, fmt.Sprintf("%d commits, %d pull requests", len(r.commits), len(r.pulls))}
	case len(rest) == 2 && rest[0] == "commit":
		found = s.commitPage(r, rest[1], &page)
	case len(rest) == 2 && rest[0] == "pull":
		found = s.pullPage(r, rest[1], &page)
	case len(rest) == 2 && rest[0] == "issues":
		found = s.issuePage(r, rest[1], &page)
	default:
		page.Kind, page.Title = "Page of "+r.FullName(), strings.Join(rest, "/")
	}
	status := http.StatusOK
	if !found {
		status = http.StatusNotFound
		page.Kind, page.Title, page.Lines, page.Body = "Not found", "This is not the web page you are looking for", []string{strings.Join(rest, "/") + " is not in " + r.FullName() + "."}, ""
	}
	c.w.Header().Set("Content-Type", "text/html; charset=utf-8")
	c.w.WriteHeader(status)
	if c.r.Method == http.MethodGet {
		_ = webTemplate.Execute(c.w, page)
	}
	return true
}

// commitPage fills page with the commit sha of r (seeded or written
// through the contents API) and reports whether there is one.
func (s *Server) commitPage(r *Repo, sha string, page *webPage) bool {
	for _, cm := range r.commits {
		if strings.EqualFold(cm.SHA, sha) {
			title, body, _ := strings.Cut(cm.Message, "\n")
			page.Kind, page.Title, page.Body = "Commit "+cm.SHA[:min(7, len(cm.SHA))], title, strings.TrimSpace(body)
			page.Lines = []string{cm.AuthorName + " committed on " + cm.Date.UTC().Format("2 Jan 2006"), "Commit " + cm.SHA}
			return true
		}
	}
	for _, fc := range r.fileCommits {
		if strings.EqualFold(fc.SHA, sha) {
			page.Kind, page.Title = "Commit "+fc.SHA[:min(7, len(fc.SHA))], fc.Message
			page.Lines = []string{fc.Login + " changed " + fc.Path, "Commit " + fc.SHA}
			return true
		}
	}
	return false
}

// pullPage fills page with pull request number n of r.
func (s *Server) pullPage(r *Repo, n string, page *webPage) bool {
	num, err := strconv.Atoi(n)
	if err != nil {
		return false
	}
	for _, p := range r.pulls {
		if p.Number == num {
			state := p.State
			if p.Merged {
				state = "merged"
			}
			page.Kind, page.Title, page.Body = fmt.Sprintf("Pull request #%d · %s", p.Number, state), p.Title, p.Body
			page.Lines = []string{p.Author + " wants to merge " + p.Head + " into " + p.Base}
			return true
		}
	}
	return false
}

// issuePage fills page with issue number n of r.
func (s *Server) issuePage(r *Repo, n string, page *webPage) bool {
	num, err := strconv.Atoi(n)
	if err != nil {
		return false
	}
	for _, is := range r.issues {
		if is.Number == num {
			page.Kind, page.Title, page.Body = fmt.Sprintf("Issue #%d · %s", is.Number, is.State), is.Title, is.Body
			if len(is.Labels) > 0 {
				page.Lines = []string{"Labels: " + strings.Join(is.Labels, ", ")}
			}
			return true
		}
	}
	return false
}
