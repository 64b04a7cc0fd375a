package assistant_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/devpilot/devpilot/core/assistant"
	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/ports"
)

const projectID = "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"

var projectArgs = `{"project_id":"` + projectID + `"}`

func TestChatStreamsTextAndStoresIt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{})
	e.script(say("Hel", "lo", " there"))

	sid, evs := e.chat(as(alice), assistant.ChatInput{Message: "  hi  "})

	if want := []string{"content", "content", "content", "done"}; !slices.Equal(names(evs), want) {
		t.Fatalf("events %v, want %v", names(evs), want)
	}
	var text string
	for i, c := range only[assistant.ContentData](t, evs, assistant.EventContent) {
		text += c.Delta
		if c.SessionID != sid || c.MessageID == "" {
			t.Errorf("content %d: %+v", i, c)
		}
	}
	if text != "Hello there" {
		t.Errorf("streamed %q", text)
	}
	for i, ev := range evs {
		if ev.Seq != int64(i+1) || ev.SessionID != sid || ev.TurnID == "" {
			t.Errorf("event %d: seq %d session %s turn %s", i, ev.Seq, ev.SessionID, ev.TurnID)
		}
	}
	done := decode[assistant.DoneData](t, evs[3])
	msgs := e.messages(sid)
	if len(msgs) != 2 || msgs[0].Role != ports.MessageUser || msgs[0].Content != "hi" ||
		msgs[1].Role != ports.MessageAssistant || msgs[1].Content != "Hello there" {
		t.Fatalf("stored messages %+v", msgs)
	}
	if done.FinishReason != "stop" || done.MessageID != msgs[1].ID || done.Usage != (assistant.UsageData{PromptTokens: 10, CompletionTokens: 5}) {
		t.Errorf("done %+v", done)
	}
	if got := len(e.storedEvents(sid)); got != 4 {
		t.Errorf("%d events stored, want 4", got)
	}
	e.endedOnce()
	req := e.requests()[0]
	if req.MaxTokens != 4096 || req.Messages[0].Role != ports.MessageSystem || !strings.HasSuffix(req.Messages[1].Content, "</request_context>\n\nhi") {
		t.Errorf("request %+v", req)
	}
}

func TestChatContinuesSessionNumberingEventsOn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{})
	e.script(say("one"), say("two"))
	sid, first := e.chat(as(alice), assistant.ChatInput{Message: "first"})
	_, second := e.chat(as(alice), assistant.ChatInput{SessionID: sid, Message: "second"})
	if first[len(first)-1].Seq != 2 || second[0].Seq != 3 || second[1].Seq != 4 {
		t.Errorf("seqs %d, then %d %d", first[len(first)-1].Seq, second[0].Seq, second[1].Seq)
	}
	msgs := e.requests()[1].Messages
	if len(msgs) != 4 || msgs[1].Content != "first" || msgs[2].Content != "one" || !strings.HasSuffix(msgs[3].Content, "</request_context>\n\nsecond") {
		t.Errorf("history %+v", msgs)
	}
}

func TestChatRunsReadToolsThenAnswers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{})
	var runs counter
	e.register(readTool("get_project", &runs, map[string]string{"name": "Apollo"}))
	e.script(
		func(_ context.Context, req ports.ChatRequest, onDelta func(string) error) (ports.ChatResult, error) {
			if len(req.Tools) != 1 || req.Tools[0].Name != "get_project" {
				t.Errorf("tools %+v", req.Tools)
			}
			_ = onDelta("Looking.")
			args := "{\n  \"project_id\": \"" + projectID + "\"\n}"
			return ports.ChatResult{Content: "Looking.", ToolCalls: []ports.ToolCall{{ID: "c1", Name: "get_project", Arguments: args}},
				FinishReason: ports.FinishToolCalls, Usage: usage}, nil
		},
		say("It is\nApollo."),
	)
	sid, evs := e.chat(as(alice), assistant.ChatInput{Message: "which project?"})

	want := []string{"content", "tool_call", "tool_result", "content", "done"}
	if !slices.Equal(names(evs), want) {
		t.Fatalf("events %v, want %v", names(evs), want)
	}
	tc := decode[assistant.ToolCallData](t, evs[1])
	if tc.ToolCallID != "c1" || tc.Name != "get_project" || string(tc.Arguments) != projectArgs {
		t.Errorf("tool_call %+v", tc)
	}
	tr := decode[assistant.ToolResultData](t, evs[2])
	if !tr.OK || string(tr.Result) != `{"name":"Apollo"}` || tr.ToolCallID != "c1" {
		t.Errorf("tool_result %+v", tr)
	}
	if runs.runs() != 1 {
		t.Errorf("tool ran %d times", runs.runs())
	}
	second := e.requests()[1].Messages
	n := len(second)
	if second[n-2].Role != ports.MessageAssistant || second[n-2].ToolCalls[0].ID != "c1" ||
		second[n-1].Role != ports.MessageTool || second[n-1].ToolCallID != "c1" || !strings.Contains(second[n-1].Content, "Apollo") {
		t.Errorf("second request ends %+v", second[n-2:])
	}
	done := decode[assistant.DoneData](t, evs[4])
	msgs := e.messages(sid)
	if done.FinishReason != "stop" || done.MessageID != msgs[len(msgs)-1].ID || done.Usage.PromptTokens != 20 || done.Usage.CompletionTokens != 10 {
		t.Errorf("done %+v", done)
	}
	roles := []ports.MessageRole{}
	for _, m := range msgs {
		roles = append(roles, m.Role)
	}
	if !slices.Equal(roles, []ports.MessageRole{"user", "assistant", "tool", "assistant"}) {
		t.Errorf("stored roles %v", roles)
	}
}

func TestChatAsksToConfirmWritesWithoutRunningThem(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{})
	var runs counter
	e.register(writeTool("deploy_service", &runs, "deployed"))
	e.script(call("c1", "deploy_service", projectArgs))

	sid, evs := e.chat(as(alice), assistant.ChatInput{Message: "deploy"})

	if want := []string{"tool_call", "confirmation_required", "done"}; !slices.Equal(names(evs), want) {
		t.Fatalf("events %v, want %v", names(evs), want)
	}
	if runs.runs() != 0 {
		t.Fatal("a write ran without confirmation")
	}
	cr := decode[assistant.ConfirmationRequiredData](t, evs[1])
	confs := e.confirmations(sid)
	if len(confs) != 1 {
		t.Fatalf("%d confirmations stored", len(confs))
	}
	c := confs[0]
	if cr.ConfirmationID != c.ID || cr.ToolCallID != "c1" || cr.Name != "deploy_service" || string(cr.Arguments) != projectArgs ||
		cr.Summary != "Run deploy_service on project "+projectID+"." || !cr.ExpiresAt.Equal(e.clock.Now().Add(15*time.Minute)) {
		t.Errorf("confirmation_required %+v", cr)
	}
	if c.Status != ports.ConfirmationPending || c.SessionID != sid || c.UserID != alice.UserID || c.OrgID != alice.OrgID ||
		c.TurnID != evs[0].TurnID || c.Summary != cr.Summary {
		t.Errorf("stored confirmation %+v", c)
	}
	if done := decode[assistant.DoneData](t, evs[2]); done.FinishReason != "confirmation_required" {
		t.Errorf("done %+v", done)
	}
	e.endedOnce()
}

func TestChatRefusesBadToolCallsAndGoesOn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, tl, args, problem string
		rawArgs                 bool
	}{
		{"arguments not JSON", "get_project", `{"project_id": `, "not valid JSON", true},
		{"arguments not JSON at all", "get_project", `deploy it`, "not valid JSON", true},
		{"missing property", "get_project", `{}`, "missing property 'project_id'", false},
		{"wrong format", "get_project", `{"project_id":"nope"}`, "not valid uuid", false},
		{"extra property", "get_project", `{"project_id":"` + projectID + `","x":1}`, "additional properties", false},
		{"unknown tool", "drop_database", `{}`, `unknown tool "drop_database"`, false},
		{"empty name", "", `{}`, `unknown tool ""`, false},
		{"write with bad arguments", "deploy_service", `{"project_id":5}`, "want string", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, assistant.Config{})
			var reads, writes counter
			e.register(readTool("get_project", &reads, "x"), writeTool("deploy_service", &writes, "x"))
			e.script(call("c1", tt.tl, tt.args), say("Sorry."))

			sid, evs := e.chat(as(alice), assistant.ChatInput{Message: "go"})

			if want := []string{"tool_call", "tool_result", "content", "done"}; !slices.Equal(names(evs), want) {
				t.Fatalf("events %v, want %v", names(evs), want)
			}
			if reads.runs()+writes.runs() != 0 || len(e.confirmations(sid)) != 0 {
				t.Fatal("a refused call ran or asked for confirmation")
			}
			tc := decode[assistant.ToolCallData](t, evs[0])
			if tt.rawArgs {
				var s string
				if err := json.Unmarshal(tc.Arguments, &s); err != nil || s != tt.args {
					t.Errorf("tool_call arguments %s, want the raw string", tc.Arguments)
				}
			}
			tr := decode[assistant.ToolResultData](t, evs[1])
			if tr.OK || !strings.Contains(tr.Error, tt.problem) {
				t.Errorf("tool_result %+v, want an error with %q", tr, tt.problem)
			}
			last := e.requests()[1].Messages
			if a := last[len(last)-1]; a.Role != ports.MessageTool || !strings.Contains(a.Content, `"ok":false`) {
				t.Errorf("the model was not told: %+v", a)
			}
			if done := decode[assistant.DoneData](t, evs[3]); done.FinishReason != "stop" {
				t.Errorf("done %+v", done)
			}
			if msgs := e.messages(sid); len(msgs) != 4 {
				t.Errorf("%d messages stored", len(msgs))
			}
		})
	}
}

func TestChatStopsAnEndlessToolLoop(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{MaxToolRounds: 2})
	var runs counter
	e.register(readTool("get_project", &runs, "x"))
	e.script(
		call("c1", "get_project", projectArgs),
		call("c2", "get_project", projectArgs),
		call("c3", "get_project", projectArgs),
	)
	sid, evs := e.chat(as(alice), assistant.ChatInput{Message: "loop"})

	want := []string{"tool_call", "tool_result", "tool_call", "tool_result", "tool_call", "tool_result", "error", "done"}
	if !slices.Equal(names(evs), want) {
		t.Fatalf("events %v, want %v", names(evs), want)
	}
	if runs.runs() != 2 {
		t.Errorf("tool ran %d times, want 2", runs.runs())
	}
	if tr := decode[assistant.ToolResultData](t, evs[5]); tr.OK || !strings.Contains(tr.Error, "limit") {
		t.Errorf("the call over the limit: %+v", tr)
	}
	if er := decode[assistant.ErrorData](t, evs[6]); er.Code != "tool_loop_limit" || er.Retryable {
		t.Errorf("error %+v", er)
	}
	if done := decode[assistant.DoneData](t, evs[7]); done.FinishReason != "error" || done.Usage.PromptTokens != 30 {
		t.Errorf("done %+v", done)
	}
	// Every call is answered, so the history stays valid for the next turn.
	answers := 0
	for _, m := range e.messages(sid) {
		if m.Role == ports.MessageTool {
			answers++
		}
	}
	if answers != 3 {
		t.Errorf("%d answers stored, want 3", answers)
	}
	e.endedOnce()
}

func TestChatModelFailuresEndTheStreamCoherently(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		err       error
		code      string
		retryable bool
	}{
		{"rate limited", &ports.Error{Kind: ports.KindRateLimited, Message: "slow down"}, "rate_limited", true},
		{"unavailable", &ports.Error{Kind: ports.KindUnavailable, Message: "provider unavailable"}, "unavailable", true},
		{"timeout", &ports.Error{Kind: ports.KindTimeout, Message: "no answer"}, "timeout", true},
		{"stream cut", &ports.Error{Kind: ports.KindUpstream, Code: ports.CodeTruncated, Message: "the stream was cut"}, "truncated", true},
		{"server error", &ports.Error{Kind: ports.KindUpstream, Message: "provider failed"}, "upstream", false},
		{"context too long", &ports.Error{Kind: ports.KindInvalid, Code: ports.CodeContextLength, Message: "too long"}, "context_length", false},
		{"not a ports error", errors.New("dial tcp: secret detail"), "internal", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, assistant.Config{})
			e.script(fail(tt.err, "Part", "ial"))
			sid, evs := e.chat(as(alice), assistant.ChatInput{Message: "hi"})

			if want := []string{"content", "content", "error", "done"}; !slices.Equal(names(evs), want) {
				t.Fatalf("events %v, want %v", names(evs), want)
			}
			er := decode[assistant.ErrorData](t, evs[2])
			if er.Code != tt.code || er.Retryable != tt.retryable || strings.Contains(er.Message, "secret") {
				t.Errorf("error %+v", er)
			}
			msgs := e.messages(sid)
			if len(msgs) != 2 || msgs[1].Content != "Partial" {
				t.Fatalf("the partial answer was not kept: %+v", msgs)
			}
			if done := decode[assistant.DoneData](t, evs[3]); done.FinishReason != "error" || done.MessageID != msgs[1].ID {
				t.Errorf("done %+v", done)
			}
			e.endedOnce()
		})
	}
}

func TestChatFinishReasons(t *testing.T) {
	t.Parallel()
	tests := []struct {
		finish ports.FinishReason
		want   []string
		reason string
	}{
		{ports.FinishLength, []string{"content", "done"}, "length"},
		{ports.FinishContentFilter, []string{"content", "error", "done"}, "error"},
	}
	for _, tt := range tests {
		t.Run(string(tt.finish), func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, assistant.Config{})
			e.script(func(_ context.Context, _ ports.ChatRequest, onDelta func(string) error) (ports.ChatResult, error) {
				_ = onDelta("abc")
				return ports.ChatResult{Content: "abc", FinishReason: tt.finish}, nil
			})
			_, evs := e.chat(as(alice), assistant.ChatInput{Message: "hi"})
			if !slices.Equal(names(evs), tt.want) {
				t.Fatalf("events %v, want %v", names(evs), tt.want)
			}
			if done := decode[assistant.DoneData](t, evs[len(evs)-1]); done.FinishReason != tt.reason {
				t.Errorf("done %+v", done)
			}
		})
	}
}

func TestChatClientDisconnect(t *testing.T) {
	t.Parallel()
	t.Run("context cancelled mid-stream", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, assistant.Config{})
		ctx, cancel := context.WithCancel(as(alice))
		defer cancel()
		e.script(func(mctx context.Context, _ ports.ChatRequest, onDelta func(string) error) (ports.ChatResult, error) {
			_ = onDelta("Half an ")
			cancel()
			<-mctx.Done() // the model call is cancelled with the client
			return ports.ChatResult{}, mctx.Err()
		})
		run, err := e.svc.Chat(ctx, assistant.ChatInput{Message: "hi"})
		if err != nil {
			t.Fatal(err)
		}
		rec := &recorder{e: e}
		if err := run.Stream(ctx, rec.emit); err != nil {
			t.Fatalf("Stream: %v", err)
		}
		stored := e.storedEvents(run.SessionID())
		if want := []string{"content", "error", "done"}; !slices.Equal(names(stored), want) {
			t.Fatalf("stored events %v, want %v", names(stored), want)
		}
		if er := decode[assistant.ErrorData](t, stored[1]); er.Code != "cancelled" || !er.Retryable {
			t.Errorf("error %+v", er)
		}
		if msgs := e.messages(run.SessionID()); len(msgs) != 2 || msgs[1].Content != "Half an " {
			t.Errorf("the partial answer was not kept: %+v", msgs)
		}
		e.endedOnce()
	})
	for _, tt := range []struct {
		name  string
		cfg   assistant.Config
		early bool
		code  string
	}{
		{"client gone before the stream", assistant.Config{}, true, "cancelled"},
		{"turn outlives its claim", assistant.Config{TurnStaleAfter: time.Millisecond}, false, "timeout"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tt.cfg)
			e.script(func(mctx context.Context, _ ports.ChatRequest, _ func(string) error) (ports.ChatResult, error) {
				<-mctx.Done()
				return ports.ChatResult{}, mctx.Err()
			})
			run, err := e.svc.Chat(as(alice), assistant.ChatInput{Message: "hi"})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(as(alice))
			defer cancel()
			if tt.early {
				cancel()
			}
			if err := run.Stream(ctx, (&recorder{e: e}).emit); err != nil {
				t.Fatal(err)
			}
			stored := e.storedEvents(run.SessionID())
			if !slices.Equal(names(stored), []string{"error", "done"}) {
				t.Fatalf("stored %v", names(stored))
			}
			if er := decode[assistant.ErrorData](t, stored[0]); er.Code != tt.code || !er.Retryable {
				t.Errorf("error %+v", er)
			}
			e.endedOnce()
		})
	}
	t.Run("emit fails: the turn runs on and stores everything", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, assistant.Config{ContentBatch: 1})
		var runs counter
		e.register(readTool("get_project", &runs, "x"))
		e.script(func(mctx context.Context, _ ports.ChatRequest, onDelta func(string) error) (ports.ChatResult, error) {
			if err := onDelta("one "); err != nil {
				t.Errorf("first delta: %v", err)
			}
			if err := onDelta("two"); err != nil {
				t.Errorf("the delta after the client left was refused: %v", err)
			}
			if mctx.Err() != nil {
				t.Errorf("the model call was cancelled with the client: %v", mctx.Err())
			}
			return ports.ChatResult{ToolCalls: []ports.ToolCall{{ID: "c1", Name: "get_project", Arguments: projectArgs}}}, nil
		}, say(" three"))
		run, err := e.svc.Chat(as(alice), assistant.ChatInput{Message: "hi"})
		if err != nil {
			t.Fatal(err)
		}
		rec := &recorder{e: e, failAt: 2}
		if err := run.Stream(as(alice), rec.emit); err != nil {
			t.Fatalf("Stream: %v", err)
		}
		if got := names(rec.events()); !slices.Equal(got, []string{"content"}) {
			t.Errorf("sent %v", got)
		}
		if stored := names(e.storedEvents(run.SessionID())); !slices.Equal(stored, []string{"content", "content", "tool_call", "tool_result", "content", "done"}) {
			t.Errorf("stored %v", stored)
		}
		if runs.runs() != 1 {
			t.Errorf("the read tool ran %d times, want once", runs.runs())
		}
		if msgs := e.messages(run.SessionID()); msgs[len(msgs)-1].Content != " three" {
			t.Errorf("kept %q", msgs[len(msgs)-1].Content)
		}
		e.endedOnce()
	})
}

func TestChatBatchesContent(t *testing.T) {
	t.Parallel()
	t.Run("by count", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, assistant.Config{ContentBatch: 3, ContentFlush: 1e12})
		e.script(say("a", "b", "c", "d", "e"))
		sid, evs := e.chat(as(alice), assistant.ChatInput{Message: "hi"})
		if want := []string{"content", "content", "content", "content", "content", "done"}; !slices.Equal(names(evs), want) {
			t.Fatalf("events %v", names(evs))
		}
		var sizes []int
		for _, a := range e.events.calls() {
			if a[0].SessionID == sid {
				sizes = append(sizes, len(a))
			}
		}
		// the first delta at once (nothing was flushed lately), then three,
		// then the last one with done
		if !slices.Equal(sizes, []int{1, 3, 2}) {
			t.Errorf("AppendEvents sizes %v", sizes)
		}
	})
	t.Run("by time while the model is quiet", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, assistant.Config{ContentBatch: 100, ContentFlush: 1e6})
		sent := make(chan assistant.Event, 10)
		e.script(func(_ context.Context, _ ports.ChatRequest, onDelta func(string) error) (ports.ChatResult, error) {
			_ = onDelta("first") // after a quiet spell: sent at once
			if ev := <-sent; ev.Name != "content" {
				t.Errorf("sent %s", ev.Name)
			}
			_ = onDelta(" second") // right after a flush: queued until the timer
			if ev := <-sent; ev.Name != "content" {
				t.Errorf("sent %s", ev.Name)
			}
			return ports.ChatResult{Content: "first second", FinishReason: ports.FinishStop}, nil
		})
		run, err := e.svc.Chat(as(alice), assistant.ChatInput{Message: "hi"})
		if err != nil {
			t.Fatal(err)
		}
		rec := &recorder{e: e}
		if err := run.Stream(as(alice), func(ev assistant.Event) error { sent <- ev; return rec.emit(ev) }); err != nil {
			t.Fatal(err)
		}
		if got := names(rec.events()); !slices.Equal(got, []string{"content", "content", "done"}) {
			t.Errorf("events %v", got)
		}
	})
}

// StreamBatches hands the transport the events stored together as one
// batch, after they are stored and in order: the first delta alone, then
// the batches of content, then the last content with done.
func TestStreamBatchesSendsWhatWasStoredTogether(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{ContentBatch: 3, ContentFlush: 1e12})
	e.script(say("a", "b", "c", "d", "e"))
	run, err := e.svc.Chat(as(alice), assistant.ChatInput{Message: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	var batches [][]assistant.Event
	err = run.StreamBatches(as(alice), func(evs []assistant.Event) error {
		for _, ev := range evs {
			stored, err := e.store.ListEvents(context.Background(), ev.SessionID, ev.Seq-1, 1)
			if err != nil || len(stored) != 1 || stored[0].Seq != ev.Seq {
				t.Errorf("event %d (%s) sent before it was stored", ev.Seq, ev.Name)
			}
		}
		batches = append(batches, evs)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var sizes []int
	var seqs []int64
	for _, b := range batches {
		sizes = append(sizes, len(b))
		for _, ev := range b {
			seqs = append(seqs, ev.Seq)
		}
	}
	if !slices.Equal(sizes, []int{1, 3, 2}) {
		t.Errorf("batch sizes %v, want [1 3 2]", sizes)
	}
	if !slices.IsSorted(seqs) || len(seqs) != 6 || seqs[0] != batches[0][0].Seq {
		t.Errorf("seqs %v", seqs)
	}
	var stored [][]int64
	for _, a := range e.events.calls() {
		if a[0].SessionID != run.SessionID() {
			continue
		}
		var s []int64
		for _, ev := range a {
			s = append(s, ev.Seq)
		}
		stored = append(stored, s)
	}
	for i, b := range batches {
		if i >= len(stored) || len(stored[i]) != len(b) || stored[i][0] != b[0].Seq {
			t.Errorf("batch %d does not match a write of the store: %v", i, stored)
		}
	}
	if last := batches[len(batches)-1]; last[len(last)-1].Name != assistant.EventDone {
		t.Errorf("the last batch ends with %s", last[len(last)-1].Name)
	}
}

// A client gone mid-batch stops the batch and everything after it.
func TestStreamStopsAtTheClientGoneInABatch(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{ContentBatch: 3, ContentFlush: 1e12})
	e.script(say("a", "b", "c", "d", "e"))
	run, err := e.svc.Chat(as(alice), assistant.ChatInput{Message: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{e: e, failAt: 3} // the second of the batch of three
	if err := run.Stream(as(alice), rec.emit); err != nil {
		t.Fatal(err)
	}
	if got := names(rec.events()); !slices.Equal(got, []string{"content", "content"}) {
		t.Errorf("sent %v", got)
	}
	if stored := names(e.storedEvents(run.SessionID())); len(stored) == 0 || stored[len(stored)-1] != "done" {
		t.Errorf("stored %v", stored)
	}
}

// The first delta of a turn (after a quiet spell) is stored and sent at
// once, on its own: it does not wait for the batches of other turns being
// written, which the only event writer is busy with here.
func TestChatStoresAFirstDeltaAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{EventWriters: 1, ContentBatch: 2, ContentFlush: 1e12})
	hold, held := make(chan struct{}), make(chan struct{})
	e.script(func(_ context.Context, _ ports.ChatRequest, onDelta func(string) error) (ports.ChatResult, error) {
		_ = onDelta("a1") // stored at once
		e.holdNextEvents(hold, held)
		_ = onDelta("a2")
		_ = onDelta("a3") // a batch of two: its write is held
		return ports.ChatResult{Content: "a1a2a3", FinishReason: ports.FinishStop}, nil
	}, say("b1", "b2"))
	var wg sync.WaitGroup
	wg.Go(func() { e.chat(as(alice), assistant.ChatInput{Message: "first"}) })
	<-held

	run, err := e.svc.Chat(as(alice), assistant.ChatInput{Message: "second"})
	if err != nil {
		close(hold)
		t.Fatal(err)
	}
	first := make(chan assistant.Event, 1)
	wg.Go(func() {
		rec := &recorder{e: e}
		_ = run.Stream(as(alice), func(ev assistant.Event) error {
			select {
			case first <- ev:
			default:
			}
			return rec.emit(ev)
		})
	})
	select {
	case ev := <-first:
		if ev.Name != assistant.EventContent {
			t.Errorf("first event %s, want content", ev.Name)
		}
	case <-time.After(10 * time.Second):
		t.Error("the second turn's first delta waited for the first turn's batch")
	}
	close(hold)
	wg.Wait()
}

func TestChatStoreFailureStillEndsWithDone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{})
	e.script(func(ctx context.Context, _ ports.ChatRequest, onDelta func(string) error) (ports.ChatResult, error) {
		e.events.mu.Lock()
		e.events.fail = errors.New("disk full")
		e.events.mu.Unlock()
		if err := onDelta("lost"); err == nil {
			t.Error("a delta that could not be stored was accepted")
		}
		return ports.ChatResult{}, ctx.Err()
	})
	run, err := e.svc.Chat(as(alice), assistant.ChatInput{Message: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{e: e}
	err = run.Stream(as(alice), func(ev assistant.Event) error {
		rec.mu.Lock()
		rec.got = append(rec.got, ev)
		rec.mu.Unlock()
		return nil
	})
	if !ports.IsKind(err, ports.KindInternal) {
		t.Fatalf("Stream = %v, want internal", err)
	}
	if got := names(rec.events()); !slices.Equal(got, []string{"error", "done"}) {
		t.Fatalf("sent %v, want error and done", got)
	}
	if er := decode[assistant.ErrorData](t, rec.events()[0]); er.Code != "internal" {
		t.Errorf("error %+v", er)
	}
	e.endedOnce()
	if err := run.Stream(as(alice), rec.emit); !errors.Is(err, ports.ErrConflict) {
		t.Errorf("second Stream = %v, want conflict", err)
	}
}

func TestChatToleratesOddModelOutput(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{})
	var runs counter
	e.register(readTool("get_project", &runs, "x"), tool.Tool{
		Name: "explode", Description: "panics", Schema: json.RawMessage(`{"type":"object"}`), Effect: tool.EffectRead,
		Run: func(context.Context, json.RawMessage) (any, error) { panic("boom") },
	}, tool.Tool{
		Name: "leak", Description: "fails", Schema: json.RawMessage(`{"type":"object"}`), Effect: tool.EffectRead,
		Run: func(context.Context, json.RawMessage) (any, error) { return nil, errors.New("password=hunter2") },
	})
	e.script(
		call("", "get_project", projectArgs, "dup", "explode", "", "dup", "leak", "  "),
		// an adapter that does not stream its text
		func(context.Context, ports.ChatRequest, func(string) error) (ports.ChatResult, error) {
			return ports.ChatResult{Content: "Done.", FinishReason: ports.FinishStop}, nil
		},
	)
	sid, evs := e.chat(as(alice), assistant.ChatInput{Message: "go"})

	want := []string{"tool_call", "tool_result", "tool_call", "tool_result", "tool_call", "tool_result", "content", "done"}
	if !slices.Equal(names(evs), want) {
		t.Fatalf("events %v, want %v", names(evs), want)
	}
	results := only[assistant.ToolResultData](t, evs, assistant.EventToolResult)
	ids := map[string]bool{}
	for _, r := range results {
		if r.ToolCallID == "" || ids[r.ToolCallID] {
			t.Errorf("tool call id %q is empty or repeated", r.ToolCallID)
		}
		ids[r.ToolCallID] = true
	}
	if !results[0].OK || results[1].OK || results[1].Error != "internal error" || results[2].Error != "internal error" {
		t.Errorf("results %+v", results)
	}
	msgs := e.messages(sid)
	calls := msgs[1].ToolCalls
	for i, r := range results {
		if calls[i].ID != r.ToolCallID {
			t.Errorf("stored call %d has id %q, reported %q", i, calls[i].ID, r.ToolCallID)
		}
	}
	if last := msgs[len(msgs)-1]; last.Content != "Done." {
		t.Errorf("last message %+v", last)
	}
}

func TestChatValidatesInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		in    assistant.ChatInput
		field string
	}{
		{"empty", assistant.ChatInput{Message: ""}, "message"},
		{"blank", assistant.ChatInput{Message: " \n\t "}, "message"},
		{"too long", assistant.ChatInput{Message: strings.Repeat("é", 32001)}, "message"},
		{"bad session id", assistant.ChatInput{Message: "hi", SessionID: "abc"}, "session_id"},
		{"bad project id", assistant.ChatInput{Message: "hi", Context: &tool.PageContext{SelectedProjectID: "p1"}}, "context.selected_project_id"},
		{"long page", assistant.ChatInput{Message: "hi", Context: &tool.PageContext{CurrentPage: strings.Repeat("x", 2049)}}, "context.current_page"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, assistant.Config{})
			_, err := e.svc.Chat(as(alice), tt.in)
			pe, ok := ports.AsError(err)
			if !ok || pe.Kind != ports.KindInvalid || len(pe.Fields) != 1 || pe.Fields[0].Field != tt.field {
				t.Fatalf("err = %#v, want invalid on %s", err, tt.field)
			}
		})
	}
	t.Run("longest message", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, assistant.Config{})
		if _, err := e.svc.Chat(as(alice), assistant.ChatInput{Message: strings.Repeat("é", 32000)}); err != nil {
			t.Fatalf("Chat: %v", err)
		}
	})
}

func TestChatRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{})
	e.script(say("hi"))
	sid, _ := e.chat(as(alice), assistant.ChatInput{Message: "hi"})

	if _, err := e.svc.Chat(context.Background(), assistant.ChatInput{Message: "hi"}); !errors.Is(err, ports.ErrUnauthenticated) {
		t.Errorf("no principal: %v", err)
	}
	if _, err := e.svc.Chat(as(bob), assistant.ChatInput{SessionID: sid, Message: "hi"}); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("another's session: %v", err)
	}
	if _, err := e.svc.Chat(as(alice), assistant.ChatInput{SessionID: sid, Message: "again"}); err != nil {
		t.Fatal(err)
	}
	_, err := e.svc.Chat(as(alice), assistant.ChatInput{SessionID: sid, Message: "and again"})
	if !errors.Is(err, ports.ErrConflict) || errCode(err) != "turn_running" {
		t.Errorf("while a turn runs: %v", err)
	}
	if err := e.svc.DeleteSession(as(alice), sid); errCode(err) != "turn_running" {
		t.Errorf("delete while a turn runs: %v", err)
	}
	// A turn left running by a dead process is taken over once stale.
	e.clock.Advance(16 * time.Minute)
	if _, err := e.svc.Chat(as(alice), assistant.ChatInput{SessionID: sid, Message: "later"}); err != nil {
		t.Errorf("after the turn went stale: %v", err)
	}
}

func TestPromptCarriesPreferencesContextAndOrderedAnswers(t *testing.T) {
	t.Parallel()
	// w4 is asked for with a confirmation that expires after five minutes.
	e := newEnv(t, assistant.Config{SystemPrompt: "BASE PROMPT"}, func(d *assistant.Deps) {
		d.Confirmations = shortConfirmation{d.Confirmations, "w4", 5 * time.Minute}
	})
	if _, _, err := e.svc.SetPreferences(as(alice), []string{"Answer in French.", "Be\nterse."}); err != nil {
		t.Fatal(err)
	}
	// Turn 1: four writes; w1 is approved, w2 rejected, w3 stays pending and
	// w4 expires. A user message comes between the call and the decisions.
	var runs counter
	e.register(writeTool("deploy_service", &runs, "ok"))
	e.script(call("w1", "deploy_service", projectArgs, "w2", "deploy_service", projectArgs))
	sid, _ := e.chat(as(alice), assistant.ChatInput{Message: "deploy both"})
	e.script(call("w3", "deploy_service", projectArgs, "w4", "deploy_service", projectArgs))
	e.chat(as(alice), assistant.ChatInput{SessionID: sid, Message: "and two more"})
	confs := e.confirmations(sid)
	e.clock.Advance(5 * 60e9) // w4 expires now; w3 stays pending
	if _, err := e.svc.Confirm(as(alice), assistant.ConfirmInput{SessionID: sid, ConfirmationID: confs[0].ID, Approved: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Confirm(as(alice), assistant.ConfirmInput{SessionID: sid, ConfirmationID: confs[1].ID, Reason: "not now"}); err != nil {
		t.Fatal(err)
	}

	e.script(say("ok"))
	e.chat(as(alice), assistant.ChatInput{SessionID: sid, Message: "status?",
		Context: &tool.PageContext{CurrentPage: "/projects/apollo", SelectedProjectID: projectID}})

	msgs := e.requests()[2].Messages
	sys := msgs[0].Content
	for _, want := range []string{"BASE PROMPT", "- Answer in French.", "- Be terse."} {
		if !strings.Contains(sys, want) {
			t.Errorf("system prompt lacks %q:\n%s", want, sys)
		}
	}
	last := msgs[len(msgs)-1]
	for _, want := range []string{"current_page: /projects/apollo\n", "selected_project_id: " + projectID + "\n"} {
		if !strings.Contains(last.Content, want) || strings.Contains(sys, want) {
			t.Errorf("the last user message, not the system prompt, should hold %q:\n%s", want, last.Content)
		}
	}
	msgs[len(msgs)-1].Content = "status?"
	var got []string
	for _, m := range msgs[1:] {
		switch m.Role {
		case ports.MessageTool:
			got = append(got, "tool "+m.ToolCallID+" "+m.Content)
		case ports.MessageAssistant:
			got = append(got, fmt.Sprintf("assistant %d calls", len(m.ToolCalls)))
		default:
			got = append(got, string(m.Role)+" "+m.Content)
		}
	}
	want := []string{
		"user deploy both",
		"assistant 2 calls",
		`tool w1 {"ok":true,"result":"ok"}`,
		`tool w2 {"ok":false,"error":"the user rejected this action: not now"}`,
		"user and two more",
		"assistant 2 calls",
		`tool w3 {"ok":false,"error":"not run yet: awaiting the user's confirmation"}`,
		`tool w4 {"ok":false,"error":"not run: the confirmation expired without a decision"}`,
		"user status?",
	}
	if !slices.Equal(got, want) {
		t.Errorf("history:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// shortConfirmation stores the confirmation of one tool call with a
// shorter time to live.
type shortConfirmation struct {
	ports.ConfirmationStore
	toolCallID string
	ttl        time.Duration
}

func (s shortConfirmation) CreateConfirmation(ctx context.Context, c ports.Confirmation) error {
	if c.ToolCallID == s.toolCallID {
		c.ExpiresAt = c.CreatedAt.Add(s.ttl)
	}
	return s.ConfirmationStore.CreateConfirmation(ctx, c)
}

// holdNextEvents makes e hold the next AppendEvents until hold is closed;
// held is closed as it starts waiting.
func (e *env) holdNextEvents(hold, held chan struct{}) {
	e.events.mu.Lock()
	defer e.events.mu.Unlock()
	e.events.hold, e.events.held = hold, held
}

func TestChatStoresTheEventsOfConcurrentTurnsTogether(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{EventWriters: 1})
	// A first delta is stored on its own (see TestChatStoresAFirstDeltaAtOnce);
	// turn 0's done is the write held.
	hold, held := make(chan struct{}), make(chan struct{})
	e.script(func(_ context.Context, _ ports.ChatRequest, onDelta func(string) error) (ports.ChatResult, error) {
		if err := onDelta("hi"); err != nil {
			return ports.ChatResult{}, err
		}
		e.holdNextEvents(hold, held)
		return ports.ChatResult{Content: "hi", FinishReason: ports.FinishStop}, nil
	})
	e.script(say("hi"), say("hi"))

	var wg sync.WaitGroup
	sessions := make([]string, 3)
	turn := func(i int) {
		wg.Go(func() {
			sid, evs := e.chat(as(alice), assistant.ChatInput{Message: "hello"})
			if want := []string{"content", "done"}; !slices.Equal(names(evs), want) {
				t.Errorf("turn %d: events %v, want %v", i, names(evs), want)
			}
			sessions[i] = sid
		})
	}
	turn(0)
	<-held // turn 0's done is being written: the others' wait for the writer
	joined := make(chan int, 16)
	assistant.OnEventsJoined(e.svc, func(n int) { joined <- n })
	turn(1)
	turn(2)
	for n := 0; n < 2; {
		select {
		case n = <-joined:
		case <-time.After(10 * time.Second):
			close(hold)
			t.Fatal("the flushes of turns 1 and 2 never formed one batch")
		}
	}
	close(hold)
	wg.Wait()

	together, calls := false, e.events.calls()
	for _, call := range calls {
		bySession := map[string]bool{}
		for _, ev := range call {
			bySession[ev.SessionID] = true
		}
		together = together || len(bySession) >= 2
	}
	if !together {
		t.Errorf("no write held the events of two turns: %d writes", len(calls))
	}
	for i, sid := range sessions {
		stored := e.storedEvents(sid)
		if len(stored) != 2 || stored[0].Seq != 1 || stored[1].Seq != 2 {
			t.Errorf("turn %d: stored %+v", i, stored)
		}
	}
}
