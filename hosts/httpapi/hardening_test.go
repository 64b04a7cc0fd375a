package httpapi_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/hosts/httpapi"
	"github.com/devpilot/devpilot/ports"
)

// slowBodyEnv serves routes whose bodies must arrive within bodyTimeout:
// /test/json (authenticated JSON), /test/public (like /webhooks/scm) and
// /test/stream (a stream, which reads its body first).
func slowBodyEnv(t *testing.T, bodyTimeout time.Duration) string {
	t.Helper()
	e := newEnv(t, withConfig(httpapi.Config{BodyReadTimeout: bodyTimeout, RequestTimeout: time.Minute}))
	decode := func(w http.ResponseWriter, r *http.Request) error {
		var v map[string]any
		if err := httpapi.DecodeJSON(w, r, &v); err != nil {
			return err
		}
		return httpapi.WriteJSON(w, http.StatusOK, v)
	}
	e.srv.HandleForTest(http.MethodPost, "/test/json", decode)
	e.srv.HandleForTest(http.MethodPost, "/test/public", decode, httpapi.Public)
	e.srv.HandleForTest(http.MethodPost, "/test/stream", func(w http.ResponseWriter, r *http.Request) error {
		var v map[string]any
		if err := httpapi.DecodeJSON(w, r, &v); err != nil {
			return err
		}
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "first\n")
		http.NewResponseController(w).Flush()
		// Outlive the body's deadline: the stream must not be cut by it.
		<-time.After(3 * bodyTimeout)
		if err := r.Context().Err(); err != nil {
			_, _ = io.WriteString(w, "canceled\n")
			return nil
		}
		_, _ = io.WriteString(w, "second\n")
		return nil
	}, httpapi.Streaming)
	base, _ := serve(t, e)
	return strings.TrimPrefix(base, "http://")
}

// rawRequest writes a POST's headers and the first byte of a 100-byte JSON
// body; trickle then sends one more byte every interval.
func rawRequest(t *testing.T, addr, path string, trickle time.Duration) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	// A server that never answers fails the test instead of hanging it.
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{", path, goodToken)
	if trickle > 0 {
		go func() {
			tick := time.NewTicker(trickle)
			defer tick.Stop()
			for range tick.C {
				if _, err := conn.Write([]byte(" ")); err != nil {
					return
				}
			}
		}()
	}
	return conn, bufio.NewReader(conn)
}

func TestSlowBodyIsTimedOut(t *testing.T) {
	t.Parallel()
	const bodyTimeout = 300 * time.Millisecond
	addr := slowBodyEnv(t, bodyTimeout)
	for _, path := range []string{"/test/json", "/test/public", "/test/stream"} {
		for _, trickle := range []time.Duration{0, bodyTimeout / 6} {
			t.Run(fmt.Sprintf("%s trickle %s", path, trickle), func(t *testing.T) {
				t.Parallel()
				start := time.Now()
				_, br := rawRequest(t, addr, path, trickle)
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatalf("no response to a slow body after %s: %v", time.Since(start), err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var p problemBody
				_ = json.Unmarshal(body, &p)
				if resp.StatusCode != http.StatusRequestTimeout || p.Code != "request_timeout" ||
					resp.Header.Get("Content-Type") != "application/problem+json" {
					t.Fatalf("slow body: %d %v %s", resp.StatusCode, resp.Header, body)
				}
				if !resp.Close {
					t.Errorf("a 408 keeps the connection open (Connection: %q)", resp.Header.Get("Connection"))
				}
				// The server closes the connection: the client reads EOF,
				// not its own 20 s deadline.
				if _, err := br.ReadByte(); !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !isReset(err) {
					t.Errorf("connection after the 408: %v, want closed", err)
				}
			})
		}
	}
}

func isReset(err error) bool { return err != nil && strings.Contains(err.Error(), "connection reset") }

// TestBodyDeadlineIsLifted: a body that arrives in time is served, and a
// stream outlives the body's deadline.
func TestBodyDeadlineIsLifted(t *testing.T) {
	t.Parallel()
	const bodyTimeout = 200 * time.Millisecond
	addr := slowBodyEnv(t, bodyTimeout)
	for _, tc := range []struct{ path, want string }{
		{"/test/json", `{"a":1}`},
		{"/test/stream", "first\nsecond\n"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			t.Parallel()
			req, _ := http.NewRequest(http.MethodPost, "http://"+addr+tc.path, strings.NewReader(`{"a":1}`))
			req.Header.Set("Authorization", "Bearer "+goodToken)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != strings.TrimSpace(tc.want) {
				t.Fatalf("%d %q, want 200 %q", resp.StatusCode, body, tc.want)
			}
		})
	}
}

func TestSecurityHeadersOnEveryResponse(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.srv.HandleForTest(http.MethodGet, "/test/sse", func(w http.ResponseWriter, _ *http.Request) error {
		httpapi.SSEForTest(w)
		return nil
	}, httpapi.Streaming)
	e.srv.HandleForTest(http.MethodGet, "/test/panic", func(http.ResponseWriter, *http.Request) error { panic("boom") })
	tests := []struct {
		name, path, token string
		status            int
		cache             string
	}{
		{"authenticated 200", "/api/v1/me", goodToken, 200, "no-store"},
		{"public 200", "/livez", "", 200, "no-store"},
		{"openapi", "/openapi.json", "", 200, "no-store"},
		{"metrics", "/metrics", "", 200, "no-store"},
		{"401", "/api/v1/me", "", 401, "no-store"},
		{"404", "/nowhere", goodToken, 404, "no-store"},
		{"panic", "/test/panic", goodToken, 500, "no-store"},
		{"SSE keeps no-cache", "/test/sse", goodToken, 200, "no-cache"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rr := e.do(request(http.MethodGet, tt.path, tt.token, nil))
			if rr.Code != tt.status {
				t.Fatalf("status %d, want %d: %s", rr.Code, tt.status, rr.Body)
			}
			if got := rr.Header().Values("Cache-Control"); len(got) != 1 || got[0] != tt.cache {
				t.Errorf("Cache-Control = %q, want %q", got, tt.cache)
			}
			if got := rr.Header().Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options = %q, want nosniff", got)
			}
		})
	}
}

func TestProblemErrorsAreCapped(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 50, 51, 20000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			fields := make([]ports.FieldError, n)
			for i := range fields {
				fields[i] = ports.FieldError{Field: fmt.Sprintf("inputs[%d].kind", i), Reason: "must be document, transcript or note"}
			}
			e.srv.HandleForTest(http.MethodPost, "/test/invalid", func(http.ResponseWriter, *http.Request) error {
				return ports.Invalid("invalid request", fields...)
			})
			rr := e.do(request(http.MethodPost, "/test/invalid", goodToken, nil))
			size := rr.Body.Len()
			p := problemOf(t, rr, http.StatusUnprocessableEntity)
			want := min(n, 50)
			if len(p.Errors) != want || p.Errors[0] != fields[0] || p.Errors[want-1] != fields[want-1] {
				t.Fatalf("%d field errors: the problem lists %d", n, len(p.Errors))
			}
			omitted := strings.Contains(p.Detail, fmt.Sprintf("first 50 of %d", n))
			if omitted != (n > 50) {
				t.Errorf("detail %q", p.Detail)
			}
			if size > 16<<10 {
				t.Errorf("problem body of %d bytes", size)
			}
		})
	}
}

// TestUnreadBodyIsAnsweredAndClosed: a request answered before its body
// was read to its end (refused, or served by a handler that stops reading)
// is answered with Connection: close and its connection is closed, instead
// of the server waiting, without a deadline, for the rest of a body that
// may never come. A request whose body is read keeps its connection.
func TestUnreadBodyIsAnsweredAndClosed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.srv.HandleForTest(http.MethodPost, "/test/nothing", func(http.ResponseWriter, *http.Request) error { return nil }, httpapi.Public)
	e.srv.HandleForTest(http.MethodPost, "/test/half", func(w http.ResponseWriter, r *http.Request) error {
		_, _ = io.ReadFull(r.Body, make([]byte, 1))
		return httpapi.WriteJSON(w, http.StatusOK, map[string]string{"read": "some"})
	}, httpapi.Public)
	e.srv.HandleForTest(http.MethodPost, "/test/echo", func(w http.ResponseWriter, r *http.Request) error {
		var v map[string]any
		if err := httpapi.DecodeJSON(w, r, &v); err != nil {
			return err
		}
		return httpapi.WriteJSON(w, http.StatusOK, v)
	})
	base, _ := serve(t, e)
	addr := strings.TrimPrefix(base, "http://")
	for _, tc := range []struct {
		name, head string
		status     int
	}{
		{"no token", "POST /test/echo HTTP/1.1\r\n", http.StatusUnauthorized},
		{"no route", "POST /nowhere HTTP/1.1\r\n", http.StatusNotFound},
		{"too large", "POST /test/echo HTTP/1.1\r\nAuthorization: Bearer " + goodToken + "\r\nContent-Length: 2000000\r\n", http.StatusRequestEntityTooLarge},
		{"handler writes nothing", "POST /test/nothing HTTP/1.1\r\n", http.StatusOK},
		{"handler reads a byte", "POST /test/half HTTP/1.1\r\n", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(20 * time.Second)) // a server that waits fails the test, not hangs it
			head := tc.head
			if !strings.Contains(head, "Content-Length") {
				head += "Content-Length: 100\r\n"
			}
			fmt.Fprintf(conn, "%sHost: x\r\nContent-Type: application/json\r\n\r\n{\"a\"", head)
			br := bufio.NewReader(conn)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.status || !resp.Close {
				t.Fatalf("%d, Connection %q; want %d and close", resp.StatusCode, resp.Header.Get("Connection"), tc.status)
			}
			if _, err := br.ReadByte(); !errors.Is(err, io.EOF) && !isReset(err) {
				t.Errorf("connection after the answer: %v, want closed", err)
			}
		})
	}
	t.Run("keep-alive", func(t *testing.T) {
		t.Parallel()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
		br := bufio.NewReader(conn)
		for i := range 3 {
			fmt.Fprintf(conn, "POST /test/echo HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 7\r\n\r\n{\"a\":%d}", goodToken, i)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("request %d on the kept connection: %v", i, err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Close || string(body) != fmt.Sprintf("{\"a\":%d}\n", i) {
				t.Fatalf("request %d: %d close %v %q", i, resp.StatusCode, resp.Close, body)
			}
		}
	})
}
