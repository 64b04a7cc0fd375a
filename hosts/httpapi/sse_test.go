package httpapi

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestSSEStreamWritesEventsAndPingsWhileIdle(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		s := startSSE(w, 20*time.Millisecond)
		defer s.close()
		if err := s.event(7, "content", []byte(`{"delta":"hi"}`)); err != nil {
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
	want := "id: 7\nevent: content\ndata: {\"delta\":\"hi\"}\n\n: ping"
	if got := strings.Join(lines, "\n"); got != want {
		t.Fatalf("stream = %q, want %q", got, want)
	}
}
