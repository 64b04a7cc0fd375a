package spec

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/devpilot/devpilot/ports"
)

// earlier holds the current artifacts of the stages before the one being
// generated, decoded; a nil field is a stage without a usable artifact, and
// the checks against it are skipped.
type earlier struct {
	scope   *scopeDoc
	prd     *prdDoc
	epics   *epicsDoc
	stories *storiesDoc
	// repo is the linked repository's files and commands, nil when the
	// session is not linked or the repository could not be read.
	repo *repoView
}

func earlierDocs(current map[ports.Stage]ports.SpecArtifact) earlier {
	var e earlier
	if a, ok := current[ports.StageScope]; ok {
		e.scope, _ = decodeDoc(ports.StageScope, a.Data).(*scopeDoc)
	}
	if a, ok := current[ports.StagePRD]; ok {
		e.prd, _ = decodeDoc(ports.StagePRD, a.Data).(*prdDoc)
	}
	if a, ok := current[ports.StageEpics]; ok {
		e.epics, _ = decodeDoc(ports.StageEpics, a.Data).(*epicsDoc)
	}
	if a, ok := current[ports.StageStories]; ok {
		e.stories, _ = decodeDoc(ports.StageStories, a.Data).(*storiesDoc)
	}
	return e
}

// FindingKind classifies a finding: what kind of rule a stage's document
// breaks. The kinds are stable names, for counting findings (in
// Prometheus series, in evaluation reports) without parsing messages.
type FindingKind string

// The kinds of findings.
const (
	// FindingUnknownID: an id named that the earlier stages do not have.
	FindingUnknownID FindingKind = "unknown_id"
	// FindingUncovered: an item of an earlier stage no item of this one
	// covers (a requirement without an epic, a story without a PRP, …).
	FindingUncovered FindingKind = "uncovered"
	// FindingDependency: a dependency on itself, on an unknown item, or on
	// one that comes later.
	FindingDependency FindingKind = "dependency"
	// FindingCompoundCriterion: an acceptance criterion joining outcomes.
	FindingCompoundCriterion FindingKind = "compound_criterion"
	// FindingOversizedStory: a story too large to deliver at once.
	FindingOversizedStory FindingKind = "oversized_story"
	// FindingCriteriaMismatch: a PRP that does not carry its story's
	// acceptance criteria.
	FindingCriteriaMismatch FindingKind = "criteria_mismatch"
	// FindingGroundingPath: a PRP path that does not fit the linked
	// repository.
	FindingGroundingPath FindingKind = "grounding_path"
	// FindingGroundingCommand: a validation command the linked repository
	// does not show.
	FindingGroundingCommand FindingKind = "grounding_command"
	// FindingMissing: a batch answer without the item it was asked for.
	FindingMissing FindingKind = "missing"
	// FindingRepository: the linked repository could not be read.
	FindingRepository FindingKind = "repository"
	// FindingCrossPRP: PRPs that conflict with each other: two creating
	// the same path, or one modifying a path another creates when its
	// story does not depend on that one's.
	FindingCrossPRP FindingKind = "cross_prp"
)

// checks collects warnings in order, once each, with their kinds.
type checks struct {
	list  []string
	kinds []FindingKind // kinds[i] is list[i]'s
	seen  map[string]bool
}

func (c *checks) add(kind FindingKind, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if c.seen == nil {
		c.seen = map[string]bool{}
	}
	if !c.seen[msg] {
		c.seen[msg] = true
		c.list = append(c.list, msg)
		c.kinds = append(c.kinds, kind)
	}
}

// byKind counts the findings of each kind.
func (c *checks) byKind() map[FindingKind]int {
	out := map[FindingKind]int{}
	for _, k := range c.kinds {
		out[k]++
	}
	return out
}

func set(ids []string) map[string]bool {
	m := make(map[string]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// traceability lists the orphans and dangling references of a stage's
// document against the earlier stages: every requirement covered by an epic,
// every epic by a story, every story by a PRP, and every id named existing.
// They are warnings, kept with the artifact; nil when it is clean.
func traceability(doc any, e earlier) []string {
	return traceabilityChecks(doc, e).list
}

// traceabilityChecks is traceability with the findings' kinds.
func traceabilityChecks(doc any, e earlier) checks {
	var c checks
	switch d := doc.(type) {
	case *prdDoc:
		prdChecks(&c, d)
	case *epicsDoc:
		epicsChecks(&c, d, e.prd)
	case *storiesDoc:
		storiesChecks(&c, d, e.epics, e.prd)
		storyRules(&c, d, e.epics)
	case *prpsDoc:
		prpsChecks(&c, d, e.stories)
		groundingChecks(&c, d, e.repo, nil)
		for _, f := range crossPRPFindings(d, e.stories) {
			c.add(FindingCrossPRP, "%s", f.msg)
		}
	}
	return c
}

func prdChecks(c *checks, d *prdDoc) {
	reqs := set(mapIDs(d.Functional, func(r requirement) string { return r.ID }))
	all := set(mapIDs(d.NonFunctional, func(r nfRequirement) string { return r.ID }))
	for id := range reqs {
		all[id] = true
	}
	for _, j := range d.Journeys {
		for _, id := range j.RequirementIDs {
			if !reqs[id] {
				c.add(FindingUnknownID, "user journey %q names unknown requirement %s", j.Name, id)
			}
		}
	}
	for _, m := range d.SuccessMetrics {
		for _, id := range m.Validates {
			if !all[id] {
				c.add(FindingUnknownID, "success metric %q names unknown requirement %s", m.Metric, id)
			}
		}
	}
}

func epicsChecks(c *checks, d *epicsDoc, prd *prdDoc) {
	if prd != nil {
		reqs := set(mapIDs(prd.Functional, func(r requirement) string { return r.ID }))
		covered := map[string]bool{}
		for _, ep := range d.Epics {
			for _, id := range ep.RequirementIDs {
				covered[id] = true
				if !reqs[id] {
					c.add(FindingUnknownID, "%s names unknown requirement %s", ep.ID, id)
				}
			}
		}
		for _, r := range prd.Functional {
			if !covered[r.ID] {
				c.add(FindingUncovered, "%s is not covered by any epic", r.ID)
			}
		}
	}
	order := make(map[string]int, len(d.Epics))
	for _, ep := range d.Epics {
		order[ep.ID] = ep.Order
	}
	for _, ep := range d.Epics {
		for _, dep := range ep.DependsOn {
			o, ok := order[dep]
			switch {
			case dep == ep.ID:
				c.add(FindingDependency, "%s depends on itself", ep.ID)
			case !ok:
				c.add(FindingDependency, "%s depends on unknown epic %s", ep.ID, dep)
			case o >= ep.Order:
				c.add(FindingDependency, "%s depends on %s, which does not come before it in the order", ep.ID, dep)
			}
		}
	}
}

func storiesChecks(c *checks, d *storiesDoc, epics *epicsDoc, prd *prdDoc) {
	if epics != nil {
		known := set(mapIDs(epics.Epics, func(e epic) string { return e.ID }))
		for _, s := range d.Stories {
			if !known[s.EpicID] {
				c.add(FindingUnknownID, "%s names unknown epic %s", s.ID, s.EpicID)
			}
		}
		for _, ep := range epics.Epics {
			if !slices.ContainsFunc(d.Stories, func(s story) bool { return s.EpicID == ep.ID }) {
				c.add(FindingUncovered, "%s is not covered by any story", ep.ID)
			}
		}
	}
	if prd != nil {
		reqs := set(mapIDs(prd.Functional, func(r requirement) string { return r.ID }))
		for _, s := range d.Stories {
			for _, id := range s.RequirementIDs {
				if !reqs[id] {
					c.add(FindingUnknownID, "%s names unknown requirement %s", s.ID, id)
				}
			}
		}
	}
}

func prpsChecks(c *checks, d *prpsDoc, stories *storiesDoc) {
	if stories == nil {
		return
	}
	known := set(mapIDs(stories.Stories, func(s story) string { return s.ID }))
	for _, p := range d.PRPs {
		if !known[p.StoryID] {
			c.add(FindingUnknownID, "%s names unknown story %s", p.ID, p.StoryID)
		}
	}
	for _, s := range stories.Stories {
		if !slices.ContainsFunc(d.PRPs, func(p prp) bool { return p.StoryID == s.ID }) {
			c.add(FindingUncovered, "%s is not covered by any PRP", s.ID)
		}
	}
	byID := map[string]story{}
	for _, s := range stories.Stories {
		byID[s.ID] = s
	}
	for _, p := range d.PRPs {
		if s, ok := byID[p.StoryID]; ok && len(p.AcceptanceCriteria) != len(s.AcceptanceCriteria) {
			c.add(FindingCriteriaMismatch, "%s carries %d acceptance criteria; its story %s has %d", p.ID, len(p.AcceptanceCriteria), s.ID, len(s.AcceptanceCriteria))
		}
	}
}

// maxStoryPoints is the largest estimate a story keeps; a larger one is to
// be split (BMAD: a story fits one focused session of work).
const maxStoryPoints = 8

// andClause finds an outcome that joins two outcomes with "and".
var andClause = regexp.MustCompile(`(?i)\band\b`)

// storyRules checks what makes stories executable one at a time, in order
// (BMAD's sequencing, spec-kit's independent stories): no dependency on a
// later or unknown story, one outcome per acceptance criterion, and no
// story too large to deliver at once.
func storyRules(c *checks, d *storiesDoc, epics *epicsDoc) {
	storyRulesKnowing(c, d, epics, nil)
}

// storyRulesKnowing is storyRules for some of the stories, d, knowing
// others written already (the stories of the epics d's epic depends on):
// a dependency on one of them is known, and checked for its order, but
// they get no findings of their own.
func storyRulesKnowing(c *checks, d *storiesDoc, epics *epicsDoc, others []story) {
	epicOrder := map[string]int{}
	if epics != nil {
		for _, e := range epics.Epics {
			epicOrder[e.ID] = e.Order
		}
	}
	type pos struct{ epic, n int }
	position := func(s story) (pos, bool) {
		m := storyIDPattern.FindStringSubmatch(s.ID)
		if m == nil {
			return pos{}, false
		}
		e, _ := strconv.Atoi(m[1])
		if o, ok := epicOrder[s.EpicID]; ok {
			e = o
		}
		n, _ := strconv.Atoi(m[2])
		return pos{e, n}, true
	}
	byID := map[string]story{}
	for _, s := range others {
		byID[s.ID] = s
	}
	for _, s := range d.Stories {
		byID[s.ID] = s
	}
	for _, s := range d.Stories {
		me, ok := position(s)
		for _, dep := range s.DependsOn {
			other, known := byID[dep]
			switch {
			case dep == s.ID:
				c.add(FindingDependency, "%s depends on itself", s.ID)
			case !known:
				c.add(FindingDependency, "%s depends on unknown story %s", s.ID, dep)
			case ok:
				if them, ok := position(other); ok && (them.epic > me.epic || them.epic == me.epic && them.n > me.n) {
					c.add(FindingDependency, "%s depends on %s, which comes after it (a forward dependency); reorder or split the stories", s.ID, dep)
				}
			}
		}
		for i, cr := range s.AcceptanceCriteria {
			if andClause.MatchString(cr.Then) {
				c.add(FindingCompoundCriterion, "%s acceptance criterion %d joins outcomes with \"and\"; make it one criterion per outcome", s.ID, i+1)
			}
		}
		if s.Estimate > maxStoryPoints {
			c.add(FindingOversizedStory, "%s is estimated at %d points; split it into stories of at most %d", s.ID, s.Estimate, maxStoryPoints)
		}
	}
}

// crossFinding is a conflict between PRPs, found on the PRP that is to
// change (the later creator of a path, or the one modifying it).
type crossFinding struct {
	prpID string
	msg   string
}

// crossPRPFindings lists the PRPs' conflicts with each other (spec-kit's
// /analyze across tasks): a path two PRPs create, and a task modifying a
// path another PRP creates while its story does not depend, directly or
// not, on that PRP's story (so the path may not exist yet when it is
// built). Paths that are descriptions rather than paths ("the tests beside
// it") are not compared.
func crossPRPFindings(d *prpsDoc, stories *storiesDoc) []crossFinding {
	type creation struct{ prpID, storyID, taskID string }
	var out []crossFinding
	creators := map[string][]creation{}
	for _, p := range d.PRPs {
		for _, t := range p.Tasks {
			pth, ok := filePath(t.Path)
			if !ok || t.Action != actionCreate {
				continue
			}
			for _, cr := range creators[pth] {
				if cr.prpID != p.ID {
					out = append(out, crossFinding{p.ID, fmt.Sprintf("%s task %s creates %s, which %s creates too (task %s); create a path in one PRP only, and modify it in the PRPs of the stories that depend on that one", p.ID, t.ID, pth, cr.prpID, cr.taskID)})
					break
				}
			}
			creators[pth] = append(creators[pth], creation{p.ID, p.StoryID, t.ID})
		}
	}
	if stories == nil {
		return out // the order of the stories is unknown
	}
	known := set(mapIDs(stories.Stories, func(s story) string { return s.ID }))
	dependsOn := storyDependencies(stories)
	for _, p := range d.PRPs {
		if !known[p.StoryID] {
			continue // an unknown story, found as such
		}
		for _, t := range p.Tasks {
			pth, ok := filePath(t.Path)
			if !ok || t.Action != actionModify {
				continue
			}
			for _, cr := range creators[pth] {
				if cr.prpID == p.ID || cr.storyID == p.StoryID || dependsOn(p.StoryID, cr.storyID) {
					continue
				}
				out = append(out, crossFinding{p.ID, fmt.Sprintf("%s task %s modifies %s, which %s creates (task %s), but %s does not depend on %s; modify only paths the repository has or the PRPs of the stories it depends on create", p.ID, t.ID, pth, cr.prpID, cr.taskID, p.StoryID, cr.storyID)})
			}
		}
	}
	return out
}

// filePath is a task's path to compare with others', cleaned; ok is false
// for one that names no file, such as "the module this feature belongs in".
func filePath(p string) (string, bool) {
	p = strings.TrimPrefix(strings.TrimSpace(p), "./")
	if p == "" || strings.ContainsFunc(p, unicode.IsSpace) && !strings.ContainsAny(p, "/.") {
		return "", false
	}
	return p, true
}

// storyDependencies reports whether story a depends on story b, directly
// or through other stories.
func storyDependencies(stories *storiesDoc) func(a, b string) bool {
	deps := map[string][]string{}
	for _, s := range stories.Stories {
		deps[s.ID] = s.DependsOn
	}
	return func(a, b string) bool {
		seen := map[string]bool{a: true}
		todo := slices.Clone(deps[a])
		for len(todo) > 0 {
			id := todo[len(todo)-1]
			todo = todo[:len(todo)-1]
			if id == b {
				return true
			}
			if !seen[id] {
				seen[id] = true
				todo = append(todo, deps[id]...)
			}
		}
		return false
	}
}
