package app_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/devpilot/devpilot/adapters/sqlstore"
	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/hosts/app"
)

// TestMembers: an organisation's admin lists its members and changes their
// roles, which their tokens carry at once; the last admin cannot be made a
// member; members may do neither; every change is audited. On both
// databases.
func TestMembers(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startStack(t, string(d))
			lead, bob := st.admin("lead@example.com"), st.token("bob@example.com")
			_ = st.token("alice@example.com")
			outsider, err := st.id.IssueToken(t.Context(), identity.IssueTokenInput{Email: "mallory@example.com", OrgName: "globex"})
			if err != nil {
				t.Fatal(err)
			}

			if code, _, _ := st.call(bob, "GET", "/api/v1/members", nil); code != 403 {
				t.Fatalf("a member listing members: %d", code)
			}
			code, body, _ := st.call(lead, "GET", "/api/v1/members?limit=2", nil)
			var page struct {
				Items []struct{ ID, Email, Role string }
				Next  *string `json:"next_cursor"`
			}
			if err := json.Unmarshal(body, &page); code != 200 || err != nil || len(page.Items) != 2 || page.Next == nil ||
				page.Items[0].Email != "alice@example.com" || page.Items[1].Email != "bob@example.com" {
				t.Fatalf("first page: %d %s", code, body)
			}
			code, body, _ = st.call(lead, "GET", "/api/v1/members?limit=2&cursor="+*page.Next, nil)
			var rest struct {
				Items []struct{ ID, Email, Role string }
			}
			if err := json.Unmarshal(body, &rest); code != 200 || err != nil || len(rest.Items) != 1 || rest.Items[0].Email != "lead@example.com" || rest.Items[0].Role != "admin" {
				t.Fatalf("second page: %d %s", code, body)
			}
			bobID, leadID := page.Items[1].ID, rest.Items[0].ID
			if strings.Contains(string(body), "mallory") {
				t.Fatal("another organisation's member listed")
			}

			for _, bad := range []struct {
				token, id string
				body      any
				want      int
			}{
				{bob, bobID, map[string]string{"role": "admin"}, 403},
				{lead, bobID, map[string]string{"role": "owner"}, 422},
				{lead, bobID, map[string]any{}, 400},
				{lead, outsider.User.ID, map[string]string{"role": "admin"}, 404},
				{lead, "not-an-id", map[string]string{"role": "admin"}, 404},
				{lead, leadID, map[string]string{"role": "member"}, 409}, // the last admin
			} {
				if code, body, _ := st.call(bad.token, "PATCH", "/api/v1/members/"+bad.id, bad.body); code != bad.want {
					t.Errorf("PATCH %s %v: %d %s, want %d", bad.id, bad.body, code, body, bad.want)
				}
			}

			// Bob becomes an admin: his token says so on his next request.
			if code, body, _ := st.call(lead, "PATCH", "/api/v1/members/"+bobID, map[string]string{"role": "admin"}); code != 200 || !strings.Contains(string(body), `"role":"admin"`) {
				t.Fatalf("promote bob: %d %s", code, body)
			}
			if code, _, _ := st.call(bob, "GET", "/api/v1/members", nil); code != 200 {
				t.Fatalf("bob as an admin: %d", code)
			}
			// With two admins, the lead may become a member; then bob is the last.
			if code, body, _ := st.call(bob, "PATCH", "/api/v1/members/"+leadID, map[string]string{"role": "member"}); code != 200 {
				t.Fatalf("demote the lead: %d %s", code, body)
			}
			if code, body, _ := st.call(bob, "PATCH", "/api/v1/members/"+bobID, map[string]string{"role": "member"}); code != 409 || !strings.Contains(string(body), "last_admin") {
				t.Fatalf("the last admin demoting himself: %d %s", code, body)
			}
			if code, _, _ := st.call(lead, "GET", "/api/v1/members", nil); code != 403 {
				t.Fatalf("the demoted lead listing members: %d", code)
			}

			code, body, _ = st.call(bob, "GET", "/api/v1/audit", nil)
			var audit struct {
				Items []struct{ Action, Resource string }
			}
			if err := json.Unmarshal(body, &audit); code != 200 || err != nil {
				t.Fatalf("audit: %d %s", code, body)
			}
			var got []string
			for _, e := range audit.Items {
				got = append(got, e.Action+" "+e.Resource)
			}
			if want := []string{"member.role user/" + leadID, "member.role user/" + bobID}; !slices.Equal(got, want) {
				t.Fatalf("audit %v, want %v", got, want)
			}
		})
	}
}

// TestMemberRemovedOnEveryReplica: two serve processes on one database;
// both have just authenticated a member (and cached it); an admin removes
// the member on one, and the member's next request is 401 on both, their
// tokens revoked and the email refused a new token. On PostgreSQL the
// other replica hears of the revocation at once; SQLite runs one process
// in production, and here its second replica is only held to its cache's
// few seconds.
func TestMemberRemovedOnEveryReplica(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			vars := map[string]string{
				app.EnvSecretKey:   validKey,
				app.EnvDatabaseURL: sqlstoretest.URL(t, d),
				app.EnvDataDir:     t.TempDir(),
				app.EnvHTTPAddr:    "127.0.0.1:0",
			}
			migrateDB(t, vars)
			var id *identity.Service
			one := &stack{t: t}
			one.base = startProcess(t, app.ModeServe, vars, fx.Populate(&id))
			one.id = id
			two := &stack{t: t, id: id, base: startProcess(t, app.ModeServe, vars)}
			lead, carol := one.admin("lead@example.com"), one.token("carol@example.com")
			replicas := []*stack{one, two}
			for i, st := range replicas {
				if code, _, _ := st.call(carol, "GET", "/api/v1/me", nil); code != 200 {
					t.Fatalf("carol on replica %d before: %d", i+1, code)
				}
			}
			code, body, _ := one.call(lead, "GET", "/api/v1/members", nil)
			var members struct{ Items []struct{ ID, Email string } }
			if err := json.Unmarshal(body, &members); code != 200 || err != nil {
				t.Fatalf("members: %d %s", code, body)
			}
			var carolID string
			for _, m := range members.Items {
				if m.Email == "carol@example.com" {
					carolID = m.ID
				}
			}
			if code, body, _ := two.call(lead, "DELETE", "/api/v1/members/"+carolID, nil); code != 204 {
				t.Fatalf("remove carol on replica 2: %d %s", code, body)
			}
			deadline := time.Now().Add(time.Second) // PostgreSQL: NOTIFY reaches the other replica at once
			if d == sqlstore.DialectSQLite {
				deadline = time.Now().Add(10 * time.Second) // the cache's DEVPILOT_AUTH_CACHE_TTL (5 s)
			}
			for i, st := range replicas {
				for {
					code, _, _ := st.call(carol, "GET", "/api/v1/me", nil)
					if code == 401 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("carol on replica %d after her removal: %d, want 401", i+1, code)
					}
					time.Sleep(20 * time.Millisecond)
				}
			}
			if code, _, _ := one.call(lead, "DELETE", "/api/v1/members/"+carolID, nil); code != 404 {
				t.Fatalf("removing carol twice: %d", code)
			}
			code, body, _ = one.call(lead, "GET", "/api/v1/members", nil)
			if code != 200 || strings.Contains(string(body), "carol@") {
				t.Fatalf("members after the removal: %d %s", code, body)
			}
			if _, err := id.IssueToken(t.Context(), identity.IssueTokenInput{Email: "carol@example.com", OrgName: "acme"}); err == nil {
				t.Fatal("a removed member was issued a token")
			}
			leadID := ""
			for _, m := range members.Items {
				if m.Email == "lead@example.com" {
					leadID = m.ID
				}
			}
			if code, body, _ := one.call(lead, "DELETE", "/api/v1/members/"+leadID, nil); code != 409 || !strings.Contains(string(body), "last_admin") {
				t.Fatalf("removing the last admin: %d %s", code, body)
			}
			code, body, _ = one.call(lead, "GET", "/api/v1/audit", nil)
			if code != 200 || !strings.Contains(string(body), `"action":"member.remove"`) || !strings.Contains(string(body), `"tokens_revoked":1`) {
				t.Fatalf("audit: %d %s", code, body)
			}
		})
	}
}
