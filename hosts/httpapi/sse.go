package httpapi

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// pingEvery is how long a stream may stay silent before a ": ping" comment
// keeps proxies and clients from timing it out.
const pingEvery = 15 * time.Second

// sseStream writes Server-Sent Events: an id, a name and one line of JSON
// data per event, flushed at once, with a ping comment while idle. A timer,
// not a goroutine, drives the pings, so an idle stream costs little. It is
// safe for concurrent use; the first write error sticks.
type sseStream struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	rc      *http.ResponseController
	err     error
	every   time.Duration
	written time.Time
	timer   *time.Timer
	closed  bool
	// open, when set, counts the stream while it is open: close
	// decrements it.
	open prometheus.Gauge
}

// startSSE sends the stream's headers and arms its ping timer; call close
// when the stream ends.
func startSSE(w http.ResponseWriter, every time.Duration) *sseStream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sseStream{w: w, rc: http.NewResponseController(w), every: every}
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.flushLocked()
	s.timer = time.AfterFunc(every, s.ping)
	return s
}

// event writes one event; data must be a single line (compact JSON is).
func (s *sseStream) event(id int64, name string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		_, s.err = fmt.Fprintf(s.w, "id: %d\nevent: %s\ndata: %s\n\n", id, name, data)
	}
	return s.flushLocked()
}

// ping writes a comment if nothing was written for a whole interval, then
// re-arms the timer for the rest of the next one.
func (s *sseStream) ping() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.err != nil {
		return
	}
	idle := time.Since(s.written)
	if idle >= s.every {
		_, s.err = fmt.Fprint(s.w, ": ping\n\n")
		_ = s.flushLocked()
		idle = 0
	}
	s.timer.Reset(s.every - idle)
}

func (s *sseStream) flushLocked() error {
	if s.err == nil {
		s.err = s.rc.Flush()
	}
	s.written = time.Now()
	return s.err
}

// openSSE is startSSE for a stream counted by the
// devpilot_http_sse_streams_open gauge until its close. The count goes up
// before the headers leave, so a client that sees the stream start sees
// it counted.
func (s *Server) openSSE(w http.ResponseWriter, every time.Duration) *sseStream {
	s.metrics.sseOpen.Inc()
	stream := startSSE(w, every)
	stream.mu.Lock()
	stream.open = s.metrics.sseOpen
	stream.mu.Unlock()
	return stream
}

// close stops the pings (and ends the stream's count in the open streams);
// the handler returning ends the response. Closing again does nothing.
func (s *sseStream) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.closed = true
	s.timer.Stop()
	if s.open != nil {
		s.open.Dec()
	}
}
