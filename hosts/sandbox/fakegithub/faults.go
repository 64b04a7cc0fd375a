package fakegithub

import (
	"net/http"
	"path"
	"strconv"
	"time"
)

// Fault is a failure injected with Server.Inject. Build one with Error or
// Hang; by default it answers every matching request, Times limits it to the
// first n.
type Fault struct {
	status  int
	message string
	doc     string
	header  http.Header
	hang    bool
	times   int
}

// Error answers with status and a GitHub error body
// ({"message","documentation_url","status"}); message is the status text
// when empty.
func Error(status int, message string) Fault {
	if message == "" {
		message = http.StatusText(status)
	}
	return Fault{status: status, message: message, doc: docREST}
}

// Hang holds the request without answering until the client gives up (or
// the fake closes): a GitHub that does not answer in time.
func Hang() Fault { return Fault{hang: true} }

// Times makes the fault answer only the first n matching requests.
func (f Fault) Times(n int) Fault {
	f.times = n
	return f
}

// WithHeader adds a header to the answer.
func (f Fault) WithHeader(key, value string) Fault {
	h := f.header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Add(key, value)
	f.header = h
	return f
}

// WithRetryAfter adds a Retry-After header, in whole seconds.
func (f Fault) WithRetryAfter(d time.Duration) Fault {
	return f.WithHeader("Retry-After", strconv.Itoa(int(d/time.Second)))
}

// WithDocumentationURL sets the error body's documentation_url.
func (f Fault) WithDocumentationURL(u string) Fault {
	f.doc = u
	return f
}

type fault struct {
	pattern string
	Fault
	left int // requests left to fail; -1 for every request
}

// Inject makes requests whose REST route (the path without /api/v3, or the
// OAuth path) matches pattern (path.Match syntax: "/user",
// "/repos/*/*/commits", "/login/oauth/access_token", "*" for a single
// segment; "" for every path) answer with f, before authentication. Faults
// are tried in the order they were injected.
func (s *Server) Inject(pattern string, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	left := -1
	if f.times > 0 {
		left = f.times
	}
	s.faults = append(s.faults, &fault{pattern: pattern, Fault: f, left: left})
}

// Fail makes requests to pattern (as in Inject) answer with status and
// GitHub's error body.
func (s *Server) Fail(pattern string, status int) { s.Inject(pattern, Error(status, "")) }

// RateLimit exhausts the primary rate limit until reset: every REST request
// answers 403 with X-RateLimit-Remaining: 0, X-RateLimit-Reset: reset and
// GitHub's "API rate limit exceeded for ..." message, until reset passes or
// ClearFaults.
func (s *Server) RateLimit(reset time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limited = reset
}

// SecondaryRateLimit makes every REST request answer 403 with Retry-After
// and GitHub's secondary-rate-limit message and documentation URL, until
// ClearFaults.
func (s *Server) SecondaryRateLimit(retryAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.abuse = &retryAfter
}

// RevokeToken makes the token fail with 401 "Bad credentials", as after the
// user revoked the app's access; ClearFaults does not undo it.
func (s *Server) RevokeToken(value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.tokens[value]; t != nil {
		t.revoked = true
		return
	}
	s.tokens[value] = &token{value: value, revoked: true}
}

// ClearFaults removes the injected faults and the rate limits.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults, s.limited, s.abuse = nil, time.Time{}, nil
}

// takeFault returns the fault that answers a request to apiPath, if any,
// and counts the use.
func (s *Server) takeFault(apiPath string) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if f.pattern != "" {
			if ok, _ := path.Match(f.pattern, apiPath); !ok {
				continue
			}
		}
		if f.left > 0 {
			f.left--
			if f.left == 0 {
				s.faults = append(s.faults[:i:i], s.faults[i+1:]...)
			}
		}
		out := f.Fault
		return &out
	}
	return nil
}

func (s *Server) serveFault(c *call, f *Fault) {
	if f.hang {
		select {
		case <-c.r.Context().Done():
		case <-s.closing:
		}
		return
	}
	for k, vs := range f.header {
		for _, v := range vs {
			c.w.Header().Add(k, v)
		}
	}
	c.errorf(f.status, f.doc, "%s", f.message)
}
