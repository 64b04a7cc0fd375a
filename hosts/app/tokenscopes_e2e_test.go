package app_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeaws"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
	"github.com/devpilot/devpilot/ports"
)

// TestTokenScopes: tokens made with scopes can do what their scopes say
// and are refused the rest, 403 insufficient_scope naming the scope needed
// with RFC 6750's challenge, under /api/v1 and without; a read token reads
// everything and writes nothing; cloud:read cannot scale; spec:write writes
// specs but not content; a token that may chat but not write the cloud
// cannot approve the assistant's scale either. On both databases.
func TestTokenScopes(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startStack(t, string(d))
			st.aws.Regions(cloudRegion)
			seedCloud(st.aws.Account(cloudAWSAccount), time.Now())
			c := &cloudClient{st: st}
			admin, _ := st.cloudUser("ops-lead@example.com", "acme", ports.RoleAdmin)
			// An operator, whom the permission policy lets scale: what is
			// refused here is refused for the token's scopes.
			member, _ := st.cloudUser("dev@example.com", "acme", ports.RoleOperator)
			ecsUpdates := func() int { return len(st.aws.CallsTo(fakeaws.ServiceECS, "UpdateService")) }

			code, _, body := c.do(t, admin, "POST", "/cloud/accounts", newCloudAccount("prod", false))
			rw := decodeOK[cloudAccountView](t, "create account", code, 201, body)

			// Unknown scopes are 422 naming the field; none is read and write.
			code, _, body = c.do(t, member, "POST", "/api/v1/tokens", map[string]any{"name": "x", "expires_in_days": 1, "scopes": []string{"read", "cloud:admin"}})
			if code != 422 || !strings.Contains(string(body), `"field":"scopes[1]"`) {
				t.Fatalf("an unknown scope: %d %s", code, body)
			}
			mint := func(owner string, scopes ...string) string {
				t.Helper()
				req := map[string]any{"name": "scoped " + strings.Join(scopes, " "), "expires_in_days": 1}
				if scopes != nil {
					req["scopes"] = scopes
				}
				code, _, body := c.do(t, owner, "POST", "/api/v1/tokens", req)
				var made struct {
					Token  string
					Scopes []string
				}
				want := scopes
				if want == nil {
					want = []string{"read", "write"}
				}
				if err := json.Unmarshal(body, &made); code != 201 || err != nil || !slices.Equal(made.Scopes, want) {
					t.Fatalf("create a token with %v: %d %s", scopes, code, body)
				}
				return made.Token
			}
			unscoped := mint(member)
			read := mint(member, "read")
			cloudRead := mint(member, "cloud:read")
			specWrite := mint(admin, "spec:write")
			chatter := mint(member, "assistant:write", "cloud:read")

			code, _, body = c.do(t, member, "GET", "/api/v1/tokens", nil)
			if code != 200 || !strings.Contains(string(body), `"scopes":["cloud:read"]`) || !strings.Contains(string(body), `"scopes":["assistant:write","cloud:read"]`) {
				t.Fatalf("the list shows no scopes: %d %s", code, body)
			}
			// A scoped token cannot make a wider one.
			if code, _, body := c.do(t, cloudRead, "POST", "/api/v1/tokens", map[string]any{"name": "wider", "expires_in_days": 1, "scopes": []string{"write"}}); code != 403 {
				t.Fatalf("cloud:read making a write token: %d %s", code, body)
			}

			refused := func(token, method, path string, body any, scope string) {
				t.Helper()
				code, h, raw := c.do(t, token, method, path, body)
				var p struct{ Code, Detail string }
				_ = json.Unmarshal(raw, &p)
				if code != 403 || p.Code != "insufficient_scope" || !strings.Contains(p.Detail, scope) ||
					h.Get("WWW-Authenticate") != `Bearer error="insufficient_scope", scope="`+scope+`"` {
					t.Errorf("%s %s: %d %s (WWW-Authenticate %q), want 403 insufficient_scope naming %s", method, path, code, raw, h.Get("WWW-Authenticate"), scope)
				}
			}
			allowed := func(token, method, path string, body any, want int) {
				t.Helper()
				if code, _, raw := c.do(t, token, method, path, body); code != want {
					t.Errorf("%s %s: %d %s, want %d", method, path, code, raw, want)
				}
			}
			scale := map[string]any{"account_id": rw.ID, "cluster": "prod", "desired_count": 3}
			services := "/infrastructure/containers/clusters/prod/services?account_id=" + rw.ID

			// read: every read, no write.
			allowed(read, "GET", "/api/v1/me", nil, 200)
			allowed(read, "GET", "/cloud/accounts", nil, 200)
			allowed(read, "GET", "/api/v1"+services, nil, 200)
			allowed(read, "GET", "/pse/sessions", nil, 200)
			allowed(read, "GET", "/api/v1/tokens", nil, 200)
			refused(read, "POST", "/infrastructure/containers/services/web/scale", scale, "cloud:write")
			refused(read, "POST", "/api/v1/pse/standards", map[string]any{"title": "T", "body": "B", "applies_to": []string{"prd"}}, "spec:write")
			refused(read, "DELETE", "/api/v1/tokens/"+rw.ID, nil, "write")

			// cloud:read: reads the cloud, cannot scale, sees nothing else.
			allowed(cloudRead, "GET", services, nil, 200)
			refused(cloudRead, "POST", "/api/v1/infrastructure/containers/services/web/scale", scale, "cloud:write")
			refused(cloudRead, "GET", "/pse/sessions", nil, "spec:read")
			refused(cloudRead, "GET", "/api/v1/tokens", nil, "read")
			allowed(cloudRead, "GET", "/api/v1/me", nil, 200)

			// spec:write: writes specs, not content.
			allowed(specWrite, "POST", "/pse/standards", map[string]any{"title": "Owners", "body": "Name an owner.", "applies_to": []string{"prd"}}, 201)
			allowed(specWrite, "GET", "/api/v1/pse/standards", nil, 200)
			refused(specWrite, "POST", "/content/briefs", map[string]any{"project_id": "web", "title": "Spring sale", "goal": "Announce.",
				"channel": "blog", "format": "blog_post", "length": map[string]int{"min_words": 5, "max_words": 200}}, "content:write")
			refused(specWrite, "GET", "/api/v1/content", nil, "content:read")

			if n := ecsUpdates(); n != 0 {
				t.Fatalf("%d UpdateService calls after refusals", n)
			}
			allowed(unscoped, "POST", "/infrastructure/containers/services/web/scale", scale, 200) // the default: what tokens did before
			before := ecsUpdates()

			// Chat: assistant:write may chat, and the cloud read runs; the
			// scale waits, and this token cannot approve it.
			scaleArgs := fmt.Sprintf(`{"account_id":%q,"cluster":"prod","service":"worker","desired_count":3}`, rw.ID)
			st.model.Enqueue(fakeopenai.Text("Scaling worker to 3.").WithToolCalls(fakeopenai.Call{ID: "call_sc", Name: "scale_service", Arguments: scaleArgs}))
			code, body, evs := c.stream(chatter, "/api/v1/agent/chat", map[string]any{"message": "scale the prod worker to 3", "context": map[string]string{"current_page": "/cloud"}})
			if code != 200 || !strings.HasSuffix(names(evs), "confirmation_required,done") {
				t.Fatalf("chat: %d %s", code, body)
			}
			conf := find(evs, "confirmation_required").Data
			confirm := map[string]any{"session_id": conf["session_id"], "confirmation_id": conf["confirmation_id"], "approved": true}
			code, _, body = c.do(t, chatter, "POST", "/api/v1/agent/confirm", confirm)
			if code != 403 || !strings.Contains(string(body), `"code":"insufficient_scope"`) || !strings.Contains(string(body), "cloud:write") {
				t.Fatalf("approving a cloud write with assistant:write: %d %s", code, body)
			}
			if n := ecsUpdates(); n != before {
				t.Fatalf("the refused approval scaled (%d UpdateService calls)", n-before)
			}
			// The confirmation is still pending: a token that may write the cloud approves it.
			code, _, body = c.do(t, member, "POST", "/api/v1/agent/confirm", confirm)
			if code != http.StatusOK || ecsUpdates() != before+1 {
				t.Fatalf("approving with the member's own token: %d %s", code, body)
			}
		})
	}
}
