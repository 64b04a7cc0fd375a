package app_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
)

type tokenView struct {
	ID, Name, Prefix, Status, Token string
	ExpiresAt                       *string `json:"expires_at"`
}

// TestOwnTokens: a user creates named, expiring tokens over HTTP, lists
// them without their secrets, and revokes one, which stops working at once;
// nobody touches another's tokens; each action is in the organisation's
// audit log, which only admins read. On both databases.
func TestOwnTokens(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startStack(t, string(d))
			alice, bob, admin := st.token("alice@example.com"), st.token("bob@example.com"), st.admin("lead@example.com")

			for _, bad := range []struct {
				body any
				want int
			}{
				{map[string]any{"name": "ci"}, 400}, // a required field missing
				{map[string]any{"name": "", "expires_in_days": 30}, 422},
				{map[string]any{"name": "ci\x00", "expires_in_days": 30}, 422},
				{map[string]any{"name": strings.Repeat("n", 101), "expires_in_days": 30}, 422},
				{map[string]any{"name": "ci", "expires_in_days": 0}, 422},
				{map[string]any{"name": "ci", "expires_in_days": 367}, 422},
				{map[string]any{"name": "ci", "expires_in_days": "30"}, 422},
				{map[string]any{"name": "ci", "expires_in_days": 30, "scope": "admin"}, 422},
			} {
				if code, body, _ := st.call(alice, "POST", "/api/v1/tokens", bad.body); code != bad.want {
					t.Errorf("POST %v: %d %s, want %d", bad.body, code, body, bad.want)
				}
			}

			code, body, _ := st.call(alice, "POST", "/api/v1/tokens", map[string]any{"name": "CI deploys", "expires_in_days": 30})
			var made tokenView
			if err := json.Unmarshal(body, &made); code != 201 || err != nil || !strings.HasPrefix(made.Token, "dp_") ||
				made.Status != "active" || made.ExpiresAt == nil || !strings.HasPrefix(made.Token, made.Prefix) {
				t.Fatalf("create: %d %s", code, body)
			}
			if code, body, _ := st.call(made.Token, "GET", "/api/v1/me", nil); code != 200 || !strings.Contains(string(body), "alice@example.com") {
				t.Fatalf("the new token: %d %s", code, body)
			}
			code, body, _ = st.call(alice, "GET", "/api/v1/tokens", nil)
			if code != 200 || !strings.Contains(string(body), made.ID) || strings.Contains(string(body), made.Token) {
				t.Fatalf("list: %d %s", code, body)
			}
			if code, body, _ := st.call(bob, "GET", "/api/v1/tokens", nil); code != 200 || strings.Contains(string(body), made.ID) {
				t.Fatalf("bob's list: %d %s", code, body)
			}
			if code, _, _ := st.call(bob, "DELETE", "/api/v1/tokens/"+made.ID, nil); code != 404 {
				t.Fatalf("bob revoking alice's token: %d", code)
			}
			if code, _, _ := st.call(alice, "DELETE", "/api/v1/tokens/not-a-token", nil); code != 404 {
				t.Fatalf("revoking no token: %d", code)
			}
			if code, body, _ := st.call(alice, "DELETE", "/api/v1/tokens/"+made.ID, nil); code != 204 {
				t.Fatalf("revoke: %d %s", code, body)
			}
			if code, _, _ := st.call(made.Token, "GET", "/api/v1/me", nil); code != 401 {
				t.Fatalf("the revoked token: %d, want 401", code)
			}
			if code, _, _ := st.call(alice, "DELETE", "/api/v1/tokens/"+made.ID, nil); code != 409 {
				t.Fatalf("revoking twice: %d, want 409", code)
			}
			if code, body, _ := st.call(alice, "GET", "/api/v1/tokens", nil); code != 200 || !strings.Contains(string(body), `"status":"revoked"`) {
				t.Fatalf("list after revoking: %d %s", code, body)
			}

			if code, _, _ := st.call(alice, "GET", "/api/v1/audit", nil); code != 403 {
				t.Fatalf("a member reading the audit log: %d", code)
			}
			code, body, _ = st.call(admin, "GET", "/api/v1/audit?limit=10", nil)
			var audit struct {
				Items []struct{ Action, Resource, UserID string }
			}
			if err := json.Unmarshal(body, &audit); code != 200 || err != nil || len(audit.Items) != 2 ||
				audit.Items[0].Action != "token.revoke" || audit.Items[1].Action != "token.create" || audit.Items[0].Resource != "token/"+made.ID {
				t.Fatalf("audit: %d %s", code, body)
			}
		})
	}
}
