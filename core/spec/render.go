package spec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/devpilot/devpilot/ports"
)

// md builds a Markdown document.
type md struct{ b strings.Builder }

func (m *md) heading(level int, format string, args ...any) {
	if m.b.Len() > 0 {
		m.b.WriteString("\n")
	}
	m.b.WriteString(strings.Repeat("#", level) + " " + ports.OneLine(fmt.Sprintf(format, args...)) + "\n")
}

func (m *md) para(text string) {
	m.b.WriteString("\n" + strings.TrimSpace(text) + "\n")
}

// fields writes "- **Name:** value" lines from name, value pairs.
func (m *md) fields(pairs ...string) {
	m.b.WriteString("\n")
	for i := 0; i+1 < len(pairs); i += 2 {
		m.b.WriteString("- **" + pairs[i] + ":** " + ports.OneLine(pairs[i+1]) + "\n")
	}
}

func (m *md) bullets(items []string) {
	m.b.WriteString("\n")
	if len(items) == 0 {
		m.b.WriteString("_None._\n")
		return
	}
	for _, it := range items {
		m.b.WriteString("- " + ports.OneLine(it) + "\n")
	}
}

func (m *md) numbered(items []string) {
	m.b.WriteString("\n")
	for i, it := range items {
		fmt.Fprintf(&m.b, "%d. %s\n", i+1, ports.OneLine(it))
	}
}

func (m *md) checklist(items []string) {
	m.b.WriteString("\n")
	for _, it := range items {
		m.b.WriteString("- [ ] " + ports.OneLine(it) + "\n")
	}
}

func (m *md) String() string { return m.b.String() }

func idList(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// render writes a stage's document as Markdown: a heading per section, every
// id named, and the traceability checks at the end.
func render(doc any, checks []string) string {
	var m md
	switch d := doc.(type) {
	case *scopeDoc:
		renderScope(&m, d)
	case *prdDoc:
		renderPRD(&m, d)
	case *epicsDoc:
		renderEpics(&m, d)
	case *storiesDoc:
		renderStories(&m, d)
	case *prpsDoc:
		renderPRPs(&m, d)
	}
	if len(checks) > 0 {
		m.heading(2, "Traceability checks")
		m.bullets(checks)
	}
	return m.String()
}

func renderScope(m *md, d *scopeDoc) {
	m.heading(1, "Scope: %s", d.Title)
	m.heading(2, "Problem")
	m.para(d.Problem)
	m.heading(2, "Users")
	m.bullets(mapIDs(d.Users, func(u scopeUser) string { return "**" + ports.OneLine(u.Persona) + "**: " + u.Needs }))
	m.heading(2, "Goals")
	m.bullets(d.Goals)
	m.heading(2, "Success metrics")
	m.bullets(mapIDs(d.SuccessMetrics, func(s scopeMetric) string { return "**" + ports.OneLine(s.Metric) + "**: " + s.Target }))
	m.heading(2, "In scope")
	m.bullets(d.InScope)
	m.heading(2, "Out of scope")
	m.bullets(d.OutOfScope)
	m.heading(2, "Constraints")
	m.bullets(d.Constraints)
	m.heading(2, "Risks")
	m.bullets(mapIDs(d.Risks, func(r scopeRisk) string { return ports.OneLine(r.Risk) + " _Mitigation:_ " + r.Mitigation }))
	m.heading(2, "Open questions")
	m.bullets(d.OpenQuestions)
}

func renderPRD(m *md, d *prdDoc) {
	m.heading(1, "PRD: %s", d.Title)
	m.para(d.Summary)
	m.heading(2, "Functional requirements")
	for _, r := range d.Functional {
		m.heading(3, "%s: %s", r.ID, r.Title)
		m.fields("Priority", r.Priority)
		m.para(r.Description)
		if len(r.Sources) > 0 {
			m.b.WriteString("\n**Sources:**\n")
			for _, src := range r.Sources {
				where := "input " + src.Input
				if src.Input == sourceDigest {
					where = "the digest"
				}
				fmt.Fprintf(&m.b, "\n> %s (%s)\n", ports.OneLine(src.Quote), where)
			}
		}
	}
	m.heading(2, "Non-functional requirements")
	if len(d.NonFunctional) == 0 {
		m.bullets(nil)
	}
	for _, r := range d.NonFunctional {
		m.heading(3, "%s: %s", r.ID, r.Category)
		m.para(r.Description)
	}
	m.heading(2, "User journeys")
	for _, j := range d.Journeys {
		m.heading(3, "%s", j.Name)
		m.fields("Persona", j.Persona, "Requirements", idList(j.RequirementIDs))
		m.numbered(j.Steps)
	}
	m.heading(2, "Success metrics")
	m.bullets(mapIDs(d.SuccessMetrics, func(s validatingGoal) string {
		return fmt.Sprintf("**%s**: %s (validates %s)", ports.OneLine(s.Metric), s.Target, idList(s.Validates))
	}))
	m.heading(2, "Non-goals")
	m.bullets(d.NonGoals)
	m.heading(2, "Assumptions")
	m.bullets(d.Assumptions)
	m.heading(2, "Edge cases")
	m.bullets(d.EdgeCases)
	m.heading(2, "Glossary")
	m.bullets(mapIDs(d.Glossary, func(t term) string { return "**" + ports.OneLine(t.Term) + "**: " + t.Definition }))
	m.heading(2, "Needs clarification")
	m.bullets(mapIDs(d.Clarifications, func(c clarification) string {
		return "[NEEDS CLARIFICATION] " + ports.OneLine(c.Question) + " _Impact:_ " + c.Impact
	}))
}

func renderEpics(m *md, d *epicsDoc) {
	m.heading(1, "Epics")
	epics := slices.Clone(d.Epics)
	slices.SortStableFunc(epics, func(a, b epic) int { return a.Order - b.Order })
	for _, e := range epics {
		m.heading(2, "%s: %s", e.ID, e.Title)
		m.fields("Order", fmt.Sprint(e.Order), "Requirements", idList(e.RequirementIDs), "Depends on", idList(e.DependsOn))
		m.para(e.Goal)
	}
}

func renderStories(m *md, d *storiesDoc) {
	m.heading(1, "Stories")
	var epics []string
	for _, s := range d.Stories {
		if !slices.Contains(epics, s.EpicID) {
			epics = append(epics, s.EpicID)
		}
	}
	for _, ep := range epics {
		m.heading(2, "%s", ep)
		for _, s := range d.Stories {
			if s.EpicID != ep {
				continue
			}
			m.heading(3, "%s: %s", s.ID, s.Title)
			m.para(fmt.Sprintf("**As a** %s, **I want** %s, **so that** %s.", ports.OneLine(s.AsA), ports.OneLine(s.IWant), strings.TrimRight(ports.OneLine(s.SoThat), ".")))
			m.fields("Epic", s.EpicID, "Requirements", idList(s.RequirementIDs), "Estimate", fmt.Sprintf("%d points", s.Estimate),
				"Depends on", idList(s.DependsOn))
			m.heading(4, "Acceptance criteria")
			m.numbered(mapIDs(s.AcceptanceCriteria, criterionLine))
			m.heading(4, "Independent test")
			m.para(s.IndependentTest)
			m.heading(4, "Edge cases")
			m.bullets(s.EdgeCases)
		}
	}
}

func criterionLine(c criterion) string {
	return fmt.Sprintf("**Given** %s, **when** %s, **then** %s", ports.OneLine(c.Given), ports.OneLine(c.When), ports.OneLine(c.Then))
}

// code writes a fenced code block of shell commands; a command holding a
// fence gets a longer one.
func (m *md) code(commands []string) {
	fence := "```"
	for _, c := range commands {
		for strings.Contains(c, fence) {
			fence += "`"
		}
	}
	m.b.WriteString("\n" + fence + "sh\n")
	for _, c := range commands {
		m.b.WriteString(strings.TrimSpace(c) + "\n")
	}
	m.b.WriteString(fence + "\n")
}

// inlineCode writes s as inline code, with a longer backtick run when s
// holds backticks.
func inlineCode(s string) string {
	s = ports.OneLine(s)
	ticks := "`"
	for strings.Contains(s, ticks) {
		ticks += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return ticks + s + ticks
}

// renderPRPs writes each PRP as a document of its own under a level-2
// heading, in the PRP base template's order, with commands in code blocks.
func renderPRPs(m *md, d *prpsDoc) {
	m.heading(1, "PRPs")
	for _, p := range d.PRPs {
		m.heading(2, "%s: %s", p.ID, p.Title)
		m.fields("Story", p.StoryID)
		m.heading(3, "Goal")
		m.para(p.Goal)
		m.heading(3, "Deliverable")
		m.para(p.Deliverable)
		m.heading(3, "Why")
		m.bullets(p.Why)
		m.heading(3, "Acceptance criteria")
		m.numbered(mapIDs(p.AcceptanceCriteria, criterionLine))
		m.heading(3, "All needed context")
		m.heading(4, "References")
		m.bullets(mapIDs(p.Context.References, func(r reference) string {
			target := ports.OneLine(r.Target)
			if r.Kind == refFile {
				target = inlineCode(r.Target)
			}
			return fmt.Sprintf("**%s** %s (%s): %s", r.Kind, target, ports.OneLine(r.Section), ports.OneLine(r.Why))
		}))
		m.heading(4, "Codebase")
		m.bullets(p.Context.Codebase)
		m.heading(4, "Gotchas")
		m.bullets(p.Context.Gotchas)
		m.heading(3, "Implementation tasks")
		for _, t := range p.Tasks {
			m.heading(4, "%s: %s %s", t.ID, strings.ToUpper(t.Action), t.Path)
			m.fields("Pattern", t.Pattern, "Depends on", idList(t.DependsOn))
			m.para(t.Details)
			if strings.TrimSpace(t.Validation) != "" {
				m.code([]string{t.Validation})
			}
		}
		m.heading(3, "Validation")
		if len(p.Validation.Commands) == 0 {
			m.para("_No validation commands: " + ports.OneLine(p.Validation.NoneReason) + "_")
		}
		for _, level := range []string{"syntax", "unit", "integration", "domain"} {
			var cmds []check
			for _, c := range p.Validation.Commands {
				if c.Level == level {
					cmds = append(cmds, c)
				}
			}
			if len(cmds) == 0 {
				continue
			}
			m.heading(4, "%s", strings.ToUpper(level[:1])+level[1:])
			for _, c := range cmds {
				m.code([]string{c.Command})
				m.para("Expect: " + ports.OneLine(c.Expect))
			}
		}
		m.heading(3, "Success checklist")
		m.checklist(p.SuccessChecklist)
		m.heading(3, "Anti-patterns")
		m.bullets(p.AntiPatterns)
	}
}
