package storetest

import (
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// idempotencyStores are the idempotency store under test and the identity
// stores that seed the users owning its keys.
type idempotencyStores struct {
	Idempotency ports.IdempotencyStore
	Identity    identityStores
}

// TestIdempotency runs the contract of ports.IdempotencyStore. newStores is
// called by every subtest (subtests run in parallel) and may return stores
// over a shared database.
//
// Where the port leaves a case open, the suite expects: times read back in
// UTC, at least to the millisecond; an empty Header or Body reads back nil;
// a claim's Response reads back zero; and Begin returns the claim as it
// stored it (Completed false, Response zero, whatever rec held).
func TestIdempotency(t *testing.T, newStores Factory) {
	runSuite(t, view(newStores, Stores.idempotency, needIdempotency), []suiteCase[idempotencyStores]{
		{"BeginClaims", testBeginClaims},
		{"BeginMissingUser", testBeginMissingUser},
		{"CompleteRoundTrip", testCompleteRoundTrip},
		{"CompleteEmptyAndOmitted", testCompleteEmptyAndOmitted},
		{"CompleteErrors", testCompleteErrors},
		{"Release", testRelease},
		{"ReleaseErrors", testReleaseErrors},
		{"BeginReplacesExpired", testBeginReplacesExpired},
		{"IdempotencyOwnerIsolation", testIdempotencyOwnerIsolation},
		{"PruneIdempotency", testPruneIdempotency},
		{"RaceBegin", testRaceBegin},
		{"RaceBeginExpired", testRaceBeginExpired},
	})
}

// newOwner stores a fresh org and user and returns them as an owner.
func newOwner(t *testing.T, s idempotencyStores) ports.IdempotencyOwner {
	t.Helper()
	org := mustCreateOrg(t, s.Identity, newOrg())
	user := mustCreateUser(t, s.Identity, newUser(org.ID))
	return ports.IdempotencyOwner{OrgID: org.ID, UserID: user.ID}
}

// newClaim is a claim of a fresh key, made at base and lapsing a minute later.
func newClaim(owner ports.IdempotencyOwner) ports.IdempotencyRecord {
	key := "key-" + newID()
	hash := sha256.Sum256([]byte("POST /content/briefs " + key))
	return ports.IdempotencyRecord{
		Owner: owner, Key: key, Method: "POST", Route: "/content/:a", RequestHash: hash[:],
		CreatedAt: base, ExpiresAt: base.Add(time.Minute),
	}
}

// claimOf is rec as Begin stores it: in flight, with no response.
func claimOf(rec ports.IdempotencyRecord) ports.IdempotencyRecord {
	rec.Completed, rec.Response = false, ports.IdempotentResponse{}
	return rec
}

func normIdempotency(rec ports.IdempotencyRecord) ports.IdempotencyRecord {
	rec.CreatedAt, rec.ExpiresAt = ms(rec.CreatedAt), ms(rec.ExpiresAt)
	return rec
}

func checkIdempotency(t *testing.T, what string, got, want ports.IdempotencyRecord) {
	t.Helper()
	checkUTC(t, what, &got.CreatedAt, &got.ExpiresAt)
	checkEqual(t, what, normIdempotency(got), normIdempotency(want))
}

// mustBegin calls Begin and fails the test unless it returns an error-free
// result with the claimed flag given.
func mustBegin(t *testing.T, s idempotencyStores, rec ports.IdempotencyRecord, claimed bool) ports.IdempotencyRecord {
	t.Helper()
	got, ok, err := s.Idempotency.Begin(t.Context(), rec)
	if err != nil {
		t.Fatalf("Begin(%s): %v", rec.Key, err)
	}
	if ok != claimed {
		t.Fatalf("Begin(%s) claimed = %v, want %v", rec.Key, ok, claimed)
	}
	return got
}

// storedIdempotency returns the owner's record of key, as a Begin that cannot claim it
// (made at base) sees it.
func storedIdempotency(t *testing.T, s idempotencyStores, owner ports.IdempotencyOwner, key string) ports.IdempotencyRecord {
	t.Helper()
	probe := newClaim(owner)
	probe.Key = key
	probe.Method, probe.Route, probe.RequestHash = "PUT", "/probe", []byte("probe")
	return mustBegin(t, s, probe, false)
}

func mustComplete(t *testing.T, s idempotencyStores, rec ports.IdempotencyRecord, resp ports.IdempotentResponse, expiresAt time.Time) ports.IdempotencyRecord {
	t.Helper()
	if err := s.Idempotency.Complete(t.Context(), rec.Owner, rec.Key, resp, expiresAt); err != nil {
		t.Fatalf("Complete(%s): %v", rec.Key, err)
	}
	rec.Completed, rec.Response, rec.ExpiresAt = true, resp, expiresAt
	return rec
}

func testBeginClaims(t *testing.T, s idempotencyStores) {
	owner := newOwner(t, s)
	rec := newClaim(owner)
	// What Begin ignores: a claim is stored in flight, with no response.
	rec.Completed = true
	rec.Response = ports.IdempotentResponse{Status: 201, Body: []byte("ignored")}
	want := claimOf(rec)
	checkIdempotency(t, "Begin of a free key", mustBegin(t, s, rec, true), want)

	again := newClaim(owner)
	again.Key = rec.Key
	again.CreatedAt = base.Add(30 * time.Second)
	checkIdempotency(t, "Begin of a key in flight", mustBegin(t, s, again, false), want)
	checkIdempotency(t, "the stored claim", storedIdempotency(t, s, owner, rec.Key), want)
}

func testBeginMissingUser(t *testing.T, s idempotencyStores) {
	org := mustCreateOrg(t, s.Identity, newOrg())
	other := mustCreateOrg(t, s.Identity, newOrg())
	user := mustCreateUser(t, s.Identity, newUser(other.ID))
	for _, owner := range []ports.IdempotencyOwner{
		{OrgID: org.ID, UserID: newID()},
		{OrgID: org.ID, UserID: user.ID}, // a user of another org
		{OrgID: newID(), UserID: newID()},
	} {
		_, claimed, err := s.Idempotency.Begin(t.Context(), newClaim(owner))
		checkErr(t, "Begin for a missing user", err, ports.ErrNotFound)
		if claimed {
			t.Errorf("Begin for a missing user claimed the key")
		}
	}
}

func testCompleteRoundTrip(t *testing.T, s idempotencyStores) {
	owner := newOwner(t, s)
	rec := newClaim(owner)
	mustBegin(t, s, rec, true)
	resp := ports.IdempotentResponse{
		Status: 201,
		Header: map[string]string{"Content-Type": "application/json; charset=utf-8", "Location": "/content/briefs/b-1", "ETag": `"1"`},
		Body:   []byte("{\"id\":\"b-1\"}\n\x00\xff"),
	}
	want := mustComplete(t, s, rec, resp, base.Add(24*time.Hour))
	checkIdempotency(t, "Begin of a completed key", storedIdempotency(t, s, owner, rec.Key), want)

	// A completed record is kept until it expires, whatever claims it.
	later := newClaim(owner)
	later.Key, later.CreatedAt = rec.Key, base.Add(time.Hour)
	checkIdempotency(t, "Begin of a completed key after its claim's lease", mustBegin(t, s, later, false), want)
}

func testCompleteEmptyAndOmitted(t *testing.T, s idempotencyStores) {
	owner := newOwner(t, s)
	for _, tc := range []struct {
		name string
		resp ports.IdempotentResponse
		want ports.IdempotentResponse
	}{
		{"no header or body", ports.IdempotentResponse{Status: 204}, ports.IdempotentResponse{Status: 204}},
		{"empty header and body",
			ports.IdempotentResponse{Status: 200, Header: map[string]string{}, Body: []byte{}},
			ports.IdempotentResponse{Status: 200}},
		{"omitted body",
			ports.IdempotentResponse{Status: 200, Header: map[string]string{"Content-Type": "application/json"}, Body: []byte("{}"), BodyOmitted: true},
			ports.IdempotentResponse{Status: 200, Header: map[string]string{"Content-Type": "application/json"}, BodyOmitted: true}},
	} {
		rec := newClaim(owner)
		mustBegin(t, s, rec, true)
		want := mustComplete(t, s, rec, tc.resp, base.Add(time.Hour))
		want.Response = tc.want
		checkIdempotency(t, "record completed with "+tc.name, storedIdempotency(t, s, owner, rec.Key), want)
	}
}

func testCompleteErrors(t *testing.T, s idempotencyStores) {
	ctx := t.Context()
	owner, other := newOwner(t, s), newOwner(t, s)
	resp := ports.IdempotentResponse{Status: 200, Body: []byte("first")}
	at := base.Add(time.Hour)

	checkErr(t, "Complete of a missing key", s.Idempotency.Complete(ctx, owner, "key-"+newID(), resp, at), ports.ErrNotFound)

	rec := newClaim(owner)
	mustBegin(t, s, rec, true)
	checkErr(t, "Complete of another user's key", s.Idempotency.Complete(ctx, other, rec.Key, resp, at), ports.ErrNotFound)
	checkIdempotency(t, "the claim after a refused Complete", storedIdempotency(t, s, owner, rec.Key), claimOf(rec))

	want := mustComplete(t, s, rec, resp, at)
	second := ports.IdempotentResponse{Status: 201, Body: []byte("second")}
	checkErr(t, "Complete twice", s.Idempotency.Complete(ctx, owner, rec.Key, second, at.Add(time.Hour)), ports.ErrConflict)
	checkIdempotency(t, "the record after a second Complete", storedIdempotency(t, s, owner, rec.Key), want)
}

func testRelease(t *testing.T, s idempotencyStores) {
	owner := newOwner(t, s)
	rec := newClaim(owner)
	mustBegin(t, s, rec, true)
	if err := s.Idempotency.Release(t.Context(), owner, rec.Key); err != nil {
		t.Fatalf("Release: %v", err)
	}
	again := newClaim(owner)
	again.Key, again.RequestHash, again.CreatedAt = rec.Key, []byte("another request"), base.Add(time.Second)
	checkIdempotency(t, "Begin after Release", mustBegin(t, s, again, true), claimOf(again))
	checkErr(t, "Complete after Release and no Begin",
		s.Idempotency.Complete(t.Context(), owner, newClaim(owner).Key, ports.IdempotentResponse{Status: 200}, base), ports.ErrNotFound)
}

func testReleaseErrors(t *testing.T, s idempotencyStores) {
	ctx := t.Context()
	owner, other := newOwner(t, s), newOwner(t, s)
	checkErr(t, "Release of a missing key", s.Idempotency.Release(ctx, owner, "key-"+newID()), ports.ErrNotFound)

	inFlight := newClaim(owner)
	mustBegin(t, s, inFlight, true)
	checkErr(t, "Release of another user's key", s.Idempotency.Release(ctx, other, inFlight.Key), ports.ErrNotFound)
	checkIdempotency(t, "the claim after a refused Release", storedIdempotency(t, s, owner, inFlight.Key), claimOf(inFlight))

	done := newClaim(owner)
	mustBegin(t, s, done, true)
	want := mustComplete(t, s, done, ports.IdempotentResponse{Status: 200, Body: []byte("ok")}, base.Add(time.Hour))
	checkErr(t, "Release of a completed key", s.Idempotency.Release(ctx, owner, done.Key), ports.ErrNotFound)
	checkIdempotency(t, "the completed record after Release", storedIdempotency(t, s, owner, done.Key), want)
	if err := s.Idempotency.Release(ctx, owner, inFlight.Key); err != nil {
		t.Errorf("Release: %v", err)
	}
	checkErr(t, "Release twice", s.Idempotency.Release(ctx, owner, inFlight.Key), ports.ErrNotFound)
}

func testBeginReplacesExpired(t *testing.T, s idempotencyStores) {
	owner := newOwner(t, s)
	abandoned := newClaim(owner) // in flight until base + 1 minute
	mustBegin(t, s, abandoned, true)
	done := newClaim(owner)
	mustBegin(t, s, done, true)
	completed := mustComplete(t, s, done, ports.IdempotentResponse{Status: 201, Body: []byte("first")}, base.Add(time.Hour))

	for _, tc := range []struct {
		name    string
		old     ports.IdempotencyRecord
		expires time.Time
	}{
		{"an abandoned claim", claimOf(abandoned), abandoned.ExpiresAt},
		{"a completed record", completed, completed.ExpiresAt},
	} {
		early := newClaim(owner)
		early.Key, early.RequestHash, early.CreatedAt = tc.old.Key, []byte("early"), tc.expires.Add(-time.Millisecond)
		early.ExpiresAt = early.CreatedAt.Add(time.Minute)
		checkIdempotency(t, "Begin just before "+tc.name+" expires", mustBegin(t, s, early, false), tc.old)

		late := newClaim(owner)
		late.Key, late.Method, late.Route, late.RequestHash = tc.old.Key, "PUT", "/pse/standards/:standard_id", []byte("late")
		late.CreatedAt, late.ExpiresAt = tc.expires, tc.expires.Add(time.Minute)
		checkIdempotency(t, "Begin as "+tc.name+" expires", mustBegin(t, s, late, true), claimOf(late))
		checkIdempotency(t, "the new claim replacing "+tc.name, storedIdempotency(t, s, owner, tc.old.Key), claimOf(late))
	}
}

func testIdempotencyOwnerIsolation(t *testing.T, s idempotencyStores) {
	ctx := t.Context()
	ann := newOwner(t, s)
	bob := ports.IdempotencyOwner{OrgID: ann.OrgID, UserID: mustCreateUser(t, s.Identity, newUser(ann.OrgID)).ID}
	cat := newOwner(t, s)
	key := "key-" + newID()
	recs := map[string]ports.IdempotencyRecord{}
	for i, owner := range []ports.IdempotencyOwner{ann, bob, cat} {
		rec := newClaim(owner)
		rec.Key, rec.RequestHash = key, []byte{byte(i)}
		checkIdempotency(t, "Begin of a key another user holds", mustBegin(t, s, rec, true), claimOf(rec))
		recs[owner.UserID] = claimOf(rec)
	}
	recs[ann.UserID] = mustComplete(t, s, recs[ann.UserID], ports.IdempotentResponse{Status: 200, Body: []byte("ann")}, base.Add(time.Hour))
	if err := s.Idempotency.Release(ctx, bob, key); err != nil {
		t.Fatalf("Release: %v", err)
	}
	delete(recs, bob.UserID)
	checkIdempotency(t, "ann's record", storedIdempotency(t, s, ann, key), recs[ann.UserID])
	checkIdempotency(t, "cat's record", storedIdempotency(t, s, cat, key), recs[cat.UserID])
	// A user's key in another org is another key, too.
	other := ports.IdempotencyOwner{OrgID: cat.OrgID, UserID: ann.UserID}
	_, _, err := s.Idempotency.Begin(ctx, newClaim(other))
	checkErr(t, "Begin for a user in an org not theirs", err, ports.ErrNotFound)
}

func testPruneIdempotency(t *testing.T, s idempotencyStores) {
	ctx := t.Context()
	// Far before base, so records of other subtests sharing the store are untouched.
	epoch := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
	now := epoch.Add(24 * time.Hour)
	owner := newOwner(t, s)
	claim := func(expires time.Time, completed bool) ports.IdempotencyRecord {
		rec := newClaim(owner)
		rec.CreatedAt, rec.ExpiresAt = epoch, expires
		mustBegin(t, s, rec, true)
		if completed {
			return mustComplete(t, s, rec, ports.IdempotentResponse{Status: 200, Body: []byte("ok")}, expires)
		}
		return claimOf(rec)
	}
	deleted := []ports.IdempotencyRecord{
		claim(epoch.Add(time.Minute), false),
		claim(now.Add(-time.Millisecond), true),
		claim(now, true),
	}
	kept := []ports.IdempotencyRecord{
		claim(now.Add(time.Millisecond), false),
		claim(now.Add(time.Hour), true),
	}
	// In batches of 2: a full batch, then the rest.
	if _, err := s.Idempotency.PruneIdempotency(ctx, now, 0); !errors.Is(err, ports.ErrInvalid) {
		t.Errorf("PruneIdempotency with limit 0: %v, want invalid", err)
	}
	for i, want := range []int{2, len(deleted) - 2, 0} {
		n, err := s.Idempotency.PruneIdempotency(ctx, now, 2)
		if err != nil {
			t.Fatalf("PruneIdempotency: %v", err)
		}
		if n != want {
			t.Errorf("PruneIdempotency batch %d deleted %d records, want %d", i, n, want)
		}
	}
	for _, rec := range deleted {
		// A pruned key is free: Begin claims it even before the old expiry.
		fresh := rec
		fresh.CreatedAt, fresh.ExpiresAt = epoch, epoch.Add(time.Second)
		mustBegin(t, s, fresh, true)
	}
	for _, rec := range kept {
		probe := newClaim(owner)
		probe.Key, probe.CreatedAt = rec.Key, now
		checkIdempotency(t, "a kept record", mustBegin(t, s, probe, false), rec)
	}
	if n, err := s.Idempotency.PruneIdempotency(ctx, epoch, 100); err != nil || n != 0 {
		t.Errorf("PruneIdempotency before any expiry = %d, %v; want 0, nil", n, err)
	}
}

// raceBegin races 20 Begins of rec.Key, each with its own request hash, and
// checks that exactly one claims it and the others see that claim.
func raceBegin(t *testing.T, s idempotencyStores, rec ports.IdempotencyRecord) {
	t.Helper()
	type result struct {
		rec     ports.IdempotencyRecord
		claimed bool
	}
	const n = 20
	results := make([]result, n)
	tried := make([]ports.IdempotencyRecord, n)
	errs := race(n, func(i int) error {
		tried[i] = rec
		tried[i].RequestHash = []byte{byte(i)}
		got, claimed, err := s.Idempotency.Begin(t.Context(), tried[i])
		results[i] = result{got, claimed}
		return err
	})
	winner := -1
	for i, err := range errs {
		switch {
		case err != nil:
			t.Errorf("Begin: %v", err)
		case results[i].claimed && winner >= 0:
			t.Errorf("Begins %d and %d both claimed the key", winner, i)
		case results[i].claimed:
			winner = i
		}
	}
	if winner < 0 {
		t.Fatalf("none of %d concurrent Begins of a key claimed it", n)
	}
	want := claimOf(tried[winner])
	for i, r := range results {
		if errs[i] == nil {
			checkIdempotency(t, "a concurrent Begin's record", r.rec, want)
		}
	}
	checkIdempotency(t, "the stored claim", storedIdempotency(t, s, rec.Owner, rec.Key), want)
}

func testRaceBegin(t *testing.T, s idempotencyStores) {
	raceBegin(t, s, newClaim(newOwner(t, s)))
}

func testRaceBeginExpired(t *testing.T, s idempotencyStores) {
	owner := newOwner(t, s)
	old := newClaim(owner)
	mustBegin(t, s, old, true)
	mustComplete(t, s, old, ports.IdempotentResponse{Status: 200, Body: []byte("old")}, base.Add(time.Hour))
	rec := newClaim(owner)
	rec.Key, rec.CreatedAt, rec.ExpiresAt = old.Key, base.Add(2*time.Hour), base.Add(3*time.Hour)
	raceBegin(t, s, rec)
}
