package voice_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/core/assistant"
	"github.com/devpilot/devpilot/core/voice"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/mocks"
)

// withPolicies gives the assistant a policy store holding rules (org → tool
// → always_confirm) that expects exactly lists ListToolPolicies calls.
func withPolicies(t *testing.T, rules map[string]map[string]bool, lists int, err error) func(*assistant.Deps) {
	return func(d *assistant.Deps) {
		store := mocks.NewMockToolPolicyStore(gomock.NewController(t))
		store.EXPECT().ListToolPolicies(gomock.Any(), gomock.Any()).Times(lists).DoAndReturn(
			func(ctx context.Context, orgID string) ([]ports.ToolPolicy, error) {
				if withinTx(ctx) {
					t.Error("the policy was read inside a transaction")
				}
				if err != nil {
					return nil, err
				}
				var out []ports.ToolPolicy
				for tool, on := range rules[orgID] {
					out = append(out, ports.ToolPolicy{OrgID: orgID, Tool: tool, AlwaysConfirm: on})
				}
				return out, nil
			})
		d.Policies = store
	}
}

func TestToolCallUnderPolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		tool    string
		rules   map[string]map[string]bool
		lists   int // reads of the policy: one per call, none for a write
		confirm bool
	}{
		{"a marked read is pending", "get_project", map[string]map[string]bool{"org-1": {"get_project": true}}, 1, true},
		{"an unmarked read runs", "get_project", map[string]map[string]bool{"org-1": {"get_project": false}}, 1, false},
		{"another org's mark does not apply", "get_project", map[string]map[string]bool{"org-2": {"get_project": true}}, 1, false},
		{"a write needs no policy", "deploy_project", nil, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, voice.Config{}, withPolicies(t, tc.rules, tc.lists, nil))
			e.expectSession(alice, aliceVoice)
			e.expectTx(1)
			stored := e.expectAppend()
			e.expectTouch(aliceVoice)
			if tc.confirm {
				e.confs.EXPECT().CreateConfirmation(gomock.Any(), gomock.Any()).Times(1).DoAndReturn(
					func(ctx context.Context, c ports.Confirmation) error {
						if !withinTx(ctx) {
							t.Error("CreateConfirmation outside the transaction")
						}
						return nil
					})
			}

			res, err := e.svc.ToolCall(as(alice), voice.ToolCallInput{SessionID: aliceVoice, Name: tc.tool,
				Arguments: json.RawMessage(projectArgs), CallID: "call_rt_9"})
			if err != nil {
				t.Fatal(err)
			}
			if !tc.confirm {
				if res.Confirmation != nil || res.Output == nil || e.reads.Load() != 1 || len(*stored) != 2 {
					t.Fatalf("result %+v, reads %d, stored %+v", res, e.reads.Load(), *stored)
				}
				return
			}
			c := res.Confirmation
			if c == nil || res.Output != nil || c.Status != ports.ConfirmationPending || c.ToolName != tc.tool ||
				c.ToolCallID != "call_rt_9" || res.Summary == "" || c.Summary != res.Summary {
				t.Fatalf("result %+v", res)
			}
			if e.reads.Load() != 0 || e.writes.Load() != 0 {
				t.Errorf("ran before approval: reads %d, writes %d", e.reads.Load(), e.writes.Load())
			}
			if msgs := *stored; len(msgs) != 1 || msgs[0].Role != ports.MessageAssistant {
				t.Errorf("stored %+v, want only the call", msgs)
			}
		})
	}
}

func TestToolCallPolicyUnreadable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, voice.Config{}, withPolicies(t, nil, 1, ports.Errorf(ports.KindUnavailable, "database down")))
	_, err := e.svc.ToolCall(as(alice), voice.ToolCallInput{SessionID: aliceVoice, Name: "get_project", Arguments: json.RawMessage(projectArgs)})
	if !errors.Is(err, ports.ErrUnavailable) || e.reads.Load() != 0 {
		t.Fatalf("ToolCall: %v, reads %d", err, e.reads.Load())
	}
}
