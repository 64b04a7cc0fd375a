package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeaws"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
	"github.com/devpilot/devpilot/ports"
)

// The AWS account every cloud test seeds, and the IAM user devpilot signs in
// as. The secret must never come back in any response.
const (
	cloudAWSAccount = "123456789012"
	cloudRegion     = "eu-west-1"
	cloudKeyID      = "AKIAIOSFODNN7EXAMPLE"
	cloudSecret     = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	cloudUserARN    = "arn:aws:iam::" + cloudAWSAccount + ":user/devpilot"
	cloudApp        = "d2k4m6n8p0q2r4"
	cloudFunction   = "resize-image"
)

// cloudSeed is what seedCloud put into the fake.
type cloudSeed struct {
	days        [3]string // the days with costs, oldest first
	today       time.Time
	serviceLogs []string
	functionLog string
}

// seedCloud fills an AWS account: a user with an access key, two clusters
// with services (one task definition logging with awslogs, and its log
// events), two functions, an Amplify app with a built branch, and three days
// of costs of two services.
func seedCloud(a *fakeaws.Account, now time.Time) cloudSeed {
	today := now.UTC().Truncate(24 * time.Hour)
	s := cloudSeed{today: today, serviceLogs: []string{"GET /health 200", "POST /checkout 201"}, functionLog: "resized 1 image"}
	for i := range s.days {
		s.days[i] = today.AddDate(0, 0, -10+i).Format(time.DateOnly)
	}
	a.User("devpilot", cloudKeyID, cloudSecret).
		TaskDefinition(fakeaws.TaskDefinition{Family: "web", Revision: 3, Containers: []fakeaws.Container{
			{Name: "web", Image: "acme/web:3", LogConfiguration: fakeaws.AWSLogs("/ecs/web", "ecs")},
		}}).
		Cluster("prod",
			fakeaws.Service{Name: "web", TaskDefinition: "web:3", Desired: 2, Running: 2},
			fakeaws.Service{Name: "worker", TaskDefinition: "web:3", Desired: 1, Running: 1}).
		Cluster("staging", fakeaws.Service{Name: "web", TaskDefinition: "web:3", Desired: 1, Running: 1}).
		LogEvents("/ecs/web", "ecs/web/4f1c9a",
			fakeaws.LogEvent{Timestamp: now.Add(-5 * time.Minute), Message: s.serviceLogs[0]},
			fakeaws.LogEvent{Timestamp: now.Add(-4 * time.Minute), Message: s.serviceLogs[1]}).
		// Not the service's stream prefix: never part of its logs.
		LogEvents("/ecs/web", "debug/sidecar", fakeaws.LogEvent{Timestamp: now.Add(-4*time.Minute - 30*time.Second), Message: "sidecar noise"}).
		Function(fakeaws.Function{Name: cloudFunction, Runtime: "nodejs20.x", Handler: "index.handler", MemoryMB: 256, TimeoutSecs: 30,
			LastModified: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC),
			Result:       fakeaws.InvokeResult{Payload: []byte(`{"resized":true}`), LogTail: "START RequestId: 1\nresized 1 image\nEND RequestId: 1\n"}}).
		Function(fakeaws.Function{Name: "crash", Runtime: "python3.12", Handler: "app.handler", MemoryMB: 128, TimeoutSecs: 3,
			Result: fakeaws.InvokeResult{Payload: []byte(`{"errorMessage":"boom"}`), FunctionError: "Unhandled"}}).
		LogEvents("/aws/lambda/"+cloudFunction, "2026/01/02/[$LATEST]abc", fakeaws.LogEvent{Timestamp: now.Add(-3 * time.Minute), Message: s.functionLog}).
		App(fakeaws.App{ID: cloudApp, Name: "storefront", Repository: "https://github.com/acme/storefront", Branches: []fakeaws.Branch{{
			Name: "main",
			Jobs: []fakeaws.Job{{ID: "1", StartTime: time.Date(2026, 1, 3, 10, 0, 0, 0, time.UTC), Steps: []fakeaws.Step{
				{Name: "BUILD", Log: "npm ci\nnpm run build\nbuild ok\n"},
				{Name: "DEPLOY", Log: "deployed to " + cloudApp + ".amplifyapp.com\n"},
			}}},
		}}}).
		Cost(s.days[0], "Amazon Elastic Container Service", "1.25").
		Cost(s.days[0], "AWS Lambda", "0.10").
		Cost(s.days[1], "Amazon Elastic Container Service", "2.50").
		Cost(s.days[1], "AWS Lambda", "0.20").
		Cost(s.days[2], "Amazon Elastic Container Service", "1.00")
	return s
}

// cloudUser issues a token for email in org (a new user gets role, "" for
// member) and returns it with the user's id.
func (st *stack) cloudUser(email, org string, role ports.Role) (token, userID string) {
	st.t.Helper()
	tok, err := st.id.IssueToken(st.t.Context(), identity.IssueTokenInput{Email: email, OrgName: org, Role: role})
	if err != nil {
		st.t.Fatal(err)
	}
	return tok.Token, tok.User.ID
}

// cloudClient calls the stack and keeps every response it got, to check at
// the end that no secret ever left devpilot.
type cloudClient struct {
	st *stack

	mu   sync.Mutex
	seen []string
}

func (c *cloudClient) record(h http.Header, body []byte) {
	var b strings.Builder
	_ = h.Write(&b)
	b.Write(body)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen = append(c.seen, b.String())
}

// do sends a JSON request and returns the status, headers and body.
func (c *cloudClient) do(t *testing.T, token, method, path string, body any) (int, http.Header, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, c.st.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	c.st.conform(t, resp, raw)
	c.record(resp.Header, raw)
	return resp.StatusCode, resp.Header, raw
}

// stream is st.call for event streams, recorded.
func (c *cloudClient) stream(token, path string, body any) (int, []byte, []sse) {
	c.st.t.Helper()
	code, raw, evs := c.st.call(token, "POST", path, body)
	c.record(http.Header{}, raw)
	return code, raw, evs
}

// assertNoSecret fails when any response held a secret, as is or escaped.
func (c *cloudClient) assertNoSecret(t *testing.T, secrets ...string) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.seen) == 0 {
		t.Fatal("no responses recorded")
	}
	for _, s := range secrets {
		for _, form := range []string{s, strings.ReplaceAll(s, "/", `\/`), url.QueryEscape(s)} {
			for _, resp := range c.seen {
				if strings.Contains(resp, form) {
					t.Errorf("a response carries a secret access key: %.400s", resp)
				}
			}
		}
	}
	t.Logf("%d responses checked for secrets", len(c.seen))
}

// decodeOK decodes a body of the status wanted, failing otherwise.
func decodeOK[T any](t *testing.T, what string, code, want int, body []byte) T {
	t.Helper()
	var v T
	if code != want {
		t.Fatalf("%s: %d %s, want %d", what, code, body, want)
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%s: %v in %s", what, err, body)
	}
	return v
}

type cloudAccountView struct {
	ID           string
	Provider     string
	Name         string
	Region       string
	Status       string
	ReadOnly     bool       `json:"read_only"`
	LastTestedAt *time.Time `json:"last_tested_at"`
	Auth         struct {
		Mode        string
		AccessKeyID string `json:"access_key_id"`
	}
}

type cloudAuditEntry struct {
	UserID    string `json:"user_id"`
	AccountID string `json:"account_id"`
	Action    string
	Resource  string
	Arguments map[string]any
	Outcome   string
	Error     string
	At        time.Time
}

type cloudProblem struct {
	Status int
	Code   string
	Detail string
	Errors []ports.FieldError
}

func (p cloudProblem) names(field string) bool {
	for _, f := range p.Errors {
		if f.Field == field {
			return true
		}
	}
	return false
}

type cloudCosts struct {
	Currency  string
	Total     json.Number
	StartDate string `json:"start_date"`
	EndDate   string `json:"end_date"`
	Periods   []struct {
		Start, End string
		Total      json.Number
		Groups     []struct {
			Key    string
			Amount json.Number
		}
	}
}

type cloudService struct {
	Name           string
	Cluster        string
	Status         string
	TaskDefinition string `json:"task_definition"`
	DesiredCount   int    `json:"desired_count"`
	RunningCount   int    `json:"running_count"`
	Deployments    []struct {
		ID, Status   string
		RolloutState string `json:"rollout_state"`
	}
}

type cloudLogs struct {
	Items []struct {
		Timestamp time.Time
		Message   string
		Stream    string
	}
}

// cloudAudit reads an account's audit log.
func (c *cloudClient) audit(t *testing.T, token, accountID string) []cloudAuditEntry {
	t.Helper()
	code, _, body := c.do(t, token, "GET", "/cloud/accounts/"+accountID+"/audit?limit=200", nil)
	return decodeOK[struct{ Items []cloudAuditEntry }](t, "audit", code, 200, body).Items
}

// findAudit returns the entries with the action and resource.
func findAudit(entries []cloudAuditEntry, action, resource string) []cloudAuditEntry {
	var out []cloudAuditEntry
	for _, e := range entries {
		if e.Action == action && e.Resource == resource {
			out = append(out, e)
		}
	}
	return out
}

func newCloudAccount(name string, readOnly bool) map[string]any {
	return map[string]any{"provider": "aws", "name": name, "region": cloudRegion, "read_only": readOnly,
		"auth": map[string]any{"mode": "access_key", "access_key_id": cloudKeyID, "secret_access_key": cloudSecret}}
}

func TestCloudEndToEnd(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startStack(t, string(d))
			st.aws.Regions(cloudRegion) // a call signed for another region fails
			seed := seedCloud(st.aws.Account(cloudAWSAccount), time.Now())
			c := &cloudClient{st: st}
			admin, adminID := st.cloudUser("ops-lead@example.com", "acme", ports.RoleAdmin)
			member, memberID := st.cloudUser("dev@example.com", "acme", ports.RoleOperator) // the default policy lets operators run cloud writes
			ecsUpdates := func() int { return len(st.aws.CallsTo(fakeaws.ServiceECS, "UpdateService")) }

			// Accounts: only an admin adds one; the secret never comes back.
			if code, _, body := c.do(t, member, "POST", "/cloud/accounts", newCloudAccount("prod", false)); code != 403 {
				t.Fatalf("member creating an account: %d %s", code, body)
			}
			code, _, body := c.do(t, admin, "POST", "/cloud/accounts", newCloudAccount("prod", false))
			rw := decodeOK[cloudAccountView](t, "create account", code, 201, body)
			if rw.Provider != "aws" || rw.Region != cloudRegion || rw.Status != "untested" || rw.ReadOnly ||
				rw.Auth.Mode != "access_key" || rw.Auth.AccessKeyID != cloudKeyID || bytes.Contains(body, []byte("secret_access_key")) {
				t.Fatalf("created account: %s", body)
			}
			code, _, body = c.do(t, admin, "POST", "/cloud/accounts", newCloudAccount("prod read-only", true))
			ro := decodeOK[cloudAccountView](t, "create read-only account", code, 201, body)
			if !ro.ReadOnly {
				t.Fatalf("read-only account: %s", body)
			}
			if n := len(st.aws.Calls()); n != 0 {
				t.Fatalf("adding accounts made %d AWS calls", n)
			}
			code, _, body = c.do(t, member, "GET", "/api/v1/cloud/accounts", nil)
			accounts := decodeOK[struct{ Items []cloudAccountView }](t, "list accounts", code, 200, body)
			if len(accounts.Items) != 2 || accounts.Items[0].ID != rw.ID || accounts.Items[1].ID != ro.ID {
				t.Fatalf("accounts: %s", body)
			}

			// Test: STS, then one cheap read; the status is recorded.
			code, _, body = c.do(t, member, "POST", "/cloud/accounts/"+rw.ID+"/test", nil)
			tested := decodeOK[struct {
				OK        bool
				AccountID string `json:"account_id"`
				ARN       string
				LatencyMS *int64 `json:"latency_ms"`
				Error     string
			}](t, "test account", code, 200, body)
			if !tested.OK || tested.AccountID != cloudAWSAccount || tested.ARN != cloudUserARN || tested.LatencyMS == nil || tested.Error != "" {
				t.Fatalf("test: %s", body)
			}
			if len(st.aws.CallsTo(fakeaws.ServiceSTS, "GetCallerIdentity")) != 1 || len(st.aws.CallsTo(fakeaws.ServiceECS, "ListClusters")) != 1 {
				t.Fatalf("test made the calls %+v", st.aws.Calls())
			}
			code, _, body = c.do(t, member, "GET", "/cloud/accounts/"+rw.ID, nil)
			if got := decodeOK[cloudAccountView](t, "get account", code, 200, body); got.Status != "ok" || got.LastTestedAt == nil || got.Name != "prod" {
				t.Fatalf("account after its test: %s", body)
			}

			// Costs: end_date inclusive (exclusive for Cost Explorer), the
			// exact total, and a second identical query from the cache.
			costs := fmt.Sprintf("/cloud/costs?account_id=%s&start_date=%s&end_date=%s", rw.ID, seed.days[0], seed.days[2])
			ceCalls := func() []fakeaws.Call { return st.aws.CallsTo(fakeaws.ServiceCost, "GetCostAndUsage") }
			code, _, body = c.do(t, member, "GET", costs+"&group_by=SERVICE", nil)
			cv := decodeOK[cloudCosts](t, "costs", code, 200, body)
			if cv.Currency != "USD" || cv.Total != "5.05" || cv.StartDate != seed.days[0] || cv.EndDate != seed.days[2] || len(cv.Periods) != 3 {
				t.Fatalf("costs: %s", body)
			}
			if last := cv.Periods[2]; last.End != seed.days[2] {
				t.Errorf("last daily period ends %s, want %s (inclusive, like end_date)", last.End, seed.days[2])
			}
			if p := cv.Periods[0]; p.Start != seed.days[0] || p.Total != "1.35" || len(p.Groups) != 2 {
				t.Fatalf("first period: %s", body)
			}
			amounts := map[string]json.Number{}
			for _, g := range cv.Periods[1].Groups {
				amounts[g.Key] = g.Amount
			}
			if amounts["Amazon Elastic Container Service"] != "2.5" || amounts["AWS Lambda"] != "0.2" || cv.Periods[2].Total != "1" {
				t.Fatalf("groups of the second day %v; costs %s", amounts, body)
			}
			calls := ceCalls()
			if len(calls) != 1 {
				t.Fatalf("%d Cost Explorer calls, want 1", len(calls))
			}
			exclusiveEnd := seed.today.AddDate(0, 0, -7).Format(time.DateOnly)
			if tp, _ := calls[0].Input["TimePeriod"].(map[string]any); tp["Start"] != seed.days[0] || tp["End"] != exclusiveEnd {
				t.Fatalf("Cost Explorer asked for %v, want %s to %s", calls[0].Input["TimePeriod"], seed.days[0], exclusiveEnd)
			}
			code, _, body2 := c.do(t, member, "GET", "/api/v1"+costs+"&group_by=SERVICE", nil)
			if code != 200 || !bytes.Equal(body2, body) {
				t.Fatalf("cached costs: %d %s, want %s", code, body2, body)
			}
			if n := len(ceCalls()); n != 1 {
				t.Fatalf("the identical query made %d Cost Explorer calls in all, want 1 (cache)", n)
			}
			code, _, body = c.do(t, admin, "GET", costs, nil) // another grouping: its own entry
			if cv := decodeOK[cloudCosts](t, "ungrouped costs", code, 200, body); cv.Total != "5.05" || len(cv.Periods) != 3 || cv.Periods[1].Total != "2.7" {
				t.Fatalf("ungrouped costs: %s", body)
			}
			if n := len(ceCalls()); n != 2 {
				t.Fatalf("Cost Explorer calls after an ungrouped query: %d, want 2", n)
			}
			code, _, _ = c.do(t, admin, "GET", costs+"&granularity=DAILY", nil) // DAILY is the default: same query
			if n := len(ceCalls()); code != 200 || n != 2 {
				t.Fatalf("explicit DAILY: %d, Cost Explorer calls %d, want 2", code, n)
			}

			// Clusters and services.
			code, _, body = c.do(t, member, "GET", "/infrastructure/containers/clusters?account_id="+rw.ID, nil)
			clusters := decodeOK[struct {
				Items []struct {
					Name           string
					Status         string
					ActiveServices int `json:"active_services"`
					RunningTasks   int `json:"running_tasks"`
				}
			}](t, "clusters", code, 200, body)
			if len(clusters.Items) != 2 || clusters.Items[0].Name != "prod" || clusters.Items[0].ActiveServices != 2 ||
				clusters.Items[0].RunningTasks != 3 || clusters.Items[1].Name != "staging" || clusters.Items[0].Status != "ACTIVE" {
				t.Fatalf("clusters: %s", body)
			}
			listServices := func() map[string]cloudService {
				t.Helper()
				code, _, body := c.do(t, member, "GET", "/infrastructure/containers/clusters/prod/services?account_id="+rw.ID, nil)
				out := map[string]cloudService{}
				for _, s := range decodeOK[struct{ Items []cloudService }](t, "services", code, 200, body).Items {
					out[s.Name] = s
				}
				return out
			}
			services := listServices()
			if web := services["web"]; len(services) != 2 || web.Cluster != "prod" || web.DesiredCount != 2 || web.RunningCount != 2 ||
				!strings.HasSuffix(web.TaskDefinition, "task-definition/web:3") || len(web.Deployments) != 1 || web.Deployments[0].Status != "PRIMARY" {
				t.Fatalf("services: %+v", services)
			}

			// Deploy and scale (to zero only when confirmed).
			code, _, body = c.do(t, member, "POST", "/infrastructure/containers/services/web/deploy", map[string]any{"account_id": rw.ID, "cluster": "prod"})
			dep := decodeOK[struct {
				DeploymentID string `json:"deployment_id"`
				Status       string
			}](t, "deploy", code, 200, body)
			if !strings.HasPrefix(dep.DeploymentID, "ecs-svc/") || dep.Status != "IN_PROGRESS" {
				t.Fatalf("deploy: %s", body)
			}
			if web := listServices()["web"]; len(web.Deployments) != 2 || web.Deployments[0].ID != dep.DeploymentID || web.Deployments[0].RolloutState != "IN_PROGRESS" {
				t.Fatalf("web after the deploy: %+v", web)
			}
			code, _, body = c.do(t, member, "POST", "/infrastructure/containers/services/web/scale", map[string]any{"account_id": rw.ID, "cluster": "prod", "desired_count": 5, "confirm_name": "web"})
			if svc := decodeOK[cloudService](t, "scale", code, 200, body); svc.Name != "web" || svc.DesiredCount != 5 {
				t.Fatalf("scale: %s", body)
			}
			code, _, body = c.do(t, member, "POST", "/infrastructure/containers/services/web/scale",
				map[string]any{"account_id": rw.ID, "cluster": "staging", "desired_count": 0, "confirm_scale_to_zero": true})
			if svc := decodeOK[cloudService](t, "scale to zero", code, 200, body); svc.Cluster != "staging" || svc.DesiredCount != 0 {
				t.Fatalf("scale to zero: %s", body)
			}
			updates := st.aws.CallsTo(fakeaws.ServiceECS, "UpdateService")
			if len(updates) != 3 || updates[0].Input["forceNewDeployment"] != true || updates[1].Input["desiredCount"] != float64(5) ||
				updates[2].Input["desiredCount"] != float64(0) || updates[2].Input["cluster"] != "staging" {
				t.Fatalf("UpdateService calls: %+v", updates)
			}

			// Service logs: the awslogs group and prefix of its task definition.
			code, _, body = c.do(t, member, "GET", "/infrastructure/containers/services/web/logs?cluster=prod&account_id="+rw.ID, nil)
			logs := decodeOK[cloudLogs](t, "service logs", code, 200, body)
			if len(logs.Items) != 2 || logs.Items[0].Message != seed.serviceLogs[0] || logs.Items[1].Message != seed.serviceLogs[1] ||
				logs.Items[0].Stream != "ecs/web/4f1c9a" || logs.Items[0].Timestamp.IsZero() {
				t.Fatalf("service logs: %s", body)
			}
			if in := st.aws.CallsTo(fakeaws.ServiceLogs, "FilterLogEvents")[0].Input; in["logGroupName"] != "/ecs/web" || in["logStreamNamePrefix"] != "ecs/" {
				t.Fatalf("FilterLogEvents input: %v", in)
			}

			// Functions: list, invoke (answers, failures, dry runs), logs.
			code, _, body = c.do(t, member, "GET", "/infrastructure/serverless/functions?account_id="+rw.ID, nil)
			fns := decodeOK[struct {
				Items []struct {
					Name     string
					Runtime  string
					MemoryMB int    `json:"memory_mb"`
					Timeout  int    `json:"timeout_seconds"`
					LogGroup string `json:"log_group"`
				}
			}](t, "functions", code, 200, body)
			if len(fns.Items) != 2 || fns.Items[0].Name != "crash" || fns.Items[1].Name != cloudFunction || fns.Items[1].Runtime != "nodejs20.x" ||
				fns.Items[1].MemoryMB != 256 || fns.Items[1].Timeout != 30 || fns.Items[1].LogGroup != "/aws/lambda/"+cloudFunction {
				t.Fatalf("functions: %s", body)
			}
			type invocation struct {
				StatusCode    int             `json:"status_code"`
				Payload       json.RawMessage `json:"payload"`
				FunctionError string          `json:"function_error"`
				LogTail       string          `json:"log_tail"`
			}
			code, _, body = c.do(t, member, "POST", "/infrastructure/serverless/functions/"+cloudFunction+"/invoke", map[string]any{"account_id": rw.ID, "payload": map[string]string{"key": "cat.png"}})
			if inv := decodeOK[invocation](t, "invoke", code, 200, body); inv.StatusCode != 200 || string(inv.Payload) != `{"resized":true}` ||
				inv.FunctionError != "" || !strings.Contains(inv.LogTail, "resized 1 image") {
				t.Fatalf("invoke: %s", body)
			}
			if in := st.aws.CallsTo(fakeaws.ServiceLambda, "Invoke")[0].Input; in["Payload"] != `{"key":"cat.png"}` || in["InvocationType"] != "RequestResponse" {
				t.Fatalf("Invoke input: %v", in)
			}
			code, _, body = c.do(t, member, "POST", "/infrastructure/serverless/functions/crash/invoke", map[string]any{"account_id": rw.ID})
			if inv := decodeOK[invocation](t, "invoke crash", code, 200, body); inv.FunctionError != "Unhandled" || !bytes.Contains(inv.Payload, []byte("boom")) {
				t.Fatalf("a failing function: %s", body)
			}
			code, _, body = c.do(t, member, "POST", "/infrastructure/serverless/functions/"+cloudFunction+"/invoke", map[string]any{"account_id": rw.ID, "dry_run": true})
			if inv := decodeOK[invocation](t, "dry run", code, 200, body); inv.StatusCode != 204 || string(inv.Payload) != "null" {
				t.Fatalf("dry run: %s", body)
			}
			since := url.QueryEscape(time.Now().Add(-time.Hour).UTC().Format(time.RFC3339))
			code, _, body = c.do(t, member, "GET", "/infrastructure/serverless/functions/"+cloudFunction+"/logs?limit=10&since="+since+"&account_id="+rw.ID, nil)
			if fl := decodeOK[cloudLogs](t, "function logs", code, 200, body); len(fl.Items) != 1 || fl.Items[0].Message != seed.functionLog {
				t.Fatalf("function logs: %s", body)
			}

			// Apps: list, deploy a branch, read builds' logs.
			code, _, body = c.do(t, member, "GET", "/deployments/apps?account_id="+rw.ID, nil)
			apps := decodeOK[struct {
				Items []struct {
					ID, Name, Platform, Repository string
					AccountID                      string `json:"account_id"`
					DefaultDomain                  string `json:"default_domain"`
					Branches                       []string
				}
			}](t, "apps", code, 200, body)
			if len(apps.Items) != 1 || apps.Items[0].ID != cloudApp || apps.Items[0].Name != "storefront" || apps.Items[0].AccountID != rw.ID ||
				apps.Items[0].DefaultDomain != cloudApp+".amplifyapp.com" || len(apps.Items[0].Branches) != 1 || apps.Items[0].Branches[0] != "main" {
				t.Fatalf("apps: %s", body)
			}
			// Without account_id: the apps of every account, each with its
			// account's id (both accounts reach the same AWS account here).
			code, _, body = c.do(t, member, "GET", "/deployments/apps", nil)
			every := decodeOK[struct {
				Items []struct {
					ID        string
					AccountID string `json:"account_id"`
				}
			}](t, "apps of every account", code, 200, body)
			if len(every.Items) != 2 || every.Items[0].AccountID != rw.ID || every.Items[1].AccountID != ro.ID || every.Items[1].ID != cloudApp {
				t.Fatalf("apps of every account: %s", body)
			}
			code, _, body = c.do(t, member, "POST", "/deployments/apps/"+cloudApp+"/deploy", map[string]any{"account_id": rw.ID, "branch": "main"})
			build := decodeOK[struct {
				BuildID   string `json:"build_id"`
				Status    string
				JobID     string `json:"job_id"`
				Branch    string
				AccountID string `json:"account_id"`
			}](t, "deploy app", code, 200, body)
			if build.BuildID == "" || build.JobID != "2" || build.Branch != "main" || build.AccountID != rw.ID || build.Status != "PENDING" {
				t.Fatalf("app deploy: %s", body)
			}
			type buildLogs struct {
				Status string
				Steps  []struct{ Name, Status, Log string }
			}
			// A build started elsewhere, by its Amplify job id: found in the
			// app's branches (account_id narrows the search to one account).
			code, _, body = c.do(t, member, "GET", "/deployments/apps/"+cloudApp+"/builds/1/logs?account_id="+rw.ID, nil)
			if bl := decodeOK[buildLogs](t, "build logs", code, 200, body); bl.Status != "SUCCEED" || len(bl.Steps) != 2 || bl.Steps[0].Name != "BUILD" ||
				bl.Steps[0].Status != "SUCCEED" || !strings.Contains(bl.Steps[0].Log, "build ok") || !strings.Contains(bl.Steps[1].Log, "deployed to") {
				t.Fatalf("build logs: %s", body)
			}
			// The build deploy started: its id alone.
			code, _, body = c.do(t, member, "GET", "/deployments/apps/"+cloudApp+"/builds/"+build.BuildID+"/logs", nil)
			if bl := decodeOK[buildLogs](t, "new build's logs", code, 200, body); bl.Status != "PENDING" || bl.Steps == nil || len(bl.Steps) != 0 {
				t.Fatalf("the new build: %s", body)
			}

			// A read-only account reads, and refuses every write before AWS
			// hears of it.
			if code, _, body := c.do(t, member, "GET", "/infrastructure/containers/clusters?account_id="+ro.ID, nil); code != 200 {
				t.Fatalf("reading a read-only account: %d %s", code, body)
			}
			before := len(st.aws.Calls())
			for path, body := range map[string]map[string]any{
				"/infrastructure/containers/services/web/deploy":                    {"account_id": ro.ID, "cluster": "prod"},
				"/infrastructure/containers/services/web/scale":                     {"account_id": ro.ID, "cluster": "prod", "desired_count": 9},
				"/infrastructure/serverless/functions/" + cloudFunction + "/invoke": {"account_id": ro.ID, "payload": map[string]int{"n": 1}},
				"/deployments/apps/" + cloudApp + "/deploy":                         {"account_id": ro.ID, "branch": "main"},
			} {
				code, _, raw := c.do(t, member, "POST", path, body)
				if p := decodeOK[cloudProblem](t, "write on a read-only account", code, 403, raw); p.Code != "forbidden" {
					t.Fatalf("POST %s on a read-only account: %s", path, raw)
				}
			}
			if after := len(st.aws.Calls()); after != before {
				t.Fatalf("refused writes made %d AWS calls", after-before)
			}
			roAudit := c.audit(t, member, ro.ID)
			for _, want := range []struct{ action, resource string }{
				{"ecs.deploy_service", "prod/web"}, {"ecs.scale_service", "prod/web"},
				{"lambda.invoke_function", cloudFunction}, {"amplify.deploy_app", cloudApp + "/main"},
			} {
				got := findAudit(roAudit, want.action, want.resource)
				if len(got) != 1 || got[0].Outcome != "refused" || got[0].UserID != memberID || got[0].AccountID != ro.ID || got[0].Error == "" {
					t.Fatalf("audit of the refused %s %s: %+v", want.action, want.resource, got)
				}
			}

			// The assistant: list_services runs at once; scale_service waits
			// for a confirmation, then runs exactly once.
			listArgs := fmt.Sprintf(`{"account_id":%q,"cluster":"prod"}`, rw.ID)
			scaleArgs := fmt.Sprintf(`{"account_id":%q,"cluster":"prod","service":"worker","desired_count":3}`, rw.ID)
			st.model.Enqueue(
				fakeopenai.ToolCalls(fakeopenai.Call{ID: "call_ls", Name: "list_services", Arguments: listArgs}),
				fakeopenai.Text("Scaling worker to 3.").WithToolCalls(fakeopenai.Call{ID: "call_sc", Name: "scale_service", Arguments: scaleArgs}),
			)
			updatesBefore := ecsUpdates()
			code, body, evs := c.stream(member, "/api/v1/agent/chat", map[string]any{"message": "scale the prod worker to 3", "context": map[string]string{"current_page": "/cloud"}})
			if code != 200 {
				t.Fatalf("chat: %d %s", code, body)
			}
			if got := names(evs); !strings.Contains(got, "tool_call,tool_result") || !strings.HasSuffix(got, "confirmation_required,done") {
				t.Fatalf("events = %s", got)
			}
			res := find(evs, "tool_result").Data
			listed, _ := json.Marshal(res["result"])
			if res["name"] != "list_services" || res["ok"] != true || !bytes.Contains(listed, []byte(`"worker"`)) || !bytes.Contains(listed, []byte(`"web"`)) {
				t.Fatalf("tool_result = %v", res)
			}
			conf := find(evs, "confirmation_required").Data
			if conf["name"] != "scale_service" || !strings.Contains(fmt.Sprint(conf["summary"]), "Scale service worker in cluster prod to 3 tasks") ||
				evs[len(evs)-1].Data["finish_reason"] != "confirmation_required" {
				t.Fatalf("confirmation_required = %v", conf)
			}
			// The account is named as people know it, never by its bare id.
			if sum := fmt.Sprint(conf["summary"]); !strings.Contains(sum, "account prod ("+rw.ID[:8]+"…)") || strings.Contains(sum, rw.ID) {
				t.Errorf("summary %q names the account %s by its id", sum, rw.ID)
			}
			if n := ecsUpdates(); n != updatesBefore {
				t.Fatalf("scale_service ran before approval (%d UpdateService calls)", n-updatesBefore)
			}
			if w := listServices()["worker"]; w.DesiredCount != 1 {
				t.Fatalf("worker before approval: %+v", w)
			}
			var toolMsg string
			for _, m := range st.model.Requests()[1].Messages {
				if m.Role == "tool" && m.ToolCallID == "call_ls" {
					toolMsg = m.Content
				}
			}
			if !strings.Contains(toolMsg, "worker") {
				t.Fatalf("the model did not see the services: %q", toolMsg)
			}
			confirm := map[string]any{"session_id": conf["session_id"], "confirmation_id": conf["confirmation_id"], "approved": true}
			code, _, body = c.do(t, member, "POST", "/api/v1/agent/confirm", confirm)
			decided := decodeOK[struct {
				Status string
				Result struct {
					OK     bool
					Result struct {
						Name    string
						Desired int
					}
				}
			}](t, "confirm", code, 200, body)
			if decided.Status != "approved" || !decided.Result.OK || decided.Result.Result.Name != "worker" || decided.Result.Result.Desired != 3 {
				t.Fatalf("confirm: %s", body)
			}
			if code, _, body := c.do(t, member, "POST", "/api/v1/agent/confirm", confirm); code != 409 {
				t.Fatalf("second confirm: %d %s", code, body)
			}
			updates = st.aws.CallsTo(fakeaws.ServiceECS, "UpdateService")
			if len(updates) != updatesBefore+1 {
				t.Fatalf("approved scale_service made %d UpdateService calls, want 1", len(updates)-updatesBefore)
			}
			if in := updates[len(updates)-1].Input; in["service"] != "worker" || in["cluster"] != "prod" || in["desiredCount"] != float64(3) {
				t.Fatalf("UpdateService input: %v", in)
			}
			if w := listServices()["worker"]; w.DesiredCount != 3 {
				t.Fatalf("worker after approval: %+v", w)
			}

			// The audit log: who did what, and how it ended.
			entries := c.audit(t, member, rw.ID)
			for _, want := range []struct {
				action, resource, user string
				n                      int
			}{
				{"account.create", "prod", adminID, 1},
				{"ecs.deploy_service", "prod/web", memberID, 1},
				{"ecs.scale_service", "prod/web", memberID, 1},
				{"ecs.scale_service", "staging/web", memberID, 1},
				{"ecs.scale_service", "prod/worker", memberID, 1}, // by the assistant, for the member who approved it
				{"lambda.invoke_function", cloudFunction, memberID, 2},
				{"lambda.invoke_function", "crash", memberID, 1}, // failed: see below
				{"amplify.deploy_app", cloudApp + "/main", memberID, 1},
			} {
				got := findAudit(entries, want.action, want.resource)
				if len(got) != want.n {
					t.Fatalf("%d audit entries %s %s, want %d: %+v", len(got), want.action, want.resource, want.n, entries)
				}
				for _, e := range got {
					outcome := "ok"
					if want.resource == "crash" {
						// The function raised an error: the call answered 200, but the
						// audit log records the real outcome, with the function's error.
						outcome = "failed"
						if !strings.Contains(e.Error, "Unhandled") || !strings.Contains(e.Error, "boom") {
							t.Errorf("failed invoke audited with error %q, want the function's error", e.Error)
						}
					}
					if e.UserID != want.user || e.Outcome != outcome || e.AccountID != rw.ID || e.At.IsZero() {
						t.Fatalf("audit entry %+v", e)
					}
				}
			}
			if len(entries) != 9 {
				t.Fatalf("%d audit entries, want 9 (reads and tests are not audited): %+v", len(entries), entries)
			}
			for i := 1; i < len(entries); i++ {
				if entries[i].At.After(entries[i-1].At) {
					t.Fatalf("audit not newest first: %v after %v", entries[i].At, entries[i-1].At)
				}
			}
			if e := findAudit(entries, "ecs.scale_service", "prod/worker")[0]; e.Arguments["desired_count"] != float64(3) {
				t.Fatalf("audited arguments: %v", e.Arguments)
			}
			if e := findAudit(entries, "account.create", "prod")[0]; len(e.Arguments) == 0 || strings.Contains(fmt.Sprint(e.Arguments), cloudSecret) {
				t.Fatalf("audited account arguments: %v", e.Arguments)
			}

			// Delete: admin only; the audit log stays.
			if code, _, body := c.do(t, member, "DELETE", "/cloud/accounts/"+ro.ID, nil); code != 403 {
				t.Fatalf("member deleting: %d %s", code, body)
			}
			if code, _, body := c.do(t, admin, "DELETE", "/cloud/accounts/"+ro.ID, nil); code != 204 {
				t.Fatalf("delete: %d %s", code, body)
			}
			if code, _, body := c.do(t, member, "GET", "/cloud/accounts/"+ro.ID, nil); code != 404 {
				t.Fatalf("deleted account: %d %s", code, body)
			}
			if code, _, body := c.do(t, member, "GET", "/infrastructure/containers/clusters?account_id="+ro.ID, nil); code != 404 {
				t.Fatalf("clusters of a deleted account: %d %s", code, body)
			}
			roAudit = c.audit(t, member, ro.ID)
			if del := findAudit(roAudit, "account.delete", "prod read-only"); len(del) != 1 || del[0].UserID != adminID || len(roAudit) != 6 {
				t.Fatalf("audit of the deleted account: %+v", roAudit)
			}
			code, _, body = c.do(t, member, "GET", "/cloud/accounts", nil)
			if left := decodeOK[struct{ Items []cloudAccountView }](t, "accounts after delete", code, 200, body); len(left.Items) != 1 || left.Items[0].ID != rw.ID {
				t.Fatalf("accounts after delete: %s", body)
			}

			// Every AWS call was signed with the account's key for its region;
			// no secret reached a client or the model.
			for _, call := range st.aws.Calls() {
				if call.Region != cloudRegion || call.AccessKeyID != cloudKeyID || call.ErrorCode != "" {
					t.Errorf("AWS call %s %s: region %s key %s error %q", call.Service, call.Operation, call.Region, call.AccessKeyID, call.ErrorCode)
				}
			}
			for _, req := range st.model.Requests() {
				if bytes.Contains(req.Body, []byte(cloudSecret)) {
					t.Error("the model was sent the secret access key")
				}
			}
			c.assertNoSecret(t, cloudSecret)
		})
	}
}

func TestCloudBadInput(t *testing.T) {
	t.Parallel()
	st := startStack(t, "sqlite")
	seed := seedCloud(st.aws.Account(cloudAWSAccount), time.Now())
	c := &cloudClient{st: st}
	admin, _ := st.cloudUser("root@example.com", "acme", ports.RoleAdmin)
	member, memberID := st.cloudUser("kim@example.com", "acme", ports.RoleOperator) // the default policy lets operators run cloud writes
	otherAdmin, _ := st.cloudUser("mallory@example.com", "other", ports.RoleAdmin)
	otherMember, _ := st.cloudUser("mel@example.com", "other", ports.RoleOperator) // the default policy lets operators run cloud writes

	create := func(token string, body map[string]any) cloudAccountView {
		t.Helper()
		code, _, raw := c.do(t, token, "POST", "/cloud/accounts", body)
		return decodeOK[cloudAccountView](t, "create account", code, 201, raw)
	}
	rw := create(admin, newCloudAccount("prod", false)).ID
	ro := create(admin, newCloudAccount("prod read-only", true)).ID
	theirs := create(otherAdmin, newCloudAccount("theirs", false)).ID
	const strangerSecret = "Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0Z2Fy"
	stranger := create(admin, map[string]any{"name": "stranger", "region": cloudRegion,
		"auth": map[string]any{"mode": "access_key", "access_key_id": "AKIAUNKNOWNKEY000001", "secret_access_key": strangerSecret}}).ID
	unknown := "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"

	scale := func(account string, fields map[string]any) map[string]any {
		body := map[string]any{"cluster": "prod", "desired_count": 2}
		if account != "" {
			body["account_id"] = account
		}
		for k, v := range fields {
			if v == nil {
				delete(body, k)
			} else {
				body[k] = v
			}
		}
		return body
	}
	costs := func(start, end, extra string) string {
		return "/cloud/costs?account_id=" + rw + "&start_date=" + start + "&end_date=" + end + extra
	}
	day := func(months, days int) string { return seed.today.AddDate(0, months, days).Format(time.DateOnly) }

	tests := []struct {
		name   string
		token  string
		method string
		path   string
		body   any
		status int
		code   string
		field  string // a field the problem must name
		aws    bool   // whether AWS may be called
	}{
		// Accounts.
		{"member creates an account", member, "POST", "/cloud/accounts", newCloudAccount("mine", false), 403, "permission_denied", "", false},
		{"account without auth", admin, "POST", "/cloud/accounts", map[string]any{"name": "x", "region": cloudRegion}, 400, "malformed", "auth", false},
		{"account in no region", admin, "POST", "/cloud/accounts", map[string]any{"name": "x", "region": "mars-1",
			"auth": map[string]any{"mode": "access_key", "access_key_id": cloudKeyID, "secret_access_key": cloudSecret}}, 422, "invalid", "region", false},
		{"access key with a role", admin, "POST", "/cloud/accounts", map[string]any{"name": "x", "region": cloudRegion,
			"auth": map[string]any{"mode": "access_key", "access_key_id": cloudKeyID, "secret_access_key": cloudSecret, "role_arn": "arn:aws:iam::123456789012:role/x"}}, 422, "invalid", "auth.role_arn", false},
		{"access key without its secret", admin, "POST", "/cloud/accounts", map[string]any{"name": "x", "region": cloudRegion,
			"auth": map[string]any{"mode": "access_key", "access_key_id": cloudKeyID}}, 422, "invalid", "auth.secret_access_key", false},
		{"duplicate name", admin, "POST", "/cloud/accounts", newCloudAccount("prod", false), 409, "conflict", "", false},
		{"unknown account", member, "GET", "/cloud/accounts/" + unknown, nil, 404, "not_found", "", false},
		{"account id not a uuid", member, "GET", "/cloud/accounts/prod", nil, 404, "not_found", "", false},
		{"test an unknown account", member, "POST", "/cloud/accounts/" + unknown + "/test", nil, 404, "not_found", "", false},
		{"clusters of an unknown account", member, "GET", "/infrastructure/containers/clusters?account_id=" + unknown, nil, 404, "not_found", "", false},
		{"scale on an unknown account", member, "POST", "/infrastructure/containers/services/web/scale", scale(unknown, nil), 404, "not_found", "", false},
		{"member deletes an account", member, "DELETE", "/cloud/accounts/" + rw, nil, 403, "permission_denied", "", false},

		// Another organisation's account is not there.
		{"another org's account", otherMember, "GET", "/cloud/accounts/" + rw, nil, 404, "not_found", "", false},
		{"our view of theirs", member, "GET", "/cloud/accounts/" + theirs, nil, 404, "not_found", "", false},
		{"another org tests it", otherMember, "POST", "/cloud/accounts/" + rw + "/test", nil, 404, "not_found", "", false},
		{"another org's clusters", otherMember, "GET", "/infrastructure/containers/clusters?account_id=" + rw, nil, 404, "not_found", "", false},
		{"another org's costs", otherMember, "GET", costs(day(0, -3), day(0, -2), ""), nil, 404, "not_found", "", false},
		{"another org scales", otherMember, "POST", "/infrastructure/containers/services/web/scale", scale(rw, nil), 404, "not_found", "", false},
		{"another org invokes", otherMember, "POST", "/infrastructure/serverless/functions/" + cloudFunction + "/invoke", map[string]any{"account_id": rw}, 404, "not_found", "", false},
		{"another org's admin deletes", otherAdmin, "DELETE", "/cloud/accounts/" + rw, nil, 404, "not_found", "", false},

		// The org has three accounts: without account_id, a list is 400
		// naming them; a service in two clusters is 400 naming them.
		{"clusters without account", member, "GET", "/infrastructure/containers/clusters", nil, 400, "malformed", "account_id", false},
		{"services without account", member, "GET", "/infrastructure/containers/clusters/prod/services", nil, 400, "malformed", "account_id", false},
		{"functions without account", member, "GET", "/infrastructure/serverless/functions", nil, 400, "malformed", "account_id", false},
		{"costs without account", member, "GET", "/cloud/costs?start_date=" + day(0, -3) + "&end_date=" + day(0, -2), nil, 400, "malformed", "account_id", false},
		{"service logs in two clusters", member, "GET", "/infrastructure/containers/services/web/logs?account_id=" + rw, nil, 400, "malformed", "cluster", true},
		{"deploy in two clusters", member, "POST", "/infrastructure/containers/services/web/deploy", map[string]any{"account_id": rw}, 400, "malformed", "cluster", true},
		{"scale in two clusters", member, "POST", "/infrastructure/containers/services/web/scale", scale(rw, map[string]any{"cluster": nil}), 400, "malformed", "cluster", true},
		{"scale without count", member, "POST", "/infrastructure/containers/services/web/scale", scale(rw, map[string]any{"desired_count": nil}), 400, "malformed", "desired_count", false},

		// Out of range.
		{"scale above 1000", member, "POST", "/infrastructure/containers/services/web/scale", scale(rw, map[string]any{"desired_count": 1001}), 422, "invalid", "desired_count", false},
		{"scale below 0", member, "POST", "/infrastructure/containers/services/web/scale", scale(rw, map[string]any{"desired_count": -1}), 422, "invalid", "desired_count", false},
		{"scale to 0 unconfirmed", member, "POST", "/infrastructure/containers/services/web/scale", scale(rw, map[string]any{"desired_count": 0}), 422, "invalid", "confirm_scale_to_zero", false},
		{"scale to 0 confirmed false", member, "POST", "/infrastructure/containers/services/web/scale", scale(rw, map[string]any{"desired_count": 0, "confirm_scale_to_zero": false}), 422, "invalid", "confirm_scale_to_zero", false},
		{"log limit too high", member, "GET", "/infrastructure/containers/services/web/logs?cluster=prod&limit=5000&account_id=" + rw, nil, 422, "invalid", "limit", false},
		{"log since not a time", member, "GET", "/infrastructure/serverless/functions/" + cloudFunction + "/logs?since=yesterday&account_id=" + rw, nil, 422, "invalid", "since", false},
		{"log since a date", member, "GET", "/infrastructure/serverless/functions/" + cloudFunction + "/logs?since=2026-01-02&account_id=" + rw, nil, 422, "invalid", "since", false},
		{"payload over 256 KiB", member, "POST", "/infrastructure/serverless/functions/" + cloudFunction + "/invoke", map[string]any{"account_id": rw, "payload": strings.Repeat("x", 300<<10)}, 413, "payload_too_large", "payload", false},

		// Cost ranges are checked before Cost Explorer is asked.
		{"costs start after end", member, "GET", costs(day(0, -2), day(0, -3), ""), nil, 400, "malformed", "start_date", false},
		{"costs 14 months back", member, "GET", costs(day(-14, 0), day(0, -1), ""), nil, 400, "malformed", "start_date", false},
		{"costs start not a date", member, "GET", costs(strings.ReplaceAll(day(0, -3), "-", "/"), day(0, -2), ""), nil, 400, "malformed", "start_date", false},
		{"costs end not a date", member, "GET", costs(day(0, -3), "tomorrow", ""), nil, 400, "malformed", "end_date", false},
		{"costs without end", member, "GET", "/cloud/costs?account_id=" + rw + "&start_date=" + day(0, -3), nil, 400, "malformed", "end_date", false},
		{"costs hourly", member, "GET", costs(day(0, -3), day(0, -2), "&granularity=HOURLY"), nil, 400, "malformed", "granularity", false},
		{"costs by operation", member, "GET", costs(day(0, -3), day(0, -2), "&group_by=OPERATION"), nil, 400, "malformed", "group_by", false},

		// Writes on a read-only account.
		{"scale read-only", member, "POST", "/infrastructure/containers/services/web/scale", scale(ro, nil), 403, "forbidden", "", false},
		{"invoke read-only (dry run)", member, "POST", "/infrastructure/serverless/functions/" + cloudFunction + "/invoke", map[string]any{"account_id": ro, "dry_run": true}, 403, "forbidden", "", false},

		// What AWS does not have.
		{"unknown cluster", member, "GET", "/infrastructure/containers/clusters/nope/services?account_id=" + rw, nil, 404, "not_found", "", true},
		{"scale unknown service", member, "POST", "/infrastructure/containers/services/ghost/scale", scale(rw, nil), 404, "not_found", "", true},
		{"invoke unknown function", member, "POST", "/infrastructure/serverless/functions/ghost/invoke", map[string]any{"account_id": rw}, 404, "not_found", "", true},
		{"unknown build", member, "GET", "/deployments/apps/" + cloudApp + "/builds/99/logs?account_id=" + rw, nil, 404, "not_found", "", true},
		{"unknown devpilot build", member, "GET", "/deployments/apps/" + cloudApp + "/builds/" + unknown + "/logs", nil, 404, "not_found", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(st.aws.Calls())
			code, _, body := c.do(t, tt.token, tt.method, tt.path, tt.body)
			var p cloudProblem
			if err := json.Unmarshal(body, &p); err != nil || code != tt.status || p.Code != tt.code || (tt.field != "" && !p.names(tt.field)) {
				t.Fatalf("%s %s = %d %s, want %d %s naming %q", tt.method, tt.path, code, body, tt.status, tt.code, tt.field)
			}
			if n := len(st.aws.Calls()) - before; !tt.aws && n != 0 {
				t.Fatalf("%d AWS calls were made: %+v", n, st.aws.Calls()[before:])
			}
		})
	}

	t.Run("throttled beyond the retries", func(t *testing.T) {
		before := len(st.aws.CallsTo(fakeaws.ServiceECS, "ListClusters"))
		st.aws.Inject(fakeaws.ServiceECS, "ListClusters", fakeaws.Throttling().WithRetryAfter(7*time.Second).Times(3))
		code, h, body := c.do(t, member, "GET", "/infrastructure/containers/clusters?account_id="+rw, nil)
		p := decodeOK[cloudProblem](t, "throttled", code, 429, body)
		if p.Code != "rate_limited" || h.Get("Retry-After") != "7" || !strings.Contains(p.Detail, "ThrottlingException") {
			t.Fatalf("throttled: Retry-After %q, %s", h.Get("Retry-After"), body)
		}
		calls := st.aws.CallsTo(fakeaws.ServiceECS, "ListClusters")[before:]
		if len(calls) != 3 || calls[0].Attempt != 1 || calls[2].Attempt != 3 {
			t.Fatalf("attempts: %+v", calls)
		}
		if code, _, body := c.do(t, member, "GET", "/infrastructure/containers/clusters?account_id="+rw, nil); code != 200 {
			t.Fatalf("after the throttling: %d %s", code, body)
		}
	})

	t.Run("throttled write", func(t *testing.T) {
		before := len(st.aws.CallsTo(fakeaws.ServiceECS, "UpdateService"))
		st.aws.Inject(fakeaws.ServiceECS, "UpdateService", fakeaws.Throttling().Times(3))
		code, h, body := c.do(t, member, "POST", "/infrastructure/containers/services/worker/scale", scale(rw, map[string]any{"desired_count": 4, "confirm_name": "worker"}))
		if p := decodeOK[cloudProblem](t, "throttled scale", code, 429, body); p.Code != "rate_limited" || h.Get("Retry-After") == "" {
			t.Fatalf("throttled scale: Retry-After %q, %s", h.Get("Retry-After"), body)
		}
		if n := len(st.aws.CallsTo(fakeaws.ServiceECS, "UpdateService")) - before; n != 3 {
			t.Fatalf("%d UpdateService attempts, want 3", n)
		}
	})

	t.Run("access denied", func(t *testing.T) {
		st.aws.Inject(fakeaws.ServiceLambda, "ListFunctions",
			fakeaws.AccessDenied().WithMessage("User with key "+cloudKeyID+" and secret "+cloudSecret+" is not authorized to perform lambda:ListFunctions").Times(1))
		code, _, body := c.do(t, member, "GET", "/infrastructure/serverless/functions?account_id="+rw, nil)
		p := decodeOK[cloudProblem](t, "access denied", code, 502, body)
		if p.Code != "upstream" || !strings.Contains(p.Detail, "AccessDeniedException") || strings.Contains(p.Detail, cloudSecret) {
			t.Fatalf("access denied: %s", body)
		}
	})

	t.Run("connection tests that fail", func(t *testing.T) {
		type result struct {
			OK    bool
			ARN   string
			Error string
		}
		st.aws.Inject(fakeaws.ServiceSTS, "GetCallerIdentity", fakeaws.AccessDenied().Times(1))
		code, _, body := c.do(t, member, "POST", "/cloud/accounts/"+rw+"/test", nil)
		if r := decodeOK[result](t, "denied test", code, 200, body); r.OK || !strings.Contains(r.Error, "AccessDenied") {
			t.Fatalf("denied test: %s", body)
		}
		code, _, body = c.do(t, member, "GET", "/cloud/accounts/"+rw, nil)
		if a := decodeOK[cloudAccountView](t, "account after a failed test", code, 200, body); a.Status != "failed" || a.LastTestedAt == nil {
			t.Fatalf("account after a failed test: %s", body)
		}
		code, _, body = c.do(t, member, "POST", "/cloud/accounts/"+rw+"/test", nil)
		if r := decodeOK[result](t, "test", code, 200, body); !r.OK || r.ARN != cloudUserARN {
			t.Fatalf("test after the fault: %s", body)
		}
		code, _, body = c.do(t, member, "POST", "/cloud/accounts/"+stranger+"/test", nil)
		if r := decodeOK[result](t, "unknown key", code, 200, body); r.OK || !strings.Contains(r.Error, "InvalidClientTokenId") {
			t.Fatalf("a key AWS does not know: %s", body)
		}
		code, _, body = c.do(t, member, "GET", "/cloud/accounts/"+stranger, nil)
		if a := decodeOK[cloudAccountView](t, "stranger", code, 200, body); a.Status != "failed" {
			t.Fatalf("stranger after its test: %s", body)
		}
	})

	t.Run("audit", func(t *testing.T) {
		entries := c.audit(t, member, rw)
		for _, want := range []struct{ action, resource string }{
			{"ecs.scale_service", "prod/ghost"}, {"ecs.scale_service", "prod/worker"}, {"lambda.invoke_function", "ghost"},
		} {
			got := findAudit(entries, want.action, want.resource)
			if len(got) != 1 || got[0].Outcome != "failed" || got[0].UserID != memberID || got[0].Error == "" {
				t.Fatalf("audit of %s %s: %+v", want.action, want.resource, got)
			}
		}
		// Rejected before the account was found, or before the arguments
		// passed: nothing to audit.
		if n := len(entries); n != 4 {
			t.Fatalf("%d audit entries on the account, want 4 (the create and three failed writes): %+v", n, entries)
		}
		roEntries := c.audit(t, member, ro)
		if got := findAudit(roEntries, "ecs.scale_service", "prod/web"); len(got) != 1 || got[0].Outcome != "refused" {
			t.Fatalf("audit of the refused scale: %+v", roEntries)
		}
		if got := findAudit(roEntries, "lambda.invoke_function", cloudFunction); len(got) != 1 || got[0].Outcome != "refused" || got[0].Arguments["dry_run"] != true {
			t.Fatalf("audit of the refused dry run: %+v", roEntries)
		}
		// Another organisation's account is not found, like any of its
		// resources (issue 18: it was 200 with an empty list).
		for _, path := range []string{"/cloud/accounts/" + rw + "/audit", "/api/v1/cloud/accounts/" + rw + "/audit", "/cloud/accounts/" + unknown + "/audit"} {
			code, _, body := c.do(t, otherMember, "GET", path, nil)
			if p := decodeOK[cloudProblem](t, "their audit view", code, 404, body); p.Code != "not_found" {
				t.Fatalf("another org reads our audit: %s", body)
			}
		}
		if code, _, body := c.do(t, member, "GET", "/cloud/accounts/"+theirs+"/audit", nil); code != 404 {
			t.Fatalf("we read their audit: %d %s", code, body)
		}
	})

	c.assertNoSecret(t, cloudSecret, strangerSecret)
}

// TestCloudResolution: where a request leaves out the account, the cluster
// or the branch, devpilot works it out when only one fits, and otherwise
// answers 400 naming the choices; a build's logs need only the build id
// its deploy returned; the assume-role external id is the org's.
func TestCloudResolution(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startStack(t, string(d))
			seedCloud(st.aws.Account(cloudAWSAccount), time.Now())
			const secondKeyID, secondSecret = "AKIAI44QH8DHBSECOND1", "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY"
			st.aws.Account("210987654321").User("devpilot", secondKeyID, secondSecret).
				Cluster("blue", fakeaws.Service{Name: "api", TaskDefinition: "web:3", Desired: 1, Running: 1}).
				Function(fakeaws.Function{Name: "thumbnail", Runtime: "python3.12", Handler: "app.handler", MemoryMB: 128, TimeoutSecs: 3}).
				LogGroup("/aws/lambda/thumbnail").
				App(fakeaws.App{ID: "d9second", Name: "docs", Branches: []fakeaws.Branch{
					{Name: "dev", Stage: "DEVELOPMENT"}, {Name: "main", Stage: "PRODUCTION"}}})
			c := &cloudClient{st: st}
			admin, _ := st.cloudUser("ops@example.com", "acme", ports.RoleAdmin)
			member, _ := st.cloudUser("dev@example.com", "acme", ports.RoleOperator) // the default policy lets operators run cloud writes
			lonely, _ := st.cloudUser("new@example.com", "empty", ports.RoleAdmin)
			problem := func(what string, code int, body []byte, field string, mentions ...string) cloudProblem {
				t.Helper()
				p := decodeOK[cloudProblem](t, what, code, 400, body)
				if p.Code != "malformed" || !p.names(field) {
					t.Fatalf("%s: %s, want a problem naming %s", what, body, field)
				}
				for _, m := range mentions {
					reason := ""
					for _, f := range p.Errors {
						if f.Field == field {
							reason = f.Reason
						}
					}
					if !strings.Contains(p.Detail, m) || !strings.Contains(reason, m) {
						t.Fatalf("%s: %s does not name %q in its detail and errors[]", what, body, m)
					}
				}
				return p
			}

			// No account: 400 saying so; no apps.
			code, _, body := c.do(t, lonely, "GET", "/infrastructure/containers/clusters", nil)
			problem("clusters of an org without accounts", code, body, "account_id", "no cloud account")
			code, _, body = c.do(t, lonely, "GET", "/deployments/apps", nil)
			if apps := decodeOK[struct{ Items []any }](t, "apps of an org without accounts", code, 200, body); len(apps.Items) != 0 {
				t.Fatalf("apps of an org without accounts: %s", body)
			}

			// One account: account_id is not needed.
			code, _, body = c.do(t, admin, "POST", "/cloud/accounts", newCloudAccount("prod", false))
			first := decodeOK[cloudAccountView](t, "create the first account", code, 201, body)
			code, _, body = c.do(t, member, "GET", "/infrastructure/containers/clusters", nil)
			if cl := decodeOK[struct{ Items []struct{ Name string } }](t, "clusters of the one account", code, 200, body); len(cl.Items) != 2 {
				t.Fatalf("clusters of the one account: %s", body)
			}
			code, _, body = c.do(t, member, "GET", "/infrastructure/containers/services/worker/logs", nil)
			decodeOK[cloudLogs](t, "logs of a service in one cluster", code, 200, body)
			code, _, body = c.do(t, member, "GET", "/infrastructure/containers/services/web/logs", nil)
			problem("logs of a service in two clusters", code, body, "cluster", "prod", "staging")
			code, _, body = c.do(t, member, "GET", "/infrastructure/containers/services/web/logs?cluster=staging", nil)
			decodeOK[cloudLogs](t, "logs of a service, its cluster named", code, 200, body)
			code, _, body = c.do(t, member, "POST", "/infrastructure/containers/services/worker/deploy", map[string]any{})
			decodeOK[map[string]any](t, "deploy a service in one cluster", code, 200, body)
			code, _, body = c.do(t, member, "GET", "/infrastructure/serverless/functions/"+cloudFunction+"/logs", nil)
			decodeOK[cloudLogs](t, "function logs", code, 200, body)
			code, _, body = c.do(t, member, "POST", "/infrastructure/serverless/functions/"+cloudFunction+"/invoke", map[string]any{"payload": map[string]int{"n": 1}})
			decodeOK[map[string]any](t, "invoke", code, 200, body)

			type startedBuild struct {
				BuildID   string `json:"build_id"`
				AccountID string `json:"account_id"`
				Branch    string
				JobID     string `json:"job_id"`
			}
			type buildLogs struct {
				Status string
				Steps  []struct{ Name, Status, Log string }
			}
			code, _, body = c.do(t, member, "POST", "/deployments/apps/"+cloudApp+"/deploy", map[string]any{})
			b1 := decodeOK[startedBuild](t, "deploy the app's only branch", code, 200, body)
			if b1.Branch != "main" || b1.AccountID != first.ID || b1.JobID != "2" {
				t.Fatalf("deploy the app's only branch: %s", body)
			}

			// Two accounts: a list needs account_id (400 naming both);
			// what only one account has is found.
			second := newCloudAccount("second", false)
			second["auth"] = map[string]any{"mode": "access_key", "access_key_id": secondKeyID, "secret_access_key": secondSecret}
			code, _, body = c.do(t, admin, "POST", "/cloud/accounts", second)
			two := decodeOK[cloudAccountView](t, "create the second account", code, 201, body)
			code, _, body = c.do(t, member, "GET", "/infrastructure/containers/clusters", nil)
			problem("clusters of two accounts", code, body, "account_id", first.ID+" (prod)", two.ID+" (second)")
			code, _, body = c.do(t, member, "GET", "/infrastructure/serverless/functions", nil)
			problem("functions of two accounts", code, body, "account_id", first.ID+" (prod)", two.ID+" (second)")
			code, _, body = c.do(t, member, "GET", "/infrastructure/containers/clusters?account_id="+two.ID, nil)
			if cl := decodeOK[struct{ Items []struct{ Name string } }](t, "clusters of the second account", code, 200, body); len(cl.Items) != 1 || cl.Items[0].Name != "blue" {
				t.Fatalf("clusters of the second account: %s", body)
			}
			code, _, body = c.do(t, member, "GET", "/infrastructure/containers/services/worker/logs", nil)
			decodeOK[cloudLogs](t, "logs of a service only the first account runs", code, 200, body)
			code, _, body = c.do(t, member, "GET", "/infrastructure/serverless/functions/thumbnail/logs", nil)
			decodeOK[cloudLogs](t, "logs of a function only the second account has", code, 200, body)
			code, _, body = c.do(t, member, "GET", "/infrastructure/serverless/functions/ghost/logs", nil)
			if code != 404 {
				t.Fatalf("logs of a function no account has: %d %s", code, body)
			}

			type appItem struct {
				ID        string
				AccountID string `json:"account_id"`
			}
			code, _, body = c.do(t, member, "GET", "/deployments/apps", nil)
			apps := decodeOK[struct{ Items []appItem }](t, "apps of every account", code, 200, body)
			if len(apps.Items) != 2 || apps.Items[0] != (appItem{cloudApp, first.ID}) || apps.Items[1] != (appItem{"d9second", two.ID}) ||
				bytes.Contains(body, []byte("failed_accounts")) {
				t.Fatalf("apps of every account: %s", body)
			}
			st.aws.Inject(fakeaws.ServiceAmplify, "ListApps", fakeaws.AccessDenied().Times(1))
			code, _, body = c.do(t, member, "GET", "/deployments/apps", nil)
			partial := decodeOK[struct {
				Items  []appItem
				Failed []struct {
					AccountID string `json:"account_id"`
					Name      string
					Code      string
					Error     string
				} `json:"failed_accounts"`
			}](t, "apps with one account failing", code, 200, body)
			if len(partial.Items) != 1 || partial.Items[0] != (appItem{"d9second", two.ID}) || len(partial.Failed) != 1 ||
				partial.Failed[0].AccountID != first.ID || partial.Failed[0].Code != "upstream" || !strings.Contains(partial.Failed[0].Error, "not authorized") {
				t.Fatalf("apps with one account failing: %s", body)
			}

			// The second account's app has two branches, one of them
			// production: that one is deployed.
			code, _, body = c.do(t, member, "POST", "/deployments/apps/d9second/deploy", map[string]any{})
			b2 := decodeOK[startedBuild](t, "deploy the production branch", code, 200, body)
			if b2.Branch != "main" || b2.AccountID != two.ID || b2.JobID != "1" || b2.BuildID == b1.BuildID {
				t.Fatalf("deploy the production branch: %s", body)
			}
			code, _, body = c.do(t, member, "POST", "/deployments/apps/d9second/deploy", map[string]any{"branch": "dev"})
			b3 := decodeOK[startedBuild](t, "deploy a named branch", code, 200, body)
			if b3.Branch != "dev" || b3.JobID != "1" {
				t.Fatalf("deploy a named branch: %s", body)
			}

			// Build logs by the build id alone, though job 1 is on both
			// branches; the Amplify job id alone is ambiguous there.
			for _, b := range []startedBuild{b1, b2, b3} {
				app := cloudApp
				if b.AccountID == two.ID {
					app = "d9second"
				}
				code, _, body = c.do(t, member, "GET", "/deployments/apps/"+app+"/builds/"+b.BuildID+"/logs", nil)
				if bl := decodeOK[buildLogs](t, "build logs by build id", code, 200, body); bl.Status != "PENDING" {
					t.Fatalf("build logs of %+v: %s", b, body)
				}
			}
			getJobs := st.aws.CallsTo(fakeaws.ServiceAmplify, "GetJob")
			if last := getJobs[len(getJobs)-1].Input; last["branchName"] != "dev" || last["jobId"] != "1" {
				t.Fatalf("GetJob of the dev build asked for %v", last)
			}
			code, _, body = c.do(t, member, "GET", "/deployments/apps/d9second/builds/1/logs", nil)
			problem("an Amplify job id on two branches", code, body, "branch", "dev", "main")
			code, _, body = c.do(t, member, "GET", "/deployments/apps/"+cloudApp+"/builds/1/logs", nil)
			if bl := decodeOK[buildLogs](t, "build logs by a job id found once", code, 200, body); bl.Status != "SUCCEED" || len(bl.Steps) != 2 {
				t.Fatalf("build logs by a job id found once: %s", body)
			}
			code, _, body = c.do(t, admin, "GET", "/deployments/apps/"+cloudApp+"/builds/"+b1.BuildID+"/logs", nil)
			decodeOK[buildLogs](t, "another member reads the build", code, 200, body)
			stranger, _ := st.cloudUser("eve@example.com", "other", ports.RoleAdmin)
			if code, _, body := c.do(t, stranger, "GET", "/deployments/apps/"+cloudApp+"/builds/"+b1.BuildID+"/logs", nil); code != 404 {
				t.Fatalf("another org reads the build: %d %s", code, body)
			}

			// The assume-role external id is devpilot's, one per org.
			ext := func(token string) string {
				t.Helper()
				code, _, body := c.do(t, token, "GET", "/cloud/external-id", nil)
				v := decodeOK[struct {
					ExternalID string `json:"external_id"`
				}](t, "external id", code, 200, body)
				if !strings.HasPrefix(v.ExternalID, "devpilot-") || len(v.ExternalID) < 30 {
					t.Fatalf("external id: %s", body)
				}
				return v.ExternalID
			}
			ours, theirs := ext(member), ext(stranger)
			if ours == theirs || ext(admin) != ours {
				t.Fatalf("external ids: ours %s (twice: %s), theirs %s", ours, ext(admin), theirs)
			}
			role := func(name, externalID string) map[string]any {
				auth := map[string]any{"mode": "assume_role", "role_arn": "arn:aws:iam::" + cloudAWSAccount + ":role/devpilot"}
				if externalID != "" {
					auth["external_id"] = externalID
				}
				return map[string]any{"name": name, "region": cloudRegion, "auth": auth}
			}
			type roleView struct {
				Auth struct {
					Mode       string
					RoleARN    string `json:"role_arn"`
					ExternalID string `json:"external_id"`
				}
			}
			code, _, body = c.do(t, stranger, "POST", "/cloud/accounts", role("role", ""))
			if a := decodeOK[roleView](t, "a role without external id", code, 201, body); a.Auth.ExternalID != theirs {
				t.Fatalf("a role without external id: %s, want %s", body, theirs)
			}
			code, _, body = c.do(t, stranger, "POST", "/cloud/accounts", role("role again", theirs))
			decodeOK[roleView](t, "a role with the org's external id", code, 201, body)
			// The same role with another org's external id (the confused
			// deputy), or one the tenant chose: 422.
			for _, id := range []string{ours, "chosen-by-the-tenant"} {
				code, _, body = c.do(t, stranger, "POST", "/cloud/accounts", role("borrowed", id))
				if p := decodeOK[cloudProblem](t, "a role with another external id", code, 422, body); !p.names("auth.external_id") || !strings.Contains(p.Detail, theirs) {
					t.Fatalf("a role with external id %s: %s", id, body)
				}
			}
			code, _, body = c.do(t, stranger, "GET", "/cloud/accounts", nil)
			for _, a := range decodeOK[struct{ Items []roleView }](t, "their accounts", code, 200, body).Items {
				if a.Auth.ExternalID != theirs {
					t.Fatalf("an account with external id %q, want %q", a.Auth.ExternalID, theirs)
				}
			}
			c.assertNoSecret(t, cloudSecret, secondSecret)
		})
	}
}
