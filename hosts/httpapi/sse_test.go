package httpapi

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/core/assistant"
)

func TestSSEStreamWritesEventsAndPingsWhileIdle(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s := startSSE(w, 20*time.Millisecond)
		defer s.close()
		if err := s.events([]assistant.Event{{Seq: 7, Name: "content", Data: []byte(`{"delta":"hi"}`)}}); err != nil {
			t.Errorf("event: %v", err)
		}
		<-release
	}))
	defer srv.Close()
	defer close(release)

	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	for k, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if sc.Text() == ": ping" {
			break
		}
	}
	want := "retry: 1000\n\nid: 7\nevent: content\ndata: {\"delta\":\"hi\"}\n\n: ping"
	if got := strings.Join(lines, "\n"); got != want {
		t.Fatalf("stream = %q, want %q", got, want)
	}
}

// countingWriter is a ResponseWriter that counts writes and flushes.
type countingWriter struct {
	header  http.Header
	body    strings.Builder
	writes  int
	flushes int
}

func (w *countingWriter) Header() http.Header { return w.header }
func (w *countingWriter) WriteHeader(int)     {}
func (w *countingWriter) Write(b []byte) (int, error) {
	w.writes++
	return w.body.Write(b)
}
func (w *countingWriter) Flush() { w.flushes++ }

// The events a core stored together leave in one write and one flush, each
// framed with its id, so that Last-Event-ID can resume after any of them.
func TestSSEStreamWritesABatchWithOneFlush(t *testing.T) {
	t.Parallel()
	w := &countingWriter{header: http.Header{}}
	s := startSSE(w, time.Hour)
	defer s.close()
	w.writes, w.flushes = 0, 0
	w.body.Reset()
	err := s.events([]assistant.Event{
		{Seq: 1, Name: "content", Data: []byte(`{"delta":"a"}`)},
		{Seq: 2, Name: "content", Data: []byte(`{"delta":"b"}`)},
		{Seq: 3, Name: "done", Data: []byte(`{"finish_reason":"stop"}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if w.writes != 1 || w.flushes != 1 {
		t.Errorf("%d writes and %d flushes for one batch, want 1 and 1", w.writes, w.flushes)
	}
	want := "id: 1\nevent: content\ndata: {\"delta\":\"a\"}\n\n" +
		"id: 2\nevent: content\ndata: {\"delta\":\"b\"}\n\n" +
		"id: 3\nevent: done\ndata: {\"finish_reason\":\"stop\"}\n\n"
	if got := w.body.String(); got != want {
		t.Errorf("wrote %q, want %q", got, want)
	}
}

// Every stream starts by asking its client to reconnect after a second.
func TestSSEStreamStartsWithRetry(t *testing.T) {
	t.Parallel()
	w := &countingWriter{header: http.Header{}}
	s := startSSE(w, time.Hour)
	defer s.close()
	if got := w.body.String(); got != "retry: 1000\n\n" {
		t.Errorf("the stream started with %q, want a retry field", got)
	}
}
