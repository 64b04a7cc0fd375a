package spec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/devpilot/devpilot/ports"
)

// The bounds of an exported issue's text: GitHub takes titles of up to 256
// characters and bodies of up to 65536.
const (
	maxIssueTitle = 200
	maxIssueBody  = 60000
	maxIssueLine  = 2000
)

// planIssues lists the issues an export writes, in order: the stories (by
// epic order), the PRPs when includePRPs, then the epics, whose bodies
// list their stories' issues. The requirements of each story are those the
// session's traceability (traceOf) chains to it.
func planIssues(sess ports.SpecSession, cur map[ports.Stage]ports.SpecArtifact, includePRPs bool) []exportItem {
	p := newIssuePlan(sess, cur, includePRPs)
	items := p.storyItems()
	if includePRPs {
		items = append(items, p.prpItems()...)
	}
	return append(items, p.epicItems()...)
}

// issuePlan is what planIssues reads the session's current artifacts into:
// the documents, the epics in their order and the stories in their epics'
// order, and each story's requirements by traceability.
type issuePlan struct {
	sess    ports.SpecSession
	prps    prpsDoc
	epics   []epic         // by Order
	rank    map[string]int // epic id → index in epics
	stories []story        // by their epic's rank, those of no known epic last
	reqs    map[string][]TraceItem
	notes   map[string]string
	// storyEpic is each exported story's epic id, filled by storyItems
	// for prpItems.
	storyEpic map[string]string
}

// newIssuePlan decodes the epics, stories and (when includePRPs) PRPs of
// cur, orders them and traces the stories to their requirements.
func newIssuePlan(sess ports.SpecSession, cur map[ports.Stage]ports.SpecArtifact, includePRPs bool) *issuePlan {
	var epics epicsDoc
	var stories storiesDoc
	p := &issuePlan{sess: sess, rank: map[string]int{}, storyEpic: map[string]string{}}
	decodeCurrent(cur, ports.StageEpics, &epics)
	decodeCurrent(cur, ports.StageStories, &stories)
	if includePRPs {
		decodeCurrent(cur, ports.StagePRPs, &p.prps)
	}
	var current []ports.SpecArtifact
	for _, st := range ports.Stages {
		if a, ok := cur[st]; ok {
			current = append(current, a)
		}
	}
	tr := traceOf(current)
	p.reqs, p.notes = tr.storyRequirements(), tr.storyNotes() // by story id
	p.epics = slices.Clone(epics.Epics)
	slices.SortStableFunc(p.epics, func(a, b epic) int { return a.Order - b.Order })
	for i, ep := range p.epics {
		p.rank[ep.ID] = i
	}
	p.stories = slices.Clone(stories.Stories)
	slices.SortStableFunc(p.stories, func(a, b story) int { return p.epicRank(a.EpicID) - p.epicRank(b.EpicID) })
	return p
}

// decodeCurrent decodes cur's artifact of stage st into into (an
// *epicsDoc, *storiesDoc or *prpsDoc), leaving it as it is when there is
// none or it does not decode.
func decodeCurrent(cur map[ports.Stage]ports.SpecArtifact, st ports.Stage, into any) {
	a, ok := cur[st]
	if !ok {
		return
	}
	d := decodeDoc(st, a.Data)
	if d == nil {
		return
	}
	switch v := into.(type) {
	case *epicsDoc:
		*v = *d.(*epicsDoc)
	case *storiesDoc:
		*v = *d.(*storiesDoc)
	case *prpsDoc:
		*v = *d.(*prpsDoc)
	}
}

// epicRank is the index of epic id in the ordered epics; an unknown epic
// ranks after them all.
func (p *issuePlan) epicRank(id string) int {
	if r, ok := p.rank[id]; ok {
		return r
	}
	return len(p.epics)
}

// footer ends every issue body: where it was exported from, and the marker
// that finds the issue again on the next export.
func (p *issuePlan) footer(ref string) string {
	return fmt.Sprintf("\n---\n_Exported from the devpilot specification \"%s\" (session `%s`)._\n\n%s\n",
		text(ports.Line(p.sess.Name, MaxNameLen)), p.sess.ID, IssueMarker(p.sess.ID, ref))
}

// storyItems is an issue for each story with a valid id, in order; it
// records each one's epic for prpItems.
func (p *issuePlan) storyItems() []exportItem {
	var items []exportItem
	for _, st := range p.stories {
		if !storyIDPattern.MatchString(st.ID) {
			continue
		}
		p.storyEpic[st.ID] = st.EpicID
		epicTitle := ""
		if i, ok := p.rank[st.EpicID]; ok {
			epicTitle = p.epics[i].Title
		}
		items = append(items, exportItem{kind: IssueStory, ref: st.ID, epic: labelRef(st.EpicID), title: issueTitle(st.ID, st.Title),
			body: func(map[string]int) string {
				return clipBody(storyBody(st, epicTitle, p.reqs[st.ID], p.notes[st.ID]), p.footer(st.ID))
			}})
	}
	return items
}

// storyBody is the text of a story's issue, before its footer: the story,
// its acceptance criteria and independent test, and its traceability (its
// epic, titled epicTitle, and its requirements reqs, or the note of why it
// has none).
func storyBody(st story, epicTitle string, reqs []TraceItem, note string) string {
	var b strings.Builder
	if st.AsA != "" || st.IWant != "" || st.SoThat != "" {
		fmt.Fprintf(&b, "**As a** %s, **I want** %s, **so that** %s.\n\n", text(st.AsA), text(st.IWant), text(st.SoThat))
	}
	if len(st.AcceptanceCriteria) > 0 {
		b.WriteString("### Acceptance criteria\n\n")
		for _, c := range st.AcceptanceCriteria {
			fmt.Fprintf(&b, "- [ ] **Given** %s, **when** %s, **then** %s\n", text(c.Given), text(c.When), text(c.Then))
		}
		b.WriteString("\n")
	}
	if st.IndependentTest != "" {
		fmt.Fprintf(&b, "### Independent test\n\n%s\n\n", text(st.IndependentTest))
	}
	b.WriteString("### Traceability\n\n")
	fmt.Fprintf(&b, "- Epic: %s\n", itemText(TraceItem{st.EpicID, epicTitle}))
	for _, r := range reqs {
		fmt.Fprintf(&b, "- Requirement: %s\n", itemText(r))
	}
	if note != "" && len(reqs) == 0 {
		fmt.Fprintf(&b, "- Requirement: none — %s\n", text(note))
	}
	if st.Estimate > 0 {
		fmt.Fprintf(&b, "- Estimate: %d\n", st.Estimate)
	}
	return b.String()
}

// prpItems is an issue for each PRP with a valid id, labelled with its
// story's epic; storyItems must have run.
func (p *issuePlan) prpItems() []exportItem {
	var items []exportItem
	for _, r := range p.prps.PRPs {
		if !prpIDPattern.MatchString(r.ID) {
			continue
		}
		items = append(items, exportItem{kind: IssuePRP, ref: r.ID, epic: labelRef(p.storyEpic[r.StoryID]), title: issueTitle(r.ID, r.Title),
			body: func(numbers map[string]int) string {
				return clipBody(prpBody(r, numbers[r.StoryID]), p.footer(r.ID))
			}})
	}
	return items
}

// prpBody is the text of a PRP's issue, before its footer: its goal and
// deliverable, the story it implements (as a link when storyNumber, the
// story's issue number, is known), its tasks and acceptance criteria.
func prpBody(r prp, storyNumber int) string {
	var b strings.Builder
	if r.Goal != "" {
		fmt.Fprintf(&b, "**Goal:** %s\n\n", text(r.Goal))
	}
	if r.Deliverable != "" {
		fmt.Fprintf(&b, "**Deliverable:** %s\n\n", text(r.Deliverable))
	}
	if storyNumber > 0 {
		fmt.Fprintf(&b, "Implements #%d (%s).\n\n", storyNumber, text(r.StoryID))
	} else {
		fmt.Fprintf(&b, "Implements %s.\n\n", text(r.StoryID))
	}
	if len(r.Tasks) > 0 {
		b.WriteString("### Tasks\n\n")
		for _, t := range r.Tasks {
			line := text(t.ID) + " " + text(t.Action)
			if t.Path != "" {
				line += " `" + pathEscaper.Replace(ports.Line(t.Path, 300)) + "`"
			}
			if t.Details != "" {
				line += ": " + text(t.Details)
			}
			fmt.Fprintf(&b, "- [ ] %s\n", line)
		}
		b.WriteString("\n")
	}
	if len(r.AcceptanceCriteria) > 0 {
		b.WriteString("### Acceptance criteria\n\n")
		for _, c := range r.AcceptanceCriteria {
			fmt.Fprintf(&b, "- [ ] **Given** %s, **when** %s, **then** %s\n", text(c.Given), text(c.When), text(c.Then))
		}
	}
	return b.String()
}

// epicItems is an issue for each epic with a valid id, in order, whose
// body lists the epic's stories with valid ids.
func (p *issuePlan) epicItems() []exportItem {
	var items []exportItem
	for _, ep := range p.epics {
		if !epicIDPattern.MatchString(ep.ID) {
			continue
		}
		var mine []story
		for _, st := range p.stories {
			if st.EpicID == ep.ID && storyIDPattern.MatchString(st.ID) {
				mine = append(mine, st)
			}
		}
		items = append(items, exportItem{kind: IssueEpic, ref: ep.ID, epic: ep.ID, title: issueTitle(ep.ID, ep.Title),
			body: func(numbers map[string]int) string {
				return clipBody(epicBody(ep, mine, numbers), p.footer(ep.ID))
			}})
	}
	return items
}

// epicBody is the text of an epic's issue, before its footer: its goal,
// its requirements and its stories, mine, each linked to its issue when
// numbers (issue numbers by ref) has it.
func epicBody(ep epic, mine []story, numbers map[string]int) string {
	var b strings.Builder
	if ep.Goal != "" {
		fmt.Fprintf(&b, "**Goal:** %s\n\n", text(ep.Goal))
	}
	if len(ep.RequirementIDs) > 0 {
		ids := make([]string, len(ep.RequirementIDs))
		for i, id := range ep.RequirementIDs {
			ids[i] = text(id)
		}
		fmt.Fprintf(&b, "**Requirements:** %s\n\n", strings.Join(ids, ", "))
	}
	b.WriteString("### Stories\n\n")
	if len(mine) == 0 {
		b.WriteString("No stories yet.\n")
	}
	for _, st := range mine {
		if n := numbers[st.ID]; n > 0 {
			fmt.Fprintf(&b, "- [ ] #%d %s %s\n", n, st.ID, text(ports.Line(st.Title, maxIssueTitle)))
		} else {
			fmt.Fprintf(&b, "- [ ] %s %s\n", st.ID, text(ports.Line(st.Title, maxIssueTitle)))
		}
	}
	return b.String()
}

// labelRef is an epic id fit for a label: the id when it is one, else
// "none".
func labelRef(id string) string {
	if epicIDPattern.MatchString(id) {
		return id
	}
	return "none"
}

// issueTitle is "[REF] title" on one line, mentioning no one (as text).
func issueTitle(ref, title string) string {
	t := ports.Line(mentionEscaper.Replace(title), maxIssueTitle)
	if t == "" {
		t = "Untitled"
	}
	return "[" + ref + "] " + t
}

// text is model output made safe for one Markdown line of an issue body:
// one line, bounded, unable to forge the export's marker, and mentioning
// no one (an "@" is followed by a zero-width space, so GitHub notifies no
// user or team the model happened to name).
func text(s string) string {
	s = ports.Line(s, maxIssueLine)
	return textEscaper.Replace(s)
}

var (
	textEscaper    = strings.NewReplacer("<!--", "&lt;!--", "-->", "--&gt;", "@", "@\u200b")
	mentionEscaper = strings.NewReplacer("@", "@\u200b")
	// pathEscaper makes a path fit for a code span that cannot end early or
	// hold the export's marker.
	pathEscaper = strings.NewReplacer("`", "'", "<!--", "&lt;!--", "-->", "--&gt;")
)

func itemText(it TraceItem) string {
	if it.Title == "" {
		return text(it.ID)
	}
	return text(it.ID) + " — " + text(it.Title)
}

// clipBody bounds a body so that, with its footer (which carries the
// marker), it fits in an issue.
func clipBody(body, footer string) string {
	if len(body)+len(footer) > maxIssueBody {
		body = ports.Clip(body, maxIssueBody-len(footer)-10) + "\n\n…\n"
	}
	return body + footer
}
