package assistant_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/devpilot/devpilot/core/assistant"
	"github.com/devpilot/devpilot/ports"
)

// switchGuard refuses deploy_service while closed.
type switchGuard struct{ open atomic.Bool }

func (g *switchGuard) CheckTool(_ context.Context, name string) error {
	if name == "deploy_service" && !g.open.Load() {
		return ports.PermissionDenied(ports.PermCloudDeploy, []ports.Role{ports.RoleAdmin, ports.RoleOperator})
	}
	return nil
}

// TestGuard: a write the Guard refuses is answered in words when the model
// proposes it, asks for no confirmation and does not run; a confirmation
// proposed while allowed is refused at approval once the Guard closes (left
// pending), and runs once it opens again.
func TestGuard(t *testing.T) {
	t.Parallel()
	g := &switchGuard{}
	e := newEnv(t, assistant.Config{}, func(d *assistant.Deps) { d.Guard = g })
	runs := &counter{}
	e.register(writeTool("deploy_service", runs, map[string]string{"status": "deployed"}))
	e.script(call("call_1", "deploy_service", projectArgs), say("Not allowed."))
	sid, evs := e.chat(as(alice), assistant.ChatInput{Message: "deploy"})
	res := only[assistant.ToolResultData](t, evs, assistant.EventToolResult)
	if len(res) != 1 || res[0].OK || !strings.Contains(res[0].Error, "cloud.deploy needs the admin or operator role") {
		t.Fatalf("tool results %+v", res)
	}
	if n := len(e.confirmations(sid)); n != 0 || runs.runs() != 0 {
		t.Fatalf("%d confirmations, %d runs of a refused write", n, runs.runs())
	}

	g.open.Store(true)
	e.script(call("call_2", "deploy_service", projectArgs))
	sid, _ = e.chat(as(alice), assistant.ChatInput{Message: "deploy"})
	confs := e.confirmations(sid)
	if len(confs) != 1 {
		t.Fatalf("confirmations %+v", confs)
	}
	g.open.Store(false)
	in := assistant.ConfirmInput{SessionID: sid, ConfirmationID: confs[0].ID, Approved: true}
	_, err := e.svc.Confirm(as(alice), in)
	if !errors.Is(err, ports.ErrForbidden) || errCode(err) != ports.CodePermissionDenied || runs.runs() != 0 {
		t.Fatalf("confirm while refused: %v (%s), %d runs", err, errCode(err), runs.runs())
	}
	if _, err := e.svc.ExecuteTool(as(alice), sid, ports.ToolCall{Name: "deploy_service", Arguments: projectArgs}); !errors.Is(err, ports.ErrForbidden) {
		t.Fatalf("ExecuteTool while refused: %v", err)
	}
	g.open.Store(true)
	if r, err := e.svc.Confirm(as(alice), in); err != nil || r.Outcome == nil || !r.Outcome.OK || runs.runs() != 1 {
		t.Fatalf("confirm once allowed: %+v, %v, %d runs", r, err, runs.runs())
	}
}
