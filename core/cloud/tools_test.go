package cloud_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/core/assistant"
	"github.com/devpilot/devpilot/core/cloud"
	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
	"github.com/devpilot/devpilot/testkit/mocks"
)

const chatID = "00000000-0000-7000-8000-00000000c0de"

// toolEnv registers the cloud tools in a registry and an assistant service
// that carries out calls the way the chat loop does.
func toolEnv(t *testing.T) (*env, *tool.Registry, *assistant.Service) {
	t.Helper()
	e := newEnv(t, cloud.Config{})
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
	asst := assistant.New(assistant.Config{}, assistant.Deps{Sessions: sessions, Confirmations: confs, Clock: e.clock, IDs: &fixture.IDs{}, Registry: reg})
	return e, reg, asst
}

func TestToolsRegister(t *testing.T) {
	t.Parallel()
	_, reg, _ := toolEnv(t)
	want := map[string]tool.Effect{
		"list_cloud_accounts": tool.EffectRead, "get_costs": tool.EffectRead, "list_clusters": tool.EffectRead,
		"list_services": tool.EffectRead, "get_service_logs": tool.EffectRead, "list_functions": tool.EffectRead,
		"get_function_logs": tool.EffectRead, "list_apps": tool.EffectRead, "get_build_logs": tool.EffectRead,
		"deploy_service": tool.EffectWrite, "scale_service": tool.EffectWrite,
		"invoke_function": tool.EffectWrite, "deploy_app": tool.EffectWrite,
	}
	defs := reg.Definitions()
	if len(defs) != len(want) {
		t.Fatalf("%d definitions, want %d", len(defs), len(want))
	}
	for _, d := range defs {
		tl, ok := reg.Lookup(d.Name)
		if !ok || tl.Effect != want[d.Name] || d.Description == "" {
			t.Errorf("tool %s: %+v", d.Name, tl)
		}
		var schema struct {
			Required   []string                   `json:"required"`
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(tl.Schema, &schema); err != nil {
			t.Errorf("tool %s: %v", d.Name, err)
		}
		// The model is shown the strict form of the schema.
		if p := tool.StrictProblem(d.Parameters); p != "" || !d.Strict {
			t.Errorf("tool %s is not strict (%v): %s", d.Name, d.Strict, p)
		}
		// account_id is optional: needed only where several accounts fit.
		if _, ok := schema.Properties["account_id"]; d.Name != "list_cloud_accounts" && (!ok || slices.Contains(schema.Required, "account_id")) {
			t.Errorf("tool %s does not take an optional account_id: %s", d.Name, d.Parameters)
		}
		if slices.Contains(schema.Required, "branch") {
			t.Errorf("tool %s requires a branch: %s", d.Name, d.Parameters)
		}
	}
}

func TestToolArgumentsAreValidated(t *testing.T) {
	t.Parallel()
	e, _, asst := toolEnv(t)
	id := e.add(roleAccount("Production"))
	tests := []struct{ tl, args string }{
		{"list_cloud_accounts", `{"limit":500}`},
		{"list_clusters", `{"acount_id":"x"}`},
		{"list_clusters", `{"account_id":"production"}`},
		{"get_costs", fmt.Sprintf(`{"account_id":%q,"start_date":"2025-12-1","end_date":"2025-12-31"}`, id)},
		{"get_costs", fmt.Sprintf(`{"account_id":%q,"start_date":"2025-12-01","end_date":"2025-12-31","granularity":"HOURLY"}`, id)},
		{"get_service_logs", fmt.Sprintf(`{"account_id":%q,"cluster":"prod","service":"checkout","since":"yesterday"}`, id)},
		{"get_function_logs", fmt.Sprintf(`{"account_id":%q,"name":"f","limit":1000}`, id)},
		{"scale_service", fmt.Sprintf(`{"account_id":%q,"cluster":"prod","service":"checkout","desired_count":1001}`, id)},
		{"scale_service", fmt.Sprintf(`{"account_id":%q,"cluster":"prod","service":"checkout"}`, id)},
		{"deploy_app", fmt.Sprintf(`{"account_id":%q,"app_id":"d1abc","branch":""}`, id)},
		{"invoke_function", fmt.Sprintf(`{"account_id":%q,"name":"f","qualifier":"1"}`, id)},
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
}

func TestReadTools(t *testing.T) {
	t.Parallel()
	e, _, asst := toolEnv(t)
	in := keyAccount("Production")
	id := e.add(in)
	c := creds(in)
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	e.prov.EXPECT().Costs(gomock.Any(), c, ports.CostQuery{Start: date("2025-12-01"), End: date("2026-01-01"), Granularity: "MONTHLY", GroupBy: "SERVICE"}).
		Return(ports.CostReport{Currency: "USD", Periods: []ports.CostPeriod{{Start: date("2025-12-01"), End: date("2026-01-01"), Total: "0.1",
			Groups: []ports.CostGroup{{Key: "AWS Lambda", Amount: "0.1"}}}}}, nil)
	e.prov.EXPECT().ListClusters(gomock.Any(), c).Return([]ports.Cluster{{Name: "prod", Status: "ACTIVE", ActiveServices: 2, RunningTasks: 5}}, nil)
	e.prov.EXPECT().ListServices(gomock.Any(), c, "prod").Return([]ports.ContainerService{{Name: "checkout", Desired: 3, Running: 2,
		Deployments: []ports.ServiceDeployment{{ID: "ecs-svc/1", Status: "PRIMARY", RolloutState: "IN_PROGRESS", CreatedAt: at}}}}, nil)
	e.prov.EXPECT().ServiceLogs(gomock.Any(), c, "prod", "checkout", ports.LogQuery{Limit: 50}).
		Return([]ports.LogEvent{{Timestamp: at, Message: strings.Repeat("x", 5000), Stream: "s"}}, nil)
	e.prov.EXPECT().ListFunctions(gomock.Any(), c).Return([]ports.Function{{Name: "resize", Runtime: "python3.13", MemoryMB: 512}}, nil)
	e.prov.EXPECT().FunctionLogs(gomock.Any(), c, "resize", ports.LogQuery{Since: at, Limit: 10}).Return(nil, nil)
	e.prov.EXPECT().ListApps(gomock.Any(), c).Return([]ports.App{{ID: "d1abc", Name: "site", DefaultDomain: "d1abc.amplifyapp.com"}}, nil)
	e.prov.EXPECT().ListBranches(gomock.Any(), c, "d1abc").Return([]ports.AppBranch{{Name: "dev"}, {Name: "main"}}, nil)
	e.prov.EXPECT().BuildLogs(gomock.Any(), c, "d1abc", "main", "7").Return(ports.Build{ID: "7", AppID: "d1abc", Branch: "main", Status: "FAILED",
		Steps: []ports.BuildStep{{Name: "BUILD", Status: "FAILED", Log: strings.Repeat("x", 9000) + "npm ERR! missing script: build"}}}, nil)
	e.prov.EXPECT().ListClusters(gomock.Any(), c).Return(nil, &ports.Error{Kind: ports.KindUpstream, Message: "ecs: AccessDeniedException"})

	tests := []struct {
		tl, args string
		contains []string
		lacks    []string
	}{
		{"list_cloud_accounts", ``, []string{`"id":"` + id + `"`, `"name":"Production"`, `"auth_mode":"access_key"`, `"status":"untested"`, `"next_cursor":""`},
			[]string{"sealed", keyID}},
		{"get_costs", fmt.Sprintf(`{"account_id":%q,"start_date":"2025-12-01","end_date":"2025-12-31","granularity":"MONTHLY","group_by":"SERVICE"}`, id),
			[]string{`"total":"0.1"`, `"currency":"USD"`, `"end_date":"2025-12-31"`, `"key":"AWS Lambda"`}, nil},
		{"list_clusters", fmt.Sprintf(`{"account_id":%q}`, id), []string{`"items":[{`, `"running_tasks":5`, `"active_services":2`}, nil},
		{"list_services", fmt.Sprintf(`{"account_id":%q,"cluster":"prod"}`, id), []string{`"name":"checkout"`, `"rollout_state":"IN_PROGRESS"`, `"created_at":"2026-01-01T12:00:00Z"`}, nil},
		{"get_service_logs", fmt.Sprintf(`{"account_id":%q,"cluster":"prod","service":"checkout"}`, id), []string{strings.Repeat("x", 2000) + "…"}, []string{strings.Repeat("x", 2001)}},
		{"list_functions", fmt.Sprintf(`{"account_id":%q}`, id), []string{`"runtime":"python3.13"`, `"memory_mb":512`, `"last_modified":null`}, nil},
		{"get_function_logs", fmt.Sprintf(`{"account_id":%q,"name":"resize","since":"2026-01-01T12:00:00Z","limit":10}`, id), []string{`{"items":[]}`}, nil},
		{"list_apps", ``, []string{`"account_id":"` + id + `"`, `"default_domain":"d1abc.amplifyapp.com"`, `"branches":[]`}, []string{"failed_accounts"}},
		{"get_build_logs", fmt.Sprintf(`{"account_id":%q,"app_id":"d1abc","branch":"main","build_id":"7"}`, id), []string{`"status":"FAILED"`, `npm ERR! missing script: build"`, `"log":"…x`}, nil},
	}
	for _, tt := range tests {
		ex, err := asst.ExecuteTool(as(alice), chatID, ports.ToolCall{Name: tt.tl, Arguments: tt.args})
		if err != nil || ex.Outcome == nil || !ex.Outcome.OK {
			t.Errorf("%s = %+v, %v", tt.tl, ex.Outcome, err)
			continue
		}
		out := string(ex.Outcome.Result)
		for _, s := range tt.contains {
			if !strings.Contains(out, s) {
				t.Errorf("%s: %s lacks %s", tt.tl, clipped(out), s)
			}
		}
		for _, s := range tt.lacks {
			if strings.Contains(out, s) {
				t.Errorf("%s: %s contains %s", tt.tl, clipped(out), clipped(s))
			}
		}
	}

	// A provider's error reaches the model as its message.
	ex, _ := asst.ExecuteTool(as(alice), chatID, ports.ToolCall{Name: "list_clusters", Arguments: fmt.Sprintf(`{"account_id":%q}`, id)})
	if ex.Outcome == nil || ex.Outcome.OK || ex.Outcome.Error != "ecs: AccessDeniedException" {
		t.Errorf("a failing read: %+v", ex.Outcome)
	}
	// A malformed query too, with the fields named.
	ex, _ = asst.ExecuteTool(as(alice), chatID, ports.ToolCall{Name: "get_costs",
		Arguments: fmt.Sprintf(`{"account_id":%q,"start_date":"2025-12-31","end_date":"2025-12-01"}`, id)})
	if ex.Outcome == nil || ex.Outcome.OK || !strings.Contains(ex.Outcome.Error, "start_date: must be on or before end_date") {
		t.Errorf("a reversed range: %+v", ex.Outcome)
	}
	if log := e.auditLog(); len(log) != 1 {
		t.Errorf("reads were audited: %+v", log)
	}
}

func clipped(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

func TestWriteToolsAskFirst(t *testing.T) {
	t.Parallel()
	e, _, asst := toolEnv(t)
	id := e.add(roleAccount("Production"))
	// The approval card of a scale reads the service's count now (2): reads only.
	e.prov.EXPECT().ListClusters(gomock.Any(), gomock.Any()).Return([]ports.Cluster{{Name: "prod"}}, nil).AnyTimes()
	e.prov.EXPECT().ListServices(gomock.Any(), gomock.Any(), "prod").Return([]ports.ContainerService{{Name: "checkout", Desired: 2}}, nil).AnyTimes()
	tests := []struct{ tl, args, summary string }{
		{"scale_service", `{"account_id":%q,"cluster":"prod","service":"checkout","desired_count":3}`,
			"Scale service checkout in cluster prod to 3 tasks (account %s)."},
		{"scale_service", `{"account_id":%q,"cluster":"prod","service":"checkout","desired_count":24}`,
			"Large change: checkout has 2 desired tasks now, so this is more than 2 times as many or as few, or above 10. Scale service checkout in cluster prod to 24 tasks (account %s)."},
		{"scale_service", `{"account_id":%q,"cluster":"prod","service":"checkout","desired_count":1}`,
			"Scale service checkout in cluster prod to 1 task (account %s)."},
		{"scale_service", `{"account_id":%q,"cluster":"prod","service":"checkout","desired_count":0,"confirm_scale_to_zero":true}`,
			"Scale service checkout in cluster prod to 0 tasks, stopping it (account %s)."},
		{"deploy_service", `{"account_id":%q,"cluster":"prod","service":"check\nout"}`,
			"Force a new deployment of service check out in cluster prod (account %s)."},
		{"invoke_function", `{"account_id":%q,"name":"resize","payload":"{\"image\": \"cat.png\"}"}`,
			"Invoke function resize with a 19-byte payload (account %s)."},
		{"invoke_function", `{"account_id":%q,"name":"resize"}`,
			"Invoke function resize with an empty payload (account %s)."},
		{"invoke_function", `{"account_id":%q,"name":"resize","dry_run":true}`,
			"Check that function resize can be invoked, without running it (dry run) (account %s)."},
		{"deploy_app", `{"account_id":%q,"app_id":"d1abc","branch":"main"}`,
			"Deploy branch main of app d1abc (account %s)."},
		{"deploy_app", `{"app_id":"d1abc"}%.0s`,
			"Deploy the only (or only production) branch of app d1abc (in the one cloud account that has it).%.0s"},
		{"scale_service", `{"service":"checkout","desired_count":2}%.0s`,
			"Scale service checkout in the one cluster that runs it to 2 tasks (in the one cloud account that has it).%.0s"},
	}
	for _, tt := range tests {
		ex, err := asst.ExecuteTool(as(alice), chatID, ports.ToolCall{Name: tt.tl, Arguments: fmt.Sprintf(tt.args, id)})
		if err != nil || ex.Confirmation == nil || ex.Outcome != nil {
			t.Errorf("%s = %+v, %v; want a confirmation", tt.tl, ex, err)
			continue
		}
		// The account is named as people know it, with a short id.
		if want := fmt.Sprintf(tt.summary, "Production ("+id[:8]+"…)"); ex.Confirmation.Summary != want {
			t.Errorf("summary %q\nwant    %q", ex.Confirmation.Summary, want)
		}
	}
	// No provider call was expected: nothing ran before approval.
	if log := e.auditLog(); len(log) != 1 {
		t.Errorf("writes ran: %+v", log)
	}
}

func TestWriteToolsRun(t *testing.T) {
	t.Parallel()
	e, reg, _ := toolEnv(t)
	in := roleAccount("Production")
	id := e.add(in)
	c := creds(in)
	e.prov.EXPECT().ListServices(gomock.Any(), c, "prod").Return([]ports.ContainerService{{Name: "checkout", Desired: 2}}, nil).AnyTimes()
	e.prov.EXPECT().ScaleService(gomock.Any(), c, "prod", "checkout", 3).Return(ports.ContainerService{Name: "checkout", Cluster: "prod", Desired: 3, Running: 1}, nil)
	e.prov.EXPECT().DeployService(gomock.Any(), c, "prod", "checkout").Return(ports.Deployment{ID: "ecs-svc/2", Status: "PRIMARY"}, nil)
	e.prov.EXPECT().InvokeFunction(gomock.Any(), c, "resize", json.RawMessage(`{"image":"cat.png"}`), false).
		Return(ports.Invocation{StatusCode: 200, Payload: json.RawMessage(`{"ok":true}`), FunctionError: "", LogTail: "START RequestId"}, nil)
	e.prov.EXPECT().DeployApp(gomock.Any(), c, "d1abc", "main").Return(ports.Build{ID: "8", AppID: "d1abc", Branch: "main", Status: "PENDING"}, nil)

	tests := []struct{ tl, args, want string }{
		{"scale_service", `{"account_id":%q,"cluster":"prod","service":"checkout","desired_count":3}`, `"desired":3`},
		{"deploy_service", `{"account_id":%q,"cluster":"prod","service":"checkout"}`, `{"deployment_id":"ecs-svc/2","status":"PRIMARY"}`},
		{"invoke_function", `{"account_id":%q,"name":"resize","payload":"{\"image\":\"cat.png\"}"}`, `"payload":{"ok":true}`},
		{"deploy_app", `{"account_id":%q,"app_id":"d1abc","branch":"main"}`, `"job_id":"8"`},
	}
	for _, tt := range tests {
		tl, _ := reg.Lookup(tt.tl)
		res, err := tl.Run(as(alice), json.RawMessage(fmt.Sprintf(tt.args, id)))
		if err != nil {
			t.Errorf("%s: %v", tt.tl, err)
			continue
		}
		if b, _ := json.Marshal(res); !strings.Contains(string(b), tt.want) {
			t.Errorf("%s result %s, want %s", tt.tl, b, tt.want)
		}
	}
	if log := e.auditLog(); len(log) != 5 || log[1].Action != "ecs.scale_service" || log[1].UserID != alice.UserID {
		t.Errorf("audit %+v", log)
	}

	// The read-only refusal reaches the model as a message.
	ro := roleAccount("Archive")
	ro.ReadOnly = true
	roID := e.add(ro)
	tl, _ := reg.Lookup("deploy_app")
	if _, err := tl.Run(as(alice), json.RawMessage(fmt.Sprintf(`{"account_id":%q,"app_id":"d1abc","branch":"main"}`, roID))); err == nil || err.Error() != "cloud account Archive is read-only" {
		t.Errorf("deploy on a read-only account: %v", err)
	}
}
