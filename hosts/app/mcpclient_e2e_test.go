package app_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/app"
	"github.com/devpilot/devpilot/testkit/fakemcp"
)

// mcpSecret is the header value the fake MCP server requires: it must
// reach the server and never an answer nor the database in plain text.
const mcpSecret = "Bearer mcp-s3cret-7f1c2e9a"

// startMCPStack starts a stack that may call servers on loopback (as
// publishing targets may in tests) with short MCP timeouts, and a fake MCP
// server requiring mcpSecret; it returns them with the database's URL.
func startMCPStack(t *testing.T, dialect string, extra map[string]string) (*stack, *fakemcp.Server, string) {
	t.Helper()
	url := stackDBURL(t, sqlstoreDialect(dialect))
	env := map[string]string{app.EnvDatabaseURL: url, app.EnvPublishAllowPrivate: "1",
		app.EnvMCPListTimeout: "2s", app.EnvMCPCallTimeout: "5s", app.EnvRateRequests: "1000"}
	for k, v := range extra {
		env[k] = v
	}
	st := startStackWith(t, dialect, env)
	fake := fakemcp.New(t)
	fake.RequireHeader("Authorization", mcpSecret)
	return st, fake, url
}

// mcpServer registers the fake as name for the admin's organisation and
// returns its id.
func (st *stack) mcpServer(admin, name, url string) string {
	st.t.Helper()
	code, raw, _ := st.call(admin, "POST", "/api/v1/mcp/servers", map[string]any{"name": name, "url": url,
		"headers": map[string]string{"Authorization": mcpSecret}})
	if code != http.StatusCreated {
		st.t.Fatalf("register %s: %d %s", name, code, raw)
	}
	var m struct{ ID string }
	_ = json.Unmarshal(raw, &m)
	return m.ID
}

func TestMCPServersAPI(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st, fake, dbURL := startMCPStack(t, string(d), nil)
			admin, member := st.admin("root@example.com"), st.token("mia@example.com")
			body := map[string]any{"name": "fake", "url": fake.URL(), "headers": map[string]string{"Authorization": mcpSecret}}

			if code, raw, _ := st.call(member, "POST", "/api/v1/mcp/servers", body); code != 403 {
				t.Fatalf("a member registering: %d %s", code, raw)
			}
			if code, raw, _ := st.call(member, "GET", "/api/v1/mcp/servers", nil); code != 403 {
				t.Fatalf("a member listing: %d %s", code, raw)
			}
			code, raw, _ := st.call(admin, "POST", "/api/v1/mcp/servers", body)
			if code != 201 {
				t.Fatalf("register: %d %s", code, raw)
			}
			var srv struct {
				ID          string   `json:"id"`
				Name        string   `json:"name"`
				HeaderNames []string `json:"header_names"`
				CreatedBy   string   `json:"created_by"`
			}
			if err := json.Unmarshal(raw, &srv); err != nil || srv.Name != "fake" || len(srv.HeaderNames) != 1 ||
				srv.HeaderNames[0] != "Authorization" || srv.CreatedBy == "" {
				t.Fatalf("the server: %s", raw)
			}
			if code, raw, _ := st.call(admin, "POST", "/api/v1/mcp/servers", body); code != 409 {
				t.Fatalf("the same name again: %d %s", code, raw)
			}
			for _, bad := range []map[string]any{
				{"name": "Fake", "url": fake.URL()},
				{"name": "a__b", "url": fake.URL()},
				{"name": "ftp", "url": "ftp://example.com/mcp"},
				{"name": "creds", "url": "https://user:pw@example.com/mcp"},
				{"name": "hdr", "url": fake.URL(), "headers": map[string]string{"Host": "x"}},
				{"name": "hdr2", "url": fake.URL(), "headers": map[string]string{"X-A": "line\nbreak"}},
			} {
				if code, raw, _ := st.call(admin, "POST", "/api/v1/mcp/servers", bad); code != 422 {
					t.Errorf("%v: %d %s, want 422", bad, code, raw)
				}
			}
			if code, raw, _ := st.call(admin, "POST", "/api/v1/mcp/servers", map[string]any{"name": "x"}); code != 400 {
				t.Errorf("without url: %d %s, want 400", code, raw)
			}

			code, raw, _ = st.call(admin, "GET", "/api/v1/mcp/servers", nil)
			if code != 200 || !strings.Contains(string(raw), `"header_names":["Authorization"]`) {
				t.Fatalf("list: %d %s", code, raw)
			}

			code, raw, _ = st.call(admin, "POST", "/api/v1/mcp/servers/"+srv.ID+"/test", nil)
			if code != 200 || !strings.Contains(string(raw), `"ok":true`) || !strings.Contains(string(raw), `"tool_count":5`) {
				t.Fatalf("test: %d %s", code, raw)
			}
			code, raw, _ = st.call(admin, "GET", "/api/v1/mcp/servers/"+srv.ID+"/tools", nil)
			var tools struct {
				Items []struct {
					Name, RemoteName, Policy string
					ReadOnly                 bool `json:"read_only"`
					NeedsApproval            bool `json:"needs_approval"`
				}
			}
			if err := json.Unmarshal(raw, &tools); code != 200 || err != nil || len(tools.Items) != 5 {
				t.Fatalf("tools: %d %s", code, raw)
			}
			byName := map[string]int{}
			for i, tl := range tools.Items {
				byName[tl.Name] = i
			}
			lookup, ticket := tools.Items[byName["fake__lookup"]], tools.Items[byName["fake__create_ticket"]]
			if !lookup.ReadOnly || lookup.NeedsApproval || lookup.Policy != "default" || ticket.ReadOnly || !ticket.NeedsApproval {
				t.Fatalf("tools: %s", raw)
			}

			policy := "/api/v1/mcp/servers/" + srv.ID + "/tools/lookup/policy"
			code, raw, _ = st.call(admin, "PUT", policy, map[string]string{"policy": "always_confirm"})
			if code != 200 || !strings.Contains(string(raw), `"needs_approval":true`) || !strings.Contains(string(raw), `"policy":"always_confirm"`) {
				t.Fatalf("policy: %d %s", code, raw)
			}
			if code, raw, _ := st.call(admin, "PUT", policy, map[string]string{"policy": "sometimes"}); code != 422 {
				t.Fatalf("a bad policy: %d %s", code, raw)
			}
			if code, raw, _ := st.call(member, "PUT", policy, map[string]string{"policy": "disabled"}); code != 403 {
				t.Fatalf("a member's policy: %d %s", code, raw)
			}
			if code, raw, _ := st.call(admin, "PUT", "/api/v1/mcp/servers/"+srv.ID+"/tools/nope/policy", map[string]string{"policy": "disabled"}); code != 404 {
				t.Fatalf("an unknown tool's policy: %d %s", code, raw)
			}

			// The secret reached the server, and nothing else.
			sent := false
			for _, h := range fake.Headers() {
				sent = sent || h.Get("Authorization") == mcpSecret
			}
			if !sent {
				t.Fatal("the server never got its header")
			}
			if found := findInTables(t, dbURL, strings.TrimPrefix(mcpSecret, "Bearer ")); len(found) > 0 {
				t.Fatalf("the header value is stored in plain text in %v", found)
			}

			code, raw, _ = st.call(admin, "GET", "/api/v1/audit", nil)
			for _, action := range []string{"mcp.create_server", "mcp.set_tool_policy"} {
				if code != 200 || !strings.Contains(string(raw), action) {
					t.Fatalf("audit lacks %s: %d %s", action, code, raw)
				}
			}
			if strings.Contains(string(raw), "s3cret") {
				t.Fatalf("the audit log holds the secret: %s", raw)
			}

			// A server that is down: the test says so, the tools list too.
			fake.Stop()
			code, raw, _ = st.call(admin, "POST", "/api/v1/mcp/servers/"+srv.ID+"/test", nil)
			if code != 200 || !strings.Contains(string(raw), `"ok":false`) || !strings.Contains(string(raw), `"error"`) {
				t.Fatalf("test of a stopped server: %d %s", code, raw)
			}
			code, raw, _ = st.call(admin, "GET", "/api/v1/mcp/servers/"+srv.ID+"/tools", nil)
			if code != 200 || !strings.Contains(string(raw), `"items":[]`) || !strings.Contains(string(raw), `"error"`) {
				t.Fatalf("tools of a stopped server: %d %s", code, raw)
			}
			code, raw, _ = st.call(admin, "GET", "/api/v1/mcp/servers", nil)
			if code != 200 || !strings.Contains(string(raw), `"last_error"`) {
				t.Fatalf("list after a failed test: %d %s", code, raw)
			}

			if code, raw, _ := st.call(admin, "DELETE", "/api/v1/mcp/servers/"+srv.ID, nil); code != 204 {
				t.Fatalf("delete: %d %s", code, raw)
			}
			if code, _, _ := st.call(admin, "DELETE", "/api/v1/mcp/servers/"+srv.ID, nil); code != 404 {
				t.Fatalf("delete again: %d", code)
			}
			if code, raw, _ := st.call(admin, "GET", "/api/v1/mcp/servers", nil); code != 200 || !strings.Contains(string(raw), `"items":[]`) {
				t.Fatalf("list after delete: %d %s", code, raw)
			}
			if code, raw, _ := st.call(admin, "GET", "/api/v1/audit", nil); !strings.Contains(string(raw), "mcp.delete_server") {
				t.Fatalf("audit lacks the delete: %d %s", code, raw)
			}
		})
	}
}

// TestMCPServerAddressGuard: without DEVPILOT_PUBLISH_ALLOW_PRIVATE, a
// server's address must be public, as a publishing target's.
func TestMCPServerAddressGuard(t *testing.T) {
	t.Parallel()
	st := startStack(t, "sqlite")
	admin := st.admin("root@example.com")
	for _, u := range []string{"http://127.0.0.1:8080/mcp", "http://localhost/mcp", "http://169.254.169.254/latest",
		"http://10.0.0.1/mcp", "http://[::1]/mcp", "http://2130706433/mcp", "http://printer.local/mcp"} {
		code, raw, _ := st.call(admin, "POST", "/api/v1/mcp/servers", map[string]any{"name": "guarded", "url": u})
		if code != 422 || !strings.Contains(string(raw), `"field":"url"`) {
			t.Errorf("%s: %d %s, want 422 naming url", u, code, raw)
		}
	}
}
