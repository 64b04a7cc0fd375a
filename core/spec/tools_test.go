package spec_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/core/assistant"
	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/mocks"
)

const chatID = "00000000-0000-7000-8000-00000000c0de"

// toolEnv registers the spec tools in a registry and an assistant service
// that carries out calls the way the chat loop does.
func toolEnv(t *testing.T) (*env, *tool.Registry, *assistant.Service) {
	t.Helper()
	e := newEnv(t, spec.Config{})
	reg := tool.NewRegistry()
	if err := reg.Register(e.svc.Tools()...); err != nil {
		t.Fatalf("Register: %v", err)
	}
	ctrl := gomock.NewController(t)
	sessions := mocks.NewMockChatSessionStore(ctrl)
	sessions.EXPECT().GetSession(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(
		func(_ context.Context, o ports.Owner, id string) (ports.ChatSession, error) {
			return ports.ChatSession{ID: id, OrgID: o.OrgID, UserID: o.UserID}, nil
		})
	confs := mocks.NewMockConfirmationStore(ctrl)
	confs.EXPECT().CreateConfirmation(gomock.Any(), gomock.Any()).AnyTimes().Return(nil)
	asst := assistant.New(assistant.Config{}, assistant.Deps{Sessions: sessions, Confirmations: confs, Clock: e.clock, IDs: e.ids, Registry: reg})
	return e, reg, asst
}

func TestToolsRegister(t *testing.T) {
	t.Parallel()
	_, reg, _ := toolEnv(t)
	want := map[string]tool.Effect{
		"add_spec_input": tool.EffectWrite, "generate_spec_stage": tool.EffectWrite, "export_spec_to_github": tool.EffectWrite,
		"get_spec_session": tool.EffectRead, "list_spec_sessions": tool.EffectRead,
	}
	defs := reg.Definitions()
	if len(defs) != len(want) {
		t.Fatalf("definitions %+v", defs)
	}
	for _, d := range defs {
		tl, ok := reg.Lookup(d.Name)
		if !ok || tl.Effect != want[d.Name] || d.Description == "" || !json.Valid(d.Parameters) {
			t.Errorf("tool %s: %+v", d.Name, tl)
		}
		if p := tool.StrictProblem(d.Parameters); p != "" || !d.Strict || tl.Area != tool.AreaSpec {
			t.Errorf("tool %s is not strict (%v) or of area %q: %s", d.Name, d.Strict, tl.Area, p)
		}
	}
}

func TestToolArgumentsAreValidated(t *testing.T) {
	t.Parallel()
	e, _, asst := toolEnv(t)
	sid := e.newSession(alice)
	tests := []struct {
		tl, args string
	}{
		{"list_spec_sessions", `{"limit":0}`},
		{"list_spec_sessions", `{"limit":500}`},
		{"list_spec_sessions", `{"page":2}`},
		{"get_spec_session", `{}`},
		{"get_spec_session", `{"session_id":"nope"}`},
		{"add_spec_input", fmt.Sprintf(`{"session_id":%q,"kind":"note","title":"t"}`, sid)},
		{"add_spec_input", fmt.Sprintf(`{"session_id":%q,"kind":"email","title":"t","content":"c"}`, sid)},
		{"add_spec_input", fmt.Sprintf(`{"session_id":%q,"kind":"note","title":"","content":"c"}`, sid)},
		{"generate_spec_stage", fmt.Sprintf(`{"session_id":%q,"stage":"design"}`, sid)},
		{"generate_spec_stage", `{"stage":"prd"}`},
	}
	for _, tt := range tests {
		ex, err := asst.ExecuteTool(as(alice), chatID, ports.ToolCall{Name: tt.tl, Arguments: tt.args})
		if err != nil {
			t.Fatal(err)
		}
		if ex.Outcome == nil || ex.Outcome.OK || !strings.Contains(ex.Outcome.Error, "schema") {
			t.Errorf("%s %s: %+v, want refused for its schema", tt.tl, tt.args, ex.Outcome)
		}
	}
	if len(e.jobs()) != 0 || len(e.inputs(sid)) != 1 {
		t.Error("a refused call changed something")
	}

	ex, err := asst.ExecuteTool(as(alice), chatID, ports.ToolCall{Name: "add_spec_input",
		Arguments: fmt.Sprintf(`{"session_id":%q,"kind":"transcript","title":"Standup","content":"Bo: the export is slow."}`, sid)})
	if err != nil || ex.Confirmation == nil {
		t.Fatalf("add_spec_input = %+v, %v", ex, err)
	}
	named := "“Expense approvals” (" + sid[:8] + "…)" // the session as people know it
	if want := fmt.Sprintf(`Add the transcript "Standup" (23 bytes) to specification session %s.`, named); ex.Confirmation.Summary != want {
		t.Errorf("summary %q, want %q", ex.Confirmation.Summary, want)
	}
	ex, err = asst.ExecuteTool(as(alice), chatID, ports.ToolCall{Name: "generate_spec_stage", Arguments: fmt.Sprintf(`{"session_id":%q,"stage":"prd"}`, sid)})
	if err != nil || ex.Confirmation == nil || !strings.Contains(ex.Confirmation.Summary, "Generate the prd stage of specification session "+named) {
		t.Errorf("generate_spec_stage = %+v, %v", ex.Confirmation, err)
	}
	ex, _ = asst.ExecuteTool(as(alice), chatID, ports.ToolCall{Name: "generate_spec_stage", Arguments: fmt.Sprintf(`{"session_id":%q}`, sid)})
	if ex.Confirmation == nil || ex.Confirmation.Summary != "Generate the next stage of specification session "+named+"." {
		t.Errorf("generate_spec_stage without a stage = %+v", ex.Confirmation)
	}
	if len(e.jobs()) != 0 {
		t.Error("a write ran before confirmation")
	}
}

func TestReadTools(t *testing.T) {
	t.Parallel()
	e, _, asst := toolEnv(t)
	sid := e.newSession(alice)
	e.newSession(bob)
	e.seed(sid, ports.StageScope, ports.StagePRD, ports.StageScope)

	ex, err := asst.ExecuteTool(as(alice), chatID, ports.ToolCall{Name: "list_spec_sessions", Arguments: ""})
	if err != nil || ex.Outcome == nil || !ex.Outcome.OK {
		t.Fatalf("list_spec_sessions = %+v, %v", ex.Outcome, err)
	}
	var list struct {
		Items []struct {
			ID, Name, Status, CurrentStage, NextStage string
		} `json:"items"`
		NextCursor string `json:"next_cursor"`
	}
	if err := json.Unmarshal(ex.Outcome.Result, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].ID != sid || list.Items[0].Status != "ready" || !strings.Contains(string(ex.Outcome.Result), `"next_stage":"prd"`) {
		t.Errorf("list %s", ex.Outcome.Result)
	}

	ex, err = asst.ExecuteTool(as(alice), chatID, ports.ToolCall{Name: "get_spec_session", Arguments: fmt.Sprintf(`{"session_id":%q}`, sid)})
	if err != nil || ex.Outcome == nil || !ex.Outcome.OK {
		t.Fatalf("get_spec_session = %+v, %v", ex.Outcome, err)
	}
	var got struct {
		ID        string `json:"id"`
		Inputs    []struct{ Title string }
		Artifacts []struct {
			Stage   string
			Version int
			Stale   bool
			Content string
		}
	}
	if err := json.Unmarshal(ex.Outcome.Result, &got); err != nil {
		t.Fatal(err)
	}
	if got.ID != sid || len(got.Inputs) != 1 || got.Inputs[0].Title != "Kick-off notes" || strings.Contains(string(ex.Outcome.Result), "Employees wait") {
		t.Errorf("session %s", ex.Outcome.Result)
	}
	if len(got.Artifacts) != 2 || got.Artifacts[0].Stage != "scope" || got.Artifacts[0].Version != 2 || !got.Artifacts[1].Stale || got.Artifacts[1].Content != "# prd" {
		t.Errorf("artifacts %+v", got.Artifacts)
	}

	ex, _ = asst.ExecuteTool(as(bob), chatID, ports.ToolCall{Name: "get_spec_session", Arguments: fmt.Sprintf(`{"session_id":%q}`, sid)})
	if ex.Outcome == nil || ex.Outcome.OK || !strings.Contains(ex.Outcome.Error, "not found") {
		t.Errorf("bob reads alice's session: %+v", ex.Outcome)
	}
}

func TestWriteToolsRun(t *testing.T) {
	t.Parallel()
	e, reg, _ := toolEnv(t)
	sid := e.newSession(alice)
	add, _ := reg.Lookup("add_spec_input")
	res, err := add.Run(as(alice), json.RawMessage(fmt.Sprintf(`{"session_id":%q,"kind":"note","title":"Idea","content":"Export weekly."}`, sid)))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(res); !strings.Contains(string(b), `"title":"Idea"`) || !strings.Contains(string(b), `"size":14`) {
		t.Errorf("add_spec_input result %s", b)
	}
	if v, _ := e.svc.GetSession(as(alice), sid); len(v.Inputs) != 2 {
		t.Errorf("%d inputs", len(v.Inputs))
	}

	gen, _ := reg.Lookup("generate_spec_stage")
	res, err = gen.Run(as(alice), json.RawMessage(fmt.Sprintf(`{"session_id":%q}`, sid)))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(res); string(b) != fmt.Sprintf(`{"session_id":%q,"stage":"scope","status":"generating"}`, sid) {
		t.Errorf("generate_spec_stage result %s", b)
	}
	if jobs := e.jobs(); len(jobs) != 1 {
		t.Errorf("%d jobs", len(jobs))
	}
	if _, err := gen.Run(as(alice), json.RawMessage(fmt.Sprintf(`{"session_id":%q}`, sid))); !errors.Is(err, ports.ErrConflict) {
		t.Errorf("generate while generating: %v", err)
	}
	if _, err := gen.Run(as(bob), json.RawMessage(fmt.Sprintf(`{"session_id":%q}`, sid))); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("bob generates alice's session: %v", err)
	}
}
