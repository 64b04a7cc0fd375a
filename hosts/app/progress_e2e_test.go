package app_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// eventWatch is an open progress stream read as it arrives.
type eventWatch struct {
	st     *stack
	resp   *http.Response
	cancel context.CancelFunc
	events chan sse
	mu     sync.Mutex
	raw    bytes.Buffer
	done   chan struct{}
}

// watchEvents opens GET path as an event stream with the headers given
// (name, value pairs) and fails the test unless it is answered 200.
func (st *stack) watchEvents(token, path string, header ...string) *eventWatch {
	st.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, st.base+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "text/event-stream")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		st.t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		defer resp.Body.Close()
		cancel()
		var b bytes.Buffer
		_, _ = b.ReadFrom(resp.Body)
		st.t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b.Bytes())
	}
	w := &eventWatch{st: st, resp: resp, cancel: cancel, events: make(chan sse, 100), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		defer close(w.events)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var cur sse
		for sc.Scan() {
			line := sc.Text()
			w.mu.Lock()
			w.raw.WriteString(line + "\n")
			w.mu.Unlock()
			switch {
			case line == "":
				if cur.Name != "" {
					w.events <- cur
				}
				cur = sse{}
			case strings.HasPrefix(line, "id: "):
				cur.ID, _ = strconv.ParseInt(line[4:], 10, 64)
			case strings.HasPrefix(line, "event: "):
				cur.Name = line[7:]
			case strings.HasPrefix(line, "data: "):
				_ = json.Unmarshal([]byte(line[6:]), &cur.Data)
			}
		}
	}()
	st.t.Cleanup(w.close)
	return w
}

// next returns the next event, or false when none came within d.
func (w *eventWatch) next(d time.Duration) (sse, bool) {
	select {
	case ev, ok := <-w.events:
		return ev, ok
	case <-time.After(d):
		return sse{}, false
	}
}

// until reads events until one satisfies cond, failing the test after d.
func (w *eventWatch) until(d time.Duration, what string, cond func(sse) bool) []sse {
	w.st.t.Helper()
	deadline := time.Now().Add(d)
	var seen []sse
	for {
		ev, ok := w.next(time.Until(deadline))
		if !ok {
			w.st.t.Fatalf("no %s within %s; saw %+v", what, d, seen)
		}
		seen = append(seen, ev)
		if cond(ev) {
			return seen
		}
	}
}

// close hangs up and checks what was read against openapi.json.
func (w *eventWatch) close() {
	w.cancel()
	<-w.done
	w.resp.Body.Close()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.raw.Len() > 0 {
		w.st.conform(w.st.t, w.resp, w.raw.Bytes())
	}
}

// TestProgressStreams is issue 23's live progress: a session's and a
// content item's states arrive on their event streams as they commit, a
// whole generation through five stages from one call, with no polling by
// the client; Last-Event-ID skips the state seen; on both databases.
func TestProgressStreams(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startStack(t, string(d))
			member, other := st.token("dev@example.com"), st.token("eve@example.com")
			sid := st.noteSession(member, "Checkout revamp", "One-click checkout for returning customers.")
			path := "/pse/sessions/" + sid + "/events"

			for _, c := range []struct {
				token, path string
				header      []string
				want        int
			}{
				{other, path, nil, 404},
				{member, "/pse/sessions/not-an-id/events", nil, 404},
				{member, path, []string{"Last-Event-ID", "x"}, 400},
				{"", path, nil, 401},
			} {
				req, _ := http.NewRequest(http.MethodGet, st.base+c.path, nil)
				if c.token != "" {
					req.Header.Set("Authorization", "Bearer "+c.token)
				}
				for i := 0; i+1 < len(c.header); i += 2 {
					req.Header.Set(c.header[i], c.header[i+1])
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != c.want {
					t.Errorf("GET %s %v: %d, want %d", c.path, c.header, resp.StatusCode, c.want)
				}
			}

			w := st.watchEvents(member, path)
			first, ok := w.next(5 * time.Second)
			if !ok || first.Name != "session" || first.Data["status"] != "draft" || first.Data["next_stage"] != "scope" {
				t.Fatalf("first event %+v", first)
			}
			for _, stage := range []string{"scope", "prd", "epics", "stories", "stories", "prps", "prps", "prps"} {
				st.model.Enqueue(stageOutput(t, stage))
			}
			if code, body, _ := st.call(member, "POST", "/pse/sessions/"+sid+"/generate", map[string]string{"through": "prps"}); code != 202 {
				t.Fatalf("generate: %d %s", code, body)
			}
			seen := w.until(time.Minute, "ready through prps", func(ev sse) bool {
				return ev.Data["status"] == "ready" && ev.Data["current_stage"] == "prps"
			})
			ids := map[int64]bool{first.ID: true}
			for _, ev := range seen[:len(seen)-1] {
				if ev.Data["status"] != "generating" || ev.Data["generating"] == nil {
					t.Errorf("an event before the end: %+v", ev)
				}
				if ids[ev.ID] {
					t.Errorf("id %d sent twice", ev.ID)
				}
				ids[ev.ID] = true
			}
			if len(seen) < 2 {
				t.Errorf("saw %d events for five stages, want the generating ones too", len(seen))
			}
			last := seen[len(seen)-1]

			// Reconnecting with the last id sends nothing until the next
			// change; without one, the current state at once.
			again := st.watchEvents(member, path, "Last-Event-ID", strconv.FormatInt(last.ID, 10))
			if ev, ok := again.next(700 * time.Millisecond); ok {
				t.Errorf("resumed at the last state, got %+v", ev)
			}
			fresh := st.watchEvents(member, "/api/v1"+path)
			if ev, ok := fresh.next(5 * time.Second); !ok || ev.ID != last.ID || ev.Data["status"] != "ready" {
				t.Errorf("a new watcher got %+v", ev)
			}

			// A content draft's progress.
			code, body, _ := st.call(member, "POST", "/content/briefs", map[string]any{
				"project_id": "web", "title": "Spring sale", "goal": "Announce the spring plans.", "channel": "blog",
				"format": "blog_post", "keywords": []string{"plans"}, "length": map[string]int{"min_words": 5, "max_words": 200},
			})
			var brief struct{ ID string }
			if err := json.Unmarshal(body, &brief); code != 201 || err != nil {
				t.Fatalf("create brief: %d %s", code, body)
			}
			st.model.Enqueue(fakeopenai.Text(`{"title":"Spring plans","body":"Plans that help every team ship faster this spring."}`).WithResponseDelay(300 * time.Millisecond))
			id := st.generate(member, brief.ID)
			items := st.watchEvents(member, "/content/"+id+"/events")
			got := items.until(30*time.Second, "a draft", func(ev sse) bool { return ev.Data["status"] == "draft" })
			if got[len(got)-1].Name != "item" || got[len(got)-1].Data["title"] != "Spring plans" {
				t.Errorf("content events %+v", got)
			}
			for _, p := range []string{"/content/" + id + "/nothing", "/content/briefs/" + brief.ID} {
				code, _, _ := st.call(member, "GET", p, nil)
				if want := map[bool]int{true: 404, false: 200}[strings.HasSuffix(p, "nothing")]; code != want {
					t.Errorf("GET %s: %d, want %d", p, code, want)
				}
			}
			outsider, err := st.id.IssueToken(t.Context(), identity.IssueTokenInput{Email: "mallory@example.com", OrgName: "globex"})
			if err != nil {
				t.Fatal(err)
			}
			if code, _, _ := st.call(outsider.Token, "GET", "/content/"+id+"/events", nil); code != 404 {
				t.Errorf("another org's item events: %d", code)
			}
		})
	}
}
