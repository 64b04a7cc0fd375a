package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// specDigestStores are the digest store under test and the specification
// stores that hold the sessions the digests belong to.
type specDigestStores struct {
	Digests ports.SpecDigestStore
	Spec    specStores
}

// TestSpecDigests runs the contract of ports.SpecDigestStore. newStores is
// called by every subtest (subtests run in parallel) and may return stores
// over a shared database.
//
// Where the port leaves a case open, the suite expects: Data comes back as
// the same JSON value, CreatedAt to the millisecond and in UTC; an empty
// InputIDs may read back nil or empty; of concurrent puts one wins whole.
func TestSpecDigests(t *testing.T, newStores Factory) {
	runSuite(t, view(newStores, Stores.specDigest, needSpecDigest), []suiteCase[specDigestStores]{
		{"SpecDigestRoundTrip", testSpecDigestRoundTrip},
		{"SpecDigestReplaced", testSpecDigestReplaced},
		{"SpecDigestUnknownSession", testSpecDigestUnknownSession},
		{"SpecDigestPerSession", testSpecDigestPerSession},
		{"RacePutSpecDigest", testRacePutSpecDigest},
		{"SpecDigestDeletedWithSession", testSpecDigestDeletedWithSession},
	})
}

func newSpecDigest(sessionID string, n int) ports.SpecDigest {
	return ports.SpecDigest{
		SessionID: sessionID,
		InputIDs:  []string{newID(), newID()},
		Data:      json.RawMessage(fmt.Sprintf(`{"title":"Digest %d","facts":[{"fact":"Guests pay without an account — ✓ 日本","inputs":["a"]}]}`, n)),
		Content:   fmt.Sprintf("# Digest %d\n\n- Guests pay without an account — ✓ 日本\n", n),
		Model:     "model-x",
		CreatedAt: base.Add(time.Duration(n) * time.Minute),
	}
}

func checkSpecDigest(t *testing.T, what string, got, want ports.SpecDigest) {
	t.Helper()
	checkUTC(t, what+" CreatedAt", &got.CreatedAt)
	var g, w any
	if err := json.Unmarshal(got.Data, &g); err != nil {
		t.Errorf("%s: Data %q is not JSON: %v", what, got.Data, err)
	}
	_ = json.Unmarshal(want.Data, &w)
	checkEqual(t, what+" Data", g, w)
	if len(got.InputIDs) == 0 && len(want.InputIDs) == 0 {
		got.InputIDs, want.InputIDs = nil, nil
	}
	got.Data, want.Data = nil, nil
	got.CreatedAt, want.CreatedAt = ms(got.CreatedAt), ms(want.CreatedAt)
	checkEqual(t, what, got, want)
}

func mustGetSpecDigest(t *testing.T, s specDigestStores, sessionID string) ports.SpecDigest {
	t.Helper()
	d, err := s.Digests.GetSpecDigest(t.Context(), sessionID)
	if err != nil {
		t.Fatalf("GetSpecDigest: %v", err)
	}
	return d
}

func testSpecDigestRoundTrip(t *testing.T, s specDigestStores) {
	_, ss := newSpec(t, s.Spec)
	if _, err := s.Digests.GetSpecDigest(t.Context(), ss.ID); !errors.Is(err, ports.ErrNotFound) {
		t.Fatalf("GetSpecDigest before a put = %v, want not_found", err)
	}
	d := newSpecDigest(ss.ID, 1)
	d.Content += strings.Repeat("- A long transcript's fact, kept whole.\n", 5000)
	if err := s.Digests.PutSpecDigest(t.Context(), d); err != nil {
		t.Fatalf("PutSpecDigest: %v", err)
	}
	checkSpecDigest(t, "digest", mustGetSpecDigest(t, s, ss.ID), d)

	empty := ports.SpecDigest{SessionID: ss.ID, Data: json.RawMessage(`{}`), CreatedAt: base}
	if err := s.Digests.PutSpecDigest(t.Context(), empty); err != nil {
		t.Fatalf("PutSpecDigest of an empty digest: %v", err)
	}
	checkSpecDigest(t, "empty digest", mustGetSpecDigest(t, s, ss.ID), empty)
}

func testSpecDigestReplaced(t *testing.T, s specDigestStores) {
	_, ss := newSpec(t, s.Spec)
	for n := 1; n <= 3; n++ {
		d := newSpecDigest(ss.ID, n)
		if err := s.Digests.PutSpecDigest(t.Context(), d); err != nil {
			t.Fatalf("PutSpecDigest %d: %v", n, err)
		}
		checkSpecDigest(t, fmt.Sprintf("digest after put %d", n), mustGetSpecDigest(t, s, ss.ID), d)
	}
}

func testSpecDigestUnknownSession(t *testing.T, s specDigestStores) {
	id := newID()
	if err := s.Digests.PutSpecDigest(t.Context(), newSpecDigest(id, 1)); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("PutSpecDigest of an unknown session = %v, want not_found", err)
	}
	if _, err := s.Digests.GetSpecDigest(t.Context(), id); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("GetSpecDigest of an unknown session = %v, want not_found", err)
	}
}

func testSpecDigestPerSession(t *testing.T, s specDigestStores) {
	owner, a := newSpec(t, s.Spec)
	b := mustCreateSpecSession(t, s.Spec, newSpecSession(owner))
	da, db := newSpecDigest(a.ID, 1), newSpecDigest(b.ID, 2)
	for _, d := range []ports.SpecDigest{da, db} {
		if err := s.Digests.PutSpecDigest(t.Context(), d); err != nil {
			t.Fatalf("PutSpecDigest: %v", err)
		}
	}
	checkSpecDigest(t, "first session's digest", mustGetSpecDigest(t, s, a.ID), da)
	checkSpecDigest(t, "second session's digest", mustGetSpecDigest(t, s, b.ID), db)
}

func testRacePutSpecDigest(t *testing.T, s specDigestStores) {
	_, ss := newSpec(t, s.Spec)
	const n = 8
	digests := make([]ports.SpecDigest, n)
	for i := range digests {
		digests[i] = newSpecDigest(ss.ID, i+1)
	}
	for i, err := range race(n, func(i int) error { return s.Digests.PutSpecDigest(t.Context(), digests[i]) }) {
		if err != nil {
			t.Errorf("put %d: %v", i, err)
		}
	}
	got := mustGetSpecDigest(t, s, ss.ID)
	for _, d := range digests {
		if d.Content == got.Content {
			checkSpecDigest(t, "the winning digest", got, d)
			return
		}
	}
	t.Errorf("the digest %q is none of those put", got.Content)
}

func testSpecDigestDeletedWithSession(t *testing.T, s specDigestStores) {
	owner, a := newSpec(t, s.Spec)
	b := mustCreateSpecSession(t, s.Spec, newSpecSession(owner))
	da, db := newSpecDigest(a.ID, 1), newSpecDigest(b.ID, 2)
	for _, d := range []ports.SpecDigest{da, db} {
		if err := s.Digests.PutSpecDigest(t.Context(), d); err != nil {
			t.Fatalf("PutSpecDigest: %v", err)
		}
	}
	if _, err := s.Spec.Specs.DeleteSpecSession(t.Context(), owner, a.ID); err != nil {
		t.Fatalf("DeleteSpecSession: %v", err)
	}
	if _, err := s.Digests.GetSpecDigest(t.Context(), a.ID); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("GetSpecDigest of a deleted session = %v, want not_found", err)
	}
	if err := s.Digests.PutSpecDigest(t.Context(), newSpecDigest(a.ID, 3)); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("PutSpecDigest of a deleted session = %v, want not_found", err)
	}
	checkSpecDigest(t, "the other session's digest", mustGetSpecDigest(t, s, b.ID), db)
}
