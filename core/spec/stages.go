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
}

type requirement struct {
	ID          string `json:"id"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Priority    string `json:"priority"`
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
	ID               string     `json:"id"`
	StoryID          string     `json:"story_id"`
	Title            string     `json:"title"`
	Goal             string     `json:"goal"`
	Deliverable      string     `json:"deliverable"`
	Why              []string   `json:"why"`
	Context          prpContext `json:"context"`
	Blueprint        []task     `json:"blueprint"`
	Validation       prpLevels  `json:"validation"`
	SuccessChecklist []string   `json:"success_checklist"`
	AntiPatterns     []string   `json:"anti_patterns"`
}

type prpContext struct {
	References []reference `json:"references"`
	Codebase   []string    `json:"codebase"`
	Gotchas    []string    `json:"gotchas"`
}

type reference struct {
	Source string `json:"source"`
	Why    string `json:"why"`
}

type task struct {
	Task    string   `json:"task"`
	Details string   `json:"details"`
	Files   []string `json:"files"`
}

type prpLevels struct {
	Syntax      []string `json:"syntax"`
	Unit        []string `json:"unit"`
	Integration []string `json:"integration"`
	Domain      []string `json:"domain"`
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
