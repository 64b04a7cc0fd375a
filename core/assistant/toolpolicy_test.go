package assistant_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/devpilot/devpilot/core/assistant"
	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/ports"
)

var (
	carol = ports.Principal{UserID: "user-carol", OrgID: "org-1", Role: ports.RoleAdmin}
	dave  = ports.Principal{UserID: "user-dave", OrgID: "org-2", Role: ports.RoleAdmin}
)

// policies passes ListToolPolicies on to the store, counting the calls; it
// can fail them.
type policies struct {
	ports.ToolPolicyStore
	mu    sync.Mutex
	lists int
	fail  error // when set, every ListToolPolicies fails with it
}

func (p *policies) ListToolPolicies(ctx context.Context, orgID string) ([]ports.ToolPolicy, error) {
	p.mu.Lock()
	p.lists++
	fail := p.fail
	p.mu.Unlock()
	if fail != nil {
		return nil, fail
	}
	return p.ToolPolicyStore.ListToolPolicies(ctx, orgID)
}

func (p *policies) listed() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lists
}

// newPolicyEnv is newEnv with the store's policies, holding rules (org →
// tool → always_confirm).
func newPolicyEnv(t *testing.T, rules map[string]map[string]bool) (*env, *policies) {
	t.Helper()
	pol := &policies{}
	e := newEnv(t, assistant.Config{}, func(d *assistant.Deps) { d.Policies = pol })
	pol.ToolPolicyStore = e.store
	for org, tools := range rules {
		for tl, on := range tools {
			if err := e.store.SetAlwaysConfirm(context.Background(), org, tl, on, "user-seed", e.clock.Now()); err != nil {
				t.Fatal(err)
			}
		}
	}
	return e, pol
}

// storedPolicies returns every org's policies, read from the store.
func (e *env) storedPolicies() []ports.ToolPolicy {
	e.t.Helper()
	var out []ports.ToolPolicy
	for _, org := range []string{"org-1", "org-2"} {
		list, err := e.store.ListToolPolicies(context.Background(), org)
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, list...)
	}
	return out
}

func TestChatUnderToolPolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		rules map[string]map[string]bool
		// confirm says the read waits for a confirmation.
		confirm bool
	}{
		{"a marked read asks for confirmation", map[string]map[string]bool{"org-1": {"get_project": true}}, true},
		{"an unmarked read runs at once", map[string]map[string]bool{"org-1": {"get_project": false}}, false},
		{"a read without a policy runs at once", nil, false},
		{"another org's policy does not apply", map[string]map[string]bool{"org-2": {"get_project": true}}, false},
		{"marking another tool changes nothing", map[string]map[string]bool{"org-1": {"list_projects": true}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, pol := newPolicyEnv(t, tc.rules)
			var runs counter
			e.register(readTool("get_project", &runs, map[string]string{"name": "Apollo"}))
			replies := []reply{call("c1", "get_project", projectArgs)}
			if !tc.confirm {
				replies = append(replies, say("It is Apollo."))
			}
			e.script(replies...)

			sid, evs := e.chat(as(alice), assistant.ChatInput{Message: "which project?"})
			done := decode[assistant.DoneData](t, evs[len(evs)-1])
			if pol.listed() != 1 {
				t.Errorf("the policy was listed %d times, want 1", pol.listed())
			}
			if !tc.confirm {
				if want := []string{"tool_call", "tool_result", "content", "done"}; !slices.Equal(names(evs), want) {
					t.Fatalf("events %v, want %v", names(evs), want)
				}
				if runs.runs() != 1 || done.FinishReason != "stop" || len(e.confirmations(sid)) != 0 {
					t.Fatalf("runs %d, done %+v, confirmations %+v", runs.runs(), done, e.confirmations(sid))
				}
				return
			}

			if want := []string{"tool_call", "confirmation_required", "done"}; !slices.Equal(names(evs), want) {
				t.Fatalf("events %v, want %v", names(evs), want)
			}
			if runs.runs() != 0 || done.FinishReason != "confirmation_required" {
				t.Fatalf("before approval: runs %d, done %+v", runs.runs(), done)
			}
			cr := decode[assistant.ConfirmationRequiredData](t, evs[1])
			if cr.Name != "get_project" || cr.ToolCallID != "c1" || string(cr.Arguments) != projectArgs || cr.Summary == "" {
				t.Errorf("confirmation_required %+v", cr)
			}

			// Approved, the read runs exactly once; deciding again is a conflict.
			res, err := e.svc.Confirm(as(alice), assistant.ConfirmInput{SessionID: sid, ConfirmationID: cr.ConfirmationID, Approved: true})
			if err != nil || res.Outcome == nil || !res.Outcome.OK || string(res.Outcome.Result) != `{"name":"Apollo"}` {
				t.Fatalf("Confirm: %+v %v", res, err)
			}
			if _, err := e.svc.Confirm(as(alice), assistant.ConfirmInput{SessionID: sid, ConfirmationID: cr.ConfirmationID, Approved: true}); errCode(err) != "already_decided" {
				t.Errorf("second Confirm: %v", err)
			}
			if runs.runs() != 1 {
				t.Errorf("the read ran %d times, want 1", runs.runs())
			}
			msgs := e.messages(sid)
			if last := msgs[len(msgs)-1]; last.Role != ports.MessageTool || last.ToolCallID != "c1" {
				t.Errorf("the answer was not appended: %+v", last)
			}
		})
	}
}

func TestChatRejectedMarkedReadNeverRuns(t *testing.T) {
	t.Parallel()
	e, _ := newPolicyEnv(t, map[string]map[string]bool{"org-1": {"get_project": true}})
	var runs counter
	e.register(readTool("get_project", &runs, "apollo"))
	e.script(call("c1", "get_project", projectArgs))
	sid, _ := e.chat(as(alice), assistant.ChatInput{Message: "which project?"})
	conf := e.confirmations(sid)[0]
	res, err := e.svc.Confirm(as(alice), assistant.ConfirmInput{SessionID: sid, ConfirmationID: conf.ID, Approved: false})
	if err != nil || res.Confirmation.Status != ports.ConfirmationRejected || runs.runs() != 0 {
		t.Fatalf("reject: %+v %v, runs %d", res, err, runs.runs())
	}
}

// The policy is read once per turn, at the first read called, whatever the
// number of calls and rounds; a turn that calls no read does not read it.
func TestChatReadsThePolicyOncePerTurn(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		replies func() []reply
		lists   int
		runs    int
		asked   int
	}{
		{"no tools", func() []reply { return []reply{say("hello")} }, 0, 0, 0},
		{"writes only", func() []reply { return []reply{call("c1", "deploy_service", projectArgs)} }, 0, 0, 1},
		{"reads over two rounds", func() []reply {
			return []reply{
				call("c1", "get_project", projectArgs, "c2", "list_projects", projectArgs),
				call("c3", "get_project", projectArgs),
				say("done"),
			}
		}, 1, 3, 0},
		{"a marked read among others", func() []reply {
			return []reply{
				call("c1", "get_project", projectArgs, "c2", "audit_project", projectArgs, "c3", "deploy_service", projectArgs),
			}
		}, 1, 1, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, pol := newPolicyEnv(t, map[string]map[string]bool{"org-1": {"audit_project": true}})
			var reads, writes counter
			e.register(readTool("get_project", &reads, "apollo"), readTool("list_projects", &reads, "all"),
				readTool("audit_project", &reads, "audited"), writeTool("deploy_service", &writes, "ok"))
			e.script(tc.replies()...)
			_, evs := e.chat(as(alice), assistant.ChatInput{Message: "go"})
			if pol.listed() != tc.lists {
				t.Errorf("the policy was listed %d times, want %d", pol.listed(), tc.lists)
			}
			if reads.runs() != tc.runs || writes.runs() != 0 {
				t.Errorf("reads ran %d times (want %d), writes %d", reads.runs(), tc.runs, writes.runs())
			}
			if n := len(only[assistant.ConfirmationRequiredData](t, evs, assistant.EventConfirmationRequired)); n != tc.asked {
				t.Errorf("%d confirmations asked, want %d", n, tc.asked)
			}
		})
	}
}

func TestChatPolicyUnreadableRefusesReads(t *testing.T) {
	t.Parallel()
	e, pol := newPolicyEnv(t, nil)
	pol.fail = ports.Errorf(ports.KindUnavailable, "database down")
	var runs counter
	e.register(readTool("get_project", &runs, "apollo"))
	e.script(call("c1", "get_project", projectArgs, "c2", "get_project", projectArgs), say("Sorry."))
	_, evs := e.chat(as(alice), assistant.ChatInput{Message: "which project?"})
	results := only[assistant.ToolResultData](t, evs, assistant.EventToolResult)
	if runs.runs() != 0 || len(results) != 2 || results[0].OK || results[1].OK || pol.listed() != 1 {
		t.Fatalf("runs %d, results %+v, listed %d", runs.runs(), results, pol.listed())
	}
	if done := decode[assistant.DoneData](t, evs[len(evs)-1]); done.FinishReason != "stop" {
		t.Errorf("done %+v", done)
	}
}

func TestExecuteToolUnderPolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		as      ports.Principal
		rules   map[string]map[string]bool
		confirm bool
	}{
		{"marked read waits", alice, map[string]map[string]bool{"org-1": {"get_project": true}}, true},
		{"unmarked read runs", alice, map[string]map[string]bool{"org-1": {"get_project": false}}, false},
		{"another org's mark does not apply", alice, map[string]map[string]bool{"org-2": {"get_project": true}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, pol := newPolicyEnv(t, tc.rules)
			var runs counter
			e.register(readTool("get_project", &runs, "apollo"))
			e.script(say("hi"))
			sid, _ := e.chat(as(tc.as), assistant.ChatInput{Message: "hi"})

			ex, err := e.svc.ExecuteTool(as(tc.as), sid, ports.ToolCall{ID: "v1", Name: "get_project", Arguments: projectArgs})
			if err != nil {
				t.Fatal(err)
			}
			if pol.listed() != 1 {
				t.Errorf("the policy was listed %d times, want 1", pol.listed())
			}
			if !tc.confirm {
				if ex.Outcome == nil || !ex.Outcome.OK || ex.Confirmation != nil || runs.runs() != 1 {
					t.Fatalf("read: %+v, runs %d", ex, runs.runs())
				}
				return
			}
			if ex.Confirmation == nil || ex.Outcome != nil || runs.runs() != 0 || ex.Confirmation.Summary == "" {
				t.Fatalf("marked read: %+v, runs %d", ex, runs.runs())
			}
			res, err := e.svc.Confirm(as(tc.as), assistant.ConfirmInput{SessionID: sid, ConfirmationID: ex.Confirmation.ID, Approved: true})
			if err != nil || res.Outcome == nil || !res.Outcome.OK || runs.runs() != 1 {
				t.Fatalf("Confirm: %+v %v, runs %d", res, err, runs.runs())
			}
		})
	}
}

func TestExecuteToolUnderAPolicyReadBefore(t *testing.T) {
	t.Parallel()
	e, pol := newPolicyEnv(t, map[string]map[string]bool{"org-1": {"get_project": true}})
	var runs counter
	e.register(readTool("get_project", &runs, "apollo"))
	e.script(say("hi"))
	sid, _ := e.chat(as(alice), assistant.ChatInput{Message: "hi"})
	p, err := e.svc.Policy(as(alice))
	if err != nil {
		t.Fatal(err)
	}
	ex, err := e.svc.ExecuteToolUnder(as(alice), sid, ports.ToolCall{Name: "get_project", Arguments: projectArgs}, p)
	if err != nil || ex.Confirmation == nil || runs.runs() != 0 || pol.listed() != 1 {
		t.Fatalf("%+v %v, runs %d, listed %d", ex, err, runs.runs(), pol.listed())
	}
	// Another org's policy is not used: the caller's is read.
	other, err := e.svc.Policy(as(dave))
	if err != nil {
		t.Fatal(err)
	}
	ex, err = e.svc.ExecuteToolUnder(as(alice), sid, ports.ToolCall{Name: "get_project", Arguments: projectArgs}, other)
	if err != nil || ex.Confirmation == nil || runs.runs() != 0 || pol.listed() != 3 {
		t.Fatalf("%+v %v, runs %d, listed %d", ex, err, runs.runs(), pol.listed())
	}
}

func TestSetToolPolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		as       ports.Principal
		tl       string
		on       bool
		wantKind ports.Kind
		wantCode string
		want     assistant.ToolInfo
	}{
		{"admin marks a read", carol, "get_project", true, "", "",
			assistant.ToolInfo{Name: "get_project", Description: "reads get_project", Effect: tool.EffectRead, AlwaysConfirm: true}},
		{"admin unmarks a read", carol, "get_project", false, "", "",
			assistant.ToolInfo{Name: "get_project", Description: "reads get_project", Effect: tool.EffectRead}},
		{"admin marks a write", carol, "deploy_service", true, "", "",
			assistant.ToolInfo{Name: "deploy_service", Description: "changes deploy_service", Effect: tool.EffectWrite, AlwaysConfirm: true}},
		{"a write cannot be unmarked", carol, "deploy_service", false, ports.KindInvalid, assistant.CodeWriteAlwaysConfirms, assistant.ToolInfo{}},
		{"a member cannot set policy", alice, "get_project", true, ports.KindForbidden, "forbidden", assistant.ToolInfo{}},
		{"a member cannot unmark either", alice, "get_project", false, ports.KindForbidden, "forbidden", assistant.ToolInfo{}},
		{"unknown tool", carol, "no_such_tool", true, ports.KindNotFound, "not_found", assistant.ToolInfo{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, _ := newPolicyEnv(t, nil)
			var runs counter
			e.register(readTool("get_project", &runs, "apollo"), writeTool("deploy_service", &runs, "ok"))

			got, err := e.svc.SetToolPolicy(as(tc.as), tc.tl, tc.on)
			if tc.wantKind != "" {
				pe, ok := ports.AsError(err)
				if !ok || pe.Kind != tc.wantKind || pe.ErrorCode() != tc.wantCode {
					t.Fatalf("SetToolPolicy: %v, want %s (%s)", err, tc.wantKind, tc.wantCode)
				}
				if sets := e.storedPolicies(); len(sets) != 0 {
					t.Errorf("stored %+v", sets)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("SetToolPolicy = %+v, %v; want %+v", got, err, tc.want)
			}
			want := []ports.ToolPolicy{{OrgID: tc.as.OrgID, Tool: tc.tl, AlwaysConfirm: tc.on, UpdatedBy: tc.as.UserID, UpdatedAt: e.clock.Now()}}
			if sets := e.storedPolicies(); !slices.Equal(sets, want) {
				t.Errorf("stored %+v, want %+v", sets, want)
			}
		})
	}
}

func TestListTools(t *testing.T) {
	t.Parallel()
	e, _ := newPolicyEnv(t, map[string]map[string]bool{"org-1": {"get_project": true, "list_projects": false}, "org-2": {"list_projects": true}})
	var runs counter
	e.register(readTool("list_projects", &runs, "all"), writeTool("deploy_service", &runs, "ok"), readTool("get_project", &runs, "apollo"))
	for _, tc := range []struct {
		as     ports.Principal
		marked []string // the tools listed with always_confirm, in order
	}{
		{alice, []string{"deploy_service", "get_project"}},
		{carol, []string{"deploy_service", "get_project"}},
		{dave, []string{"deploy_service", "list_projects"}},
	} {
		tools, err := e.svc.ListTools(as(tc.as))
		if err != nil {
			t.Fatal(err)
		}
		var order, marked []string
		for _, tl := range tools {
			order = append(order, tl.Name)
			if tl.AlwaysConfirm {
				marked = append(marked, tl.Name)
			}
		}
		if want := []string{"deploy_service", "get_project", "list_projects"}; !slices.Equal(order, want) {
			t.Errorf("%s: tools %v, want %v", tc.as.UserID, order, want)
		}
		if !slices.Equal(marked, tc.marked) {
			t.Errorf("%s: marked %v, want %v", tc.as.UserID, marked, tc.marked)
		}
		if tools[0].Effect != tool.EffectWrite || tools[0].Description != "changes deploy_service" {
			t.Errorf("%+v", tools[0])
		}
	}
	if _, err := e.svc.ListTools(context.Background()); !errors.Is(err, ports.ErrUnauthenticated) {
		t.Errorf("without a principal: %v", err)
	}
}

// Without a policy store no tool is marked, and policies cannot be set.
func TestToolPolicyWithoutAStore(t *testing.T) {
	t.Parallel()
	e := newEnv(t, assistant.Config{})
	var runs counter
	e.register(readTool("get_project", &runs, "apollo"))
	tools, err := e.svc.ListTools(as(alice))
	if err != nil || len(tools) != 1 || tools[0].AlwaysConfirm {
		t.Fatalf("ListTools: %+v %v", tools, err)
	}
	if _, err := e.svc.SetToolPolicy(as(carol), "get_project", true); !errors.Is(err, ports.ErrUnavailable) {
		t.Errorf("SetToolPolicy: %v, want unavailable", err)
	}
	e.script(call("c1", "get_project", projectArgs), say("Apollo."))
	if _, evs := e.chat(as(alice), assistant.ChatInput{Message: "which?"}); runs.runs() != 1 || !slices.Contains(names(evs), "tool_result") {
		t.Errorf("events %v, runs %d", names(evs), runs.runs())
	}
}
