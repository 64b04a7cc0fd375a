package fakegithub

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Documentation URLs of the issue and label endpoints.
const (
	docIssues       = "https://docs.github.com/rest/issues/issues"
	docCreateIssue  = "https://docs.github.com/rest/issues/issues#create-an-issue"
	docUpdateIssue  = "https://docs.github.com/rest/issues/issues#update-an-issue"
	docLabels       = "https://docs.github.com/rest/issues/labels"
	docCreateLabel  = "https://docs.github.com/rest/issues/labels#create-a-label"
	maxIssueTitle   = 256
	maxIssueBody    = 65536
	defaultLabelHex = "ededed"
)

// Issue is an issue of a seeded repository, as the fake holds it.
type Issue struct {
	Number    int
	ID        int64
	Title     string
	Body      string
	State     string
	Labels    []string
	Author    string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Label is a repository's issue label.
type Label struct {
	ID          int64
	Name        string
	Color       string
	Description string
}

// Issues returns the repository's issues, by number.
func (r *Repo) Issues() []Issue {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	out := make([]Issue, len(r.issues))
	for i, is := range r.issues {
		out[i] = *is
		out[i].Labels = slices.Clone(is.Labels)
	}
	return out
}

// Labels returns the repository's labels, in the order they were created.
func (r *Repo) Labels() []Label {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	return slices.Clone(r.labels)
}

// nextNumber is the number of the repository's next issue: issues and pull
// requests share one sequence. Callers hold s.mu.
func (r *Repo) nextNumber() int {
	n := 1
	for _, p := range r.pulls {
		n = max(n, p.Number+1)
	}
	for _, is := range r.issues {
		n = max(n, is.Number+1)
	}
	return n
}

// label returns the repository's label named name (case-insensitively),
// creating it when create is set. Callers hold s.mu.
func (r *Repo) label(name string, create bool) *Label {
	for i := range r.labels {
		if strings.EqualFold(r.labels[i].Name, name) {
			return &r.labels[i]
		}
	}
	if !create {
		return nil
	}
	r.labels = append(r.labels, Label{ID: r.s.newID(), Name: name, Color: defaultLabelHex})
	return &r.labels[len(r.labels)-1]
}

type labelJSON struct {
	ID          int64   `json:"id"`
	NodeID      string  `json:"node_id"`
	URL         string  `json:"url"`
	Name        string  `json:"name"`
	Color       string  `json:"color"`
	Default     bool    `json:"default"`
	Description *string `json:"description"`
}

func (c *call) labelJSON(r *Repo, l Label) labelJSON {
	out := labelJSON{ID: l.ID, NodeID: nodeID("Label", l.ID), URL: c.api + "/repos/" + r.FullName() + "/labels/" + pathEscape(l.Name),
		Name: l.Name, Color: l.Color}
	if l.Description != "" {
		out.Description = optional(l.Description)
	}
	return out
}

func pathEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "%", "%25"), " ", "%20")
}

type issueJSON struct {
	URL               string      `json:"url"`
	RepositoryURL     string      `json:"repository_url"`
	LabelsURL         string      `json:"labels_url"`
	CommentsURL       string      `json:"comments_url"`
	EventsURL         string      `json:"events_url"`
	HTMLURL           string      `json:"html_url"`
	ID                int64       `json:"id"`
	NodeID            string      `json:"node_id"`
	Number            int         `json:"number"`
	Title             string      `json:"title"`
	User              *userJSON   `json:"user"`
	Labels            []labelJSON `json:"labels"`
	State             string      `json:"state"`
	Locked            bool        `json:"locked"`
	Assignee          *userJSON   `json:"assignee"`
	Assignees         []userJSON  `json:"assignees"`
	Milestone         any         `json:"milestone"`
	Comments          int         `json:"comments"`
	CreatedAt         string      `json:"created_at"`
	UpdatedAt         string      `json:"updated_at"`
	ClosedAt          *string     `json:"closed_at"`
	AuthorAssociation string      `json:"author_association"`
	ActiveLockReason  *string     `json:"active_lock_reason"`
	Body              *string     `json:"body"`
	StateReason       *string     `json:"state_reason"`
}

// issueJSON describes an issue of r. Callers hold s.mu.
func (s *Server) issueJSON(c *call, r *Repo, is *Issue) issueJSON {
	api := c.api + "/repos/" + r.FullName() + "/issues/" + strconv.Itoa(is.Number)
	out := issueJSON{
		URL:               api,
		RepositoryURL:     c.api + "/repos/" + r.FullName(),
		LabelsURL:         api + "/labels{/name}",
		CommentsURL:       api + "/comments",
		EventsURL:         api + "/events",
		HTMLURL:           c.web + "/" + r.FullName() + "/issues/" + strconv.Itoa(is.Number),
		ID:                is.ID,
		NodeID:            "I_" + nodeID("Issue", is.ID),
		Number:            is.Number,
		Title:             is.Title,
		Labels:            []labelJSON{},
		State:             is.State,
		Assignees:         []userJSON{},
		CreatedAt:         stamp(is.CreatedAt),
		UpdatedAt:         stamp(is.UpdatedAt),
		AuthorAssociation: "OWNER",
	}
	if is.Body != "" {
		out.Body = optional(is.Body)
	}
	for _, name := range is.Labels {
		if l := r.label(name, false); l != nil {
			out.Labels = append(out.Labels, c.labelJSON(r, *l))
		}
	}
	if u := s.lookupUser(is.Author); u != nil {
		j := c.userJSON(&u.account)
		out.User = &j
	}
	if is.State == "closed" {
		out.ClosedAt = optional(stamp(is.UpdatedAt))
	}
	return out
}

// writer returns the repository of a write call, answering as GitHub does
// and returning nil when the call is anonymous (401) or the repository is
// absent or hidden (404). Callers hold s.mu.
func (s *Server) writer(c *call, doc string) *Repo {
	if c.user(doc) == nil {
		return nil
	}
	return s.repo(c, doc)
}

// issueBody is the body of a create or update; nil fields are absent.
type issueBody struct {
	Title  *string   `json:"title"`
	Body   *string   `json:"body"`
	State  *string   `json:"state"`
	Labels *[]string `json:"labels"`
}

// readJSON decodes the call's body into v, answering 400 "Problems parsing
// JSON" and returning false when it is not JSON.
func (c *call) readJSON(doc string, v any) bool {
	body, err := io.ReadAll(io.LimitReader(c.r.Body, 1<<20))
	if err != nil || json.Unmarshal(body, v) != nil {
		c.errorf(http.StatusBadRequest, doc, "Problems parsing JSON")
		return false
	}
	return true
}

// checkIssue answers 422 and returns false when a title or body is not one
// GitHub would take.
func (c *call) checkIssue(doc string, b issueBody, create bool) bool {
	if create && (b.Title == nil || strings.TrimSpace(*b.Title) == "") {
		c.validationFailed(doc, fieldError{Resource: "Issue", Field: "title", Code: "missing_field"})
		return false
	}
	if b.Title != nil && len([]rune(*b.Title)) > maxIssueTitle {
		c.validationFailed(doc, fieldError{Resource: "Issue", Field: "title", Code: "custom", Message: "title is too long (maximum is 256 characters)"})
		return false
	}
	if b.Body != nil && len([]rune(*b.Body)) > maxIssueBody {
		c.validationFailed(doc, fieldError{Resource: "Issue", Field: "body", Code: "custom", Message: "body is too long (maximum is 65536 characters)"})
		return false
	}
	if b.State != nil && *b.State != "open" && *b.State != "closed" {
		c.validationFailed(doc, fieldError{Resource: "Issue", Field: "state", Code: "invalid"})
		return false
	}
	return true
}

func (s *Server) handleCreateIssue(c *call) {
	r := s.writer(c, docCreateIssue)
	if r == nil {
		return
	}
	var b issueBody
	if !c.readJSON(docCreateIssue, &b) || !c.checkIssue(docCreateIssue, b, true) {
		return
	}
	now := time.Now().UTC().Truncate(time.Second)
	is := &Issue{Number: r.nextNumber(), ID: s.newID(), Title: *b.Title, State: "open", Author: c.tok.user.login, CreatedAt: now, UpdatedAt: now}
	if b.Body != nil {
		is.Body = *b.Body
	}
	if b.Labels != nil {
		is.Labels = r.issueLabels(*b.Labels)
	}
	r.issues = append(r.issues, is)
	c.w.Header().Set("Location", c.api+"/repos/"+r.FullName()+"/issues/"+strconv.Itoa(is.Number))
	c.writeJSON(http.StatusCreated, s.issueJSON(c, r, is))
}

// issueLabels resolves the names of an issue's labels, creating those the
// repository lacks (as GitHub does for a writer), each once.
func (r *Repo) issueLabels(names []string) []string {
	var out []string
	for _, n := range names {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		l := r.label(n, true)
		if !slices.Contains(out, l.Name) {
			out = append(out, l.Name)
		}
	}
	return out
}

// issue returns the issue of the call's path, answering 404 and returning
// nil when there is none. Callers hold s.mu.
func (s *Server) issue(c *call, r *Repo, doc string) *Issue {
	n, err := strconv.Atoi(c.pathValue("number"))
	if err == nil {
		for _, is := range r.issues {
			if is.Number == n {
				return is
			}
		}
	}
	c.errorf(http.StatusNotFound, doc, "Not Found")
	return nil
}

func (s *Server) handleGetIssue(c *call) {
	r := s.repo(c, docIssues)
	if r == nil {
		return
	}
	if is := s.issue(c, r, docIssues); is != nil {
		c.writeJSON(http.StatusOK, s.issueJSON(c, r, is))
	}
}

func (s *Server) handleUpdateIssue(c *call) {
	r := s.writer(c, docUpdateIssue)
	if r == nil {
		return
	}
	is := s.issue(c, r, docUpdateIssue)
	if is == nil {
		return
	}
	var b issueBody
	if !c.readJSON(docUpdateIssue, &b) || !c.checkIssue(docUpdateIssue, b, false) {
		return
	}
	if b.Title != nil {
		is.Title = *b.Title
	}
	if b.Body != nil {
		is.Body = *b.Body
	}
	if b.State != nil {
		is.State = *b.State
	}
	if b.Labels != nil {
		is.Labels = r.issueLabels(*b.Labels)
	}
	is.UpdatedAt = time.Now().UTC().Truncate(time.Second)
	c.writeJSON(http.StatusOK, s.issueJSON(c, r, is))
}

func (s *Server) handleListIssues(c *call) {
	r := s.repo(c, docIssues)
	if r == nil {
		return
	}
	q := c.r.URL.Query()
	state, ok := c.stateParam(docIssues, "Issue")
	if !ok {
		return
	}
	var want []string
	if l := q.Get("labels"); l != "" {
		for _, n := range strings.Split(l, ",") {
			want = append(want, strings.TrimSpace(n))
		}
	}
	var list []*Issue
	for _, is := range r.issues {
		if state != "all" && is.State != state {
			continue
		}
		if !slices.ContainsFunc(want, func(n string) bool {
			return !slices.ContainsFunc(is.Labels, func(l string) bool { return strings.EqualFold(l, n) })
		}) {
			list = append(list, is)
		}
	}
	if q.Get("direction") != "asc" {
		slices.Reverse(list)
	}
	page := paginate(c, list)
	out := make([]issueJSON, len(page))
	for i, is := range page {
		out[i] = s.issueJSON(c, r, is)
	}
	c.writeJSON(http.StatusOK, out)
}

func (s *Server) handleListLabels(c *call) {
	r := s.repo(c, docLabels)
	if r == nil {
		return
	}
	page := paginate(c, r.labels)
	out := make([]labelJSON, len(page))
	for i, l := range page {
		out[i] = c.labelJSON(r, l)
	}
	c.writeJSON(http.StatusOK, out)
}

var labelColor = regexp.MustCompile(`^[0-9a-fA-F]{6}$`)

func (s *Server) handleCreateLabel(c *call) {
	r := s.writer(c, docCreateLabel)
	if r == nil {
		return
	}
	var b struct {
		Name        string `json:"name"`
		Color       string `json:"color"`
		Description string `json:"description"`
	}
	if !c.readJSON(docCreateLabel, &b) {
		return
	}
	b.Color = strings.TrimPrefix(b.Color, "#")
	switch {
	case strings.TrimSpace(b.Name) == "":
		c.validationFailed(docCreateLabel, fieldError{Resource: "Label", Field: "name", Code: "missing_field"})
		return
	case b.Color != "" && !labelColor.MatchString(b.Color):
		c.validationFailed(docCreateLabel, fieldError{Resource: "Label", Field: "color", Code: "invalid"})
		return
	case r.label(b.Name, false) != nil:
		c.validationFailed(docCreateLabel, fieldError{Resource: "Label", Field: "name", Code: "already_exists"})
		return
	}
	if b.Color == "" {
		b.Color = defaultLabelHex
	}
	r.labels = append(r.labels, Label{ID: s.newID(), Name: b.Name, Color: strings.ToLower(b.Color), Description: b.Description})
	c.writeJSON(http.StatusCreated, c.labelJSON(r, r.labels[len(r.labels)-1]))
}

// SecondaryRateLimitFault is the answer of GitHub's secondary rate limit,
// to Inject for some requests only (such as Times(2) on
// "/repos/*/*/issues"): 403 with Retry-After and GitHub's message and
// documentation URL.
func SecondaryRateLimitFault(retryAfter time.Duration) Fault {
	return Error(http.StatusForbidden, fmt.Sprintf("You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID %s.", "F4KE:SECONDARY")).
		WithDocumentationURL(docAbuseRate).WithRetryAfter(retryAfter)
}
