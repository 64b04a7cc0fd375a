package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// identityStores are the identity stores under test and the Transactor whose
// transactions they join.
type identityStores struct {
	Orgs   ports.OrgStore
	Users  ports.UserStore
	Tokens ports.TokenStore
	// Links is the store of sign-in identity links; only TestIdentity uses
	// it.
	Links ports.IdentityLinkStore
	Tx    ports.Transactor
}

// TestIdentity runs the contract of ports.OrgStore, ports.UserStore,
// ports.TokenStore and their Transactor. newStores is called by every subtest
// (subtests run in parallel) and may return stores over a shared database.
func TestIdentity(t *testing.T, newStores Factory) {
	runSuite(t, view(newStores, Stores.identity, needIdentity), []suiteCase[identityStores]{
		{"OrgRoundTrip", testOrgRoundTrip},
		{"OrgNotFound", testOrgNotFound},
		{"OrgNameConflict", testOrgNameConflict},
		{"UserRoundTrip", testUserRoundTrip},
		{"UserNotFound", testUserNotFound},
		{"UserEmailConflict", testUserEmailConflict},
		{"UnverifiedEmailsShared", testUnverifiedEmailsShared},
		{"IdentityLinks", testIdentityLinks},
		{"RaceCreateVerifiedUser", testRaceCreateVerifiedUser},
		{"UserMissingOrg", testUserMissingOrg},
		{"ListUsers", testListUsers},
		{"SetUserRole", testSetUserRole},
		{"RemoveUser", testRemoveUser},
		{"LastAdmin", testLastAdmin},
		{"TokenRoundTrip", testTokenRoundTrip},
		{"CreateTokenWithin", testCreateTokenWithin},
		{"TokenNotFound", testTokenNotFound},
		{"TokenHashConflict", testTokenHashConflict},
		{"TokenMissingUser", testTokenMissingUser},
		{"ListTokens", testListTokens},
		{"RevokeToken", testRevokeToken},
		{"WatchRevocations", testWatchRevocations},
		{"TouchToken", testTouchToken},
		{"DeleteExpiredTokens", testDeleteExpiredTokens},
		{"TimestampsUTC", testTimestampsUTC},
		{"TxCommit", testTxCommit},
		{"TxRollback", testTxRollback},
		{"TxRollbackOnPanic", testTxRollbackOnPanic},
		{"TxNestedJoins", testTxNestedJoins},
		{"RaceCreateOrg", testRaceCreateOrg},
		{"RaceTouchToken", testRaceTouchToken},
		{"RaceLastAdmin", testRaceLastAdmin},
		{"RaceCreateTokenWithin", testRaceCreateTokenWithin},
	})
}

// fixture is an org, one of its users and one of that user's tokens.
type fixture struct {
	org   ports.Org
	user  ports.User
	token ports.APIToken
}

func newOrg() ports.Org {
	return ports.Org{ID: newID(), Name: "org-" + newID(), CreatedAt: base}
}

func newUser(orgID string) ports.User {
	return ports.User{ID: newID(), OrgID: orgID, Email: newID() + "@example.com", EmailVerified: true, Role: ports.RoleMember, CreatedAt: base}
}

func newToken(u ports.User) ports.APIToken {
	id := newID()
	return ports.APIToken{
		ID: id, UserID: u.ID, OrgID: u.OrgID, Name: "cli", Prefix: "dp_" + id[:6],
		Hash: []byte("sha256-" + id), CreatedAt: base,
	}
}

func mustCreateOrg(t *testing.T, s identityStores, org ports.Org) ports.Org {
	t.Helper()
	if err := s.Orgs.CreateOrg(t.Context(), org); err != nil {
		t.Fatalf("CreateOrg: %v", err)
	}
	return org
}

func mustCreateUser(t *testing.T, s identityStores, u ports.User) ports.User {
	t.Helper()
	if err := s.Users.CreateUser(t.Context(), u); err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	return u
}

func mustCreateToken(t *testing.T, s identityStores, tok ports.APIToken) ports.APIToken {
	t.Helper()
	if err := s.Tokens.CreateToken(t.Context(), tok); err != nil {
		t.Fatalf("CreateToken: %v", err)
	}
	return tok
}

func mustGetToken(t *testing.T, s identityStores, id string) ports.APIToken {
	t.Helper()
	tok, err := s.Tokens.GetToken(t.Context(), id)
	if err != nil {
		t.Fatalf("GetToken: %v", err)
	}
	return tok
}

// newFixture stores a fresh org, user and token.
func newFixture(t *testing.T, s identityStores) fixture {
	t.Helper()
	org := mustCreateOrg(t, s, newOrg())
	user := mustCreateUser(t, s, newUser(org.ID))
	return fixture{org: org, user: user, token: mustCreateToken(t, s, newToken(user))}
}

func checkErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: error %v, want %v", what, err, want)
	}
}

func checkOrg(t *testing.T, what string, got, want ports.Org) {
	t.Helper()
	checkUTC(t, what, &got.CreatedAt)
	got.CreatedAt, want.CreatedAt = ms(got.CreatedAt), ms(want.CreatedAt)
	checkEqual(t, what, got, want)
}

func checkUser(t *testing.T, what string, got, want ports.User) {
	t.Helper()
	checkUTC(t, what, &got.CreatedAt)
	got.CreatedAt, want.CreatedAt = ms(got.CreatedAt), ms(want.CreatedAt)
	got.Email, want.Email = strings.ToLower(got.Email), strings.ToLower(want.Email)
	checkEqual(t, what, got, want)
}

func normToken(tok ports.APIToken) ports.APIToken {
	if tok.Kind == "" {
		tok.Kind = ports.TokenAPI // stored and read back as an API token
	}
	if len(tok.Scopes) == 0 {
		tok.Scopes = ports.DefaultScopes // stored and read back as the default scopes
	}
	tok.CreatedAt = ms(tok.CreatedAt)
	tok.ExpiresAt, tok.LastUsedAt, tok.RevokedAt = msPtr(tok.ExpiresAt), msPtr(tok.LastUsedAt), msPtr(tok.RevokedAt)
	return tok
}

func checkToken(t *testing.T, what string, got, want ports.APIToken) {
	t.Helper()
	checkUTC(t, what, &got.CreatedAt, got.ExpiresAt, got.LastUsedAt, got.RevokedAt)
	checkEqual(t, what, normToken(got), normToken(want))
}

func testOrgRoundTrip(t *testing.T, s identityStores) {
	ctx := t.Context()
	org := mustCreateOrg(t, s, newOrg())
	got, err := s.Orgs.GetOrg(ctx, org.ID)
	if err != nil {
		t.Fatalf("GetOrg: %v", err)
	}
	checkOrg(t, "GetOrg", got, org)
	got, err = s.Orgs.GetOrgByName(ctx, org.Name)
	if err != nil {
		t.Fatalf("GetOrgByName: %v", err)
	}
	checkOrg(t, "GetOrgByName", got, org)
}

func testOrgNotFound(t *testing.T, s identityStores) {
	ctx := t.Context()
	_, err := s.Orgs.GetOrg(ctx, newID())
	checkErr(t, "GetOrg", err, ports.ErrNotFound)
	_, err = s.Orgs.GetOrgByName(ctx, "org-"+newID())
	checkErr(t, "GetOrgByName", err, ports.ErrNotFound)
}

func testOrgNameConflict(t *testing.T, s identityStores) {
	org := mustCreateOrg(t, s, newOrg())
	dup := newOrg()
	dup.Name = org.Name
	checkErr(t, "CreateOrg with a taken name", s.Orgs.CreateOrg(t.Context(), dup), ports.ErrConflict)
}

func testUserRoundTrip(t *testing.T, s identityStores) {
	ctx := t.Context()
	org := mustCreateOrg(t, s, newOrg())
	user := newUser(org.ID)
	user.Email = "Ada." + newID() + "@Example.COM"
	user.Role = ports.RoleAdmin
	mustCreateUser(t, s, user)

	got, err := s.Users.GetUser(ctx, user.ID)
	if err != nil {
		t.Fatalf("GetUser: %v", err)
	}
	checkUser(t, "GetUser", got, user)
	for _, email := range []string{user.Email, strings.ToLower(user.Email), strings.ToUpper(user.Email)} {
		got, err := s.Users.GetVerifiedUserByEmail(ctx, email)
		if err != nil {
			t.Fatalf("GetVerifiedUserByEmail(%q): %v", email, err)
		}
		checkUser(t, "GetVerifiedUserByEmail("+email+")", got, user)
	}
}

func testUserNotFound(t *testing.T, s identityStores) {
	ctx := t.Context()
	_, err := s.Users.GetUser(ctx, newID())
	checkErr(t, "GetUser", err, ports.ErrNotFound)
	_, err = s.Users.GetVerifiedUserByEmail(ctx, newID()+"@example.com")
	checkErr(t, "GetVerifiedUserByEmail", err, ports.ErrNotFound)
	if users, err := s.Users.ListUsersByEmail(ctx, newID()+"@example.com"); err != nil || len(users) != 0 {
		t.Errorf("ListUsersByEmail of an unknown email: %v, %v", users, err)
	}
}

func testListUsers(t *testing.T, s identityStores) {
	ctx := t.Context()
	org, other := mustCreateOrg(t, s, newOrg()), mustCreateOrg(t, s, newOrg())
	var emails []string
	for _, local := range []string{"carol", "alice", "bob"} {
		u := newUser(org.ID)
		u.Email = local + "-" + newID() + "@example.com"
		emails = append(emails, mustCreateUser(t, s, u).Email)
	}
	mustCreateUser(t, s, newUser(other.ID))
	slices.Sort(emails)

	first, next, err := s.Users.ListUsers(ctx, org.ID, ports.Page{Limit: 2})
	if err != nil || len(first) != 2 || next == "" || first[0].Email != emails[0] || first[1].Email != emails[1] {
		t.Fatalf("first page: %v, %q, %v; want %v", first, next, err, emails[:2])
	}
	rest, end, err := s.Users.ListUsers(ctx, org.ID, ports.Page{Limit: 2, Cursor: next})
	if err != nil || len(rest) != 1 || end != "" || rest[0].Email != emails[2] || rest[0].OrgID != org.ID {
		t.Fatalf("second page: %v, %q, %v", rest, end, err)
	}
	if none, _, err := s.Users.ListUsers(ctx, newID(), ports.Page{}); err != nil || len(none) != 0 {
		t.Fatalf("an org without users: %v, %v", none, err)
	}
	_, _, err = s.Users.ListUsers(ctx, org.ID, ports.Page{Cursor: "not a cursor"})
	checkErr(t, "ListUsers with a bad cursor", err, ports.ErrInvalid)
}

func testSetUserRole(t *testing.T, s identityStores) {
	ctx := t.Context()
	f := newFixture(t, s)
	if err := s.Users.SetUserRole(ctx, f.org.ID, f.user.ID, ports.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	if u, err := s.Users.GetUser(ctx, f.user.ID); err != nil || u.Role != ports.RoleAdmin {
		t.Fatalf("after SetUserRole: %+v, %v", u, err)
	}
	checkErr(t, "SetUserRole of another org's user", s.Users.SetUserRole(ctx, newID(), f.user.ID, ports.RoleMember), ports.ErrNotFound)
	checkErr(t, "SetUserRole of no user", s.Users.SetUserRole(ctx, f.org.ID, newID(), ports.RoleMember), ports.ErrNotFound)
	checkErr(t, "SetUserRole to an unknown role", s.Users.SetUserRole(ctx, f.org.ID, f.user.ID, "owner"), ports.ErrInvalid)
	if u, _ := s.Users.GetUser(ctx, f.user.ID); u.Role != ports.RoleAdmin {
		t.Fatalf("refused calls changed the role: %+v", u)
	}
}

func testRemoveUser(t *testing.T, s identityStores) {
	ctx := t.Context()
	f := newFixture(t, s)
	stays := mustCreateUser(t, s, newUser(f.org.ID))
	at := base.Add(time.Hour).Truncate(time.Microsecond) // what the databases keep
	if err := s.Users.RemoveUser(ctx, f.org.ID, f.user.ID, at); err != nil {
		t.Fatal(err)
	}
	u, err := s.Users.GetUser(ctx, f.user.ID)
	if err != nil || u.RemovedAt == nil || !u.RemovedAt.Equal(at) {
		t.Fatalf("the removed user: %+v, %v", u, err)
	}
	if _, tu, err := s.Tokens.GetTokenByHash(ctx, f.token.Hash); err != nil || tu.RemovedAt == nil || !tu.RemovedAt.Equal(at) {
		t.Fatalf("the removed user's token's user: %+v, %v", tu, err)
	}
	users, _, err := s.Users.ListUsers(ctx, f.org.ID, ports.Page{})
	if err != nil || len(users) != 1 || users[0].ID != stays.ID || users[0].RemovedAt != nil {
		t.Fatalf("ListUsers after a removal: %+v, %v", users, err)
	}
	checkErr(t, "RemoveUser twice", s.Users.RemoveUser(ctx, f.org.ID, f.user.ID, at), ports.ErrConflict)
	checkErr(t, "RemoveUser of another org's user", s.Users.RemoveUser(ctx, newID(), stays.ID, at), ports.ErrNotFound)
	checkErr(t, "RemoveUser of no user", s.Users.RemoveUser(ctx, f.org.ID, newID(), at), ports.ErrNotFound)
	if u, _ := s.Users.GetUser(ctx, stays.ID); u.RemovedAt != nil {
		t.Fatalf("a refused removal removed: %+v", u)
	}
}

func testUserEmailConflict(t *testing.T, s identityStores) {
	org := mustCreateOrg(t, s, newOrg())
	user := newUser(org.ID)
	user.Email = "bob-" + newID() + "@example.com"
	mustCreateUser(t, s, user)

	other := mustCreateOrg(t, s, newOrg())
	dup := newUser(other.ID)
	dup.Email = strings.ToUpper(user.Email)
	checkErr(t, "CreateUser with a taken email in another case", s.Users.CreateUser(t.Context(), dup), ports.ErrConflict)
}

// testUnverifiedEmailsShared: an unverified user's email may be a verified
// user's, or other unverified users', in any org; only the verified one is
// found by GetVerifiedUserByEmail, and ListUsersByEmail finds them all.
func testUnverifiedEmailsShared(t *testing.T, s identityStores) {
	ctx := t.Context()
	email := "carol-" + newID() + "@example.com"
	a, b := mustCreateOrg(t, s, newOrg()), mustCreateOrg(t, s, newOrg())
	unverified := func(orgID string, at time.Time) ports.User {
		u := newUser(orgID)
		u.Email, u.EmailVerified, u.CreatedAt = strings.ToUpper(email), false, at
		return mustCreateUser(t, s, u)
	}
	first := unverified(a.ID, base)
	if _, err := s.Users.GetVerifiedUserByEmail(ctx, email); !errors.Is(err, ports.ErrNotFound) {
		t.Fatalf("GetVerifiedUserByEmail with only an unverified user: %v, want not_found", err)
	}
	second := unverified(a.ID, base.Add(time.Second))
	verified := newUser(b.ID)
	verified.Email, verified.CreatedAt = email, base.Add(2*time.Second)
	mustCreateUser(t, s, verified)
	third := unverified(b.ID, base.Add(3*time.Second))

	got, err := s.Users.GetVerifiedUserByEmail(ctx, strings.ToUpper(email))
	if err != nil {
		t.Fatalf("GetVerifiedUserByEmail: %v", err)
	}
	checkUser(t, "GetVerifiedUserByEmail", got, verified)
	if u, err := s.Users.GetUser(ctx, first.ID); err != nil || u.EmailVerified {
		t.Errorf("GetUser of an unverified user: %+v, %v", u, err)
	}
	all, err := s.Users.ListUsersByEmail(ctx, email)
	if err != nil || len(all) != 4 {
		t.Fatalf("ListUsersByEmail: %v, %v; want 4 users", all, err)
	}
	for i, want := range []ports.User{first, second, verified, third} {
		checkUser(t, fmt.Sprintf("ListUsersByEmail[%d]", i), all[i], want)
	}
	dup := newUser(a.ID)
	dup.Email = email
	checkErr(t, "CreateUser of a second verified user with the email", s.Users.CreateUser(ctx, dup), ports.ErrConflict)

	// Verifying an unverified user: refused while a verified user has the
	// email, done once none has.
	checkErr(t, "VerifyUserEmail beside a verified user", s.Users.VerifyUserEmail(ctx, first.ID), ports.ErrConflict)
	checkErr(t, "VerifyUserEmail of no user", s.Users.VerifyUserEmail(ctx, newID()), ports.ErrNotFound)
	if err := s.Users.VerifyUserEmail(ctx, verified.ID); err != nil {
		t.Errorf("VerifyUserEmail of a verified user: %v", err)
	}
	lone := newUser(a.ID)
	lone.EmailVerified = false
	mustCreateUser(t, s, lone)
	if err := s.Users.VerifyUserEmail(ctx, lone.ID); err != nil {
		t.Fatalf("VerifyUserEmail: %v", err)
	}
	if u, err := s.Users.GetVerifiedUserByEmail(ctx, lone.Email); err != nil || u.ID != lone.ID || !u.EmailVerified {
		t.Errorf("after VerifyUserEmail: %+v, %v", u, err)
	}
}

func testIdentityLinks(t *testing.T, s identityStores) {
	ctx := t.Context()
	f := newFixture(t, s)
	other := mustCreateUser(t, s, newUser(f.org.ID))
	issuer, subject := "https://idp-"+newID()+".example.com", "sub-"+newID()
	if _, err := s.Links.GetLinkedUser(ctx, issuer, subject); !errors.Is(err, ports.ErrNotFound) {
		t.Fatalf("GetLinkedUser before a link: %v, want not_found", err)
	}
	link := ports.IdentityLink{Issuer: issuer, Subject: subject, UserID: f.user.ID, CreatedAt: base}
	if err := s.Links.LinkIdentity(ctx, link); err != nil {
		t.Fatalf("LinkIdentity: %v", err)
	}
	got, err := s.Links.GetLinkedUser(ctx, issuer, subject)
	if err != nil {
		t.Fatalf("GetLinkedUser: %v", err)
	}
	checkUser(t, "GetLinkedUser", got, f.user)
	if _, err := s.Links.GetLinkedUser(ctx, issuer+"/other", subject); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("GetLinkedUser at another issuer: %v, want not_found", err)
	}
	checkErr(t, "LinkIdentity of a linked identity to another user",
		s.Links.LinkIdentity(ctx, ports.IdentityLink{Issuer: issuer, Subject: subject, UserID: other.ID, CreatedAt: base}), ports.ErrConflict)
	checkErr(t, "LinkIdentity of a second identity at the issuer to a user",
		s.Links.LinkIdentity(ctx, ports.IdentityLink{Issuer: issuer, Subject: "sub-" + newID(), UserID: f.user.ID, CreatedAt: base}), ports.ErrConflict)
	checkErr(t, "LinkIdentity to no user",
		s.Links.LinkIdentity(ctx, ports.IdentityLink{Issuer: issuer, Subject: "sub-" + newID(), UserID: newID(), CreatedAt: base}), ports.ErrNotFound)
	if err := s.Links.LinkIdentity(ctx, ports.IdentityLink{Issuer: issuer + "/other", Subject: subject, UserID: f.user.ID, CreatedAt: base}); err != nil {
		t.Errorf("LinkIdentity of the user at another issuer: %v", err)
	}
	if err := s.Links.LinkIdentity(ctx, ports.IdentityLink{Issuer: issuer, Subject: "sub-" + newID(), UserID: other.ID, CreatedAt: base}); err != nil {
		t.Errorf("LinkIdentity of another user at the issuer: %v", err)
	}
	if got, err := s.Links.GetLinkedUser(ctx, issuer, subject); err != nil || got.ID != f.user.ID {
		t.Errorf("the refused links changed the first: %+v, %v", got, err)
	}
}

// testRaceCreateVerifiedUser: of concurrent verified users with one email,
// exactly one is created, however many unverified ones join them.
func testRaceCreateVerifiedUser(t *testing.T, s identityStores) {
	org := mustCreateOrg(t, s, newOrg())
	email := "dave-" + newID() + "@example.com"
	errs := race(20, func(i int) error {
		u := newUser(org.ID)
		u.Email, u.EmailVerified = email, i%2 == 0
		return s.Users.CreateUser(t.Context(), u)
	})
	created := 0
	for i, err := range errs {
		switch {
		case i%2 == 1 && err != nil:
			t.Errorf("CreateUser of an unverified user: %v", err)
		case i%2 == 0 && err == nil:
			created++
		case i%2 == 0 && !errors.Is(err, ports.ErrConflict):
			t.Errorf("CreateUser: %v, want nil or conflict", err)
		}
	}
	if created != 1 {
		t.Errorf("%d of 10 concurrent verified users with one email were created, want 1", created)
	}
}

func testUserMissingOrg(t *testing.T, s identityStores) {
	checkErr(t, "CreateUser in a missing org", s.Users.CreateUser(t.Context(), newUser(newID())), ports.ErrNotFound)
}

func testTokenRoundTrip(t *testing.T, s identityStores) {
	ctx := t.Context()
	org := mustCreateOrg(t, s, newOrg())
	user := mustCreateUser(t, s, newUser(org.ID))
	for _, tok := range []ports.APIToken{
		newToken(user),
		func() ports.APIToken {
			tok := newToken(user)
			tok.ExpiresAt = ptr(base.Add(90 * 24 * time.Hour))
			tok.LastUsedAt = ptr(base.Add(time.Minute))
			tok.RevokedAt = ptr(base.Add(time.Hour))
			return tok
		}(),
		func() ports.APIToken {
			tok := newToken(user)
			tok.Kind = ports.TokenSession
			tok.ExpiresAt = ptr(base.Add(12 * time.Hour))
			return tok
		}(),
		func() ports.APIToken {
			tok := newToken(user)
			tok.Scopes = []string{"read"}
			return tok
		}(),
		func() ports.APIToken {
			tok := newToken(user)
			tok.Scopes = []string{"cloud:read", "spec:write", "content"}
			return tok
		}(),
	} {
		mustCreateToken(t, s, tok)
		checkToken(t, "GetToken", mustGetToken(t, s, tok.ID), tok)
		got, owner, err := s.Tokens.GetTokenByHash(ctx, tok.Hash)
		if err != nil {
			t.Fatalf("GetTokenByHash: %v", err)
		}
		checkToken(t, "GetTokenByHash", got, tok)
		checkUser(t, "GetTokenByHash's user", owner, user)
	}
}

func testTokenNotFound(t *testing.T, s identityStores) {
	ctx := t.Context()
	_, err := s.Tokens.GetToken(ctx, newID())
	checkErr(t, "GetToken", err, ports.ErrNotFound)
	_, _, err = s.Tokens.GetTokenByHash(ctx, []byte("sha256-"+newID()))
	checkErr(t, "GetTokenByHash", err, ports.ErrNotFound)
}

func testTokenHashConflict(t *testing.T, s identityStores) {
	f := newFixture(t, s)
	dup := newToken(f.user)
	dup.Hash = f.token.Hash
	checkErr(t, "CreateToken with a taken hash", s.Tokens.CreateToken(t.Context(), dup), ports.ErrConflict)
}

func testTokenMissingUser(t *testing.T, s identityStores) {
	org := mustCreateOrg(t, s, newOrg())
	tok := newToken(ports.User{ID: newID(), OrgID: org.ID})
	checkErr(t, "CreateToken for a missing user", s.Tokens.CreateToken(t.Context(), tok), ports.ErrNotFound)
}

func testListTokens(t *testing.T, s identityStores) {
	orgA := mustCreateOrg(t, s, newOrg())
	orgB := mustCreateOrg(t, s, newOrg())
	ann := mustCreateUser(t, s, newUser(orgA.ID))
	bob := mustCreateUser(t, s, newUser(orgA.ID))
	cat := mustCreateUser(t, s, newUser(orgB.ID))
	var created []ports.APIToken // oldest first
	for i, u := range []ports.User{ann, bob, ann, cat, bob, ann} {
		tok := newToken(u)
		tok.CreatedAt = base.Add(time.Duration(i) * time.Second)
		tok.Scopes = [][]string{nil, {"read"}, {"scm:read", "voice"}}[i%3]
		created = append(created, mustCreateToken(t, s, tok))
	}
	newestFirst := func(keep func(ports.APIToken) bool) []ports.APIToken {
		var out []ports.APIToken
		for _, tok := range slices.Backward(created) {
			if keep(tok) {
				out = append(out, normToken(tok))
			}
		}
		return out
	}
	for _, tc := range []struct {
		name          string
		orgID, userID string
		want          []ports.APIToken
	}{
		{"org", orgA.ID, "", newestFirst(func(tok ports.APIToken) bool { return tok.OrgID == orgA.ID })},
		{"user", "", ann.ID, newestFirst(func(tok ports.APIToken) bool { return tok.UserID == ann.ID })},
		{"org and user", orgA.ID, bob.ID, newestFirst(func(tok ports.APIToken) bool { return tok.UserID == bob.ID })},
		{"user of another org", orgB.ID, ann.ID, nil},
		{"unknown org", newID(), "", nil},
	} {
		got, err := s.Tokens.ListTokens(t.Context(), tc.orgID, tc.userID)
		if err != nil {
			t.Fatalf("ListTokens(%s): %v", tc.name, err)
		}
		for i := range got {
			got[i] = normToken(got[i])
		}
		if len(got) == 0 && len(tc.want) == 0 {
			continue
		}
		checkEqual(t, "ListTokens("+tc.name+")", got, tc.want)
	}

	all, err := s.Tokens.ListTokens(t.Context(), "", "")
	if err != nil {
		t.Fatalf("ListTokens(any): %v", err)
	}
	var ours []ports.APIToken
	for _, tok := range all {
		if tok.OrgID == orgA.ID || tok.OrgID == orgB.ID {
			ours = append(ours, normToken(tok))
		}
	}
	checkEqual(t, "ListTokens(any) restricted to this test's orgs", ours, newestFirst(func(ports.APIToken) bool { return true }))
	if !slices.IsSortedFunc(all, func(a, b ports.APIToken) int { return b.CreatedAt.Compare(a.CreatedAt) }) {
		t.Errorf("ListTokens(any) is not newest first")
	}
}

func testRevokeToken(t *testing.T, s identityStores) {
	ctx := t.Context()
	f := newFixture(t, s)
	other := newFixture(t, s)
	at := base.Add(time.Hour).Truncate(time.Microsecond) // what the databases keep

	checkErr(t, "RevokeToken of another org's token", s.Tokens.RevokeToken(ctx, other.org.ID, f.token.ID, at), ports.ErrNotFound)
	checkErr(t, "RevokeToken of a missing token", s.Tokens.RevokeToken(ctx, f.org.ID, newID(), at), ports.ErrNotFound)
	if got := mustGetToken(t, s, f.token.ID); got.RevokedAt != nil {
		t.Fatalf("token revoked by a failed RevokeToken: %v", got.RevokedAt)
	}

	if err := s.Tokens.RevokeToken(ctx, f.org.ID, f.token.ID, at); err != nil {
		t.Fatalf("RevokeToken: %v", err)
	}
	checkErr(t, "RevokeToken twice", s.Tokens.RevokeToken(ctx, f.org.ID, f.token.ID, at.Add(time.Minute)), ports.ErrConflict)

	want := f.token
	want.RevokedAt = &at
	checkToken(t, "GetToken after RevokeToken", mustGetToken(t, s, f.token.ID), want)
	got, _, err := s.Tokens.GetTokenByHash(ctx, f.token.Hash)
	if err != nil {
		t.Fatalf("GetTokenByHash of a revoked token: %v", err)
	}
	checkToken(t, "GetTokenByHash after RevokeToken", got, want)
}

// WatchRevocations reports committed revocations (made by any connection)
// once in place, and stops when its context ends; a store that cannot watch
// says so at once.
func testWatchRevocations(t *testing.T, s identityStores) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ready := make(chan struct{}, 1)
	revoked := make(chan string, 10)
	stopped := make(chan error, 1)
	go func() {
		stopped <- s.Tokens.WatchRevocations(ctx,
			func(id string) { revoked <- id },
			func() {
				select {
				case ready <- struct{}{}:
				default:
				}
			})
	}()
	select {
	case err := <-stopped:
		if !errors.Is(err, errors.ErrUnsupported) {
			t.Fatalf("WatchRevocations stopped at once: %v", err)
		}
		return // this store cannot watch
	case <-ready:
	case <-time.After(10 * time.Second):
		t.Fatal("WatchRevocations not in place after 10s")
	}

	// A revocation rolled back is not reported; one committed is.
	rolledBack, committed := newFixture(t, s), newFixture(t, s)
	errRollback := errors.New("roll back")
	err := s.Tx.WithinTx(t.Context(), func(ctx context.Context) error {
		if err := s.Tokens.RevokeToken(ctx, rolledBack.org.ID, rolledBack.token.ID, base); err != nil {
			return err
		}
		return errRollback
	})
	checkErr(t, "the rolled-back revocation", err, errRollback)
	if err := s.Tokens.RevokeToken(t.Context(), committed.org.ID, committed.token.ID, base); err != nil {
		t.Fatalf("RevokeToken: %v", err)
	}
	// Other tests revoke tokens in the same database at the same time.
	for found := false; !found; {
		select {
		case id := <-revoked:
			if id == rolledBack.token.ID {
				t.Fatalf("the rolled-back revocation of %s was reported", id)
			}
			found = id == committed.token.ID
		case <-time.After(10 * time.Second):
			t.Fatalf("the revocation of %s was not reported within 10s", committed.token.ID)
		}
	}

	cancel()
	select {
	case err := <-stopped:
		checkErr(t, "WatchRevocations after its context ended", err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("WatchRevocations still running 10s after its context ended")
	}
}

func testTouchToken(t *testing.T, s identityStores) {
	f := newFixture(t, s)
	const window = time.Minute
	checkErr(t, "TouchToken of a missing token", s.Tokens.TouchToken(t.Context(), newID(), base, base.Add(-window)), ports.ErrNotFound)

	t0 := base.Add(time.Hour)
	for _, step := range []struct {
		name string
		at   time.Time
		want time.Time
	}{
		{"first use", t0, t0},
		{"use within the window", t0.Add(window / 2), t0},
		{"use at the window's end", t0.Add(window), t0},
		{"use after the window", t0.Add(window + time.Second), t0.Add(window + time.Second)},
	} {
		if err := s.Tokens.TouchToken(t.Context(), f.token.ID, step.at, step.at.Add(-window)); err != nil {
			t.Fatalf("TouchToken(%s): %v", step.name, err)
		}
		want := f.token
		want.LastUsedAt = &step.want
		checkToken(t, "GetToken after "+step.name, mustGetToken(t, s, f.token.ID), want)
	}
}

func testDeleteExpiredTokens(t *testing.T, s identityStores) {
	ctx := t.Context()
	// Far before base, so tokens of other subtests sharing the store are untouched.
	epoch := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	cutoff := epoch.Add(30 * 24 * time.Hour)
	org := mustCreateOrg(t, s, newOrg())
	user := mustCreateUser(t, s, newUser(org.ID))
	token := func(expires, revoked *time.Time) ports.APIToken {
		tok := newToken(user)
		tok.CreatedAt, tok.ExpiresAt, tok.RevokedAt = epoch, expires, revoked
		return mustCreateToken(t, s, tok)
	}
	deleted := []ports.APIToken{
		token(ptr(cutoff.Add(-time.Millisecond)), nil),
		token(nil, ptr(epoch.Add(time.Hour))),
		token(ptr(cutoff.Add(time.Hour)), ptr(epoch.Add(time.Hour))),
	}
	kept := []ports.APIToken{
		token(nil, nil),
		token(ptr(cutoff), nil),
		token(ptr(cutoff.Add(time.Hour)), nil),
		token(nil, ptr(cutoff.Add(time.Hour))),
	}

	n, err := s.Tokens.DeleteExpiredTokens(ctx, cutoff)
	if err != nil {
		t.Fatalf("DeleteExpiredTokens: %v", err)
	}
	if n != len(deleted) {
		t.Errorf("DeleteExpiredTokens deleted %d tokens, want %d", n, len(deleted))
	}
	for _, tok := range deleted {
		_, err := s.Tokens.GetToken(ctx, tok.ID)
		checkErr(t, "GetToken of a deleted token", err, ports.ErrNotFound)
	}
	for _, tok := range kept {
		checkToken(t, "GetToken of a kept token", mustGetToken(t, s, tok.ID), tok)
	}
	if n, err := s.Tokens.DeleteExpiredTokens(ctx, cutoff); err != nil || n != 0 {
		t.Errorf("DeleteExpiredTokens again = %d, %v; want 0, nil", n, err)
	}
}

func testTimestampsUTC(t *testing.T, s identityStores) {
	zone := time.FixedZone("UTC-7", -7*3600)
	org := newOrg()
	org.CreatedAt = time.Date(2031, 12, 31, 23, 59, 59, 999_999_999, zone)
	mustCreateOrg(t, s, org)
	got, err := s.Orgs.GetOrg(t.Context(), org.ID)
	if err != nil {
		t.Fatalf("GetOrg: %v", err)
	}
	checkUTC(t, "GetOrg", &got.CreatedAt)
	if d := org.CreatedAt.Sub(got.CreatedAt).Abs(); d >= time.Millisecond {
		t.Errorf("CreatedAt = %v, %v away from %v", got.CreatedAt, d, org.CreatedAt)
	}
}

var errAbort = errors.New("storetest: abort")

func testTxCommit(t *testing.T, s identityStores) {
	org := newOrg()
	err := s.Tx.WithinTx(t.Context(), func(ctx context.Context) error {
		return s.Orgs.CreateOrg(ctx, org)
	})
	if err != nil {
		t.Fatalf("WithinTx: %v", err)
	}
	got, err := s.Orgs.GetOrg(t.Context(), org.ID)
	if err != nil {
		t.Fatalf("GetOrg after commit: %v", err)
	}
	checkOrg(t, "GetOrg after commit", got, org)
}

func testTxRollback(t *testing.T, s identityStores) {
	org := newOrg()
	err := s.Tx.WithinTx(t.Context(), func(ctx context.Context) error {
		if err := s.Orgs.CreateOrg(ctx, org); err != nil {
			return err
		}
		if _, err := s.Orgs.GetOrg(ctx, org.ID); err != nil {
			t.Errorf("GetOrg inside the transaction: %v", err)
		}
		return errAbort
	})
	if !errors.Is(err, errAbort) {
		t.Fatalf("WithinTx = %v, want fn's error", err)
	}
	_, err = s.Orgs.GetOrg(t.Context(), org.ID)
	checkErr(t, "GetOrg after rollback", err, ports.ErrNotFound)
}

func testTxRollbackOnPanic(t *testing.T, s identityStores) {
	org := newOrg()
	func() {
		defer func() {
			if p := recover(); p != errAbort {
				t.Errorf("recovered %v, want the panic of fn", p)
			}
		}()
		_ = s.Tx.WithinTx(t.Context(), func(ctx context.Context) error {
			if err := s.Orgs.CreateOrg(ctx, org); err != nil {
				return err
			}
			panic(errAbort)
		})
	}()
	_, err := s.Orgs.GetOrg(t.Context(), org.ID)
	checkErr(t, "GetOrg after a panic", err, ports.ErrNotFound)
}

func testTxNestedJoins(t *testing.T, s identityStores) {
	outer, inner := newOrg(), newOrg()
	err := s.Tx.WithinTx(t.Context(), func(ctx context.Context) error {
		if err := s.Orgs.CreateOrg(ctx, outer); err != nil {
			return err
		}
		err := s.Tx.WithinTx(ctx, func(ctx context.Context) error {
			if _, err := s.Orgs.GetOrg(ctx, outer.ID); err != nil {
				t.Errorf("GetOrg of the outer write inside the nested transaction: %v", err)
			}
			return s.Orgs.CreateOrg(ctx, inner)
		})
		if err != nil {
			return err
		}
		return errAbort
	})
	if !errors.Is(err, errAbort) {
		t.Fatalf("WithinTx = %v, want fn's error", err)
	}
	for _, org := range []ports.Org{outer, inner} {
		_, err := s.Orgs.GetOrg(t.Context(), org.ID)
		checkErr(t, "GetOrg after rolling back the outer transaction", err, ports.ErrNotFound)
	}
}

func testRaceCreateOrg(t *testing.T, s identityStores) {
	name := "org-" + newID()
	errs := race(20, func(int) error {
		org := newOrg()
		org.Name = name
		return s.Orgs.CreateOrg(t.Context(), org)
	})
	created := 0
	for _, err := range errs {
		switch {
		case err == nil:
			created++
		case !errors.Is(err, ports.ErrConflict):
			t.Errorf("CreateOrg: %v, want nil or conflict", err)
		}
	}
	if created != 1 {
		t.Errorf("%d of %d concurrent CreateOrg with one name succeeded, want 1", created, len(errs))
	}
}

func testRaceTouchToken(t *testing.T, s identityStores) {
	f := newFixture(t, s)
	errs := race(20, func(i int) error {
		at := base.Add(time.Duration(i) * time.Second)
		return s.Tokens.TouchToken(t.Context(), f.token.ID, at, at.Add(-time.Minute))
	})
	for _, err := range errs {
		if err != nil {
			t.Errorf("TouchToken: %v", err)
		}
	}
	if got := mustGetToken(t, s, f.token.ID); got.LastUsedAt == nil {
		t.Errorf("LastUsedAt is nil after concurrent TouchToken")
	}
}

func newAdmin(orgID string) ports.User {
	u := newUser(orgID)
	u.Role = ports.RoleAdmin
	return u
}

// activeAdmins returns how many admins of the org are not removed.
func activeAdmins(t *testing.T, s identityStores, orgID string) int {
	t.Helper()
	users, _, err := s.Users.ListUsers(t.Context(), orgID, ports.Page{Limit: ports.MaxPageLimit})
	if err != nil {
		t.Fatalf("ListUsers: %v", err)
	}
	n := 0
	for _, u := range users {
		if u.Role == ports.RoleAdmin {
			n++
		}
	}
	return n
}

// testLastAdmin takes the admins of an org away one at a time: the last
// active one stays, whether demoted or removed.
func testLastAdmin(t *testing.T, s identityStores) {
	ctx := t.Context()
	org := mustCreateOrg(t, s, newOrg())
	a, b := mustCreateUser(t, s, newAdmin(org.ID)), mustCreateUser(t, s, newAdmin(org.ID))
	m := mustCreateUser(t, s, newUser(org.ID))
	at := base.Add(time.Hour)
	if err := s.Users.SetUserRole(ctx, org.ID, a.ID, ports.RoleMember); err != nil {
		t.Fatalf("SetUserRole of one of two admins: %v", err)
	}
	checkErr(t, "SetUserRole of the last admin", s.Users.SetUserRole(ctx, org.ID, b.ID, ports.RoleMember), ports.ErrLastAdmin)
	checkErr(t, "RemoveUser of the last admin", s.Users.RemoveUser(ctx, org.ID, b.ID, at), ports.ErrLastAdmin)
	if err := s.Users.SetUserRole(ctx, org.ID, b.ID, ports.RoleAdmin); err != nil {
		t.Errorf("SetUserRole of the last admin to admin: %v", err)
	}
	if err := s.Users.SetUserRole(ctx, org.ID, m.ID, ports.RoleMember); err != nil {
		t.Errorf("SetUserRole of a member to member: %v", err)
	}
	if err := s.Users.RemoveUser(ctx, org.ID, a.ID, at); err != nil {
		t.Errorf("RemoveUser of a member: %v", err)
	}
	if n := activeAdmins(t, s, org.ID); n != 1 {
		t.Fatalf("after the refusals the org has %d admins, want 1", n)
	}
	if err := s.Users.SetUserRole(ctx, org.ID, m.ID, ports.RoleAdmin); err != nil {
		t.Fatalf("SetUserRole to admin: %v", err)
	}
	if err := s.Users.RemoveUser(ctx, org.ID, b.ID, at); err != nil {
		t.Fatalf("RemoveUser of one of two admins: %v", err)
	}
	// b is removed but still has the admin role: they count no more.
	checkErr(t, "SetUserRole of the last active admin", s.Users.SetUserRole(ctx, org.ID, m.ID, ports.RoleMember), ports.ErrLastAdmin)
	if err := s.Users.SetUserRole(ctx, org.ID, b.ID, ports.RoleMember); err != nil {
		t.Errorf("SetUserRole of a removed admin: %v", err)
	}
	if n := activeAdmins(t, s, org.ID); n != 1 {
		t.Errorf("the org has %d admins, want 1", n)
	}
}

// testRaceLastAdmin has every admin of an org demote, or remove, one
// another at once, round after round: exactly one admin is left each time.
func testRaceLastAdmin(t *testing.T, s identityStores) {
	for _, remove := range []bool{false, true} {
		for _, admins := range []int{2, 2, 2, 5, 5} {
			org := mustCreateOrg(t, s, newOrg())
			users := make([]ports.User, admins)
			for i := range users {
				users[i] = mustCreateUser(t, s, newAdmin(org.ID))
			}
			errs := race(admins, func(i int) error {
				if remove {
					return s.Users.RemoveUser(t.Context(), org.ID, users[i].ID, base)
				}
				return s.Users.SetUserRole(t.Context(), org.ID, users[i].ID, ports.RoleMember)
			})
			refused := 0
			for i, err := range errs {
				switch {
				case errors.Is(err, ports.ErrLastAdmin):
					refused++
				case err != nil:
					t.Errorf("remove %v: %d of %d admins: %v, want nil or %s", remove, i, admins, err, ports.CodeLastAdmin)
				}
			}
			if n := activeAdmins(t, s, org.ID); n != 1 || refused != 1 {
				t.Errorf("remove %v: %d admins taken away at once: %d refused, %d admins left; want 1 and 1", remove, admins, refused, n)
			}
		}
	}
}

// testCreateTokenWithin counts only the user's API tokens that are active
// at the new one's creation.
func testCreateTokenWithin(t *testing.T, s identityStores) {
	ctx := t.Context()
	f := newFixture(t, s) // f.token is active: one
	other := mustCreateUser(t, s, newUser(f.org.ID))
	mustCreateToken(t, s, newToken(other))
	session := newToken(f.user)
	session.Kind = ports.TokenSession
	mustCreateToken(t, s, session)
	revoked := newToken(f.user)
	revoked.RevokedAt = ptr(base)
	mustCreateToken(t, s, revoked)
	expired := newToken(f.user)
	expired.ExpiresAt = ptr(base.Add(time.Hour))
	mustCreateToken(t, s, expired)
	later := func() ports.APIToken {
		tok := newToken(f.user)
		tok.CreatedAt = base.Add(time.Hour) // expired has expired by then
		tok.ExpiresAt = ptr(base.Add(48 * time.Hour))
		return tok
	}
	second := later()
	if err := s.Tokens.CreateTokenWithin(ctx, second, 2); err != nil {
		t.Fatalf("CreateTokenWithin of a second token, limit 2: %v", err)
	}
	if got := mustGetToken(t, s, second.ID); got.ID != second.ID || got.Kind != ports.TokenAPI {
		t.Errorf("GetToken of the token created within the limit: %+v", got)
	}
	checkErr(t, "CreateTokenWithin of a third token, limit 2", s.Tokens.CreateTokenWithin(ctx, later(), 2), ports.ErrTooManyTokens)
	dup := later()
	dup.Hash = second.Hash
	err := s.Tokens.CreateTokenWithin(ctx, dup, 5)
	if !errors.Is(err, ports.ErrConflict) || errors.Is(err, ports.ErrTooManyTokens) {
		t.Errorf("CreateTokenWithin with a taken hash: %v, want a plain conflict", err)
	}
	lost := later()
	lost.UserID = newID()
	checkErr(t, "CreateTokenWithin for no user", s.Tokens.CreateTokenWithin(ctx, lost, 5), ports.ErrNotFound)
	tokens, err := s.Tokens.ListTokens(ctx, f.org.ID, f.user.ID)
	if err != nil || len(tokens) != 5 {
		t.Errorf("ListTokens after CreateTokenWithin: %d tokens, %v; want 5", len(tokens), err)
	}
}

// testRaceCreateTokenWithin creates more tokens at once than the limit
// leaves room for: exactly as many as it leaves room for are stored.
func testRaceCreateTokenWithin(t *testing.T, s identityStores) {
	const limit, n = 10, 20
	f := newFixture(t, s)
	errs := race(n, func(int) error { return s.Tokens.CreateTokenWithin(t.Context(), newToken(f.user), limit) })
	created := 0
	for i, err := range errs {
		switch {
		case err == nil:
			created++
		case !errors.Is(err, ports.ErrTooManyTokens):
			t.Errorf("CreateTokenWithin %d: %v, want nil or %s", i, err, ports.CodeTooManyTokens)
		}
	}
	tokens, err := s.Tokens.ListTokens(t.Context(), f.org.ID, f.user.ID)
	if err != nil {
		t.Fatal(err)
	}
	if created != limit-1 || len(tokens) != limit {
		t.Errorf("%d concurrent CreateTokenWithin, limit %d, one token before: %d created, the user has %d; want %d and %d",
			n, limit, created, len(tokens), limit-1, limit)
	}
}
