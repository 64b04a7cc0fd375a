package app_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/app"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
	"github.com/devpilot/devpilot/ports"
)

// durableReplicas is how many replicas a dialect runs: SQLite has one
// writer, so one process; PostgreSQL two, behind one load balancer.
func durableReplicas(d sqlstore.Dialect) int {
	if d == sqlstore.DialectPostgres {
		return 2
	}
	return 1
}

// answerFor is the fake model's answer to a message: distinct per message,
// in many small deltas.
func answerFor(msg string) []string {
	parts := []string{"Answer to «" + msg + "»:"}
	for i := range 12 {
		parts = append(parts, fmt.Sprintf(" part %d of %s;", i, msg))
	}
	return parts
}

// lastUserText is the text of a model request's last user message, as the
// user wrote it.
func lastUserText(r *fakeopenai.Request) string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" { // the user's text follows the request's context
			c := r.Messages[i].Content
			if _, after, ok := strings.Cut(c, "</request_context>\n\n"); ok {
				return after
			}
			return c
		}
	}
	return ""
}

// liveStream is an SSE response read event by event.
type liveStream struct {
	t      *testing.T
	resp   *http.Response
	sc     *bufio.Scanner
	cancel context.CancelFunc
}

// open sends a request whose answer is an event stream, bounded by a
// minute; close drops the connection.
func (st *stack) open(token, method, path string, body any, header ...string) *liveStream {
	st.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = strings.NewReader(string(b))
	}
	req, _ := http.NewRequestWithContext(ctx, method, st.base+path, rd)
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		st.t.Fatalf("%s %s: %v", method, path, err)
	}
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		st.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	return &liveStream{t: st.t, resp: resp, sc: sc, cancel: cancel}
}

// next reads the next event; ok is false at the end of the stream.
func (s *liveStream) next() (ev sse, ok bool) {
	s.t.Helper()
	for s.sc.Scan() {
		line := s.sc.Text()
		switch {
		case line == "" && ev.Name != "":
			return ev, true
		case strings.HasPrefix(line, "id: "):
			ev.ID, _ = strconv.ParseInt(line[4:], 10, 64)
		case strings.HasPrefix(line, "event: "):
			ev.Name = line[7:]
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(line[6:]), &ev.Data); err != nil {
				s.t.Errorf("data is not JSON: %q", line)
			}
		}
	}
	return ev, false
}

// rest reads the stream to its end.
func (s *liveStream) rest() []sse {
	var out []sse
	for {
		ev, ok := s.next()
		if !ok {
			return out
		}
		out = append(out, ev)
	}
}

func (s *liveStream) close() {
	s.cancel()
	s.resp.Body.Close()
}

// deltas concatenates the content deltas of evs.
func deltas(evs []sse) string {
	var b strings.Builder
	for _, ev := range evs {
		if ev.Name == "content" {
			b.WriteString(ev.Data["delta"].(string))
		}
	}
	return b.String()
}

// TestChatOutlivesItsConnection: 100 clients each drop their chat after
// its first content event and resume it on the other replica (the same one
// on SQLite) with Last-Event-ID: every answer arrives whole, byte for byte
// the answer of an uninterrupted chat, ending with done. A chat POST that
// carries Last-Event-ID is refused, and a finished turn replays through
// its done.
func TestChatOutlivesItsConnection(t *testing.T) {
	t.Parallel()
	for _, c := range stackCases() {
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			d := c.dialect
			stacks := startReplicasOn(t, c, durableReplicas(d), map[string]string{app.EnvMaxTurnsPerUser: "0", app.EnvRateRequests: "0"})
			on := func(i int) *stack { return stacks[i%len(stacks)] }
			stacks[0].model.SetResponder(func(r *fakeopenai.Request) fakeopenai.Response {
				return fakeopenai.TextChunks(answerFor(lastUserText(r))...).WithTokenDelay(5 * time.Millisecond)
			})
			token := stacks[0].token("alice@example.com")

			// The uninterrupted run.
			code, body, evs := on(0).call(token, "POST", "/api/v1/agent/chat", map[string]any{"message": "whole"}, "Accept", "text/event-stream")
			if code != 200 || !strings.HasSuffix(names(evs), "done") {
				t.Fatalf("uninterrupted chat: %d %s", code, body)
			}
			if got, want := deltas(evs), strings.Join(answerFor("whole"), ""); got != want {
				t.Fatalf("uninterrupted answer %q, want %q", got, want)
			}

			const clients, batch = 100, 10 // batched, so -race on two cores stays well within its bounds
			type dropped struct {
				session string
				firstID int64
				first   string
			}
			drops := make([]dropped, clients)
			for lo := 0; lo < clients; lo += batch {
				var wg sync.WaitGroup
				for i := lo; i < lo+batch; i++ {
					wg.Go(func() {
						msg := fmt.Sprintf("question %d", i)
						s := on(i).open(token, "POST", "/api/v1/agent/chat", map[string]any{"message": msg})
						ev, ok := s.next()
						for ok && ev.Name != "content" {
							ev, ok = s.next()
						}
						s.close() // the client drops after its first content event
						if !ok {
							t.Errorf("client %d: no content event", i)
							return
						}
						drops[i] = dropped{session: ev.Data["session_id"].(string), firstID: ev.ID, first: ev.Data["delta"].(string)}
						rs := on(i+1).open(token, "GET", "/api/v1/agent/sessions/"+drops[i].session+"/stream", nil,
							"Last-Event-ID", strconv.FormatInt(ev.ID, 10))
						defer rs.close()
						rest := rs.rest()
						if n := len(rest); n == 0 || rest[n-1].Name != "done" || rest[n-1].Data["finish_reason"] != "stop" {
							t.Errorf("client %d: resumed stream %s", i, names(rest))
							return
						}
						if got, want := drops[i].first+deltas(rest), strings.Join(answerFor(msg), ""); got != want {
							t.Errorf("client %d: answer %q, want %q", i, got, want)
						}
					})
				}
				wg.Wait()
				if t.Failed() {
					t.FailNow()
				}
			}

			// Resuming a turn that has finished replays it through its done.
			dr := drops[7]
			code, body, evs = on(1).call(token, "GET", "/api/v1/agent/sessions/"+dr.session+"/stream", nil,
				"Last-Event-ID", strconv.FormatInt(dr.firstID, 10))
			if code != 200 || dr.first+deltas(evs) != strings.Join(answerFor("question 7"), "") || find(evs, "done").Data["finish_reason"] != "stop" {
				t.Errorf("replay of a finished turn: %d %s", code, body)
			}
			// Every answer is stored whole.
			code, body, _ = on(0).call(token, "GET", "/api/v1/agent/sessions/"+dr.session, nil)
			if code != 200 || !strings.Contains(string(body), strings.Join(answerFor("question 7"), "")[20:]) {
				t.Errorf("session after the resumed turn: %d %s", code, body)
			}

			// Reconnecting by sending the message again is refused.
			code, body, _ = on(1).call(token, "POST", "/api/v1/agent/chat", map[string]any{"message": "question 7", "session_id": dr.session},
				"Last-Event-ID", strconv.FormatInt(dr.firstID, 10))
			var p struct {
				Code string `json:"code"`
			}
			if code != http.StatusConflict || json.Unmarshal(body, &p) != nil || p.Code != "resume_through_stream" {
				t.Errorf("chat POST with Last-Event-ID: %d %s, want 409 resume_through_stream", code, body)
			}
		})
	}
}

// TestStopFromTheOtherReplica: a user stops a turn through the other
// replica; the turn's own stream ends with done{finish_reason:"stopped"}
// and no tool call is started. Nothing runs then: a second stop is 409;
// another user's session is 404.
func TestStopFromTheOtherReplica(t *testing.T) {
	t.Parallel()
	for _, c := range stackCases() {
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			d := c.dialect
			stacks := startReplicasOn(t, c, durableReplicas(d), nil)
			on := func(i int) *stack { return stacks[i%len(stacks)] }
			long := make([]string, 400)
			for i := range long {
				long[i] = fmt.Sprintf(" word %d", i)
			}
			stacks[0].model.SetResponder(func(*fakeopenai.Request) fakeopenai.Response {
				return fakeopenai.TextChunks(long...).WithTokenDelay(50 * time.Millisecond)
			})
			alice, bob := stacks[0].token("alice@example.com"), stacks[0].token("bob@example.com")

			s := on(0).open(alice, "POST", "/api/v1/agent/chat", map[string]any{"message": "talk for a long time"})
			defer s.close()
			first, ok := s.next()
			for ok && first.Name != "content" {
				first, ok = s.next()
			}
			if !ok {
				t.Fatal("no content event")
			}
			session := first.Data["session_id"].(string)
			stop := "/api/v1/agent/sessions/" + session + "/stop"
			if code, body, _ := on(1).call(bob, "POST", stop, nil); code != http.StatusNotFound {
				t.Errorf("bob stops alice's turn: %d %s, want 404", code, body)
			}
			code, body, _ := on(1).call(alice, "POST", stop, nil)
			var stopped struct {
				SessionID string `json:"session_id"`
				TurnID    string `json:"turn_id"`
				Status    string `json:"status"`
			}
			if code != http.StatusAccepted || json.Unmarshal(body, &stopped) != nil || stopped.SessionID != session || stopped.Status != "stopping" {
				t.Fatalf("stop: %d %s", code, body)
			}
			rest := s.rest()
			n := len(rest)
			if n == 0 || rest[n-1].Name != "done" || rest[n-1].Data["finish_reason"] != "stopped" || strings.Contains(names(rest), "error") {
				t.Fatalf("the stopped turn's stream: %s", names(rest))
			}
			if strings.Count(first.Data["delta"].(string)+deltas(rest), "word") >= len(long) {
				t.Error("the whole answer arrived: the stop did not stop it")
			}
			code, body, _ = on(1).call(alice, "POST", stop, nil)
			var p struct {
				Code string `json:"code"`
			}
			if code != http.StatusConflict || json.Unmarshal(body, &p) != nil || p.Code != "no_turn_running" {
				t.Errorf("stop with nothing running: %d %s, want 409 no_turn_running", code, body)
			}
			// The session goes on.
			stacks[0].model.SetResponder(func(*fakeopenai.Request) fakeopenai.Response { return fakeopenai.Text("again") })
			if code, body, evs := on(1).call(alice, "POST", "/api/v1/agent/chat", map[string]any{"message": "go on", "session_id": session}); code != 200 || find(evs, "done").Data["finish_reason"] != "stop" {
				t.Errorf("chat after the stop: %d %s", code, body)
			}
		})
	}
}

// TestLostTurnEndsItsStream: a turn whose replica died (it stored an event,
// then nothing heartbeats it) is ended once its lease is over: a client
// resuming it on a live replica gets what was stored, then error
// (turn_lost) and done, and never waits past the lease.
func TestLostTurnEndsItsStream(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			url := sqlstoretest.URL(t, d)
			stacks := startReplicas(t, d, durableReplicas(d), map[string]string{app.EnvDatabaseURL: url, app.EnvTurnLease: "1s"})
			on := func(i int) *stack { return stacks[i%len(stacks)] }
			stacks[0].model.SetResponder(func(*fakeopenai.Request) fakeopenai.Response { return fakeopenai.Text("hello there") })
			alice := stacks[0].token("alice@example.com")
			code, body, evs := on(0).call(alice, "POST", "/api/v1/agent/chat", map[string]any{"message": "hi"})
			if code != 200 {
				t.Fatalf("chat: %d %s", code, body)
			}
			session := find(evs, "done").Data["session_id"].(string)
			last := evs[len(evs)-1].ID

			// The dead replica's turn: started, one delta stored, then silence.
			db := sqlstoretest.OpenURL(t, url)
			store := sqlstore.NewAssistant(db)
			ctx := context.Background()
			dead := ports.Turn{ID: "01900000-0000-7000-8000-00000000dead", SessionID: session, StartedAt: time.Now()}
			if err := store.StartTurn(ctx, dead, time.Time{}, 0); err != nil {
				t.Fatal(err)
			}
			if err := store.AppendEvents(ctx, ports.StreamEvent{SessionID: session, Seq: last + 1, TurnID: dead.ID, Name: "content",
				Data: json.RawMessage(`{"session_id":"` + session + `","message_id":"m","delta":"half an"}`), CreatedAt: time.Now()}); err != nil {
				t.Fatal(err)
			}

			s := on(1).open(alice, "GET", "/api/v1/agent/sessions/"+session+"/stream", nil, "Last-Event-ID", strconv.FormatInt(last, 10))
			defer s.close()
			rest := s.rest() // bounded by open's minute; the lease is a second
			if names(rest) != "content,error,done" || rest[1].Data["code"] != "turn_lost" || rest[2].Data["finish_reason"] != "error" {
				t.Fatalf("the lost turn's stream: %s", names(rest))
			}
			if code, body, evs := on(0).call(alice, "POST", "/api/v1/agent/chat", map[string]any{"message": "again", "session_id": session}); code != 200 || find(evs, "done").Data["finish_reason"] != "stop" {
				t.Errorf("chat after the lost turn: %d %s", code, body)
			}
		})
	}
}

// TestShutdownEndsTheTurnsItRuns: a replica that stops while a turn runs
// on without its client ends the turn within its shutdown grace, stored as
// cancelled (error, then done), never left running.
func TestShutdownEndsTheTurnsItRuns(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			url := sqlstoretest.URL(t, d)
			stacks := startReplicas(t, d, 1, map[string]string{app.EnvDatabaseURL: url, app.EnvShutdownGrace: "2s"})
			long := make([]string, 400)
			for i := range long {
				long[i] = fmt.Sprintf(" word %d", i)
			}
			stacks[0].model.SetResponder(func(*fakeopenai.Request) fakeopenai.Response {
				return fakeopenai.TextChunks(long...).WithTokenDelay(50 * time.Millisecond)
			})
			alice := stacks[0].token("alice@example.com")
			s := stacks[0].open(alice, "POST", "/api/v1/agent/chat", map[string]any{"message": "talk for a long time"})
			first, ok := s.next()
			for ok && first.Name != "content" {
				first, ok = s.next()
			}
			s.close()
			if !ok {
				t.Fatal("no content event")
			}
			session := first.Data["session_id"].(string)
			if err := stacks[0].stop(); err != nil {
				t.Fatalf("stop: %v", err)
			}

			db := sqlstoretest.OpenURL(t, url)
			store := sqlstore.NewAssistant(db)
			ctx := context.Background()
			if tu, err := store.RunningTurn(ctx, session); err == nil {
				t.Fatalf("turn %s still runs after the shutdown", tu.ID)
			}
			evs, err := store.ListEvents(ctx, session, 0, 1000)
			if err != nil || len(evs) < 3 {
				t.Fatalf("events %d, %v", len(evs), err)
			}
			errEv, done := evs[len(evs)-2], evs[len(evs)-1]
			if errEv.Name != "error" || !strings.Contains(string(errEv.Data), `"cancelled"`) || done.Name != "done" {
				t.Errorf("the turn ended with %s %s, %s %s; want error cancelled, done", errEv.Name, errEv.Data, done.Name, done.Data)
			}
		})
	}
}

// TestTurnLeaseVariable checks DEVPILOT_TURN_LEASE's default and range.
func TestTurnLeaseVariable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value string
		want  time.Duration
		ok    bool
	}{{"", 20 * time.Second, true}, {"1s", time.Second, true}, {"2m", 2 * time.Minute, true}, {"500ms", 0, false}, {"-1s", 0, false}, {"soon", 0, false}} {
		cfg, err := app.Load(app.ModeServe, env(map[string]string{app.EnvDatabaseURL: "postgres://db/x", app.EnvSecretKey: validKey, app.EnvTurnLease: tc.value}))
		switch {
		case tc.ok && (err != nil || cfg.Assistant.TurnLease != tc.want):
			t.Errorf("%q: %v, %v; want %v", tc.value, cfg.Assistant.TurnLease, err, tc.want)
		case !tc.ok && (err == nil || !strings.Contains(err.Error(), app.EnvTurnLease)):
			t.Errorf("%q: %v, want an error naming %s", tc.value, err, app.EnvTurnLease)
		}
	}
}
