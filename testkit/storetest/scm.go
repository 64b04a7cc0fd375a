package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// scmStores are the source-control store under test, the Transactor whose
// transactions it joins, and the identity stores that seed the orgs and
// users owning its records.
type scmStores struct {
	SCM      ports.SCMStore
	Tx       ports.Transactor
	Identity identityStores
}

// TestSCM runs the contract of ports.SCMStore and its Transactor. newStores
// is called by every subtest (subtests run in parallel) and may return
// stores over a shared database.
//
// Where the port leaves a case open, the suite expects: CreateOAuthState is
// a conflict for a taken state and not_found for a user missing from its
// org; a state expires at its ExpiresAt exactly. SaveConnection stores a zero
// Status as active and a zero UpdatedAt as CreatedAt; replacing a connection
// keeps its ID and CreatedAt and takes the login, sealed token, status, error
// and UpdatedAt given; it is a conflict when the ID is another connection's,
// not_found for a missing owner and invalid for an unknown status.
// MarkConnectionBroken sets UpdatedAt to its time and is not_found for an
// unknown id. SaveRepositories stores repositories as the connection's
// owner's whatever they say, with CreatedAt (when new) and UpdatedAt at its
// time; it is all or nothing, not_found for a missing connection (with no
// repositories too), and a conflict when a new repository's ID is taken; a
// provider id given twice is stored once, with the later fields.
// Repositories list by full name bytewise, then id. RecordDelivery and
// RecordDeliveries store a zero Status as pending and are invalid for an
// unknown one (RecordDeliveries storing none of its deliveries); an empty
// payload reads back empty (nil or not). ClaimWebhookDigests compares
// times at microseconds and a digest recorded exactly at since is recent.
// FinishDelivery sets ProcessedAt, may be
// called again, and is invalid for pending or an unknown status; so do
// FinishDeliveries, which skips a missing delivery and takes the last
// outcome of an id given twice. Activity of
// the same time lists by id, highest first; of entries sharing an id, in one
// call or across calls, the first stored is kept.
func TestSCM(t *testing.T, newStores Factory) {
	runSuite(t, view(newStores, Stores.scm, needSCM), []suiteCase[scmStores]{
		{"OAuthStateRoundTrip", testOAuthStateRoundTrip},
		{"OAuthStateExpired", testOAuthStateExpired},
		{"RaceConsumeOAuthState", testRaceConsumeOAuthState},
		{"ConnectionRoundTrip", testConnectionRoundTrip},
		{"SaveConnectionReplaces", testSaveConnectionReplaces},
		{"ConnectionOwnerIsolation", testConnectionOwnerIsolation},
		{"MarkConnectionBroken", testMarkConnectionBroken},
		{"RaceSaveConnection", testRaceSaveConnection},
		{"RepositoriesRoundTrip", testRepositoriesRoundTrip},
		{"SaveRepositoriesUpserts", testSaveRepositoriesUpserts},
		{"SaveRepositoriesAtomic", testSaveRepositoriesAtomic},
		{"PruneRepositories", testPruneRepositories},
		{"RepositoriesOwnerIsolation", testRepositoriesOwnerIsolation},
		{"ListRepositoriesPages", testListRepositoriesPages},
		{"ListRepositoriesLimits", testListRepositoriesLimits},
		{"ListRepositoriesMalformedCursor", testListRepositoriesMalformedCursor},
		{"RaceSaveRepositories", testRaceSaveRepositories},
		{"DeliveryRoundTrip", testDeliveryRoundTrip},
		{"RecordDeliveryTwice", testRecordDeliveryTwice},
		{"RaceRecordDelivery", testRaceRecordDelivery},
		{"RecordDeliveries", testRecordDeliveries},
		{"RecordDeliveriesAllOrNothing", testRecordDeliveriesAllOrNothing},
		{"RecordDeliveriesBigBatch", testRecordDeliveriesBigBatch},
		{"RaceRecordDeliveries", testRaceRecordDeliveries},
		{"FinishDelivery", testFinishDelivery},
		{"GetDeliveries", testGetDeliveries},
		{"FinishDeliveries", testFinishDeliveries},
		{"FinishDeliveriesBigBatch", testFinishDeliveriesBigBatch},
		{"ClaimWebhookDigests", testClaimWebhookDigests},
		{"ClaimWebhookDigestsAllOrNothing", testClaimWebhookDigestsAllOrNothing},
		{"ClaimWebhookDigestsBigBatch", testClaimWebhookDigestsBigBatch},
		{"RaceClaimWebhookDigests", testRaceClaimWebhookDigests},
		{"ActivityRoundTrip", testActivityRoundTrip},
		{"AppendActivitySkipsDuplicates", testAppendActivitySkipsDuplicates},
		{"AppendActivityBigBatch", testAppendActivityBigBatch},
		{"ListActivityPages", testListActivityPages},
		{"ListActivityLimits", testListActivityLimits},
		{"ListActivityMalformedCursor", testListActivityMalformedCursor},
		{"RaceAppendActivity", testRaceAppendActivity},
		{"SCMTxJoins", testSCMTxJoins},
	})
}

// newProviderID returns a random provider id, so suites sharing a database
// do not see each other's repositories' activity.
func newProviderID() int64 { return rand.Int64N(1<<53) + 1 }

func newOAuthState(owner ports.Owner) ports.OAuthState {
	return ports.OAuthState{
		State: "st_" + strings.ReplaceAll(newID(), "-", ""), OrgID: owner.OrgID, UserID: owner.UserID,
		CodeVerifier:  "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk" + newID()[:8],
		RedirectAfter: "/repos?tab=«all»&q=a%20b", BindingHash: digestOf(newID()),
		CreatedAt: base, ExpiresAt: base.Add(10 * time.Minute),
	}
}

func mustCreateOAuthState(t *testing.T, s scmStores, st ports.OAuthState) ports.OAuthState {
	t.Helper()
	if err := s.SCM.CreateOAuthState(t.Context(), st); err != nil {
		t.Fatalf("CreateOAuthState: %v", err)
	}
	return st
}

func checkOAuthState(t *testing.T, what string, got, want ports.OAuthState) {
	t.Helper()
	checkUTC(t, what, &got.CreatedAt, &got.ExpiresAt)
	got.CreatedAt, got.ExpiresAt = ms(got.CreatedAt), ms(got.ExpiresAt)
	want.CreatedAt, want.ExpiresAt = ms(want.CreatedAt), ms(want.ExpiresAt)
	checkEqual(t, what, got, want)
}

func testOAuthStateRoundTrip(t *testing.T, s scmStores) {
	ctx := t.Context()
	owner := seedOwner(t, s.Identity)
	st := mustCreateOAuthState(t, s, newOAuthState(owner))
	bare := newOAuthState(owner)
	bare.RedirectAfter, bare.BindingHash = "", ""
	mustCreateOAuthState(t, s, bare)

	dup := newOAuthState(owner)
	dup.State = st.State
	checkConflict(t, "CreateOAuthState with a taken state", s.SCM.CreateOAuthState(ctx, dup))
	checkErr(t, "CreateOAuthState for a missing user", s.SCM.CreateOAuthState(ctx, newOAuthState(ports.Owner{OrgID: owner.OrgID, UserID: newID()})), ports.ErrNotFound)
	other := mustCreateOrg(t, s.Identity, newOrg())
	checkErr(t, "CreateOAuthState for a user of another org", s.SCM.CreateOAuthState(ctx, newOAuthState(ports.Owner{OrgID: other.ID, UserID: owner.UserID})), ports.ErrNotFound)

	got, err := s.SCM.ConsumeOAuthState(ctx, st.State, base.Add(time.Minute))
	if err != nil {
		t.Fatalf("ConsumeOAuthState: %v", err)
	}
	checkOAuthState(t, "ConsumeOAuthState", got, st)
	_, err = s.SCM.ConsumeOAuthState(ctx, st.State, base.Add(time.Minute))
	checkErr(t, "ConsumeOAuthState a second time", err, ports.ErrNotFound)
	// States compare exactly.
	for _, state := range []string{"st_" + newID(), "", strings.ToUpper(bare.State), bare.State + " ", bare.State[:len(bare.State)-1]} {
		_, err = s.SCM.ConsumeOAuthState(ctx, state, base)
		checkErr(t, fmt.Sprintf("ConsumeOAuthState(%q) of a missing state", state), err, ports.ErrNotFound)
	}
	got, err = s.SCM.ConsumeOAuthState(ctx, bare.State, base.Add(time.Minute))
	if err != nil {
		t.Fatalf("ConsumeOAuthState: %v", err)
	}
	checkOAuthState(t, "ConsumeOAuthState of a state without redirect", got, bare)
	// A consumed state is gone, so its value may be stored again.
	mustCreateOAuthState(t, s, st)
	if _, err := s.SCM.ConsumeOAuthState(ctx, st.State, base); err != nil {
		t.Errorf("ConsumeOAuthState of a state stored again: %v", err)
	}
}

func testOAuthStateExpired(t *testing.T, s scmStores) {
	ctx := t.Context()
	owner := seedOwner(t, s.Identity)
	// An expiry every store keeps exactly, so "at its expiry" is exact.
	expiry := base.Truncate(time.Millisecond).Add(10 * time.Minute)
	for _, tc := range []struct {
		name string
		now  time.Time
		ok   bool
	}{
		{"just before its expiry", expiry.Add(-time.Millisecond), true},
		{"at its expiry", expiry, false},
		{"at its expiry in another zone", expiry.UTC(), false},
		{"just after its expiry", expiry.Add(time.Millisecond), false},
		{"a day after its expiry", expiry.Add(24 * time.Hour), false},
	} {
		st := newOAuthState(owner)
		st.ExpiresAt = expiry
		mustCreateOAuthState(t, s, st)
		got, err := s.SCM.ConsumeOAuthState(ctx, st.State, tc.now)
		what := "ConsumeOAuthState " + tc.name
		if tc.ok {
			if err != nil {
				t.Errorf("%s: %v", what, err)
			} else {
				checkOAuthState(t, what, got, st)
			}
		} else {
			checkErr(t, what, err, errExpired)
			if e, ok := ports.AsError(err); ok && e.ErrorCode() != ports.CodeExpired {
				t.Errorf("%s: code %q, want %q", what, e.ErrorCode(), ports.CodeExpired)
			}
		}
		// Consumed or expired, it is removed.
		_, err = s.SCM.ConsumeOAuthState(ctx, st.State, base)
		checkErr(t, what+", then again before its expiry", err, ports.ErrNotFound)
	}
	// The expiry is the state's own, not a fixed lifetime.
	long := newOAuthState(owner)
	long.ExpiresAt = base.Add(48 * time.Hour)
	mustCreateOAuthState(t, s, long)
	if _, err := s.SCM.ConsumeOAuthState(ctx, long.State, base.Add(24*time.Hour)); err != nil {
		t.Errorf("ConsumeOAuthState of a state living two days, after one: %v", err)
	}
}

// testRaceConsumeOAuthState consumes one state from many callers at once:
// exactly one gets it.
func testRaceConsumeOAuthState(t *testing.T, s scmStores) {
	owner := seedOwner(t, s.Identity)
	for _, tc := range []struct {
		name    string
		expired bool
	}{{"a live state", false}, {"an expired state", true}} {
		st := mustCreateOAuthState(t, s, newOAuthState(owner))
		now := base.Add(time.Minute)
		want := error(nil)
		if tc.expired {
			now, want = base.Add(time.Hour), errExpired
		}
		got := make([]ports.OAuthState, 20)
		errs := race(len(got), func(i int) error {
			var err error
			got[i], err = s.SCM.ConsumeOAuthState(t.Context(), st.State, now)
			return err
		})
		winner := -1
		for i, err := range errs {
			switch {
			case !errors.Is(err, ports.ErrNotFound) && winner < 0:
				winner = i
				if (want == nil && err != nil) || (want != nil && !errors.Is(err, want)) {
					t.Errorf("ConsumeOAuthState %d of %s: %v, want %v", i, tc.name, err, want)
				}
			case !errors.Is(err, ports.ErrNotFound):
				t.Errorf("ConsumeOAuthState %d and %d of %s both found it (%v)", winner, i, tc.name, err)
			}
		}
		if winner < 0 {
			t.Errorf("no concurrent ConsumeOAuthState of %s found it", tc.name)
		} else if !tc.expired {
			checkOAuthState(t, "the winning ConsumeOAuthState", got[winner], st)
		}
	}
}

func newConnection(owner ports.Owner, provider string) ports.SCMConnection {
	id := newID()
	return ports.SCMConnection{
		ID: id, OrgID: owner.OrgID, UserID: owner.UserID, Provider: provider, Login: "octo-" + id[:8],
		Scopes: "repo,read:user", SealedToken: "v1.k1.c2VhbGVk_" + id, Status: ports.SCMActive, CreatedAt: base, UpdatedAt: base,
	}
}

func mustSaveConnection(t *testing.T, s scmStores, c ports.SCMConnection) ports.SCMConnection {
	t.Helper()
	got, err := s.SCM.SaveConnection(t.Context(), c)
	if err != nil {
		t.Fatalf("SaveConnection: %v", err)
	}
	return got
}

func mustGetConnection(t *testing.T, s scmStores, owner ports.Owner, provider string) ports.SCMConnection {
	t.Helper()
	c, err := s.SCM.GetConnection(t.Context(), owner, provider)
	if err != nil {
		t.Fatalf("GetConnection: %v", err)
	}
	return c
}

// newConnected stores a fresh owner and their active GitHub connection.
func newConnected(t *testing.T, s scmStores) (ports.Owner, ports.SCMConnection) {
	t.Helper()
	owner := seedOwner(t, s.Identity)
	return owner, mustSaveConnection(t, s, newConnection(owner, "github"))
}

func checkConnection(t *testing.T, what string, got, want ports.SCMConnection) {
	t.Helper()
	checkUTC(t, what, &got.CreatedAt, &got.UpdatedAt)
	got.CreatedAt, got.UpdatedAt = ms(got.CreatedAt), ms(got.UpdatedAt)
	want.CreatedAt, want.UpdatedAt = ms(want.CreatedAt), ms(want.UpdatedAt)
	checkEqual(t, what, got, want)
}

func testConnectionRoundTrip(t *testing.T, s scmStores) {
	ctx := t.Context()
	owner := seedOwner(t, s.Identity)
	c := newConnection(owner, "github")
	c.Login, c.UpdatedAt = "Octo-Cat_ü", base.Add(time.Second)
	checkConnection(t, "SaveConnection", mustSaveConnection(t, s, c), c)
	checkConnection(t, "GetConnection", mustGetConnection(t, s, owner, "github"), c)

	bare := newConnection(owner, "gitlab")
	bare.Status, bare.UpdatedAt = "", time.Time{}
	want := bare
	want.Status, want.UpdatedAt = ports.SCMActive, bare.CreatedAt
	checkConnection(t, "SaveConnection without status and update time", mustSaveConnection(t, s, bare), want)
	checkConnection(t, "GetConnection of the second provider", mustGetConnection(t, s, owner, "gitlab"), want)
	checkConnection(t, "GetConnection of the first provider afterwards", mustGetConnection(t, s, owner, "github"), c)

	broken := newConnection(owner, "bitbucket")
	broken.Status, broken.Error = ports.SCMBroken, "token_revoked: bad credentials"
	checkConnection(t, "SaveConnection of a broken connection", mustSaveConnection(t, s, broken), broken)

	for _, provider := range []string{"gitea", "GitHub", ""} {
		_, err := s.SCM.GetConnection(ctx, owner, provider)
		checkErr(t, fmt.Sprintf("GetConnection(%q) of a provider never connected", provider), err, ports.ErrNotFound)
	}
	for _, status := range []string{"ACTIVE", "revoked", "pending"} {
		bad := newConnection(owner, "gitea")
		bad.Status = status
		_, err := s.SCM.SaveConnection(ctx, bad)
		checkInvalidField(t, fmt.Sprintf("SaveConnection with status %q", status), err, "status")
	}
	_, err := s.SCM.GetConnection(ctx, owner, "gitea")
	checkErr(t, "GetConnection after invalid saves", err, ports.ErrNotFound)

	_, err = s.SCM.SaveConnection(ctx, newConnection(ports.Owner{OrgID: owner.OrgID, UserID: newID()}, "github"))
	checkErr(t, "SaveConnection for a missing user", err, ports.ErrNotFound)
	other := mustCreateOrg(t, s.Identity, newOrg())
	_, err = s.SCM.SaveConnection(ctx, newConnection(ports.Owner{OrgID: other.ID, UserID: owner.UserID}, "github"))
	checkErr(t, "SaveConnection for a user of another org", err, ports.ErrNotFound)

	// An id taken by another owner's connection.
	_, theirs := newConnected(t, s)
	taken := newConnection(owner, "gitea")
	taken.ID = theirs.ID
	_, err = s.SCM.SaveConnection(ctx, taken)
	checkConflict(t, "SaveConnection with another connection's id", err)
	_, err = s.SCM.GetConnection(ctx, owner, "gitea")
	checkErr(t, "GetConnection after the conflict", err, ports.ErrNotFound)
	checkConnection(t, "the other connection after the conflict", mustGetConnection(t, s, ports.Owner{OrgID: theirs.OrgID, UserID: theirs.UserID}, "github"), theirs)
}

func testSaveConnectionReplaces(t *testing.T, s scmStores) {
	owner, first := newConnected(t, s)
	repos := mustSaveRepositories(t, s, first.ID, base, newRepo(1001, "acme/api"))

	again := newConnection(owner, "github")
	again.Login, again.Scopes, again.SealedToken = "renamed-login", "read:user", "v1.k2.bmV3X3Rva2Vu"
	again.CreatedAt, again.UpdatedAt = base.Add(time.Hour), base.Add(2*time.Hour)
	want := again
	want.ID, want.CreatedAt = first.ID, first.CreatedAt
	checkConnection(t, "SaveConnection replacing a connection", mustSaveConnection(t, s, again), want)
	checkConnection(t, "GetConnection after the replacement", mustGetConnection(t, s, owner, "github"), want)
	// The connection's repositories stay with it.
	checkRepository(t, "GetRepository after the replacement", mustGetRepository(t, s, owner, repos[0].ID), repos[0])

	// A broken connection saved again is active, its error cleared.
	if err := s.SCM.MarkConnectionBroken(t.Context(), first.ID, "token_revoked", base.Add(3*time.Hour)); err != nil {
		t.Fatalf("MarkConnectionBroken: %v", err)
	}
	fresh := newConnection(owner, "github")
	fresh.Status, fresh.CreatedAt, fresh.UpdatedAt = "", base.Add(4*time.Hour), time.Time{}
	want = fresh
	want.ID, want.Status, want.CreatedAt, want.UpdatedAt = first.ID, ports.SCMActive, first.CreatedAt, fresh.CreatedAt
	checkConnection(t, "SaveConnection over a broken connection", mustSaveConnection(t, s, fresh), want)
	checkConnection(t, "GetConnection after reconnecting", mustGetConnection(t, s, owner, "github"), want)

	// Saving with the stored id is a replacement too.
	same := want
	same.Login, same.UpdatedAt = "same-id", base.Add(5*time.Hour)
	checkConnection(t, "SaveConnection with the stored id", mustSaveConnection(t, s, same), same)
}

func testConnectionOwnerIsolation(t *testing.T, s scmStores) {
	ctx := t.Context()
	owner, mine := newConnected(t, s)
	colleague := seedColleague(t, s.Identity, owner.OrgID)
	stranger := seedOwner(t, s.Identity)
	for name, o := range map[string]ports.Owner{
		"a colleague":             colleague,
		"a stranger":              stranger,
		"the user in another org": {OrgID: stranger.OrgID, UserID: owner.UserID},
		"another user in the org": {OrgID: owner.OrgID, UserID: stranger.UserID},
		"nobody":                  {},
	} {
		_, err := s.SCM.GetConnection(ctx, o, "github")
		checkErr(t, "GetConnection by "+name, err, ports.ErrNotFound)
	}
	theirs := mustSaveConnection(t, s, newConnection(colleague, "github"))
	if theirs.ID == mine.ID {
		t.Errorf("two owners' connections share the id %s", mine.ID)
	}
	checkConnection(t, "GetConnection by the colleague", mustGetConnection(t, s, colleague, "github"), theirs)
	checkConnection(t, "GetConnection by the owner", mustGetConnection(t, s, owner, "github"), mine)
}

func testMarkConnectionBroken(t *testing.T, s scmStores) {
	ctx := t.Context()
	owner, c := newConnected(t, s)
	_, other := newConnected(t, s)
	if err := s.SCM.MarkConnectionBroken(ctx, c.ID, "token_revoked: «Bad credentials»", base.Add(time.Hour)); err != nil {
		t.Fatalf("MarkConnectionBroken: %v", err)
	}
	want := c
	want.Status, want.Error, want.UpdatedAt = ports.SCMBroken, "token_revoked: «Bad credentials»", base.Add(time.Hour)
	checkConnection(t, "GetConnection after MarkConnectionBroken", mustGetConnection(t, s, owner, "github"), want)
	// Marking it again records the later reason.
	if err := s.SCM.MarkConnectionBroken(ctx, c.ID, "upstream: 401", base.Add(2*time.Hour)); err != nil {
		t.Fatalf("MarkConnectionBroken again: %v", err)
	}
	want.Error, want.UpdatedAt = "upstream: 401", base.Add(2*time.Hour)
	checkConnection(t, "GetConnection after MarkConnectionBroken twice", mustGetConnection(t, s, owner, "github"), want)
	checkConnection(t, "another connection", mustGetConnection(t, s, ports.Owner{OrgID: other.OrgID, UserID: other.UserID}, "github"), other)
	missing := newID()
	checkNotFound(t, "MarkConnectionBroken of a missing connection", s.SCM.MarkConnectionBroken(ctx, missing, "x", base), "scm connection", missing)
}

// testRaceSaveConnection saves one owner's connection to a provider from
// many callers at once: all succeed, and all keep one id.
func testRaceSaveConnection(t *testing.T, s scmStores) {
	owner := seedOwner(t, s.Identity)
	conns := make([]ports.SCMConnection, 20)
	for i := range conns {
		conns[i] = newConnection(owner, "github")
		conns[i].UpdatedAt = base.Add(time.Duration(i) * time.Second)
	}
	got := make([]ports.SCMConnection, len(conns))
	errs := race(len(conns), func(i int) error {
		var err error
		got[i], err = s.SCM.SaveConnection(t.Context(), conns[i])
		return err
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("SaveConnection %d: %v", i, err)
		}
	}
	stored := mustGetConnection(t, s, owner, "github")
	for i, c := range got {
		if c.ID != stored.ID {
			t.Errorf("SaveConnection %d returned id %s, the stored connection has %s", i, c.ID, stored.ID)
		}
	}
	i := slices.IndexFunc(conns, func(c ports.SCMConnection) bool { return c.Login == stored.Login })
	if i < 0 {
		t.Fatalf("GetConnection after the race = %+v, none of the connections saved", stored)
	}
	want := conns[i]
	want.ID = stored.ID
	checkConnection(t, "GetConnection after the race", stored, want)
}

func newRepo(providerID int64, fullName string) ports.Repository {
	owner, name, _ := strings.Cut(fullName, "/")
	return ports.Repository{
		ID: newID(),
		SCMRepo: ports.SCMRepo{
			ProviderID: providerID, FullName: fullName, Owner: owner, Name: name,
			Description: "The «" + name + "» service ✓", DefaultBranch: "main",
			HTMLURL: "https://github.com/" + fullName, Private: providerID%2 == 0,
			PushedAt: ptr(base.Add(-time.Duration(providerID%97) * time.Hour)),
		},
	}
}

func mustSaveRepositories(t *testing.T, s scmStores, connectionID string, at time.Time, repos ...ports.Repository) []ports.Repository {
	t.Helper()
	got, err := s.SCM.SaveRepositories(t.Context(), connectionID, repos, at)
	if err != nil {
		t.Fatalf("SaveRepositories: %v", err)
	}
	return got
}

func mustGetRepository(t *testing.T, s scmStores, owner ports.Owner, id string) ports.Repository {
	t.Helper()
	r, err := s.SCM.GetRepository(t.Context(), owner, id)
	if err != nil {
		t.Fatalf("GetRepository: %v", err)
	}
	return r
}

func mustListRepositories(t *testing.T, s scmStores, owner ports.Owner) []ports.Repository {
	t.Helper()
	list, next, err := s.SCM.ListRepositories(t.Context(), owner, ports.Page{Limit: 200})
	if err != nil {
		t.Fatalf("ListRepositories: %v", err)
	}
	if next != "" {
		t.Fatalf("ListRepositories: more than one page")
	}
	return list
}

// stored is r as SaveRepositories stores it for connection c with id at the
// times given.
func stored(r ports.Repository, c ports.SCMConnection, id string, created, updated time.Time) ports.Repository {
	r.ID, r.OrgID, r.UserID, r.ConnectionID, r.CreatedAt, r.UpdatedAt = id, c.OrgID, c.UserID, c.ID, created, updated
	return r
}

func normRepository(r ports.Repository) ports.Repository {
	r.CreatedAt, r.UpdatedAt, r.PushedAt = ms(r.CreatedAt), ms(r.UpdatedAt), msPtr(r.PushedAt)
	return r
}

func checkRepository(t *testing.T, what string, got, want ports.Repository) {
	t.Helper()
	checkUTC(t, what, &got.CreatedAt, &got.UpdatedAt, got.PushedAt)
	checkEqual(t, what, normRepository(got), normRepository(want))
}

func checkRepositories(t *testing.T, what string, got, want []ports.Repository) {
	t.Helper()
	norm := func(repos []ports.Repository) []ports.Repository {
		out := make([]ports.Repository, len(repos))
		for i, r := range repos {
			out[i] = normRepository(r)
		}
		return out
	}
	for _, r := range got {
		checkUTC(t, what, &r.CreatedAt, &r.UpdatedAt, r.PushedAt)
	}
	if len(got) == 0 && len(want) == 0 {
		return
	}
	checkEqual(t, what, norm(got), norm(want))
}

// byFullName sorts repositories as ListRepositories lists them.
func byFullName(repos []ports.Repository) []ports.Repository {
	repos = slices.Clone(repos)
	slices.SortFunc(repos, func(a, b ports.Repository) int {
		if c := strings.Compare(a.FullName, b.FullName); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return repos
}

func testRepositoriesRoundTrip(t *testing.T, s scmStores) {
	ctx := t.Context()
	owner, c := newConnected(t, s)
	api, web, docs := newRepo(newProviderID(), "acme/api"), newRepo(newProviderID(), "acme/web"), newRepo(newProviderID(), "acme/docs")
	web.PushedAt, web.Description, web.DefaultBranch = nil, "", "trunk"
	docs.Private = true
	// What the repositories say of their owner is not what is stored.
	docs.OrgID, docs.UserID, docs.ConnectionID = newID(), newID(), newID()
	docs.CreatedAt, docs.UpdatedAt = base.Add(-time.Hour), base.Add(-time.Hour)
	at := base.Add(time.Minute)
	got := mustSaveRepositories(t, s, c.ID, at, web, api, docs)
	want := []ports.Repository{stored(web, c, web.ID, at, at), stored(api, c, api.ID, at, at), stored(docs, c, docs.ID, at, at)}
	checkRepositories(t, "SaveRepositories (in the order given)", got, want)
	for _, r := range want {
		checkRepository(t, "GetRepository of "+r.FullName, mustGetRepository(t, s, owner, r.ID), r)
	}
	checkRepositories(t, "ListRepositories", mustListRepositories(t, s, owner), byFullName(want))

	none, err := s.SCM.SaveRepositories(ctx, c.ID, nil, at)
	if err != nil || len(none) != 0 {
		t.Errorf("SaveRepositories of none = %v, %v; want none", none, err)
	}
	missing := newID()
	_, err = s.SCM.GetRepository(ctx, owner, missing)
	checkNotFound(t, "GetRepository of a missing repository", err, "repository", missing)
	_, err = s.SCM.SaveRepositories(ctx, missing, []ports.Repository{newRepo(newProviderID(), "acme/ghost")}, at)
	checkErr(t, "SaveRepositories of a missing connection", err, ports.ErrNotFound)
	_, err = s.SCM.SaveRepositories(ctx, missing, nil, at)
	checkErr(t, "SaveRepositories of none to a missing connection", err, ports.ErrNotFound)
	checkRepositories(t, "ListRepositories afterwards", mustListRepositories(t, s, owner), byFullName(want))

	// A provider id given twice is one repository, with the later fields.
	twice, again := newRepo(newProviderID(), "acme/twice"), newRepo(0, "acme/twice-renamed")
	again.ProviderID = twice.ProviderID
	got = mustSaveRepositories(t, s, c.ID, at, twice, again)
	if len(got) != 2 || got[0].ID != twice.ID || got[1].ID != twice.ID {
		t.Fatalf("SaveRepositories of a provider id twice = %+v, want both with id %s", got, twice.ID)
	}
	checkRepository(t, "the repository saved twice in one call", mustGetRepository(t, s, owner, twice.ID), stored(again, c, twice.ID, at, at))
	if n := len(mustListRepositories(t, s, owner)); n != len(want)+1 {
		t.Errorf("ListRepositories after saving a provider id twice = %d repositories, want %d", n, len(want)+1)
	}
}

func testSaveRepositoriesUpserts(t *testing.T, s scmStores) {
	owner, c := newConnected(t, s)
	r1, r2, r3 := newRepo(newProviderID(), "acme/one"), newRepo(newProviderID(), "acme/two"), newRepo(newProviderID(), "acme/three")
	r2.PushedAt = nil
	first := mustSaveRepositories(t, s, c.ID, base, r1, r2, r3)

	// The provider's view an hour later: one renamed and made public, one
	// pushed to, one new, one not listed; every repository with a fresh id.
	later := base.Add(time.Hour)
	u1 := newRepo(r1.ProviderID, "acme-org/uno")
	u1.Private, u1.PushedAt, u1.Description, u1.DefaultBranch, u1.HTMLURL = !r1.Private, nil, "", "develop", ""
	u2 := newRepo(r2.ProviderID, "acme/two")
	u2.PushedAt = ptr(later)
	r4 := newRepo(newProviderID(), "acme/four")
	got := mustSaveRepositories(t, s, c.ID, later, u2, r4, u1)
	want := []ports.Repository{
		stored(u2, c, first[1].ID, base, later), stored(r4, c, r4.ID, later, later), stored(u1, c, first[0].ID, base, later),
	}
	checkRepositories(t, "SaveRepositories updating known repositories", got, want)
	kept := stored(r3, c, r3.ID, base, base)
	checkRepository(t, "GetRepository of a repository not saved again", mustGetRepository(t, s, owner, r3.ID), kept)
	for _, r := range want {
		checkRepository(t, "GetRepository of "+r.FullName, mustGetRepository(t, s, owner, r.ID), r)
	}
	for _, r := range []ports.Repository{u1, u2} {
		_, err := s.SCM.GetRepository(t.Context(), owner, r.ID)
		checkNotFound(t, "GetRepository by the id an update offered", err, "repository", r.ID)
	}
	checkRepositories(t, "ListRepositories after the update", mustListRepositories(t, s, owner), byFullName(append(want, kept)))

	// Saving with the stored ids updates too.
	again := slices.Clone(want)
	again[0].Description, again[2].FullName = "edited", "acme-org/uno-2"
	even := base.Add(2 * time.Hour)
	got = mustSaveRepositories(t, s, c.ID, even, again...)
	for i := range again {
		again[i] = stored(again[i], c, again[i].ID, again[i].CreatedAt, even)
	}
	checkRepositories(t, "SaveRepositories with the stored ids", got, again)
	checkRepositories(t, "ListRepositories after saving with the stored ids", mustListRepositories(t, s, owner), byFullName(append(again, kept)))
}

func testSaveRepositoriesAtomic(t *testing.T, s scmStores) {
	ctx := t.Context()
	owner, c := newConnected(t, s)
	existing := mustSaveRepositories(t, s, c.ID, base, newRepo(newProviderID(), "acme/existing"))
	_, theirs := newConnected(t, s)
	taken := mustSaveRepositories(t, s, theirs.ID, base, newRepo(newProviderID(), "them/taken"))

	fresh := newRepo(newProviderID(), "acme/fresh")
	update := newRepo(existing[0].ProviderID, "acme/renamed")
	clash := newRepo(1<<62, "acme/clash") // last in any order, so the others are written first
	clash.ID = taken[0].ID
	_, err := s.SCM.SaveRepositories(ctx, c.ID, []ports.Repository{fresh, update, clash}, base.Add(time.Hour))
	checkConflict(t, "SaveRepositories with another repository's id", err)
	checkRepositories(t, "ListRepositories after the failed save", mustListRepositories(t, s, owner), existing)
	_, err = s.SCM.GetRepository(ctx, owner, fresh.ID)
	checkNotFound(t, "GetRepository of a repository of the failed save", err, "repository", fresh.ID)
	checkRepository(t, "the other owner's repository", mustGetRepository(t, s, ports.Owner{OrgID: theirs.OrgID, UserID: theirs.UserID}, taken[0].ID), taken[0])
}

func testRepositoriesOwnerIsolation(t *testing.T, s scmStores) {
	ctx := t.Context()
	owner, c := newConnected(t, s)
	colleague := seedColleague(t, s.Identity, owner.OrgID)
	cc := mustSaveConnection(t, s, newConnection(colleague, "github"))
	stranger, sc := newConnected(t, s)
	// All three see the same provider repositories.
	shared := []int64{newProviderID(), newProviderID()}
	save := func(conn ports.SCMConnection) []ports.Repository {
		return mustSaveRepositories(t, s, conn.ID, base, newRepo(shared[0], "acme/api"), newRepo(shared[1], "acme/web"))
	}
	mine, theirs, strangers := save(c), save(cc), save(sc)
	for i := range mine {
		if mine[i].ID == theirs[i].ID || mine[i].ID == strangers[i].ID {
			t.Errorf("one provider repository seen by two owners has one id %s", mine[i].ID)
		}
	}
	for name, o := range map[string]ports.Owner{
		"a colleague":             colleague,
		"a stranger":              stranger,
		"the user in another org": {OrgID: stranger.OrgID, UserID: owner.UserID},
		"another user in the org": {OrgID: owner.OrgID, UserID: stranger.UserID},
		"nobody":                  {},
	} {
		for _, r := range mine {
			_, err := s.SCM.GetRepository(ctx, o, r.ID)
			checkNotFound(t, "GetRepository by "+name, err, "repository", r.ID)
		}
		for _, r := range mustListRepositories(t, s, o) {
			if r.OrgID != o.OrgID || r.UserID != o.UserID {
				t.Errorf("ListRepositories by %s lists %+v", name, r)
			}
		}
	}
	checkRepositories(t, "ListRepositories by the owner", mustListRepositories(t, s, owner), mine)
	checkRepositories(t, "ListRepositories by the colleague", mustListRepositories(t, s, colleague), theirs)
	checkRepositories(t, "ListRepositories by the stranger", mustListRepositories(t, s, stranger), strangers)
}

// listAllRepositories follows the pages of ListRepositories of the size
// given and returns the repositories and the page sizes.
func listAllRepositories(t *testing.T, s scmStores, owner ports.Owner, limit int) ([]ports.Repository, []int) {
	t.Helper()
	var all []ports.Repository
	var sizes []int
	cursor := ""
	for range 300 {
		page, next, err := s.SCM.ListRepositories(t.Context(), owner, ports.Page{Limit: limit, Cursor: cursor})
		if err != nil {
			t.Fatalf("ListRepositories(cursor %q): %v", cursor, err)
		}
		all = append(all, page...)
		sizes = append(sizes, len(page))
		if next == "" {
			return all, sizes
		}
		cursor = next
	}
	t.Fatalf("ListRepositories: pages do not end")
	return nil, nil
}

func testListRepositoriesPages(t *testing.T, s scmStores) {
	ctx := t.Context()
	owner, c := newConnected(t, s)
	_, other := newConnected(t, s)
	// Bytewise order: "-" < "." < digits < upper case < "_" < lower case <
	// non-ASCII; two repositories share a full name, so the id orders them.
	names := []string{"acme/web", "acme/api", "Acme/api", "acme/api-gateway", "acme/api.js", "acme/api_gateway",
		"acme/api2", "acme/Ärger", "zeta/x", "acme/web", "0xfeed/dots"}
	var repos []ports.Repository
	for _, name := range names {
		repos = append(repos, newRepo(newProviderID(), name))
	}
	want := byFullName(mustSaveRepositories(t, s, c.ID, base, repos...))
	theirs := slices.Clone(repos) // the same names, another owner
	for i := range theirs {
		theirs[i].ID = newID()
	}
	mustSaveRepositories(t, s, other.ID, base, theirs...)

	all, sizes := listAllRepositories(t, s, owner, 4)
	checkEqual(t, "page sizes", sizes, []int{4, 4, 3})
	checkRepositories(t, "pages of ListRepositories", all, want)
	all, sizes = listAllRepositories(t, s, owner, 1)
	checkEqual(t, "number of pages of one", len(sizes), len(want))
	checkRepositories(t, "pages of one of ListRepositories", all, want)

	whole, next, err := s.SCM.ListRepositories(ctx, owner, ports.Page{Limit: len(want)})
	if err != nil || next != "" {
		t.Errorf("ListRepositories(limit %d) = next %q, %v; want \"\", nil", len(want), next, err)
	}
	checkRepositories(t, "ListRepositories of one full page", whole, want)

	// Pages after a cursor see repositories saved (and renamed) meanwhile.
	first, cursor, err := s.SCM.ListRepositories(ctx, owner, ports.Page{Limit: 4})
	if err != nil || len(first) != 4 || cursor == "" {
		t.Fatalf("ListRepositories(limit 4) = %d repositories, next %q, %v", len(first), cursor, err)
	}
	late := mustSaveRepositories(t, s, c.ID, base, newRepo(newProviderID(), "zz/late"))
	early := mustSaveRepositories(t, s, c.ID, base, newRepo(newProviderID(), "!early"))
	rest, next, err := s.SCM.ListRepositories(ctx, owner, ports.Page{Limit: 200, Cursor: cursor})
	if err != nil || next != "" {
		t.Fatalf("ListRepositories after the first page = next %q, %v", next, err)
	}
	checkRepositories(t, "ListRepositories after the first page", rest, append(slices.Clone(want[4:]), late...))
	if slices.ContainsFunc(rest, func(r ports.Repository) bool { return r.ID == early[0].ID }) {
		t.Errorf("ListRepositories after the first page lists a repository sorting before it")
	}

	empty, next, err := s.SCM.ListRepositories(ctx, seedOwner(t, s.Identity), ports.Page{})
	if err != nil || len(empty) != 0 || next != "" {
		t.Errorf("ListRepositories of an owner without repositories = %d, %q, %v; want none", len(empty), next, err)
	}
}

func testListRepositoriesLimits(t *testing.T, s scmStores) {
	ctx := t.Context()
	owner, c := newConnected(t, s)
	repos := make([]ports.Repository, 201)
	for i := range repos {
		repos[i] = newRepo(newProviderID(), fmt.Sprintf("acme/repo-%03d", (i*37)%len(repos)))
	}
	want := byFullName(mustSaveRepositories(t, s, c.ID, base, repos...))
	for _, tc := range []struct {
		limit, want int
	}{
		{0, 50}, {-1, 50}, {1, 1}, {200, 200}, {201, 200}, {10_000, 200},
	} {
		page, next, err := s.SCM.ListRepositories(ctx, owner, ports.Page{Limit: tc.limit})
		if err != nil {
			t.Fatalf("ListRepositories(limit %d): %v", tc.limit, err)
		}
		if len(page) != tc.want || next == "" {
			t.Errorf("ListRepositories(limit %d) = %d repositories, next %q; want %d and a next cursor", tc.limit, len(page), next, tc.want)
		}
	}
	all, sizes := listAllRepositories(t, s, owner, 0)
	checkEqual(t, "sizes of the default pages", sizes, []int{50, 50, 50, 50, 1})
	checkRepositories(t, "default pages of ListRepositories", all, want)
}

func testListRepositoriesMalformedCursor(t *testing.T, s scmStores) {
	owner, c := newConnected(t, s)
	mustSaveRepositories(t, s, c.ID, base, newRepo(newProviderID(), "acme/api"), newRepo(newProviderID(), "acme/web"))
	for _, cursor := range malformedCursors() {
		_, _, err := s.SCM.ListRepositories(t.Context(), owner, ports.Page{Cursor: cursor})
		checkInvalidField(t, fmt.Sprintf("ListRepositories(cursor %q)", cursor), err, "cursor")
	}
}

// testRaceSaveRepositories saves one connection's repositories from many
// callers at once, each in its own order and with its own new ids: all
// succeed, and each provider repository is stored once, with one id.
func testRaceSaveRepositories(t *testing.T, s scmStores) {
	owner, c := newConnected(t, s)
	providerIDs := []int64{newProviderID(), newProviderID(), newProviderID(), newProviderID(), newProviderID()}
	calls := make([][]ports.Repository, 20)
	for i := range calls {
		for _, k := range rand.Perm(len(providerIDs)) {
			calls[i] = append(calls[i], newRepo(providerIDs[k], fmt.Sprintf("acme/repo-%d", k)))
		}
	}
	got := make([][]ports.Repository, len(calls))
	errs := race(len(calls), func(i int) error {
		var err error
		got[i], err = s.SCM.SaveRepositories(t.Context(), c.ID, calls[i], base.Add(time.Duration(i)*time.Second))
		return err
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("SaveRepositories %d: %v", i, err)
		}
	}
	list := mustListRepositories(t, s, owner)
	if len(list) != len(providerIDs) {
		t.Fatalf("ListRepositories after the race = %d repositories, want %d", len(list), len(providerIDs))
	}
	ids := map[int64]string{}
	for _, r := range list {
		ids[r.ProviderID] = r.ID
	}
	for i, repos := range got {
		for j, r := range repos {
			if r.ProviderID != calls[i][j].ProviderID || r.ID != ids[r.ProviderID] {
				t.Errorf("SaveRepositories %d returned %s (provider %d) at %d, want id %s of provider %d",
					i, r.ID, r.ProviderID, j, ids[calls[i][j].ProviderID], calls[i][j].ProviderID)
			}
		}
	}
}

func newDelivery(event string, payload []byte) ports.WebhookDelivery {
	return ports.WebhookDelivery{ID: newID(), Event: event, Payload: payload, Status: ports.DeliveryPending, ReceivedAt: base}
}

func mustRecordDelivery(t *testing.T, s scmStores, d ports.WebhookDelivery) ports.WebhookDelivery {
	t.Helper()
	ok, err := s.SCM.RecordDelivery(t.Context(), d)
	if err != nil || !ok {
		t.Fatalf("RecordDelivery = %v, %v; want true, nil", ok, err)
	}
	return d
}

func mustGetDelivery(t *testing.T, s scmStores, id string) ports.WebhookDelivery {
	t.Helper()
	d, err := s.SCM.GetDelivery(t.Context(), id)
	if err != nil {
		t.Fatalf("GetDelivery: %v", err)
	}
	return d
}

// checkDelivery compares payloads byte for byte (an empty one may read back
// nil or empty), and the rest as usual.
func checkDelivery(t *testing.T, what string, got, want ports.WebhookDelivery) {
	t.Helper()
	checkUTC(t, what, &got.ReceivedAt, got.ProcessedAt)
	if !bytes.Equal(got.Payload, want.Payload) {
		t.Errorf("%s: payload of %d bytes differs from the %d bytes recorded", what, len(got.Payload), len(want.Payload))
	}
	got.Payload, want.Payload = nil, nil
	got.ReceivedAt, got.ProcessedAt = ms(got.ReceivedAt), msPtr(got.ProcessedAt)
	want.ReceivedAt, want.ProcessedAt = ms(want.ReceivedAt), msPtr(want.ProcessedAt)
	checkEqual(t, what, got, want)
}

// binaryPayload is n bytes of every value, invalid UTF-8 and NULs included.
func binaryPayload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/256)
	}
	return b
}

func testDeliveryRoundTrip(t *testing.T, s scmStores) {
	ctx := t.Context()
	push := mustRecordDelivery(t, s, newDelivery("push", []byte(`{"ref":"refs/heads/main","after":"`+newID()+`", "x": "«ü»"}`+"\n")))
	checkDelivery(t, "GetDelivery of a push", mustGetDelivery(t, s, push.ID), push)
	big := mustRecordDelivery(t, s, newDelivery("release", binaryPayload(1<<20+3)))
	checkDelivery(t, "GetDelivery of a binary payload of 1 MiB", mustGetDelivery(t, s, big.ID), big)
	empty := mustRecordDelivery(t, s, newDelivery("ping", nil))
	checkDelivery(t, "GetDelivery of an empty payload", mustGetDelivery(t, s, empty.ID), empty)

	bare := newDelivery("pull_request", []byte("{}"))
	bare.Status = ""
	mustRecordDelivery(t, s, bare)
	want := bare
	want.Status = ports.DeliveryPending
	checkDelivery(t, "GetDelivery of a delivery recorded without status", mustGetDelivery(t, s, bare.ID), want)

	done := newDelivery("star", []byte(`{"action":"created"}`))
	done.Status, done.Error, done.ProcessedAt = ports.DeliveryIgnored, "event not used", ptr(base.Add(time.Second))
	mustRecordDelivery(t, s, done)
	checkDelivery(t, "GetDelivery of a delivery recorded processed", mustGetDelivery(t, s, done.ID), done)

	for _, status := range []string{"done", "PENDING", "expired"} {
		bad := newDelivery("push", []byte("{}"))
		bad.Status = status
		ok, err := s.SCM.RecordDelivery(ctx, bad)
		checkInvalidField(t, fmt.Sprintf("RecordDelivery with status %q", status), err, "status")
		if ok {
			t.Errorf("RecordDelivery with status %q reported it stored", status)
		}
		_, err = s.SCM.GetDelivery(ctx, bad.ID)
		checkNotFound(t, "GetDelivery of a refused delivery", err, "webhook delivery", bad.ID)
	}
	missing := newID()
	_, err := s.SCM.GetDelivery(ctx, missing)
	checkNotFound(t, "GetDelivery of a missing delivery", err, "webhook delivery", missing)
}

func testRecordDeliveryTwice(t *testing.T, s scmStores) {
	ctx := t.Context()
	first := mustRecordDelivery(t, s, newDelivery("push", binaryPayload(4096)))
	for name, d := range map[string]ports.WebhookDelivery{
		"another payload":  {ID: first.ID, Event: "push", Payload: []byte(`{"forged":true}`), ReceivedAt: base.Add(time.Minute)},
		"no payload":       {ID: first.ID, Event: "push", ReceivedAt: base.Add(time.Minute)},
		"another event":    {ID: first.ID, Event: "issues", Payload: first.Payload, ReceivedAt: base.Add(time.Minute)},
		"a longer payload": {ID: first.ID, Event: "push", Payload: append(slices.Clone(first.Payload), 0), ReceivedAt: base},
		"a final status":   {ID: first.ID, Event: "push", Payload: first.Payload, Status: ports.DeliveryProcessed, ProcessedAt: ptr(base), ReceivedAt: base},
	} {
		ok, err := s.SCM.RecordDelivery(ctx, d)
		if err != nil || ok {
			t.Errorf("RecordDelivery again with %s = %v, %v; want false, nil", name, ok, err)
		}
	}
	checkDelivery(t, "GetDelivery after recording it again", mustGetDelivery(t, s, first.ID), first)

	// A repeat after processing leaves it processed.
	if err := s.SCM.FinishDelivery(ctx, first.ID, ports.DeliveryProcessed, "", base.Add(time.Hour)); err != nil {
		t.Fatalf("FinishDelivery: %v", err)
	}
	ok, err := s.SCM.RecordDelivery(ctx, newDelivery("push", nil))
	if err != nil || !ok {
		t.Errorf("RecordDelivery of another id = %v, %v; want true, nil", ok, err)
	}
	again := first
	again.Payload = []byte("{}")
	if ok, err := s.SCM.RecordDelivery(ctx, again); err != nil || ok {
		t.Errorf("RecordDelivery of a processed delivery = %v, %v; want false, nil", ok, err)
	}
	want := first
	want.Status, want.ProcessedAt = ports.DeliveryProcessed, ptr(base.Add(time.Hour))
	checkDelivery(t, "GetDelivery of a processed delivery recorded again", mustGetDelivery(t, s, first.ID), want)
}

// testRaceRecordDelivery records one delivery id from many callers at once,
// as a provider's retries might: exactly one stores it, and its payload is
// the one kept.
func testRaceRecordDelivery(t *testing.T, s scmStores) {
	id := newID()
	deliveries := make([]ports.WebhookDelivery, 20)
	for i := range deliveries {
		deliveries[i] = newDelivery("push", []byte(fmt.Sprintf(`{"attempt":%d,"pad":"%s"}`, i, strings.Repeat("x", i*100))))
		deliveries[i].ID = id
	}
	ok := make([]bool, len(deliveries))
	errs := race(len(deliveries), func(i int) error {
		var err error
		ok[i], err = s.SCM.RecordDelivery(t.Context(), deliveries[i])
		return err
	})
	winner := -1
	for i, err := range errs {
		switch {
		case err != nil:
			t.Errorf("RecordDelivery %d: %v", i, err)
		case ok[i] && winner < 0:
			winner = i
		case ok[i]:
			t.Errorf("RecordDelivery %d and %d both stored the delivery", winner, i)
		}
	}
	if winner < 0 {
		t.Fatalf("no concurrent RecordDelivery stored the delivery")
	}
	checkDelivery(t, "GetDelivery after the race", mustGetDelivery(t, s, id), deliveries[winner])
}

func mustRecordDeliveries(t *testing.T, s scmStores, ctx context.Context, ds ...ports.WebhookDelivery) []bool {
	t.Helper()
	stored, err := s.SCM.RecordDeliveries(ctx, ds)
	if err != nil || len(stored) != len(ds) {
		t.Fatalf("RecordDeliveries of %d = %v, %v", len(ds), stored, err)
	}
	return stored
}

// testRecordDeliveries records a batch of new deliveries, one stored before
// and one twice: each is reported, and the first of an id is the one kept.
func testRecordDeliveries(t *testing.T, s scmStores) {
	ctx := t.Context()
	if stored, err := s.SCM.RecordDeliveries(ctx, nil); err != nil || len(stored) != 0 {
		t.Errorf("RecordDeliveries of none = %v, %v", stored, err)
	}
	before := mustRecordDelivery(t, s, newDelivery("push", []byte(`{"before":true}`)))
	a := newDelivery("push", []byte(`{"a":1}`))
	b := newDelivery("issues", nil)
	b.Status = ""
	c := newDelivery("star", binaryPayload(3000))
	c.Status, c.Error, c.ProcessedAt = ports.DeliveryFailed, "bad payload", ptr(base.Add(time.Second))
	againBefore := before
	againBefore.Payload = []byte(`{"forged":true}`)
	againA := a
	againA.Event, againA.Payload = "pull_request", []byte(`{"a":2}`)
	got := mustRecordDeliveries(t, s, ctx, a, againBefore, b, againA, c, againA)
	if want := []bool{true, false, true, false, true, false}; !slices.Equal(got, want) {
		t.Errorf("RecordDeliveries = %v, want %v", got, want)
	}
	checkDelivery(t, "GetDelivery of the first of an id given twice", mustGetDelivery(t, s, a.ID), a)
	checkDelivery(t, "GetDelivery of a delivery stored before the batch", mustGetDelivery(t, s, before.ID), before)
	wantB := b
	wantB.Status = ports.DeliveryPending
	checkDelivery(t, "GetDelivery of a delivery without status", mustGetDelivery(t, s, b.ID), wantB)
	checkDelivery(t, "GetDelivery of a delivery recorded failed", mustGetDelivery(t, s, c.ID), c)

	if got := mustRecordDeliveries(t, s, ctx, c, b, a); !slices.Equal(got, []bool{false, false, false}) {
		t.Errorf("RecordDeliveries of the batch again = %v, want none stored", got)
	}
	if ok, err := s.SCM.RecordDelivery(ctx, againA); err != nil || ok {
		t.Errorf("RecordDelivery of an id a batch stored = %v, %v; want false, nil", ok, err)
	}
}

// testRecordDeliveriesAllOrNothing fails a batch for one unknown status, and
// rolls back a transaction a batch was recorded in: neither stores any.
func testRecordDeliveriesAllOrNothing(t *testing.T, s scmStores) {
	ctx := t.Context()
	first, second := newDelivery("push", []byte("{}")), newDelivery("push", []byte("{}"))
	bad := newDelivery("push", []byte("{}"))
	bad.Status = "done"
	stored, err := s.SCM.RecordDeliveries(ctx, []ports.WebhookDelivery{first, bad, second})
	checkInvalidField(t, "RecordDeliveries with an unknown status", err, "status")
	if slices.Contains(stored, true) {
		t.Errorf("RecordDeliveries with an unknown status reported %v", stored)
	}
	for _, d := range []ports.WebhookDelivery{first, bad, second} {
		_, err := s.SCM.GetDelivery(ctx, d.ID)
		checkNotFound(t, "GetDelivery of a delivery of a refused batch", err, "webhook delivery", d.ID)
	}

	err = s.Tx.WithinTx(ctx, func(ctx context.Context) error {
		if got := mustRecordDeliveries(t, s, ctx, first, second); !slices.Equal(got, []bool{true, true}) {
			t.Errorf("RecordDeliveries in a transaction = %v", got)
		}
		if _, err := s.SCM.GetDelivery(ctx, second.ID); err != nil {
			t.Errorf("GetDelivery inside the transaction: %v", err)
		}
		return errAbort
	})
	if !errors.Is(err, errAbort) {
		t.Fatalf("WithinTx = %v, want fn's error", err)
	}
	for _, d := range []ports.WebhookDelivery{first, second} {
		_, err := s.SCM.GetDelivery(ctx, d.ID)
		checkNotFound(t, "GetDelivery after rollback", err, "webhook delivery", d.ID)
	}
	if got := mustRecordDeliveries(t, s, ctx, second, first); !slices.Equal(got, []bool{true, true}) {
		t.Errorf("RecordDeliveries after rollback = %v, want both stored", got)
	}
}

// testRecordDeliveriesBigBatch records more deliveries than one statement
// holds, some stored before and some twice.
func testRecordDeliveriesBigBatch(t *testing.T, s scmStores) {
	ctx := t.Context()
	const n = 5000
	ds := make([]ports.WebhookDelivery, 0, n+2)
	for i := range n {
		ds = append(ds, newDelivery("push", []byte(fmt.Sprintf(`{"n":%d}`, i))))
	}
	mustRecordDelivery(t, s, ds[10])
	mustRecordDelivery(t, s, ds[n-10])
	ds = append(ds, ds[7], ds[n-7])
	got := mustRecordDeliveries(t, s, ctx, ds...)
	for i, ok := range got {
		want := i < n && i != 10 && i != n-10
		if ok != want {
			t.Errorf("RecordDeliveries[%d] = %v, want %v", i, ok, want)
		}
	}
	for _, i := range []int{0, 7, 4284, 4285, 4286, n - 7, n - 1} {
		checkDelivery(t, fmt.Sprintf("GetDelivery of delivery %d of a big batch", i), mustGetDelivery(t, s, ds[i].ID), ds[i])
	}
}

// testRaceRecordDeliveries records batches sharing ids, in different
// orders, at once: none fails (no deadlock), and each id is reported stored
// by exactly one.
func testRaceRecordDeliveries(t *testing.T, s scmStores) {
	ids := make([]string, 30)
	for i := range ids {
		ids[i] = newID()
	}
	const callers = 8
	batches := make([][]ports.WebhookDelivery, callers)
	for c := range batches {
		for _, i := range rand.Perm(len(ids)) {
			d := newDelivery("push", []byte(fmt.Sprintf(`{"caller":%d}`, c)))
			d.ID = ids[i]
			batches[c] = append(batches[c], d)
		}
	}
	stored := make([][]bool, callers)
	errs := race(callers, func(c int) error {
		var err error
		stored[c], err = s.SCM.RecordDeliveries(t.Context(), batches[c])
		return err
	})
	winners := map[string]int{}
	for c, err := range errs {
		if err != nil {
			t.Errorf("RecordDeliveries %d: %v", c, err)
			continue
		}
		for i, ok := range stored[c] {
			if ok {
				winners[batches[c][i].ID]++
				checkDelivery(t, "GetDelivery after the race", mustGetDelivery(t, s, batches[c][i].ID), batches[c][i])
			}
		}
	}
	for _, id := range ids {
		if winners[id] != 1 && !t.Failed() {
			t.Errorf("delivery %s reported stored %d times, want once", id, winners[id])
		}
	}
}

func testFinishDelivery(t *testing.T, s scmStores) {
	ctx := t.Context()
	for i, tc := range []struct {
		status, errMsg string
	}{
		{ports.DeliveryProcessed, ""},
		{ports.DeliveryIgnored, "event \"star\" is not used"},
		{ports.DeliveryFailed, "internal: «database error»\nretry 3"},
	} {
		d := mustRecordDelivery(t, s, newDelivery("push", binaryPayload(300)))
		at := base.Add(time.Duration(i+1) * time.Minute)
		if err := s.SCM.FinishDelivery(ctx, d.ID, tc.status, tc.errMsg, at); err != nil {
			t.Fatalf("FinishDelivery(%s): %v", tc.status, err)
		}
		want := d
		want.Status, want.Error, want.ProcessedAt = tc.status, tc.errMsg, &at
		checkDelivery(t, "GetDelivery after FinishDelivery("+tc.status+")", mustGetDelivery(t, s, d.ID), want)

		// A retried job finishes it again.
		later := at.Add(time.Hour)
		if err := s.SCM.FinishDelivery(ctx, d.ID, ports.DeliveryProcessed, "", later); err != nil {
			t.Fatalf("FinishDelivery again: %v", err)
		}
		want.Status, want.Error, want.ProcessedAt = ports.DeliveryProcessed, "", &later
		checkDelivery(t, "GetDelivery after FinishDelivery twice", mustGetDelivery(t, s, d.ID), want)

		for _, status := range []string{ports.DeliveryPending, "", "done", "Processed"} {
			err := s.SCM.FinishDelivery(ctx, d.ID, status, "x", base.Add(48*time.Hour))
			checkInvalidField(t, fmt.Sprintf("FinishDelivery with status %q", status), err, "status")
		}
		checkDelivery(t, "GetDelivery after invalid FinishDelivery calls", mustGetDelivery(t, s, d.ID), want)
	}
	missing := newID()
	checkNotFound(t, "FinishDelivery of a missing delivery",
		s.SCM.FinishDelivery(ctx, missing, ports.DeliveryProcessed, "", base), "webhook delivery", missing)
}

// testGetDeliveries reads several deliveries at once: in the order asked,
// each once, without those missing.
func testGetDeliveries(t *testing.T, s scmStores) {
	ctx := t.Context()
	d1 := mustRecordDelivery(t, s, newDelivery("push", binaryPayload(300)))
	d2 := mustRecordDelivery(t, s, newDelivery("ping", nil))
	d3 := mustRecordDelivery(t, s, newDelivery("pull_request", []byte(`{"action":"opened"}`)))
	at := base.Add(time.Minute)
	if err := s.SCM.FinishDelivery(ctx, d2.ID, ports.DeliveryIgnored, "", at); err != nil {
		t.Fatal(err)
	}
	d2.Status, d2.ProcessedAt = ports.DeliveryIgnored, &at
	got, err := s.SCM.GetDeliveries(ctx, []string{d3.ID, newID(), d1.ID, d3.ID, d2.ID})
	if err != nil {
		t.Fatalf("GetDeliveries: %v", err)
	}
	want := []ports.WebhookDelivery{d3, d1, d2}
	if len(got) != len(want) {
		t.Fatalf("GetDeliveries = %d deliveries, want %d", len(got), len(want))
	}
	for i := range want {
		checkDelivery(t, fmt.Sprintf("GetDeliveries[%d]", i), got[i], want[i])
	}
	for _, ids := range [][]string{nil, {}, {newID(), newID()}} {
		if got, err := s.SCM.GetDeliveries(ctx, ids); err != nil || len(got) != 0 {
			t.Errorf("GetDeliveries(%q) = %d deliveries, %v; want none", ids, len(got), err)
		}
	}
}

// testFinishDeliveries finishes several deliveries at once, each with its
// outcome, skipping those missing; a retry finishes them again; an unknown
// status finishes none.
func testFinishDeliveries(t *testing.T, s scmStores) {
	ctx := t.Context()
	var ds []ports.WebhookDelivery
	for range 4 {
		ds = append(ds, mustRecordDelivery(t, s, newDelivery("push", binaryPayload(200))))
	}
	outcomes := []ports.DeliveryFinish{
		{ID: ds[0].ID, Status: ports.DeliveryProcessed},
		{ID: newID(), Status: ports.DeliveryProcessed}, // missing
		{ID: ds[1].ID, Status: ports.DeliveryIgnored},
		{ID: ds[2].ID, Status: ports.DeliveryFailed, Error: "push payload lacks ref\n«x»"},
		{ID: ds[3].ID, Status: ports.DeliveryFailed, Error: "first"},
		{ID: ds[3].ID, Status: ports.DeliveryProcessed}, // the last outcome counts
	}
	at := base.Add(time.Minute)
	if err := s.SCM.FinishDeliveries(ctx, outcomes, at); err != nil {
		t.Fatalf("FinishDeliveries: %v", err)
	}
	want := slices.Clone(ds)
	for i, o := range []ports.DeliveryFinish{outcomes[0], outcomes[2], outcomes[3], outcomes[5]} {
		want[i].Status, want[i].Error, want[i].ProcessedAt = o.Status, o.Error, &at
	}
	for i := range want {
		checkDelivery(t, fmt.Sprintf("delivery %d after FinishDeliveries", i), mustGetDelivery(t, s, ds[i].ID), want[i])
	}

	// A retried batch finishes them again.
	later := at.Add(time.Hour)
	if err := s.SCM.FinishDeliveries(ctx, []ports.DeliveryFinish{{ID: ds[2].ID, Status: ports.DeliveryProcessed}, {ID: ds[0].ID, Status: ports.DeliveryProcessed}}, later); err != nil {
		t.Fatalf("FinishDeliveries again: %v", err)
	}
	want[0].ProcessedAt = &later
	want[2].Status, want[2].Error, want[2].ProcessedAt = ports.DeliveryProcessed, "", &later

	for _, status := range []string{ports.DeliveryPending, "", "done", "Processed"} {
		err := s.SCM.FinishDeliveries(ctx, []ports.DeliveryFinish{{ID: ds[1].ID, Status: ports.DeliveryFailed}, {ID: ds[3].ID, Status: status}}, base.Add(48*time.Hour))
		checkInvalidField(t, fmt.Sprintf("FinishDeliveries with status %q", status), err, "status")
	}
	if err := s.SCM.FinishDeliveries(ctx, nil, base); err != nil {
		t.Errorf("FinishDeliveries of none: %v", err)
	}
	for i := range want {
		checkDelivery(t, fmt.Sprintf("delivery %d after FinishDeliveries again", i), mustGetDelivery(t, s, ds[i].ID), want[i])
	}
}

// testFinishDeliveriesBigBatch finishes a large batch with several outcomes
// (on SQL, several statements in one transaction).
func testFinishDeliveriesBigBatch(t *testing.T, s scmStores) {
	ctx := t.Context()
	const n = 2500
	ds := make([]ports.WebhookDelivery, n)
	for i := range ds {
		ds[i] = newDelivery("push", []byte(`{}`))
	}
	mustRecordDeliveries(t, s, ctx, ds...)
	fs := make([]ports.DeliveryFinish, n)
	statuses := []string{ports.DeliveryProcessed, ports.DeliveryIgnored, ports.DeliveryFailed}
	ids := make([]string, n)
	for i, d := range ds {
		fs[i] = ports.DeliveryFinish{ID: d.ID, Status: statuses[i%3]}
		if fs[i].Status == ports.DeliveryFailed {
			fs[i].Error = fmt.Sprint("reason ", i%7)
		}
		ids[i] = d.ID
	}
	at := base.Add(time.Minute)
	if err := s.SCM.FinishDeliveries(ctx, fs, at); err != nil {
		t.Fatalf("FinishDeliveries: %v", err)
	}
	got, err := s.SCM.GetDeliveries(ctx, ids)
	if err != nil || len(got) != n {
		t.Fatalf("GetDeliveries = %d deliveries, %v; want %d", len(got), err, n)
	}
	for i, d := range got {
		if d.ID != ids[i] || d.Status != fs[i].Status || d.Error != fs[i].Error || d.ProcessedAt == nil || !ms(*d.ProcessedAt).Equal(ms(at)) {
			t.Fatalf("delivery %d = %s %s %q at %v, want %s %s %q at %v", i, d.ID, d.Status, d.Error, d.ProcessedAt, ids[i], fs[i].Status, fs[i].Error, at)
		}
	}
}

func newActivity(repoID int64, at time.Time) ports.SCMActivity {
	id := newID()
	return ports.SCMActivity{
		ID: "evt-" + id, RepoID: repoID, Kind: "push", Action: "", Actor: "octocat", Ref: "refs/heads/main",
		Summary: "3 commits: «fix ✓»", URL: "https://github.com/acme/api/compare/a...b", SHA: digestOf(id)[:40], At: at,
		Source: "webhook", DeliveryID: newID(),
	}
}

func mustAppendActivity(t *testing.T, s scmStores, entries ...ports.SCMActivity) []ports.SCMActivity {
	t.Helper()
	if err := s.SCM.AppendActivity(t.Context(), entries...); err != nil {
		t.Fatalf("AppendActivity: %v", err)
	}
	return entries
}

func mustListActivity(t *testing.T, s scmStores, repoID int64) []ports.SCMActivity {
	t.Helper()
	list, next, err := s.SCM.ListActivity(t.Context(), repoID, ports.Page{Limit: 200})
	if err != nil {
		t.Fatalf("ListActivity: %v", err)
	}
	if next != "" {
		t.Fatalf("ListActivity: more than one page")
	}
	return list
}

func checkActivity(t *testing.T, what string, got, want []ports.SCMActivity) {
	t.Helper()
	norm := func(entries []ports.SCMActivity) []ports.SCMActivity {
		out := make([]ports.SCMActivity, len(entries))
		for i, e := range entries {
			e.At = ms(e.At)
			out[i] = e
		}
		return out
	}
	for _, e := range got {
		checkUTC(t, what, &e.At)
	}
	if len(got) == 0 && len(want) == 0 {
		return
	}
	checkEqual(t, what, norm(got), norm(want))
}

// activityNewestFirst sorts entries as ListActivity lists them.
func activityNewestFirst(entries []ports.SCMActivity) []ports.SCMActivity {
	entries = slices.Clone(entries)
	slices.SortFunc(entries, func(a, b ports.SCMActivity) int {
		if c := ms(b.At).Compare(ms(a.At)); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return entries
}

func testActivityRoundTrip(t *testing.T, s scmStores) {
	ctx := t.Context()
	repo, other := newProviderID(), newProviderID()
	push := newActivity(repo, base)
	merged := newActivity(repo, base.Add(time.Minute))
	merged.Kind, merged.Action, merged.Actor, merged.Ref, merged.URL = "pull_request", "merged", "hubot", "feature/«x»", "https://github.com/acme/api/pull/7"
	api := newActivity(repo, base.Add(-time.Hour))
	api.Kind, api.Source, api.DeliveryID, api.Summary, api.Ref = "release", "api", "", "", ""
	mustAppendActivity(t, s, push, merged, api)
	theirs := mustAppendActivity(t, s, newActivity(other, base.Add(time.Minute)))
	checkActivity(t, "ListActivity", mustListActivity(t, s, repo), []ports.SCMActivity{merged, push, api})
	checkActivity(t, "ListActivity of another repository", mustListActivity(t, s, other), theirs)
	checkActivity(t, "ListActivity of a repository without activity", mustListActivity(t, s, newProviderID()), nil)
	if err := s.SCM.AppendActivity(ctx); err != nil {
		t.Errorf("AppendActivity of nothing: %v", err)
	}
	if err := s.SCM.AppendActivity(ctx, []ports.SCMActivity{}...); err != nil {
		t.Errorf("AppendActivity of an empty slice: %v", err)
	}
	checkActivity(t, "ListActivity after appending nothing", mustListActivity(t, s, repo), []ports.SCMActivity{merged, push, api})
}

func testAppendActivitySkipsDuplicates(t *testing.T, s scmStores) {
	repo := newProviderID()
	a, b := newActivity(repo, base), newActivity(repo, base.Add(time.Second))
	mustAppendActivity(t, s, a, b)

	// Across calls: a redelivered event, with other fields, keeps the first.
	a2 := newActivity(repo, base.Add(time.Hour))
	a2.ID, a2.Summary, a2.Source = a.ID, "forged", "api"
	c := newActivity(repo, base.Add(2*time.Second))
	mustAppendActivity(t, s, a2, c)
	checkActivity(t, "ListActivity after appending a stored id again", mustListActivity(t, s, repo), []ports.SCMActivity{c, b, a})
	mustAppendActivity(t, s, a, b, c)
	checkActivity(t, "ListActivity after appending only stored ids", mustListActivity(t, s, repo), []ports.SCMActivity{c, b, a})

	// Within one call: the first of two entries with one id is kept.
	d := newActivity(repo, base.Add(3*time.Second))
	d2 := d
	d2.Summary, d2.At = "second", base.Add(time.Hour)
	e := newActivity(repo, base.Add(4*time.Second))
	mustAppendActivity(t, s, d, e, d2)
	checkActivity(t, "ListActivity after one id twice in one call", mustListActivity(t, s, repo), []ports.SCMActivity{e, d, c, b, a})

	// An id is the entry's, whatever its repository.
	elsewhere := newActivity(newProviderID(), base)
	elsewhere.ID = e.ID
	mustAppendActivity(t, s, elsewhere)
	checkActivity(t, "ListActivity of another repository given a stored id", mustListActivity(t, s, elsewhere.RepoID), nil)
}

// testAppendActivityBigBatch appends more entries than one statement of
// either database takes, with a duplicate id across the statements.
func testAppendActivityBigBatch(t *testing.T, s scmStores) {
	repo := newProviderID()
	entries := make([]ports.SCMActivity, 3100)
	for i := range entries {
		entries[i] = newActivity(repo, base.Add(time.Duration(i%13)*time.Second))
	}
	dup := entries[5]
	dup.Summary = "duplicate"
	if err := s.SCM.AppendActivity(t.Context(), append(slices.Clone(entries), dup)...); err != nil {
		t.Fatalf("AppendActivity of %d entries: %v", len(entries)+1, err)
	}
	all, sizes := listAllActivity(t, s, repo, 200)
	if len(sizes) != 16 {
		t.Errorf("ListActivity of %d entries in pages of 200 = %d pages, want 16", len(entries), len(sizes))
	}
	checkActivity(t, "ListActivity after a big batch", all, activityNewestFirst(entries))
}

// listAllActivity follows the pages of ListActivity of the size given and
// returns the entries and the page sizes.
func listAllActivity(t *testing.T, s scmStores, repoID int64, limit int) ([]ports.SCMActivity, []int) {
	t.Helper()
	var all []ports.SCMActivity
	var sizes []int
	cursor := ""
	for range 300 {
		page, next, err := s.SCM.ListActivity(t.Context(), repoID, ports.Page{Limit: limit, Cursor: cursor})
		if err != nil {
			t.Fatalf("ListActivity(cursor %q): %v", cursor, err)
		}
		all = append(all, page...)
		sizes = append(sizes, len(page))
		if next == "" {
			return all, sizes
		}
		cursor = next
	}
	t.Fatalf("ListActivity: pages do not end")
	return nil, nil
}

func testListActivityPages(t *testing.T, s scmStores) {
	ctx := t.Context()
	repo, other := newProviderID(), newProviderID()
	var entries []ports.SCMActivity
	// Seconds after base in no order; ties that only the id orders span pages.
	for _, seconds := range []int{2, 0, 3, 2, 2, 1, 2, 0, 5, 2} {
		e := newActivity(repo, base.Add(time.Duration(seconds)*time.Second))
		entries = append(entries, e)
		mustAppendActivity(t, s, e, newActivity(other, e.At))
	}
	want := activityNewestFirst(entries)
	for _, tc := range []struct {
		limit int
		sizes []int
	}{
		{3, []int{3, 3, 3, 1}}, {2, []int{2, 2, 2, 2, 2}}, {1, []int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}}, {10, []int{10}},
	} {
		got, sizes := listAllActivity(t, s, repo, tc.limit)
		what := fmt.Sprintf("pages of %d of ListActivity", tc.limit)
		checkEqual(t, what+": sizes", sizes, tc.sizes)
		checkActivity(t, what, got, want)
	}

	// A cursor continues after its entry, and pages after it do not see
	// entries appended since at a later time.
	first, cursor, err := s.SCM.ListActivity(ctx, repo, ports.Page{Limit: 4})
	if err != nil || len(first) != 4 || cursor == "" {
		t.Fatalf("ListActivity(limit 4) = %d entries, next %q, %v", len(first), cursor, err)
	}
	mustAppendActivity(t, s, newActivity(repo, base.Add(time.Hour)))
	rest, next, err := s.SCM.ListActivity(ctx, repo, ports.Page{Limit: 200, Cursor: cursor})
	if err != nil || next != "" {
		t.Fatalf("ListActivity after the first page = next %q, %v", next, err)
	}
	checkActivity(t, "ListActivity after the first page", rest, want[4:])
}

func testListActivityLimits(t *testing.T, s scmStores) {
	ctx := t.Context()
	repo := newProviderID()
	entries := make([]ports.SCMActivity, 201)
	for i := range entries {
		entries[i] = newActivity(repo, base.Add(time.Duration(i%7)*time.Second))
	}
	mustAppendActivity(t, s, entries...)
	for _, tc := range []struct {
		limit, want int
	}{
		{0, 50}, {-1, 50}, {1, 1}, {200, 200}, {201, 200}, {10_000, 200},
	} {
		page, next, err := s.SCM.ListActivity(ctx, repo, ports.Page{Limit: tc.limit})
		if err != nil {
			t.Fatalf("ListActivity(limit %d): %v", tc.limit, err)
		}
		if len(page) != tc.want || next == "" {
			t.Errorf("ListActivity(limit %d) = %d entries, next %q; want %d and a next cursor", tc.limit, len(page), next, tc.want)
		}
	}
	all, sizes := listAllActivity(t, s, repo, 0)
	checkEqual(t, "sizes of the default pages", sizes, []int{50, 50, 50, 50, 1})
	checkActivity(t, "default pages of ListActivity", all, activityNewestFirst(entries))
}

func testListActivityMalformedCursor(t *testing.T, s scmStores) {
	owner, c := newConnected(t, s)
	repo := newProviderID()
	mustAppendActivity(t, s, newActivity(repo, base), newActivity(repo, base))
	// A page of repositories continues after a name, not a time.
	mustSaveRepositories(t, s, c.ID, base, newRepo(newProviderID(), "acme/api"), newRepo(newProviderID(), "acme/web"))
	_, repoCursor, err := s.SCM.ListRepositories(t.Context(), owner, ports.Page{Limit: 1})
	if err != nil || repoCursor == "" {
		t.Fatalf("ListRepositories(limit 1) = next %q, %v", repoCursor, err)
	}
	for _, cursor := range append(malformedCursors(), repoCursor) {
		_, _, err := s.SCM.ListActivity(t.Context(), repo, ports.Page{Cursor: cursor})
		checkInvalidField(t, fmt.Sprintf("ListActivity(cursor %q)", cursor), err, "cursor")
	}
}

// testRaceAppendActivity appends overlapping batches from many callers at
// once, as concurrent webhook and API syncs would: every call succeeds and
// each entry is stored once.
func testRaceAppendActivity(t *testing.T, s scmStores) {
	repo := newProviderID()
	entries := make([]ports.SCMActivity, 29)
	for i := range entries {
		entries[i] = newActivity(repo, base.Add(time.Duration(i%4)*time.Second))
	}
	errs := race(20, func(i int) error {
		batch := slices.Clone(entries[i : i+10])
		slices.Reverse(batch)
		return s.SCM.AppendActivity(t.Context(), batch...)
	})
	for i, err := range errs {
		if err != nil {
			t.Errorf("AppendActivity %d: %v", i, err)
		}
	}
	all, _ := listAllActivity(t, s, repo, 200)
	checkActivity(t, "ListActivity after the race", all, activityNewestFirst(entries))
}

// testSCMTxJoins calls every method inside one transaction, checks that the
// reads see the transaction's writes, and that a rollback undoes them.
func testSCMTxJoins(t *testing.T, s scmStores) {
	// A method writing outside the transaction may wait for it forever on a
	// single-writer database: bound the wait.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	owner := seedOwner(t, s.Identity)
	outside := mustCreateOAuthState(t, s, newOAuthState(owner))
	inside := newOAuthState(owner)
	conn := newConnection(owner, "github")
	repo := newRepo(newProviderID(), "acme/api")
	d := newDelivery("push", binaryPayload(100))
	entry := newActivity(repo.ProviderID, base)
	err := s.Tx.WithinTx(ctx, func(ctx context.Context) error {
		var failedErr error
		step := func(what string, err error) bool {
			if err != nil && failedErr == nil {
				t.Errorf("%s inside the transaction: %v", what, err)
				failedErr = err
			}
			return failedErr == nil
		}
		consume := func(state string) error {
			_, err := s.SCM.ConsumeOAuthState(ctx, state, base)
			return err
		}
		saveConn := func() error {
			var err error
			conn, err = s.SCM.SaveConnection(ctx, conn)
			return err
		}
		saveRepos := func() error {
			_, err := s.SCM.SaveRepositories(ctx, conn.ID, []ports.Repository{repo}, base)
			return err
		}
		record := func() error {
			ok, err := s.SCM.RecordDelivery(ctx, d)
			if err == nil && !ok {
				err = errors.New("not stored")
			}
			return err
		}
		_ = step("CreateOAuthState", s.SCM.CreateOAuthState(ctx, inside)) &&
			step("ConsumeOAuthState", consume(inside.State)) &&
			step("ConsumeOAuthState", consume(outside.State)) &&
			step("SaveConnection", saveConn()) &&
			step("MarkConnectionBroken", s.SCM.MarkConnectionBroken(ctx, conn.ID, "revoked", base.Add(time.Minute))) &&
			step("SaveRepositories", saveRepos()) &&
			step("RecordDelivery", record()) &&
			step("FinishDeliveries", s.SCM.FinishDeliveries(ctx, []ports.DeliveryFinish{{ID: d.ID, Status: ports.DeliveryIgnored}}, base.Add(time.Minute))) &&
			step("FinishDelivery", s.SCM.FinishDelivery(ctx, d.ID, ports.DeliveryProcessed, "", base.Add(time.Minute))) &&
			step("AppendActivity", s.SCM.AppendActivity(ctx, entry))
		if failedErr != nil {
			return failedErr
		}
		got, err := s.SCM.GetConnection(ctx, owner, "github")
		if step("GetConnection", err) && got.Status != ports.SCMBroken {
			t.Errorf("GetConnection inside the transaction = %+v, want it broken", got)
		}
		repos, _, err := s.SCM.ListRepositories(ctx, owner, ports.Page{})
		if step("ListRepositories", err) && len(repos) != 1 {
			t.Errorf("ListRepositories inside the transaction = %d repositories, want 1", len(repos))
		}
		if len(repos) == 1 {
			_, err = s.SCM.GetRepository(ctx, owner, repos[0].ID)
			step("GetRepository", err)
		}
		gotD, err := s.SCM.GetDelivery(ctx, d.ID)
		if step("GetDelivery", err) && gotD.Status != ports.DeliveryProcessed {
			t.Errorf("GetDelivery inside the transaction = %+v, want it processed", gotD)
		}
		gotDs, err := s.SCM.GetDeliveries(ctx, []string{d.ID})
		if step("GetDeliveries", err) && (len(gotDs) != 1 || gotDs[0].Status != ports.DeliveryProcessed) {
			t.Errorf("GetDeliveries inside the transaction = %+v, want it processed", gotDs)
		}
		entries, _, err := s.SCM.ListActivity(ctx, repo.ProviderID, ports.Page{})
		if step("ListActivity", err) && len(entries) != 1 {
			t.Errorf("ListActivity inside the transaction = %d entries, want 1", len(entries))
		}
		if failedErr != nil {
			return failedErr
		}
		return errAbort
	})
	if !errors.Is(err, errAbort) {
		t.Fatalf("WithinTx = %v, want fn's error", err)
	}
	_, err = s.SCM.ConsumeOAuthState(t.Context(), inside.State, base)
	checkErr(t, "ConsumeOAuthState of a state created in the rolled back transaction", err, ports.ErrNotFound)
	got, err := s.SCM.ConsumeOAuthState(t.Context(), outside.State, base)
	if err != nil {
		t.Errorf("ConsumeOAuthState of a state consumed in the rolled back transaction: %v", err)
	} else {
		checkOAuthState(t, "ConsumeOAuthState after rollback", got, outside)
	}
	_, err = s.SCM.GetConnection(t.Context(), owner, "github")
	checkErr(t, "GetConnection after rollback", err, ports.ErrNotFound)
	checkRepositories(t, "ListRepositories after rollback", mustListRepositories(t, s, owner), nil)
	_, err = s.SCM.GetDelivery(t.Context(), d.ID)
	checkNotFound(t, "GetDelivery after rollback", err, "webhook delivery", d.ID)
	checkActivity(t, "ListActivity after rollback", mustListActivity(t, s, repo.ProviderID), nil)
}

// PruneRepositories deletes what a later save did not touch, of that
// connection only.
func testPruneRepositories(t *testing.T, s scmStores) {
	ctx := t.Context()
	owner, c := newConnected(t, s)
	other, oc := newConnected(t, s)
	gone, stays := newRepo(newProviderID(), "acme/gone"), newRepo(newProviderID(), "acme/stays")
	first := mustSaveRepositories(t, s, c.ID, base, gone, stays)
	elsewhere := mustSaveRepositories(t, s, oc.ID, base, newRepo(newProviderID(), "other/old"))
	later := base.Add(time.Hour)
	again := mustSaveRepositories(t, s, c.ID, later, first[1])
	n, err := s.SCM.PruneRepositories(ctx, c.ID, later)
	if err != nil || n != 1 {
		t.Fatalf("PruneRepositories = %d, %v; want 1", n, err)
	}
	_, err = s.SCM.GetRepository(ctx, owner, first[0].ID)
	checkNotFound(t, "GetRepository of a pruned repository", err, "repository", first[0].ID)
	checkRepositories(t, "ListRepositories after pruning", mustListRepositories(t, s, owner), again)
	checkRepositories(t, "another connection's repositories", mustListRepositories(t, s, other), elsewhere)
	if n, err := s.SCM.PruneRepositories(ctx, c.ID, later); err != nil || n != 0 {
		t.Fatalf("PruneRepositories again = %d, %v; want 0", n, err)
	}
}

// digestOf is a hex SHA-256, as webhook digests and binding hashes are.
func digestOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func newDigest(at time.Time) ports.WebhookDigest {
	return ports.WebhookDigest{Digest: digestOf(newID()), DeliveryID: newID(), At: at}
}

func mustClaim(t *testing.T, s scmStores, ctx context.Context, since time.Time, ds ...ports.WebhookDigest) []bool {
	t.Helper()
	claimed, err := s.SCM.ClaimWebhookDigests(ctx, ds, since)
	if err != nil || len(claimed) != len(ds) {
		t.Fatalf("ClaimWebhookDigests of %d = %v, %v", len(ds), claimed, err)
	}
	return claimed
}

// testClaimWebhookDigests claims digests new, repeated within a batch,
// recent and older than the window.
func testClaimWebhookDigests(t *testing.T, s scmStores) {
	ctx := t.Context()
	window := 24 * time.Hour
	if got, err := s.SCM.ClaimWebhookDigests(ctx, nil, base); err != nil || len(got) != 0 {
		t.Errorf("ClaimWebhookDigests of none = %v, %v", got, err)
	}
	a, b := newDigest(base), newDigest(base)
	againA := a
	againA.DeliveryID = newID()
	if got := mustClaim(t, s, ctx, base.Add(-window), a, b, againA); !slices.Equal(got, []bool{true, true, false}) {
		t.Errorf("ClaimWebhookDigests = %v, want the first of a digest given twice claimed", got)
	}
	// The same digest under another delivery id: recent, so not claimed,
	// at the window's edge too.
	for _, tc := range []struct {
		name string
		at   time.Time
		want bool
	}{
		{"an hour later", base.Add(time.Hour), false},
		{"at the end of the window", base.Add(window), false},
		{"in another zone", base.UTC().Add(window), false},
		{"just after the window", base.Add(window + time.Millisecond), true},
	} {
		d := newDigest(tc.at)
		d.Digest = b.Digest
		if tc.want {
			d.Digest = a.Digest
		}
		got := mustClaim(t, s, ctx, tc.at.Add(-window), d)
		if got[0] != tc.want {
			t.Errorf("ClaimWebhookDigests %s = %v, want %v", tc.name, got[0], tc.want)
		}
	}
	// A digest claimed again after the window starts a new one from then.
	late := newDigest(base.Add(window + time.Hour))
	late.Digest = a.Digest
	if got := mustClaim(t, s, ctx, late.At.Add(-window), late); got[0] {
		t.Errorf("ClaimWebhookDigests of a digest claimed again just after its window: claimed again")
	}
}

// testClaimWebhookDigestsAllOrNothing rolls back a transaction a claim was
// made in: the digest is new again.
func testClaimWebhookDigestsAllOrNothing(t *testing.T, s scmStores) {
	ctx := t.Context()
	d := newDigest(base)
	err := s.Tx.WithinTx(ctx, func(ctx context.Context) error {
		if got := mustClaim(t, s, ctx, base.Add(-time.Hour), d); !got[0] {
			t.Errorf("ClaimWebhookDigests in a transaction = %v", got)
		}
		if got := mustClaim(t, s, ctx, base.Add(-time.Hour), d); got[0] {
			t.Errorf("ClaimWebhookDigests again in the transaction = %v", got)
		}
		return errAbort
	})
	if !errors.Is(err, errAbort) {
		t.Fatalf("WithinTx = %v, want fn's error", err)
	}
	if got := mustClaim(t, s, ctx, base.Add(-time.Hour), d); !got[0] {
		t.Errorf("ClaimWebhookDigests after rollback = %v, want claimed", got)
	}
}

// testClaimWebhookDigestsBigBatch claims more digests than one statement
// holds, some claimed before and some twice.
func testClaimWebhookDigestsBigBatch(t *testing.T, s scmStores) {
	ctx := t.Context()
	const n = 12000
	since := base.Add(-time.Hour)
	ds := make([]ports.WebhookDigest, 0, n+2)
	for range n {
		ds = append(ds, newDigest(base))
	}
	mustClaim(t, s, ctx, since, ds[10], ds[n-10])
	ds = append(ds, ds[7], ds[n-7])
	got := mustClaim(t, s, ctx, since, ds...)
	for i, ok := range got {
		if want := i < n && i != 10 && i != n-10; ok != want {
			t.Errorf("ClaimWebhookDigests[%d] = %v, want %v", i, ok, want)
		}
	}
}

// testRaceClaimWebhookDigests claims batches sharing digests, in different
// orders, at once: none fails (no deadlock), and each digest is claimed by
// exactly one.
func testRaceClaimWebhookDigests(t *testing.T, s scmStores) {
	digests := make([]string, 30)
	for i := range digests {
		digests[i] = digestOf(newID())
	}
	const callers = 8
	batches := make([][]ports.WebhookDigest, callers)
	for c := range batches {
		for _, i := range rand.Perm(len(digests)) {
			d := newDigest(base)
			d.Digest = digests[i]
			batches[c] = append(batches[c], d)
		}
	}
	claimed := make([][]bool, callers)
	errs := race(callers, func(c int) error {
		var err error
		claimed[c], err = s.SCM.ClaimWebhookDigests(t.Context(), batches[c], base.Add(-time.Hour))
		return err
	})
	winners := map[string]int{}
	for c, err := range errs {
		if err != nil {
			t.Errorf("ClaimWebhookDigests %d: %v", c, err)
			continue
		}
		for i, ok := range claimed[c] {
			if ok {
				winners[batches[c][i].Digest]++
			}
		}
	}
	for _, d := range digests {
		if winners[d] != 1 && !t.Failed() {
			t.Errorf("digest %s claimed %d times, want once", d, winners[d])
		}
	}
}
