package app_test

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeaws"
	"github.com/devpilot/devpilot/ports"
)

// TestCloudActSafely covers issue 34's cloud you can act on safely, through
// the HTTP API: a service short of tasks says why (ECS events, stopped
// tasks); a large scale needs the service's name typed; an app branch's
// builds are listed a page at a time; a function that fails is audited as
// failed.
func TestCloudActSafely(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startStack(t, string(d))
			now := time.Now().UTC().Truncate(time.Second)
			acct := st.aws.Account(cloudAWSAccount)
			seedCloud(acct, now)
			exit := 137
			acct.Cluster("prod",
				fakeaws.Service{Name: "checkout", TaskDefinition: "web:3", Desired: 3, Running: 2,
					Events: []fakeaws.ServiceEvent{
						{ID: "e2", CreatedAt: now.Add(-time.Minute), Message: "(service checkout) task 5c8d stopped: OutOfMemoryError"},
						{ID: "e1", CreatedAt: now.Add(-time.Hour), Message: "(service checkout) has reached a steady state."},
					},
					StoppedTasks: []fakeaws.StoppedTask{
						{ID: "1a2b", StopCode: "EssentialContainerExited", StoppedReason: "Essential container in task exited",
							StoppedAt: now.Add(-9 * time.Minute), Container: "web", ExitCode: &exit, Reason: "OutOfMemoryError: Container killed"},
						{ID: "5c8d", StopCode: "TaskFailedToStart", StoppedReason: "CannotPullContainerError: image not found",
							StoppedAt: now.Add(-time.Minute), Container: "web"},
					}},
				fakeaws.Service{Name: "api", TaskDefinition: "web:3", Desired: 8, Running: 8})
			c := &cloudClient{st: st}
			admin, _ := st.cloudUser("ops-lead@example.com", "acme", ports.RoleAdmin)
			code, _, body := c.do(t, admin, "POST", "/cloud/accounts", newCloudAccount("prod", false))
			account := decodeOK[cloudAccountView](t, "create account", code, 201, body).ID

			// Why checkout runs 2 of 3 tasks: its events, and its stopped
			// tasks with their reasons, newest first; a service at its count
			// costs no task reads.
			code, _, body = c.do(t, admin, "GET", "/infrastructure/containers/clusters/prod/services?account_id="+account, nil)
			type stoppedTask struct {
				TaskID        string    `json:"task_id"`
				StopCode      string    `json:"stop_code"`
				StoppedReason string    `json:"stopped_reason"`
				StoppedAt     time.Time `json:"stopped_at"`
				Containers    []string
			}
			type service struct {
				Name         string
				DesiredCount int `json:"desired_count"`
				RunningCount int `json:"running_count"`
				Events       []struct {
					ID        string
					CreatedAt time.Time `json:"created_at"`
					Message   string
				}
				StoppedTasks []stoppedTask `json:"stopped_tasks"`
			}
			services := decodeOK[struct{ Items []service }](t, "services", code, 200, body).Items
			byName := map[string]service{}
			for _, s := range services {
				byName[s.Name] = s
			}
			co := byName["checkout"]
			if co.DesiredCount != 3 || co.RunningCount != 2 || len(co.Events) != 2 || co.Events[0].ID != "e2" ||
				!strings.Contains(co.Events[0].Message, "OutOfMemoryError") || !co.Events[0].CreatedAt.Equal(now.Add(-time.Minute)) {
				t.Fatalf("checkout's events: %s", body)
			}
			if len(co.StoppedTasks) != 2 || co.StoppedTasks[0].TaskID != "5c8d" || co.StoppedTasks[0].StopCode != "TaskFailedToStart" ||
				co.StoppedTasks[0].StoppedReason != "CannotPullContainerError: image not found" ||
				co.StoppedTasks[1].TaskID != "1a2b" || len(co.StoppedTasks[1].Containers) != 1 ||
				co.StoppedTasks[1].Containers[0] != "web: exit 137 (OutOfMemoryError: Container killed)" {
				t.Fatalf("checkout's stopped tasks: %+v", co.StoppedTasks)
			}
			if api := byName["api"]; len(api.StoppedTasks) != 0 || len(api.Events) != 0 {
				t.Fatalf("api: %+v", api)
			}
			for _, call := range st.aws.CallsTo(fakeaws.ServiceECS, "ListTasks") {
				if call.Input["serviceName"] != "checkout" || call.Input["desiredStatus"] != "STOPPED" {
					t.Errorf("ListTasks %v: only the service short of tasks is asked about", call.Input)
				}
			}

			// A large scale needs the service's name typed: more than twice,
			// less than half, or above 10 tasks; a small change does not.
			updates := func() int { return len(st.aws.CallsTo(fakeaws.ServiceECS, "UpdateService")) }
			scale := func(service string, n int, name string) (int, []byte) {
				b := map[string]any{"account_id": account, "cluster": "prod", "desired_count": n}
				if name != "" {
					b["confirm_name"] = name
				}
				code, _, body := c.do(t, admin, "POST", "/infrastructure/containers/services/"+service+"/scale", b)
				return code, body
			}
			before := updates()
			for _, tt := range []struct {
				what, service string
				n             int
				name          string
			}{
				{"more than twice (3 to 7)", "checkout", 7, ""},
				{"less than half (3 to 1)", "checkout", 1, ""},
				{"above the size (8 to 11)", "api", 11, ""},
				{"a wrong name", "checkout", 7, "Checkout"},
				{"another service's name", "checkout", 7, "api"},
			} {
				code, body := scale(tt.service, tt.n, tt.name)
				if p := decodeOK[cloudProblem](t, tt.what, code, 422, body); p.Code != "invalid" || !p.names("confirm_name") {
					t.Errorf("%s: %s, want 422 naming confirm_name", tt.what, body)
				}
			}
			if n := updates() - before; n != 0 {
				t.Fatalf("refused scales made %d UpdateService calls", n)
			}
			code, body = scale("checkout", 4, "")
			if s := decodeOK[service](t, "a small scale", code, 200, body); s.DesiredCount != 4 {
				t.Fatalf("small scale: %s", body)
			}
			code, body = scale("checkout", 9, "checkout")
			if s := decodeOK[service](t, "a large scale, named", code, 200, body); s.DesiredCount != 9 {
				t.Fatalf("large scale with its name: %s", body)
			}
			code, body = scale("api", 16, "api")
			if s := decodeOK[service](t, "above the size, named", code, 200, body); s.DesiredCount != 16 {
				t.Fatalf("above the size with its name: %s", body)
			}
			code, body = scale("api", 4, "")
			if p := decodeOK[cloudProblem](t, "half of 16 is fine, a quarter is not", code, 422, body); !p.names("confirm_name") {
				t.Fatalf("16 to 4: %s", body)
			}

			// A function that fails answers 200 with its error, and is
			// audited as failed with why; one that works as ok.
			code, _, body = c.do(t, admin, "POST", "/infrastructure/serverless/functions/crash/invoke", map[string]any{"account_id": account})
			if code != 200 || !strings.Contains(string(body), `"function_error":"Unhandled"`) {
				t.Fatalf("invoke crash: %d %s", code, body)
			}
			code, _, body = c.do(t, admin, "POST", "/infrastructure/serverless/functions/"+cloudFunction+"/invoke", map[string]any{"account_id": account})
			if code != 200 {
				t.Fatalf("invoke %s: %d %s", cloudFunction, code, body)
			}
			entries := c.audit(t, admin, account)
			if got := findAudit(entries, "lambda.invoke_function", "crash"); len(got) != 1 || got[0].Outcome != "failed" ||
				!strings.Contains(got[0].Error, "Unhandled") || !strings.Contains(got[0].Error, "boom") {
				t.Errorf("the failed invoke's audit entry: %+v", got)
			}
			if got := findAudit(entries, "lambda.invoke_function", cloudFunction); len(got) != 1 || got[0].Outcome != "ok" || got[0].Error != "" {
				t.Errorf("the good invoke's audit entry: %+v", got)
			}
			outcomes := map[string]int{}
			for _, e := range findAudit(entries, "ecs.scale_service", "prod/checkout") {
				outcomes[e.Outcome]++
				if e.Outcome == "refused" && !strings.Contains(e.Error, "confirm_name") {
					t.Errorf("refused scale without its reason: %+v", e)
				}
			}
			if outcomes["refused"] != 4 || outcomes["ok"] != 2 {
				t.Errorf("checkout's scales audited %v, want 4 refused and 2 ok", outcomes)
			}
		})
	}
}

// TestCloudBuildsList covers GET /deployments/apps/{app_id}/builds: a
// branch's builds, newest first, a page at a time, each one opening.
func TestCloudBuildsList(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startStack(t, string(d))
			acct := st.aws.Account(cloudAWSAccount)
			seedCloud(acct, time.Now())
			start := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
			acct.App(fakeaws.App{ID: "d9multi", Name: "docs", Branches: []fakeaws.Branch{
				{Name: "main", Jobs: []fakeaws.Job{
					{ID: "1", StartTime: start, Steps: []fakeaws.Step{{Name: "BUILD", Log: "build one\n"}}},
					{ID: "2", StartTime: start.Add(time.Hour), Status: "FAILED", Steps: []fakeaws.Step{{Name: "BUILD", Status: "FAILED", Log: "npm ERR! two\n"}}},
					{ID: "3", StartTime: start.Add(2 * time.Hour), Steps: []fakeaws.Step{{Name: "BUILD", Log: "build three\n"}}},
				}},
				{Name: "preview", Stage: "DEVELOPMENT", Jobs: []fakeaws.Job{{ID: "1", StartTime: start, Steps: []fakeaws.Step{{Name: "BUILD", Log: "preview one\n"}}}}},
			}})
			c := &cloudClient{st: st}
			admin, _ := st.cloudUser("ops-lead@example.com", "acme", ports.RoleAdmin)
			code, _, body := c.do(t, admin, "POST", "/cloud/accounts", newCloudAccount("prod", false))
			account := decodeOK[cloudAccountView](t, "create account", code, 201, body).ID

			type buildList struct {
				AccountID string `json:"account_id"`
				Branch    string
				Items     []struct {
					ID        string
					Branch    string
					Status    string
					CommitID  string     `json:"commit_id"`
					StartedAt *time.Time `json:"started_at"`
					EndedAt   *time.Time `json:"ended_at"`
				}
				NextCursor *string `json:"next_cursor"`
			}
			// The production branch by default, newest first, two a page.
			code, _, body = c.do(t, admin, "GET", "/deployments/apps/d9multi/builds?limit=2", nil)
			p1 := decodeOK[buildList](t, "first page", code, 200, body)
			if p1.AccountID != account || p1.Branch != "main" || len(p1.Items) != 2 || p1.Items[0].ID != "3" || p1.Items[1].ID != "2" ||
				p1.Items[1].Status != "FAILED" || p1.Items[0].StartedAt == nil || !p1.Items[0].StartedAt.Equal(start.Add(2*time.Hour)) ||
				p1.Items[0].EndedAt == nil || p1.NextCursor == nil {
				t.Fatalf("first page: %s", body)
			}
			code, _, body = c.do(t, admin, "GET", "/api/v1/deployments/apps/d9multi/builds?limit=2&branch=main&account_id="+account+"&cursor="+url.QueryEscape(*p1.NextCursor), nil)
			p2 := decodeOK[buildList](t, "second page", code, 200, body)
			if len(p2.Items) != 1 || p2.Items[0].ID != "1" || p2.NextCursor != nil {
				t.Fatalf("second page: %s", body)
			}
			code, _, body = c.do(t, admin, "GET", "/deployments/apps/d9multi/builds?branch=preview", nil)
			if pv := decodeOK[buildList](t, "preview", code, 200, body); pv.Branch != "preview" || len(pv.Items) != 1 || pv.Items[0].Branch != "preview" {
				t.Fatalf("preview's builds: %s", body)
			}
			// A listed build opens with its branch (job ids repeat across branches).
			code, _, body = c.do(t, admin, "GET", "/deployments/apps/d9multi/builds/2/logs?branch=main", nil)
			if code != 200 || !strings.Contains(string(body), "npm ERR! two") {
				t.Fatalf("open build 2: %d %s", code, body)
			}
			for _, tt := range []struct {
				what, query string
				status      int
				field       string
			}{
				{"limit 0 is the default", "?limit=0", 200, ""},
				{"limit too big", "?limit=51", 422, "limit"},
				{"limit not a number", "?limit=two", 422, "limit"},
				{"a forged cursor", "?cursor=bm90LWEtY3Vyc29y", 422, "cursor"},
				{"a cursor with control characters", "?cursor=%01%02", 422, "cursor"},
				{"an unknown branch", "?branch=nope", 404, ""},
			} {
				code, _, body := c.do(t, admin, "GET", "/deployments/apps/d9multi/builds"+tt.query, nil)
				if code != tt.status {
					t.Errorf("%s: %d %s, want %d", tt.what, code, body, tt.status)
					continue
				}
				if tt.field != "" {
					if p := decodeOK[cloudProblem](t, tt.what, code, tt.status, body); !p.names(tt.field) {
						t.Errorf("%s: %s, want the problem to name %s", tt.what, body, tt.field)
					}
				}
			}
			if code, _, body := c.do(t, admin, "GET", "/deployments/apps/nope/builds", nil); code != 404 {
				t.Errorf("an unknown app: %d %s", code, body)
			}
		})
	}
}
