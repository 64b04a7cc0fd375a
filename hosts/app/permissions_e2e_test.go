package app_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeaws"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
	"github.com/devpilot/devpilot/ports"
)

// refusedFor checks a 403 problem whose code is permission_denied and whose
// detail names perm.
func refusedFor(t *testing.T, what string, code int, body []byte, perm string) {
	t.Helper()
	var p struct{ Code, Detail string }
	_ = json.Unmarshal(body, &p)
	if code != 403 || p.Code != "permission_denied" || !strings.HasPrefix(p.Detail, perm+" needs ") {
		t.Fatalf("%s: %d %s, want 403 permission_denied naming %s", what, code, body, perm)
	}
}

// TestPermissionsEndToEnd: the member whose token scaled production
// payments is refused cloud.scale on every path (HTTP and its /api/v1
// alias, a chat proposal, a confirmation, a voice tool call) with 403
// naming the permission; an operator may; once an admin gives members the
// permission, the member may too.
func TestPermissionsEndToEnd(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startStack(t, string(d))
			st.aws.Regions(cloudRegion)
			seedCloud(st.aws.Account(cloudAWSAccount), time.Now())
			c := &cloudClient{st: st}
			admin, _ := st.cloudUser("root@example.com", "acme", ports.RoleAdmin)
			operator, _ := st.cloudUser("ops@example.com", "acme", ports.RoleOperator)
			member, memberID := st.cloudUser("dev@example.com", "acme", ports.RoleMember)
			updates := func() int { return len(st.aws.CallsTo(fakeaws.ServiceECS, "UpdateService")) }

			code, _, body := c.do(t, admin, "POST", "/cloud/accounts", newCloudAccount("prod", false))
			acct := decodeOK[cloudAccountView](t, "create account", code, 201, body)
			scale := func(n int) map[string]any {
				return map[string]any{"account_id": acct.ID, "cluster": "prod", "desired_count": n}
			}

			// The policy reads the same for everyone, with its defaults.
			code, _, body = c.do(t, member, "GET", "/api/v1/permissions", nil)
			pol := decodeOK[struct {
				Data []struct {
					Name    string
					Area    string
					Roles   []string
					Default bool
				}
			}](t, "permissions", code, 200, body)
			var scaleRoles string
			for _, p := range pol.Data {
				if p.Name == "cloud.scale" {
					scaleRoles = fmt.Sprintf("%v %v %s", p.Roles, p.Default, p.Area)
				}
			}
			if scaleRoles != "[admin operator] true cloud" {
				t.Fatalf("cloud.scale in the policy: %q (%s)", scaleRoles, body)
			}

			// HTTP, both paths: refused before anything reaches AWS.
			before := updates()
			for _, path := range []string{"/infrastructure/containers/services/web/scale", "/api/v1/infrastructure/containers/services/web/scale"} {
				code, _, body = c.do(t, member, "POST", path, scale(24))
				refusedFor(t, "member scales at "+path, code, body, "cloud.scale")
				if !strings.Contains(string(body), "cloud.scale needs the admin or operator role") {
					t.Errorf("the refusal does not say who may: %s", body)
				}
			}
			code, _, body = c.do(t, member, "POST", "/deployments/apps/"+cloudApp+"/deploy", map[string]any{"account_id": acct.ID, "branch": "main"})
			refusedFor(t, "member deploys an app", code, body, "cloud.deploy")
			if n := updates(); n != before {
				t.Fatalf("a refused scale made %d UpdateService calls", n-before)
			}
			// An operator may.
			code, _, body = c.do(t, operator, "POST", "/infrastructure/containers/services/web/scale", scale(3))
			if svc := decodeOK[cloudService](t, "operator scales", code, 200, body); svc.DesiredCount != 3 {
				t.Fatalf("operator scale: %s", body)
			}

			// Chat: the proposed call is refused, in words, and nothing waits.
			args := fmt.Sprintf(`{"account_id":%q,"cluster":"prod","service":"web","desired_count":24}`, acct.ID)
			st.model.Enqueue(fakeopenai.ToolCalls(fakeopenai.Call{ID: "call_sc", Name: "scale_service", Arguments: args}),
				fakeopenai.Text("You may not scale it."))
			code, body, evs := c.stream(member, "/api/v1/agent/chat", map[string]any{"message": "scale web to 24", "context": map[string]string{"current_page": "/cloud"}})
			if code != 200 {
				t.Fatalf("chat: %d %s", code, body)
			}
			if got := names(evs); strings.Contains(got, "confirmation_required") {
				t.Fatalf("a refused write asked for confirmation: %s", got)
			}
			res := find(evs, "tool_result").Data
			if res["ok"] != false || !strings.Contains(fmt.Sprint(res["error"]), "cloud.scale needs the admin or operator role") {
				t.Fatalf("tool_result = %v", res)
			}

			// Voice: refused with 403 naming the permission.
			code, body, _ = st.call(member, "POST", "/api/v1/voice/tool-calls", map[string]any{"name": "scale_service", "arguments": args, "call_id": "call_voice"})
			refusedFor(t, "member's voice tool call", code, body, "cloud.scale")

			// Only an admin changes the policy; admin stays on policy.permissions.
			code, _, body = c.do(t, member, "PUT", "/api/v1/permissions/cloud.scale", map[string]any{"roles": []string{"admin", "operator", "member"}})
			refusedFor(t, "member changes the policy", code, body, "policy.permissions")
			if code, _, body = c.do(t, admin, "PUT", "/api/v1/permissions/policy.permissions", map[string]any{"roles": []string{"operator"}}); code != 422 {
				t.Fatalf("removing admin from policy.permissions: %d %s", code, body)
			}
			if code, _, body = c.do(t, admin, "PUT", "/api/v1/permissions/cloud.nothing", map[string]any{"roles": []string{"admin"}}); code != 404 {
				t.Fatalf("an unknown permission: %d %s", code, body)
			}
			if code, _, body = c.do(t, admin, "PUT", "/api/v1/permissions/cloud.scale", map[string]any{"roles": []string{"root"}}); code != 422 {
				t.Fatalf("an unknown role: %d %s", code, body)
			}
			setScale := func(roles ...string) {
				t.Helper()
				code, _, body := c.do(t, admin, "PUT", "/api/v1/permissions/cloud.scale", map[string]any{"roles": roles})
				var e struct {
					Roles   []string
					Default bool
				}
				if e = decodeOK[struct {
					Roles   []string
					Default bool
				}](t, "set cloud.scale", code, 200, body); e.Default || strings.Join(e.Roles, ",") != strings.Join(roles, ",") {
					t.Fatalf("set cloud.scale: %s", body)
				}
			}
			setScale("admin", "operator", "member")

			// Now the member's chat proposes the scale; the admin takes the
			// permission back before the member confirms: the confirm is refused.
			st.model.Enqueue(fakeopenai.ToolCalls(fakeopenai.Call{ID: "call_sc2", Name: "scale_service", Arguments: args}))
			code, _, evs = c.stream(member, "/api/v1/agent/chat", map[string]any{"message": "scale web to 24", "context": map[string]string{"current_page": "/cloud"}})
			if code != 200 || !strings.HasSuffix(names(evs), "confirmation_required,done") {
				t.Fatalf("chat with the permission: %d %s", code, names(evs))
			}
			conf := find(evs, "confirmation_required").Data
			confirm := map[string]any{"session_id": conf["session_id"], "confirmation_id": conf["confirmation_id"], "approved": true}
			setScale("admin", "operator")
			before = updates()
			code, _, body = c.do(t, member, "POST", "/api/v1/agent/confirm", confirm)
			refusedFor(t, "member confirms", code, body, "cloud.scale")
			if n := updates(); n != before {
				t.Fatalf("a refused confirm made %d UpdateService calls", n-before)
			}
			// Given back, the same confirmation (still pending) runs.
			setScale("admin", "operator", "member")
			code, _, body = c.do(t, member, "POST", "/api/v1/agent/confirm", confirm)
			if decided := decodeOK[struct{ Status string }](t, "confirm", code, 200, body); decided.Status != "approved" || updates() != before+1 {
				t.Fatalf("confirm with the permission: %s", body)
			}
			down := scale(4) // from 24: a large change, so the name is typed
			down["confirm_name"] = "web"
			code, _, body = c.do(t, member, "POST", "/infrastructure/containers/services/web/scale", down)
			if svc := decodeOK[cloudService](t, "member scales", code, 200, body); svc.DesiredCount != 4 {
				t.Fatalf("member scale: %s", body)
			}

			// Each change is in the organisation's audit log.
			code, _, body = c.do(t, admin, "GET", "/api/v1/audit?limit=100", nil)
			if code != 200 || strings.Count(string(body), `"permission.set"`) != 3 || !strings.Contains(string(body), "permission/cloud.scale") {
				t.Fatalf("audit: %d %s", code, body)
			}
			// So is every refused attempt, with what was asked: the scale
			// by HTTP on both paths, and by tool (the chat's proposal, the
			// voice call and the refused confirmation).
			audit := decodeOK[struct {
				Items []struct {
					UserID    string `json:"user_id"`
					Action    string
					Resource  string
					Arguments json.RawMessage
					Outcome   string
					Error     string
				}
			}](t, "audit", code, 200, body)
			refused := map[string]int{}
			for _, e := range audit.Items {
				if e.Action != "permission.denied" || e.UserID != memberID || e.Outcome != "refused" {
					continue
				}
				if e.Resource == "permission/cloud.scale" && !strings.Contains(e.Error, "cloud.scale needs") {
					t.Errorf("a refusal's entry says %q", e.Error)
				}
				refused[e.Resource+" "+string(e.Arguments)]++
			}
			for what, n := range map[string]int{
				`permission/cloud.scale {"operation":"POST /infrastructure/containers/services/:service/scale"}`:        1,
				`permission/cloud.scale {"operation":"POST /api/v1/infrastructure/containers/services/:service/scale"}`: 1,
				`permission/cloud.scale {"tool":"scale_service"}`:                                                       3,
				`permission/cloud.deploy {"operation":"POST /deployments/apps/:app_id/deploy"}`:                         1,
				`permission/policy.permissions {"operation":"PUT /api/v1/permissions/:permission"}`:                     1,
			} {
				if refused[what] != n {
					t.Errorf("the audit log has %d refusals %s, want %d (all: %v)", refused[what], what, n, refused)
				}
			}
		})
	}
}
