package demomodel

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// Faithful makes the model a context-flow check for the specification
// engine: it builds each answer only from what its request contains and
// carries every fact it sees forward, so that a fact that never reaches a
// call cannot reach that call's output. Per stage:
//
//   - scope: every sentence of the raw inputs (or of the digest's facts)
//     lands in the scope — in_scope, constraints ("must", "within", "at
//     most", "kept", retention, compliance…), out_of_scope ("out of
//     scope", "not in the first release", "won't"…) or open_questions —
//     except routine meeting talk (greetings, audio trouble, scheduling,
//     agenda chatter), which a simple rule drops;
//   - prd: every in-scope item reaches a functional requirement (grouped
//     when there are more than maxFaithfulRequirements), each citing in
//     sources the verbatim sentences it comes from; constraints become
//     non-functional requirements of category "constraint", out-of-scope
//     items non-goals, open questions clarifications (at most three) and
//     assumptions;
//   - epics and stories as in the default mode, the requirement's text in
//     each story; in a per-epic call the first story may depend on the
//     last related story of each epic its epic depends on, and the context
//     pack's edge cases are the stories' edge cases;
//   - prps: the context pack carried whole — each source passage a doc
//     reference, constraints, assumptions, edge cases and clarifications
//     as gotchas, out-of-scope items and non-goals as anti-patterns —
//     grounded in the repository the request shows (file references and
//     modified paths from its tree, created paths named after the story,
//     a dependency's created path modified rather than created again,
//     commands only from its commands);
//   - digests: every substantive sentence of a chunk kept as a fact,
//     merged digests keeping every distinct fact (neighbours joined when
//     there are more than the prompt allows).
//
// Boilerplate it adds (a neutral risk, metric or task wording) states no
// fact. The default mode is unchanged.
func Faithful() Option {
	return func(m *Model) { m.faithful = true }
}

// maxFaithfulRequirements is how many functional requirements a faithful
// PRD has at most: more in-scope items are grouped.
const maxFaithfulRequirements = 12

var (
	questionSection   = regexp.MustCompile(`(?i)\bquestions?\b`)
	constraintSection = regexp.MustCompile(`(?i)\b(constraints?|non-functional|compliance|limits)\b`)
	outOfScopeText    = regexp.MustCompile(`(?i)\b(out of scope|not in scope|not in the first release|not part of|won'?t|will not|non-goals?|not something we want|excluded)\b`)
	constraintText    = regexp.MustCompile(`(?i)\b(must|shall|within|at most|at least|up to|no more than|only|never|kept|keep|retention|retain\w*|complian\w*|gdpr|hipaa|wcag|regulat\w*|polic(?:y|ies)|deadline|budget|cannot|deleted)\b`)
	smallTalkText     = regexp.MustCompile(`(?i)\b(good (?:morning|afternoon)|hi all|hello|hear (?:me|you)|on mute|breaking up|share my screen|see my screen|go ahead|another minute|recording|calendar invite|same time next week|that slot|hard stop|short break|welcome back|follow-up|agenda|parking lot|taking notes|running a bit over|park that|weekend|thanks|thank you|coffee|sounds good|makes sense|find the document|you go first|follow up by email|talk soon|sorry|good point|keep going)\b`)
	digitText         = regexp.MustCompile(`\d`)
)

// smallTalk reports whether a sentence is routine meeting talk: short (at
// most twelve words), no number, and a greeting, scheduling, agenda or
// audio phrase.
func smallTalk(s string) bool {
	return words(s) <= 12 && !digitText.MatchString(s) && smallTalkText.MatchString(s)
}

// statement is one sentence of the material a request holds.
type statement struct {
	input   string // the input's number, or "digest"
	title   string // the input's title
	raw     string // the sentence as the input has it
	text    string // the sentence without Markdown
	section string // the heading above it, in lower case
}

// statementsOf are the sentences of one input: for a digest its key facts
// and open questions, for other inputs every sentence of every line
// (headings name sections; list markers, speakers and timestamps taken
// off), routine meeting talk left out.
func statementsOf(in input) []statement {
	n := cmpOr(in.n, "1")
	var out []statement
	add := func(raw, section string) {
		raw = strings.TrimSpace(raw)
		text := clean(raw)
		if words(text) < 2 || smallTalk(text) {
			return
		}
		out = append(out, statement{input: n, title: in.title, raw: raw, text: text, section: section})
	}
	if in.kind == "digest" {
		section := ""
		for l := range strings.SplitSeq(in.content, "\n") {
			l = strings.TrimSpace(l)
			switch {
			case strings.HasPrefix(l, "## "):
				section = strings.ToLower(strings.TrimSpace(l[3:]))
			case strings.HasPrefix(l, "- ") && section != "":
				add(citationPattern.ReplaceAllString(l[2:], ""), section)
			}
		}
		for i := range out {
			out[i].input = "digest"
		}
		return out
	}
	section, inFence := "", false
	for l := range strings.SplitSeq(in.content, "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "```") {
			inFence = !inFence
			continue
		}
		if t == "" || inFence {
			continue
		}
		if h := headingPattern.FindStringSubmatch(t); h != nil {
			section = strings.ToLower(clean(h[1]))
			continue
		}
		if b := bulletPattern.FindStringSubmatch(t); b != nil {
			t = b[1]
		}
		if in.kind == "transcript" {
			t = speakerPattern.ReplaceAllString(t, "")
		}
		for _, s := range splitSentences(t) {
			add(s, section)
		}
	}
	return out
}

// statementsOfAll are the statements of every input, in order.
func statementsOfAll(inputs []input) []statement {
	var out []statement
	for _, in := range inputs {
		out = append(out, statementsOf(in)...)
	}
	return out
}

// The kinds of statement a scope sorts the material into.
const (
	kindInScope = iota
	kindConstraint
	kindOutOfScope
	kindQuestion
)

func classify(s statement) int {
	switch {
	case isQuestion(s.text) || questionSection.MatchString(s.section) && !outOfScopeHeading.MatchString(s.section):
		return kindQuestion
	case outOfScopeHeading.MatchString(s.section) || outOfScopeText.MatchString(s.text):
		return kindOutOfScope
	case constraintSection.MatchString(s.section) || constraintText.MatchString(s.text):
		return kindConstraint
	}
	return kindInScope
}

// faithfulScope is the scope of the material: every statement in one of
// its lists.
func faithfulScope(m material) scopeDoc {
	title := m.topic()
	var lists [4][]string
	var first string
	for _, s := range statementsOfAll(m.inputs) {
		k := classify(s)
		if !slices.ContainsFunc(lists[k], func(o string) bool { return strings.EqualFold(o, s.text) }) {
			lists[k] = append(lists[k], s.text)
		}
		if first == "" && k != kindQuestion {
			first = s.text
		}
	}
	inScope := lists[kindInScope]
	if len(inScope) == 0 {
		inScope = slices.Clone(lists[kindConstraint])
	}
	if len(inScope) == 0 {
		inScope = []string{"Deliver " + lowerFirst(title)}
	}
	d := scopeDoc{
		Title:         title,
		Problem:       sentence(cmpOr(first, inScope[0])),
		Goals:         []string{},
		InScope:       inScope,
		OutOfScope:    nonNil(lists[kindOutOfScope]),
		Constraints:   nonNil(lists[kindConstraint]),
		Risks:         []scopeRisk{},
		OpenQuestions: nonNil(lists[kindQuestion]),
	}
	for _, persona := range m.personas() {
		d.Users = append(d.Users, scopeUser{Persona: persona, Needs: needs(persona, title, inScope)})
	}
	for _, it := range inScope[:min(len(inScope), 3)] {
		d.Goals = append(d.Goals, sentence(it))
		d.SuccessMetrics = append(d.SuccessMetrics, scopeMetric{Metric: "Share of intended users who " + lowerFirst(titleOf(it)), Target: "To be agreed with the stakeholders"})
	}
	return d
}

var normalPattern = regexp.MustCompile(`[^\p{L}\p{N}%:/]+`)

// normalText folds case, punctuation and white space.
func normalText(s string) string {
	return strings.TrimSpace(normalPattern.ReplaceAllString(strings.ToLower(s), " "))
}

// sourceOf is the statement of the material that item comes from: the one
// that says the same (ignoring case and punctuation), or else the one
// sharing most of its words (at least three fifths of them); ok is false
// when none does.
func sourceOf(item string, all []statement) (statement, bool) {
	want := normalText(item)
	if want == "" {
		return statement{}, false
	}
	for _, s := range all {
		if normalText(s.text) == want {
			return s, true
		}
	}
	ws := strings.Fields(want)
	best, bestScore := -1, 0
	for i, s := range all {
		have := " " + normalText(s.text) + " "
		score := 0
		for _, w := range ws {
			if strings.Contains(have, " "+w+" ") {
				score++
			}
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	if best < 0 || bestScore*5 < len(ws)*3 {
		return statement{}, false
	}
	return all[best], true
}

// sourcesOf are the sources of a text made of one or more items: each
// sentence's statement, once.
func sourcesOf(text string, all []statement) []source {
	out := []source{}
	for _, part := range splitSentences(text) {
		if s, ok := sourceOf(part, all); ok && !slices.Contains(out, source{Input: s.input, Quote: s.raw}) {
			out = append(out, source{Input: s.input, Quote: s.raw})
		}
	}
	return out
}

// bestSource is the default mode's sources of a requirement: the sentence
// of the material that best matches its description, or none.
func bestSource(desc string, inputs []input) []source {
	if s, ok := sourceOf(desc, statementsOfAll(inputs)); ok {
		return []source{{Input: s.input, Quote: s.raw}}
	}
	return []source{}
}

// faithfulPRD is the PRD of a scope; inputs are the request's raw inputs
// (or digest), which the sources quote.
func faithfulPRD(s scopeDoc, inputs []input) prdDoc {
	items := nonBlank(s.InScope)
	if len(items) == 0 {
		items = nonBlank(s.Goals)
	}
	if len(items) == 0 {
		items = []string{"Deliver " + cmpOr(strings.TrimSpace(s.Title), "the product")}
	}
	all := statementsOfAll(inputs)
	d := prdDoc{
		Title:          cmpOr(strings.TrimSpace(s.Title), "Product requirements"),
		Summary:        cmpOr(strings.TrimSpace(s.Problem), cmpOr(strings.TrimSpace(s.Title), "The product the scope describes.")),
		NonFunctional:  []nfRequirement{},
		NonGoals:       nonNil(nonBlank(s.OutOfScope)),
		Assumptions:    []string{},
		Glossary:       []term{},
		EdgeCases:      []string{},
		Clarifications: []clarification{},
	}
	per := (len(items) + maxFaithfulRequirements - 1) / maxFaithfulRequirements
	for i := 0; i < len(items); i += per {
		group := items[i:min(i+per, len(items))]
		var desc []string
		for _, it := range group {
			desc = append(desc, sentence(mainClause(it)))
		}
		n := len(d.Functional)
		priority := "could"
		switch {
		case n < 3:
			priority = "must"
		case n < 6:
			priority = "should"
		}
		r := requirement{ID: fmt.Sprintf("REQ-%d", n+1), Title: titleOf(group[0]), Description: strings.Join(desc, " "), Priority: priority, Sources: []source{}}
		for _, it := range group {
			if src, ok := sourceOf(it, all); ok && !slices.Contains(r.Sources, source{Input: src.input, Quote: src.raw}) {
				r.Sources = append(r.Sources, source{Input: src.input, Quote: src.raw})
			}
		}
		d.Functional = append(d.Functional, r)
	}
	for i, c := range nonBlank(s.Constraints) {
		d.NonFunctional = append(d.NonFunctional, nfRequirement{ID: fmt.Sprintf("NFR-%d", i+1), Category: "constraint", Description: c})
	}
	for _, q := range nonBlank(s.OpenQuestions) {
		if len(d.Clarifications) < 3 {
			d.Clarifications = append(d.Clarifications, clarification{Question: q,
				Impact: "It changes what is built; until it is answered the PRD assumes the simplest reading of the material."})
			continue
		}
		d.Assumptions = append(d.Assumptions, "Still open, to be confirmed: "+q)
	}
	if t := strings.TrimSpace(s.Title); t != "" && strings.TrimSpace(s.Problem) != "" {
		d.Glossary = append(d.Glossary, term{Term: t, Definition: sentence(s.Problem)})
	}
	d.Journeys = journeys(s.Users, d.Functional)
	for _, m := range s.SuccessMetrics {
		if len(d.SuccessMetrics) == 5 || strings.TrimSpace(m.Metric) == "" {
			continue
		}
		d.SuccessMetrics = append(d.SuccessMetrics, prdMetric{Metric: m.Metric, Target: cmpOr(strings.TrimSpace(m.Target), "To be agreed"),
			Validates: []string{d.Functional[len(d.SuccessMetrics)%len(d.Functional)].ID}})
	}
	if len(d.SuccessMetrics) == 0 {
		d.SuccessMetrics = []prdMetric{{Metric: "Requirements delivered and accepted", Target: "To be agreed", Validates: []string{d.Functional[0].ID}}}
	}
	return d
}

// clauseBreak is where a statement's main clause ends: its first comma,
// semicolon or dash, or a subordinate "so that", "because",
// "unless", "except", "since" or "as long as".
var clauseBreak = regexp.MustCompile(`(?i)[,;]\s|\s[-–—]\s|\s(?:so that|because|unless|except|since|as long as)\s`)

// mainClause is what a requirement states of an in-scope item: its main
// clause, as a PRD restates the material in its own words. The rest of the
// sentence stays in the requirement's sources, quoted verbatim, which is
// where the later stages' calls find it (as the context pack's source
// passages).
func mainClause(item string) string {
	if loc := clauseBreak.FindStringIndex(item); loc != nil && len(strings.Fields(item[:loc[0]])) >= 3 {
		return item[:loc[0]]
	}
	return item
}

// journeys are one journey per persona of the scope (at most three), the
// requirements dealt out between them.
func journeys(users []scopeUser, reqs []requirement) []journey {
	personas := []string{}
	for _, u := range users {
		if p := strings.TrimSpace(u.Persona); p != "" {
			personas = append(personas, p)
		}
	}
	if len(personas) == 0 {
		personas = []string{"User"}
	}
	var out []journey
	for i, persona := range personas[:min(len(personas), 3, len(reqs))] {
		j := journey{Name: fmt.Sprintf("%s gets the job done", persona), Persona: persona, Steps: []string{"Signs in"}, RequirementIDs: []string{}}
		for k := i; k < len(reqs); k += len(personas[:min(len(personas), 3, len(reqs))]) {
			j.Steps = append(j.Steps, reqs[k].Title)
			j.RequirementIDs = append(j.RequirementIDs, reqs[k].ID)
		}
		out = append(out, j)
	}
	return out
}

// contextPack is the <context_pack> of a per-epic or per-story call: the
// context its requirements need beyond the PRD's summary.
type contextPack struct {
	SourcePassages []packPassage    `json:"source_passages"`
	Constraints    []string         `json:"constraints"`
	OutOfScope     []string         `json:"out_of_scope"`
	NonGoals       []string         `json:"non_goals"`
	Assumptions    []string         `json:"assumptions"`
	EdgeCases      []string         `json:"edge_cases"`
	Clarifications []clarification  `json:"clarifications"`
	RelatedStories []relatedStory   `json:"related_stories"`
	Dependencies   []packDependency `json:"dependencies"`
}

type packPassage struct {
	Input          string   `json:"input"`
	Title          string   `json:"title"`
	RequirementIDs []string `json:"requirement_ids"`
	Passage        string   `json:"passage"`
}

type relatedStory struct {
	ID     string `json:"id"`
	EpicID string `json:"epic_id"`
	Title  string `json:"title"`
}

type packDependency struct {
	StoryID      string        `json:"story_id"`
	Title        string        `json:"title"`
	PRPID        string        `json:"prp_id"`
	PlannedPaths []plannedPath `json:"planned_paths"`
}

type plannedPath struct {
	Action string `json:"action"`
	Path   string `json:"path"`
}

var packPattern = regexp.MustCompile(`(?s)<context_pack>\n(.*?)\n</context_pack>`)

// unfence undoes genjob.Fenced's escape of a closing tag.
func unfence(s, tag string) string { return strings.ReplaceAll(s, `<\/`+tag, "</"+tag) }

// readPack is the context pack of a batch call's user message, nil when it
// has none.
func readPack(user string) *contextPack {
	m := packPattern.FindStringSubmatch(user)
	if m == nil {
		return nil
	}
	return decodeInto[contextPack]([]byte(unfence(m[1], "context_pack")))
}

// repoSection is the repository section that ends a stage request's user
// message ("# Repository …" on), "" when it has none: what comes before
// it (raw material, artifacts) may itself mention a <tree>.
func repoSection(user string) string {
	if i := strings.LastIndex(user, "\n# Repository "); i >= 0 {
		return user[i:]
	}
	return ""
}

// readRepo is the repository a user message's repository section shows
// (the tree, the files shown and the commands), nil when it has none.
func readRepo(user string) *repoPrompt {
	c := repoSection(user)
	m := treePattern.FindStringSubmatch(c)
	if m == nil {
		return nil
	}
	r := &repoPrompt{tree: map[string]bool{}}
	for l := range strings.SplitSeq(unfence(m[1], "tree"), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			r.tree[l] = true
		}
	}
	// The files to follow and change: those shown that the tree has, with
	// an extension to name a new file by.
	for _, f := range filePattern.FindAllStringSubmatch(c, -1) {
		if r.tree[f[1]] && path.Ext(f[1]) != "" && !slices.Contains(r.files, f[1]) {
			r.files = append(r.files, f[1])
		}
	}
	if len(r.files) == 0 {
		var paths []string
		for l := range r.tree {
			if strings.Contains(l, "/") && path.Ext(l) != "" && !strings.HasPrefix(l, ".") {
				paths = append(paths, l)
			}
		}
		slices.Sort(paths)
		r.files = paths[:min(len(paths), 1)]
	}
	if cm := commandsPattern.FindStringSubmatch(c); cm != nil {
		for l := range strings.SplitSeq(unfence(cm[1], "commands"), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				r.commands = append(r.commands, l)
			}
		}
	}
	return r
}

// userMessage is the first user message of req that contains marker.
func userMessage(req *fakeopenai.Request, marker string) (string, bool) {
	for _, msg := range req.Messages {
		if msg.Role == "user" && strings.Contains(msg.Content, marker) {
			return msg.Content, true
		}
	}
	return "", false
}

// faithfulArtifact writes a stage's document in faithful mode.
func faithfulArtifact(stage string, req *fakeopenai.Request) any {
	if user, ok := userMessage(req, "<prd_summary>"); ok {
		if b, ok := readBatchPrompt(req); ok {
			pack := readPack(user)
			switch {
			case stage == "stories" && b.epic != nil:
				return faithfulEpicStories(*b.epic, *b.prd, pack)
			case stage == "prps" && b.story != nil:
				return faithfulStoryPRP(*b.story, b.prd, readRepo(user), pack)
			}
		}
	}
	user, _ := userMessage(req, "# Raw material")
	c := stageChain{p: readSpecPrompt(req), scopeOf: faithfulScope, prdOf: faithfulPRD, storiesOf: faithfulStories}
	switch stage {
	case "scope":
		return c.scopeOf(c.p.material)
	case "prd":
		return c.prdOf(c.scope(), c.p.material.inputs)
	case "epics":
		return buildEpics(c.prd())
	case "stories":
		return c.storiesOf(c.epics(), c.prd())
	case "prps":
		pr := c.prd()
		return faithfulPRPs(c.stories(), c.p.scope, &pr, c.p.material.inputs, readRepo(user))
	}
	if f := req.ResponseFormat; f != nil && f.JSONSchema != nil {
		return instanceOf(f.JSONSchema.Schema)
	}
	return map[string]any{}
}

// faithfulStories are the default mode's stories, each carrying its
// requirement's description in so_that, with the PRD's edge cases when it
// has any.
func faithfulStories(e epicsDoc, p prdDoc) storiesDoc {
	d := buildStories(e, p)
	reqs := map[string]requirement{}
	for _, r := range p.Functional {
		reqs[r.ID] = r
	}
	for i, s := range d.Stories {
		for _, id := range s.RequirementIDs {
			if r, ok := reqs[id]; ok && strings.TrimSpace(r.Description) != "" {
				d.Stories[i].SoThat = "what " + id + " asks for is met: " + lowerFirst(strings.TrimSpace(r.Description))
			}
		}
		if edges := nonBlank(p.EdgeCases); len(edges) > 0 {
			d.Stories[i].EdgeCases = edges
		}
	}
	return d
}

// faithfulEpicStories are the stories of one epic of a per-epic call: the
// first depends on the last related story of each epic its epic depends
// on, and every story lists the pack's edge cases.
func faithfulEpicStories(ep epic, p prdDoc, pack *contextPack) storiesDoc {
	d := faithfulStories(epicsDoc{Epics: []epic{ep}}, p)
	if pack == nil || len(d.Stories) == 0 {
		return d
	}
	for _, dep := range ep.DependsOn {
		last := ""
		for _, r := range pack.RelatedStories {
			if r.EpicID == dep {
				last = r.ID
			}
		}
		if last != "" && !slices.Contains(d.Stories[0].DependsOn, last) {
			d.Stories[0].DependsOn = append(d.Stories[0].DependsOn, last)
		}
	}
	if edges := nonBlank(pack.EdgeCases); len(edges) > 0 {
		for i := range d.Stories {
			d.Stories[i].EdgeCases = edges
		}
	}
	return d
}

// faithfulStoryPRP is the PRP of a per-story call, carrying its context
// pack.
func faithfulStoryPRP(st story, p *prdDoc, repo *repoPrompt, pack *contextPack) prpsDoc {
	var c prpCarry
	if p != nil {
		c.requirements = p.Functional
		c.nfrs = p.NonFunctional
	}
	if pack != nil {
		c.passages = pack.SourcePassages
		c.gotchas = slices.Concat(pack.Constraints, pack.Assumptions, pack.EdgeCases)
		c.clarifications = pack.Clarifications
		c.outOfScope = slices.Concat(pack.OutOfScope, pack.NonGoals)
		c.deps = pack.Dependencies
		c.siblings = pack.RelatedStories
	}
	return prpsDoc{PRPs: []prp{faithfulPRP(st, repo, c)}}
}

// faithfulPRPs are the PRPs of a single call: per story, the raw sentences
// its requirements' sources quote (or that their descriptions match), the
// scope's constraints and out-of-scope items, the PRD's non-goals,
// assumptions, edge cases and clarifications, and the paths the PRPs of
// the stories it depends on create.
func faithfulPRPs(s storiesDoc, scope *scopeDoc, p *prdDoc, inputs []input, repo *repoPrompt) prpsDoc {
	all := statementsOfAll(inputs)
	titles := map[string]string{}
	for _, in := range inputs {
		titles[cmpOr(in.n, "1")] = in.title
		if in.kind == "digest" {
			titles["digest"] = in.title
		}
	}
	var base prpCarry
	base.requirements, base.nfrs = p.Functional, p.NonFunctional
	if scope != nil {
		base.gotchas = slices.Clone(scope.Constraints)
		base.outOfScope = slices.Clone(scope.OutOfScope)
	}
	base.gotchas = slices.Concat(base.gotchas, p.Assumptions, p.EdgeCases)
	base.outOfScope = append(base.outOfScope, p.NonGoals...)
	base.clarifications = p.Clarifications
	var d prpsDoc
	created := map[string][]plannedPath{}
	for _, st := range s.Stories {
		c := base
		c.passages = nil
		for _, r := range p.Functional {
			if !slices.Contains(st.RequirementIDs, r.ID) {
				continue
			}
			srcs := r.Sources
			if len(srcs) == 0 {
				srcs = sourcesOf(r.Description, all)
			}
			for _, src := range srcs {
				c.passages = append(c.passages, packPassage{Input: src.Input, Title: titles[src.Input], RequirementIDs: []string{r.ID}, Passage: src.Quote})
			}
		}
		c.deps = nil
		for _, dep := range st.DependsOn {
			c.deps = append(c.deps, packDependency{StoryID: dep, PRPID: "PRP-" + strings.TrimPrefix(dep, "ST-"), PlannedPaths: created[dep]})
		}
		pr := faithfulPRP(st, repo, c)
		for _, t := range pr.Tasks {
			if t.Action == "create" {
				created[st.ID] = append(created[st.ID], plannedPath{Action: t.Action, Path: t.Path})
			}
		}
		if storyIDPattern.MatchString(st.ID) {
			d.PRPs = append(d.PRPs, pr)
		}
	}
	return d
}

// prpCarry is what a faithful PRP carries besides its story.
type prpCarry struct {
	requirements   []requirement
	nfrs           []nfRequirement
	passages       []packPassage
	gotchas        []string
	clarifications []clarification
	outOfScope     []string
	deps           []packDependency
	siblings       []relatedStory
}

// faithfulPRP is one story's PRP: the default mode's, its context and
// anti-patterns replaced by what c carries, grounded in repo.
func faithfulPRP(st story, repo *repoPrompt, c prpCarry) prp {
	d := buildPRPs(storiesDoc{Stories: []story{st}}, nil)
	if len(d.PRPs) == 0 {
		return prp{StoryID: st.ID}
	}
	p := d.PRPs[0]
	var refs []reference
	for _, r := range c.requirements {
		if slices.Contains(st.RequirementIDs, r.ID) && strings.TrimSpace(r.Description) != "" {
			refs = append(refs, reference{Kind: "doc", Target: "PRD: " + r.ID, Section: r.Description, Why: "The requirement " + st.ID + " delivers."})
		}
	}
	for _, ps := range c.passages {
		if strings.TrimSpace(ps.Passage) == "" {
			continue
		}
		target := "Input " + ps.Input
		if t := strings.TrimSpace(ps.Title); t != "" {
			target += ": " + t
		}
		why := "Source material"
		if len(ps.RequirementIDs) > 0 {
			why = "Source of " + strings.Join(ps.RequirementIDs, ", ")
		}
		refs = append(refs, reference{Kind: "doc", Target: target, Section: ps.Passage, Why: why})
	}
	refs = append(refs, reference{Kind: "doc", Target: "Story " + st.ID, Section: "Acceptance criteria and edge cases", Why: "What the work must meet, including the failure cases."})
	p.Context.References = refs

	var gotchas []string
	addGotcha := func(g string) {
		if g = strings.TrimSpace(g); g != "" && !slices.ContainsFunc(gotchas, func(o string) bool { return strings.Contains(normalText(o), normalText(g)) }) {
			gotchas = append(gotchas, g)
		}
	}
	for _, n := range c.nfrs {
		addGotcha(n.Description)
	}
	for _, g := range c.gotchas {
		addGotcha(g)
	}
	for _, q := range c.clarifications {
		if strings.TrimSpace(q.Question) != "" {
			addGotcha(strings.TrimSpace("Open question: " + q.Question + " " + q.Impact))
		}
	}
	if len(gotchas) == 0 {
		gotchas = []string{"Handle the failure cases of the acceptance criteria, not only the happy path."}
	}
	p.Context.Gotchas = gotchas

	p.AntiPatterns = []string{"Do not build more than the story's acceptance criteria ask for."}
	for _, o := range c.outOfScope {
		if o = strings.TrimSpace(o); o != "" && !slices.Contains(p.AntiPatterns, "Out of scope: "+o) {
			p.AntiPatterns = append(p.AntiPatterns, "Out of scope: "+o)
		}
	}
	want := strings.TrimPrefix(cmpOr(strings.TrimSpace(st.IWant), "to use this feature"), "to ")
	faithfulGround(&p, st, want, repo, c.deps)
	var others []string
	for _, r := range c.siblings {
		if r.ID != "" && r.ID != st.ID {
			others = append(others, strings.TrimSpace(r.ID+" "+r.Title))
		}
	}
	if len(others) > 0 {
		p.Context.Codebase = append(p.Context.Codebase, "Other stories deliver the rest of the epic; leave their work to them: "+strings.Join(others, "; ")+".")
	}
	return p
}

var (
	slugPattern = regexp.MustCompile(`[^a-z0-9]+`)
	testFile    = regexp.MustCompile(`(?i)(_test\.|\.test\.|\.spec\.|(^|/)tests?/|(^|/)test_)`)
)

// faithfulGround fills a PRP's tasks, file references and validation from
// the repository the request shows: references and modified paths only
// from its tree, the created path named after the story (so no other
// story's PRP creates it), the paths the stories it depends on create
// modified rather than created again, commands only from its commands.
// Without a repository its tasks name no path as a fact and it has no
// commands, with the reason.
func faithfulGround(p *prp, st story, want string, repo *repoPrompt, deps []packDependency) {
	p.Validation = validation{}
	groundPRP(p, st, want, repo)
	if repo == nil || len(repo.files) == 0 {
		return
	}
	var shown []string
	for _, f := range repo.files {
		if repo.has(f) {
			shown = append(shown, f)
		}
	}
	refs := slices.DeleteFunc(p.Context.References, func(r reference) bool { return r.Kind == "file" && !repo.has(r.Target) })
	p.Context.References = refs
	if len(shown) == 0 {
		return
	}
	// The file to wire the story in: the first shown that is no test.
	first := shown[0]
	if i := slices.IndexFunc(shown, func(f string) bool { return !testFile.MatchString(f) }); i >= 0 {
		first = shown[i]
	}
	dir, ext := first[:strings.LastIndex(first, "/")+1], path.Ext(first)
	slug := strings.Trim(slugPattern.ReplaceAllString(strings.ToLower(shortTitle(st.Title)), "_"), "_")
	id := strings.Trim(slugPattern.ReplaceAllString(strings.ToLower(st.ID), "_"), "_")
	created := dir + cmpOr(slug, "feature") + "_" + id + ext
	for i := 2; repo.has(created); i++ {
		created = fmt.Sprintf("%s%s_%s_%d%s", dir, cmpOr(slug, "feature"), id, i, ext)
	}
	validation := ""
	if len(p.Tasks) > 0 {
		validation = p.Tasks[0].Validation
	}
	tasks := []task{{ID: "T1", Action: "create", Path: created, Pattern: "Follow " + first, Details: sentence("Implement the use case: " + want), DependsOn: []string{}, Validation: validation}}
	for _, dep := range deps {
		for _, pp := range dep.PlannedPaths {
			if pp.Action != "create" || strings.TrimSpace(pp.Path) == "" || pp.Path == created || slices.ContainsFunc(tasks, func(t task) bool { return t.Path == pp.Path }) {
				continue
			}
			tasks = append(tasks, task{ID: fmt.Sprintf("T%d", len(tasks)+1), Action: "modify", Path: pp.Path, Pattern: "Keep what " + cmpOr(dep.PRPID, dep.StoryID) + " builds there",
				Details: "Extend what " + dep.StoryID + " creates here instead of creating it again.", DependsOn: []string{"T1"}, Validation: validation})
		}
	}
	tasks = append(tasks, task{ID: fmt.Sprintf("T%d", len(tasks)+1), Action: "modify", Path: first, Pattern: "Keep its existing structure",
		Details: "Wire the new behaviour in where the user meets it, with clear errors for invalid input.", DependsOn: []string{"T1"}, Validation: validation})
	p.Tasks = tasks
	for _, dep := range deps {
		p.Context.Codebase = append(p.Context.Codebase, fmt.Sprintf("%s depends on %s (%s).", st.ID, dep.StoryID, cmpOr(dep.PRPID, "its PRP")))
	}
}

// faithfulDigest answers a digest call in faithful mode: a chunk's every
// substantive sentence as a fact citing its input; or the partial digests
// merged, every distinct fact kept, neighbours joined when there are more
// than the prompt allows.
func faithfulDigest(kind string, req *fakeopenai.Request) digestDoc {
	user, _ := userMessage(req, "<")
	if kind == digestReduceSchemaName {
		var parts []digestDoc
		for _, m := range partialPattern.FindAllStringSubmatch(user, -1) {
			if d := decodeInto[digestDoc]([]byte(unfence(m[1], "partial_digest"))); d != nil {
				parts = append(parts, *d)
			}
		}
		limit := maxDigestFacts
		for _, msg := range req.Messages {
			if m := maxFactsPattern.FindStringSubmatch(msg.Content); msg.Role == "system" && m != nil {
				if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
					limit = n
				}
			}
		}
		return mergeFaithful(parts, limit)
	}
	d := digestDoc{Title: "Raw material", Facts: []digestFact{}, OpenQuestions: []string{}}
	m := chunkPattern.FindStringSubmatch(user)
	if m == nil {
		return d
	}
	title := m[3]
	if t, err := unquote(title); err == nil {
		title = t
	}
	in := input{n: m[1], kind: m[2], title: title, content: unfence(m[4], "input")}
	d.Title = (material{inputs: []input{in}}).topic()
	for _, s := range statementsOf(in) {
		if isQuestion(s.text) {
			if !slices.Contains(d.OpenQuestions, s.text) {
				d.OpenQuestions = append(d.OpenQuestions, s.text)
			}
			continue
		}
		if d.Summary == "" {
			d.Summary = s.text
		}
		if !slices.ContainsFunc(d.Facts, func(f digestFact) bool { return strings.EqualFold(f.Fact, s.text) }) {
			d.Facts = append(d.Facts, digestFact{Fact: s.text, Inputs: []string{m[1]}})
		}
	}
	return d
}

// mergeFaithful merges partial digests keeping every distinct fact (with
// the input ids of all its copies) and open question; when there are more
// than limit facts, neighbours are joined into one so that none is lost.
func mergeFaithful(parts []digestDoc, limit int) digestDoc {
	out := digestDoc{Facts: []digestFact{}, OpenQuestions: []string{}}
	for _, p := range parts {
		out.Title = cmpOr(out.Title, p.Title)
		out.Summary = cmpOr(out.Summary, p.Summary)
		for _, f := range p.Facts {
			if i := slices.IndexFunc(out.Facts, func(o digestFact) bool { return strings.EqualFold(o.Fact, f.Fact) }); i >= 0 {
				for _, id := range f.Inputs {
					if !slices.Contains(out.Facts[i].Inputs, id) {
						out.Facts[i].Inputs = append(out.Facts[i].Inputs, id)
					}
				}
				continue
			}
			out.Facts = append(out.Facts, digestFact{Fact: f.Fact, Inputs: slices.Clone(f.Inputs)})
		}
		for _, q := range p.OpenQuestions {
			if !slices.Contains(out.OpenQuestions, q) {
				out.OpenQuestions = append(out.OpenQuestions, q)
			}
		}
	}
	if limit > 0 && len(out.Facts) > limit {
		per := (len(out.Facts) + limit - 1) / limit
		var joined []digestFact
		for i := 0; i < len(out.Facts); i += per {
			group := out.Facts[i:min(i+per, len(out.Facts))]
			f := digestFact{Inputs: []string{}}
			var texts []string
			for _, g := range group {
				texts = append(texts, sentence(g.Fact))
				for _, id := range g.Inputs {
					if !slices.Contains(f.Inputs, id) {
						f.Inputs = append(f.Inputs, id)
					}
				}
			}
			f.Fact = strings.Join(texts, " ")
			joined = append(joined, f)
		}
		out.Facts = joined
	}
	out.Title = cmpOr(out.Title, "Raw material")
	return out
}
