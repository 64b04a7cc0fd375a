package memstore

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/devpilot/devpilot/ports"
)

var (
	_ ports.SpecStore       = (*Store)(nil)
	_ ports.StandardStore   = (*Store)(nil)
	_ ports.SpecDigestStore = (*Store)(nil)
)

type specData struct {
	sessions  map[string]ports.SpecSession
	inputs    map[string]seqd[ports.SpecInput]
	artifacts map[string]ports.SpecArtifact
	standards map[string]seqd[ports.Standard]
	digests   map[string]ports.SpecDigest
	exports   map[string]ports.IssueExport
	issues    map[issueKey]seqd[ports.ExportedIssue]
}

// seqd is a record with the sequence number of its insertion, for lists in
// the order records were stored.
type seqd[T any] struct {
	v   T
	seq int64
}

func (d *specData) init() {
	d.sessions = map[string]ports.SpecSession{}
	d.inputs = map[string]seqd[ports.SpecInput]{}
	d.artifacts = map[string]ports.SpecArtifact{}
	d.standards = map[string]seqd[ports.Standard]{}
	d.digests = map[string]ports.SpecDigest{}
	d.exports = map[string]ports.IssueExport{}
	d.issues = map[issueKey]seqd[ports.ExportedIssue]{}
}

// next returns the next insertion sequence number (s.mu held).
func (s *Store) next() int64 {
	s.seq++
	return s.seq
}

// isUserOf reports whether userID is a user of orgID (s.mu held).
func (s *Store) isUserOf(orgID, userID string) bool {
	u, ok := s.identity.users[userID]
	return ok && u.OrgID == orgID
}

func copySpecSession(ss ports.SpecSession) ports.SpecSession {
	if ss.Error != nil {
		e := *ss.Error
		ss.Error = &e
	}
	ss.CreatedAt, ss.UpdatedAt = utc(ss.CreatedAt), utc(ss.UpdatedAt)
	return ss
}

func notFoundSpec(id string) error { return ports.NotFound("spec session", id) }

// ownedSpec returns the owner's session (s.mu held); not_found otherwise.
func (s *Store) ownedSpec(owner ports.Owner, id string) (ports.SpecSession, error) {
	ss, ok := s.spec.sessions[id]
	if !ok || ss.OrgID != owner.OrgID || ss.UserID != owner.UserID {
		return ports.SpecSession{}, notFoundSpec(id)
	}
	return ss, nil
}

// addInput stores an input (s.mu held); conflict for a taken id.
func (s *Store) addInput(ctx context.Context, in ports.SpecInput) error {
	if _, ok := s.spec.inputs[in.ID]; ok {
		return ports.Errorf(ports.KindConflict, "spec input %s exists already", in.ID)
	}
	in.CreatedAt = utc(in.CreatedAt)
	put(ctx, s, s.spec.inputs, in.ID, seqd[ports.SpecInput]{in, s.next()})
	return nil
}

// CreateSpecSession stores a new session with its first inputs, all or
// none. Errors: conflict for a taken id; not_found when the user is not one
// of the org.
func (s *Store) CreateSpecSession(ctx context.Context, ss ports.SpecSession, inputs []ports.SpecInput) error {
	defer s.lock()()
	if !s.isUserOf(ss.OrgID, ss.UserID) {
		return ports.NotFound("user", ss.UserID)
	}
	if _, ok := s.spec.sessions[ss.ID]; ok {
		return ports.Errorf(ports.KindConflict, "spec session %s exists already", ss.ID)
	}
	seen := map[string]bool{}
	for _, in := range inputs {
		if _, ok := s.spec.inputs[in.ID]; ok || seen[in.ID] {
			return ports.Errorf(ports.KindConflict, "spec input %s exists already", in.ID)
		}
		seen[in.ID] = true
	}
	if ss.Status == "" {
		ss.Status = ports.SpecDraft
	}
	if ss.UpdatedAt.IsZero() {
		ss.UpdatedAt = ss.CreatedAt
	}
	put(ctx, s, s.spec.sessions, ss.ID, copySpecSession(ss))
	for _, in := range inputs {
		in.SessionID = ss.ID
		_ = s.addInput(ctx, in)
	}
	return nil
}

// GetSpecSession returns the owner's session; not_found when absent or
// another owner's.
func (s *Store) GetSpecSession(_ context.Context, owner ports.Owner, id string) (ports.SpecSession, error) {
	defer s.lock()()
	ss, err := s.ownedSpec(owner, id)
	return copySpecSession(ss), err
}

// ListSpecSessions returns the owner's sessions, most recently updated
// first, and the next page's cursor; invalid for a malformed cursor.
func (s *Store) ListSpecSessions(_ context.Context, owner ports.Owner, page ports.Page) ([]ports.SpecSession, string, error) {
	defer s.lock()()
	var all []ports.SpecSession
	for _, ss := range s.spec.sessions {
		if ss.OrgID == owner.OrgID && ss.UserID == owner.UserID {
			all = append(all, copySpecSession(ss))
		}
	}
	return paginate(all, page, keyset[ports.SpecSession]{desc: true, byTime: true,
		key: func(ss ports.SpecSession) (string, string) { return timeKey(ss.UpdatedAt), ss.ID }})
}

// SetSpecRepository links the owner's session to repoID ("" unlinks it)
// and returns the session; not_found as GetSpecSession.
func (s *Store) SetSpecRepository(ctx context.Context, owner ports.Owner, id, repoID string, at time.Time) (ports.SpecSession, error) {
	defer s.lock()()
	ss, err := s.ownedSpec(owner, id)
	if err != nil {
		return ports.SpecSession{}, err
	}
	ss.RepoID, ss.UpdatedAt = repoID, utc(at)
	put(ctx, s, s.spec.sessions, id, ss)
	return copySpecSession(ss), nil
}

// RenameSpecSession sets the owner's session's name and returns it;
// not_found as GetSpecSession.
func (s *Store) RenameSpecSession(ctx context.Context, owner ports.Owner, id, name string, at time.Time) (ports.SpecSession, error) {
	defer s.lock()()
	ss, err := s.ownedSpec(owner, id)
	if err != nil {
		return ports.SpecSession{}, err
	}
	ss.Name, ss.UpdatedAt = name, utc(at)
	put(ctx, s, s.spec.sessions, id, ss)
	return copySpecSession(ss), nil
}

// DeleteSpecSession deletes the owner's session with its inputs,
// artifacts, digest, issue exports and exported issues, unless it is
// generating (conflict, code ports.CodeSpecGenerating) or has an issue
// export queued or running (code ports.CodeSpecExportRunning); not_found
// as GetSpecSession.
func (s *Store) DeleteSpecSession(ctx context.Context, owner ports.Owner, id string) (ports.SpecSession, error) {
	defer s.lock()()
	ss, err := s.ownedSpec(owner, id)
	if err != nil {
		return ports.SpecSession{}, err
	}
	if ss.Status == ports.SpecGenerating {
		return ports.SpecSession{}, &ports.Error{Kind: ports.KindConflict, Code: ports.CodeSpecGenerating,
			Message: fmt.Sprintf("spec session %s is generating", id)}
	}
	for _, e := range s.spec.exports {
		if e.SessionID == id && (e.Status == ports.IssueExportQueued || e.Status == ports.IssueExportRunning) {
			return ports.SpecSession{}, &ports.Error{Kind: ports.KindConflict, Code: ports.CodeSpecExportRunning,
				Message: fmt.Sprintf("spec session %s has an issue export queued or running", id)}
		}
	}
	for k, r := range s.spec.inputs {
		if r.v.SessionID == id {
			del(ctx, s, s.spec.inputs, k)
		}
	}
	for k, a := range s.spec.artifacts {
		if a.SessionID == id {
			del(ctx, s, s.spec.artifacts, k)
		}
	}
	del(ctx, s, s.spec.digests, id)
	for k, e := range s.spec.exports {
		if e.SessionID == id {
			del(ctx, s, s.spec.exports, k)
		}
	}
	for k := range s.spec.issues {
		if k.session == id {
			del(ctx, s, s.spec.issues, k)
		}
	}
	del(ctx, s, s.spec.sessions, id)
	return copySpecSession(ss), nil
}

// AddSpecInput stores an input of the owner's session unless the session
// would then pass limits (conflict, code ports.CodeSpecInputsFull), and
// returns what the session held before; not_found as GetSpecSession,
// conflict for a taken id.
func (s *Store) AddSpecInput(ctx context.Context, owner ports.Owner, in ports.SpecInput, limits ports.SpecInputLimits) (ports.SpecInputTotals, error) {
	defer s.lock()()
	if _, err := s.ownedSpec(owner, in.SessionID); err != nil {
		return ports.SpecInputTotals{}, err
	}
	var totals ports.SpecInputTotals
	for _, r := range s.spec.inputs {
		if r.v.SessionID == in.SessionID {
			totals.Inputs++
			totals.Bytes += r.v.Size
		}
	}
	if (limits.MaxInputs > 0 && totals.Inputs >= limits.MaxInputs) || (limits.MaxBytes > 0 && totals.Bytes+in.Size > limits.MaxBytes) {
		return totals, &ports.Error{Kind: ports.KindConflict, Code: ports.CodeSpecInputsFull,
			Message: fmt.Sprintf("spec session %s holds %d inputs of %d bytes in all; the input would pass its limits", in.SessionID, totals.Inputs, totals.Bytes)}
	}
	return totals, s.addInput(ctx, in)
}

// ListSpecInputs returns a session's inputs, oldest first.
func (s *Store) ListSpecInputs(_ context.Context, sessionID string) ([]ports.SpecInput, error) {
	defer s.lock()()
	var rows []seqd[ports.SpecInput]
	for _, r := range s.spec.inputs {
		if r.v.SessionID == sessionID {
			rows = append(rows, r)
		}
	}
	slices.SortFunc(rows, func(a, b seqd[ports.SpecInput]) int { return cmp.Compare(a.seq, b.seq) })
	var out []ports.SpecInput
	for _, r := range rows {
		out = append(out, r.v)
	}
	return out, nil
}

// StartGeneration moves the owner's session, when it is not generating, to
// generating stage with generationID, clearing Error. Errors: not_found as
// GetSpecSession; conflict when a generation runs; invalid for an unknown
// stage.
func (s *Store) StartGeneration(ctx context.Context, owner ports.Owner, id string, stage ports.Stage, generationID string, at time.Time) (ports.SpecSession, error) {
	defer s.lock()()
	ss, err := s.ownedSpec(owner, id)
	if err != nil {
		return ports.SpecSession{}, err
	}
	if !slices.Contains(ports.Stages, stage) {
		return ports.SpecSession{}, ports.Invalid("unknown stage", ports.FieldError{Field: "stage", Reason: "unknown"})
	}
	if ss.Status == ports.SpecGenerating {
		return ports.SpecSession{}, ports.Errorf(ports.KindConflict, "spec session %s is generating already", id)
	}
	ss.Status, ss.Generating, ss.GenerationID, ss.Error, ss.UpdatedAt = ports.SpecGenerating, stage, generationID, nil, utc(at)
	put(ctx, s, s.spec.sessions, id, ss)
	return copySpecSession(ss), nil
}

// CompleteGeneration stores the artifact of generation a.GenerationID as the
// next version of its stage, marks later stages' artifacts stale and sets the
// session ready. Errors: conflict when the session is not generating that
// generation for that stage or an artifact of it exists; not_found for an
// unknown session.
func (s *Store) CompleteGeneration(ctx context.Context, a ports.SpecArtifact, at time.Time) error {
	defer s.lock()()
	ss, ok := s.spec.sessions[a.SessionID]
	if !ok {
		return notFoundSpec(a.SessionID)
	}
	if ss.Status != ports.SpecGenerating || ss.GenerationID != a.GenerationID || ss.Generating != a.Stage {
		return ports.Errorf(ports.KindConflict, "spec session %s is not generating %s", a.SessionID, a.GenerationID)
	}
	version := 0
	for _, x := range s.spec.artifacts {
		if x.SessionID != a.SessionID {
			continue
		}
		if x.GenerationID == a.GenerationID {
			return ports.Errorf(ports.KindConflict, "generation %s has an artifact already", a.GenerationID)
		}
		if x.Stage == a.Stage {
			version = max(version, x.Version)
		}
	}
	if _, ok := s.spec.artifacts[a.ID]; ok {
		return ports.Errorf(ports.KindConflict, "spec artifact %s exists already", a.ID)
	}
	rank := slices.Index(ports.Stages, a.Stage)
	for id, x := range s.spec.artifacts {
		if x.SessionID == a.SessionID && slices.Index(ports.Stages, x.Stage) > rank && !x.Stale {
			x.Stale = true
			put(ctx, s, s.spec.artifacts, id, x)
		}
	}
	a.Version, a.Stale, a.CreatedAt = version+1, false, utc(a.CreatedAt)
	a = copyArtifact(a)
	put(ctx, s, s.spec.artifacts, a.ID, a)
	ss.Status, ss.CurrentStage, ss.Generating, ss.GenerationID, ss.UpdatedAt = ports.SpecReady, a.Stage, "", "", utc(at)
	put(ctx, s, s.spec.sessions, ss.ID, ss)
	return nil
}

// SaveEditedArtifact stores a hand-written version as version base+1 of
// its stage while the owner's session is not generating and base is the
// stage's latest version; it marks later stages stale.
func (s *Store) SaveEditedArtifact(ctx context.Context, owner ports.Owner, a ports.SpecArtifact, base int, at time.Time) (ports.SpecArtifact, error) {
	defer s.lock()()
	if !slices.Contains(ports.Stages, a.Stage) {
		return ports.SpecArtifact{}, ports.Invalid("unknown stage", ports.FieldError{Field: "stage", Reason: "unknown"})
	}
	ss, err := s.ownedSpec(owner, a.SessionID)
	if err != nil {
		return ports.SpecArtifact{}, err
	}
	if ss.Status == ports.SpecGenerating {
		return ports.SpecArtifact{}, ports.Errorf(ports.KindConflict, "spec session %s is generating", a.SessionID)
	}
	latest := 0
	for _, x := range s.spec.artifacts {
		if x.SessionID != a.SessionID {
			continue
		}
		if x.GenerationID == a.GenerationID {
			return ports.SpecArtifact{}, ports.Errorf(ports.KindConflict, "generation %s has an artifact already", a.GenerationID)
		}
		if x.Stage == a.Stage {
			latest = max(latest, x.Version)
		}
	}
	if _, ok := s.spec.artifacts[a.ID]; ok {
		return ports.SpecArtifact{}, ports.Errorf(ports.KindConflict, "spec artifact %s exists already", a.ID)
	}
	if latest != base {
		return ports.SpecArtifact{}, ports.Errorf(ports.KindPreconditionFailed, "the latest %s version of spec session %s is %d, not %d",
			a.Stage, a.SessionID, latest, base)
	}
	rank := slices.Index(ports.Stages, a.Stage)
	for id, x := range s.spec.artifacts {
		if x.SessionID == a.SessionID && slices.Index(ports.Stages, x.Stage) > rank && !x.Stale {
			x.Stale = true
			put(ctx, s, s.spec.artifacts, id, x)
		}
	}
	if a.CreatedAt.IsZero() {
		a.CreatedAt = at
	}
	a.Version, a.Stale, a.CreatedAt = base+1, false, utc(a.CreatedAt)
	a = copyArtifact(a)
	put(ctx, s, s.spec.artifacts, a.ID, a)
	ss.CurrentStage, ss.UpdatedAt = a.Stage, utc(at)
	put(ctx, s, s.spec.sessions, ss.ID, ss)
	return copyArtifact(a), nil
}

// FailGeneration sets the session failed with e while it still generates
// generationID; conflict otherwise (a missing session included).
func (s *Store) FailGeneration(ctx context.Context, sessionID, generationID string, e ports.SpecError, at time.Time) error {
	defer s.lock()()
	ss, ok := s.spec.sessions[sessionID]
	if !ok || ss.Status != ports.SpecGenerating || ss.GenerationID != generationID {
		return ports.Errorf(ports.KindConflict, "spec session %s is not generating %s", sessionID, generationID)
	}
	ss.Status, ss.Generating, ss.GenerationID, ss.Error, ss.UpdatedAt = ports.SpecFailed, "", "", &e, utc(at)
	put(ctx, s, s.spec.sessions, sessionID, ss)
	return nil
}

// ListArtifacts returns every version of every artifact of a session, in
// stage order, then version order.
func (s *Store) ListArtifacts(_ context.Context, sessionID string) ([]ports.SpecArtifact, error) {
	defer s.lock()()
	var out []ports.SpecArtifact
	for _, a := range s.spec.artifacts {
		if a.SessionID == sessionID {
			out = append(out, copyArtifact(a))
		}
	}
	slices.SortFunc(out, func(a, b ports.SpecArtifact) int {
		return cmp.Or(cmp.Compare(slices.Index(ports.Stages, a.Stage), slices.Index(ports.Stages, b.Stage)), cmp.Compare(a.Version, b.Version))
	})
	return out, nil
}

// copyArtifact is a with nothing shared with the caller; an empty
// Generation.FindingsByKind becomes nil, as the SQL store reads it back.
func copyArtifact(a ports.SpecArtifact) ports.SpecArtifact {
	a.Data, a.Checks = bytes.Clone(a.Data), slices.Clone(a.Checks)
	g := &a.Generation
	g.FindingsByKind = maps.Clone(g.FindingsByKind)
	if len(g.FindingsByKind) == 0 {
		g.FindingsByKind = nil
	}
	if g.Temperature != nil {
		t := *g.Temperature
		g.Temperature = &t
	}
	if g.Seed != nil {
		n := *g.Seed
		g.Seed = &n
	}
	return a
}

func copyStandard(st ports.Standard) ports.Standard {
	st.AppliesTo = slices.Clone(st.AppliesTo)
	st.CreatedAt, st.UpdatedAt = utc(st.CreatedAt), utc(st.UpdatedAt)
	return st
}

// CreateStandard stores a new standard; conflict for a taken id, not_found
// for a missing org.
func (s *Store) CreateStandard(ctx context.Context, st ports.Standard) error {
	defer s.lock()()
	if _, ok := s.identity.orgs[st.OrgID]; !ok {
		return ports.NotFound("org", st.OrgID)
	}
	if _, ok := s.spec.standards[st.ID]; ok {
		return ports.Errorf(ports.KindConflict, "standard %s exists already", st.ID)
	}
	if st.UpdatedAt.IsZero() {
		st.UpdatedAt = st.CreatedAt
	}
	put(ctx, s, s.spec.standards, st.ID, seqd[ports.Standard]{copyStandard(st), s.next()})
	return nil
}

// GetStandard returns the org's standard; not_found when absent or another
// org's.
func (s *Store) GetStandard(_ context.Context, orgID, id string) (ports.Standard, error) {
	defer s.lock()()
	r, ok := s.spec.standards[id]
	if !ok || r.v.OrgID != orgID {
		return ports.Standard{}, ports.NotFound("standard", id)
	}
	return copyStandard(r.v), nil
}

// ListStandards returns the org's standards, oldest first (then by id).
func (s *Store) ListStandards(_ context.Context, orgID string) ([]ports.Standard, error) {
	defer s.lock()()
	var rows []seqd[ports.Standard]
	for _, r := range s.spec.standards {
		if r.v.OrgID == orgID {
			rows = append(rows, r)
		}
	}
	slices.SortFunc(rows, func(a, b seqd[ports.Standard]) int {
		return cmp.Or(a.v.CreatedAt.Compare(b.v.CreatedAt), cmp.Compare(a.v.ID, b.v.ID))
	})
	var out []ports.Standard
	for _, r := range rows {
		out = append(out, copyStandard(r.v))
	}
	return out, nil
}

// UpdateStandard replaces the org's standard's title, body, stages and
// update time; not_found as GetStandard.
func (s *Store) UpdateStandard(ctx context.Context, st ports.Standard) error {
	defer s.lock()()
	r, ok := s.spec.standards[st.ID]
	if !ok || r.v.OrgID != st.OrgID {
		return ports.NotFound("standard", st.ID)
	}
	r.v.Title, r.v.Body, r.v.AppliesTo, r.v.UpdatedAt = st.Title, st.Body, slices.Clone(st.AppliesTo), utc(st.UpdatedAt)
	put(ctx, s, s.spec.standards, st.ID, r)
	return nil
}

// DeleteStandard deletes the org's standard; not_found as GetStandard.
func (s *Store) DeleteStandard(ctx context.Context, orgID, id string) error {
	defer s.lock()()
	r, ok := s.spec.standards[id]
	if !ok || r.v.OrgID != orgID {
		return ports.NotFound("standard", id)
	}
	del(ctx, s, s.spec.standards, id)
	return nil
}

// PutSpecDigest stores d as its session's digest, replacing the one it had;
// not_found for an unknown session.
func (s *Store) PutSpecDigest(ctx context.Context, d ports.SpecDigest) error {
	defer s.lock()()
	if _, ok := s.spec.sessions[d.SessionID]; !ok {
		return notFoundSpec(d.SessionID)
	}
	d.InputIDs, d.Data, d.CreatedAt = slices.Clone(d.InputIDs), bytes.Clone(d.Data), utc(d.CreatedAt)
	put(ctx, s, s.spec.digests, d.SessionID, d)
	return nil
}

// GetSpecDigest returns the session's digest; not_found when it has none.
func (s *Store) GetSpecDigest(_ context.Context, sessionID string) (ports.SpecDigest, error) {
	defer s.lock()()
	d, ok := s.spec.digests[sessionID]
	if !ok {
		return ports.SpecDigest{}, ports.NotFound("spec digest", sessionID)
	}
	d.InputIDs, d.Data = slices.Clone(d.InputIDs), bytes.Clone(d.Data)
	return d, nil
}
