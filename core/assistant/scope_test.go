package assistant_test

import (
	"strings"

	"testing"

	"github.com/devpilot/devpilot/core/assistant"
	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/ports"
)

// TestConfirmChecksTheToolsScope: a token that may chat but not write the
// cloud cannot approve a cloud write: 403 insufficient_scope naming
// cloud:write, nothing runs, the confirmation stays pending; a token that
// may write the cloud then approves it.
func TestConfirmChecksTheToolsScope(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{})
	var runs counter
	scale := writeTool("scale_service", &runs, map[string]string{"status": "scaled"})
	scale.Area = tool.AreaCloud
	e.register(scale)
	e.script(call("c1", "scale_service", projectArgs))
	chatter := alice
	chatter.TokenID, chatter.Scopes = "tok-1", []string{"assistant:write", "cloud:read"}
	sid, _ := e.chat(as(chatter), assistant.ChatInput{Message: "scale"})
	confs := e.confirmations(sid)
	if len(confs) != 1 {
		t.Fatalf("%d confirmations", len(confs))
	}

	_, err := e.svc.Confirm(as(chatter), assistant.ConfirmInput{SessionID: sid, ConfirmationID: confs[0].ID, Approved: true})
	if !ports.IsKind(err, ports.KindForbidden) || errCode(err) != ports.CodeInsufficientScope || !containsAll(err.Error(), "cloud:write") {
		t.Fatalf("approving a cloud write with assistant:write: %v", err)
	}
	if runs.runs() != 0 || e.confirmations(sid)[0].Status != ports.ConfirmationPending {
		t.Fatalf("refused, yet runs %d, status %s", runs.runs(), e.confirmations(sid)[0].Status)
	}

	operator := chatter
	operator.Scopes = []string{"assistant", "cloud:write"}
	res, err := e.svc.Confirm(as(operator), assistant.ConfirmInput{SessionID: sid, ConfirmationID: confs[0].ID, Approved: true})
	if err != nil || res.Outcome == nil || !res.Outcome.OK || runs.runs() != 1 {
		t.Fatalf("approving with cloud:write: %+v, %v, runs %d", res, err, runs.runs())
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// TestChatReadToolNeedsItsAreasScope: a token that may chat but not read
// the cloud gets a failed result for a cloud read the model asks for; the
// tool never runs.
func TestChatReadToolNeedsItsAreasScope(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{})
	var runs counter
	list := readTool("list_services", &runs, []string{"web"})
	list.Area = tool.AreaCloud
	e.register(list)
	e.script(call("c1", "list_services", projectArgs), say("I cannot."))
	chatter := alice
	chatter.TokenID, chatter.Scopes = "tok-1", []string{"assistant"}
	_, evs := e.chat(as(chatter), assistant.ChatInput{Message: "list the services"})
	var tr assistant.ToolResultData
	for _, ev := range evs {
		if ev.Name == "tool_result" {
			tr = decode[assistant.ToolResultData](t, ev)
		}
	}
	if tr.OK || !strings.Contains(tr.Error, "cloud:read") || runs.runs() != 0 {
		t.Fatalf("tool_result %+v, runs %d", tr, runs.runs())
	}
}
