package voice_test

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/core/assistant"
	"github.com/devpilot/devpilot/core/voice"
	"github.com/devpilot/devpilot/ports"
)

// obsRecorder is an Observer that records the tool calls it hears.
type obsRecorder struct {
	ports.NopObserver
	mu    sync.Mutex
	heard []string
}

func (r *obsRecorder) ToolCall(name string, o ports.ToolCallOutcome) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.heard = append(r.heard, name+" "+string(o))
}

func (r *obsRecorder) calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.heard)
}

// observed is e's voice service, over e's stores, reporting to obs.
func observed(e *env, obs ports.Observer) *voice.Service {
	asst := assistant.New(assistant.Config{}, assistant.Deps{
		Sessions: e.sessions, Messages: e.messages, Confirmations: e.confs, Preferences: e.prefs,
		Tx: e.tx, Clock: e.clock, IDs: e.ids, Registry: e.reg,
	})
	return voice.New(voice.Config{}, voice.Deps{
		Assistant: asst, Sessions: e.sessions, Messages: e.messages, Realtime: e.realtime, Transcriber: e.transcriber,
		Tx: e.tx, Clock: e.clock, IDs: e.ids, Observer: obs,
	})
}

func TestObserverHearsVoiceToolCalls(t *testing.T) {
	t.Parallel()
	other := `{"project_id":"0193a1b2-c3d4-7e5f-8a9b-000000000000"}`
	cases := []struct {
		name, tool, args string
		stores           func(e *env) // the store calls allowed
		want             string
	}{
		{"read", "get_project", projectArgs, recorded, "get_project ok"},
		{"failing read", "get_project", other, recorded, "get_project failed"},
		{"write", "deploy_project", projectArgs, func(e *env) {
			recorded(e)
			e.confs.EXPECT().CreateConfirmation(gomock.Any(), gomock.Any()).Times(1).Return(nil)
		}, "deploy_project pending"},
		{"unknown tool", "made_up_tool", projectArgs, func(*env) {}, ports.UnknownTool + " refused"},
		{"bad arguments", "get_project", `{"project_id":7}`, func(*env) {}, "get_project refused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, voice.Config{})
			c.stores(e)
			obs := &obsRecorder{}
			_, err := observed(e, obs).ToolCall(as(alice), voice.ToolCallInput{SessionID: aliceVoice, Name: c.tool,
				Arguments: json.RawMessage(c.args)})
			if refused := errCode(err) == string(ports.KindInvalid); (err != nil) != refused {
				t.Fatalf("ToolCall: %v", err)
			}
			if got := obs.calls(); !slices.Equal(got, []string{c.want}) {
				t.Errorf("the observer heard %q, want %q", got, c.want)
			}
		})
	}
}

// recorded allows the store calls of a call that is recorded in the session.
func recorded(e *env) {
	e.expectSession(alice, aliceVoice)
	e.expectTx(1)
	e.expectAppend()
	e.sessions.EXPECT().TouchSession(gomock.Any(), aliceVoice, gomock.Any()).Times(1).
		DoAndReturn(func(context.Context, string, time.Time) error { return nil })
}
