package identity_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/ports"
)

// a1 is a second admin of o1, whom newInviteEnvWithA1 stores, with an id
// of the form the members API takes.
const a1 = "01930000-0000-7000-8000-0000000000a1"

var asA1 = ports.WithPrincipal(context.Background(), ports.Principal{UserID: a1, OrgID: "o1", Role: ports.RoleAdmin})

// newInviteEnvWithA1 is newInviteEnv with a second admin, a1.
func newInviteEnvWithA1(t *testing.T) env {
	t.Helper()
	e := newInviteEnv(t)
	if err := e.store.CreateUser(context.Background(), ports.User{ID: a1, OrgID: "o1", Email: "a1@example.com", Role: ports.RoleAdmin, CreatedAt: e.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	return e
}

func inviteAs(t *testing.T, e env, ctx context.Context) identity.IssuedInvitation {
	t.Helper()
	inv, err := e.svc.Invite(ctx, identity.InviteInput{})
	if err != nil {
		t.Fatalf("Invite: %v", err)
	}
	return inv
}

// checkBadInvitation fails the test unless accepting secret is refused as
// any bad secret is, and creates no user.
func checkBadInvitation(t *testing.T, e env, what, secret string) {
	t.Helper()
	before, _, _ := e.store.ListUsers(context.Background(), "o1", ports.Page{})
	_, err := e.svc.AcceptInvitation(context.Background(), identity.AcceptInput{Secret: secret, Email: "joiner-" + what + "@example.com"})
	if pe, ok := ports.AsError(err); !ok || pe.Kind != ports.KindNotFound || pe.Code != "invalid_invitation" {
		t.Errorf("%s: accepting: %v, want not_found invalid_invitation", what, err)
	}
	if after, _, _ := e.store.ListUsers(context.Background(), "o1", ports.Page{}); len(after) != len(before) {
		t.Errorf("%s: a refused acceptance made a user: %+v", what, after)
	}
}

// lastAudit returns the arguments of the org's newest audit entry of the
// action.
func lastAudit(t *testing.T, e env, action string) map[string]any {
	t.Helper()
	entries, _, err := e.store.ListAudit(context.Background(), "o1", "", ports.Page{})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range entries {
		if a.Action == action {
			var args map[string]any
			if err := json.Unmarshal(a.Arguments, &args); err != nil {
				t.Fatal(err)
			}
			return args
		}
	}
	t.Fatalf("no %s in the audit log", action)
	return nil
}

// An admin made a member, or removed, loses their pending invitations in
// the same step; the other admins' stay.
func TestRoleLossRevokesInvitations(t *testing.T) {
	e := newInviteEnvWithA1(t)
	mine := []identity.IssuedInvitation{inviteAs(t, e, asA1), inviteAs(t, e, asA1)}
	theirs := inviteAs(t, e, asAdmin)
	if _, err := e.svc.SetMemberRole(asAdmin, a1, ports.RoleMember); err != nil {
		t.Fatalf("SetMemberRole: %v", err)
	}
	if n := lastAudit(t, e, identity.AuditMemberRole)["invitations_revoked"]; n != 2.0 {
		t.Errorf("the audited demotion says %v invitations revoked, want 2", n)
	}
	for _, inv := range mine {
		got, err := e.store.GetInvitationByHash(context.Background(), inv.Invitation.Hash)
		if err != nil || got.Status(e.clock.Now()) != ports.InvitationRevoked {
			t.Errorf("the demoted admin's invitation: %+v, %v; want revoked", got, err)
		}
		checkBadInvitation(t, e, "demoted", inv.Secret)
	}
	if _, err := e.svc.AcceptInvitation(context.Background(), identity.AcceptInput{Secret: theirs.Secret, Email: "kept@example.com"}); err != nil {
		t.Fatalf("accepting the remaining admin's invitation: %v", err)
	}

	if _, err := e.svc.SetMemberRole(asAdmin, a1, ports.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	again := inviteAs(t, e, asA1)
	e.clock.Advance(time.Minute)
	if err := e.svc.RemoveMember(asAdmin, a1); err != nil {
		t.Fatalf("RemoveMember: %v", err)
	}
	if n := lastAudit(t, e, identity.AuditMemberRemove)["invitations_revoked"]; n != 1.0 {
		t.Errorf("the audited removal says %v invitations revoked, want 1", n)
	}
	if got, _ := e.store.GetInvitationByHash(context.Background(), again.Invitation.Hash); got.RevokedAt == nil || !got.RevokedAt.Equal(e.clock.Now()) {
		t.Errorf("the removed admin's invitation: %+v, want revoked now", got)
	}
	checkBadInvitation(t, e, "removed", again.Secret)
}

// Accepting checks the inviter afresh: an invitation whose admin lost the
// role by a path that did not revoke it (one made while the role was being
// taken away) is refused like any bad secret, and accepted again once the
// inviter is an admin again.
func TestAcceptRechecksInviter(t *testing.T) {
	e := newInviteEnvWithA1(t)
	ctx := context.Background()
	demoted, removed := inviteAs(t, e, asA1), inviteAs(t, e, asA1)
	if err := e.store.SetUserRole(ctx, "o1", a1, ports.RoleMember); err != nil {
		t.Fatal(err)
	}
	checkBadInvitation(t, e, "demoted", demoted.Secret)
	if got, _ := e.store.GetInvitationByHash(ctx, demoted.Invitation.Hash); got.Status(e.clock.Now()) != ports.InvitationPending {
		t.Fatalf("a refused acceptance changed the invitation: %+v", got)
	}
	if err := e.store.SetUserRole(ctx, "o1", a1, ports.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.AcceptInvitation(ctx, identity.AcceptInput{Secret: demoted.Secret, Email: "back@example.com"}); err != nil {
		t.Fatalf("accepting once the inviter is an admin again: %v", err)
	}
	if err := e.store.RemoveUser(ctx, "o1", a1, e.clock.Now()); err != nil {
		t.Fatal(err)
	}
	checkBadInvitation(t, e, "removed", removed.Secret)
}

// The last admin can be neither made a member nor removed; the refusal
// names them and says what to do.
func TestLastAdmin(t *testing.T) {
	e := newInviteEnvWithA1(t)
	if err := e.store.SetUserRole(context.Background(), "o1", "a0", ports.RoleMember); err != nil {
		t.Fatal(err)
	}
	pending := inviteAs(t, e, asA1)
	for what, err := range map[string]error{
		"made a member": func() error { _, err := e.svc.SetMemberRole(asA1, a1, ports.RoleMember); return err }(),
		"removed":       e.svc.RemoveMember(asA1, a1),
	} {
		pe, ok := ports.AsError(err)
		if !ok || !errors.Is(err, ports.ErrConflict) || pe.Code != identity.CodeLastAdmin ||
			!strings.Contains(pe.Message, "a1@example.com is the organisation's last admin; make another member an admin first") {
			t.Errorf("the last admin %s: %v", what, err)
		}
	}
	if got, _ := e.store.GetInvitationByHash(context.Background(), pending.Invitation.Hash); got.RevokedAt != nil {
		t.Errorf("a refused demotion revoked the admin's invitation: %+v", got)
	}
	if u, _ := e.store.GetUser(context.Background(), a1); u.Role != ports.RoleAdmin || u.RemovedAt != nil {
		t.Errorf("the last admin after the refusals: %+v", u)
	}
}
