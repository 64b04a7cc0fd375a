package identity_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/ports"
)

// newInviteEnv is newEnv with invitations and an audit log, random secrets,
// and an admin, a0, of org o1 besides its member u1.
func newInviteEnv(t *testing.T) env {
	t.Helper()
	e := newEnvWith(t, func(d *identity.Deps) {
		d.Invitations, d.Audit, d.Random = d.Tx.(ports.InvitationStore), d.Tx.(ports.AuditStore), nil
	})
	if err := e.store.CreateUser(context.Background(), ports.User{ID: "a0", OrgID: "o1", Email: "admin@example.com", Role: ports.RoleAdmin, CreatedAt: e.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	return e
}

var (
	asAdmin  = ports.WithPrincipal(context.Background(), ports.Principal{UserID: "a0", OrgID: "o1", Role: ports.RoleAdmin})
	asMember = ports.WithPrincipal(context.Background(), ports.Principal{UserID: "u1", OrgID: "o1", Role: ports.RoleMember})
)

func mustInvite(t *testing.T, e env, in identity.InviteInput) identity.IssuedInvitation {
	t.Helper()
	inv, err := e.svc.Invite(asAdmin, in)
	if err != nil {
		t.Fatalf("Invite(%+v): %v", in, err)
	}
	return inv
}

// auditActions returns the org's audit log as "action resource by user",
// oldest first.
func auditActions(t *testing.T, e env) []string {
	t.Helper()
	entries, _, err := e.store.ListAudit(context.Background(), "o1", "", ports.Page{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := len(entries) - 1; i >= 0; i-- {
		out = append(out, fmt.Sprintf("%s %s by %s", entries[i].Action, entries[i].Resource, entries[i].UserID))
	}
	return out
}

func TestInviteAndAccept(t *testing.T) {
	e := newInviteEnv(t)
	issued := mustInvite(t, e, identity.InviteInput{Email: " New@Example.com ", Role: ports.RoleAdmin})
	inv := issued.Invitation
	hash := sha256.Sum256([]byte(issued.Secret))
	switch {
	case !strings.HasPrefix(issued.Secret, identity.InvitationPrefix) || len(issued.Secret) != len(identity.InvitationPrefix)+43:
		t.Fatalf("secret %q", issued.Secret)
	case inv.Email != "new@example.com" || inv.Role != ports.RoleAdmin || inv.OrgID != "o1" || inv.CreatedBy != "a0":
		t.Fatalf("invitation %+v", inv)
	case !inv.ExpiresAt.Equal(e.clock.Now().Add(identity.DefaultInvitationTTL)):
		t.Fatalf("expires at %v, want the default 7 days", inv.ExpiresAt)
	case !strings.HasPrefix(issued.Secret, inv.Prefix) || string(inv.Hash) != string(hash[:]):
		t.Fatalf("prefix %q, hash %x", inv.Prefix, inv.Hash)
	}
	stored, err := e.store.GetInvitationByHash(context.Background(), hash[:])
	if err != nil || stored.ID != inv.ID {
		t.Fatalf("stored: %+v %v", stored, err)
	}

	e.clock.Advance(time.Hour)
	joined, err := e.svc.AcceptInvitation(context.Background(), identity.AcceptInput{Secret: issued.Secret, Email: "NEW@example.com", TokenName: "laptop"})
	if err != nil {
		t.Fatalf("AcceptInvitation: %v", err)
	}
	if joined.User.Email != "new@example.com" || joined.User.OrgID != "o1" || joined.User.Role != ports.RoleAdmin ||
		joined.Org.Name != "acme" || joined.Record.Name != "laptop" || joined.Record.ExpiresAt == nil {
		t.Fatalf("joined: %+v", joined)
	}
	p, err := e.svc.Authenticate(context.Background(), joined.Token)
	if err != nil || p.UserID != joined.User.ID || p.OrgID != "o1" || p.Role != ports.RoleAdmin {
		t.Fatalf("the new user's token: %+v %v", p, err)
	}
	list, _, err := e.svc.ListInvitations(asAdmin, ports.Page{})
	if err != nil || len(list) != 1 || list[0].Status(e.clock.Now()) != ports.InvitationAccepted || list[0].AcceptedBy != joined.User.ID {
		t.Fatalf("listed after accepting: %+v %v", list, err)
	}

	_, err = e.svc.AcceptInvitation(context.Background(), identity.AcceptInput{Secret: issued.Secret, Email: "new@example.com"})
	if e, ok := ports.AsError(err); !ok || e.Kind != ports.KindNotFound || e.Code != "invalid_invitation" {
		t.Fatalf("accepting again: %v", err)
	}
	want := []string{"invitation.create invitation/" + inv.ID + " by a0", "invitation.accept invitation/" + inv.ID + " by " + joined.User.ID}
	if got := auditActions(t, e); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("audit %v, want %v", got, want)
	}
}

func TestInviteRefusals(t *testing.T) {
	e := newInviteEnv(t)
	for name, tc := range map[string]struct {
		ctx   context.Context
		in    identity.InviteInput
		kind  ports.Kind
		field string
	}{
		"no principal":    {context.Background(), identity.InviteInput{}, ports.KindUnauthenticated, ""},
		"a member":        {asMember, identity.InviteInput{}, ports.KindForbidden, ""},
		"a bad email":     {asAdmin, identity.InviteInput{Email: "not an email"}, ports.KindInvalid, "email"},
		"NUL in email":    {asAdmin, identity.InviteInput{Email: "a\x00@example.com"}, ports.KindInvalid, "email"},
		"bad UTF-8":       {asAdmin, identity.InviteInput{Email: "a\xff@example.com"}, ports.KindInvalid, "email"},
		"a bad role":      {asAdmin, identity.InviteInput{Role: "owner"}, ports.KindInvalid, "role"},
		"too long":        {asAdmin, identity.InviteInput{TTL: identity.MaxInvitationTTL + time.Second}, ports.KindInvalid, "expires_in"},
		"too short":       {asAdmin, identity.InviteInput{TTL: time.Minute}, ports.KindInvalid, "expires_in"},
		"a user's email":  {asAdmin, identity.InviteInput{Email: "U1@example.com"}, ports.KindConflict, ""},
		"an admin's mail": {asAdmin, identity.InviteInput{Email: "admin@example.com"}, ports.KindConflict, ""},
	} {
		_, err := e.svc.Invite(tc.ctx, tc.in)
		pe, ok := ports.AsError(err)
		if !ok || pe.Kind != tc.kind || (tc.field != "" && (len(pe.Fields) != 1 || pe.Fields[0].Field != tc.field)) {
			t.Errorf("%s: %v (%+v), want %s %s", name, err, pe, tc.kind, tc.field)
		}
	}
	if _, _, err := e.svc.ListInvitations(asMember, ports.Page{}); !errors.Is(err, ports.ErrForbidden) {
		t.Errorf("a member listing invitations: %v", err)
	}
	if list, _, _ := e.svc.ListInvitations(asAdmin, ports.Page{}); len(list) != 0 {
		t.Errorf("refused invitations were stored: %+v", list)
	}
	issued := mustInvite(t, e, identity.InviteInput{TTL: identity.MaxInvitationTTL})
	if !issued.Invitation.ExpiresAt.Equal(e.clock.Now().Add(30 * 24 * time.Hour)) {
		t.Errorf("a 30-day invitation expires at %v", issued.Invitation.ExpiresAt)
	}
	if err := e.svc.RevokeInvitation(asMember, issued.Invitation.ID); !errors.Is(err, ports.ErrForbidden) {
		t.Errorf("a member revoking: %v", err)
	}
}

// TestAcceptRefusesBadSecrets: a malformed, unknown, expired (from the
// very instant it expires), accepted or revoked secret is refused with
// one and the same error.
func TestAcceptRefusesBadSecrets(t *testing.T) {
	e := newInviteEnv(t)
	expiring := mustInvite(t, e, identity.InviteInput{TTL: time.Hour})
	revoked := mustInvite(t, e, identity.InviteInput{})
	if err := e.svc.RevokeInvitation(asAdmin, revoked.Invitation.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.RevokeInvitation(asAdmin, revoked.Invitation.ID); !errors.Is(err, ports.ErrConflict) {
		t.Fatalf("revoking twice: %v", err)
	}
	if err := e.svc.RevokeInvitation(asAdmin, "not-an-id"); !errors.Is(err, ports.ErrNotFound) {
		t.Fatalf("revoking a bad id: %v", err)
	}
	used := mustInvite(t, e, identity.InviteInput{})
	if _, err := e.svc.AcceptInvitation(context.Background(), identity.AcceptInput{Secret: used.Secret, Email: "first@example.com"}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Hour) // the instant expiring expires

	unknown := identity.InvitationPrefix + strings.Repeat("A", 43)
	var first *ports.Error
	for name, secret := range map[string]string{
		"malformed": "dpi_short", "an API token's form": "dp_" + strings.Repeat("A", 43), "unknown": unknown,
		"expired": expiring.Secret, "revoked": revoked.Secret, "used": used.Secret, "empty": "",
	} {
		_, err := e.svc.AcceptInvitation(context.Background(), identity.AcceptInput{Secret: secret, Email: "x-" + strings.ReplaceAll(name, " ", "") + "@example.com"})
		pe, ok := ports.AsError(err)
		if !ok || pe.Kind != ports.KindNotFound {
			t.Errorf("%s: %v, want not_found", name, err)
			continue
		}
		if first == nil {
			first = pe
		} else if pe.Message != first.Message || pe.Code != first.Code {
			t.Errorf("%s: %q (%s), unlike %q (%s)", name, pe.Message, pe.Code, first.Message, first.Code)
		}
	}
	users, _, _ := e.store.ListUsers(context.Background(), "o1", ports.Page{})
	if len(users) != 3 { // a0, u1, first
		t.Errorf("users after refusals: %+v", users)
	}
}

func TestAcceptChecksEmailAndInput(t *testing.T) {
	e := newInviteEnv(t)
	named := mustInvite(t, e, identity.InviteInput{Email: "ana@example.com"})
	open := mustInvite(t, e, identity.InviteInput{})
	for name, tc := range map[string]struct {
		in    identity.AcceptInput
		kind  ports.Kind
		field string
	}{
		"another email":      {identity.AcceptInput{Secret: named.Secret, Email: "eve@example.com"}, ports.KindInvalid, "email"},
		"no email (named)":   {identity.AcceptInput{Secret: named.Secret}, ports.KindInvalid, "email"},
		"no email (open)":    {identity.AcceptInput{Secret: open.Secret}, ports.KindInvalid, "email"},
		"a user's email":     {identity.AcceptInput{Secret: open.Secret, Email: "u1@EXAMPLE.com"}, ports.KindConflict, ""},
		"NUL in the email":   {identity.AcceptInput{Secret: open.Secret, Email: "b\x00b@example.com"}, ports.KindInvalid, "email"},
		"control characters": {identity.AcceptInput{Secret: open.Secret, Email: "bob@example.com", TokenName: "a\x1bb"}, ports.KindInvalid, "token_name"},
		"a long token name":  {identity.AcceptInput{Secret: open.Secret, Email: "bob@example.com", TokenName: strings.Repeat("n", 101)}, ports.KindInvalid, "token_name"},
	} {
		_, err := e.svc.AcceptInvitation(context.Background(), tc.in)
		pe, ok := ports.AsError(err)
		if !ok || pe.Kind != tc.kind || (tc.field != "" && (len(pe.Fields) != 1 || pe.Fields[0].Field != tc.field)) {
			t.Errorf("%s: %v, want %s %s", name, err, tc.kind, tc.field)
		}
	}
	// Refusals used nothing up.
	joined, err := e.svc.AcceptInvitation(context.Background(), identity.AcceptInput{Secret: named.Secret, Email: "Ana@Example.com"})
	if err != nil || joined.User.Email != "ana@example.com" || joined.User.Role != ports.RoleMember || joined.Record.Name != identity.DefaultJoinTokenName {
		t.Fatalf("ana joins: %+v %v", joined, err)
	}
	if _, err := e.svc.AcceptInvitation(context.Background(), identity.AcceptInput{Secret: open.Secret, Email: "bob@example.com"}); err != nil {
		t.Fatalf("bob joins: %v", err)
	}
}

// TestAcceptRace: of concurrent acceptances of one invitation, exactly one
// makes a user; the others are refused.
func TestAcceptRace(t *testing.T) {
	e := newInviteEnv(t)
	open := mustInvite(t, e, identity.InviteInput{})
	const n = 8
	errs := make([]error, n)
	start := make(chan struct{})
	done := make(chan int)
	for i := range n {
		go func() {
			<-start
			_, errs[i] = e.svc.AcceptInvitation(context.Background(), identity.AcceptInput{Secret: open.Secret, Email: fmt.Sprintf("racer%d@example.com", i)})
			done <- i
		}()
	}
	close(start)
	for range n {
		<-done
	}
	wins := 0
	for i, err := range errs {
		switch {
		case err == nil:
			wins++
		case !errors.Is(err, ports.ErrNotFound) && !errors.Is(err, ports.ErrConflict):
			t.Errorf("racer %d: %v", i, err)
		}
	}
	users, _, _ := e.store.ListUsers(context.Background(), "o1", ports.Page{})
	if wins != 1 || len(users) != 3 {
		t.Fatalf("%d won, users %+v", wins, users)
	}
}
