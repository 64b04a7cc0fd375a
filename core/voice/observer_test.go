package voice_test

import (
	"encoding/json"
	"slices"
	"sync"
	"testing"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/core/assistant"
	"github.com/devpilot/devpilot/core/voice"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/mocks"
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

// observed is a voice service over e's stores and tools, reporting to obs.
func observed(e *env, obs ports.Observer) *voice.Service {
	asst := assistant.New(assistant.Config{}, assistant.Deps{
		Sessions: e.spy, Messages: e.spy, Confirmations: e.spy, Events: e.spy, Turns: e.spy, Preferences: e.spy,
		Tx: e.spy, LLM: mocks.NewMockLLM(gomock.NewController(e.t)), Clock: e.clock, IDs: e.ids, Registry: e.reg,
	})
	return voice.New(voice.Config{}, voice.Deps{
		Assistant: asst, Sessions: e.spy, Messages: e.spy, Realtime: e.realtime, Transcriber: e.transcriber,
		Tx: e.spy, Clock: e.clock, IDs: e.ids, Observer: obs,
	})
}

func TestObserverHearsVoiceToolCalls(t *testing.T) {
	t.Parallel()
	other := `{"project_id":"0193a1b2-c3d4-7e5f-8a9b-000000000000"}`
	cases := []struct {
		name, tool, args string
		want             string
	}{
		{"read", "get_project", projectArgs, "get_project ok"},
		{"failing read", "get_project", other, "get_project failed"},
		{"write", "deploy_project", projectArgs, "deploy_project pending"},
		{"unknown tool", "made_up_tool", projectArgs, ports.UnknownTool + " refused"},
		{"bad arguments", "get_project", `{"project_id":7}`, "get_project refused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, voice.Config{})
			e.session(alice, aliceVoice)
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
