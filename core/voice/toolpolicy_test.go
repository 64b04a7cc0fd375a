package voice_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/devpilot/devpilot/core/assistant"
	"github.com/devpilot/devpilot/core/voice"
	"github.com/devpilot/devpilot/ports"
)

// policies passes ListToolPolicies on to the store, checking it is not
// called inside a transaction and counting the calls; it can fail them.
type policies struct {
	ports.ToolPolicyStore
	t     *testing.T
	fail  error
	lists atomic.Int32
}

func (p *policies) ListToolPolicies(ctx context.Context, orgID string) ([]ports.ToolPolicy, error) {
	p.lists.Add(1)
	if withinTx(ctx) {
		p.t.Error("the policy was read inside a transaction")
	}
	if p.fail != nil {
		return nil, p.fail
	}
	return p.ToolPolicyStore.ListToolPolicies(ctx, orgID)
}

// withPolicies gives the assistant the store's policies, holding rules (org
// → tool → always_confirm), and checks they are listed exactly lists times;
// each list fails with err when it is set.
func withPolicies(t *testing.T, rules map[string]map[string]bool, lists int, err error) func(*env, *assistant.Deps) {
	return func(e *env, d *assistant.Deps) {
		ctx := context.Background()
		if err := e.store.CreateOrg(ctx, ports.Org{ID: "org-2", Name: "two"}); err != nil {
			t.Fatal(err)
		}
		for org, tools := range rules {
			for tool, on := range tools {
				if err := e.store.SetAlwaysConfirm(ctx, org, tool, on, "user-seed", e.clock.Now()); err != nil {
					t.Fatal(err)
				}
			}
		}
		pol := &policies{ToolPolicyStore: e.store, t: t, fail: err}
		t.Cleanup(func() {
			if n := pol.lists.Load(); n != int32(lists) {
				t.Errorf("the policy was listed %d times, want %d", n, lists)
			}
		})
		d.Policies = pol
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
			e.session(alice, aliceVoice)

			res, err := e.svc.ToolCall(as(alice), voice.ToolCallInput{SessionID: aliceVoice, Name: tc.tool,
				Arguments: json.RawMessage(projectArgs), CallID: "call_rt_9"})
			if err != nil {
				t.Fatal(err)
			}
			e.checkTouched(alice, aliceVoice)
			stored := e.messages(aliceVoice)
			if !tc.confirm {
				e.checkWrites(1, "AppendMessages (tx)", "TouchSession (tx)")
				if res.Confirmation != nil || res.Output == nil || e.reads.Load() != 1 || len(stored) != 2 {
					t.Fatalf("result %+v, reads %d, stored %+v", res, e.reads.Load(), stored)
				}
				return
			}
			e.checkWrites(1, "CreateConfirmation (tx)", "AppendMessages (tx)", "TouchSession (tx)")
			c := res.Confirmation
			if c == nil || res.Output != nil || c.Status != ports.ConfirmationPending || c.ToolName != tc.tool ||
				c.ToolCallID != "call_rt_9" || res.Summary == "" || c.Summary != res.Summary {
				t.Fatalf("result %+v", res)
			}
			if e.reads.Load() != 0 || e.writes.Load() != 0 {
				t.Errorf("ran before approval: reads %d, writes %d", e.reads.Load(), e.writes.Load())
			}
			if msgs := stored; len(msgs) != 1 || msgs[0].Role != ports.MessageAssistant {
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
	e.checkWrites(0)
}
