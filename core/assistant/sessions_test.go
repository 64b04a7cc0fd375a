package assistant_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/devpilot/devpilot/core/assistant"
	"github.com/devpilot/devpilot/ports"
)

func TestGenerateTitle(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("deploy the billing service ", 10)
	tests := []struct {
		name, answer, want string
	}{
		{"plain", "Deploying the billing service", "Deploying the billing service"},
		{"quoted", `"Deploying the billing service"`, "Deploying the billing service"},
		{"curly quotes and period", "“Billing deploy.”", "Billing deploy"},
		{"labelled, second line dropped", "Title: 'Billing deploy'\nBecause the user asked.", "Billing deploy"},
		{"markdown", "**Billing deploy**", "Billing deploy"},
		{"empty answer falls back to the question", "  \"\" ", "Please deploy billing"},
		{"too long", long, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, assistant.Config{})
			e.script(say("Sure."))
			sid, _ := e.chat(as(alice), assistant.ChatInput{Message: "Please deploy billing"})
			e.script(func(_ context.Context, req ports.ChatRequest, onDelta func(string) error) (ports.ChatResult, error) {
				if onDelta != nil || len(req.Tools) != 0 || !strings.Contains(req.Messages[1].Content, "User: Please deploy billing") ||
					!strings.Contains(req.Messages[1].Content, "Assistant: Sure.") {
					t.Errorf("title request %+v", req)
				}
				return ports.ChatResult{Content: tt.answer, FinishReason: ports.FinishStop}, nil
			})
			title, err := e.svc.GenerateTitle(as(alice), sid)
			if err != nil {
				t.Fatal(err)
			}
			if tt.want != "" && title != tt.want {
				t.Errorf("title %q, want %q", title, tt.want)
			}
			if n := utf8.RuneCountInString(title); n == 0 || n > 80 {
				t.Errorf("title %q has %d characters", title, n)
			}
			if tt.want == "" && !strings.HasSuffix(title, "…") {
				t.Errorf("a cut title %q has no ellipsis", title)
			}
			if stored, err := e.store.GetSession(context.Background(), alice.Owner(), sid); err != nil || stored.Title != title {
				t.Errorf("stored %q, %v", stored.Title, err)
			}
		})
	}
}

func TestGenerateTitleRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{})
	sess := ports.ChatSession{ID: projectID, OrgID: alice.OrgID, UserID: alice.UserID, CreatedAt: e.clock.Now()}
	if err := e.store.CreateSession(context.Background(), sess); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.GenerateTitle(as(alice), sess.ID); !errors.Is(err, ports.ErrConflict) || errCode(err) != "empty_session" {
		t.Errorf("empty session: %v", err)
	}
	if _, err := e.svc.GenerateTitle(as(bob), sess.ID); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("another's session: %v", err)
	}
	if _, err := e.svc.GenerateTitle(as(alice), "x"); !errors.Is(err, ports.ErrInvalid) {
		t.Errorf("malformed id: %v", err)
	}
	err := e.store.AppendMessages(context.Background(), ports.ChatMessage{ID: e.ids.NewID(), SessionID: sess.ID, CreatedAt: e.clock.Now(),
		Message: ports.Message{Role: ports.MessageUser, Content: "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	e.script(fail(&ports.Error{Kind: ports.KindRateLimited, Message: "slow down"}))
	if _, err := e.svc.GenerateTitle(as(alice), sess.ID); !errors.Is(err, ports.ErrRateLimited) {
		t.Errorf("model failure: %v", err)
	}
}

func TestSetPreferences(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		in    []string
		field string
	}{
		{"too many", slices.Repeat([]string{"x"}, 51), "preferences"},
		{"blank", []string{"ok", "  "}, "preferences[1].instruction"},
		{"too long", []string{strings.Repeat("é", 501)}, "preferences[0].instruction"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, _, err := newEnv(t, assistant.Config{}).svc.SetPreferences(as(alice), tt.in)
			pe, ok := ports.AsError(err)
			if !ok || pe.Kind != ports.KindInvalid || pe.Fields[0].Field != tt.field {
				t.Fatalf("err = %#v, want invalid on %s", err, tt.field)
			}
		})
	}
	t.Run("replaces, trims and keeps unchanged ones", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, assistant.Config{})
		first, _, err := e.svc.SetPreferences(as(alice), []string{" Be terse. ", "Use metric units."})
		if err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Hour)
		second, at, err := e.svc.SetPreferences(as(alice), append(slices.Repeat([]string{"x"}, 48), "Be terse.", strings.Repeat("é", 500)))
		if err != nil {
			t.Fatal(err)
		}
		if len(second) != 50 || second[48].ID != first[0].ID || !second[48].CreatedAt.Equal(first[0].CreatedAt) || !at.Equal(e.clock.Now()) {
			t.Errorf("second list %+v at %v", second[48], at)
		}
		got, when, err := e.svc.Preferences(as(alice))
		if err != nil || len(got) != 50 || when == nil || !when.Equal(at) {
			t.Errorf("Preferences = %d items at %v, %v", len(got), when, err)
		}
		if got, _, _ := e.svc.Preferences(as(bob)); len(got) != 0 {
			t.Error("bob sees alice's preferences")
		}
		if cleared, _, err := e.svc.SetPreferences(as(alice), nil); err != nil || len(cleared) != 0 {
			t.Errorf("clearing: %v %v", cleared, err)
		}
	})
}

func TestReplay(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{})
	e.script(say("a", "b", "c"))
	sid, evs := e.chat(as(alice), assistant.ChatInput{Message: "hi"})

	collect := func(ctx context.Context, after int64) ([]int64, bool, error) {
		var seqs []int64
		ok, err := e.svc.Replay(ctx, sid, after, func(ev assistant.Event) error { seqs = append(seqs, ev.Seq); return nil })
		return seqs, ok, err
	}
	seqs, ok, err := collect(as(alice), 2)
	if err != nil || !ok || !slices.Equal(seqs, []int64{3, 4}) {
		t.Errorf("after 2: %v %v %v", seqs, ok, err)
	}
	if seqs, ok, err := collect(as(alice), evs[len(evs)-1].Seq); err != nil || ok || len(seqs) != 0 {
		t.Errorf("nothing left: %v %v %v", seqs, ok, err)
	}
	if _, _, err := collect(as(bob), 0); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("another's session: %v", err)
	}
	if _, _, err := collect(as(alice), -5); err != nil {
		t.Errorf("negative after: %v", err)
	}
}

// ReplayBatches hands over the events it read together in one batch, in
// order, for the transport to send in one write.
func TestReplayBatchesSendsWhatWasReadTogether(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{})
	e.script(say("a", "b", "c"))
	sid, evs := e.chat(as(alice), assistant.ChatInput{Message: "hi"})
	var batches [][]assistant.Event
	ok, err := e.svc.ReplayBatches(as(alice), sid, 1, func(b []assistant.Event) error { batches = append(batches, b); return nil })
	if err != nil || !ok {
		t.Fatalf("ReplayBatches = %v, %v", ok, err)
	}
	if len(batches) != 1 || len(batches[0]) != len(evs)-1 {
		t.Fatalf("batches %v, want one of %d events", batches, len(evs)-1)
	}
	for i, ev := range batches[0] {
		if ev.Seq != evs[i+1].Seq || ev.Name != evs[i+1].Name {
			t.Errorf("event %d: %d %s, want %d %s", i, ev.Seq, ev.Name, evs[i+1].Seq, evs[i+1].Name)
		}
	}
}

func TestReplayFollowsTheRunningTurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{})
	e.script(say("one"))
	sid, _ := e.chat(as(alice), assistant.ChatInput{Message: "hi"})

	// A turn runs on "another replica": its events arrive while Replay
	// follows, delivered as Replay asks for them.
	release := make(chan struct{})
	e.script(func(_ context.Context, _ ports.ChatRequest, onDelta func(string) error) (ports.ChatResult, error) {
		_ = onDelta("two ")
		<-release
		_ = onDelta("three")
		return ports.ChatResult{Content: "two three", FinishReason: ports.FinishStop}, nil
	})
	run, err := e.svc.Chat(as(alice), assistant.ChatInput{SessionID: sid, Message: "more"})
	if err != nil {
		t.Fatal(err)
	}
	streamed := make(chan error, 1)
	go func() { streamed <- run.Stream(as(alice), func(assistant.Event) error { return nil }) }()

	var got []assistant.Event
	ok, err := e.svc.Replay(as(alice), sid, 2, func(ev assistant.Event) error {
		got = append(got, ev)
		if len(got) == 1 {
			close(release) // the turn goes on once the follower has seen its first event
		}
		return nil
	})
	if err != nil || !ok {
		t.Fatalf("Replay = %v, %v", ok, err)
	}
	if err := <-streamed; err != nil {
		t.Fatal(err)
	}
	if want := []string{"content", "content", "done"}; !slices.Equal(names(got), want) {
		t.Fatalf("followed %v, want %v", names(got), want)
	}
	if got[0].Seq != 3 || got[2].TurnID != run.TurnID() {
		t.Errorf("events %+v", got)
	}
}

func TestReplayStopsWhenTheTurnDiesWithoutDone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{})
	e.script(say("one"))
	sid, _ := e.chat(as(alice), assistant.ChatInput{Message: "hi"})
	// A running turn whose process died: it is stale, so Replay does not wait for it.
	if err := e.store.StartTurn(context.Background(), ports.Turn{ID: "dead", SessionID: sid, StartedAt: e.clock.Now().Add(-time.Hour)}, time.Time{}, 0); err != nil {
		t.Fatal(err)
	}
	var n int
	ok, err := e.svc.Replay(as(alice), sid, 0, func(assistant.Event) error { n++; return nil })
	if err != nil || !ok || n != 2 {
		t.Errorf("Replay = %v, %v after %d events", ok, err, n)
	}
}

func TestReplayEndsWithItsContext(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{ReplayPoll: time.Hour})
	run, err := e.svc.Chat(as(alice), assistant.ChatInput{Message: "hi"}) // a turn that runs and says nothing
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(as(alice))
	cancel()
	ok, err := e.svc.Replay(ctx, run.SessionID(), 0, func(assistant.Event) error { return nil })
	if err != nil || !ok {
		t.Errorf("Replay = %v, %v; want true (a turn was running), nil", ok, err)
	}
}

func TestSessionsListGetDelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{})
	var runs counter
	sid, confs := pendingWrites(t, e, &runs, "c1")

	for _, limit := range []int{-1, 201} {
		if _, _, err := e.svc.ListSessions(as(alice), ports.Page{Limit: limit}); !errors.Is(err, ports.ErrInvalid) {
			t.Errorf("limit %d: %v", limit, err)
		}
	}
	if _, _, err := e.svc.ListSessions(as(alice), ports.Page{}); err != nil {
		t.Errorf("default limit: %v", err)
	}

	e.clock.Advance(20 * time.Minute)
	d, err := e.svc.GetSession(as(alice), sid)
	if err != nil {
		t.Fatal(err)
	}
	if d.Session.ID != sid || len(d.Messages) != 2 || len(d.Confirmations) != 1 ||
		d.Confirmations[0].ID != confs[0].ID || d.Confirmations[0].Status != ports.ConfirmationExpired {
		t.Errorf("detail %+v", d)
	}
	if _, err := e.svc.GetSession(as(bob), sid); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("another's: %v", err)
	}
	if err := e.svc.DeleteSession(as(bob), sid); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("delete another's: %v", err)
	}
	if err := e.svc.DeleteSession(as(alice), sid); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.GetSession(as(alice), sid); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("after delete: %v", err)
	}
	if _, err := e.svc.GetSession(context.Background(), sid); !errors.Is(err, ports.ErrUnauthenticated) {
		t.Errorf("no principal: %v", err)
	}
}

func TestSearchSessionsChecksQ(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{})
	for _, q := range []string{strings.Repeat("é", assistant.MaxSearchLength+1), "a\x00b", "line\nbreak", "\x7f", "bad\xffutf8"} {
		_, _, err := e.svc.SearchSessions(as(alice), q, ports.Page{})
		pe, ok := ports.AsError(err)
		if !ok || pe.Kind != ports.KindInvalid || len(pe.Fields) != 1 || pe.Fields[0].Field != "q" {
			t.Errorf("q %.20q: %v, want invalid naming q", q, err)
		}
	}
	for _, q := range []string{"", "checkout", strings.Repeat("é", assistant.MaxSearchLength)} {
		if _, _, err := e.svc.SearchSessions(as(alice), q, ports.Page{}); err != nil {
			t.Errorf("q %.20q: %v", q, err)
		}
	}
	if _, _, err := e.svc.SearchSessions(context.Background(), "x", ports.Page{}); err == nil {
		t.Error("a search without a principal went through")
	}
}
