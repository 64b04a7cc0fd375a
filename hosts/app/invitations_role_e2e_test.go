package app_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/ports"
)

// TestInvitationsDieWithInviterRole: an admin's pending invitations are
// revoked when another admin makes them a member, and when another admin
// removes them; accepting one is then refused like any bad secret. On both
// databases.
func TestInvitationsDieWithInviterRole(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			st := startStack(t, string(d))
			lead := st.admin("lead@example.com")
			ana, err := st.id.IssueToken(t.Context(), identity.IssueTokenInput{Email: "ana@example.com", OrgName: "acme", Role: ports.RoleAdmin})
			if err != nil {
				t.Fatal(err)
			}
			refused := func(what string, inv createdInvitation) {
				t.Helper()
				code, _, raw := st.accept(map[string]any{"secret": inv.Secret, "email": "joiner-" + inv.Invitation.ID + "@example.com"})
				if code != 404 || !strings.Contains(string(raw), `"code":"invalid_invitation"`) {
					t.Errorf("accepting %s: %d %s, want 404 invalid_invitation", what, code, raw)
				}
			}
			statuses := func() map[string]string {
				t.Helper()
				code, raw, _ := st.call(lead, "GET", "/api/v1/invitations", nil)
				var page struct{ Items []invitationView }
				if err := json.Unmarshal(raw, &page); code != 200 || err != nil {
					t.Fatalf("list invitations: %d %s", code, raw)
				}
				out := map[string]string{}
				for _, inv := range page.Items {
					out[inv.ID] = inv.Status
				}
				return out
			}

			open := st.invite(ana.Token, map[string]any{})
			named := st.invite(ana.Token, map[string]any{"email": "carl@example.com"})
			kept := st.invite(lead, map[string]any{})
			if code, raw, _ := st.call(lead, "PATCH", "/api/v1/members/"+ana.User.ID, map[string]string{"role": "member"}); code != 200 {
				t.Fatalf("demote ana: %d %s", code, raw)
			}
			got := statuses()
			if got[open.Invitation.ID] != "revoked" || got[named.Invitation.ID] != "revoked" || got[kept.Invitation.ID] != "pending" {
				t.Fatalf("statuses after ana's demotion: %v", got)
			}
			refused("the demoted admin's open invitation", open)
			refused("the demoted admin's invitation for carl", named)

			if code, raw, _ := st.call(lead, "PATCH", "/api/v1/members/"+ana.User.ID, map[string]string{"role": "admin"}); code != 200 {
				t.Fatalf("promote ana again: %d %s", code, raw)
			}
			again := st.invite(ana.Token, map[string]any{})
			if code, raw, _ := st.call(lead, "DELETE", "/api/v1/members/"+ana.User.ID, nil); code != 204 {
				t.Fatalf("remove ana: %d %s", code, raw)
			}
			if got := statuses(); got[again.Invitation.ID] != "revoked" || got[kept.Invitation.ID] != "pending" {
				t.Fatalf("statuses after ana's removal: %v", got)
			}
			refused("the removed admin's invitation", again)
			if code, _, raw := st.accept(map[string]any{"secret": kept.Secret, "email": "kept@example.com"}); code != 201 {
				t.Fatalf("accepting the remaining admin's invitation: %d %s", code, raw)
			}
		})
	}
}
