package identity_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/core/identity"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/mocks"
)

const testIssuer = "https://idp.example.com"

// newVerifiedEnv is newInviteEnv that also signs in through a mock provider
// answering each exchange with the next of who, under pol, with links.
func newVerifiedEnv(t *testing.T, pol identity.SignInPolicy, who ...ports.ExternalIdentity) env {
	t.Helper()
	idp := mocks.NewMockSignInProvider(gomock.NewController(t))
	for _, w := range who {
		idp.EXPECT().Exchange(gomock.Any(), "code", "verifier", "nonce").Return(w, nil)
	}
	idp.EXPECT().AuthURL(gomock.Any(), "state", "nonce", "verifier").Return(testIssuer+"/authorize", nil).AnyTimes()
	e := newEnvWith(t, func(d *identity.Deps) {
		d.Invitations, d.Audit, d.Random = d.Tx.(ports.InvitationStore), d.Tx.(ports.AuditStore), nil
		d.SignIn, d.SignInPolicy, d.Links = idp, pol, d.Tx.(ports.IdentityLinkStore)
	})
	if err := e.store.CreateUser(context.Background(), ports.User{ID: "a0", OrgID: "o1", Email: "admin@example.com",
		EmailVerified: true, Role: ports.RoleAdmin, CreatedAt: e.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	return e
}

func victim(sub string) ports.ExternalIdentity {
	return ports.ExternalIdentity{Issuer: testIssuer, Subject: sub, Email: "victim@corp.com", EmailVerified: true}
}

// TestInvitationCannotPlantAccount is issue 30's item 1: an admin of o1
// invites no one in particular, accepts with someone else's email, and
// keeps the token. That user is unverified, so when the address's owner
// signs in through the provider they get a user of their own, in the
// policy's org, and the planted one stays apart (and visible to o1's
// admins as unverified).
func TestInvitationCannotPlantAccount(t *testing.T) {
	t.Parallel()
	e := newVerifiedEnv(t, identity.SignInPolicy{Org: "corp", Domains: []string{"corp.com"}}, victim("sub-victim"), victim("sub-victim"))
	inv := mustInvite(t, e, identity.InviteInput{})
	planted, err := e.svc.AcceptInvitation(context.Background(), identity.AcceptInput{Secret: inv.Secret, Email: "Victim@corp.com"})
	if err != nil {
		t.Fatalf("AcceptInvitation: %v", err)
	}
	if planted.User.EmailVerified {
		t.Fatalf("the invitation's user is verified: %+v", planted.User)
	}

	in, err := e.svc.CompleteSignIn(context.Background(), "code", "verifier", "nonce")
	if err != nil {
		t.Fatalf("CompleteSignIn: %v", err)
	}
	if in.User.ID == planted.User.ID || in.Org.Name != "corp" || in.User.OrgID == "o1" || !in.User.EmailVerified {
		t.Fatalf("the victim signed in as %+v in %+v; the planted user is %+v", in.User, in.Org, planted.User)
	}
	// Signing in again finds the same user, by the provider's subject.
	again, err := e.svc.CompleteSignIn(context.Background(), "code", "verifier", "nonce")
	if err != nil || again.User.ID != in.User.ID {
		t.Fatalf("second sign-in: %+v, %v; want user %s", again.User, err, in.User.ID)
	}
	// The planted user is still o1's, unverified, and listed for its admins.
	members, _, err := e.svc.Members(asAdmin, ports.Page{})
	if err != nil {
		t.Fatal(err)
	}
	var listed *ports.User
	for i, m := range members {
		if m.ID == planted.User.ID {
			listed = &members[i]
		}
		if m.ID == in.User.ID {
			t.Errorf("the victim is listed among o1's members: %+v", m)
		}
	}
	if listed == nil || listed.EmailVerified || listed.Email != "victim@corp.com" {
		t.Fatalf("o1's members %+v; want the planted user, unverified", members)
	}
	p, err := e.svc.Authenticate(context.Background(), planted.Token)
	if err != nil || p.UserID != planted.User.ID || p.OrgID != "o1" {
		t.Fatalf("the planted token: %+v, %v", p, err)
	}
}

// TestSignInNeverReachesUnverifiedUser: without a policy that admits the
// address, the owner is refused, as any unknown user is, rather than
// signed in as the invitation's user, even one whose invitation named
// the address.
func TestSignInNeverReachesUnverifiedUser(t *testing.T) {
	t.Parallel()
	e := newVerifiedEnv(t, identity.SignInPolicy{}, victim("sub-victim"))
	inv := mustInvite(t, e, identity.InviteInput{Email: "victim@corp.com"})
	if _, err := e.svc.AcceptInvitation(context.Background(), identity.AcceptInput{Secret: inv.Secret, Email: "victim@corp.com"}); err != nil {
		t.Fatal(err)
	}
	if in, err := e.svc.CompleteSignIn(context.Background(), "code", "verifier", "nonce"); !ports.IsKind(err, ports.KindForbidden) {
		t.Fatalf("CompleteSignIn = %+v, %v; want forbidden", in.User, err)
	}
}

// TestSignInLinksBySubject: a verified user is linked to the provider's
// issuer and subject at their first sign-in and found by them from then
// on, whatever email the provider sends later; another subject with that
// user's email is refused (the address was given to someone else).
func TestSignInLinksBySubject(t *testing.T) {
	t.Parallel()
	first := ports.ExternalIdentity{Issuer: testIssuer, Subject: "sub-1", Email: "u1@example.com", EmailVerified: true}
	renamed := first
	renamed.Email = "renamed@example.com"
	other := first
	other.Subject = "sub-2"
	e := newVerifiedEnv(t, identity.SignInPolicy{Org: "acme", Domains: []string{"example.com"}}, first, renamed, other)
	in, err := e.svc.CompleteSignIn(context.Background(), "code", "verifier", "nonce")
	if err != nil || in.User.ID != "u1" {
		t.Fatalf("first sign-in: %+v, %v; want u1", in.User, err)
	}
	if u, err := e.store.GetLinkedUser(context.Background(), testIssuer, "sub-1"); err != nil || u.ID != "u1" {
		t.Fatalf("link: %+v, %v", u, err)
	}
	in, err = e.svc.CompleteSignIn(context.Background(), "code", "verifier", "nonce")
	if err != nil || in.User.ID != "u1" {
		t.Fatalf("sign-in with a new email: %+v, %v; want u1", in.User, err)
	}
	if in, err := e.svc.CompleteSignIn(context.Background(), "code", "verifier", "nonce"); !ports.IsKind(err, ports.KindForbidden) {
		t.Fatalf("another subject with u1's email: %+v, %v; want forbidden", in.User, err)
	}
}

// TestInviteEmailOfAnotherOrg is issue 30's item 8: inviting, or joining
// with, the email of another organisation's user answers as for any new
// email (an unverified user of the org is made), so that neither tells
// which addresses are users elsewhere; the org's own members still
// conflict.
func TestInviteEmailOfAnotherOrg(t *testing.T) {
	t.Parallel()
	e := newVerifiedEnv(t, identity.SignInPolicy{})
	ctx := context.Background()
	if err := errors.Join(
		e.store.CreateOrg(ctx, ports.Org{ID: "o2", Name: "other", CreatedAt: e.clock.Now()}),
		e.store.CreateUser(ctx, ports.User{ID: "x1", OrgID: "o2", Email: "elsewhere@example.net", EmailVerified: true,
			Role: ports.RoleMember, CreatedAt: e.clock.Now()})); err != nil {
		t.Fatal(err)
	}
	named, err := e.svc.Invite(asAdmin, identity.InviteInput{Email: "Elsewhere@example.net"})
	if err != nil {
		t.Fatalf("Invite with another org's user's email: %v", err)
	}
	joined, err := e.svc.AcceptInvitation(ctx, identity.AcceptInput{Secret: named.Secret, Email: "elsewhere@example.net"})
	if err != nil || joined.User.OrgID != "o1" || joined.User.ID == "x1" || joined.User.EmailVerified {
		t.Fatalf("AcceptInvitation: %+v, %v", joined.User, err)
	}
	open := mustInvite(t, e, identity.InviteInput{})
	if _, err := e.svc.AcceptInvitation(ctx, identity.AcceptInput{Secret: open.Secret, Email: "elsewhere@example.net"}); !ports.IsKind(err, ports.KindConflict) {
		t.Fatalf("joining o1 twice with one email: %v, want conflict", err)
	}
	if _, err := e.svc.Invite(asAdmin, identity.InviteInput{Email: "elsewhere@example.net"}); !ports.IsKind(err, ports.KindConflict) {
		t.Fatalf("inviting a member of o1: %v, want conflict", err)
	}
	if u, err := e.store.GetVerifiedUserByEmail(ctx, "elsewhere@example.net"); err != nil || u.ID != "x1" {
		t.Fatalf("the other org's user: %+v, %v", u, err)
	}
}

// TestEmailVerification: a user who joined through an invitation proves
// their address by signing in to the provider from their own session; the
// email is then verified, linked, and sign-in reaches them. Another
// address, an address verified by another account already, or a provider
// identity linked elsewhere are refused, and change nothing.
func TestEmailVerification(t *testing.T) {
	t.Parallel()
	ada := ports.ExternalIdentity{Issuer: testIssuer, Subject: "sub-ada", Email: "Ada@corp.com", EmailVerified: true}
	other := ports.ExternalIdentity{Issuer: testIssuer, Subject: "sub-ada", Email: "someone@corp.com", EmailVerified: true}
	e := newVerifiedEnv(t, identity.SignInPolicy{}, other, ada, ada)
	ctx := context.Background()
	inv := mustInvite(t, e, identity.InviteInput{})
	joined, err := e.svc.AcceptInvitation(ctx, identity.AcceptInput{Secret: inv.Secret, Email: "ada@corp.com"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := e.svc.Authenticate(ctx, joined.Token)
	if err != nil {
		t.Fatal(err)
	}
	to, userID, err := e.svc.VerifyEmailURL(ports.WithPrincipal(ctx, p), "state", "nonce", "verifier")
	if err != nil || userID != joined.User.ID || to == "" {
		t.Fatalf("VerifyEmailURL = %q, %q, %v", to, userID, err)
	}
	if _, _, err := e.svc.VerifyEmailURL(ctx, "state", "nonce", "verifier"); !ports.IsKind(err, ports.KindUnauthenticated) {
		t.Fatalf("VerifyEmailURL without a principal: %v", err)
	}
	// The provider signs in another address: refused.
	if _, err := e.svc.CompleteEmailVerification(ctx, "code", "verifier", "nonce", userID); !ports.IsKind(err, ports.KindForbidden) {
		t.Fatalf("verifying with another address: %v, want forbidden", err)
	}
	if u, _ := e.store.GetUser(ctx, userID); u.EmailVerified {
		t.Fatalf("a refused verification verified %+v", u)
	}
	in, err := e.svc.CompleteEmailVerification(ctx, "code", "verifier", "nonce", userID)
	if err != nil || in.User.ID != userID || !in.User.EmailVerified || in.Org.ID != "o1" || !in.Session.IsSession() {
		t.Fatalf("CompleteEmailVerification = %+v, %v", in, err)
	}
	if u, err := e.store.GetVerifiedUserByEmail(ctx, "ada@corp.com"); err != nil || u.ID != userID {
		t.Fatalf("verified user: %+v, %v", u, err)
	}
	// Sign-in now reaches them.
	again, err := e.svc.CompleteSignIn(ctx, "code", "verifier", "nonce")
	if err != nil || again.User.ID != userID {
		t.Fatalf("sign-in after verifying: %+v, %v", again.User, err)
	}
	if got := auditActions(t, e); !slices.Contains(got, identity.AuditVerifyEmail+" user/"+userID+" by "+userID) {
		t.Fatalf("audit %v", got)
	}
}

// TestEmailVerificationRefusedForTakenAddress: an invitation's user cannot
// take an address another account has verified, nor be linked to a
// provider identity that signs in elsewhere.
func TestEmailVerificationRefusedForTakenAddress(t *testing.T) {
	t.Parallel()
	e := newVerifiedEnv(t, identity.SignInPolicy{Org: "corp", Domains: []string{"corp.com"}}, victim("sub-victim"), victim("sub-victim"))
	ctx := context.Background()
	inv := mustInvite(t, e, identity.InviteInput{})
	planted, err := e.svc.AcceptInvitation(ctx, identity.AcceptInput{Secret: inv.Secret, Email: "victim@corp.com"})
	if err != nil {
		t.Fatal(err)
	}
	owner, err := e.svc.CompleteSignIn(ctx, "code", "verifier", "nonce")
	if err != nil || owner.User.ID == planted.User.ID {
		t.Fatalf("the owner's sign-in: %+v, %v", owner.User, err)
	}
	// Even with the owner's provider identity (say, tricked into it), the
	// planted user is not verified: the identity is the owner's account's.
	if _, err := e.svc.CompleteEmailVerification(ctx, "code", "verifier", "nonce", planted.User.ID); !ports.IsKind(err, ports.KindForbidden) {
		t.Fatalf("verifying the planted user: %v, want forbidden", err)
	}
	if u, _ := e.store.GetUser(ctx, planted.User.ID); u.EmailVerified {
		t.Fatalf("the planted user was verified: %+v", u)
	}
}
