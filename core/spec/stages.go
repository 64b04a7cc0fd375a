package spec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/devpilot/devpilot/ports"
)

// The stages' structured data, as their schemas (schemas/*.json) describe it.

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
	Title          string           `json:"title"`
	Summary        string           `json:"summary"`
	Functional     []requirement    `json:"functional_requirements"`
	NonFunctional  []nfRequirement  `json:"non_functional_requirements"`
	Journeys       []journey        `json:"user_journeys"`
	SuccessMetrics []validatingGoal `json:"success_metrics"`
	NonGoals       []string         `json:"non_goals"`
	Assumptions    []string         `json:"assumptions"`
	Glossary       []term           `json:"glossary"`
	EdgeCases      []string         `json:"edge_cases"`
	Clarifications []clarification  `json:"clarifications"`
}

// term is a word of the domain and what it means here (BMAD's PRD and
// spec-kit's key entities: a shared vocabulary for every later stage).
type term struct {
	Term       string `json:"term"`
	Definition string `json:"definition"`
}

// clarification is an explicit marker where the material is silent on
// something that matters (spec-kit's [NEEDS CLARIFICATION]), instead of a
// silent invention; a PRD has at most maxClarifications.
type clarification struct {
	Question string `json:"question"`
	Impact   string `json:"impact"`
}

// maxClarifications bounds a PRD's clarification markers, as spec-kit does.
const maxClarifications = 3

type requirement struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Priority    string `json:"priority"`
	// Sources are where the requirement comes from in the raw material,
	// so later calls can be given the passages around them.
	Sources []source `json:"sources"`
}

// source is a verbatim quote of the raw material a requirement cites:
// Input is the n attribute of its <input> element ("1", "2", …), or
// "digest" when the PRD was written from a digest of the inputs.
type source struct {
	Input string `json:"input"`
	Quote string `json:"quote"`
}

// sourceDigest is a source's Input when the PRD was written from a digest.
const sourceDigest = "digest"

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

type validatingGoal struct {
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
	// IndependentTest is how the story alone is shown to work (spec-kit).
	IndependentTest string   `json:"independent_test"`
	EdgeCases       []string `json:"edge_cases"`
	// DependsOn names the stories that must be done first, never a later
	// one (BMAD's sequencing rule).
	DependsOn []string `json:"depends_on"`
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
	ID          string   `json:"id"`
	StoryID     string   `json:"story_id"`
	Title       string   `json:"title"`
	Goal        string   `json:"goal"`
	Deliverable string   `json:"deliverable"`
	Why         []string `json:"why"`
	// AcceptanceCriteria are the story's, carried over (PRP base: success
	// criteria; BMAD: the story's acceptance criteria travel with it).
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

// The kinds of a PRP reference, as the PRP base template types them.
const (
	refFile = "file"
	refURL  = "url"
	refDoc  = "doc"
)

// reference is something the implementer must read: a file of the
// repository, a URL, or a document, with the section or pattern to take
// from it (PRP base template: file/url/doc with why and section).
type reference struct {
	Kind    string `json:"kind"`
	Target  string `json:"target"`
	Section string `json:"section"`
	Why     string `json:"why"`
}

// The actions of a PRP task (PRP base template: CREATE / MODIFY).
const (
	actionCreate = "create"
	actionModify = "modify"
)

// task is one step of the implementation, in dependency order (PRP base
// template: action, path, the pattern to follow, dependencies, and a
// validation command per task).
type task struct {
	ID         string   `json:"id"`
	Action     string   `json:"action"`
	Path       string   `json:"path"`
	Pattern    string   `json:"pattern"`
	Details    string   `json:"details"`
	DependsOn  []string `json:"depends_on"`
	Validation string   `json:"validation"`
}

// validation is the PRP's validation loop: commands with what they must
// show, or none with the reason (no invented commands when the stack is
// unknown).
type validation struct {
	Commands   []check `json:"commands"`
	NoneReason string  `json:"none_reason"`
}

// check is one validation command (PRP base template: level, command,
// expected result).
type check struct {
	Level   string `json:"level"`
	Command string `json:"command"`
	Expect  string `json:"expect"`
}

// newDoc returns an empty document of the stage's type.
func newDoc(st ports.Stage) any {
	switch st {
	case ports.StageScope:
		return &scopeDoc{}
	case ports.StagePRD:
		return &prdDoc{}
	case ports.StageEpics:
		return &epicsDoc{}
	case ports.StageStories:
		return &storiesDoc{}
	case ports.StagePRPs:
		return &prpsDoc{}
	}
	return nil
}

// output is a model answer that passed validation.
type output struct {
	data json.RawMessage // compact JSON
	doc  any             // *scopeDoc, *prdDoc, …
}

const maxProblems = 20

// parseOutput checks a model's answer for stage st: JSON, the stage's
// schema, then the id rules. It returns the problems for the model to fix
// when there are any.
func parseOutput(st ports.Stage, answer string) (output, []string) {
	text := stripFence(answer)
	if text == "" {
		return output{}, []string{"the answer is empty; it must be one JSON object"}
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err != nil {
		return output{}, []string{"the answer is not valid JSON: " + err.Error()}
	}
	if problems := validateSchema(st, inst); len(problems) > 0 {
		return output{}, problems
	}
	doc := newDoc(st)
	if err := json.Unmarshal([]byte(text), doc); err != nil {
		return output{}, []string{"the answer does not fit the schema: " + err.Error()}
	}
	if problems := idRules(doc); len(problems) > 0 {
		return output{}, problems
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(text)); err != nil {
		return output{}, []string{"the answer is not valid JSON: " + err.Error()}
	}
	return output{data: compact.Bytes(), doc: doc}, nil
}

// stripFence removes a Markdown code fence some models put around JSON even
// when asked not to.
func stripFence(s string) string {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "```") || !strings.HasSuffix(s, "```") || len(s) < 6 {
		return s
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "```"), "```")
	if nl := strings.IndexByte(s, '\n'); nl >= 0 && !strings.ContainsAny(s[:nl], "{[") {
		s = s[nl+1:]
	}
	return strings.TrimSpace(s)
}

// decodeDoc reads a stored artifact's data; nil when it cannot.
func decodeDoc(st ports.Stage, data json.RawMessage) any {
	doc := newDoc(st)
	if doc == nil || json.Unmarshal(data, doc) != nil {
		return nil
	}
	return doc
}

var (
	storyIDPattern = regexp.MustCompile(`^ST-([1-9][0-9]*)\.([1-9][0-9]*)$`)
	prpIDPattern   = regexp.MustCompile(`^PRP-([1-9][0-9]*)\.([1-9][0-9]*)$`)
	epicIDPattern  = regexp.MustCompile(`^EP-([1-9][0-9]*)$`)
)

// idRules checks what the schema cannot: ids are unique within the document,
// a story ST-e.n belongs to epic EP-e, and a PRP PRP-e.n implements story
// ST-e.n.
func idRules(doc any) []string {
	var problems []string
	unique := func(kind string, ids []string) {
		seen := map[string]bool{}
		for _, id := range ids {
			if seen[id] {
				problems = append(problems, fmt.Sprintf("the %s id %s is used more than once; ids must be unique", kind, id))
			}
			seen[id] = true
		}
	}
	switch d := doc.(type) {
	case *prdDoc:
		unique("requirement", mapIDs(d.Functional, func(r requirement) string { return r.ID }))
		unique("non-functional requirement", mapIDs(d.NonFunctional, func(r nfRequirement) string { return r.ID }))
		if n := len(d.Clarifications); n > maxClarifications {
			problems = append(problems, fmt.Sprintf("at '/clarifications': %d clarification markers; keep at most %d, the ones that matter most, and state the rest as assumptions", n, maxClarifications))
		}
	case *epicsDoc:
		unique("epic", mapIDs(d.Epics, func(e epic) string { return e.ID }))
	case *storiesDoc:
		unique("story", mapIDs(d.Stories, func(s story) string { return s.ID }))
		for i, s := range d.Stories {
			sm, em := storyIDPattern.FindStringSubmatch(s.ID), epicIDPattern.FindStringSubmatch(s.EpicID)
			if sm != nil && em != nil && sm[1] != em[1] {
				problems = append(problems, fmt.Sprintf("at '/stories/%d/id': %s belongs to epic %s, so its id must be ST-%s.n", i, s.ID, s.EpicID, em[1]))
			}
		}
	case *prpsDoc:
		unique("PRP", mapIDs(d.PRPs, func(p prp) string { return p.ID }))
		for i, p := range d.PRPs {
			pm := prpIDPattern.FindStringSubmatch(p.ID)
			if pm != nil && p.StoryID != "ST-"+pm[1]+"."+pm[2] {
				problems = append(problems, fmt.Sprintf("at '/prps/%d/id': %s implements story %s, so its id must be PRP-%s", i, p.ID, p.StoryID, strings.TrimPrefix(p.StoryID, "ST-")))
			}
			problems = append(problems, prpRules(i, p)...)
		}
	}
	return problems
}

func mapIDs[T any](items []T, id func(T) string) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = id(it)
	}
	return out
}

// prpRules checks a PRP's tasks and validation: task ids T1, T2, … in order,
// each depending only on tasks before it, and either validation commands or
// the reason there are none.
func prpRules(i int, p prp) []string {
	var problems []string
	seen := map[string]bool{}
	for j, t := range p.Tasks {
		if want := fmt.Sprintf("T%d", j+1); t.ID != want {
			problems = append(problems, fmt.Sprintf("at '/prps/%d/tasks/%d/id': the tasks of %s are numbered T1, T2, … in order, so this one is %s", i, j, p.ID, want))
		}
		for _, dep := range t.DependsOn {
			if !seen[dep] {
				problems = append(problems, fmt.Sprintf("at '/prps/%d/tasks/%d/depends_on': %s of %s depends on %s, which is not a task before it; order the tasks so that each depends only on earlier ones", i, j, t.ID, p.ID, dep))
			}
		}
		seen[t.ID] = true
	}
	v := p.Validation
	switch {
	case len(v.Commands) == 0 && strings.TrimSpace(v.NoneReason) == "":
		problems = append(problems, fmt.Sprintf("at '/prps/%d/validation': %s has no validation commands and no none_reason; give the commands the project uses, or say why none are known", i, p.ID))
	case len(v.Commands) > 0 && strings.TrimSpace(v.NoneReason) != "":
		problems = append(problems, fmt.Sprintf("at '/prps/%d/validation/none_reason': %s has validation commands, so none_reason must be empty", i, p.ID))
	}
	return problems
}
