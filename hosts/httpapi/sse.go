package httpapi

import (
	"fmt"
	"net/http"
	"sync"
	"time"
)

// pingEvery is how long a stream may stay silent before a ": ping" comment
// keeps proxies and clients from timing it out.
const pingEvery = 15 * time.Second

// sseStream writes Server-Sent Events: an id, a name and one line of JSON
// data per event, flushed at once, with a ping comment while idle. It is
// safe for concurrent use; the first write error sticks.
type sseStream struct {
	mu      sync.Mutex
	w       http.ResponseWriter
	rc      *http.ResponseController
	err     error
	written time.Time
	stop    chan struct{}
	done    sync.WaitGroup
}

// startSSE sends the stream's headers and starts its pinger; call close when
// the stream ends.
func startSSE(w http.ResponseWriter, every time.Duration) *sseStream {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &sseStream{w: w, rc: http.NewResponseController(w), stop: make(chan struct{})}
	s.flush()
	s.done.Add(1)
	go s.pinger(every)
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

func (s *sseStream) pinger(every time.Duration) {
	defer s.done.Done()
	t := time.NewTicker(every / 3)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			s.mu.Lock()
			if s.err == nil && now.Sub(s.written) >= every {
				_, s.err = fmt.Fprint(s.w, ": ping\n\n")
				_ = s.flushLocked()
			}
			s.mu.Unlock()
		}
	}
}

func (s *sseStream) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.flushLocked()
}

func (s *sseStream) flushLocked() error {
	if s.err == nil {
		s.err = s.rc.Flush()
	}
	s.written = time.Now()
	return s.err
}

// close stops the pinger; the handler returning ends the response.
func (s *sseStream) close() {
	close(s.stop)
	s.done.Wait()
}
