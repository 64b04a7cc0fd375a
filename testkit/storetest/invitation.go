package storetest

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// invitationStores are the invitation store under test and the identity
// stores (and Transactor) it shares a database with.
type invitationStores struct {
	Invitations ports.InvitationStore
	Identity    identityStores
}

// TestInvitations runs the contract of ports.InvitationStore. newStores is
// called by every subtest (subtests run in parallel) and may return stores
// over a shared database; each subtest uses organisations of its own.
func TestInvitations(t *testing.T, newStores Factory) {
	runSuite(t, view(newStores, Stores.invitation, needInvitation), []suiteCase[invitationStores]{
		{"RoundTrip", testInvitationRoundTrip},
		{"Conflicts", testInvitationConflicts},
		{"List", testListInvitations},
		{"Revoke", testRevokeInvitation},
		{"RevokeBy", testRevokeInvitationsBy},
		{"Accept", testAcceptInvitation},
		{"AcceptAtExpiry", testAcceptInvitationAtExpiry},
		{"AcceptRollsBack", testAcceptInvitationRollsBack},
		{"RaceAccept", testRaceAcceptInvitation},
	})
}

// invAt is the suites' invitation time: microseconds, what the databases
// keep, so that an instant compares exactly.
var invAt = base.Truncate(time.Microsecond)

func newInvitation(orgID, createdBy string) ports.Invitation {
	id := newID()
	return ports.Invitation{
		ID: id, OrgID: orgID, Email: "Invitee-" + id + "@Example.com", Role: ports.RoleMember,
		Hash: []byte("sha256-" + id), Prefix: "dpi_" + id[:6], CreatedBy: createdBy,
		CreatedAt: invAt, ExpiresAt: invAt.Add(7 * 24 * time.Hour),
	}
}

func mustCreateInvitation(t *testing.T, s invitationStores, inv ports.Invitation) ports.Invitation {
	t.Helper()
	if err := s.Invitations.CreateInvitation(t.Context(), inv); err != nil {
		t.Fatalf("CreateInvitation: %v", err)
	}
	return inv
}

func mustGetInvitation(t *testing.T, s invitationStores, hash []byte) ports.Invitation {
	t.Helper()
	inv, err := s.Invitations.GetInvitationByHash(t.Context(), hash)
	if err != nil {
		t.Fatalf("GetInvitationByHash: %v", err)
	}
	return inv
}

func normInvitation(inv ports.Invitation) ports.Invitation {
	inv.CreatedAt, inv.ExpiresAt = ms(inv.CreatedAt), ms(inv.ExpiresAt)
	inv.AcceptedAt, inv.RevokedAt = msPtr(inv.AcceptedAt), msPtr(inv.RevokedAt)
	inv.Email = strings.ToLower(inv.Email)
	return inv
}

func checkInvitation(t *testing.T, what string, got, want ports.Invitation) {
	t.Helper()
	checkUTC(t, what, &got.CreatedAt, &got.ExpiresAt, got.AcceptedAt, got.RevokedAt)
	checkEqual(t, what, normInvitation(got), normInvitation(want))
}

// seedInviter stores a fresh org and an admin of it, who invites.
func seedInviter(t *testing.T, s invitationStores) ports.Owner {
	t.Helper()
	return seedOwner(t, s.Identity)
}

func testInvitationRoundTrip(t *testing.T, s invitationStores) {
	o := seedInviter(t, s)
	inv := mustCreateInvitation(t, s, newInvitation(o.OrgID, o.UserID))
	got := mustGetInvitation(t, s, inv.Hash)
	if got.Email != strings.ToLower(inv.Email) {
		t.Errorf("email stored as %q, want it lower-cased", got.Email)
	}
	checkInvitation(t, "GetInvitationByHash", got, inv)

	anyone := newInvitation(o.OrgID, o.UserID)
	anyone.Email, anyone.Role = "", ports.RoleAdmin
	mustCreateInvitation(t, s, anyone)
	checkInvitation(t, "an invitation for anyone", mustGetInvitation(t, s, anyone.Hash), anyone)

	_, err := s.Invitations.GetInvitationByHash(t.Context(), []byte("no such hash "+newID()))
	checkErr(t, "GetInvitationByHash of no invitation", err, ports.ErrNotFound)
}

func testInvitationConflicts(t *testing.T, s invitationStores) {
	o := seedInviter(t, s)
	inv := mustCreateInvitation(t, s, newInvitation(o.OrgID, o.UserID))
	sameID := newInvitation(o.OrgID, o.UserID)
	sameID.ID = inv.ID
	checkErr(t, "CreateInvitation with a taken id", s.Invitations.CreateInvitation(t.Context(), sameID), ports.ErrConflict)
	sameHash := newInvitation(o.OrgID, o.UserID)
	sameHash.Hash = inv.Hash
	checkErr(t, "CreateInvitation with a taken hash", s.Invitations.CreateInvitation(t.Context(), sameHash), ports.ErrConflict)
	checkErr(t, "CreateInvitation in a missing org", s.Invitations.CreateInvitation(t.Context(), newInvitation(newID(), o.UserID)), ports.ErrNotFound)
}

func testListInvitations(t *testing.T, s invitationStores) {
	ctx := t.Context()
	o := seedInviter(t, s)
	other := seedInviter(t, s)
	mustCreateInvitation(t, s, newInvitation(other.OrgID, other.UserID))
	var made []ports.Invitation
	for i := range 5 {
		inv := newInvitation(o.OrgID, o.UserID)
		inv.CreatedAt = invAt.Add(time.Duration(min(i, 3)) * time.Minute) // the last two at one instant
		made = append(made, mustCreateInvitation(t, s, inv))
	}
	slices.SortFunc(made, func(a, b ports.Invitation) int { // newest first, then by id descending
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), cmp.Compare(b.ID, a.ID))
	})
	var expected []string
	for _, inv := range made {
		expected = append(expected, inv.ID)
	}

	var got []string
	page := ports.Page{Limit: 2}
	for pages := 0; ; pages++ {
		items, next, err := s.Invitations.ListInvitations(ctx, o.OrgID, page)
		if err != nil {
			t.Fatalf("ListInvitations: %v", err)
		}
		for _, inv := range items {
			checkUTC(t, "a listed invitation", &inv.CreatedAt, &inv.ExpiresAt)
			got = append(got, inv.ID)
		}
		if next == "" {
			break
		}
		if pages > 5 {
			t.Fatal("ListInvitations does not end")
		}
		page.Cursor = next
	}
	checkEqual(t, "ListInvitations, newest first over pages of 2", got, expected)

	_, _, err := s.Invitations.ListInvitations(ctx, o.OrgID, ports.Page{Cursor: "not a cursor"})
	checkErr(t, "ListInvitations with a bad cursor", err, ports.ErrInvalid)
	items, next, err := s.Invitations.ListInvitations(ctx, newID(), ports.Page{})
	if err != nil || len(items) != 0 || next != "" {
		t.Fatalf("ListInvitations of an org without any: %v %q %v", items, next, err)
	}
}

func testRevokeInvitation(t *testing.T, s invitationStores) {
	ctx := t.Context()
	o := seedInviter(t, s)
	inv := mustCreateInvitation(t, s, newInvitation(o.OrgID, o.UserID))
	at := invAt.Add(time.Hour)
	checkErr(t, "RevokeInvitation of another org's", s.Invitations.RevokeInvitation(ctx, newID(), inv.ID, at), ports.ErrNotFound)
	checkErr(t, "RevokeInvitation of none", s.Invitations.RevokeInvitation(ctx, o.OrgID, newID(), at), ports.ErrNotFound)
	if err := s.Invitations.RevokeInvitation(ctx, o.OrgID, inv.ID, at); err != nil {
		t.Fatalf("RevokeInvitation: %v", err)
	}
	got := mustGetInvitation(t, s, inv.Hash)
	if got.RevokedAt == nil || !got.RevokedAt.Equal(at) || got.Status(at) != ports.InvitationRevoked {
		t.Fatalf("revoked invitation: %+v", got)
	}
	checkErr(t, "RevokeInvitation twice", s.Invitations.RevokeInvitation(ctx, o.OrgID, inv.ID, at), ports.ErrConflict)
	_, err := s.Invitations.AcceptInvitation(ctx, inv.Hash, at, newID())
	checkErr(t, "AcceptInvitation of a revoked one", err, ports.ErrConflict)

	accepted := mustCreateInvitation(t, s, newInvitation(o.OrgID, o.UserID))
	if _, err := s.Invitations.AcceptInvitation(ctx, accepted.Hash, at, newID()); err != nil {
		t.Fatal(err)
	}
	checkErr(t, "RevokeInvitation of an accepted one", s.Invitations.RevokeInvitation(ctx, o.OrgID, accepted.ID, at), ports.ErrConflict)
	if got := mustGetInvitation(t, s, accepted.Hash); got.RevokedAt != nil {
		t.Fatalf("a refused revocation revoked: %+v", got)
	}
}

// testRevokeInvitationsBy revokes the pending invitations of one inviter
// of one org, and no other.
func testRevokeInvitationsBy(t *testing.T, s invitationStores) {
	ctx := t.Context()
	o := seedInviter(t, s)
	colleague := seedColleague(t, s.Identity, o.OrgID)
	at := invAt.Add(time.Hour)
	pending := []ports.Invitation{
		mustCreateInvitation(t, s, newInvitation(o.OrgID, o.UserID)),
		mustCreateInvitation(t, s, newInvitation(o.OrgID, o.UserID)),
	}
	accepted := mustCreateInvitation(t, s, newInvitation(o.OrgID, o.UserID))
	if _, err := s.Invitations.AcceptInvitation(ctx, accepted.Hash, invAt, newID()); err != nil {
		t.Fatal(err)
	}
	revoked := mustCreateInvitation(t, s, newInvitation(o.OrgID, o.UserID))
	if err := s.Invitations.RevokeInvitation(ctx, o.OrgID, revoked.ID, invAt); err != nil {
		t.Fatal(err)
	}
	expiredInv := newInvitation(o.OrgID, o.UserID)
	expiredInv.ExpiresAt = at
	expired := mustCreateInvitation(t, s, expiredInv)
	theirs := mustCreateInvitation(t, s, newInvitation(colleague.OrgID, colleague.UserID))

	if n, err := s.Invitations.RevokeInvitationsBy(ctx, newID(), o.UserID, at); err != nil || n != 0 {
		t.Errorf("RevokeInvitationsBy in another org = %d, %v; want 0", n, err)
	}
	if n, err := s.Invitations.RevokeInvitationsBy(ctx, o.OrgID, o.UserID, at); err != nil || n != len(pending) {
		t.Fatalf("RevokeInvitationsBy = %d, %v; want %d", n, err, len(pending))
	}
	for _, inv := range pending {
		if got := mustGetInvitation(t, s, inv.Hash); got.RevokedAt == nil || !got.RevokedAt.Equal(at) {
			t.Errorf("a pending invitation after RevokeInvitationsBy: %+v", got)
		}
	}
	for what, want := range map[string]ports.Invitation{"accepted": accepted, "expired": expired, "another inviter's": theirs} {
		got := mustGetInvitation(t, s, want.Hash)
		if got.RevokedAt != nil {
			t.Errorf("the %s invitation after RevokeInvitationsBy: %+v", what, got)
		}
	}
	if got := mustGetInvitation(t, s, revoked.Hash); got.RevokedAt == nil || !got.RevokedAt.Equal(invAt) {
		t.Errorf("the invitation revoked before, after RevokeInvitationsBy: %+v", got)
	}
	if n, err := s.Invitations.RevokeInvitationsBy(ctx, o.OrgID, o.UserID, at); err != nil || n != 0 {
		t.Errorf("RevokeInvitationsBy again = %d, %v; want 0", n, err)
	}
}

func testAcceptInvitation(t *testing.T, s invitationStores) {
	ctx := t.Context()
	o := seedInviter(t, s)
	inv := mustCreateInvitation(t, s, newInvitation(o.OrgID, o.UserID))
	_, err := s.Invitations.AcceptInvitation(ctx, []byte("no such hash "+newID()), invAt, newID())
	checkErr(t, "AcceptInvitation of none", err, ports.ErrNotFound)

	at, by := invAt.Add(time.Hour), newID()
	got, err := s.Invitations.AcceptInvitation(ctx, inv.Hash, at, by)
	if err != nil {
		t.Fatalf("AcceptInvitation: %v", err)
	}
	want := inv
	want.AcceptedAt, want.AcceptedBy = &at, by
	checkInvitation(t, "the accepted invitation", got, want)
	checkInvitation(t, "the accepted invitation read again", mustGetInvitation(t, s, inv.Hash), want)

	_, err = s.Invitations.AcceptInvitation(ctx, inv.Hash, at, newID())
	checkErr(t, "AcceptInvitation twice", err, ports.ErrConflict)
	if got := mustGetInvitation(t, s, inv.Hash); got.AcceptedBy != by {
		t.Fatalf("a second accept changed the acceptor: %+v", got)
	}
}

// testAcceptInvitationAtExpiry: an invitation may be accepted until the
// instant before ExpiresAt, and not at it.
func testAcceptInvitationAtExpiry(t *testing.T, s invitationStores) {
	ctx := t.Context()
	o := seedInviter(t, s)
	late := mustCreateInvitation(t, s, newInvitation(o.OrgID, o.UserID))
	_, err := s.Invitations.AcceptInvitation(ctx, late.Hash, late.ExpiresAt, newID())
	checkErr(t, "AcceptInvitation at the instant it expires", err, ports.ErrConflict)
	_, err = s.Invitations.AcceptInvitation(ctx, late.Hash, late.ExpiresAt.Add(time.Hour), newID())
	checkErr(t, "AcceptInvitation after it expired", err, ports.ErrConflict)
	if got := mustGetInvitation(t, s, late.Hash); got.AcceptedAt != nil {
		t.Fatalf("an expired invitation was accepted: %+v", got)
	}

	just := mustCreateInvitation(t, s, newInvitation(o.OrgID, o.UserID))
	if _, err := s.Invitations.AcceptInvitation(ctx, just.Hash, just.ExpiresAt.Add(-time.Microsecond), newID()); err != nil {
		t.Fatalf("AcceptInvitation a microsecond before it expires: %v", err)
	}
}

// testAcceptInvitationRollsBack: an accept in a transaction that fails is
// undone, and the invitation may be accepted again.
func testAcceptInvitationRollsBack(t *testing.T, s invitationStores) {
	ctx := t.Context()
	o := seedInviter(t, s)
	inv := mustCreateInvitation(t, s, newInvitation(o.OrgID, o.UserID))
	boom := errors.New("boom")
	err := s.Identity.Tx.WithinTx(ctx, func(ctx context.Context) error {
		if _, err := s.Invitations.AcceptInvitation(ctx, inv.Hash, invAt, newID()); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("WithinTx: %v", err)
	}
	if got := mustGetInvitation(t, s, inv.Hash); got.AcceptedAt != nil || got.AcceptedBy != "" {
		t.Fatalf("a rolled-back accept stayed: %+v", got)
	}
	if _, err := s.Invitations.AcceptInvitation(ctx, inv.Hash, invAt, newID()); err != nil {
		t.Fatalf("AcceptInvitation after a rollback: %v", err)
	}
}

// testRaceAcceptInvitation: of concurrent accepts, each in a transaction
// as the core runs it, exactly one wins; the others are conflict.
func testRaceAcceptInvitation(t *testing.T, s invitationStores) {
	o := seedInviter(t, s)
	inv := mustCreateInvitation(t, s, newInvitation(o.OrgID, o.UserID))
	const n = 8
	by := make([]string, n)
	for i := range by {
		by[i] = newID()
	}
	errs := race(n, func(i int) error {
		return s.Identity.Tx.WithinTx(t.Context(), func(ctx context.Context) error {
			_, err := s.Invitations.AcceptInvitation(ctx, inv.Hash, invAt, by[i])
			return err
		})
	})
	// A database may refuse a loser as busy rather than let it see the
	// winner's change; that is a conflict for the caller too, but the
	// contract is conflict, so only nil and conflict pass.
	winner := oneWinner(t, "AcceptInvitation", errs, ports.ErrConflict)
	if winner < 0 {
		return
	}
	if got := mustGetInvitation(t, s, inv.Hash); got.AcceptedBy != by[winner] {
		t.Fatalf("accepted by %q, want the winner %q", got.AcceptedBy, by[winner])
	}
}
