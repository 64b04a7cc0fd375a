package fakegithub

import (
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Rate limits the X-RateLimit-* headers report, per hour: for a token and
// for anonymous requests, for the core API and for search (per minute).
const (
	coreLimit       = 5000
	coreLimitAnon   = 60
	searchLimit     = 30
	searchLimitAnon = 10
)

// serveREST authenticates a REST call, applies rate limits and serves it
// with h. Callers must not hold s.mu.
func (s *Server) serveREST(c *call, resource string, h func(*call)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if auth := c.r.Header.Get("Authorization"); auth != "" {
		scheme, value, _ := strings.Cut(auth, " ")
		tok := s.tokens[strings.TrimSpace(value)]
		if tok == nil || tok.revoked || !(strings.EqualFold(scheme, "bearer") || strings.EqualFold(scheme, "token")) {
			c.errorf(http.StatusUnauthorized, docREST, "Bad credentials")
			return
		}
		c.tok = tok
		c.rec.Login = tok.user.login
		c.w.Header().Set("X-OAuth-Scopes", tok.scopes)
		c.w.Header().Set("X-Accepted-OAuth-Scopes", "repo")
	}
	if !s.rateHeaders(c, resource) {
		return
	}
	h(c)
}

// rateHeaders writes the X-RateLimit-* headers, or the rate-limit answer
// when a rate limit is in force, which it reports by returning false.
func (s *Server) rateHeaders(c *call, resource string) bool {
	now := time.Now()
	ip, _, err := net.SplitHostPort(c.r.RemoteAddr)
	if err != nil {
		ip = c.r.RemoteAddr
	}
	identity, limit := "ip:"+ip, coreLimitAnon
	if resource == "search" {
		limit = searchLimitAnon
	}
	if c.tok != nil {
		identity, limit = "user:"+c.tok.user.login, coreLimit
		if resource == "search" {
			limit = searchLimit
		}
	}
	window := time.Hour
	if resource == "search" {
		window = time.Minute
	}
	reset := now.Truncate(window).Add(window)
	key := identity + "|" + resource + "|" + strconv.FormatInt(reset.Unix(), 10)
	h := c.w.Header()
	h.Set("X-RateLimit-Limit", strconv.Itoa(limit))
	h.Set("X-RateLimit-Resource", resource)

	if now.Before(s.limited) {
		h.Set("X-RateLimit-Remaining", "0")
		h.Set("X-RateLimit-Used", strconv.Itoa(limit))
		h.Set("X-RateLimit-Reset", strconv.FormatInt(s.limited.Unix(), 10))
		who := "your IP address"
		if c.tok != nil {
			who = fmt.Sprintf("user ID %d", c.tok.user.id)
		}
		c.errorf(http.StatusForbidden, docPrimaryRate,
			"API rate limit exceeded for %s. If you reach out to GitHub Support for help, please include the request ID %s and timestamp %s.",
			who, h.Get("X-GitHub-Request-Id"), now.UTC().Format("2006-01-02 15:04:05 MST"))
		return false
	}
	if s.abuse != nil {
		h.Set("Retry-After", strconv.Itoa(int(s.abuse.Seconds())))
		h.Set("X-RateLimit-Remaining", strconv.Itoa(max(limit-s.used[key], 0)))
		h.Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
		c.errorf(http.StatusForbidden, docAbuseRate,
			"You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID %s.",
			h.Get("X-GitHub-Request-Id"))
		return false
	}
	s.used[key]++
	h.Set("X-RateLimit-Used", strconv.Itoa(s.used[key]))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(limit-s.used[key], 0)))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(reset.Unix(), 10))
	return true
}

// user answers 401 and returns nil when the call is not authenticated.
func (c *call) user(doc string) *User {
	if c.tok == nil {
		c.errorf(http.StatusUnauthorized, doc, "Requires authentication")
		return nil
	}
	return c.tok.user
}

// repo returns the repository of the call's path, answering 404 (as GitHub
// does for a private repository one cannot see) and returning nil when it
// is absent or hidden. Callers hold s.mu.
func (s *Server) repo(c *call, doc string) *Repo {
	r := s.lookupRepo(c.pathValue("owner"), c.pathValue("repo"))
	var u *User
	if c.tok != nil {
		u = c.tok.user
	}
	if r == nil || !r.visibleTo(u) {
		c.errorf(http.StatusNotFound, doc, "Not Found")
		return nil
	}
	return r
}

func (s *Server) handleUser(c *call) {
	u := c.user(docUser)
	if u == nil {
		return
	}
	owned, private := 0, 0
	for _, r := range s.repos {
		if r.owner == &u.account {
			owned++
			if r.private {
				private++
			}
		}
	}
	c.writeJSON(http.StatusOK, privateUserJSON{
		userJSON:          c.userJSON(&u.account),
		Name:              u.name,
		Email:             u.email,
		PublicRepos:       owned - private,
		TotalPrivateRepos: private,
		OwnedPrivateRepos: private,
		CreatedAt:         s.epoch.Add(-365 * 24 * time.Hour).Format(time.RFC3339),
		UpdatedAt:         s.epoch.Format(time.RFC3339),
	})
}

var repoSorts = map[string]bool{"created": true, "updated": true, "pushed": true, "full_name": true}

func (s *Server) handleUserRepos(c *call) {
	u := c.user(docUserRepos)
	if u == nil {
		return
	}
	q := c.r.URL.Query()
	if q.Get("type") != "" && (q.Get("affiliation") != "" || q.Get("visibility") != "") {
		c.validationFailed(docUserRepos, fieldError{Resource: "Repository", Field: "type", Code: "invalid",
			Message: "If you specify visibility or affiliation, you cannot specify type."})
		return
	}
	affiliation := map[string]bool{"owner": true, "collaborator": true, "organization_member": true}
	if a := q.Get("affiliation"); a != "" {
		affiliation = map[string]bool{}
		for _, v := range strings.Split(a, ",") {
			affiliation[strings.TrimSpace(v)] = true
		}
	}
	visibility := q.Get("visibility")
	switch q.Get("type") {
	case "owner":
		affiliation = map[string]bool{"owner": true}
	case "public", "private":
		visibility = q.Get("type")
	case "member":
		affiliation = map[string]bool{"collaborator": true, "organization_member": true}
	}
	sortBy := q.Get("sort")
	if sortBy == "" {
		sortBy = "full_name"
	}
	if !repoSorts[sortBy] {
		c.validationFailed(docUserRepos, fieldError{Resource: "Repository", Field: "sort", Code: "invalid"})
		return
	}
	var repos []*Repo
	for _, r := range s.repos {
		var rel string
		switch {
		case r.owner == &u.account:
			rel = "owner"
		case !r.affiliated(u):
			continue
		case r.owner.org:
			rel = "organization_member"
		default:
			rel = "collaborator"
		}
		if !affiliation[rel] || visibility == "public" && r.private || visibility == "private" && !r.private {
			continue
		}
		repos = append(repos, r)
	}
	desc := q.Get("direction") == "desc" || q.Get("direction") == "" && sortBy != "full_name"
	key := func(r *Repo) time.Time {
		switch sortBy {
		case "created":
			return r.createdAt
		case "pushed":
			return r.pushedAt
		default:
			return r.updatedAt
		}
	}
	sort.SliceStable(repos, func(i, j int) bool {
		a, b := repos[i], repos[j]
		if desc {
			a, b = b, a
		}
		if sortBy == "full_name" {
			return strings.ToLower(a.FullName()) < strings.ToLower(b.FullName())
		}
		return key(a).Before(key(b))
	})
	page := paginate(c, repos)
	out := make([]repoJSON, len(page))
	for i, r := range page {
		out[i] = c.repoJSON(r, u)
	}
	c.writeJSON(http.StatusOK, out)
}

func (s *Server) handleCommits(c *call) {
	r := s.repo(c, docCommits)
	if r == nil {
		return
	}
	if len(r.commits) == 0 {
		c.errorf(http.StatusConflict, docCommits, "Git Repository is empty.")
		return
	}
	q := c.r.URL.Query()
	since, _ := time.Parse(time.RFC3339, q.Get("since"))
	until, _ := time.Parse(time.RFC3339, q.Get("until"))
	author := q.Get("author")
	var commits []Commit
	for i := len(r.commits) - 1; i >= 0; i-- {
		cm := r.commits[i]
		if author != "" && !strings.EqualFold(author, cm.Author) && !strings.EqualFold(author, cm.AuthorEmail) ||
			!since.IsZero() && cm.Date.Before(since) || !until.IsZero() && cm.Date.After(until) {
			continue
		}
		commits = append(commits, cm)
	}
	sort.SliceStable(commits, func(i, j int) bool { return commits[i].Date.After(commits[j].Date) })
	page := paginate(c, commits)
	out := make([]commitJSON, len(page))
	for i, cm := range page {
		out[i] = s.commitJSON(c, r, cm)
	}
	c.writeJSON(http.StatusOK, out)
}

// stateParam reads a list's ?state= (open by default, closed or all), or
// answers 422 for resource as GitHub does and reports false.
func (c *call) stateParam(doc, resource string) (string, bool) {
	state := c.r.URL.Query().Get("state")
	if state == "" {
		state = "open"
	}
	if state != "open" && state != "closed" && state != "all" {
		c.validationFailed(doc, fieldError{Resource: resource, Field: "state", Code: "invalid"})
		return "", false
	}
	return state, true
}

func (s *Server) handlePulls(c *call) {
	r := s.repo(c, docPulls)
	if r == nil {
		return
	}
	q := c.r.URL.Query()
	state, ok := c.stateParam(docPulls, "PullRequest")
	if !ok {
		return
	}
	sortBy := q.Get("sort")
	if sortBy == "" {
		sortBy = "created"
	}
	if sortBy != "created" && sortBy != "updated" && sortBy != "popularity" && sortBy != "long-running" {
		c.validationFailed(docPulls, fieldError{Resource: "PullRequest", Field: "sort", Code: "invalid"})
		return
	}
	desc := q.Get("direction") == "desc" || q.Get("direction") == "" && sortBy == "created"
	base := q.Get("base")
	head := q.Get("head")
	if _, ref, ok := strings.Cut(head, ":"); ok {
		head = ref
	}
	var pulls []Pull
	for _, p := range r.pulls {
		if state != "all" && p.State != state || base != "" && p.Base != base || head != "" && p.Head != head {
			continue
		}
		pulls = append(pulls, p)
	}
	key := func(p Pull) time.Time {
		if sortBy == "updated" {
			return p.UpdatedAt
		}
		return p.CreatedAt
	}
	sort.SliceStable(pulls, func(i, j int) bool {
		a, b := pulls[i], pulls[j]
		if desc {
			a, b = b, a
		}
		if ka, kb := key(a), key(b); !ka.Equal(kb) {
			return ka.Before(kb)
		}
		return a.Number < b.Number
	})
	page := paginate(c, pulls)
	out := make([]pullJSON, len(page))
	for i, p := range page {
		out[i] = s.pullJSON(c, r, p)
	}
	c.writeJSON(http.StatusOK, out)
}

// activityCursor is the opaque cursor of an activity: like GitHub's, it is
// base64 of "v1:" and a position ("djE6..."), here the activity's id.
func activityCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("v1:" + strconv.FormatInt(id, 10)))
}

func parseActivityCursor(s string) (int64, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return 0, false
	}
	rest, ok := strings.CutPrefix(string(b), "v1:")
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(rest, 10, 64)
	return id, err == nil
}

func (s *Server) handleActivity(c *call) {
	r := s.repo(c, docActivity)
	if r == nil {
		return
	}
	q := c.r.URL.Query()
	asc := q.Get("direction") == "asc"
	ref, actor, typ := q.Get("ref"), q.Get("actor"), q.Get("activity_type")
	var acts []Activity
	for _, a := range r.activity {
		if ref != "" && a.Ref != ref && a.Ref != "refs/heads/"+ref || actor != "" && !strings.EqualFold(actor, a.Actor) ||
			typ != "" && a.Type != typ {
			continue
		}
		acts = append(acts, a)
	}
	sort.SliceStable(acts, func(i, j int) bool {
		a, b := acts[i], acts[j]
		if !asc {
			a, b = b, a
		}
		if !a.At.Equal(b.At) {
			return a.At.Before(b.At)
		}
		return a.ID < b.ID
	})
	perPage := perPage(q)
	var start, end int
	position := func(cursor string) (int, bool) {
		id, ok := parseActivityCursor(cursor)
		if !ok {
			return 0, false
		}
		for i, a := range acts {
			if a.ID == id {
				return i, true
			}
		}
		return 0, false
	}
	switch {
	case q.Get("after") != "":
		i, ok := position(q.Get("after"))
		if !ok {
			c.validationFailed(docActivity, fieldError{Resource: "Activity", Field: "after", Code: "invalid", Message: "Invalid cursor"})
			return
		}
		start = i + 1
		end = min(start+perPage, len(acts))
	case q.Get("before") != "":
		i, ok := position(q.Get("before"))
		if !ok {
			c.validationFailed(docActivity, fieldError{Resource: "Activity", Field: "before", Code: "invalid", Message: "Invalid cursor"})
			return
		}
		end = i
		start = max(end-perPage, 0)
	default:
		end = min(perPage, len(acts))
	}
	page := acts[start:end]
	var links []string
	if start > 0 && len(page) > 0 {
		links = append(links, link(c, map[string]string{"before": activityCursor(page[0].ID), "after": ""}, "prev"))
	}
	if end < len(acts) && len(page) > 0 {
		links = append(links, link(c, map[string]string{"after": activityCursor(page[len(page)-1].ID), "before": ""}, "next"))
	}
	if len(links) > 0 {
		c.w.Header().Set("Link", strings.Join(links, ", "))
	}
	out := make([]activityJSON, len(page))
	for i, a := range page {
		out[i] = s.activityJSON(c, a)
	}
	c.writeJSON(http.StatusOK, out)
}

// maxSearchResults is how far GitHub lets a search page.
const maxSearchResults = 1000

func (s *Server) handleSearchCommits(c *call) {
	q := c.r.URL.Query()
	query := strings.TrimSpace(q.Get("q"))
	if query == "" {
		c.validationFailed(docSearch, fieldError{Resource: "Search", Field: "q", Code: "missing"})
		return
	}
	if len(query) > 256 {
		c.validationFailed(docSearch, fieldError{Resource: "Search", Field: "q", Code: "invalid",
			Message: "The search is longer than 256 characters."})
		return
	}
	var u *User
	if c.tok != nil {
		u = c.tok.user
	}
	sq := parseSearch(query)
	var hits []searchHit
	for _, name := range sq.repos {
		owner, repo, _ := strings.Cut(name, "/")
		if r := s.lookupRepo(owner, repo); r == nil || !r.visibleTo(u) {
			c.validationFailed(docSearch, fieldError{Resource: "Search", Field: "q", Code: "invalid",
				Message: "The listed users and repositories cannot be searched either because the resources do not exist or you do not have permission to view them."})
			return
		}
	}
	for _, r := range s.repos {
		if !r.visibleTo(u) || !sq.matchRepo(r) {
			continue
		}
		for _, cm := range r.commits {
			if sq.matchCommit(cm) {
				hits = append(hits, searchHit{repo: r, commit: cm})
			}
		}
	}
	desc := q.Get("order") != "asc"
	sort.SliceStable(hits, func(i, j int) bool {
		a, b := hits[i], hits[j]
		if desc {
			a, b = b, a
		}
		return a.commit.Date.Before(b.commit.Date)
	})
	if p, pp := pageNumber(q), perPage(q); (p-1)*pp >= maxSearchResults {
		c.validationFailed(docSearch, fieldError{Resource: "Search", Field: "q", Code: "invalid",
			Message: "Only the first 1000 search results are available"})
		return
	}
	page := paginate(c, hits)
	out := searchJSON{TotalCount: len(hits), Items: make([]searchItemJSON, len(page))}
	for i, h := range page {
		out.Items[i] = searchItemJSON{commitJSON: s.commitJSON(c, h.repo, h.commit), Repository: c.repoJSON(h.repo, nil), Score: 1}
	}
	c.writeJSON(http.StatusOK, out)
}

type searchHit struct {
	repo   *Repo
	commit Commit
}

// perPage is the per_page parameter as GitHub reads it: 30 by default, at
// most 100.
func perPage(q url.Values) int {
	n, err := strconv.Atoi(q.Get("per_page"))
	if err != nil || n <= 0 {
		return 30
	}
	return min(n, 100)
}

// pageNumber is the page parameter as GitHub reads it: 1 when absent or not
// a positive number.
func pageNumber(q url.Values) int {
	n, err := strconv.Atoi(q.Get("page"))
	if err != nil || n <= 0 {
		return 1
	}
	return n
}

// paginate returns the page of items the call asks for and sets the Link
// header GitHub would send with it.
func paginate[T any](c *call, items []T) []T {
	q := c.r.URL.Query()
	page, size := pageNumber(q), perPage(q)
	last := max((len(items)+size-1)/size, 1)
	var links []string
	at := func(p int, rel string) string { return link(c, map[string]string{"page": strconv.Itoa(p)}, rel) }
	if page > 1 {
		links = append(links, at(min(page-1, last), "prev"))
	}
	if page < last {
		links = append(links, at(page+1, "next"), at(last, "last"))
	}
	if page > 1 {
		links = append(links, at(1, "first"))
	}
	if len(links) > 0 {
		c.w.Header().Set("Link", strings.Join(links, ", "))
	}
	start := (page - 1) * size
	if start >= len(items) {
		return nil
	}
	return items[start:min(start+size, len(items))]
}

// link is one entry of a Link header: the call's URL with params changed
// ("" removes one).
func link(c *call, params map[string]string, rel string) string {
	q := c.r.URL.Query()
	for k, v := range params {
		if v == "" {
			q.Del(k)
		} else {
			q.Set(k, v)
		}
	}
	return fmt.Sprintf("<%s%s?%s>; rel=%q", c.web, c.r.URL.Path, q.Encode(), rel)
}
