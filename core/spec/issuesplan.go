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
	var epics epicsDoc
	var stories storiesDoc
	var prps prpsDoc
	decode := func(st ports.Stage, into any) {
		if a, ok := cur[st]; ok {
			if d := decodeDoc(st, a.Data); d != nil {
				switch v := into.(type) {
				case *epicsDoc:
					*v = *d.(*epicsDoc)
				case *storiesDoc:
					*v = *d.(*storiesDoc)
				case *prpsDoc:
					*v = *d.(*prpsDoc)
				}
			}
		}
	}
	decode(ports.StageEpics, &epics)
	decode(ports.StageStories, &stories)
	if includePRPs {
		decode(ports.StagePRPs, &prps)
	}
	var current []ports.SpecArtifact
	for _, st := range ports.Stages {
		if a, ok := cur[st]; ok {
			current = append(current, a)
		}
	}
	tr := traceOf(current)
	reqs, notes := tr.storyRequirements(), tr.storyNotes() // by story id
	ordered := slices.Clone(epics.Epics)
	slices.SortStableFunc(ordered, func(a, b epic) int { return a.Order - b.Order })
	rank := map[string]int{}
	for i, ep := range ordered {
		rank[ep.ID] = i
	}
	storyList := slices.Clone(stories.Stories)
	slices.SortStableFunc(storyList, func(a, b story) int {
		ra, oka := rank[a.EpicID]
		rb, okb := rank[b.EpicID]
		if !oka {
			ra = len(ordered)
		}
		if !okb {
			rb = len(ordered)
		}
		return ra - rb
	})
	footer := func(ref string) string {
		return fmt.Sprintf("\n---\n_Exported from the devpilot specification \"%s\" (session `%s`)._\n\n%s\n",
			text(ports.Line(sess.Name, MaxNameLen)), sess.ID, IssueMarker(sess.ID, ref))
	}
	storyEpic := map[string]string{}
	var items []exportItem
	for _, st := range storyList {
		if !storyIDPattern.MatchString(st.ID) {
			continue
		}
		storyEpic[st.ID] = st.EpicID
		epicTitle := ""
		if i, ok := rank[st.EpicID]; ok {
			epicTitle = ordered[i].Title
		}
		items = append(items, exportItem{kind: IssueStory, ref: st.ID, epic: labelRef(st.EpicID), title: issueTitle(st.ID, st.Title),
			body: func(map[string]int) string {
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
				for _, r := range reqs[st.ID] {
					fmt.Fprintf(&b, "- Requirement: %s\n", itemText(r))
				}
				if n := notes[st.ID]; n != "" && len(reqs[st.ID]) == 0 {
					fmt.Fprintf(&b, "- Requirement: none — %s\n", text(n))
				}
				if st.Estimate > 0 {
					fmt.Fprintf(&b, "- Estimate: %d\n", st.Estimate)
				}
				return clipBody(b.String(), footer(st.ID))
			}})
	}
	if includePRPs {
		for _, p := range prps.PRPs {
			if !prpIDPattern.MatchString(p.ID) {
				continue
			}
			items = append(items, exportItem{kind: IssuePRP, ref: p.ID, epic: labelRef(storyEpic[p.StoryID]), title: issueTitle(p.ID, p.Title),
				body: func(numbers map[string]int) string {
					var b strings.Builder
					if p.Goal != "" {
						fmt.Fprintf(&b, "**Goal:** %s\n\n", text(p.Goal))
					}
					if p.Deliverable != "" {
						fmt.Fprintf(&b, "**Deliverable:** %s\n\n", text(p.Deliverable))
					}
					if n := numbers[p.StoryID]; n > 0 {
						fmt.Fprintf(&b, "Implements #%d (%s).\n\n", n, text(p.StoryID))
					} else {
						fmt.Fprintf(&b, "Implements %s.\n\n", text(p.StoryID))
					}
					if len(p.Tasks) > 0 {
						b.WriteString("### Tasks\n\n")
						for _, t := range p.Tasks {
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
					if len(p.AcceptanceCriteria) > 0 {
						b.WriteString("### Acceptance criteria\n\n")
						for _, c := range p.AcceptanceCriteria {
							fmt.Fprintf(&b, "- [ ] **Given** %s, **when** %s, **then** %s\n", text(c.Given), text(c.When), text(c.Then))
						}
					}
					return clipBody(b.String(), footer(p.ID))
				}})
		}
	}
	for _, ep := range ordered {
		if !epicIDPattern.MatchString(ep.ID) {
			continue
		}
		var mine []story
		for _, st := range storyList {
			if st.EpicID == ep.ID && storyIDPattern.MatchString(st.ID) {
				mine = append(mine, st)
			}
		}
		items = append(items, exportItem{kind: IssueEpic, ref: ep.ID, epic: ep.ID, title: issueTitle(ep.ID, ep.Title),
			body: func(numbers map[string]int) string {
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
				return clipBody(b.String(), footer(ep.ID))
			}})
	}
	return items
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
