package bedrock_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/devpilot/devpilot/adapters/bedrock"
	"github.com/devpilot/devpilot/adapters/memstore"
	"github.com/devpilot/devpilot/core/cloud"
	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/hosts/sandbox/demomodel"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
)

// demoClient is a Client talking to the sandbox's demo model through the
// fake Bedrock.
func demoClient(t *testing.T) *bedrock.Client {
	t.Helper()
	c, script := newClient(t, nil)
	script.SetResponder(demomodel.New().Respond)
	return c
}

// jobList keeps what was enqueued.
type jobList struct {
	mu   sync.Mutex
	jobs []ports.JobArgs
}

func (j *jobList) Enqueue(_ context.Context, args ports.JobArgs, _ ports.EnqueueOptions) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.jobs = append(j.jobs, args)
	return nil
}

func (j *jobList) EnqueueMany(_ context.Context, args []ports.JobArgs, _ ports.EnqueueOptions) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.jobs = append(j.jobs, args...)
	return nil
}

func (j *jobList) last() ports.JobArgs {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.jobs[len(j.jobs)-1]
}

// TestDemoModelSpecPipeline runs every stage of a real core/spec.Service
// through the adapter, the fake Bedrock and the sandbox's demo model: each
// stage is asked for as a forced tool call and passes the engine's checks
// at the first attempt.
func TestDemoModelSpecPipeline(t *testing.T) {
	t.Parallel()
	store, jobs := memstore.New(), &jobList{}
	if err := store.CreateOrg(context.Background(), ports.Org{ID: "org-1", Name: "org-1"}); err != nil {
		t.Fatal(err)
	}
	if err := store.CreateUser(context.Background(), ports.User{ID: "user-alice", OrgID: "org-1", Email: "alice@example.com", Role: ports.RoleMember}); err != nil {
		t.Fatal(err)
	}
	svc := spec.New(spec.Config{}, spec.Deps{Specs: store, Standards: store, Tx: store, Jobs: jobs,
		LLM: demoClient(t), Clock: fixture.NewClock(), IDs: &fixture.IDs{}})
	ctx := ports.WithPrincipal(context.Background(), ports.Principal{UserID: "user-alice", OrgID: "org-1", Role: ports.RoleMember})
	v, err := svc.CreateSession(ctx, "Expenses", []spec.NewInput{{Kind: ports.InputDocument, Title: "expenses.md",
		ContentType: "text/markdown", Content: "# Expense approvals\n\n## Requirements\n" +
			"- Employees can submit an expense with a photo of its receipt.\n" +
			"- Managers approve or reject the pending expenses of their team.\n" +
			"- Finance exports approved expenses as CSV for the ledger.\n"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range ports.Stages {
		if _, err := svc.Generate(ctx, v.Session.ID, ""); err != nil {
			t.Fatalf("generate %s: %v", st, err)
		}
		if err := svc.RunGeneration(context.Background(), jobs.last().(spec.GenerateStageArgs), true); err != nil {
			t.Fatalf("run %s: %v", st, err)
		}
		got, err := svc.GetSession(ctx, v.Session.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Session.Status != ports.SpecReady || got.Session.Error != nil {
			t.Fatalf("after %s: status %s, error %+v", st, got.Session.Status, got.Session.Error)
		}
		a := got.Artifacts[len(got.Artifacts)-1]
		if a.Stage != st || len(a.Checks) != 0 || len(a.Data) == 0 {
			t.Fatalf("%s artifact: stage %s, checks %q", st, a.Stage, a.Checks)
		}
	}
}

// TestDemoModelAssistantTools has the demo model call the assistant's real
// cloud tools through the fake Bedrock, and answer their results.
func TestDemoModelAssistantTools(t *testing.T) {
	t.Parallel()
	reg := tool.NewRegistry()
	if err := reg.Register(cloud.New(cloud.Config{}, cloud.Deps{}).Tools()...); err != nil {
		t.Fatal(err)
	}
	message := "what runs in production?"
	defs := reg.RouteFollowing(nil, message, nil, 0)
	c := demoClient(t)
	msgs := []ports.Message{{Role: ports.MessageSystem, Content: "You are devpilot's assistant."}, {Role: ports.MessageUser, Content: message}}
	for round := 0; ; round++ {
		if round == 6 {
			t.Fatal("more than 6 tool rounds")
		}
		res, err := c.Chat(context.Background(), ports.ChatRequest{Messages: msgs, Tools: defs}, nil)
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, ports.Message{Role: ports.MessageAssistant, Content: res.Content, ToolCalls: res.ToolCalls})
		if len(res.ToolCalls) == 0 {
			if round == 0 || res.Content == "" || res.FinishReason != ports.FinishStop {
				t.Fatalf("round %d: %+v", round, res)
			}
			return
		}
		if res.FinishReason != ports.FinishToolCalls {
			t.Fatalf("finish %s with calls", res.FinishReason)
		}
		for _, call := range res.ToolCalls {
			if _, _, problem := reg.CheckWith(call, tool.Known{}); problem != "" {
				t.Fatalf("call %s(%s) refused: %s", call.Name, call.Arguments, problem)
			}
			msgs = append(msgs, ports.Message{Role: ports.MessageTool, ToolCallID: call.ID, Name: call.Name,
				Content: tool.Content(ports.ToolOutcome{OK: true, Result: json.RawMessage(`{"items":[]}`)})})
		}
	}
}
