package spec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/devpilot/devpilot/core/internal/linediff"
	"github.com/devpilot/devpilot/ports"
)

// Error codes of editing and comparing stage versions.
const (
	// CodeVersionRequired (precondition_required): an edit did not name the
	// version it was based on.
	CodeVersionRequired = "version_required"
	// CodeStaleVersion (precondition_failed): an edit was based on a version
	// that is no longer the stage's latest.
	CodeStaleVersion = "stale_version"
	// CodeInvalidDocument (invalid): an edited document breaks the stage's
	// schema or id rules; the field errors list the problems.
	CodeInvalidDocument = "invalid_document"
)

// EditStage stores data, the stage's structured document written by the
// caller, as the stage's next version, when base is the stage's latest
// version. The document is validated as a model's answer is (the stage's
// JSON Schema, then its id rules), its traceability is checked against the
// earlier stages' current artifacts, and its Markdown is rendered; the new
// version names the caller as its author (EditedBy) and has no model. Every
// later stage's artifact becomes stale, as after a regeneration. It
// returns the new version.
//
// Errors: invalid (field stage) for an unknown stage; not_found when the
// session is absent or another's; precondition_required (version_required)
// when base is nil; conflict (generation_running) while the session
// generates; conflict (stage_not_ready) when the stage has no artifact yet;
// precondition_failed (stale_version) when base is not the latest version;
// invalid (invalid_document) with a field error per problem of the
// document.
func (s *Service) EditStage(ctx context.Context, sessionID string, stage ports.Stage, data json.RawMessage, base *int) (ports.SpecArtifact, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return ports.SpecArtifact{}, err
	}
	if !knownStage(stage) {
		return ports.SpecArtifact{}, ports.Invalid("unknown stage", ports.FieldError{Field: "stage", Reason: "must be one of " + stageList()})
	}
	if !ports.IsID(sessionID) {
		return ports.SpecArtifact{}, ports.NotFound("specification session", sessionID)
	}
	sess, err := s.d.Specs.GetSpecSession(ctx, p.Owner(), sessionID)
	if err != nil {
		return ports.SpecArtifact{}, err
	}
	if base == nil {
		return ports.SpecArtifact{}, &ports.Error{Kind: ports.KindPreconditionRequired, Code: CodeVersionRequired,
			Message: fmt.Sprintf("name the %s version you edited (If-Match: \"<version>\")", stage)}
	}
	if sess.Status == ports.SpecGenerating {
		return ports.SpecArtifact{}, generationRunning(sess, nil)
	}
	arts, err := s.d.Specs.ListArtifacts(ctx, sessionID)
	if err != nil {
		return ports.SpecArtifact{}, err
	}
	current := currentArtifacts(arts)
	cur, ok := current[stage]
	if !ok {
		return ports.SpecArtifact{}, &ports.Error{Kind: ports.KindConflict, Code: CodeStageNotReady,
			Message: fmt.Sprintf("stage %s has no version to edit; generate it first", stage)}
	}
	if cur.Version != *base {
		return ports.SpecArtifact{}, staleVersion(stage, *base, cur.Version, nil)
	}
	out, problems := parseOutput(stage, string(data))
	if len(problems) > 0 {
		fields := make([]ports.FieldError, len(problems))
		for i, pr := range problems {
			fields[i] = ports.FieldError{Field: "data", Reason: pr}
		}
		return ports.SpecArtifact{}, &ports.Error{Kind: ports.KindInvalid, Code: CodeInvalidDocument,
			Message: fmt.Sprintf("the %s document is invalid: %s", stage, problems[0]), Fields: fields}
	}
	for st := range current {
		if stageIndex(st) >= stageIndex(stage) {
			delete(current, st)
		}
	}
	checks := traceability(out.doc, earlierDocs(current))
	if checks == nil {
		checks = []string{}
	}
	now := s.d.Clock.Now()
	art := ports.SpecArtifact{
		ID: s.d.IDs.NewID(), SessionID: sessionID, Stage: stage, Format: "markdown",
		Content: render(out.doc, checks), Data: out.data, Checks: checks,
		GenerationID: s.d.IDs.NewID(), CreatedAt: now, EditedBy: p.UserID,
	}
	saved, err := s.d.Specs.SaveEditedArtifact(ctx, p.Owner(), art, *base, now)
	switch {
	case errors.Is(err, ports.ErrPreconditionFailed):
		return ports.SpecArtifact{}, staleVersion(stage, *base, 0, err)
	case errors.Is(err, ports.ErrConflict):
		return ports.SpecArtifact{}, generationRunning(sess, err)
	case err != nil:
		return ports.SpecArtifact{}, err
	}
	s.log.InfoContext(ctx, "stage edited", "session_id", sessionID, "stage", stage, "version", saved.Version, "checks", len(checks))
	one := []ports.SpecArtifact{saved}
	s.nameEditors(ctx, p, one)
	return one[0], nil
}

// nameEditors fills in the EditorName of the artifacts edited by hand: the
// editor's email, when they are a user of the caller's organisation (a
// removed member included, as they did write the version). A user who
// cannot be read leaves the name empty: the version still says who by id.
func (s *Service) nameEditors(ctx context.Context, p ports.Principal, arts []ports.SpecArtifact) {
	if s.d.Users == nil {
		return
	}
	names := map[string]string{}
	for i, a := range arts {
		if a.EditedBy == "" {
			continue
		}
		name, ok := names[a.EditedBy]
		if !ok {
			u, err := s.d.Users.GetUser(ctx, a.EditedBy)
			switch {
			case err == nil && u.OrgID == p.OrgID:
				name = u.Email
			case err != nil && !errors.Is(err, ports.ErrNotFound):
				s.log.WarnContext(ctx, "naming a version's editor", "user_id", a.EditedBy, "err", err)
			}
			names[a.EditedBy] = name
		}
		arts[i].EditorName = name
	}
}

func staleVersion(stage ports.Stage, base, latest int, cause error) error {
	msg := fmt.Sprintf("%s version %d is no longer the latest; reload and edit the latest", stage, base)
	if latest > 0 {
		msg = fmt.Sprintf("%s version %d is no longer the latest (%d is); reload and edit the latest", stage, base, latest)
	}
	return &ports.Error{Kind: ports.KindPreconditionFailed, Code: CodeStaleVersion, Message: msg, Err: cause}
}

// StageVersions returns every version of a stage of the caller's session,
// newest first (empty before the stage is generated). Errors: invalid
// (field stage) for an unknown stage; not_found when the session is absent
// or another's.
func (s *Service) StageVersions(ctx context.Context, sessionID string, stage ports.Stage) ([]ports.SpecArtifact, error) {
	arts, err := s.stageArtifacts(ctx, sessionID, stage)
	if err != nil {
		return nil, err
	}
	slices.Reverse(arts)
	if p, err := ports.RequirePrincipal(ctx); err == nil {
		s.nameEditors(ctx, p, arts)
	}
	return arts, nil
}

func (s *Service) stageArtifacts(ctx context.Context, sessionID string, stage ports.Stage) ([]ports.SpecArtifact, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return nil, err
	}
	if !knownStage(stage) {
		return nil, ports.Invalid("unknown stage", ports.FieldError{Field: "stage", Reason: "must be one of " + stageList()})
	}
	if !ports.IsID(sessionID) {
		return nil, ports.NotFound("specification session", sessionID)
	}
	if _, err := s.d.Specs.GetSpecSession(ctx, p.Owner(), sessionID); err != nil {
		return nil, err
	}
	arts, err := s.d.Specs.ListArtifacts(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	out := []ports.SpecArtifact{}
	for _, a := range arts {
		if a.Stage == stage {
			out = append(out, a)
		}
	}
	return out, nil
}

// StageDiff compares two versions of a stage: its items (see DiffItem)
// added, removed and changed from From to To, and a unified diff of their
// Markdown.
type StageDiff struct {
	From, To int
	Added    []DiffItem
	Removed  []DiffItem
	Changed  []ChangedItem
	TextDiff string
}

// DiffItem is an item of a stage's document. Section is the document's
// list it is in (functional_requirements, epics, goals, …). ID is its id
// (REQ-1, EP-2, ST-2.1, PRP-2.1, …); for a list of strings, the string;
// for a list of objects without ids, the object's naming field (persona,
// metric, risk, name, term or question). Item is the item as JSON.
type DiffItem struct {
	Section string
	ID      string
	Item    json.RawMessage
}

// ChangedItem is an item in both versions whose Fields (the names of its
// top-level fields, sorted) differ. The document's own fields (title,
// summary, problem, …) are the item with Section "document" and the
// stage's name as ID.
type ChangedItem struct {
	Section string
	ID      string
	Fields  []string
}

// DiffVersions compares versions from and to of a stage of the caller's
// session. Errors: StageVersions'; not_found when either version does not
// exist.
func (s *Service) DiffVersions(ctx context.Context, sessionID string, stage ports.Stage, from, to int) (StageDiff, error) {
	arts, err := s.stageArtifacts(ctx, sessionID, stage)
	if err != nil {
		return StageDiff{}, err
	}
	find := func(v int) (ports.SpecArtifact, error) {
		for _, a := range arts {
			if a.Version == v {
				return a, nil
			}
		}
		return ports.SpecArtifact{}, ports.NotFound(fmt.Sprintf("%s version", stage), fmt.Sprint(v))
	}
	a, err := find(from)
	if err != nil {
		return StageDiff{}, err
	}
	b, err := find(to)
	if err != nil {
		return StageDiff{}, err
	}
	d := diffDocs(stage, a.Data, b.Data)
	d.From, d.To = from, to
	d.TextDiff = linediff.Unified(fmt.Sprintf("%s v%d", stage, from), fmt.Sprintf("%s v%d", stage, to), a.Content, b.Content, 3)
	return d, nil
}

// diffDocs compares two documents of stage by their items.
func diffDocs(stage ports.Stage, from, to json.RawMessage) StageDiff {
	var a, b map[string]json.RawMessage
	_ = json.Unmarshal(from, &a)
	_ = json.Unmarshal(to, &b)
	d := StageDiff{Added: []DiffItem{}, Removed: []DiffItem{}, Changed: []ChangedItem{}}
	var docFields []string
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	slices.Sort(sorted)
	for _, k := range sorted {
		ia, listA := items(a[k])
		ib, listB := items(b[k])
		if !listA && !listB {
			if !sameJSON(a[k], b[k]) {
				docFields = append(docFields, k)
			}
			continue
		}
		for _, x := range ib {
			y, ok := findItem(ia, x.id)
			switch {
			case !ok:
				d.Added = append(d.Added, DiffItem{Section: k, ID: x.id, Item: x.raw})
			case !sameJSON(x.raw, y.raw):
				if f := changedFields(y.raw, x.raw); len(f) > 0 {
					d.Changed = append(d.Changed, ChangedItem{Section: k, ID: x.id, Fields: f})
				}
			}
		}
		for _, y := range ia {
			if _, ok := findItem(ib, y.id); !ok {
				d.Removed = append(d.Removed, DiffItem{Section: k, ID: y.id, Item: y.raw})
			}
		}
	}
	if len(docFields) > 0 {
		d.Changed = append([]ChangedItem{{Section: "document", ID: string(stage), Fields: docFields}}, d.Changed...)
	}
	return d
}

type item struct {
	id  string
	raw json.RawMessage
}

// namingFields are the fields that name an item of a list, in the order
// they are looked for.
var namingFields = []string{"id", "persona", "metric", "risk", "name", "term", "question"}

// items reads a JSON array as items keyed by their ids; false when raw is
// not an array.
func items(raw json.RawMessage) ([]item, bool) {
	var list []json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &list) != nil {
		return nil, false
	}
	out := make([]item, 0, len(list))
	for _, r := range list {
		var s string
		if json.Unmarshal(r, &s) == nil {
			out = append(out, item{id: s, raw: r})
			continue
		}
		var obj map[string]json.RawMessage
		id := ""
		if json.Unmarshal(r, &obj) == nil {
			for _, f := range namingFields {
				if json.Unmarshal(obj[f], &id) == nil && id != "" {
					break
				}
			}
		}
		if id == "" {
			id = string(compact(r))
		}
		out = append(out, item{id: id, raw: r})
	}
	return out, true
}

func findItem(list []item, id string) (item, bool) {
	for _, x := range list {
		if x.id == id {
			return x, true
		}
	}
	return item{}, false
}

// changedFields names the top-level fields that differ between two
// objects, sorted; nil for values that are not objects.
func changedFields(a, b json.RawMessage) []string {
	var oa, ob map[string]json.RawMessage
	if json.Unmarshal(a, &oa) != nil || json.Unmarshal(b, &ob) != nil {
		return nil
	}
	var out []string
	for k, v := range oa {
		if w, ok := ob[k]; !ok || !sameJSON(v, w) {
			out = append(out, k)
		}
	}
	for k := range ob {
		if _, ok := oa[k]; !ok {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// sameJSON reports whether two JSON values are equal as values.
func sameJSON(a, b json.RawMessage) bool {
	if bytes.Equal(compact(a), compact(b)) {
		return true
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

func compact(r json.RawMessage) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, r) != nil {
		return r
	}
	return buf.Bytes()
}
