package assistant_test

import (
	"context"
	"slices"
	"testing"

	"github.com/devpilot/devpilot/core/assistant"
	usagecore "github.com/devpilot/devpilot/core/usage"
	"github.com/devpilot/devpilot/ports"
)

// A turn whose second model call is refused because the organisation's
// token budget ran out ends with a budget_exceeded error event and done:
// the tool call and its result stay, and no assistant message is half
// written by the refused call.
func TestChatOutOfBudgetMidTurnEndsWithErrorAndDone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{}, func(d *assistant.Deps) {
		budgets := usagecore.NewBudgets(d.Tx.(ports.UsageStore), d.Tx.(ports.BudgetStore), d.Clock, 15) // one call's worth
		d.LLM = usagecore.NewMeter(d.LLM, d.Tx.(ports.UsageStore), d.Clock, "m", nil).Enforce(budgets)
	})
	var runs counter
	e.register(readTool("get_project", &runs, map[string]string{"name": "Apollo"}))
	e.script(func(context.Context, ports.ChatRequest, func(string) error) (ports.ChatResult, error) {
		args := `{"project_id":"` + projectID + `"}`
		return ports.ChatResult{ToolCalls: []ports.ToolCall{{ID: "c1", Name: "get_project", Arguments: args}},
			FinishReason: ports.FinishToolCalls, Usage: usage}, nil
	}) // the second call never reaches the model
	sid, evs := e.chat(as(alice), assistant.ChatInput{Message: "which project?"})

	if want := []string{"tool_call", "tool_result", "error", "done"}; !slices.Equal(names(evs), want) {
		t.Fatalf("events %v, want %v", names(evs), want)
	}
	er := decode[assistant.ErrorData](t, evs[2])
	if er.Code != ports.CodeBudgetExceeded || !er.Retryable {
		t.Errorf("error %+v, want budget_exceeded, retryable", er)
	}
	if done := decode[assistant.DoneData](t, evs[3]); done.FinishReason != "error" {
		t.Errorf("done %+v", done)
	}
	for _, m := range e.messages(sid) {
		if m.Role == ports.MessageAssistant && m.Content != "" {
			t.Errorf("a half-written assistant message was stored: %+v", m)
		}
	}
	if runs.runs() != 1 {
		t.Errorf("the tool ran %d times, want 1", runs.runs())
	}
	e.endedOnce()
}
