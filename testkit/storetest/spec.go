package storetest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// specStores are the specification stores under test, the Transactor whose
// transactions they join, and the identity stores that seed the orgs and
// users owning their records.
type specStores struct {
	Specs     ports.SpecStore
	Standards ports.StandardStore
	Tx        ports.Transactor
	Identity  identityStores
}

// TestSpec runs the contract of ports.SpecStore, ports.StandardStore and
// their Transactor. newStores is called by every subtest (subtests run in
// parallel) and may return stores over a shared database.
//
// Where the ports leave a case open, the suite expects: CreateSpecSession
// stores the session and its inputs whole or not at all; inputs list in the
// order they were stored; a completed generation's artifact is the next
// version of its stage and is not stale, and older versions of that stage
// are superseded by version, not marked stale (only later stages are);
// CompleteGeneration sets CurrentStage, clears Generating and GenerationID
// and sets UpdatedAt to its time; CompleteGeneration is a conflict when the
// session is generating the generation for another stage; FailGeneration
// keeps CurrentStage, clears Generating and GenerationID, and is a conflict
// for a missing session; StartGeneration of an unknown stage is invalid; an
// empty Checks or AppliesTo may read back nil or empty.
func TestSpec(t *testing.T, newStores Factory) {
	runSuite(t, view(newStores, Stores.spec, needSpec), []suiteCase[specStores]{
		{"SpecSessionRoundTrip", testSpecSessionRoundTrip},
		{"CreateSpecSessionAtomic", testCreateSpecSessionAtomic},
		{"SpecSessionOwnerIsolation", testSpecSessionOwnerIsolation},
		{"ListSpecSessionsPages", testListSpecSessionsPages},
		{"ListSpecSessionsLimits", testListSpecSessionsLimits},
		{"ListSpecSessionsMalformedCursor", testListSpecSessionsMalformedCursor},
		{"AddSpecInput", testAddSpecInput},
		{"AddSpecInputLimits", testAddSpecInputLimits},
		{"RaceAddSpecInputs", testRaceAddSpecInputs},
		{"SetSpecRepository", testSetSpecRepository},
		{"RenameSpecSession", testRenameSpecSession},
		{"DeleteSpecSession", testDeleteSpecSession},
		{"DeleteSpecSessionGenerating", testDeleteSpecSessionGenerating},
		{"StartGeneration", testStartGeneration},
		{"RaceStartGeneration", testRaceStartGeneration},
		{"CompleteGeneration", testCompleteGeneration},
		{"CompleteGenerationConflicts", testCompleteGenerationConflicts},
		{"RaceCompleteGeneration", testRaceCompleteGeneration},
		{"FailGeneration", testFailGeneration},
		{"SaveEditedArtifact", testSaveEditedArtifact},
		{"SaveEditedArtifactErrors", testSaveEditedArtifactErrors},
		{"RaceSaveEditedArtifact", testRaceSaveEditedArtifact},
		{"StandardsCRUD", testStandardsCRUD},
		{"ListStandards", testListStandards},
		{"StandardsOrgIsolation", testStandardsOrgIsolation},
		{"SpecTxJoins", testSpecTxJoins},
	})
}

func newSpecSession(owner ports.Owner) ports.SpecSession {
	return ports.SpecSession{
		ID: newID(), OrgID: owner.OrgID, UserID: owner.UserID, Name: "Checkout revamp",
		Status: ports.SpecDraft, CreatedAt: base, UpdatedAt: base,
	}
}

func newSpecInput(sessionID string, kind ports.InputKind, content string) ports.SpecInput {
	return ports.SpecInput{
		ID: newID(), SessionID: sessionID, Kind: kind, Title: "notes.md", ContentType: "text/markdown",
		Size: int64(len(content)), Content: content, CreatedAt: base,
	}
}

func mustCreateSpecSession(t *testing.T, s specStores, ss ports.SpecSession, inputs ...ports.SpecInput) ports.SpecSession {
	t.Helper()
	if err := s.Specs.CreateSpecSession(t.Context(), ss, inputs); err != nil {
		t.Fatalf("CreateSpecSession: %v", err)
	}
	return ss
}

// newSpec stores a fresh owner and a draft session of theirs without inputs.
func newSpec(t *testing.T, s specStores) (ports.Owner, ports.SpecSession) {
	t.Helper()
	owner := seedOwner(t, s.Identity)
	return owner, mustCreateSpecSession(t, s, newSpecSession(owner))
}

func mustGetSpecSession(t *testing.T, s specStores, owner ports.Owner, id string) ports.SpecSession {
	t.Helper()
	ss, err := s.Specs.GetSpecSession(t.Context(), owner, id)
	if err != nil {
		t.Fatalf("GetSpecSession: %v", err)
	}
	return ss
}

func mustListSpecInputs(t *testing.T, s specStores, sessionID string) []ports.SpecInput {
	t.Helper()
	inputs, err := s.Specs.ListSpecInputs(t.Context(), sessionID)
	if err != nil {
		t.Fatalf("ListSpecInputs: %v", err)
	}
	return inputs
}

func mustStart(t *testing.T, s specStores, owner ports.Owner, id string, stage ports.Stage, generationID string, at time.Time) ports.SpecSession {
	t.Helper()
	ss, err := s.Specs.StartGeneration(t.Context(), owner, id, stage, generationID, at)
	if err != nil {
		t.Fatalf("StartGeneration(%s): %v", stage, err)
	}
	return ss
}

func newArtifact(sessionID string, stage ports.Stage, generationID string, created time.Time) ports.SpecArtifact {
	return ports.SpecArtifact{
		ID: newID(), SessionID: sessionID, Stage: stage, Format: "markdown",
		Content:       "# " + strings.ToUpper(string(stage)) + "\n\n- REQ-1 — keep «this» exactly ✓\n",
		Data:          json.RawMessage(fmt.Sprintf(`{"stage": %q, "items": [{"id": "REQ-1", "score": 2.5e3}]}`, stage)),
		Checks:        []string{"EP-2 names no requirement", "ST-2.4 ✓"},
		Model:         "gpt-4.1-mini",
		GenerationID:  generationID,
		CreatedAt:     created,
		PromptVersion: "3f9a0c" + string(stage),
		Generation:    newGeneration(stage),
	}
}

// newGeneration is a generation's statistics with every field set: an
// explicit temperature of 0 for the scope (which must not read back as
// none), and a seed past 2^53 (which must not lose precision).
func newGeneration(stage ports.Stage) ports.SpecGeneration {
	temperature, seed := 0.35, int64(1<<53+1)
	if stage == ports.StageScope {
		temperature, seed = 0, -7
	}
	return ports.SpecGeneration{
		Calls: 5, Batches: 3, FirstTryValid: 2, InvalidAnswers: 1, RepairTurns: 1,
		PromptTokens: 12345, CompletionTokens: 678, DurationMS: 98765,
		FindingsByKind: map[string]int{"dependency": 2, "uncovered": 1},
		Temperature:    &temperature, Seed: &seed,
	}
}

func mustListArtifacts(t *testing.T, s specStores, sessionID string) []ports.SpecArtifact {
	t.Helper()
	artifacts, err := s.Specs.ListArtifacts(t.Context(), sessionID)
	if err != nil {
		t.Fatalf("ListArtifacts: %v", err)
	}
	return artifacts
}

// generate runs one generation of stage to completion at the time given and
// returns the artifact as stored (version as wanted, not stale).
func generate(t *testing.T, s specStores, owner ports.Owner, sessionID string, stage ports.Stage, version int, at time.Time) ports.SpecArtifact {
	t.Helper()
	gen := newID()
	mustStart(t, s, owner, sessionID, stage, gen, at)
	a := newArtifact(sessionID, stage, gen, at.Add(time.Second))
	if err := s.Specs.CompleteGeneration(t.Context(), a, at.Add(time.Second)); err != nil {
		t.Fatalf("CompleteGeneration(%s): %v", stage, err)
	}
	a.Version = version
	return a
}

func normSpecSession(ss ports.SpecSession) ports.SpecSession {
	ss.CreatedAt, ss.UpdatedAt = ms(ss.CreatedAt), ms(ss.UpdatedAt)
	return ss
}

func checkSpecSession(t *testing.T, what string, got, want ports.SpecSession) {
	t.Helper()
	checkUTC(t, what, &got.CreatedAt, &got.UpdatedAt)
	checkEqual(t, what, normSpecSession(got), normSpecSession(want))
}

func checkSpecInputs(t *testing.T, what string, got, want []ports.SpecInput) {
	t.Helper()
	norm := func(inputs []ports.SpecInput) []ports.SpecInput {
		out := make([]ports.SpecInput, len(inputs))
		for i, in := range inputs {
			in.CreatedAt = ms(in.CreatedAt)
			out[i] = in
		}
		return out
	}
	for _, in := range got {
		checkUTC(t, what, &in.CreatedAt)
	}
	checkEqual(t, what, norm(got), norm(want))
}

func checkArtifacts(t *testing.T, what string, got, want []ports.SpecArtifact) {
	t.Helper()
	norm := func(artifacts []ports.SpecArtifact) []ports.SpecArtifact {
		out := make([]ports.SpecArtifact, len(artifacts))
		for i, a := range artifacts {
			a.CreatedAt, a.Data = ms(a.CreatedAt), normJSON(a.Data)
			if len(a.Checks) == 0 {
				a.Checks = nil
			}
			if len(a.Generation.FindingsByKind) == 0 {
				a.Generation.FindingsByKind = nil
			}
			out[i] = a
		}
		return out
	}
	for _, a := range got {
		checkUTC(t, what, &a.CreatedAt)
	}
	checkEqual(t, what, norm(got), norm(want))
}

func normStandard(st ports.Standard) ports.Standard {
	st.CreatedAt, st.UpdatedAt = ms(st.CreatedAt), ms(st.UpdatedAt)
	if len(st.AppliesTo) == 0 {
		st.AppliesTo = nil
	}
	return st
}

func checkStandard(t *testing.T, what string, got, want ports.Standard) {
	t.Helper()
	checkUTC(t, what, &got.CreatedAt, &got.UpdatedAt)
	checkEqual(t, what, normStandard(got), normStandard(want))
}

func checkStandards(t *testing.T, what string, got, want []ports.Standard) {
	t.Helper()
	norm := func(standards []ports.Standard) []ports.Standard {
		out := make([]ports.Standard, len(standards))
		for i, st := range standards {
			out[i] = normStandard(st)
		}
		return out
	}
	for _, st := range got {
		checkUTC(t, what, &st.CreatedAt, &st.UpdatedAt)
	}
	if len(got) == 0 && len(want) == 0 {
		return
	}
	checkEqual(t, what, norm(got), norm(want))
}

// checkConflict fails the test unless err is a conflict.
func checkConflict(t *testing.T, what string, err error) {
	t.Helper()
	checkErr(t, what, err, ports.ErrConflict)
}

func testSpecSessionRoundTrip(t *testing.T, s specStores) {
	ctx := t.Context()
	owner := seedOwner(t, s.Identity)
	ss := newSpecSession(owner)
	ss.Name = "Checkout — «revamp» ✓"
	ss.UpdatedAt = base.Add(time.Minute)
	document := "# Brief\r\n\r\nKeep   spacing,\ttabs and trailing blanks   \n\n\\u0000 is not a NUL; \"quotes\" & <tags> 🚀\n"
	large := strings.Repeat("The checkout must take one click. ", 32*1024) // about 1 MiB
	// Same time, random ids: only the store's record of insertion order tells.
	inputs := []ports.SpecInput{
		newSpecInput(ss.ID, ports.InputDocument, document),
		newSpecInput(ss.ID, ports.InputTranscript, "Ann: we need Apple Pay.\nBob: and PayPal."),
		newSpecInput(ss.ID, ports.InputNote, ""),
		newSpecInput(ss.ID, ports.InputDocument, large),
	}
	inputs[0].Title, inputs[0].ContentType = "Brief «v2».md", "text/markdown; charset=utf-8"
	inputs[1].Title, inputs[1].ContentType = "kickoff call", "text/plain"
	inputs[2].Title, inputs[2].ContentType = "", "text/plain"
	inputs[3].Title, inputs[3].Size = "big.txt", 1<<40
	mustCreateSpecSession(t, s, ss, inputs...)

	checkSpecSession(t, "GetSpecSession", mustGetSpecSession(t, s, owner, ss.ID), ss)
	got := mustListSpecInputs(t, s, ss.ID)
	checkSpecInputs(t, "ListSpecInputs", got, inputs)
	if len(got) == len(inputs) && (got[0].Content != document || got[3].Content != large) {
		t.Errorf("ListSpecInputs changed the content")
	}

	bare := newSpecSession(owner)
	bare.Status, bare.UpdatedAt = "", time.Time{}
	mustCreateSpecSession(t, s, bare)
	want := bare
	want.Status, want.UpdatedAt = ports.SpecDraft, bare.CreatedAt
	checkSpecSession(t, "GetSpecSession of a session created without status and update time", mustGetSpecSession(t, s, owner, bare.ID), want)
	if n := len(mustListSpecInputs(t, s, bare.ID)); n != 0 {
		t.Errorf("ListSpecInputs of a session created without inputs = %d inputs", n)
	}
	if n := len(mustListSpecInputs(t, s, newID())); n != 0 {
		t.Errorf("ListSpecInputs of a missing session = %d inputs", n)
	}
	if n := len(mustListArtifacts(t, s, ss.ID)); n != 0 {
		t.Errorf("ListArtifacts of a new session = %d artifacts", n)
	}

	dup := newSpecSession(owner)
	dup.ID = ss.ID
	checkConflict(t, "CreateSpecSession with a taken id", s.Specs.CreateSpecSession(ctx, dup, nil))
	orphan := newSpecSession(ports.Owner{OrgID: owner.OrgID, UserID: newID()})
	checkErr(t, "CreateSpecSession for a missing user", s.Specs.CreateSpecSession(ctx, orphan, nil), ports.ErrNotFound)
	missing := newID()
	_, err := s.Specs.GetSpecSession(ctx, owner, missing)
	checkNotFound(t, "GetSpecSession of a missing session", err, "spec session", missing)
}

func testCreateSpecSessionAtomic(t *testing.T, s specStores) {
	ctx := t.Context()
	owner, taken := newSpec(t, s)
	first := newSpecInput(taken.ID, ports.InputNote, "first")
	if err := addSpecInput(ctx, s, owner, first); err != nil {
		t.Fatalf("AddSpecInput: %v", err)
	}

	ss := newSpecSession(owner)
	dup := newSpecInput(ss.ID, ports.InputNote, "again")
	dup.ID = first.ID
	err := s.Specs.CreateSpecSession(ctx, ss, []ports.SpecInput{newSpecInput(ss.ID, ports.InputNote, "dropped"), dup})
	checkConflict(t, "CreateSpecSession with a taken input id", err)
	_, err = s.Specs.GetSpecSession(ctx, owner, ss.ID)
	checkNotFound(t, "GetSpecSession after a failed CreateSpecSession", err, "spec session", ss.ID)
	if n := len(mustListSpecInputs(t, s, ss.ID)); n != 0 {
		t.Errorf("ListSpecInputs after a failed CreateSpecSession = %d inputs", n)
	}
	checkSpecInputs(t, "ListSpecInputs of the other session", mustListSpecInputs(t, s, taken.ID), []ports.SpecInput{first})
}

func testSpecSessionOwnerIsolation(t *testing.T, s specStores) {
	ctx := t.Context()
	owner, ss := newSpec(t, s)
	stranger := seedOwner(t, s.Identity)
	for _, other := range []struct {
		name  string
		owner ports.Owner
	}{
		{"another user of the org", seedColleague(t, s.Identity, owner.OrgID)},
		{"a user of another org", stranger},
		{"the user under another org", ports.Owner{OrgID: stranger.OrgID, UserID: owner.UserID}},
		{"another user under the org", ports.Owner{OrgID: owner.OrgID, UserID: stranger.UserID}},
		{"nobody", ports.Owner{}},
	} {
		_, err := s.Specs.GetSpecSession(ctx, other.owner, ss.ID)
		checkNotFound(t, "GetSpecSession by "+other.name, err, "spec session", ss.ID)
		err = addSpecInput(ctx, s, other.owner, newSpecInput(ss.ID, ports.InputNote, "hijack"))
		checkNotFound(t, "AddSpecInput by "+other.name, err, "spec session", ss.ID)
		_, err = s.Specs.StartGeneration(ctx, other.owner, ss.ID, ports.StageScope, newID(), base.Add(time.Hour))
		checkNotFound(t, "StartGeneration by "+other.name, err, "spec session", ss.ID)
		list, _, err := s.Specs.ListSpecSessions(ctx, other.owner, ports.Page{Limit: 200})
		if err != nil {
			t.Fatalf("ListSpecSessions by %s: %v", other.name, err)
		}
		if slices.ContainsFunc(list, func(x ports.SpecSession) bool { return x.ID == ss.ID }) {
			t.Errorf("ListSpecSessions by %s lists another owner's session", other.name)
		}
	}
	checkSpecSession(t, "GetSpecSession by the owner afterwards", mustGetSpecSession(t, s, owner, ss.ID), ss)
	if n := len(mustListSpecInputs(t, s, ss.ID)); n != 0 {
		t.Errorf("ListSpecInputs after other owners' AddSpecInput = %d inputs", n)
	}
}

func testListSpecSessionsPages(t *testing.T, s specStores) {
	ctx := t.Context()
	owner := seedOwner(t, s.Identity)
	mustCreateSpecSession(t, s, newSpecSession(seedColleague(t, s.Identity, owner.OrgID)))
	created := map[string]ports.SpecSession{}
	// Minutes after base in no order; four tie across the first two pages.
	for _, minutes := range []int{2, 0, 3, 2, 2, 1, 2} {
		ss := newSpecSession(owner)
		ss.UpdatedAt = base.Add(time.Duration(minutes) * time.Minute)
		created[ss.ID] = mustCreateSpecSession(t, s, ss)
	}

	var all []ports.SpecSession
	var sizes []int
	cursor := ""
	for range 10 {
		page, next, err := s.Specs.ListSpecSessions(ctx, owner, ports.Page{Limit: 3, Cursor: cursor})
		if err != nil {
			t.Fatalf("ListSpecSessions(cursor %q): %v", cursor, err)
		}
		all = append(all, page...)
		sizes = append(sizes, len(page))
		if next == "" {
			break
		}
		cursor = next
	}
	checkEqual(t, "page sizes", sizes, []int{3, 3, 1})
	seen := map[string]bool{}
	for i, ss := range all {
		want, ok := created[ss.ID]
		switch {
		case !ok:
			t.Errorf("page item %d: session %s is not the owner's", i, ss.ID)
		case seen[ss.ID]:
			t.Errorf("page item %d: session %s listed twice", i, ss.ID)
		default:
			checkSpecSession(t, fmt.Sprintf("page item %d", i), ss, want)
		}
		seen[ss.ID] = true
	}
	if len(seen) != len(created) {
		t.Errorf("pages list %d of the %d sessions", len(seen), len(created))
	}
	if !slices.IsSortedFunc(all, func(a, b ports.SpecSession) int { return b.UpdatedAt.Compare(a.UpdatedAt) }) {
		t.Errorf("pages are not most recently updated first")
	}

	whole, next, err := s.Specs.ListSpecSessions(ctx, owner, ports.Page{Limit: len(created)})
	if err != nil || len(whole) != len(created) || next != "" {
		t.Errorf("ListSpecSessions(limit %d) = %d sessions, next %q, %v; want all, \"\", nil", len(created), len(whole), next, err)
	}

	oldest := all[len(all)-1]
	mustStart(t, s, owner, oldest.ID, ports.StageScope, newID(), base.Add(10*time.Minute))
	first, _, err := s.Specs.ListSpecSessions(ctx, owner, ports.Page{Limit: 3})
	if err != nil {
		t.Fatalf("ListSpecSessions after StartGeneration: %v", err)
	}
	if len(first) == 0 || first[0].ID != oldest.ID || first[0].Status != ports.SpecGenerating {
		t.Errorf("the session a generation started in is not first, and generating, after StartGeneration")
	}
}

func testListSpecSessionsLimits(t *testing.T, s specStores) {
	ctx := t.Context()
	owner := seedOwner(t, s.Identity)
	const total = 201
	err := s.Tx.WithinTx(ctx, func(ctx context.Context) error {
		for i := range total {
			ss := newSpecSession(owner)
			ss.UpdatedAt = base.Add(time.Duration(i) * time.Second)
			if err := s.Specs.CreateSpecSession(ctx, ss, nil); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("CreateSpecSession: %v", err)
	}
	for _, tc := range []struct {
		limit, want int
	}{
		{0, 50}, {-1, 50}, {1, 1}, {200, 200}, {201, 200}, {10_000, 200},
	} {
		page, next, err := s.Specs.ListSpecSessions(ctx, owner, ports.Page{Limit: tc.limit})
		if err != nil {
			t.Fatalf("ListSpecSessions(limit %d): %v", tc.limit, err)
		}
		if len(page) != tc.want || next == "" {
			t.Errorf("ListSpecSessions(limit %d) = %d sessions, next %q; want %d and a next cursor", tc.limit, len(page), next, tc.want)
		}
	}
	var sizes []int
	for cursor := ""; len(sizes) < 10; {
		page, next, err := s.Specs.ListSpecSessions(ctx, owner, ports.Page{Cursor: cursor})
		if err != nil {
			t.Fatalf("ListSpecSessions: %v", err)
		}
		sizes = append(sizes, len(page))
		if cursor = next; cursor == "" {
			break
		}
	}
	checkEqual(t, "sizes of the default pages", sizes, []int{50, 50, 50, 50, 1})

	empty, next, err := s.Specs.ListSpecSessions(ctx, seedOwner(t, s.Identity), ports.Page{})
	if err != nil || len(empty) != 0 || next != "" {
		t.Errorf("ListSpecSessions of an owner without sessions = %d, %q, %v; want none", len(empty), next, err)
	}
}

func testListSpecSessionsMalformedCursor(t *testing.T, s specStores) {
	owner, _ := newSpec(t, s)
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, cursor := range []string{
		"!!!", "%%", "not a cursor", b64("nonsense"), b64("2030-05-06T01:38:09.123456Z"),
		b64("yesterday " + newID()), base64.StdEncoding.EncodeToString([]byte{0xff, 0xfe, 0x00}),
	} {
		_, _, err := s.Specs.ListSpecSessions(t.Context(), owner, ports.Page{Cursor: cursor})
		e, ok := ports.AsError(err)
		if !ok || e.Kind != ports.KindInvalid {
			t.Errorf("ListSpecSessions(cursor %q): error %v, want invalid", cursor, err)
			continue
		}
		if !slices.ContainsFunc(e.Fields, func(f ports.FieldError) bool { return f.Field == "cursor" }) {
			t.Errorf("ListSpecSessions(cursor %q): fields %+v, want one named cursor", cursor, e.Fields)
		}
	}
}

func testSetSpecRepository(t *testing.T, s specStores) {
	ctx := t.Context()
	owner := seedOwner(t, s.Identity)
	linked := newSpecSession(owner)
	linked.RepoID = newID()
	mustCreateSpecSession(t, s, linked)
	checkSpecSession(t, "GetSpecSession of a session created linked", mustGetSpecSession(t, s, owner, linked.ID), linked)

	ss := mustCreateSpecSession(t, s, newSpecSession(owner))
	repoID, at := newID(), base.Add(time.Hour)
	got, err := s.Specs.SetSpecRepository(ctx, owner, ss.ID, repoID, at)
	if err != nil {
		t.Fatalf("SetSpecRepository: %v", err)
	}
	want := ss
	want.RepoID, want.UpdatedAt = repoID, at
	checkSpecSession(t, "SetSpecRepository", got, want)
	checkSpecSession(t, "GetSpecSession after SetSpecRepository", mustGetSpecSession(t, s, owner, ss.ID), want)

	got, err = s.Specs.SetSpecRepository(ctx, owner, ss.ID, "", at.Add(time.Minute))
	if err != nil {
		t.Fatalf("SetSpecRepository to unlink: %v", err)
	}
	want.RepoID, want.UpdatedAt = "", at.Add(time.Minute)
	checkSpecSession(t, "SetSpecRepository to unlink", got, want)

	stranger := seedOwner(t, s.Identity)
	_, err = s.Specs.SetSpecRepository(ctx, stranger, ss.ID, repoID, at)
	checkNotFound(t, "SetSpecRepository by another owner", err, "spec session", ss.ID)
	missing := newID()
	_, err = s.Specs.SetSpecRepository(ctx, owner, missing, repoID, at)
	checkNotFound(t, "SetSpecRepository of a missing session", err, "spec session", missing)
	checkSpecSession(t, "GetSpecSession after the refused calls", mustGetSpecSession(t, s, owner, ss.ID), want)
}

func testRenameSpecSession(t *testing.T, s specStores) {
	ctx := t.Context()
	owner, ss := newSpec(t, s)
	at := base.Add(time.Hour)
	got, err := s.Specs.RenameSpecSession(ctx, owner, ss.ID, "Checkout, second take", at)
	if err != nil {
		t.Fatalf("RenameSpecSession: %v", err)
	}
	want := ss
	want.Name, want.UpdatedAt = "Checkout, second take", at
	checkSpecSession(t, "RenameSpecSession", got, want)
	checkSpecSession(t, "GetSpecSession after RenameSpecSession", mustGetSpecSession(t, s, owner, ss.ID), want)

	stranger := seedOwner(t, s.Identity)
	_, err = s.Specs.RenameSpecSession(ctx, stranger, ss.ID, "Mine now", at)
	checkNotFound(t, "RenameSpecSession by another owner", err, "spec session", ss.ID)
	missing := newID()
	_, err = s.Specs.RenameSpecSession(ctx, owner, missing, "Nobody", at)
	checkNotFound(t, "RenameSpecSession of a missing session", err, "spec session", missing)
	checkSpecSession(t, "GetSpecSession after the refused renames", mustGetSpecSession(t, s, owner, ss.ID), want)
}

// testDeleteSpecSession deletes a session with inputs and artifacts of
// several stages, and checks they are gone while another session of the
// same owner keeps its own.
func testDeleteSpecSession(t *testing.T, s specStores) {
	ctx := t.Context()
	owner := seedOwner(t, s.Identity)
	doomed := mustCreateSpecSession(t, s, newSpecSession(owner),
		newSpecInput("", ports.InputNote, "first"), newSpecInput("", ports.InputDocument, "second"))
	kept := mustCreateSpecSession(t, s, newSpecSession(owner), newSpecInput("", ports.InputNote, "kept"))
	for _, id := range []string{doomed.ID, kept.ID} {
		generate(t, s, owner, id, ports.StageScope, 1, base.Add(time.Minute))
		generate(t, s, owner, id, ports.StagePRD, 1, base.Add(2*time.Minute))
	}
	keptSession := mustGetSpecSession(t, s, owner, kept.ID)
	keptInputs, keptArts := mustListSpecInputs(t, s, kept.ID), mustListArtifacts(t, s, kept.ID)
	before := mustGetSpecSession(t, s, owner, doomed.ID)

	stranger := seedOwner(t, s.Identity)
	_, err := s.Specs.DeleteSpecSession(ctx, stranger, doomed.ID)
	checkNotFound(t, "DeleteSpecSession by another owner", err, "spec session", doomed.ID)
	if n := len(mustListSpecInputs(t, s, doomed.ID)); n != 2 {
		t.Fatalf("inputs after another owner's delete = %d, want 2", n)
	}

	got, err := s.Specs.DeleteSpecSession(ctx, owner, doomed.ID)
	if err != nil {
		t.Fatalf("DeleteSpecSession: %v", err)
	}
	checkSpecSession(t, "DeleteSpecSession's session", got, before)
	_, err = s.Specs.GetSpecSession(ctx, owner, doomed.ID)
	checkNotFound(t, "GetSpecSession after DeleteSpecSession", err, "spec session", doomed.ID)
	if in := mustListSpecInputs(t, s, doomed.ID); len(in) != 0 {
		t.Errorf("inputs of a deleted session = %+v, want none", in)
	}
	if arts := mustListArtifacts(t, s, doomed.ID); len(arts) != 0 {
		t.Errorf("artifacts of a deleted session = %+v, want none", arts)
	}
	_, err = s.Specs.DeleteSpecSession(ctx, owner, doomed.ID)
	checkNotFound(t, "DeleteSpecSession a second time", err, "spec session", doomed.ID)
	if err := s.Specs.CompleteGeneration(ctx, newArtifact(doomed.ID, ports.StageEpics, newID(), base), base); !errors.Is(err, ports.ErrNotFound) {
		t.Errorf("CompleteGeneration of a deleted session = %v, want not_found", err)
	}

	checkSpecSession(t, "the other session", mustGetSpecSession(t, s, owner, kept.ID), keptSession)
	checkSpecInputs(t, "the other session's inputs", mustListSpecInputs(t, s, kept.ID), keptInputs)
	checkArtifacts(t, "the other session's artifacts", mustListArtifacts(t, s, kept.ID), keptArts)
	page, _, err := s.Specs.ListSpecSessions(ctx, owner, ports.Page{})
	if err != nil {
		t.Fatalf("ListSpecSessions: %v", err)
	}
	if len(page) != 1 || page[0].ID != kept.ID {
		t.Errorf("ListSpecSessions after the delete = %+v, want only %s", page, kept.ID)
	}
}

// testDeleteSpecSessionGenerating checks a generating session is not
// deleted, and is once its generation ended.
func testDeleteSpecSessionGenerating(t *testing.T, s specStores) {
	ctx := t.Context()
	owner := seedOwner(t, s.Identity)
	ss := mustCreateSpecSession(t, s, newSpecSession(owner), newSpecInput("", ports.InputNote, "kept while generating"))
	genID := newID()
	running := mustStart(t, s, owner, ss.ID, ports.StageScope, genID, base.Add(time.Minute))
	_, err := s.Specs.DeleteSpecSession(ctx, owner, ss.ID)
	checkConflict(t, "DeleteSpecSession while generating", err)
	if !errors.Is(err, ports.ErrSpecGenerating) {
		t.Errorf("DeleteSpecSession while generating = %v, want code %s", err, ports.CodeSpecGenerating)
	}
	checkSpecSession(t, "the session after the refused delete", mustGetSpecSession(t, s, owner, ss.ID), running)
	if n := len(mustListSpecInputs(t, s, ss.ID)); n != 1 {
		t.Errorf("inputs after the refused delete = %d, want 1", n)
	}
	if err := s.Specs.CompleteGeneration(ctx, newArtifact(ss.ID, ports.StageScope, genID, base), base.Add(2*time.Minute)); err != nil {
		t.Fatalf("CompleteGeneration: %v", err)
	}
	if _, err := s.Specs.DeleteSpecSession(ctx, owner, ss.ID); err != nil {
		t.Fatalf("DeleteSpecSession once the generation ended: %v", err)
	}
}

func testAddSpecInput(t *testing.T, s specStores) {
	ctx := t.Context()
	owner := seedOwner(t, s.Identity)
	ss := newSpecSession(owner)
	first := newSpecInput(ss.ID, ports.InputDocument, "# Scope\n")
	mustCreateSpecSession(t, s, ss, first)
	other := mustCreateSpecSession(t, s, newSpecSession(owner))
	want := []ports.SpecInput{first}
	for i, kind := range []ports.InputKind{ports.InputTranscript, ports.InputNote, ports.InputDocument} {
		in := newSpecInput(ss.ID, kind, fmt.Sprintf("input %d\n\twith  spacing ✓", i))
		if err := addSpecInput(ctx, s, owner, in); err != nil {
			t.Fatalf("AddSpecInput: %v", err)
		}
		if err := addSpecInput(ctx, s, owner, newSpecInput(other.ID, ports.InputNote, "elsewhere")); err != nil {
			t.Fatalf("AddSpecInput to the other session: %v", err)
		}
		want = append(want, in)
	}
	checkSpecInputs(t, "ListSpecInputs", mustListSpecInputs(t, s, ss.ID), want)
	if n := len(mustListSpecInputs(t, s, other.ID)); n != 3 {
		t.Errorf("ListSpecInputs of the other session = %d inputs, want 3", n)
	}

	dup := newSpecInput(ss.ID, ports.InputNote, "again")
	dup.ID = first.ID
	checkConflict(t, "AddSpecInput with a taken id", addSpecInput(ctx, s, owner, dup))
	missing := newID()
	err := addSpecInput(ctx, s, owner, newSpecInput(missing, ports.InputNote, "lost"))
	checkNotFound(t, "AddSpecInput to a missing session", err, "spec session", missing)
	checkSpecInputs(t, "ListSpecInputs after failed adds", mustListSpecInputs(t, s, ss.ID), want)
}

// addSpecInput is AddSpecInput without limits.
func addSpecInput(ctx context.Context, s specStores, owner ports.Owner, in ports.SpecInput) error {
	_, err := s.Specs.AddSpecInput(ctx, owner, in, ports.SpecInputLimits{})
	return err
}

// testAddSpecInputLimits adds inputs up to each limit, one at a time.
func testAddSpecInputLimits(t *testing.T, s specStores) {
	ctx := t.Context()
	owner := seedOwner(t, s.Identity)
	ss := mustCreateSpecSession(t, s, newSpecSession(owner))
	sized := func(size int) ports.SpecInput {
		in := newSpecInput(ss.ID, ports.InputNote, strings.Repeat("x", size))
		in.Size = int64(size)
		return in
	}
	limits := ports.SpecInputLimits{MaxInputs: 3, MaxBytes: 100}
	var want ports.SpecInputTotals
	for _, size := range []int{40, 60} { // to the byte limit exactly
		got, err := s.Specs.AddSpecInput(ctx, owner, sized(size), limits)
		if err != nil {
			t.Fatalf("AddSpecInput of %d bytes after %+v: %v", size, want, err)
		}
		checkEqual(t, "AddSpecInput's totals", got, want)
		want.Inputs, want.Bytes = want.Inputs+1, want.Bytes+int64(size)
	}
	got, err := s.Specs.AddSpecInput(ctx, owner, sized(1), limits)
	checkErr(t, "AddSpecInput past the byte limit", err, ports.ErrSpecInputsFull)
	checkEqual(t, "AddSpecInput's totals when refused", got, want)
	limits.MaxBytes = 0 // no byte limit: the count is the limit
	if _, err := s.Specs.AddSpecInput(ctx, owner, sized(1000), limits); err != nil {
		t.Fatalf("AddSpecInput of the third input: %v", err)
	}
	want.Inputs, want.Bytes = 3, 1100
	got, err = s.Specs.AddSpecInput(ctx, owner, sized(1), limits)
	checkErr(t, "AddSpecInput past the count limit", err, ports.ErrSpecInputsFull)
	checkEqual(t, "AddSpecInput's totals when refused", got, want)
	if n := len(mustListSpecInputs(t, s, ss.ID)); n != 3 {
		t.Errorf("ListSpecInputs after refused adds = %d inputs, want 3", n)
	}
	_, err = s.Specs.AddSpecInput(ctx, owner, newSpecInput(newID(), ports.InputNote, "lost"), limits)
	checkErr(t, "AddSpecInput to a missing session", err, ports.ErrNotFound)
}

// testRaceAddSpecInputs adds inputs to one session at once, past each limit
// in turn: the session ends at the limit, with exactly as many successes.
func testRaceAddSpecInputs(t *testing.T, s specStores) {
	const n = 12
	for _, tc := range []struct {
		name   string
		limits ports.SpecInputLimits
		size   int
		want   int // successes
	}{
		{"count", ports.SpecInputLimits{MaxInputs: 5}, 10, 5},
		{"bytes", ports.SpecInputLimits{MaxBytes: 8 * 1000}, 1000, 8},
	} {
		owner := seedOwner(t, s.Identity)
		ss := mustCreateSpecSession(t, s, newSpecSession(owner))
		errs := race(n, func(int) error {
			in := newSpecInput(ss.ID, ports.InputDocument, strings.Repeat("y", tc.size))
			in.Size = int64(tc.size)
			_, err := s.Specs.AddSpecInput(t.Context(), owner, in, tc.limits)
			return err
		})
		won := 0
		for i, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, ports.ErrSpecInputsFull):
				t.Errorf("%s: AddSpecInput %d: %v, want nil or %s", tc.name, i, err, ports.CodeSpecInputsFull)
			}
		}
		inputs := mustListSpecInputs(t, s, ss.ID)
		var bytes int64
		for _, in := range inputs {
			bytes += in.Size
		}
		if won != tc.want || len(inputs) != tc.want || bytes != int64(tc.want*tc.size) {
			t.Errorf("%s: %d concurrent adds against %+v: %d succeeded, the session holds %d inputs of %d bytes; want %d inputs of %d bytes",
				tc.name, n, tc.limits, won, len(inputs), bytes, tc.want, tc.want*tc.size)
		}
	}
}

func testStartGeneration(t *testing.T, s specStores) {
	ctx := t.Context()
	owner, ss := newSpec(t, s)
	gen := newID()
	at := base.Add(time.Minute)
	got := mustStart(t, s, owner, ss.ID, ports.StageScope, gen, at)
	want := ss
	want.Status, want.Generating, want.GenerationID, want.UpdatedAt = ports.SpecGenerating, ports.StageScope, gen, at
	checkSpecSession(t, "StartGeneration", got, want)
	checkSpecSession(t, "GetSpecSession after StartGeneration", mustGetSpecSession(t, s, owner, ss.ID), want)

	_, err := s.Specs.StartGeneration(ctx, owner, ss.ID, ports.StageScope, newID(), at.Add(time.Minute))
	checkConflict(t, "StartGeneration while generating", err)
	_, err = s.Specs.StartGeneration(ctx, owner, ss.ID, ports.StagePRD, gen, at.Add(time.Minute))
	checkConflict(t, "StartGeneration of the running generation again", err)
	checkSpecSession(t, "GetSpecSession after conflicts", mustGetSpecSession(t, s, owner, ss.ID), want)

	// After a completed generation.
	if err := s.Specs.CompleteGeneration(ctx, newArtifact(ss.ID, ports.StageScope, gen, at), at.Add(time.Minute)); err != nil {
		t.Fatalf("CompleteGeneration: %v", err)
	}
	gen2, at2 := newID(), base.Add(3*time.Minute)
	got = mustStart(t, s, owner, ss.ID, ports.StagePRD, gen2, at2)
	want.Generating, want.GenerationID, want.CurrentStage, want.UpdatedAt = ports.StagePRD, gen2, ports.StageScope, at2
	checkSpecSession(t, "StartGeneration after CompleteGeneration", got, want)

	// After a failed generation: the error is cleared.
	failure := ports.SpecError{Stage: ports.StagePRD, Code: "upstream", Message: "the model did not answer"}
	if err := s.Specs.FailGeneration(ctx, ss.ID, gen2, failure, base.Add(4*time.Minute)); err != nil {
		t.Fatalf("FailGeneration: %v", err)
	}
	gen3, at3 := newID(), base.Add(5*time.Minute)
	got = mustStart(t, s, owner, ss.ID, ports.StagePRD, gen3, at3)
	want.GenerationID, want.UpdatedAt = gen3, at3
	checkSpecSession(t, "StartGeneration after FailGeneration", got, want)

	missing := newID()
	_, err = s.Specs.StartGeneration(ctx, owner, missing, ports.StageScope, newID(), at)
	checkNotFound(t, "StartGeneration of a missing session", err, "spec session", missing)
	_, other := newSpec(t, s)
	_, err = s.Specs.StartGeneration(ctx, owner, other.ID, ports.StageScope, newID(), at)
	checkNotFound(t, "StartGeneration of another owner's session", err, "spec session", other.ID)

	fresh := mustCreateSpecSession(t, s, newSpecSession(owner))
	_, err = s.Specs.StartGeneration(ctx, owner, fresh.ID, "design", newID(), at)
	checkErr(t, "StartGeneration of an unknown stage", err, ports.ErrInvalid)
	checkSpecSession(t, "GetSpecSession after an invalid StartGeneration", mustGetSpecSession(t, s, owner, fresh.ID), fresh)
}

func testRaceStartGeneration(t *testing.T, s specStores) {
	owner := seedOwner(t, s.Identity)
	// Several rounds, each on a fresh session, so a store that checks and
	// then updates in two steps is caught even where interleavings are rare.
	for round := range 10 {
		ss := mustCreateSpecSession(t, s, newSpecSession(owner))
		gens := make([]string, 20)
		for i := range gens {
			gens[i] = newID()
		}
		errs := race(len(gens), func(i int) error {
			_, err := s.Specs.StartGeneration(t.Context(), owner, ss.ID, ports.StageScope, gens[i], base.Add(time.Duration(i)*time.Second))
			return err
		})
		winner, conflicts := -1, 0
		for i, err := range errs {
			switch {
			case err == nil && winner < 0:
				winner = i
			case err == nil:
				t.Errorf("round %d: StartGeneration %d and %d both succeeded", round, winner, i)
			case errors.Is(err, ports.ErrConflict):
				conflicts++
			default:
				t.Errorf("round %d: StartGeneration %d: %v, want nil or conflict", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no concurrent StartGeneration succeeded", round)
		}
		if conflicts != len(gens)-1 {
			t.Errorf("round %d: %d of %d concurrent StartGeneration were conflicts, want %d", round, conflicts, len(gens), len(gens)-1)
		}
		got := mustGetSpecSession(t, s, owner, ss.ID)
		if got.Status != ports.SpecGenerating || got.GenerationID != gens[winner] {
			t.Errorf("round %d: after the race the session is %s generation %q, want generating the winner's %q",
				round, got.Status, got.GenerationID, gens[winner])
		}
	}
}

func testCompleteGeneration(t *testing.T, s specStores) {
	ctx := t.Context()
	owner, ss := newSpec(t, s)
	other := mustCreateSpecSession(t, s, newSpecSession(owner))
	otherScope := generate(t, s, owner, other.ID, ports.StageScope, 1, base)

	// The whole pipeline up to stories, one version each.
	scope := generate(t, s, owner, ss.ID, ports.StageScope, 1, base.Add(1*time.Minute))
	prd := generate(t, s, owner, ss.ID, ports.StagePRD, 1, base.Add(2*time.Minute))
	epics := generate(t, s, owner, ss.ID, ports.StageEpics, 1, base.Add(3*time.Minute))

	// Stories with empty Checks and no Data, completed at a time of its own,
	// without a prompt version or statistics (as an artifact stored before
	// they were recorded reads back).
	gen := newID()
	started := base.Add(4 * time.Minute)
	mustStart(t, s, owner, ss.ID, ports.StageStories, gen, started)
	stories := newArtifact(ss.ID, ports.StageStories, gen, started.Add(time.Second))
	stories.Checks, stories.Data = []string{}, nil
	stories.PromptVersion, stories.Generation = "", ports.SpecGeneration{FindingsByKind: map[string]int{}}
	stories.Version, stories.Stale = 7, true // ignored
	done := started.Add(2 * time.Second)
	if err := s.Specs.CompleteGeneration(ctx, stories, done); err != nil {
		t.Fatalf("CompleteGeneration(stories): %v", err)
	}
	stories.Version, stories.Stale = 1, false
	want := ss
	want.Status, want.CurrentStage, want.UpdatedAt = ports.SpecReady, ports.StageStories, done
	checkSpecSession(t, "GetSpecSession after CompleteGeneration", mustGetSpecSession(t, s, owner, ss.ID), want)
	checkArtifacts(t, "ListArtifacts", mustListArtifacts(t, s, ss.ID), []ports.SpecArtifact{scope, prd, epics, stories})

	// Regenerating the PRD: version 2; later stages stale; scope and PRD v1 untouched.
	prd2 := generate(t, s, owner, ss.ID, ports.StagePRD, 2, base.Add(5*time.Minute))
	staleEpics, staleStories := epics, stories
	staleEpics.Stale, staleStories.Stale = true, true
	checkArtifacts(t, "ListArtifacts after regenerating the PRD", mustListArtifacts(t, s, ss.ID),
		[]ports.SpecArtifact{scope, prd, prd2, staleEpics, staleStories})
	got := mustGetSpecSession(t, s, owner, ss.ID)
	if got.CurrentStage != ports.StagePRD || got.Status != ports.SpecReady {
		t.Errorf("after regenerating the PRD the session is %s at %q, want ready at prd", got.Status, got.CurrentStage)
	}

	// Regenerating the epics: version 2, fresh; epics v1 and the stories stay stale.
	epics2 := generate(t, s, owner, ss.ID, ports.StageEpics, 2, base.Add(6*time.Minute))
	checkArtifacts(t, "ListArtifacts after regenerating the epics", mustListArtifacts(t, s, ss.ID),
		[]ports.SpecArtifact{scope, prd, prd2, staleEpics, epics2, staleStories})

	// Regenerating the PRD again marks the new epics stale too.
	prd3 := generate(t, s, owner, ss.ID, ports.StagePRD, 3, base.Add(7*time.Minute))
	staleEpics2 := epics2
	staleEpics2.Stale = true
	checkArtifacts(t, "ListArtifacts after regenerating the PRD again", mustListArtifacts(t, s, ss.ID),
		[]ports.SpecArtifact{scope, prd, prd2, prd3, staleEpics, staleEpics2, staleStories})

	// The last stage: nothing later to mark stale.
	prps := generate(t, s, owner, ss.ID, ports.StagePRPs, 1, base.Add(8*time.Minute))
	checkArtifacts(t, "ListArtifacts after the PRPs", mustListArtifacts(t, s, ss.ID),
		[]ports.SpecArtifact{scope, prd, prd2, prd3, staleEpics, staleEpics2, staleStories, prps})
	checkArtifacts(t, "ListArtifacts of the other session", mustListArtifacts(t, s, other.ID), []ports.SpecArtifact{otherScope})
	if n := len(mustListArtifacts(t, s, newID())); n != 0 {
		t.Errorf("ListArtifacts of a missing session = %d artifacts", n)
	}
}

// editedArtifact is a hand-written version of stage: no model, prompt
// version or statistics, EditedBy set.
func editedArtifact(sessionID, userID string, stage ports.Stage, created time.Time) ports.SpecArtifact {
	a := newArtifact(sessionID, stage, newID(), created)
	a.Model, a.PromptVersion, a.Generation, a.EditedBy = "", "", ports.SpecGeneration{}, userID
	return a
}

func testSaveEditedArtifact(t *testing.T, s specStores) {
	ctx := t.Context()
	owner, ss := newSpec(t, s)
	scope := generate(t, s, owner, ss.ID, ports.StageScope, 1, base)
	prd := generate(t, s, owner, ss.ID, ports.StagePRD, 1, base.Add(time.Minute))
	epics := generate(t, s, owner, ss.ID, ports.StageEpics, 1, base.Add(2*time.Minute))

	at := base.Add(3 * time.Minute)
	edit := editedArtifact(ss.ID, owner.UserID, ports.StagePRD, time.Time{})
	edit.Version, edit.Stale = 9, true // ignored
	got, err := s.Specs.SaveEditedArtifact(ctx, owner, edit, 1, at)
	if err != nil {
		t.Fatalf("SaveEditedArtifact: %v", err)
	}
	edit.Version, edit.Stale, edit.CreatedAt = 2, false, at
	if got.Version != 2 || got.Stale || got.EditedBy != owner.UserID || !ms(got.CreatedAt).Equal(ms(at)) {
		t.Errorf("SaveEditedArtifact returned version %d stale %v edited by %q at %v, want 2, false, %q, %v",
			got.Version, got.Stale, got.EditedBy, got.CreatedAt, owner.UserID, at)
	}
	staleEpics := epics
	staleEpics.Stale = true
	checkArtifacts(t, "ListArtifacts after the edit", mustListArtifacts(t, s, ss.ID),
		[]ports.SpecArtifact{scope, prd, edit, staleEpics})
	want := mustGetSpecSession(t, s, owner, ss.ID)
	if want.CurrentStage != ports.StagePRD || want.Status != ports.SpecReady || !ms(want.UpdatedAt).Equal(ms(at)) {
		t.Errorf("after the edit the session is %s at %q updated %v, want ready at prd updated %v",
			want.Status, want.CurrentStage, want.UpdatedAt, at)
	}

	// An edit based on the latest version again: version 3.
	edit3 := editedArtifact(ss.ID, owner.UserID, ports.StagePRD, at.Add(time.Minute))
	if _, err := s.Specs.SaveEditedArtifact(ctx, owner, edit3, 2, at.Add(time.Minute)); err != nil {
		t.Fatalf("SaveEditedArtifact on version 2: %v", err)
	}
	edit3.Version = 3
	checkArtifacts(t, "ListArtifacts after the second edit", mustListArtifacts(t, s, ss.ID),
		[]ports.SpecArtifact{scope, prd, edit, edit3, staleEpics})
}

func testSaveEditedArtifactErrors(t *testing.T, s specStores) {
	ctx := t.Context()
	owner, ss := newSpec(t, s)
	generate(t, s, owner, ss.ID, ports.StageScope, 1, base)
	stranger := ports.Owner{OrgID: owner.OrgID, UserID: newID()}
	cases := []struct {
		name  string
		owner ports.Owner
		id    string
		base  int
		want  error
	}{
		{"stale base", owner, ss.ID, 0, ports.ErrPreconditionFailed},
		{"future base", owner, ss.ID, 2, ports.ErrPreconditionFailed},
		{"another's session", stranger, ss.ID, 1, ports.ErrNotFound},
		{"missing session", owner, newID(), 1, ports.ErrNotFound},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			a := editedArtifact(tt.id, owner.UserID, ports.StageScope, base)
			if _, err := s.Specs.SaveEditedArtifact(ctx, tt.owner, a, tt.base, base); !errors.Is(err, tt.want) {
				t.Errorf("SaveEditedArtifact = %v, want %v", err, tt.want)
			}
		})
	}
	// While generating: conflict, and nothing is stored.
	mustStart(t, s, owner, ss.ID, ports.StagePRD, newID(), base.Add(time.Minute))
	a := editedArtifact(ss.ID, owner.UserID, ports.StageScope, base)
	_, err := s.Specs.SaveEditedArtifact(ctx, owner, a, 1, base.Add(2*time.Minute))
	checkConflict(t, "SaveEditedArtifact while generating", err)
	if n := len(mustListArtifacts(t, s, ss.ID)); n != 1 {
		t.Errorf("after the refused edits the session has %d artifacts, want 1", n)
	}
}

// testRaceSaveEditedArtifact: edits of the same version race; one is
// stored as the next version, the others find their base stale.
func testRaceSaveEditedArtifact(t *testing.T, s specStores) {
	owner, ss := newSpec(t, s)
	scope := generate(t, s, owner, ss.ID, ports.StageScope, 1, base)
	edits := make([]ports.SpecArtifact, 10)
	for i := range edits {
		edits[i] = editedArtifact(ss.ID, owner.UserID, ports.StageScope, base.Add(time.Minute))
	}
	errs := race(len(edits), func(i int) error {
		_, err := s.Specs.SaveEditedArtifact(t.Context(), owner, edits[i], 1, base.Add(time.Minute))
		return err
	})
	winner := oneWinner(t, "SaveEditedArtifact", errs, ports.ErrPreconditionFailed)
	if winner < 0 {
		t.FailNow()
	}
	want := edits[winner]
	want.Version = 2
	checkArtifacts(t, "ListArtifacts after the race", mustListArtifacts(t, s, ss.ID), []ports.SpecArtifact{scope, want})
}

func testCompleteGenerationConflicts(t *testing.T, s specStores) {
	ctx := t.Context()
	owner, ss := newSpec(t, s)
	scope := generate(t, s, owner, ss.ID, ports.StageScope, 1, base)
	prd := generate(t, s, owner, ss.ID, ports.StagePRD, 1, base.Add(time.Minute))
	stored := []ports.SpecArtifact{scope, prd}
	at := base.Add(time.Hour)

	// A retried job completing its generation again.
	again := newArtifact(ss.ID, ports.StagePRD, prd.GenerationID, at)
	checkConflict(t, "CompleteGeneration of a completed generation", s.Specs.CompleteGeneration(ctx, again, at))
	// Nothing running.
	idle := newArtifact(ss.ID, ports.StageEpics, newID(), at)
	checkConflict(t, "CompleteGeneration while nothing is generating", s.Specs.CompleteGeneration(ctx, idle, at))

	// A generation running: another generation, or the stage it does not run, cannot complete.
	gen := newID()
	running := mustStart(t, s, owner, ss.ID, ports.StageEpics, gen, base.Add(2*time.Minute))
	checkConflict(t, "CompleteGeneration of a stale generation while another runs",
		s.Specs.CompleteGeneration(ctx, newArtifact(ss.ID, ports.StageEpics, scope.GenerationID, at), at))
	checkConflict(t, "CompleteGeneration of an unknown generation while another runs",
		s.Specs.CompleteGeneration(ctx, newArtifact(ss.ID, ports.StageEpics, newID(), at), at))
	checkConflict(t, "CompleteGeneration of the running generation for another stage",
		s.Specs.CompleteGeneration(ctx, newArtifact(ss.ID, ports.StageStories, gen, at), at))
	checkSpecSession(t, "GetSpecSession after the conflicts", mustGetSpecSession(t, s, owner, ss.ID), running)
	checkArtifacts(t, "ListArtifacts after the conflicts", mustListArtifacts(t, s, ss.ID), stored)

	missing := newID()
	err := s.Specs.CompleteGeneration(ctx, newArtifact(missing, ports.StageScope, newID(), at), at)
	checkNotFound(t, "CompleteGeneration in a missing session", err, "spec session", missing)

	// The session generating a generation whose artifact is stored already:
	// conflict, and nothing changes.
	if err := s.Specs.FailGeneration(ctx, ss.ID, gen, ports.SpecError{Stage: ports.StageEpics, Code: "timeout"}, at); err != nil {
		t.Fatalf("FailGeneration: %v", err)
	}
	restarted := mustStart(t, s, owner, ss.ID, ports.StageScope, scope.GenerationID, at.Add(time.Minute))
	checkConflict(t, "CompleteGeneration of a generation with an artifact stored",
		s.Specs.CompleteGeneration(ctx, newArtifact(ss.ID, ports.StageScope, scope.GenerationID, at), at.Add(2*time.Minute)))
	checkSpecSession(t, "GetSpecSession after a refused artifact", mustGetSpecSession(t, s, owner, ss.ID), restarted)
	checkArtifacts(t, "ListArtifacts after a refused artifact (later stages must not be stale)", mustListArtifacts(t, s, ss.ID), stored)
}

// testRaceCompleteGeneration completes one generation from many callers at
// once, as retried jobs may: exactly one stores its artifact.
func testRaceCompleteGeneration(t *testing.T, s specStores) {
	owner, ss := newSpec(t, s)
	gen := newID()
	mustStart(t, s, owner, ss.ID, ports.StageScope, gen, base)
	artifacts := make([]ports.SpecArtifact, 10)
	for i := range artifacts {
		artifacts[i] = newArtifact(ss.ID, ports.StageScope, gen, base.Add(time.Minute))
	}
	errs := race(len(artifacts), func(i int) error {
		return s.Specs.CompleteGeneration(t.Context(), artifacts[i], base.Add(time.Minute))
	})
	winner := oneWinner(t, "CompleteGeneration", errs, ports.ErrConflict)
	if winner < 0 {
		t.FailNow()
	}
	want := artifacts[winner]
	want.Version = 1
	checkArtifacts(t, "ListArtifacts after the race", mustListArtifacts(t, s, ss.ID), []ports.SpecArtifact{want})
}

func testFailGeneration(t *testing.T, s specStores) {
	ctx := t.Context()
	owner, ss := newSpec(t, s)
	scope := generate(t, s, owner, ss.ID, ports.StageScope, 1, base)
	gen := newID()
	mustStart(t, s, owner, ss.ID, ports.StagePRD, gen, base.Add(time.Minute))

	checkConflict(t, "FailGeneration of another generation",
		s.Specs.FailGeneration(ctx, ss.ID, newID(), ports.SpecError{Stage: ports.StagePRD, Code: "x"}, base.Add(2*time.Minute)))
	failure := ports.SpecError{Stage: ports.StagePRD, Code: "upstream", Message: "the model answered 502 — «retry later» ✓"}
	at := base.Add(3 * time.Minute)
	if err := s.Specs.FailGeneration(ctx, ss.ID, gen, failure, at); err != nil {
		t.Fatalf("FailGeneration: %v", err)
	}
	want := ss
	want.Status, want.CurrentStage, want.Error, want.UpdatedAt = ports.SpecFailed, ports.StageScope, &failure, at
	checkSpecSession(t, "GetSpecSession after FailGeneration", mustGetSpecSession(t, s, owner, ss.ID), want)
	list, _, err := s.Specs.ListSpecSessions(ctx, owner, ports.Page{})
	if err != nil || len(list) != 1 {
		t.Fatalf("ListSpecSessions = %d sessions, %v; want 1", len(list), err)
	}
	checkSpecSession(t, "ListSpecSessions after FailGeneration", list[0], want)

	later := base.Add(4 * time.Minute)
	checkConflict(t, "FailGeneration twice",
		s.Specs.FailGeneration(ctx, ss.ID, gen, ports.SpecError{Stage: ports.StagePRD, Code: "again"}, later))
	checkConflict(t, "CompleteGeneration of a failed generation",
		s.Specs.CompleteGeneration(ctx, newArtifact(ss.ID, ports.StagePRD, gen, later), later))
	checkSpecSession(t, "GetSpecSession after the conflicts", mustGetSpecSession(t, s, owner, ss.ID), want)
	checkArtifacts(t, "ListArtifacts after FailGeneration", mustListArtifacts(t, s, ss.ID), []ports.SpecArtifact{scope})

	// A stale job failing after a new generation started changes nothing.
	gen2 := newID()
	running := mustStart(t, s, owner, ss.ID, ports.StagePRD, gen2, base.Add(5*time.Minute))
	if running.Error != nil {
		t.Errorf("StartGeneration after FailGeneration kept the error %+v", running.Error)
	}
	checkConflict(t, "FailGeneration of a stale generation",
		s.Specs.FailGeneration(ctx, ss.ID, gen, failure, base.Add(6*time.Minute)))
	checkSpecSession(t, "GetSpecSession after a stale FailGeneration", mustGetSpecSession(t, s, owner, ss.ID), running)

	checkConflict(t, "FailGeneration in a missing session",
		s.Specs.FailGeneration(ctx, newID(), gen2, failure, base))
}

func newStandard(orgID string) ports.Standard {
	return ports.Standard{
		ID: newID(), OrgID: orgID, Title: "Accessibility",
		Body:      "Every story names its WCAG 2.2 criteria.\n\n- keyboard first\n- «contrast» ≥ 4.5:1 ✓",
		AppliesTo: []ports.Stage{ports.StageStories, ports.StagePRD},
		CreatedAt: base, UpdatedAt: base,
	}
}

func mustCreateStandard(t *testing.T, s specStores, st ports.Standard) ports.Standard {
	t.Helper()
	if err := s.Standards.CreateStandard(t.Context(), st); err != nil {
		t.Fatalf("CreateStandard: %v", err)
	}
	return st
}

func mustGetStandard(t *testing.T, s specStores, orgID, id string) ports.Standard {
	t.Helper()
	st, err := s.Standards.GetStandard(t.Context(), orgID, id)
	if err != nil {
		t.Fatalf("GetStandard: %v", err)
	}
	return st
}

func mustListStandards(t *testing.T, s specStores, orgID string) []ports.Standard {
	t.Helper()
	list, err := s.Standards.ListStandards(t.Context(), orgID)
	if err != nil {
		t.Fatalf("ListStandards: %v", err)
	}
	return list
}

func testStandardsCRUD(t *testing.T, s specStores) {
	ctx := t.Context()
	org := mustCreateOrg(t, s.Identity, newOrg())
	st := newStandard(org.ID)
	st.UpdatedAt = base.Add(time.Minute)
	mustCreateStandard(t, s, st)
	checkStandard(t, "GetStandard", mustGetStandard(t, s, org.ID, st.ID), st)

	everywhere := newStandard(org.ID)
	everywhere.AppliesTo = slices.Clone(ports.Stages)
	nowhere := newStandard(org.ID)
	nowhere.AppliesTo, nowhere.CreatedAt, nowhere.UpdatedAt = nil, base.Add(time.Second), time.Time{}
	for _, x := range []ports.Standard{everywhere, nowhere} {
		mustCreateStandard(t, s, x)
	}
	checkStandard(t, "GetStandard of a standard for every stage", mustGetStandard(t, s, org.ID, everywhere.ID), everywhere)
	wantNowhere := nowhere
	wantNowhere.UpdatedAt = nowhere.CreatedAt
	checkStandard(t, "GetStandard of a standard without stages and update time", mustGetStandard(t, s, org.ID, nowhere.ID), wantNowhere)

	updated := st
	updated.Title, updated.Body = "Accessibility (AA)", "Name the criteria.\r\n"
	updated.AppliesTo = []ports.Stage{ports.StageEpics}
	updated.UpdatedAt = base.Add(time.Hour)
	updated.CreatedAt = base.Add(time.Hour) // kept as created
	if err := s.Standards.UpdateStandard(ctx, updated); err != nil {
		t.Fatalf("UpdateStandard: %v", err)
	}
	updated.CreatedAt = st.CreatedAt
	checkStandard(t, "GetStandard after UpdateStandard", mustGetStandard(t, s, org.ID, st.ID), updated)
	cleared := updated
	cleared.AppliesTo, cleared.UpdatedAt = []ports.Stage{}, base.Add(2*time.Hour)
	if err := s.Standards.UpdateStandard(ctx, cleared); err != nil {
		t.Fatalf("UpdateStandard without stages: %v", err)
	}
	checkStandard(t, "GetStandard after UpdateStandard without stages", mustGetStandard(t, s, org.ID, st.ID), cleared)
	checkStandard(t, "GetStandard of an untouched standard", mustGetStandard(t, s, org.ID, everywhere.ID), everywhere)

	if err := s.Standards.DeleteStandard(ctx, org.ID, st.ID); err != nil {
		t.Fatalf("DeleteStandard: %v", err)
	}
	_, err := s.Standards.GetStandard(ctx, org.ID, st.ID)
	checkNotFound(t, "GetStandard after DeleteStandard", err, "standard", st.ID)
	checkNotFound(t, "DeleteStandard twice", s.Standards.DeleteStandard(ctx, org.ID, st.ID), "standard", st.ID)
	checkNotFound(t, "UpdateStandard of a deleted standard", s.Standards.UpdateStandard(ctx, updated), "standard", st.ID)
	checkStandards(t, "ListStandards after DeleteStandard", mustListStandards(t, s, org.ID), []ports.Standard{everywhere, wantNowhere})

	dup := newStandard(org.ID)
	dup.ID = everywhere.ID
	checkConflict(t, "CreateStandard with a taken id", s.Standards.CreateStandard(ctx, dup))
	checkErr(t, "CreateStandard in a missing org", s.Standards.CreateStandard(ctx, newStandard(newID())), ports.ErrNotFound)
	missing := newID()
	_, err = s.Standards.GetStandard(ctx, org.ID, missing)
	checkNotFound(t, "GetStandard of a missing standard", err, "standard", missing)
}

func testListStandards(t *testing.T, s specStores) {
	org := mustCreateOrg(t, s.Identity, newOrg())
	other := mustCreateOrg(t, s.Identity, newOrg())
	var want []ports.Standard
	// Minutes after base in no order, with ties that only the id orders.
	for _, minutes := range []int{3, 0, 2, 0, 1, 0} {
		st := newStandard(org.ID)
		st.Title = fmt.Sprintf("Standard at +%dm", minutes)
		st.CreatedAt = base.Add(time.Duration(minutes) * time.Minute)
		st.UpdatedAt = base.Add(time.Hour - time.Duration(minutes)*time.Minute)
		want = append(want, mustCreateStandard(t, s, st))
		mustCreateStandard(t, s, newStandard(other.ID))
	}
	slices.SortFunc(want, func(a, b ports.Standard) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	checkStandards(t, "ListStandards", mustListStandards(t, s, org.ID), want)
	if n := len(mustListStandards(t, s, other.ID)); n != 6 {
		t.Errorf("ListStandards of the other org = %d standards, want 6", n)
	}
	if n := len(mustListStandards(t, s, newID())); n != 0 {
		t.Errorf("ListStandards of a missing org = %d standards", n)
	}
}

func testStandardsOrgIsolation(t *testing.T, s specStores) {
	ctx := t.Context()
	org := mustCreateOrg(t, s.Identity, newOrg())
	stranger := mustCreateOrg(t, s.Identity, newOrg())
	st := mustCreateStandard(t, s, newStandard(org.ID))
	for name, orgID := range map[string]string{"another org": stranger.ID, "no org": ""} {
		_, err := s.Standards.GetStandard(ctx, orgID, st.ID)
		checkNotFound(t, "GetStandard by "+name, err, "standard", st.ID)
		hijack := st
		hijack.OrgID, hijack.Title, hijack.UpdatedAt = orgID, "hijacked", base.Add(time.Hour)
		checkNotFound(t, "UpdateStandard by "+name, s.Standards.UpdateStandard(ctx, hijack), "standard", st.ID)
		checkNotFound(t, "DeleteStandard by "+name, s.Standards.DeleteStandard(ctx, orgID, st.ID), "standard", st.ID)
		if slices.ContainsFunc(mustListStandards(t, s, orgID), func(x ports.Standard) bool { return x.ID == st.ID }) {
			t.Errorf("ListStandards by %s lists another org's standard", name)
		}
	}
	checkStandard(t, "GetStandard by the org afterwards", mustGetStandard(t, s, org.ID, st.ID), st)
}

// testSpecTxJoins calls every method inside one transaction, checks that the
// reads see the transaction's writes, and that a rollback undoes them.
func testSpecTxJoins(t *testing.T, s specStores) {
	// A method writing outside the transaction may wait for it forever on a
	// single-writer database: bound the wait.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	owner := seedOwner(t, s.Identity)
	ss := newSpecSession(owner)
	first := newSpecInput(ss.ID, ports.InputDocument, "# Brief")
	added := newSpecInput(ss.ID, ports.InputNote, "and PayPal")
	gen, failed := newID(), newID()
	artifact := newArtifact(ss.ID, ports.StageScope, gen, base.Add(time.Minute))
	st, gone := newStandard(owner.OrgID), newStandard(owner.OrgID)
	err := s.Tx.WithinTx(ctx, func(ctx context.Context) error {
		var failedErr error
		step := func(what string, err error) bool {
			if err != nil && failedErr == nil {
				t.Errorf("%s inside the transaction: %v", what, err)
				failedErr = err
			}
			return failedErr == nil
		}
		started := func(stage ports.Stage, id string, at time.Time) error {
			_, err := s.Specs.StartGeneration(ctx, owner, ss.ID, stage, id, at)
			return err
		}
		_ = step("CreateSpecSession", s.Specs.CreateSpecSession(ctx, ss, []ports.SpecInput{first})) &&
			step("AddSpecInput", addSpecInput(ctx, s, owner, added)) &&
			step("StartGeneration", started(ports.StageScope, gen, base.Add(time.Minute))) &&
			step("CompleteGeneration", s.Specs.CompleteGeneration(ctx, artifact, base.Add(2*time.Minute))) &&
			step("StartGeneration", started(ports.StagePRD, failed, base.Add(3*time.Minute))) &&
			step("FailGeneration", s.Specs.FailGeneration(ctx, ss.ID, failed, ports.SpecError{Stage: ports.StagePRD, Code: "x"}, base.Add(4*time.Minute))) &&
			step("CreateStandard", s.Standards.CreateStandard(ctx, st)) &&
			step("CreateStandard", s.Standards.CreateStandard(ctx, gone)) &&
			step("UpdateStandard", s.Standards.UpdateStandard(ctx, func() ports.Standard { x := st; x.Title = "Updated"; return x }())) &&
			step("DeleteStandard", s.Standards.DeleteStandard(ctx, owner.OrgID, gone.ID))
		if failedErr != nil {
			return failedErr
		}
		got, err := s.Specs.GetSpecSession(ctx, owner, ss.ID)
		if step("GetSpecSession", err) && (got.Status != ports.SpecFailed || got.CurrentStage != ports.StageScope) {
			t.Errorf("GetSpecSession inside the transaction = %+v, want its writes", got)
		}
		list, _, err := s.Specs.ListSpecSessions(ctx, owner, ports.Page{})
		if step("ListSpecSessions", err) && len(list) != 1 {
			t.Errorf("ListSpecSessions inside the transaction = %d sessions, want 1", len(list))
		}
		inputs, err := s.Specs.ListSpecInputs(ctx, ss.ID)
		if step("ListSpecInputs", err) && len(inputs) != 2 {
			t.Errorf("ListSpecInputs inside the transaction = %d inputs, want 2", len(inputs))
		}
		artifacts, err := s.Specs.ListArtifacts(ctx, ss.ID)
		if step("ListArtifacts", err) && len(artifacts) != 1 {
			t.Errorf("ListArtifacts inside the transaction = %d artifacts, want 1", len(artifacts))
		}
		got2, err := s.Standards.GetStandard(ctx, owner.OrgID, st.ID)
		if step("GetStandard", err) && got2.Title != "Updated" {
			t.Errorf("GetStandard inside the transaction = %+v, want its update", got2)
		}
		standards, err := s.Standards.ListStandards(ctx, owner.OrgID)
		if step("ListStandards", err) && len(standards) != 1 {
			t.Errorf("ListStandards inside the transaction = %d standards, want 1", len(standards))
		}
		if failedErr != nil {
			return failedErr
		}
		return errAbort
	})
	if !errors.Is(err, errAbort) {
		t.Fatalf("WithinTx = %v, want fn's error", err)
	}
	_, err = s.Specs.GetSpecSession(t.Context(), owner, ss.ID)
	checkNotFound(t, "GetSpecSession after rollback", err, "spec session", ss.ID)
	if n := len(mustListSpecInputs(t, s, ss.ID)); n != 0 {
		t.Errorf("ListSpecInputs after rollback = %d inputs", n)
	}
	if n := len(mustListArtifacts(t, s, ss.ID)); n != 0 {
		t.Errorf("ListArtifacts after rollback = %d artifacts", n)
	}
	if n := len(mustListStandards(t, s, owner.OrgID)); n != 0 {
		t.Errorf("ListStandards after rollback = %d standards", n)
	}
}
