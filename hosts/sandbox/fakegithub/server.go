// Package fakegithub is one HTTP server that speaks the parts of GitHub's wire
// protocols devpilot uses, so the real go-github and golang.org/x/oauth2
// clients can be tested over real HTTP without reaching GitHub:
//
//   - the OAuth web flow: GET /login/oauth/authorize, where the user named by
//     AuthorizeAs approves at once and is redirected (302) back with a code,
//     and POST /login/oauth/access_token, which checks the app's credentials,
//     the single-use code, the redirect URI and the PKCE S256 verifier and
//     answers in JSON or form encoding (by the Accept header), with errors in
//     GitHub's shape: status 200 and an "error" field;
//   - the REST API: GET /user, /user/repos, /repos/{owner}/{repo}/commits,
//     /repos/{owner}/{repo}/pulls, /repos/{owner}/{repo}/activity and
//     /search/commits, the issues and labels of a repository (GET, POST and
//     PATCH /repos/{owner}/{repo}/issues[/{number}], GET and POST
//     /repos/{owner}/{repo}/labels), authenticated by "Authorization: Bearer TOKEN" (or
//     "token TOKEN"), paginated with Link headers (rel="next", "last",
//     "prev", "first"; cursors for activity) and carrying X-RateLimit-*
//     headers, as GitHub does.
//
// One base URL serves everything, in the shape of GitHub Enterprise Server:
// the web (OAuth) endpoints at the root of URL(), and the REST API both at
// the root (the api.github.com shape: use URL()+"/" as an API base URL) and
// under /api/v3/ (the GHES shape: APIURL()). go-github's WithEnterpriseURLs
// turns any base URL that does not end in /api/v3/ into one that does, so a
// client configured either way reaches the fake.
//
// Requests are served from seeded state (AddUser, AddRepo and the methods of
// User and Repo), unless an injected fault answers first (Inject, Fail,
// RateLimit, SecondaryRateLimit, RevokeToken), and are recorded (Requests).
//
// The package also builds webhook deliveries as GitHub sends them: Sign,
// NewDelivery and the event payload builders (PushEvent, PullRequestEvent,
// ...).
//
// It lives under hosts/sandbox because the sandbox serves it in the binary,
// seeded with demo data; tests import it from here.
package fakegithub

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// apiPrefix is where a GitHub Enterprise Server serves its REST API.
const apiPrefix = "/api/v3"

// DefaultEpoch is the time of the first seeded record whose time is not
// given; each later one is a minute after the one before.
var DefaultEpoch = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// Request is one request the fake received.
type Request struct {
	Method string
	// Path is the path as received, with the /api/v3 prefix if the client
	// used it.
	Path string
	// APIPath is Path without the /api/v3 prefix: the REST route.
	APIPath string
	Query   url.Values
	Header  http.Header
	// Form is the parsed form body of a POST (the access-token request).
	Form url.Values
	// Login is the user the request authenticated as, "" for none.
	Login string
	// Status is the status the fake answered with.
	Status int
}

// Option configures a Server.
type Option func(*Server)

// WithEpoch sets the time of the first seeded record whose time is not given
// (DefaultEpoch by default).
func WithEpoch(t time.Time) Option {
	return func(s *Server) { s.epoch = t.UTC() }
}

// Server is a started or startable fake GitHub. It is safe for concurrent
// use: seed it and inject faults at any time, also while it serves.
type Server struct {
	srv     *httptest.Server
	closing chan struct{}
	once    sync.Once
	mux     *http.ServeMux

	mu       sync.Mutex
	epoch    time.Time
	ticks    int
	users    map[string]*User // by lower-case login
	orgs     map[string]*account
	tokens   map[string]*token
	apps     map[string]*App
	grants   map[string]*grant
	approver string
	deny     bool
	repos    []*Repo
	faults   []*fault
	limited  time.Time      // primary rate limit in force until then
	abuse    *time.Duration // secondary rate limit in force, with its Retry-After
	requests []Request
	used     map[string]int // rate-limit use by identity and resource
	nextID   int64
}

// New starts a fake on a loopback port and closes it when the test ends.
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s := NewHandler(opts...)
	s.srv = httptest.NewServer(s)
	t.Cleanup(s.Close)
	return s
}

// NewHandler returns a fake that is not listening: serve it with any
// http.Server (it is an http.Handler), as a sandbox does. URLs in its answers
// are built from each request's Host.
func NewHandler(opts ...Option) *Server {
	s := &Server{
		closing: make(chan struct{}),
		epoch:   DefaultEpoch,
		users:   map[string]*User{},
		orgs:    map[string]*account{},
		tokens:  map[string]*token{},
		apps:    map[string]*App{},
		grants:  map[string]*grant{},
		used:    map[string]int{},
		nextID:  1000,
	}
	for _, o := range opts {
		o(s)
	}
	s.mux = s.routes()
	return s
}

// URL is the fake's base URL without a trailing slash: the web URL for OAuth
// (WebURL in the adapter's configuration) and, with "/" added, an
// api.github.com-shaped REST base URL. It is "" for a NewHandler fake.
func (s *Server) URL() string {
	if s.srv == nil {
		return ""
	}
	return s.srv.URL
}

// APIURL is the REST API's base URL in the GitHub Enterprise Server shape,
// URL()+"/api/v3/"; "" for a NewHandler fake.
func (s *Server) APIURL() string {
	if s.srv == nil {
		return ""
	}
	return s.srv.URL + apiPrefix + "/"
}

// Client is an http.Client for the fake that does not follow redirects, so
// a test can read the Location of the authorize endpoint's 302.
func (s *Server) Client() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// Close releases requests held by a Hang fault and, for a New fake, stops the
// server.
func (s *Server) Close() {
	s.once.Do(func() { close(s.closing) })
	if s.srv != nil {
		s.srv.Close()
	}
}

// Requests returns every request received so far, in arrival order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// RequestsTo returns the requests whose APIPath matches pattern (path.Match
// syntax, such as "/repos/*/*/commits").
func (s *Server) RequestsTo(pattern string) []Request {
	var out []Request
	for _, r := range s.Requests() {
		if ok, _ := path.Match(pattern, r.APIPath); ok {
			out = append(out, r)
		}
	}
	return out
}

// ResetRequests forgets the requests recorded so far.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
}

// call is one request being served.
type call struct {
	w   http.ResponseWriter
	r   *http.Request
	rec *Request
	// web is the scheme and host the request came to; api is web plus the
	// /api/v3 prefix when the request used it.
	web, api string
	tok      *token
	// route is the request as the mux routed it, with its path values.
	route *http.Request
}

// ServeHTTP serves one request: faults first, then the OAuth or REST route.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	apiPath, prefixed := strings.CutPrefix(r.URL.Path, apiPrefix)
	if !prefixed || apiPath == "" || apiPath[0] != '/' {
		apiPath, prefixed = r.URL.Path, false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	c := &call{
		w: &statusWriter{ResponseWriter: w},
		r: r,
		rec: &Request{
			Method:  r.Method,
			Path:    r.URL.Path,
			APIPath: apiPath,
			Query:   r.URL.Query(),
			Header:  r.Header.Clone(),
		},
		web: scheme + "://" + r.Host,
	}
	c.w.Header().Set("X-GitHub-Request-Id", fmt.Sprintf("F4KE:%08X", requestSeq.Add(1)))
	c.api = c.web
	if prefixed {
		c.api += apiPrefix
	}
	defer func() {
		c.rec.Status = c.w.(*statusWriter).status
		s.mu.Lock()
		s.requests = append(s.requests, *c.rec)
		s.mu.Unlock()
	}()

	if f := s.takeFault(apiPath); f != nil {
		s.serveFault(c, f)
		return
	}
	req := r.Clone(context.WithValue(r.Context(), callKey{}, c))
	req.URL.Path = apiPath
	req.URL.RawPath = ""
	s.mux.ServeHTTP(c.w, req)
}

type callKey struct{}

// route adapts a handler of calls to the mux; the route's request (with the
// path values) replaces the call's for reading, Link URLs still use the
// original path.
func route(h func(*call)) http.HandlerFunc {
	return func(_ http.ResponseWriter, r *http.Request) {
		c := r.Context().Value(callKey{}).(*call)
		c.route = r
		h(c)
	}
}

func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /login/oauth/authorize", route(s.handleAuthorize))
	mux.Handle("POST /login/oauth/access_token", route(s.handleAccessToken))
	rest := func(pattern, resource string, h func(*call)) {
		mux.Handle(pattern, route(func(c *call) { s.serveREST(c, resource, h) }))
	}
	rest("GET /user", "core", s.handleUser)
	rest("GET /user/repos", "core", s.handleUserRepos)
	rest("GET /repos/{owner}/{repo}/commits", "core", s.handleCommits)
	rest("GET /repos/{owner}/{repo}/pulls", "core", s.handlePulls)
	rest("GET /repos/{owner}/{repo}/activity", "core", s.handleActivity)
	rest("GET /repos/{owner}/{repo}/git/trees/{sha}", "core", s.handleTree)
	rest("GET /repos/{owner}/{repo}/contents/{path...}", "core", s.handleContents)
	rest("PUT /repos/{owner}/{repo}/contents/{path...}", "core", s.handlePutContents)
	rest("GET /search/commits", "search", s.handleSearchCommits)
	rest("GET /repos/{owner}/{repo}/issues", "core", s.handleListIssues)
	rest("POST /repos/{owner}/{repo}/issues", "core", s.handleCreateIssue)
	rest("GET /repos/{owner}/{repo}/issues/{number}", "core", s.handleGetIssue)
	rest("PATCH /repos/{owner}/{repo}/issues/{number}", "core", s.handleUpdateIssue)
	rest("GET /repos/{owner}/{repo}/labels", "core", s.handleListLabels)
	rest("POST /repos/{owner}/{repo}/labels", "core", s.handleCreateLabel)
	mux.Handle("/", route(func(c *call) {
		if !s.serveWeb(c) {
			c.errorf(http.StatusNotFound, docREST, "Not Found")
		}
	}))
	return mux
}

// pathValue returns a wildcard of the call's route.
func (c *call) pathValue(name string) string { return c.route.PathValue(name) }

// statusWriter records the status a route answers with.
type statusWriter struct {
	http.ResponseWriter
	status int
}

// WriteHeader notes the first status written.
func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

// Write notes an implicit 200.
func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Documentation URLs GitHub puts in its error answers.
const (
	docREST        = "https://docs.github.com/rest"
	docPrimaryRate = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-primary-rate-limits"
	docAbuseRate   = "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"
	docUser        = "https://docs.github.com/rest/users/users#get-the-authenticated-user"
	docUserRepos   = "https://docs.github.com/rest/repos/repos#list-repositories-for-the-authenticated-user"
	docCommits     = "https://docs.github.com/rest/commits/commits#list-commits"
	docPulls       = "https://docs.github.com/rest/pulls/pulls#list-pull-requests"
	docActivity    = "https://docs.github.com/rest/repos/repos#list-repository-activities"
	docTrees       = "https://docs.github.com/rest/git/trees#get-a-tree"
	docContents    = "https://docs.github.com/rest/repos/contents#get-repository-content"
	docPutContents = "https://docs.github.com/rest/repos/contents#create-or-update-file-contents"
	docSearch      = "https://docs.github.com/rest/search/search#search-commits"
)

// writeJSON answers with status and v as JSON, the way GitHub's REST API
// does.
func (c *call) writeJSON(status int, v any) {
	h := c.w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("X-GitHub-Media-Type", "github.v3; format=json")
	h.Set("X-GitHub-Api-Version-Selected", "2022-11-28")
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(c.w, err.Error(), http.StatusInternalServerError)
		return
	}
	c.w.WriteHeader(status)
	_, _ = c.w.Write(body)
}

// apiError is GitHub's REST error body.
type apiError struct {
	Message          string       `json:"message"`
	Errors           []fieldError `json:"errors,omitempty"`
	DocumentationURL string       `json:"documentation_url"`
	Status           string       `json:"status"`
}

type fieldError struct {
	Resource string `json:"resource,omitempty"`
	Field    string `json:"field,omitempty"`
	Code     string `json:"code"`
	Message  string `json:"message,omitempty"`
}

func (c *call) errorf(status int, doc, format string, args ...any) {
	c.writeJSON(status, apiError{Message: fmt.Sprintf(format, args...), DocumentationURL: doc, Status: strconv.Itoa(status)})
}

// validationFailed answers 422 "Validation Failed" with one field error.
func (c *call) validationFailed(doc string, fe fieldError) {
	c.writeJSON(http.StatusUnprocessableEntity, apiError{
		Message: "Validation Failed", Errors: []fieldError{fe}, DocumentationURL: doc, Status: "422",
	})
}

// requestSeq numbers the answers' X-GitHub-Request-Id.
var requestSeq atomic.Int64

// tick returns the time of the next seeded record. Callers hold s.mu.
func (s *Server) tick() time.Time {
	t := s.epoch.Add(time.Duration(s.ticks) * time.Minute)
	s.ticks++
	return t
}

// newID returns a fresh numeric id. Callers hold s.mu.
func (s *Server) newID() int64 {
	s.nextID++
	return s.nextID
}

// nodeID is a GraphQL node id in GitHub's legacy format, such as
// "MDQ6VXNlcjE=" for user 1.
func nodeID(kind string, id int64) string {
	s := fmt.Sprintf("%s%d", kind, id)
	return base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "%02d:%s", len(kind), s))
}

// drain reads what is left of a request body so the connection can be
// reused.
func drain(r *http.Request) { _, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20)) }
