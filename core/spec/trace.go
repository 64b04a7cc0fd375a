package spec

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/devpilot/devpilot/ports"
)

// This file holds the one traceability relation of a session: the export's
// traceability.md and traceability.csv, the GitHub issues an export plans
// and GET /pse/sessions/{id}/traceability (which the console shows) are all
// derived from traceOf.
//
// The relation: an epic traces to the requirements it lists
// (requirement_ids); a story to the requirements it cites (its
// requirement_ids), through its epic; a PRP to its story. A chain
// requirement → epic → story → PRP is a row for each requirement r, each
// epic listing r, each story of that epic citing r, and each PRP of that
// story. A story citing none of its epic's requirements is listed once,
// under its epic and under no requirement, as an orphan with the note "ST-x
// cites no requirement of its epic EP-y" — never under each of the epic's
// requirements.

// The statuses of a traceability row.
const (
	// TraceComplete: the requirement reaches a PRP.
	TraceComplete = "complete"
	// TracePartial: the chain stops before a PRP (not broken down yet, or
	// nothing below cites it).
	TracePartial = "partial"
	// TraceUncovered: a requirement no epic lists.
	TraceUncovered = "uncovered"
	// TracePending: a requirement while no epics are generated.
	TracePending = "pending"
	// TraceOrphan: an item no requirement reaches: its parent reference
	// names nothing, or it is a story citing none of its epic's
	// requirements.
	TraceOrphan = "orphan"
)

// TraceItem is an id and its title; an empty ID is a link the chain does
// not have, an empty Title an id that names nothing.
type TraceItem struct{ ID, Title string }

// TraceRow is one chain requirement → epic → story → PRP.
type TraceRow struct {
	Requirement, Epic, Story, PRP TraceItem
	// Status is one of the Trace* constants.
	Status string
	// Note says, in words, why the chain is not complete (may be empty).
	Note string
}

// DanglingRef is a reference to an id that does not exist: From names Ref.
type DanglingRef struct {
	From, Ref string
	// Note says it in words ("EP-1 names unknown requirement REQ-9").
	Note string
}

// Traceability is the traceability of a session's current stages.
type Traceability struct {
	// PRD is whether the PRD is generated: until it is, there are no rows.
	PRD bool
	// Epics is whether the epics are generated: until they are, every
	// requirement is pending and none is uncovered.
	Epics bool
	// Rows are the chains, requirements first in the PRD's order, then
	// the orphans.
	Rows []TraceRow
	// Requirements is the number of functional requirements.
	Requirements int
	// Uncovered are the requirements no epic lists.
	Uncovered []string
	// Orphans are the items no requirement reaches.
	Orphans []string
	// Dangling are the references to ids that do not exist.
	Dangling []DanglingRef
	// Stale are the stages the rows come from that are stale.
	Stale []ports.Stage
}

// Traceability is the traceability of the caller's session's current
// stages, the relation its export's files and GitHub issues use. Errors:
// not_found when the session is absent or another user's or
// organisation's, as GetSession.
func (s *Service) Traceability(ctx context.Context, id string) (Traceability, error) {
	e, err := s.ExportSession(ctx, id, ExportZip)
	if err != nil {
		return Traceability{}, err
	}
	return traceOf(e.current), nil
}

// traceOf derives the traceability from the current artifacts' structured
// data (see the top of this file).
func traceOf(current []ports.SpecArtifact) Traceability {
	var prd *prdDoc
	var epics *epicsDoc
	var stories *storiesDoc
	var prps *prpsDoc
	var m Traceability
	for _, a := range current {
		switch d := decodeDoc(a.Stage, a.Data).(type) {
		case *prdDoc:
			prd = d
		case *epicsDoc:
			epics = d
		case *storiesDoc:
			stories = d
		case *prpsDoc:
			prps = d
		default:
			continue
		}
		if a.Stale {
			m.Stale = append(m.Stale, a.Stage)
		}
	}
	if prd == nil {
		m.Stale = nil
		return m
	}
	m.PRD = true
	m.Requirements = len(prd.Functional)
	m.Epics = epics != nil
	haveStories, havePRPs := stories != nil, prps != nil
	if epics == nil {
		epics = &epicsDoc{}
	}
	if stories == nil {
		stories = &storiesDoc{}
	}
	if prps == nil {
		prps = &prpsDoc{}
	}
	reqs := set(mapIDs(prd.Functional, func(r requirement) string { return r.ID }))
	ordered := slices.Clone(epics.Epics)
	slices.SortStableFunc(ordered, func(a, b epic) int { return a.Order - b.Order })
	epicIDs := set(mapIDs(ordered, func(e epic) string { return e.ID }))
	storyIDs := set(mapIDs(stories.Stories, func(s story) string { return s.ID }))

	// status is a row's own status, else what its chain reaches.
	status := func(r TraceRow, reached string) string {
		if r.Status != "" {
			return r.Status
		}
		return reached
	}
	// storyRows adds the rows from a story down to its PRPs under head.
	storyRows := func(head TraceRow, s story) {
		head.Story = TraceItem{s.ID, s.Title}
		n := 0
		for _, p := range prps.PRPs {
			if p.StoryID == s.ID {
				r := head
				r.PRP, r.Status = TraceItem{p.ID, p.Title}, status(head, TraceComplete)
				m.Rows = append(m.Rows, r)
				n++
			}
		}
		if n == 0 {
			head.Status = status(head, TracePartial)
			if head.Note == "" && havePRPs {
				head.Note = "no PRP implements " + s.ID
			}
			m.Rows = append(m.Rows, head)
		}
	}
	// epicRows adds the rows from an epic down, through the stories of it
	// that under admits.
	epicRows := func(head TraceRow, ep epic, under func(story) bool) {
		head.Epic = TraceItem{ep.ID, ep.Title}
		n := 0
		for _, s := range stories.Stories {
			if s.EpicID == ep.ID && under(s) {
				storyRows(head, s)
				n++
			}
		}
		if n == 0 {
			head.Status = status(head, TracePartial)
			if head.Note == "" && haveStories {
				head.Note = "no story of " + ep.ID + " cites " + head.Requirement.ID
				if head.Requirement.ID == "" {
					head.Note = ep.ID + " has no story"
				}
			}
			m.Rows = append(m.Rows, head)
		}
	}
	// citesEpic is whether a story cites one of its epic's (known)
	// requirements.
	citesEpic := func(ep epic, s story) bool {
		return slices.ContainsFunc(s.RequirementIDs, func(id string) bool { return reqs[id] && slices.Contains(ep.RequirementIDs, id) })
	}

	for _, r := range prd.Functional {
		head := TraceRow{Requirement: TraceItem{r.ID, r.Title}}
		n := 0
		for _, ep := range ordered {
			if !slices.Contains(ep.RequirementIDs, r.ID) {
				continue
			}
			n++
			epicRows(head, ep, func(s story) bool { return slices.Contains(s.RequirementIDs, r.ID) })
		}
		if n == 0 {
			head.Status = TraceUncovered
			if !m.Epics {
				head.Status = TracePending
			} else {
				m.Uncovered = append(m.Uncovered, r.ID)
				head.Note = "no epic lists " + r.ID
			}
			m.Rows = append(m.Rows, head)
		}
	}
	for _, ep := range ordered {
		if !slices.ContainsFunc(ep.RequirementIDs, func(id string) bool { return reqs[id] }) {
			// An epic serving no known requirement, with all its stories.
			note := ep.ID + " lists no requirement"
			if len(ep.RequirementIDs) > 0 {
				note = fmt.Sprintf("%s names unknown requirement %s", ep.ID, strings.Join(ep.RequirementIDs, ", "))
			}
			m.Orphans = append(m.Orphans, ep.ID)
			epicRows(TraceRow{Status: TraceOrphan, Note: note}, ep, func(story) bool { return true })
			continue
		}
		// The stories of a traced epic that cite none of its requirements:
		// once each, under the epic alone.
		for _, s := range stories.Stories {
			if s.EpicID != ep.ID || citesEpic(ep, s) {
				continue
			}
			note := fmt.Sprintf("%s cites no requirement of its epic %s", s.ID, ep.ID)
			if len(s.RequirementIDs) > 0 {
				note += " (it cites " + strings.Join(s.RequirementIDs, ", ") + ")"
			}
			m.Orphans = append(m.Orphans, s.ID)
			storyRows(TraceRow{Epic: TraceItem{ep.ID, ep.Title}, Status: TraceOrphan, Note: note}, s)
		}
	}
	for _, s := range stories.Stories {
		if epicIDs[s.EpicID] {
			continue
		}
		m.Orphans = append(m.Orphans, s.ID)
		storyRows(TraceRow{Epic: TraceItem{s.EpicID, ""}, Status: TraceOrphan, Note: fmt.Sprintf("%s names unknown epic %s", s.ID, s.EpicID)}, s)
	}
	for _, p := range prps.PRPs {
		if storyIDs[p.StoryID] {
			continue
		}
		m.Orphans = append(m.Orphans, p.ID)
		m.Rows = append(m.Rows, TraceRow{Story: TraceItem{p.StoryID, ""}, PRP: TraceItem{p.ID, p.Title}, Status: TraceOrphan,
			Note: fmt.Sprintf("%s names unknown story %s", p.ID, p.StoryID)})
	}

	// The references to ids that do not exist, in stage order.
	dangling := func(from, ref, kind string) {
		m.Dangling = append(m.Dangling, DanglingRef{From: from, Ref: ref, Note: fmt.Sprintf("%s names unknown %s %s", from, kind, ref)})
	}
	for _, ep := range ordered {
		for _, id := range ep.RequirementIDs {
			if !reqs[id] {
				dangling(ep.ID, id, "requirement")
			}
		}
		for _, id := range ep.DependsOn {
			if !epicIDs[id] {
				dangling(ep.ID, id, "epic")
			}
		}
	}
	for _, s := range stories.Stories {
		if !epicIDs[s.EpicID] {
			dangling(s.ID, s.EpicID, "epic")
		}
		for _, id := range s.RequirementIDs {
			if !reqs[id] {
				dangling(s.ID, id, "requirement")
			}
		}
	}
	for _, p := range prps.PRPs {
		if !storyIDs[p.StoryID] {
			dangling(p.ID, p.StoryID, "story")
		}
	}
	return m
}

// storyRequirements are the requirements each story traces to, by story
// id: the requirement of every row that has both.
func (m Traceability) storyRequirements() map[string][]TraceItem {
	out := map[string][]TraceItem{}
	for _, r := range m.Rows {
		if r.Story.ID != "" && r.Requirement.ID != "" && !slices.Contains(out[r.Story.ID], r.Requirement) {
			out[r.Story.ID] = append(out[r.Story.ID], r.Requirement)
		}
	}
	return out
}

// storyNotes are the notes of the rows of stories that trace to no
// requirement, by story id.
func (m Traceability) storyNotes() map[string]string {
	out := map[string]string{}
	for _, r := range m.Rows {
		if r.Story.ID != "" && r.Requirement.ID == "" && r.Note != "" {
			out[r.Story.ID] = r.Note
		}
	}
	return out
}

// summary says how the requirements are covered, in a few lines.
func (m Traceability) summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "- Requirements: %d\n", m.Requirements)
	switch {
	case !m.Epics:
		b.WriteString("- Uncovered requirements: not known until the epics are generated\n")
	case len(m.Uncovered) == 0:
		b.WriteString("- Uncovered requirements: none\n")
	default:
		fmt.Fprintf(&b, "- Uncovered requirements (no epic): %s\n", strings.Join(m.Uncovered, ", "))
	}
	if len(m.Orphans) == 0 {
		b.WriteString("- Orphans: none\n")
	} else {
		fmt.Fprintf(&b, "- Orphans (reached from no requirement): %s\n", strings.Join(m.Orphans, ", "))
	}
	if len(m.Dangling) == 0 {
		b.WriteString("- Dangling references: none\n")
	} else {
		notes := make([]string, len(m.Dangling))
		for i, d := range m.Dangling {
			notes[i] = d.Note
		}
		fmt.Fprintf(&b, "- Dangling references: %s\n", strings.Join(notes, "; "))
	}
	if len(m.Stale) > 0 {
		names := make([]string, len(m.Stale))
		for i, st := range m.Stale {
			names[i] = stageTitles[st]
		}
		fmt.Fprintf(&b, "- Derived from stale stages: %s — regenerate them for a current matrix\n", strings.Join(names, ", "))
	}
	return b.String()
}

// markdown is traceability.md: the summary and the matrix as a table.
func (m Traceability) markdown() string {
	var b strings.Builder
	b.WriteString("# Traceability\n\n")
	b.WriteString("Each row is one chain requirement → epic → story → PRP, from the current stages' structured data: " +
		"an epic traces to the requirements it lists, a story to those it cites. " +
		"Status: `complete` reaches a PRP, `partial` stops before one, `uncovered` is a requirement no epic lists, " +
		"`pending` a requirement before the epics are generated, `orphan` an item no requirement reaches " +
		"(its parent reference names nothing, or a story cites none of its epic's requirements: it is listed once, under its epic).\n\n")
	b.WriteString(m.summary())
	b.WriteString("\n| Requirement | Epic | Story | PRP | Status | Note |\n|---|---|---|---|---|---|\n")
	for _, r := range m.Rows {
		cells := []string{mdCell(r.Requirement), mdCell(r.Epic), mdCell(r.Story), mdCell(r.PRP), r.Status, tableText(r.Note)}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	return b.String()
}
