package assistant_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/devpilot/devpilot/core/assistant"
	"github.com/devpilot/devpilot/ports"
)

// pendingWrites runs a turn in which the model asks for the given write calls
// and returns the session and the confirmations, in call order.
func pendingWrites(t *testing.T, e *env, runs *counter, callIDs ...string) (string, []ports.Confirmation) {
	t.Helper()
	e.register(writeTool("deploy_service", runs, map[string]string{"status": "deployed"}))
	var triples []string
	for _, id := range callIDs {
		triples = append(triples, id, "deploy_service", projectArgs)
	}
	e.script(call(triples...))
	sid, evs := e.chat(as(alice), assistant.ChatInput{Message: "deploy"})
	if done := decode[assistant.DoneData](t, evs[len(evs)-1]); done.FinishReason != "confirmation_required" {
		t.Fatalf("done %+v", done)
	}
	return sid, e.confirmations(sid)
}

// readTogether holds each GetConfirmation, once armed with n, until n
// have been made, so that n concurrent Confirms all read the confirmation
// pending and race to decide it.
type readTogether struct {
	ports.ConfirmationStore
	all *sync.WaitGroup
}

func (r *readTogether) GetConfirmation(ctx context.Context, o ports.Owner, id string) (ports.Confirmation, error) {
	c, err := r.ConfirmationStore.GetConfirmation(ctx, o, id)
	if r.all != nil {
		r.all.Done()
		r.all.Wait()
	}
	return c, err
}

func TestConfirmApprovedRunsExactlyOnce(t *testing.T) {
	t.Parallel()
	together := &readTogether{}
	e := newEnv(t, assistant.Config{}, func(d *assistant.Deps) {
		together.ConfirmationStore = d.Confirmations
		d.Confirmations = together
	})
	var runs counter
	sid, confs := pendingWrites(t, e, &runs, "c1")
	e.clock.Advance(time.Minute)

	const callers = 8
	together.all = &sync.WaitGroup{}
	together.all.Add(callers)
	var wg sync.WaitGroup
	results := make([]error, callers)
	var won assistant.ConfirmResult
	for i := range callers {
		wg.Go(func() {
			res, err := e.svc.Confirm(as(alice), assistant.ConfirmInput{SessionID: sid, ConfirmationID: confs[0].ID, Approved: true})
			results[i] = err
			if err == nil {
				won = res
			}
		})
	}
	wg.Wait()
	if runs.runs() != 1 {
		t.Fatalf("the tool ran %d times, want 1", runs.runs())
	}
	wins := 0
	for _, err := range results {
		switch {
		case err == nil:
			wins++
		case errCode(err) != "already_decided" || !strings.Contains(err.Error(), "already approved"):
			t.Errorf("a losing confirm: %v", err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d confirms won", wins)
	}
	c := won.Confirmation
	if c.Status != ports.ConfirmationApproved || c.DecidedBy != alice.UserID || c.DecidedAt == nil || !c.DecidedAt.Equal(e.clock.Now()) ||
		c.ExecutedAt == nil || won.Outcome == nil || !won.Outcome.OK || string(won.Outcome.Result) != `{"status":"deployed"}` {
		t.Errorf("result %+v outcome %+v", c, won.Outcome)
	}
	stored := e.confirmations(sid)[0]
	if stored.Outcome == nil || !stored.Outcome.OK || stored.ExecutedAt == nil {
		t.Errorf("outcome not recorded: %+v", stored)
	}
	msgs := e.messages(sid)
	last := msgs[len(msgs)-1]
	if last.Role != ports.MessageTool || last.ToolCallID != "c1" || last.Name != "deploy_service" || last.Content != `{"ok":true,"result":{"status":"deployed"}}` {
		t.Errorf("answer appended: %+v", last)
	}
}

func TestConfirmRejectedNeverRuns(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{})
	var runs counter
	sid, confs := pendingWrites(t, e, &runs, "c1")

	res, err := e.svc.Confirm(as(alice), assistant.ConfirmInput{SessionID: sid, ConfirmationID: confs[0].ID, Reason: "  wrong project "})
	if err != nil {
		t.Fatal(err)
	}
	if runs.runs() != 0 || res.Outcome != nil || res.Confirmation.Status != ports.ConfirmationRejected || res.Confirmation.Reason != "wrong project" {
		t.Errorf("result %+v, runs %d", res, runs.runs())
	}
	msgs := e.messages(sid)
	if last := msgs[len(msgs)-1]; last.Role != ports.MessageTool || !strings.Contains(last.Content, "rejected this action: wrong project") {
		t.Errorf("answer appended: %+v", last)
	}
	_, err = e.svc.Confirm(as(alice), assistant.ConfirmInput{SessionID: sid, ConfirmationID: confs[0].ID, Approved: true})
	if !errors.Is(err, ports.ErrConflict) || errCode(err) != "already_decided" || !strings.Contains(err.Error(), "rejected") {
		t.Errorf("approving after rejecting: %v", err)
	}
	if runs.runs() != 0 {
		t.Error("the rejected tool ran")
	}
}

func TestConfirmRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		ctx    context.Context
		in     func(sid, cid string) assistant.ConfirmInput
		before func(e *env)
		kind   ports.Kind
		code   string
	}{
		{"expired", as(alice), func(sid, cid string) assistant.ConfirmInput {
			return assistant.ConfirmInput{SessionID: sid, ConfirmationID: cid, Approved: true}
		}, func(e *env) { e.clock.Advance(15 * time.Minute) }, ports.KindGone, "expired"},
		{"expired already recorded", as(alice), func(sid, cid string) assistant.ConfirmInput {
			return assistant.ConfirmInput{SessionID: sid, ConfirmationID: cid, Approved: true}
		}, func(e *env) {
			// recorded by the background job of another replica, whose clock is ahead
			if n, err := e.store.ExpireConfirmations(context.Background(), e.clock.Now().Add(time.Hour)); n != 1 || err != nil {
				e.t.Fatalf("ExpireConfirmations = %d, %v", n, err)
			}
		}, ports.KindGone, "expired"},
		{"another user's", as(bob), func(sid, cid string) assistant.ConfirmInput {
			return assistant.ConfirmInput{SessionID: sid, ConfirmationID: cid, Approved: true}
		}, nil, ports.KindNotFound, "not_found"},
		{"another session's", as(alice), func(_, cid string) assistant.ConfirmInput {
			return assistant.ConfirmInput{SessionID: projectID, ConfirmationID: cid, Approved: true}
		}, nil, ports.KindNotFound, "not_found"},
		{"unknown", as(alice), func(sid, _ string) assistant.ConfirmInput {
			return assistant.ConfirmInput{SessionID: sid, ConfirmationID: projectID, Approved: true}
		}, nil, ports.KindNotFound, "not_found"},
		{"malformed ids", as(alice), func(string, string) assistant.ConfirmInput {
			return assistant.ConfirmInput{SessionID: "x", Approved: true}
		}, nil, ports.KindInvalid, "invalid"},
		{"long reason", as(alice), func(sid, cid string) assistant.ConfirmInput {
			return assistant.ConfirmInput{SessionID: sid, ConfirmationID: cid, Reason: strings.Repeat("r", 1001)}
		}, nil, ports.KindInvalid, "invalid"},
		{"no principal", context.Background(), func(sid, cid string) assistant.ConfirmInput {
			return assistant.ConfirmInput{SessionID: sid, ConfirmationID: cid, Approved: true}
		}, nil, ports.KindUnauthenticated, "unauthenticated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, assistant.Config{})
			var runs counter
			sid, confs := pendingWrites(t, e, &runs, "c1")
			if tt.before != nil {
				tt.before(e)
			}
			_, err := e.svc.Confirm(tt.ctx, tt.in(sid, confs[0].ID))
			if !ports.IsKind(err, tt.kind) || errCode(err) != tt.code {
				t.Fatalf("err = %v (%s), want %s/%s", err, errCode(err), tt.kind, tt.code)
			}
			if runs.runs() != 0 {
				t.Error("the tool ran")
			}
			if msgs := e.messages(sid); msgs[len(msgs)-1].Role == ports.MessageTool {
				t.Error("an answer was appended")
			}
		})
	}
}

func TestTwoConfirmationsDecidedInAnyOrder(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		order []int
	}{{"in call order", []int{0, 1}}, {"in reverse order", []int{1, 0}}} {
		order := tt.order
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, assistant.Config{})
			var runs counter
			sid, confs := pendingWrites(t, e, &runs, "a", "b")
			if len(confs) != 2 || confs[0].ID == confs[1].ID || confs[0].ToolCallID != "a" || confs[1].ToolCallID != "b" {
				t.Fatalf("confirmations %+v", confs)
			}
			first, second := confs[order[0]], confs[order[1]]

			if _, err := e.svc.Confirm(as(alice), assistant.ConfirmInput{SessionID: sid, ConfirmationID: first.ID, Approved: true}); err != nil {
				t.Fatal(err)
			}
			// One is still pending: the continuation reports the decided one
			// and waits, without asking the model.
			run, err := e.svc.Continue(as(alice), sid)
			if err != nil {
				t.Fatal(err)
			}
			rec := &recorder{e: e}
			if err := run.Stream(as(alice), rec.emit); err != nil {
				t.Fatal(err)
			}
			evs := rec.events()
			if !slices.Equal(names(evs), []string{"tool_result", "done"}) {
				t.Fatalf("events %v", names(evs))
			}
			if tr := decode[assistant.ToolResultData](t, evs[0]); tr.ToolCallID != first.ToolCallID || !tr.OK {
				t.Errorf("tool_result %+v", tr)
			}
			if done := decode[assistant.DoneData](t, evs[1]); done.FinishReason != "confirmation_required" {
				t.Errorf("done %+v", done)
			}

			if _, err := e.svc.Confirm(as(alice), assistant.ConfirmInput{SessionID: sid, ConfirmationID: second.ID, Approved: true}); err != nil {
				t.Fatal(err)
			}
			e.script(say("Both deployed."))
			run, err = e.svc.Continue(as(alice), sid)
			if err != nil {
				t.Fatal(err)
			}
			rec = &recorder{e: e}
			if err := run.Stream(as(alice), rec.emit); err != nil {
				t.Fatal(err)
			}
			evs = rec.events()
			if want := []string{"tool_result", "tool_result", "content", "done"}; !slices.Equal(names(evs), want) {
				t.Fatalf("events %v, want %v", names(evs), want)
			}
			if done := decode[assistant.DoneData](t, evs[3]); done.FinishReason != "stop" {
				t.Errorf("done %+v", done)
			}
			if runs.runs() != 2 {
				t.Errorf("%d runs, want 2", runs.runs())
			}
			// The model sees both answers right after its calls.
			msgs := e.requests()[1].Messages
			n := len(msgs)
			if msgs[n-3].Role != ports.MessageAssistant || msgs[n-2].ToolCallID != "a" || msgs[n-1].ToolCallID != "b" ||
				!strings.Contains(msgs[n-1].Content, `"ok":true`) {
				t.Errorf("history ends %+v", msgs[n-3:])
			}
			for _, c := range e.confirmations(sid) {
				if c.Status != ports.ConfirmationApproved {
					t.Errorf("confirmation %s is %s", c.ID, c.Status)
				}
			}
			// Nothing is left to continue from.
			if _, err := e.svc.Continue(as(alice), sid); errCode(err) != "nothing_to_continue" {
				t.Errorf("Continue again: %v", err)
			}
			e.endedOnce()
		})
	}
}

func TestContinueRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{})
	e.script(say("hello"))
	sid, _ := e.chat(as(alice), assistant.ChatInput{Message: "hi"})
	if _, err := e.svc.Continue(as(alice), sid); errCode(err) != "nothing_to_continue" {
		t.Errorf("after a plain answer: %v", err)
	}
	if _, err := e.svc.Continue(as(bob), sid); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("another's session: %v", err)
	}
	if _, err := e.svc.Continue(as(alice), "nope"); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("malformed id: %v", err)
	}
	e.endedOnce()
}

func TestContinueAfterExpiryLetsTheModelGoOn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{ConfirmationTTL: time.Minute})
	var runs counter
	sid, _ := pendingWrites(t, e, &runs, "c1")
	e.clock.Advance(2 * time.Minute)
	e.script(say("It expired."))
	run, err := e.svc.Continue(as(alice), sid)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{e: e}
	if err := run.Stream(as(alice), rec.emit); err != nil {
		t.Fatal(err)
	}
	msgs := e.requests()[1].Messages
	if last := msgs[len(msgs)-1]; last.Role != ports.MessageTool || !strings.Contains(last.Content, "expired without a decision") {
		t.Errorf("last message %+v", last)
	}
	if runs.runs() != 0 {
		t.Error("an expired write ran")
	}
}

func TestExecuteTool(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{})
	var reads, writes counter
	e.register(readTool("get_project", &reads, "apollo"), writeTool("deploy_service", &writes, "ok"))
	e.script(say("hi"))
	sid, _ := e.chat(as(alice), assistant.ChatInput{Message: "hi"})

	ex, err := e.svc.ExecuteTool(as(alice), sid, ports.ToolCall{ID: "v1", Name: "get_project", Arguments: projectArgs})
	if err != nil || ex.Outcome == nil || !ex.Outcome.OK || string(ex.Outcome.Result) != `"apollo"` || reads.runs() != 1 {
		t.Errorf("read: %+v %v", ex, err)
	}
	ex, err = e.svc.ExecuteTool(as(alice), sid, ports.ToolCall{Name: "deploy_service", Arguments: projectArgs})
	if err != nil || ex.Confirmation == nil || ex.Confirmation.Status != ports.ConfirmationPending || ex.Call.ID == "" || writes.runs() != 0 {
		t.Errorf("write: %+v %v", ex, err)
	}
	ex, err = e.svc.ExecuteTool(as(alice), sid, ports.ToolCall{ID: "v3", Name: "get_project", Arguments: `{"project_id":1}`})
	if err != nil || ex.Outcome == nil || ex.Outcome.OK || reads.runs() != 1 {
		t.Errorf("invalid: %+v %v", ex, err)
	}
	if !json.Valid(ex.Arguments) {
		t.Errorf("arguments %s", ex.Arguments)
	}
	if _, err := e.svc.ExecuteTool(as(bob), sid, ports.ToolCall{Name: "get_project", Arguments: projectArgs}); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("another's session: %v", err)
	}
}

// TestGetConfirmation: the caller's confirmation as it stands, a pending
// one past its time read as expired; another user's, an unknown and a
// malformed id are not found.
func TestGetConfirmation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{})
	var runs counter
	_, confs := pendingWrites(t, e, &runs, "c1")
	c, err := e.svc.GetConfirmation(as(alice), confs[0].ID)
	if err != nil || c.Status != ports.ConfirmationPending || c.ToolName != confs[0].ToolName {
		t.Fatalf("pending: %+v %v", c, err)
	}
	for _, id := range []string{projectID, "nope"} {
		if _, err := e.svc.GetConfirmation(as(alice), id); !ports.IsKind(err, ports.KindNotFound) {
			t.Errorf("GetConfirmation(%q) = %v, want not_found", id, err)
		}
	}
	if _, err := e.svc.GetConfirmation(as(bob), confs[0].ID); !ports.IsKind(err, ports.KindNotFound) {
		t.Errorf("another user's: %v", err)
	}
	e.clock.Advance(15 * time.Minute)
	if c, err := e.svc.GetConfirmation(as(alice), confs[0].ID); err != nil || c.Status != ports.ConfirmationExpired {
		t.Errorf("past its time: %+v %v", c.Status, err)
	}
}
