package demomodel

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// The response format names core/spec and core/content ask with.
const (
	specSchemaPrefix  = "spec_"
	contentSchemaName = "content_draft"
)

// The documents of the specification stages, as core/spec/schemas/*.json
// describe them.

type scopeDoc struct {
	Title          string        `json:"title"`
	Problem        string        `json:"problem"`
	Users          []scopeUser   `json:"users"`
	Goals          []string      `json:"goals"`
	SuccessMetrics []scopeMetric `json:"success_metrics"`
	InScope        []string      `json:"in_scope"`
	OutOfScope     []string      `json:"out_of_scope"`
	Constraints    []string      `json:"constraints"`
	Risks          []scopeRisk   `json:"risks"`
	OpenQuestions  []string      `json:"open_questions"`
}

type scopeUser struct {
	Persona string `json:"persona"`
	Needs   string `json:"needs"`
}

type scopeMetric struct {
	Metric string `json:"metric"`
	Target string `json:"target"`
}

type scopeRisk struct {
	Risk       string `json:"risk"`
	Mitigation string `json:"mitigation"`
}

type prdDoc struct {
	Title          string          `json:"title"`
	Summary        string          `json:"summary"`
	Functional     []requirement   `json:"functional_requirements"`
	NonFunctional  []nfRequirement `json:"non_functional_requirements"`
	Journeys       []journey       `json:"user_journeys"`
	SuccessMetrics []prdMetric     `json:"success_metrics"`
	NonGoals       []string        `json:"non_goals"`
	Assumptions    []string        `json:"assumptions"`
	Glossary       []term          `json:"glossary"`
	EdgeCases      []string        `json:"edge_cases"`
	Clarifications []clarification `json:"clarifications"`
}

type term struct {
	Term       string `json:"term"`
	Definition string `json:"definition"`
}

type clarification struct {
	Question string `json:"question"`
	Impact   string `json:"impact"`
}

type requirement struct {
	ID          string   `json:"id"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Priority    string   `json:"priority"`
	Sources     []source `json:"sources"`
}

// source is where a requirement comes from: a verbatim excerpt of raw input
// n ("1", "2", …), or a fact of the digest (input "digest").
type source struct {
	Input string `json:"input"`
	Quote string `json:"quote"`
}

type nfRequirement struct {
	ID          string `json:"id"`
	Category    string `json:"category"`
	Description string `json:"description"`
}

type journey struct {
	Name           string   `json:"name"`
	Persona        string   `json:"persona"`
	Steps          []string `json:"steps"`
	RequirementIDs []string `json:"requirement_ids"`
}

type prdMetric struct {
	Metric    string   `json:"metric"`
	Target    string   `json:"target"`
	Validates []string `json:"validates"`
}

type epicsDoc struct {
	Epics []epic `json:"epics"`
}

type epic struct {
	ID             string   `json:"id"`
	Title          string   `json:"title"`
	Goal           string   `json:"goal"`
	RequirementIDs []string `json:"requirement_ids"`
	DependsOn      []string `json:"depends_on"`
	Order          int      `json:"order"`
}

type storiesDoc struct {
	Stories []story `json:"stories"`
}

type story struct {
	ID                 string      `json:"id"`
	EpicID             string      `json:"epic_id"`
	Title              string      `json:"title"`
	AsA                string      `json:"as_a"`
	IWant              string      `json:"i_want"`
	SoThat             string      `json:"so_that"`
	AcceptanceCriteria []criterion `json:"acceptance_criteria"`
	RequirementIDs     []string    `json:"requirement_ids"`
	Estimate           int         `json:"estimate"`
	IndependentTest    string      `json:"independent_test"`
	EdgeCases          []string    `json:"edge_cases"`
	DependsOn          []string    `json:"depends_on"`
}

type criterion struct {
	Given string `json:"given"`
	When  string `json:"when"`
	Then  string `json:"then"`
}

type prpsDoc struct {
	PRPs []prp `json:"prps"`
}

type prp struct {
	ID                 string      `json:"id"`
	StoryID            string      `json:"story_id"`
	Title              string      `json:"title"`
	Goal               string      `json:"goal"`
	Deliverable        string      `json:"deliverable"`
	Why                []string    `json:"why"`
	AcceptanceCriteria []criterion `json:"acceptance_criteria"`
	Context            prpContext  `json:"context"`
	Tasks              []task      `json:"tasks"`
	Validation         validation  `json:"validation"`
	SuccessChecklist   []string    `json:"success_checklist"`
	AntiPatterns       []string    `json:"anti_patterns"`
}

type prpContext struct {
	References []reference `json:"references"`
	Codebase   []string    `json:"codebase"`
	Gotchas    []string    `json:"gotchas"`
}

type reference struct {
	Kind    string `json:"kind"`
	Target  string `json:"target"`
	Section string `json:"section"`
	Why     string `json:"why"`
}

type task struct {
	ID         string   `json:"id"`
	Action     string   `json:"action"`
	Path       string   `json:"path"`
	Pattern    string   `json:"pattern"`
	Details    string   `json:"details"`
	DependsOn  []string `json:"depends_on"`
	Validation string   `json:"validation"`
}

type validation struct {
	Commands   []check `json:"commands"`
	NoneReason string  `json:"none_reason"`
}

type check struct {
	Level   string `json:"level"`
	Command string `json:"command"`
	Expect  string `json:"expect"`
}

// The prompt core/spec writes: the raw material as <input> elements, then
// each earlier stage's current artifact as an <artifact> element of JSON.
var (
	inputPattern    = regexp.MustCompile(`(?s)<input n="(\d+)" kind="([^"]*)" title=("(?:[^"\\]|\\.)*") content_type=(?:"(?:[^"\\]|\\.)*")>\n(.*?)\n</input>`)
	artifactPattern = regexp.MustCompile(`(?s)<artifact stage="([a-z]+)" version="\d+">\n(.*?)\n</artifact>`)
	epicIDPattern   = regexp.MustCompile(`^EP-([1-9][0-9]*)$`)
	storyIDPattern  = regexp.MustCompile(`^ST-([1-9][0-9]*)\.([1-9][0-9]*)$`)
)

// specPrompt is what a stage request holds.
type specPrompt struct {
	material material
	scope    *scopeDoc
	prd      *prdDoc
	epics    *epicsDoc
	stories  *storiesDoc
}

// The parts of a batch call core/spec makes: one epic's stories, or one
// story's PRP, with the linked repository's tree, files and commands.
var (
	prdSummaryPattern = regexp.MustCompile(`(?s)<prd_summary>\n(.*?)\n</prd_summary>`)
	epicPattern       = regexp.MustCompile(`(?s)<epic>\n(.*?)\n</epic>`)
	reqsPattern       = regexp.MustCompile(`(?s)<requirements>\n(.*?)\n</requirements>`)
	storyPattern      = regexp.MustCompile(`(?s)<story>\n(.*?)\n</story>`)
	treePattern       = regexp.MustCompile(`(?s)<tree[^>]*>\n(.*?)\n</tree>`)
	filePattern       = regexp.MustCompile(`<file path="([^"]+)">`)
	commandsPattern   = regexp.MustCompile(`(?s)<commands[^>]*>\n(.*?)\n</commands>`)
)

// repoPrompt is the linked repository as a PRP call shows it.
type repoPrompt struct {
	tree     map[string]bool
	files    []string // the files shown as similar to the story's, most relevant first
	commands []string
}

func (r *repoPrompt) has(p string) bool { return r.tree[p] }

// batchPrompt is a batch call's context: an epic with its requirements, or
// a story with the repository.
type batchPrompt struct {
	prd   *prdDoc
	epic  *epic
	story *story
	repo  *repoPrompt
}

func readBatchPrompt(req *fakeopenai.Request) (batchPrompt, bool) {
	var b batchPrompt
	for _, msg := range req.Messages {
		if msg.Role != "user" || !strings.Contains(msg.Content, "<prd_summary>") {
			continue
		}
		c := msg.Content
		if m := prdSummaryPattern.FindStringSubmatch(c); m != nil {
			b.prd = decodeInto[prdDoc]([]byte(m[1]))
		}
		if b.prd == nil {
			b.prd = &prdDoc{}
		}
		if m := reqsPattern.FindStringSubmatch(c); m != nil {
			if reqs := decodeInto[[]requirement]([]byte(m[1])); reqs != nil {
				b.prd.Functional = *reqs
			}
		}
		if m := epicPattern.FindStringSubmatch(c); m != nil {
			b.epic = decodeInto[epic]([]byte(m[1]))
		}
		if m := storyPattern.FindStringSubmatch(c); m != nil {
			b.story = decodeInto[story]([]byte(m[1]))
		}
		if m := treePattern.FindStringSubmatch(c); m != nil {
			r := &repoPrompt{tree: map[string]bool{}}
			for _, l := range strings.Split(m[1], "\n") {
				if l = strings.TrimSpace(l); l != "" {
					r.tree[l] = true
				}
			}
			for _, f := range filePattern.FindAllStringSubmatch(c, -1) {
				r.files = append(r.files, f[1])
			}
			if len(r.files) == 0 {
				for l := range r.tree {
					if strings.Contains(l, "/") && strings.Contains(path.Base(l), ".") && !strings.HasPrefix(l, ".") {
						r.files = append(r.files, l)
					}
				}
				sort.Strings(r.files)
				r.files = r.files[:min(len(r.files), 1)]
			}
			if cm := commandsPattern.FindStringSubmatch(c); cm != nil {
				for _, l := range strings.Split(cm[1], "\n") {
					if l = strings.TrimSpace(l); l != "" {
						r.commands = append(r.commands, l)
					}
				}
			}
			b.repo = r
		}
		return b, b.epic != nil || b.story != nil
	}
	return b, false
}

func readSpecPrompt(req *fakeopenai.Request) specPrompt {
	var p specPrompt
	for _, msg := range req.Messages {
		if msg.Role != "user" || !strings.Contains(msg.Content, "# Raw material") {
			continue
		}
		for _, m := range inputPattern.FindAllStringSubmatch(msg.Content, -1) {
			t, err := strconv.Unquote(m[3])
			if err != nil {
				t = strings.Trim(m[3], `"`)
			}
			p.material.inputs = append(p.material.inputs, input{n: m[1], kind: m[2], title: t, content: strings.ReplaceAll(m[4], `<\/input`, "</input")})
		}
		for _, m := range artifactPattern.FindAllStringSubmatch(msg.Content, -1) {
			data := []byte(m[2])
			switch m[1] {
			case "scope":
				p.scope = decodeInto[scopeDoc](data)
			case "prd":
				p.prd = decodeInto[prdDoc](data)
			case "epics":
				p.epics = decodeInto[epicsDoc](data)
			case "stories":
				p.stories = decodeInto[storiesDoc](data)
			}
		}
		break
	}
	return p
}

func decodeInto[T any](data []byte) *T {
	v := new(T)
	if err := json.Unmarshal(data, v); err != nil {
		return nil
	}
	return v
}

// specArtifact writes the document of a stage from the prompt: each stage
// from the earlier stage's artifact when the prompt has it, or else from a
// stage the model derives itself the same way from the raw material.
func specArtifact(stage string, req *fakeopenai.Request) any {
	if b, ok := readBatchPrompt(req); ok {
		switch {
		case stage == "stories" && b.epic != nil:
			return buildStories(epicsDoc{Epics: []epic{*b.epic}}, *b.prd)
		case stage == "prps" && b.story != nil:
			return buildPRPs(storiesDoc{Stories: []story{*b.story}}, b.repo)
		}
	}
	c := stageChain{p: readSpecPrompt(req), scopeOf: buildScope, storiesOf: buildStories,
		prdOf: func(s scopeDoc, inputs []input) prdDoc {
			d := buildPRD(s)
			for i, r := range d.Functional {
				d.Functional[i].Sources = bestSource(r.Description, inputs)
			}
			return d
		}}
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
		// A single-call request shows the linked repository, if any, like
		// a per-story call does.
		user, _ := userMessage(req, "# Raw material")
		return buildPRPs(c.stories(), readRepo(user))
	}
	if f := req.ResponseFormat; f != nil && f.JSONSchema != nil {
		return instanceOf(f.JSONSchema.Schema)
	}
	return map[string]any{}
}

// stageChain writes the stages a request needs: each from the request's
// artifact of that stage when it has one, or else from the stage before
// it, with the mode's writers (the epics are grouped the same way in
// every mode).
type stageChain struct {
	p         specPrompt
	scopeOf   func(material) scopeDoc
	prdOf     func(scopeDoc, []input) prdDoc
	storiesOf func(epicsDoc, prdDoc) storiesDoc
}

func (c stageChain) scope() scopeDoc {
	if c.p.scope != nil {
		return *c.p.scope
	}
	return c.scopeOf(c.p.material)
}

func (c stageChain) prd() prdDoc {
	if c.p.prd != nil {
		return *c.p.prd
	}
	return c.prdOf(c.scope(), c.p.material.inputs)
}

func (c stageChain) epics() epicsDoc {
	if c.p.epics != nil {
		return *c.p.epics
	}
	return buildEpics(c.prd())
}

func (c stageChain) stories() storiesDoc {
	if c.p.stories != nil {
		return *c.p.stories
	}
	return c.storiesOf(c.epics(), c.prd())
}

func buildScope(m material) scopeDoc {
	title := m.topic()
	points := m.points()
	d := scopeDoc{
		Title:   title,
		Problem: m.problem(title),
		Goals:   []string{},
		InScope: points,
		Risks: []scopeRisk{{
			Risk:       "The raw material may leave requirements out or state them ambiguously.",
			Mitigation: "Review this scope with the stakeholders before the PRD is written.",
		}},
		OutOfScope:    nonNil(m.outOfScope()),
		Constraints:   nonNil(m.matching(constraintPattern, 5)),
		OpenQuestions: m.questions(),
	}
	for _, persona := range m.personas() {
		d.Users = append(d.Users, scopeUser{Persona: persona, Needs: needs(persona, title, points)})
	}
	for _, pt := range points[:min(len(points), 3)] {
		d.Goals = append(d.Goals, sentence(pt))
		d.SuccessMetrics = append(d.SuccessMetrics, scopeMetric{
			Metric: "Share of intended users who " + lowerFirst(titleOf(pt)),
			Target: "Most intended users within three months of launch (an assumption to confirm)",
		})
	}
	if len(d.OpenQuestions) == 0 {
		d.OpenQuestions = []string{"Which assumptions in this scope must the stakeholders confirm?"}
	}
	return d
}

func buildPRD(s scopeDoc) prdDoc {
	items := nonBlank(s.InScope)
	if len(items) == 0 {
		items = nonBlank(s.Goals)
	}
	if len(items) == 0 {
		items = []string{"Deliver " + cmpOr(strings.TrimSpace(s.Title), "the product")}
	}
	items = items[:min(len(items), 10)]
	d := prdDoc{
		Title:   cmpOr(strings.TrimSpace(s.Title), "Product requirements"),
		Summary: cmpOr(strings.TrimSpace(s.Problem), "The product described by the scope."),
		NonFunctional: []nfRequirement{
			{ID: "NFR-1", Category: "performance", Description: "Every screen and API call answers within one second under typical load."},
			{ID: "NFR-2", Category: "security", Description: "Only signed-in members of the organisation can see or change its data."},
		},
		NonGoals:    nonNil(nonBlank(s.OutOfScope)),
		Assumptions: []string{"The users named in the scope sign in with accounts they already have.", "Volumes stay within what the team handles today."},
		Glossary: []term{{Term: cmpOr(strings.TrimSpace(s.Title), "The product"),
			Definition: sentence(cmpOr(strings.TrimSpace(s.Problem), "What this specification describes"))}},
		EdgeCases: []string{
			"What happens when a user sends incomplete or invalid input?",
			"What happens when two users change the same record at once?",
			"What happens when a dependency the product relies on is unavailable?",
		},
		Clarifications: []clarification{},
	}
	for _, u := range s.Users {
		if p := strings.TrimSpace(u.Persona); p != "" && len(d.Glossary) < 4 {
			d.Glossary = append(d.Glossary, term{Term: p, Definition: sentence(cmpOr(strings.TrimSpace(u.Needs), "A user of the product"))})
		}
	}
	for _, q := range nonBlank(s.OpenQuestions) {
		if len(d.Clarifications) == 3 {
			break
		}
		d.Clarifications = append(d.Clarifications, clarification{Question: sentence(q),
			Impact: "It changes what is built; until it is answered the PRD assumes the simplest reading of the material."})
	}
	for i, it := range items {
		priority := "could"
		switch {
		case i < 3:
			priority = "must"
		case i < 6:
			priority = "should"
		}
		d.Functional = append(d.Functional, requirement{ID: fmt.Sprintf("REQ-%d", i+1), Title: titleOf(it), Description: sentence(it), Priority: priority, Sources: []source{}})
	}
	personas := []string{}
	for _, u := range s.Users {
		if p := strings.TrimSpace(u.Persona); p != "" {
			personas = append(personas, p)
		}
	}
	if len(personas) == 0 {
		personas = []string{"User"}
	}
	personas = personas[:min(len(personas), 3, len(d.Functional))]
	for i, persona := range personas {
		j := journey{Name: fmt.Sprintf("%s gets the job done", persona), Persona: persona, Steps: []string{"Signs in"}, RequirementIDs: []string{}}
		for k := i; k < len(d.Functional); k += len(personas) {
			j.Steps = append(j.Steps, d.Functional[k].Title)
			j.RequirementIDs = append(j.RequirementIDs, d.Functional[k].ID)
		}
		d.Journeys = append(d.Journeys, j)
	}
	metrics := s.SuccessMetrics
	if len(metrics) == 0 {
		metrics = []scopeMetric{{Metric: "Share of intended users who use the product", Target: "Most of them within three months (an assumption to confirm)"}}
	}
	for i, m := range metrics[:min(len(metrics), 5)] {
		pm := prdMetric{Metric: cmpOr(strings.TrimSpace(m.Metric), "Adoption"), Target: cmpOr(strings.TrimSpace(m.Target), "To be agreed"),
			Validates: []string{d.Functional[i%len(d.Functional)].ID}}
		if i == 0 {
			pm.Validates = append(pm.Validates, "NFR-1")
		}
		d.SuccessMetrics = append(d.SuccessMetrics, pm)
	}
	return d
}

// reqsPerEpic is how many requirements one epic groups.
const reqsPerEpic = 2

func buildEpics(p prdDoc) epicsDoc {
	var d epicsDoc
	reqs := p.Functional
	if len(reqs) == 0 {
		reqs = []requirement{{ID: "REQ-1", Title: cmpOr(p.Title, "The product"), Description: cmpOr(p.Summary, "Deliver the product.")}}
	}
	for i := 0; i < len(reqs); i += reqsPerEpic {
		group := reqs[i:min(i+reqsPerEpic, len(reqs))]
		n := len(d.Epics) + 1
		e := epic{ID: fmt.Sprintf("EP-%d", n), Title: cmpOr(strings.TrimSpace(group[0].Title), group[0].ID), Order: n, DependsOn: []string{}}
		var titles []string
		for _, r := range group {
			e.RequirementIDs = append(e.RequirementIDs, r.ID)
			titles = append(titles, lowerFirst(cmpOr(strings.TrimSpace(r.Title), r.ID)))
		}
		e.Goal = fmt.Sprintf("Make it possible to %s (%s).", joinAnd(titles), strings.Join(e.RequirementIDs, ", "))
		if n > 1 {
			e.DependsOn = []string{fmt.Sprintf("EP-%d", n-1)}
		}
		d.Epics = append(d.Epics, e)
	}
	return d
}

var (
	modalPattern   = regexp.MustCompile(`(?i)^((?:[\p{L}\p{N}'-]+\s+){0,5}?[\p{L}\p{N}'-]+)\s+(?:can|could|must be able to|should be able to|will be able to|are able to|is able to|must|should|will|shall|needs? to|wants? to)\s+(.+)$`)
	subjectPattern = regexp.MustCompile(`(?i)^(?:the\s+|all\s+|every\s+|each\s+)?(?:customers?|clients?|employees?|managers?|admins?|administrators?|developers?|engineers?|finance|accountants?|support(?: agents?)?|operators?|designers?|marketers?|students?|teachers?|patients?|doctors?|nurses?|buyers?|sellers?|drivers?|guests?|members?|users?|people|teams?|visitors?|staff)\s+([\p{L}]+)\b(.*)$`)
)

// verbPhrase is what a statement lets its user do: the statement without
// its subject, the verb in its base form ("Employees can submit …" and
// "Finance exports …" → "submit …", "export …"; "Receipts must be kept …" →
// "have receipts kept …"); ok is false when the statement has no such
// shape.
func verbPhrase(statement string) (string, bool) {
	s := strings.TrimRight(strings.TrimSpace(oneLine(statement)), ".!;:")
	if m := modalPattern.FindStringSubmatch(s); m != nil {
		if rest, passive := strings.CutPrefix(m[2], "be "); passive {
			return "have " + lowerFirst(m[1]) + " " + rest, true
		}
		return m[2], true
	}
	if m := subjectPattern.FindStringSubmatch(s); m != nil {
		return baseVerb(m[1]) + m[2], true
	}
	return "", false
}

// baseVerb turns a verb in the third person singular into its base form.
func baseVerb(w string) string {
	lower := strings.ToLower(w)
	switch lower {
	case "is", "are":
		return "be"
	case "has":
		return "have"
	case "does":
		return "do"
	case "goes":
		return "go"
	}
	switch {
	case strings.HasSuffix(lower, "ies") && len(lower) > 4:
		return w[:len(w)-3] + "y"
	case strings.HasSuffix(lower, "sses"), strings.HasSuffix(lower, "shes"), strings.HasSuffix(lower, "ches"), strings.HasSuffix(lower, "xes"):
		return w[:len(w)-2]
	case strings.HasSuffix(lower, "s") && !strings.HasSuffix(lower, "ss"):
		return w[:len(w)-1]
	}
	return w
}

// titleOf names a statement in a few words: its verb phrase when it has
// one, capitalised.
func titleOf(statement string) string {
	if v, ok := verbPhrase(statement); ok {
		return shortTitle(v)
	}
	return shortTitle(statement)
}

// wantOf is what a requirement lets its user do, as a verb phrase.
func wantOf(r requirement) string {
	if v, ok := verbPhrase(r.Description); ok {
		return cutWords(lowerFirst(v), 160)
	}
	if v, ok := verbPhrase(r.Title); ok {
		return cutWords(lowerFirst(v), 160)
	}
	return "use " + lowerFirst(cmpOr(strings.TrimSpace(r.Title), "this feature"))
}

func buildStories(e epicsDoc, p prdDoc) storiesDoc {
	reqs := map[string]requirement{}
	for _, r := range p.Functional {
		reqs[r.ID] = r
	}
	personaOf := map[string]string{}
	for _, j := range p.Journeys {
		for _, id := range j.RequirementIDs {
			if _, ok := personaOf[id]; !ok && strings.TrimSpace(j.Persona) != "" {
				personaOf[id] = strings.TrimSpace(j.Persona)
			}
		}
	}
	var d storiesDoc
	for _, ep := range e.Epics {
		em := epicIDPattern.FindStringSubmatch(ep.ID)
		if em == nil {
			continue
		}
		ids := ep.RequirementIDs
		if len(ids) == 0 {
			ids = []string{""}
		}
		for n, id := range ids {
			r, known := reqs[id]
			if !known {
				r = requirement{Title: fmt.Sprintf("Part %d of %s", n+1, cmpOr(strings.TrimSpace(ep.Title), ep.ID)), Description: cmpOr(strings.TrimSpace(ep.Goal), "Deliver the epic.")}
			}
			persona := strings.ToLower(cmpOr(personaOf[id], "user"))
			want := wantOf(r)
			s := story{
				ID:              fmt.Sprintf("ST-%s.%d", em[1], n+1),
				EpicID:          ep.ID,
				Title:           cmpOr(strings.TrimSpace(r.Title), "Story"),
				AsA:             persona,
				IWant:           "to " + want,
				SoThat:          "my work no longer depends on workarounds",
				RequirementIDs:  []string{},
				Estimate:        estimate(r.Description),
				IndependentTest: fmt.Sprintf("Sign in as %s with nothing else of the epic built, %s, and check the outcome %s describes.", article(persona), want, cmpOr(id, ep.ID)),
				EdgeCases:       []string{"Incomplete or invalid input", "The same action sent twice in a row"},
				DependsOn:       []string{},
			}
			// One outcome per criterion: a description joining outcomes
			// with "and" gives one criterion each.
			for _, part := range andParts.Split(strings.TrimRight(cmpOr(strings.TrimSpace(r.Description), "it works"), "."), -1) {
				s.AcceptanceCriteria = append(s.AcceptanceCriteria, criterion{Given: "I am signed in as " + article(persona), When: "I " + want,
					Then: fmt.Sprintf("the outcome is what %s describes: %s", cmpOr(id, ep.ID), lowerFirst(strings.TrimSpace(part)))})
			}
			s.AcceptanceCriteria = append(s.AcceptanceCriteria, criterion{Given: "I am signed in as " + article(persona),
				When: "I try to " + want + " with incomplete or invalid input", Then: "I am told what to correct; nothing is changed"})
			if n > 0 {
				s.DependsOn = []string{fmt.Sprintf("ST-%s.%d", em[1], n)}
			}
			if known {
				s.RequirementIDs = []string{id}
			}
			d.Stories = append(d.Stories, s)
		}
	}
	return d
}

// andParts splits a statement at its "and"s.
var andParts = regexp.MustCompile(`(?i)[,;]?\s+and\s+`)

func estimate(desc string) int {
	switch n := len(strings.Fields(desc)); {
	case n < 8:
		return 2
	case n < 16:
		return 3
	case n < 30:
		return 5
	}
	return 8
}

func buildPRPs(s storiesDoc, repo *repoPrompt) prpsDoc {
	var d prpsDoc
	for _, st := range s.Stories {
		sm := storyIDPattern.FindStringSubmatch(st.ID)
		if sm == nil {
			continue
		}
		asA := cmpOr(strings.TrimSpace(st.AsA), "user")
		want := strings.TrimPrefix(cmpOr(strings.TrimSpace(st.IWant), "to use this feature"), "to ")
		reqs := "the PRD"
		if len(st.RequirementIDs) > 0 {
			reqs = strings.Join(st.RequirementIDs, ", ")
		}
		p := prp{
			ID:                 fmt.Sprintf("PRP-%s.%s", sm[1], sm[2]),
			StoryID:            st.ID,
			Title:              cmpOr(strings.TrimSpace(st.Title), st.ID),
			Goal:               fmt.Sprintf("Let %s %s, as story %s describes.", article(asA), want, st.ID),
			Deliverable:        fmt.Sprintf("A tested increment in which %s can %s, meeting every acceptance criterion of %s.", article(asA), want, st.ID),
			Why:                []string{sentence("So that " + cmpOr(strings.TrimSpace(st.SoThat), "the story's value is delivered")), fmt.Sprintf("It delivers %s.", reqs)},
			AcceptanceCriteria: st.AcceptanceCriteria,
			Context: prpContext{
				References: []reference{
					{Kind: "doc", Target: "PRD: " + reqs, Section: "The requirement and its success metrics", Why: "The requirement the story delivers, its priority and the metrics it serves."},
					{Kind: "doc", Target: "Story " + st.ID, Section: "Acceptance criteria and edge cases", Why: "What the work must meet, including the failure cases."},
				},
				Codebase: []string{"Follow the existing structure and conventions of the code being changed; keep the change to the modules this feature touches."},
				Gotchas:  []string{"Handle the failure cases of the acceptance criteria, not only the happy path."},
			},
			AntiPatterns: []string{"Do not build more than the story's acceptance criteria ask for.", "Do not leave the failure cases untested."},
		}
		if p.AcceptanceCriteria == nil {
			p.AcceptanceCriteria = []criterion{}
		}
		for _, c := range st.AcceptanceCriteria {
			p.SuccessChecklist = append(p.SuccessChecklist, sentence(c.Then))
		}
		if len(p.SuccessChecklist) == 0 {
			p.SuccessChecklist = []string{sentence(fmt.Sprintf("%s can %s", capitalise(article(asA)), want))}
		}
		groundPRP(&p, st, want, repo)
		d.PRPs = append(d.PRPs, p)
	}
	return d
}

// groundPRP fills a PRP's tasks and validation: from the repository the
// prompt shows when there is one (its files as references and the files to
// change, its commands as the validation), or else generic tasks and no
// commands, with the reason.
func groundPRP(p *prp, st story, want string, repo *repoPrompt) {
	if repo == nil || len(repo.files) == 0 {
		p.Tasks = []task{
			{ID: "T1", Action: "create", Path: "the module this feature belongs in", Pattern: "The project's existing modules", Details: sentence("Implement the use case: " + want), DependsOn: []string{}},
			{ID: "T2", Action: "create", Path: "the tests beside it", Pattern: "The project's existing tests", Details: fmt.Sprintf("Cover every acceptance criterion of %s with an automated test.", st.ID), DependsOn: []string{"T1"}},
		}
		p.Validation = validation{Commands: []check{}, NoneReason: "No repository is linked to this specification, so its test and build commands are unknown; link one to get them."}
		return
	}
	first := repo.files[0]
	dir := first[:strings.LastIndex(first, "/")+1]
	ext := first[strings.LastIndex(first, "."):]
	slug := strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(shortTitle(st.Title)), "_"), "_")
	if slug == "" {
		slug = "feature"
	}
	created := dir + slug + ext
	for repo.has(created) {
		created = dir + slug + "_" + strings.ReplaceAll(strings.ToLower(st.ID), ".", "_") + ext
	}
	for _, f := range repo.files {
		p.Context.References = append(p.Context.References, reference{Kind: "file", Target: f, Section: "Its structure, naming and error handling", Why: "The closest existing code to what this story changes; follow its pattern."})
	}
	p.Context.Codebase = []string{fmt.Sprintf("The code this story touches lives beside %s; keep new code in the same package and style.", first)}
	unit, syntax := "", ""
	for _, c := range repo.commands {
		switch lc := strings.ToLower(c); {
		case strings.Contains(lc, "lint") || strings.Contains(lc, "vet") || strings.Contains(lc, "fmt") || strings.Contains(lc, "typecheck"):
			if syntax == "" {
				syntax = c
			}
			p.Validation.Commands = append(p.Validation.Commands, check{Level: "syntax", Command: c, Expect: "No findings."})
		case strings.Contains(lc, "test"):
			if unit == "" {
				unit = c
			}
			level := "unit"
			if strings.Contains(lc, "e2e") || strings.Contains(lc, "integration") {
				level = "integration"
			}
			p.Validation.Commands = append(p.Validation.Commands, check{Level: level, Command: c, Expect: "Every test passes, including the new ones for " + st.ID + "."})
		case strings.Contains(lc, "build"):
			p.Validation.Commands = append(p.Validation.Commands, check{Level: "syntax", Command: c, Expect: "It builds with no errors."})
		}
	}
	if p.Validation.Commands == nil {
		p.Validation.NoneReason = "The repository shows no test, lint or build commands."
		p.Validation.Commands = []check{}
	}
	p.Tasks = []task{
		{ID: "T1", Action: "create", Path: created, Pattern: "Follow " + first, Details: sentence("Implement the use case: " + want), DependsOn: []string{}, Validation: cmpOr(syntax, unit)},
		{ID: "T2", Action: "modify", Path: first, Pattern: "Keep its existing structure", Details: "Wire the new behaviour in where the user meets it, with clear errors for invalid input.", DependsOn: []string{"T1"}, Validation: cmpOr(unit, syntax)},
	}
}

func article(noun string) string {
	noun = strings.TrimSpace(noun)
	if noun == "" {
		return "a user"
	}
	lower := strings.ToLower(noun)
	// "a user", "a euro", "a one-off": a vowel letter that sounds like a consonant.
	if strings.ContainsRune("aeiou", rune(lower[0])) && !strings.HasPrefix(lower, "us") && !strings.HasPrefix(lower, "uni") &&
		!strings.HasPrefix(lower, "eu") && !strings.HasPrefix(lower, "one") {
		return "an " + noun
	}
	return "a " + noun
}

// sentence makes s a sentence: capitalised, ending with a full stop.
func sentence(s string) string {
	s = strings.TrimSpace(oneLine(s))
	if s == "" {
		return "To be defined."
	}
	if !strings.HasSuffix(s, ".") && !strings.HasSuffix(s, "!") && !strings.HasSuffix(s, "?") {
		s += "."
	}
	return capitalise(s)
}

var titleTrailing = map[string]bool{"and": true, "or": true, "the": true, "a": true, "an": true, "of": true, "to": true,
	"for": true, "with": true, "in": true, "on": true, "by": true, "from": true, "their": true, "its": true, "our": true,
	"they": true, "that": true, "which": true, "who": true, "is": true, "are": true, "as": true, "at": true, "when": true, "each": true, "every": true}

// shortTitle is the first words of a statement, as a title.
func shortTitle(s string) string {
	words := strings.Fields(strings.TrimRight(strings.TrimSpace(s), ".!?:;,"))
	words = words[:min(len(words), 8)]
	for len(words) > 1 && titleTrailing[strings.ToLower(strings.Trim(words[len(words)-1], ",;:"))] {
		words = words[:len(words)-1]
	}
	t := strings.TrimRight(strings.Join(words, " "), ",;:")
	if t == "" {
		return "Untitled"
	}
	return capitalise(t)
}

func nonNil(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}

func nonBlank(list []string) []string {
	var out []string
	for _, s := range list {
		if strings.TrimSpace(s) != "" {
			out = append(out, s)
		}
	}
	return out
}
