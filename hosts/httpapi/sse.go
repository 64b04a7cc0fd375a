package httpapi

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/devpilot/devpilot/core/assistant"
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
	buf     []byte // the frames of the events being written, reused
	err     error
	every   time.Duration
	written time.Time
	timer   *time.Timer
	closed  bool
	// open, when set, counts the stream while it is open: close
	// decrements it.
	open prometheus.Gauge
}

// sseRetry is the reconnection delay every stream asks of its client
// (its first line, "retry: 1000"): an EventSource reconnects after a second
// rather than its own default, to the stream route with Last-Event-ID.
const sseRetry = time.Second

// startSSE sends the stream's headers and its retry field, and arms its
// ping timer; call close when the stream ends.
func startSSE(w http.ResponseWriter, every time.Duration) *sseStream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sseStream{w: w, rc: http.NewResponseController(w), every: every}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, s.err = fmt.Fprintf(w, "retry: %d\n\n", sseRetry.Milliseconds())
	_ = s.flushLocked()
	s.timer = time.AfterFunc(every, s.ping)
	return s
}

// maxSSEBuf bounds the buffer a stream keeps between writes.
const maxSSEBuf = 64 << 10

// events writes evs (each with its Seq as id, its Name and its Data, which
// must be a single line) in one write and one flush.
func (s *sseStream) events(evs []assistant.Event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		b := s.buf[:0]
		for _, ev := range evs {
			b = appendSSE(b, ev.Seq, ev.Name, ev.Data)
		}
		_, s.err = s.w.Write(b)
		if cap(b) <= maxSSEBuf {
			s.buf = b
		}
	}
	return s.flushLocked()
}

// event writes one event (a progress stream's) in one write and one flush.
func (s *sseStream) event(id int64, name string, data []byte) error {
	return s.events([]assistant.Event{{Seq: id, Name: name, Data: data}})
}

// appendSSE appends the frame of one event to b.
func appendSSE(b []byte, id int64, name string, data []byte) []byte {
	b = append(b, "id: "...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, "\nevent: "...)
	b = append(b, name...)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	return append(b, "\n\n"...)
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
