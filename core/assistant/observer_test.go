package assistant_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/devpilot/devpilot/core/assistant"
	"github.com/devpilot/devpilot/ports"
)

// obsRecorder is an Observer that records what it hears, one string per call.
type obsRecorder struct {
	mu    sync.Mutex
	heard []string
}

func (r *obsRecorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.heard = append(r.heard, s)
}

func (r *obsRecorder) ToolCall(name string, o ports.ToolCallOutcome) {
	r.add("tool " + name + " " + string(o))
}
func (r *obsRecorder) ConfirmationDecided(s ports.ConfirmationStatus) {
	r.add("confirmation " + string(s))
}
func (r *obsRecorder) WebhookReceived(o ports.WebhookOutcome) { r.add("webhook " + string(o)) }
func (r *obsRecorder) WebhookProcessed(time.Duration)         { r.add("processed") }
func (r *obsRecorder) VoiceCallStarted()                      { r.add("voice call") }
func (r *obsRecorder) SpecStageGenerated(st ports.Stage, _ int, _ map[string]int) {
	r.add("spec stage " + string(st))
}

// take returns what was heard since the last take.
func (r *obsRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.heard
	r.heard = nil
	return out
}

func (r *obsRecorder) check(t *testing.T, what string, want ...string) {
	t.Helper()
	if got := r.take(); !slices.Equal(got, want) {
		t.Errorf("%s: the observer heard %q, want %q", what, got, want)
	}
}

func observed(obs *obsRecorder) func(*assistant.Deps) {
	return func(d *assistant.Deps) { d.Observer = obs }
}

func TestObserverHearsEachChatToolCallOnce(t *testing.T) {
	t.Parallel()
	obs := &obsRecorder{}
	e := newEnv(t, assistant.Config{}, observed(obs))
	var runs counter
	broken := readTool("get_logs", &runs, nil)
	broken.Run = func(context.Context, json.RawMessage) (any, error) {
		return nil, ports.Errorf(ports.KindNotFound, "no such service")
	}
	e.register(readTool("get_project", &runs, map[string]string{"name": "p"}), broken,
		writeTool("deploy_service", &runs, map[string]string{"status": "deployed"}))
	e.script(call(
		"c1", "get_project", projectArgs,
		"c2", "get_logs", projectArgs,
		"c3", "made_up_"+t.Name(), projectArgs, // a model's invention never becomes a label
		"c4", "get_project", `{"project_id": 7}`,
		"c5", "deploy_service", projectArgs,
	))
	e.chat(as(alice), assistant.ChatInput{Message: "look, then deploy"})
	obs.check(t, "the chat",
		"tool get_project ok", "tool get_logs failed", "tool "+ports.UnknownTool+" refused",
		"tool get_project refused", "tool deploy_service pending")
}

func TestObserverHearsDecisions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		approved bool
		after    time.Duration // the clock advances this much before the decision
		want     []string
	}{
		{"approved", true, time.Minute, []string{"confirmation approved", "tool deploy_service ok"}},
		{"rejected", false, time.Minute, []string{"confirmation rejected", "tool deploy_service rejected"}},
		{"expired", true, time.Hour, []string{"confirmation expired", "tool deploy_service rejected"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			obs := &obsRecorder{}
			e := newEnv(t, assistant.Config{}, observed(obs))
			var runs counter
			sid, confs := pendingWrites(t, e, &runs, "c1")
			obs.check(t, "asking", "tool deploy_service pending")
			e.clock.Advance(tc.after)
			in := assistant.ConfirmInput{SessionID: sid, ConfirmationID: confs[0].ID, Approved: tc.approved}
			if _, err := e.svc.Confirm(as(alice), in); (err == nil) == (tc.name == "expired") {
				t.Fatalf("Confirm: %v", err)
			}
			obs.check(t, "deciding", tc.want...)
			if _, err := e.svc.Confirm(as(alice), in); err == nil {
				t.Fatal("Confirm again succeeded")
			}
			obs.check(t, "deciding again")
		})
	}
}

// sweeping expires n confirmations whatever is stored.
type sweeping struct {
	ports.ConfirmationStore
	n int
}

func (s sweeping) ExpireConfirmations(context.Context, time.Time) (int, error) { return s.n, nil }

func TestObserverHearsTheSweep(t *testing.T) {
	t.Parallel()
	obs := &obsRecorder{}
	e := newEnv(t, assistant.Config{}, observed(obs), func(d *assistant.Deps) {
		d.Confirmations = sweeping{ConfirmationStore: d.Confirmations, n: 2}
	})
	if n, err := e.svc.ExpireConfirmations(t.Context()); n != 2 || err != nil {
		t.Fatalf("ExpireConfirmations = %d, %v", n, err)
	}
	obs.check(t, "the sweep", "confirmation expired", "confirmation expired")
}
