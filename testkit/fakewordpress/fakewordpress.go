// Package fakewordpress is an HTTP server speaking the part of the
// WordPress REST API devpilot publishes with: POST /wp-json/wp/v2/posts
// (and GET of the posts made), authenticated with HTTP Basic auth and an
// application password, answering as WordPress does (201 and the post's
// JSON with "id" and "link"; 401 with {"code":"rest_not_logged_in"} or
// "incorrect_password" otherwise).
package fakewordpress

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Post is a post the server holds.
type Post struct {
	ID      int    `json:"id"`
	Title   string `json:"title"`
	Content string `json:"content"`
	Status  string `json:"status"`
	Link    string `json:"link"`
	Author  string `json:"-"`
}

// Server is a fake WordPress site. Create it with New; Close it when done.
type Server struct {
	srv      *httptest.Server
	mu       sync.Mutex
	users    map[string]string // username → application password (spaces removed)
	posts    []Post
	failures []int // statuses to answer the next posts with
	echo     bool  // errors quote the request's credentials
}

// New starts a site with one user and its application password.
func New(username, appPassword string) *Server {
	s := &Server{users: map[string]string{username: strings.ReplaceAll(appPassword, " ", "")}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /wp-json/wp/v2/posts", s.create)
	mux.HandleFunc("GET /wp-json/wp/v2/posts", s.list)
	s.srv = httptest.NewServer(mux)
	return s
}

// URL is the site's URL (its site_url).
func (s *Server) URL() string { return s.srv.URL }

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Fail makes the next posts answer with these statuses, one each.
func (s *Server) Fail(statuses ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures = append(s.failures, statuses...)
}

// EchoCredentials makes every error answer quote the credentials of the
// request, as some misconfigured proxies and plugins do: the
// Authorization header, the password it carried (as sent and
// JSON-escaped by the encoder) and that password percent-encoded.
func (s *Server) EchoCredentials() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.echo = true
}

// Posts returns the posts made.
func (s *Server) Posts() []Post {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Post(nil), s.posts...)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) wpError(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	s.mu.Lock()
	echo := s.echo
	s.mu.Unlock()
	if echo {
		_, pass, _ := r.BasicAuth()
		message += fmt.Sprintf(" (request: Authorization: %s; password %s; encoded %s)", r.Header.Get("Authorization"), pass, url.QueryEscape(pass))
	}
	writeJSON(w, status, map[string]any{"code": code, "message": message, "data": map[string]int{"status": status}})
}

// auth returns the user of a request's Basic auth, or answers 401.
func (s *Server) auth(w http.ResponseWriter, r *http.Request) (string, bool) {
	user, pass, ok := r.BasicAuth()
	if !ok {
		s.wpError(w, r, http.StatusUnauthorized, "rest_not_logged_in", "You are not currently logged in.")
		return "", false
	}
	s.mu.Lock()
	want, known := s.users[user]
	s.mu.Unlock()
	if !known || strings.ReplaceAll(pass, " ", "") != want {
		s.wpError(w, r, http.StatusUnauthorized, "incorrect_password", "The provided password is an invalid application password.")
		return "", false
	}
	return user, true
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	user, ok := s.auth(w, r)
	if !ok {
		return
	}
	var in struct {
		Title   string `json:"title"`
		Content string `json:"content"`
		Status  string `json:"status"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		s.wpError(w, r, http.StatusBadRequest, "rest_invalid_json", "Invalid JSON body passed.")
		return
	}
	s.mu.Lock()
	if len(s.failures) > 0 {
		status := s.failures[0]
		s.failures = s.failures[1:]
		s.mu.Unlock()
		s.wpError(w, r, status, "fake_failure", "injected failure")
		return
	}
	p := Post{ID: len(s.posts) + 1, Title: in.Title, Content: in.Content, Status: in.Status, Author: user}
	if p.Status == "" {
		p.Status = "draft"
	}
	p.Link = fmt.Sprintf("%s/?p=%d", s.srv.URL, p.ID)
	s.posts = append(s.posts, p)
	s.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{
		"id": p.ID, "date_gmt": time.Now().UTC().Format("2006-01-02T15:04:05"), "status": p.Status, "link": p.Link,
		"title":   map[string]string{"raw": p.Title, "rendered": p.Title},
		"content": map[string]any{"raw": p.Content, "rendered": p.Content, "protected": false},
	})
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.auth(w, r); !ok {
		return
	}
	writeJSON(w, http.StatusOK, s.Posts())
}
