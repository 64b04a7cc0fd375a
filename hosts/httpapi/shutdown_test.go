package httpapi_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/hosts/httpapi"
)

// serve runs e's server on a loopback port and returns its base URL and a
// channel that yields Serve's result.
func serve(t *testing.T, e *env) (string, <-chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- e.srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), done
}

type result struct {
	status int
	body   string
	err    error
}

func get(url string) <-chan result {
	out := make(chan result, 1)
	go func() {
		resp, err := http.Get(url)
		if err != nil {
			out <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		out <- result{status: resp.StatusCode, body: string(b), err: err}
	}()
	return out
}

func TestShutdownWaitsForInFlightRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	started, release := make(chan struct{}), make(chan struct{})
	e.srv.HandleForTest(http.MethodGet, "/test/slow", func(w http.ResponseWriter, _ *http.Request) error {
		close(started)
		<-release
		return httpapi.WriteJSON(w, 200, map[string]string{"status": "finished"})
	}, httpapi.Public)
	e.srv.HandleForTest(http.MethodGet, "/test/stream", func(w http.ResponseWriter, r *http.Request) error {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, ": open\n\n")
		http.NewResponseController(w).Flush()
		select {
		case <-e.srv.Stopping():
			_, _ = io.WriteString(w, "event: done\ndata: {}\n\n")
		case <-r.Context().Done():
		}
		return nil
	}, httpapi.Public, httpapi.Streaming)
	base, served := serve(t, e)

	slow := get(base + "/test/slow")
	<-started
	stream, err := http.Get(base + "/test/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Body.Close()
	if _, err := io.ReadFull(stream.Body, make([]byte, len(": open\n\n"))); err != nil {
		t.Fatal(err)
	}

	shutdown := make(chan error, 1)
	go func() { shutdown <- e.srv.Shutdown(context.Background()) }()
	<-e.srv.Stopping()
	rest, err := io.ReadAll(stream.Body)
	if err != nil || string(rest) != "event: done\ndata: {}\n\n" {
		t.Errorf("stream ended with %q, %v; want the done event", rest, err)
	}
	select {
	case err := <-shutdown:
		t.Fatalf("Shutdown returned (%v) while a request was in flight", err)
	default:
	}

	close(release)
	if r := <-slow; r.err != nil || r.status != 200 || !strings.Contains(r.body, "finished") {
		t.Errorf("in-flight request: %+v", r)
	}
	if err := <-shutdown; err != nil {
		t.Errorf("Shutdown = %v", err)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve = %v", err)
	}
	if _, err := http.Get(base + "/livez"); err == nil {
		t.Error("a new request was served after Shutdown")
	}
	if logged := e.logs.records(t, "listening on "+base); len(logged) != 1 {
		t.Errorf("no %q log line", "listening on "+base)
	}
}

func TestShutdownClosesWhatOutlivesTheGrace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	started, handlerDone := make(chan struct{}), make(chan struct{})
	e.srv.HandleForTest(http.MethodGet, "/test/stuck", func(_ http.ResponseWriter, r *http.Request) error {
		defer close(handlerDone)
		close(started)
		<-r.Context().Done() // ignores Stopping
		return r.Context().Err()
	}, httpapi.Public, httpapi.Streaming)
	base, served := serve(t, e)
	stuck := get(base + "/test/stuck")
	<-started

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the grace is already over
	if err := e.srv.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown = %v, want context.Canceled", err)
	}
	<-handlerDone
	if r := <-stuck; r.err == nil {
		t.Errorf("the stuck request completed: %+v", r)
	}
	if err := <-served; err != nil {
		t.Errorf("Serve = %v", err)
	}
}

// The server speaks HTTP/1.1, and HTTP/2 without TLS to a client that knows
// it does: a stream's events arrive as they are flushed, and a client going
// away ends the handler's context.
func TestServesHTTP1AndCleartextHTTP2(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	flushed, gone := make(chan struct{}), make(chan struct{})
	e.srv.HandleForTest(http.MethodGet, "/test/stream", func(w http.ResponseWriter, r *http.Request) error {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: open\ndata: {}\n\n")
		if err := http.NewResponseController(w).Flush(); err != nil {
			return err
		}
		close(flushed)
		<-r.Context().Done()
		close(gone)
		return nil
	}, httpapi.Public, httpapi.Streaming)
	base, _ := serve(t, e)

	resp, err := http.Get(base + "/livez")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.ProtoMajor != 1 || resp.StatusCode != http.StatusOK {
		t.Errorf("HTTP/1.1 client: %s %d", resp.Proto, resp.StatusCode)
	}

	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	defer tr.CloseIdleConnections()
	h2c := &http.Client{Transport: tr}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/test/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err = h2c.Do(req)
	if err != nil {
		t.Fatalf("cleartext HTTP/2 client: %v", err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusOK {
		t.Fatalf("cleartext HTTP/2 client: %s %d", resp.Proto, resp.StatusCode)
	}
	<-flushed
	first := make([]byte, len("event: open\ndata: {}\n\n"))
	if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != "event: open\ndata: {}\n\n" {
		t.Fatalf("first event over HTTP/2: %q, %v", first, err)
	}
	cancel()
	<-gone // the handler saw the stream reset
}
