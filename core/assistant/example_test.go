package assistant_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/devpilot/devpilot/adapters/memstore"
	"github.com/devpilot/devpilot/core/assistant"
	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
)

// scriptedLLM is a ports.LLM that answers each call with the next of its
// results, streaming the text as one delta; unavailable once they run out.
type scriptedLLM []ports.ChatResult

func (s *scriptedLLM) Chat(_ context.Context, _ ports.ChatRequest, onDelta func(string) error) (ports.ChatResult, error) {
	if len(*s) == 0 {
		return ports.ChatResult{}, ports.Errorf(ports.KindUnavailable, "the script has ended")
	}
	res := (*s)[0]
	*s = (*s)[1:]
	if onDelta != nil && res.Content != "" {
		if err := onDelta(res.Content); err != nil {
			return ports.ChatResult{}, err
		}
	}
	return res, nil
}

// check and must stop the example on an error.
func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

func must[T any](v T, err error) T { check(err); return v }

// The assistant embedded on its own: a custom write tool, a scripted model
// and the in-memory stores of adapters/memstore. The model calls the tool; a
// write waits for a human, so the turn ends asking for a confirmation.
// Approved, the tool runs; Continue then lets the model answer.
func Example() {
	store, tools := memstore.New(), tool.NewRegistry()
	ctx := ports.WithPrincipal(context.Background(), ports.Principal{UserID: "user-1", OrgID: "org-1", Role: ports.RoleMember})
	check(errors.Join(
		store.CreateOrg(ctx, ports.Org{ID: "org-1", Name: "Acme"}),
		store.CreateUser(ctx, ports.User{ID: "user-1", OrgID: "org-1", Email: "ada@example.com", Role: ports.RoleMember}),
		tools.Register(tool.Tool{Name: "restart_service", Description: "Restarts a service.", Effect: tool.EffectWrite,
			Schema:  json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`),
			Summary: func(args json.RawMessage) string { return "Restart the service " + string(args) + "." },
			Run:     func(context.Context, json.RawMessage) (any, error) { return "restarted", nil },
		})))
	llm := &scriptedLLM{
		{ToolCalls: []ports.ToolCall{{ID: "call_1", Name: "restart_service", Arguments: `{"name":"api"}`}}, FinishReason: ports.FinishToolCalls},
		{Content: "The api service has been restarted.", FinishReason: ports.FinishStop},
	}
	svc := assistant.New(assistant.Config{}, assistant.Deps{Sessions: store, Messages: store, Confirmations: store,
		Events: store, Turns: store, Preferences: store, Tx: store, LLM: llm, Clock: fixture.NewClock(), IDs: &fixture.IDs{}, Registry: tools})

	var asked assistant.ConfirmationRequiredData
	show := func(ev assistant.Event) error {
		if ev.Name == assistant.EventConfirmationRequired {
			_ = json.Unmarshal(ev.Data, &asked)
		}
		var d struct{ Summary, Delta string }
		_ = json.Unmarshal(ev.Data, &d)
		fmt.Println(strings.TrimSpace(ev.Name + " " + d.Summary + d.Delta))
		return nil
	}
	run := must(svc.Chat(ctx, assistant.ChatInput{Message: "Please restart the api service"}))
	check(run.Stream(ctx, show)) // an error: the turn could not be stored
	res := must(svc.Confirm(ctx, assistant.ConfirmInput{SessionID: run.SessionID(), ConfirmationID: asked.ConfirmationID, Approved: true}))
	fmt.Println(res.Confirmation.Status, string(res.Outcome.Result))
	check(must(svc.Continue(ctx, run.SessionID())).Stream(ctx, show))
	// Output:
	// tool_call
	// confirmation_required Restart the service {"name":"api"}.
	// done
	// approved "restarted"
	// tool_result
	// content The api service has been restarted.
	// done
}
