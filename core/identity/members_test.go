package identity_test

import (
	"context"
	"errors"
	"strings"
	"testing"

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
