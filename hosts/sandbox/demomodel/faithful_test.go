package demomodel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/adapters/openai"
	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/hosts/eval/evalcorpus"
	"github.com/devpilot/devpilot/hosts/sandbox/demomodel"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
)

// faithfulLLM is the real OpenAI adapter talking to the demo model in
// faithful mode over HTTP.
func faithfulLLM(t *testing.T) *openai.Client {
	t.Helper()
	fake := fakeopenai.NewHandler()
	fake.SetResponder(demomodel.New(demomodel.Faithful()).Respond)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	c, err := openai.New(openai.Config{APIKey: "sk-demo", BaseURL: srv.URL + "/v1", Model: "devpilot-demo", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// stageSchema is core/spec's schema of a stage; withSources adds the
// requirements' sources the PRD schema gains.
func stageSchema(t *testing.T, stage string) json.RawMessage {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "..", "core", "spec", "schemas", stage+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// ask sends one stage request (a system message and the user message) and
// returns the answer's JSON.
func ask(t *testing.T, c *openai.Client, name string, schema json.RawMessage, user string) string {
	t.Helper()
	res, err := c.Chat(context.Background(), ports.ChatRequest{Messages: []ports.Message{
		{Role: ports.MessageSystem, Content: "You write one stage of a product specification."},
		{Role: ports.MessageUser, Content: user},
	}, ResponseFormat: &ports.JSONSchemaFormat{Name: name, Schema: schema, Strict: true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.Content
}

// fenced is genjob.Fenced: the text trimmed, a closing tag in it escaped.
func fenced(text, tag string) string {
	return strings.ReplaceAll(strings.TrimSpace(text), "</"+tag, "<\\/"+tag)
}

// tagged is core/spec's (batch.go) element of JSON.
func tagged(tag string, v any) string {
	b, _ := json.Marshal(v)
	return "<" + tag + ">\n" + fenced(string(b), tag) + "\n</" + tag + ">\n"
}

// stagePrompt is core/spec's buildMessages user message: the raw inputs,
// then the earlier artifacts.
func stagePrompt(stage string, inputs []evalcorpus.Input, artifacts ...[2]string) string {
	var u strings.Builder
	u.WriteString("# Raw material\n")
	for i, in := range inputs {
		fmt.Fprintf(&u, "\n<input n=\"%d\" kind=%q title=%s content_type=%s>\n%s\n</input>\n",
			i+1, in.Kind, strconv.Quote(in.Title), strconv.Quote(in.ContentType), fenced(in.Content, "input"))
	}
	if len(artifacts) > 0 {
		u.WriteString("\n# Earlier stages\n")
		for _, a := range artifacts {
			fmt.Fprintf(&u, "\n<artifact stage=%q version=\"1\">\n%s\n</artifact>\n", a[0], fenced(a[1], "artifact"))
		}
	}
	fmt.Fprintf(&u, "\nWrite the %s stage now.", stage)
	return u.String()
}

func corpusCase(t *testing.T, id string) evalcorpus.Case {
	t.Helper()
	c, ok, err := evalcorpus.Get(id)
	if err != nil || !ok {
		t.Fatalf("case %s: %v %v", id, ok, err)
	}
	return c
}

var sentenceSplit = regexp.MustCompile(`([.!?])\s+`)

// TestFaithfulScopeCarriesEverySentence: the faithful scope of each case
// of the corpus that is stored whole holds every sentence of its material
// and every one of its facts.
func TestFaithfulScopeCarriesEverySentence(t *testing.T) {
	t.Parallel()
	c := faithfulLLM(t)
	cases, err := evalcorpus.Load()
	if err != nil {
		t.Fatal(err)
	}
	marker := regexp.MustCompile(`^(?:[-*]\s+|\[[0-9:]+\]\s+[\p{Lu}][\p{L} .'-]*:\s+)`)
	for _, cs := range cases {
		if slices.ContainsFunc(cs.Inputs, func(in evalcorpus.Input) bool { return in.Expand != nil }) {
			continue // their filler is left out; see TestFaithfulDigestKeepsFacts
		}
		out := ask(t, c, "spec_scope", stageSchema(t, "scope"), stagePrompt("scope", cs.Inputs))
		validate(t, "scope", json.RawMessage(out))
		var scope map[string]any
		mustDecode(t, json.RawMessage(out), &scope)
		var lists []string
		for _, k := range []string{"in_scope", "constraints", "out_of_scope", "open_questions"} {
			for _, v := range scope[k].([]any) {
				lists = append(lists, v.(string))
			}
		}
		text := strings.Join(lists, "\n")
		for _, in := range cs.Inputs {
			for l := range strings.SplitSeq(in.Content, "\n") {
				l = marker.ReplaceAllString(strings.TrimSpace(l), "")
				if l == "" || strings.HasPrefix(l, "#") {
					continue
				}
				for _, s := range strings.Split(sentenceSplit.ReplaceAllString(l, "$1\n"), "\n") {
					if !strings.Contains(text, strings.TrimSpace(s)) {
						t.Errorf("case %s: the scope lacks %q", cs.ID, s)
					}
				}
			}
		}
		for _, f := range cs.Facts {
			if !f.FoundIn(text) {
				t.Errorf("case %s: the scope lacks fact %s %q", cs.ID, f.ID, f.Text)
			}
		}
	}
}

// TestFaithfulScopeSorts: constraints, out-of-scope items and questions go
// to their lists.
func TestFaithfulScopeSorts(t *testing.T) {
	t.Parallel()
	cs := corpusCase(t, "expense-notes")
	out := ask(t, faithfulLLM(t), "spec_scope", stageSchema(t, "scope"), stagePrompt("scope", cs.Inputs))
	var scope struct {
		Title       string   `json:"title"`
		InScope     []string `json:"in_scope"`
		Constraints []string `json:"constraints"`
		OutOfScope  []string `json:"out_of_scope"`
		Questions   []string `json:"open_questions"`
	}
	mustDecode(t, json.RawMessage(out), &scope)
	if scope.Title != "Expense claims" ||
		!slices.Contains(scope.InScope, "Employees can submit an expense claim from their phone, with a photo of the receipt in JPEG or PNG.") ||
		!slices.Contains(scope.Constraints, "Receipts must be kept for seven years for the tax office.") ||
		!slices.Contains(scope.Constraints, "Managers can approve or reject a claim within two working days.") ||
		!slices.Equal(scope.OutOfScope, []string{"Mileage claims are out of scope for the first release."}) || len(scope.Questions) != 0 {
		t.Errorf("scope %+v", scope)
	}
}

type faithfulPRD struct {
	Functional []struct {
		ID          string `json:"id"`
		Description string `json:"description"`
		Sources     []struct {
			Input string `json:"input"`
			Quote string `json:"quote"`
		} `json:"sources"`
	} `json:"functional_requirements"`
	NonFunctional []struct {
		Category    string `json:"category"`
		Description string `json:"description"`
	} `json:"non_functional_requirements"`
	NonGoals       []string `json:"non_goals"`
	Clarifications []struct {
		Question string `json:"question"`
	} `json:"clarifications"`
}

// TestFaithfulPRDSources: each requirement quotes, verbatim, the raw
// sentences it comes from with the number of their input; constraints
// become NFRs, out-of-scope items non-goals, questions clarifications.
func TestFaithfulPRDSources(t *testing.T) {
	t.Parallel()
	c := faithfulLLM(t)
	cs := corpusCase(t, "grading-rubrics") // notes (input 1) and a call (input 2)
	scope := ask(t, c, "spec_scope", stageSchema(t, "scope"), stagePrompt("scope", cs.Inputs))
	out := ask(t, c, "spec_prd", stageSchema(t, "prd"), stagePrompt("prd", cs.Inputs, [2]string{"scope", scope}))
	var prd faithfulPRD
	mustDecode(t, json.RawMessage(out), &prd)
	quoted := map[string]bool{}
	for _, r := range prd.Functional {
		if len(r.Sources) == 0 {
			t.Errorf("%s has no sources", r.ID)
		}
		for _, s := range r.Sources {
			n, err := strconv.Atoi(s.Input)
			if err != nil || n < 1 || n > len(cs.Inputs) || !strings.Contains(cs.Inputs[n-1].Content, s.Quote) || s.Quote == "" {
				t.Errorf("%s quotes %q as input %s, which does not have it verbatim", r.ID, s.Quote, s.Input)
				continue
			}
			// The description restates the quote's main clause; the quote
			// keeps the rest.
			main, _, _ := strings.Cut(strings.TrimSuffix(s.Quote, "."), ",")
			if !strings.Contains(r.Description, main) {
				t.Errorf("%s quotes %q, whose main clause its description %q does not carry", r.ID, s.Quote, r.Description)
			}
			quoted[s.Input] = true
		}
	}
	if !quoted["1"] || !quoted["2"] {
		t.Errorf("the sources quote inputs %v, want both", quoted)
	}
	text := out
	for _, f := range cs.Facts {
		if !f.FoundIn(text) {
			t.Errorf("the PRD lacks fact %s %q", f.ID, f.Text)
		}
	}
	if len(prd.NonFunctional) == 0 || prd.NonFunctional[0].Category != "constraint" ||
		!slices.Contains(prd.NonGoals, "Plagiarism detection is not something we want in this project.") ||
		len(prd.Clarifications) != 1 || prd.Clarifications[0].Question != "Can rubrics be shared between the schools of the trust?" {
		t.Errorf("PRD NFRs %+v, non-goals %q, clarifications %+v", prd.NonFunctional, prd.NonGoals, prd.Clarifications)
	}
}

// TestFaithfulPRDGroups: more in-scope items than a PRD holds are grouped,
// every item's words in a requirement and every sentence quoted.
func TestFaithfulPRDGroups(t *testing.T) {
	t.Parallel()
	var notes strings.Builder
	notes.WriteString("# Many small things\n\n")
	for i := range 30 {
		fmt.Fprintf(&notes, "- Operators can open report number %d from the dashboard.\n", i+1)
	}
	in := []evalcorpus.Input{{Kind: "note", Title: "List", ContentType: "text/markdown", Content: notes.String()}}
	c := faithfulLLM(t)
	scope := ask(t, c, "spec_scope", stageSchema(t, "scope"), stagePrompt("scope", in))
	out := ask(t, c, "spec_prd", stageSchema(t, "prd"), stagePrompt("prd", in, [2]string{"scope", scope}))
	var prd faithfulPRD
	mustDecode(t, json.RawMessage(out), &prd)
	if len(prd.Functional) > 12 || len(prd.Functional) < 10 {
		t.Errorf("%d requirements for 30 items", len(prd.Functional))
	}
	quotes := 0
	for _, r := range prd.Functional {
		quotes += len(r.Sources)
	}
	for i := range 30 {
		if !strings.Contains(out, fmt.Sprintf("open report number %d from", i+1)) {
			t.Errorf("item %d is in no requirement", i+1)
		}
	}
	if quotes != 30 {
		t.Errorf("%d quotes for 30 items", quotes)
	}
}

// prpRequest is a per-story PRP call as core/spec's askPRPsByStory writes
// it, with the context pack when pack is not nil.
func prpRequest(prdSummary, reqs, epic, story any, pack any, repo string) string {
	var u strings.Builder
	u.WriteString("# PRD\n" + tagged("prd_summary", prdSummary))
	u.WriteString("\n# The story's requirements\n" + tagged("requirements", reqs))
	u.WriteString("\n# Its epic\n" + tagged("epic", epic))
	u.WriteString("\n# The story\n" + tagged("story", story))
	if pack != nil {
		u.WriteString("\n# The context of the story\n" + tagged("context_pack", pack))
	}
	u.WriteString(repo)
	u.WriteString("\nWrite the PRP of ST-2.1 only: id PRP-2.1, story_id ST-2.1, its acceptance criteria carried over word for word.")
	return u.String()
}

type faithfulPRPs struct {
	PRPs []struct {
		ID      string `json:"id"`
		Context struct {
			References []struct{ Kind, Target, Section, Why string }
			Codebase   []string `json:"codebase"`
			Gotchas    []string `json:"gotchas"`
		} `json:"context"`
		Tasks []struct {
			ID, Action, Path, Validation string
		} `json:"tasks"`
		Validation struct {
			Commands   []struct{ Command string } `json:"commands"`
			NoneReason string                     `json:"none_reason"`
		} `json:"validation"`
		AntiPatterns []string `json:"anti_patterns"`
	} `json:"prps"`
}

// TestFaithfulPRPCarriesContextPack: a per-story PRP call with a context
// pack carries its source passages, constraints, non-goals, edge cases and
// clarifications, and is grounded in the repository it is shown; the same
// call without the pack carries none of them.
func TestFaithfulPRPCarriesContextPack(t *testing.T) {
	t.Parallel()
	cs := corpusCase(t, "expense-notes")
	notes := cs.Inputs[0]
	// What a PRD written by a model that summarised would say: the
	// requirement no longer names the photo, the receipt or the amount.
	summary := map[string]any{"title": "Expense claims", "summary": "Employees claim expenses; managers and finance approve them.",
		"glossary": []any{}, "non_functional_requirements": []any{}}
	reqs := []map[string]any{{"id": "REQ-3", "title": "Approve large claims", "description": "Large claims need an extra approval.", "priority": "must",
		"sources": []map[string]string{{"input": "1", "quote": "Claims above 500 euros need a second approver from finance."}}}}
	epic := map[string]any{"id": "EP-2", "title": "Approvals", "goal": "Make it possible to approve claims (REQ-3)."}
	story := map[string]any{"id": "ST-2.1", "epic_id": "EP-2", "title": "Approve large claims", "as_a": "manager", "i_want": "to approve large claims",
		"so_that": "large claims are checked", "acceptance_criteria": []map[string]string{{"given": "a large claim", "when": "I approve it", "then": "finance sees it"}},
		"requirement_ids": []string{"REQ-3"}, "estimate": 3, "independent_test": "Approve one.", "edge_cases": []string{}, "depends_on": []string{"ST-1.1"}}
	pack := map[string]any{
		"source_passages": []map[string]any{
			{"input": "1", "title": notes.Title, "requirement_ids": []string{"REQ-3"}, "passage": "Claims above 500 euros need a second approver from finance."},
			{"input": "1", "title": notes.Title, "requirement_ids": []string{"REQ-3"}, "passage": "Employees can submit an expense claim from their phone, with a photo of the receipt in JPEG or PNG."},
		},
		"constraints":     []string{"Receipts must be kept for seven years for the tax office."},
		"out_of_scope":    []string{"Mileage claims are out of scope for the first release."},
		"non_goals":       []string{"Paying the claims out is left to payroll."},
		"assumptions":     []string{"Finance exports approved claims to the payroll system on the 25th of each month."},
		"edge_cases":      []string{"A claim of exactly 500 euros."},
		"clarifications":  []map[string]string{{"question": "Who approves when the finance approver is away?", "impact": "Decides the fallback."}},
		"related_stories": []map[string]string{{"id": "ST-2.2", "epic_id": "EP-2", "title": "Reject claims"}},
		"dependencies": []map[string]any{{"story_id": "ST-1.1", "title": "Submit a claim", "prp_id": "PRP-1.1",
			"planned_paths": []map[string]string{{"action": "create", "path": "internal/claims/submit_claim_st_1_1.go"}, {"action": "modify", "path": "internal/claims/claim.go"}}}},
	}
	files := cs.Repo.Files
	var tree []string
	for p := range files {
		tree = append(tree, p)
	}
	slices.Sort(tree)
	repo := fmt.Sprintf("\n# Repository acme/%s\n\nThe PRP is implemented in this repository.\n\n<tree files=\"%d\" shown=\"%d\">\n%s\n</tree>\n\n<file path=%q>\n%s\n</file>\n\n<commands source=\"Makefile, package scripts, CI workflows\">\nmake test\nmake lint\n</commands>\n",
		cs.Repo.Name, len(tree), len(tree), strings.Join(tree, "\n"), "internal/claims/claim.go", files["internal/claims/claim.go"])

	c := faithfulLLM(t)
	with := ask(t, c, "spec_prps", stageSchema(t, "prps"), prpRequest(summary, reqs, epic, story, pack, repo))
	validate(t, "prps", json.RawMessage(with))
	var doc faithfulPRPs
	mustDecode(t, json.RawMessage(with), &doc)
	if len(doc.PRPs) != 1 || doc.PRPs[0].ID != "PRP-2.1" {
		t.Fatalf("PRPs %s", with)
	}
	p := doc.PRPs[0]
	for _, passage := range pack["source_passages"].([]map[string]any) {
		if !slices.ContainsFunc(p.Context.References, func(r struct{ Kind, Target, Section, Why string }) bool {
			return r.Kind == "doc" && r.Target == "Input 1: "+notes.Title && r.Section == passage["passage"] && r.Why == "Source of REQ-3"
		}) {
			t.Errorf("no reference carries the passage %q: %+v", passage["passage"], p.Context.References)
		}
	}
	for _, g := range []string{"Receipts must be kept for seven years for the tax office.", "A claim of exactly 500 euros.",
		"Finance exports approved claims to the payroll system on the 25th of each month."} {
		if !slices.Contains(p.Context.Gotchas, g) {
			t.Errorf("gotchas %q lack %q", p.Context.Gotchas, g)
		}
	}
	if !slices.ContainsFunc(p.Context.Codebase, func(c string) bool { return strings.Contains(c, "ST-2.2 Reject claims") }) {
		t.Errorf("codebase %q does not name the sibling story", p.Context.Codebase)
	}
	if !slices.ContainsFunc(p.Context.Gotchas, func(g string) bool { return strings.Contains(g, "Who approves when the finance approver is away?") }) {
		t.Errorf("gotchas %q lack the clarification", p.Context.Gotchas)
	}
	for _, a := range []string{"Out of scope: Mileage claims are out of scope for the first release.", "Out of scope: Paying the claims out is left to payroll."} {
		if !slices.Contains(p.AntiPatterns, a) {
			t.Errorf("anti-patterns %q lack %q", p.AntiPatterns, a)
		}
	}
	// Grounding: modified paths from the tree or the dependency's created
	// path, the created path new and named after the story, commands from
	// the repository.
	created := 0
	for _, tk := range p.Tasks {
		_, inTree := files[tk.Path]
		switch {
		case tk.Action == "create":
			created++
			if inTree || !strings.Contains(tk.Path, "st_2_1") {
				t.Errorf("task %s creates %s", tk.ID, tk.Path)
			}
		case tk.Action == "modify" && !inTree && tk.Path != "internal/claims/submit_claim_st_1_1.go":
			t.Errorf("task %s modifies %s, which neither the tree nor a dependency has", tk.ID, tk.Path)
		}
	}
	if created != 1 || !slices.ContainsFunc(p.Tasks, func(tk struct{ ID, Action, Path, Validation string }) bool {
		return tk.Action == "modify" && tk.Path == "internal/claims/submit_claim_st_1_1.go"
	}) {
		t.Errorf("tasks %+v: want one create and the dependency's created path modified", p.Tasks)
	}
	if len(p.Validation.Commands) == 0 || p.Validation.NoneReason != "" {
		t.Errorf("validation %+v", p.Validation)
	}
	for _, cmd := range p.Validation.Commands {
		if cmd.Command != "make test" && cmd.Command != "make lint" {
			t.Errorf("validation command %q is not the repository's", cmd.Command)
		}
	}
	// Every fact of the case the request carries reaches the PRP.
	packJSON, _ := json.Marshal(pack)
	carried := 0
	for _, f := range cs.Facts {
		if f.FoundIn(string(packJSON)) {
			carried++
			if !f.FoundIn(with) {
				t.Errorf("the PRP lacks fact %s %q", f.ID, f.Text)
			}
		}
	}
	if carried < 5 {
		t.Errorf("the pack carries %d facts of the case", carried)
	}

	// Without the pack, nothing of it reaches the PRP.
	without := ask(t, c, "spec_prps", stageSchema(t, "prps"), prpRequest(summary, reqs, epic, story, nil, repo))
	validate(t, "prps", json.RawMessage(without))
	for _, s := range []string{"500 euros", "photo", "seven years", "Mileage", "payroll", "Input 1", "finance approver", "submit_claim_st_1_1", "ST-2.2", "ST-1.1"} {
		if strings.Contains(without, s) {
			t.Errorf("without the context pack the PRP still says %q:\n%s", s, without)
		}
	}
	for _, f := range cs.Facts {
		if f.FoundIn(without) {
			t.Errorf("without the context pack the PRP carries fact %s %q", f.ID, f.Text)
		}
	}
}

// TestFaithfulStoriesDependOnRelated: in a per-epic call the first story
// depends on the last related story of the epic its epic depends on, and
// lists the pack's edge cases.
func TestFaithfulStoriesDependOnRelated(t *testing.T) {
	t.Parallel()
	summary := map[string]any{"title": "Expense claims", "summary": "Claims.", "glossary": []any{}, "non_functional_requirements": []any{}}
	reqs := []map[string]any{{"id": "REQ-3", "title": "Second approver", "description": "Claims above 500 euros need a second approver from finance.", "priority": "must", "sources": []any{}}}
	ep := map[string]any{"id": "EP-2", "title": "Approvals", "goal": "Approve.", "requirement_ids": []string{"REQ-3"}, "depends_on": []string{"EP-1"}, "order": 2}
	pack := map[string]any{"edge_cases": []string{"A claim of exactly 500 euros."},
		"related_stories": []map[string]string{{"id": "ST-1.1", "epic_id": "EP-1", "title": "Submit"}, {"id": "ST-1.2", "epic_id": "EP-1", "title": "Track"}}}
	var u strings.Builder
	u.WriteString("# PRD\n" + tagged("prd_summary", summary))
	u.WriteString("\n# The epic to break into stories\n" + tagged("epic", ep))
	u.WriteString("\n# Its requirements\n" + tagged("requirements", reqs))
	u.WriteString("\n# All epics, for dependencies\n" + tagged("epics", []map[string]any{{"id": "EP-1"}, {"id": "EP-2"}}))
	u.WriteString("\n# The context of the epic\n" + tagged("context_pack", pack))
	u.WriteString("\nWrite the stories of EP-2 only.")
	out := ask(t, faithfulLLM(t), "spec_stories", stageSchema(t, "stories"), u.String())
	validate(t, "stories", json.RawMessage(out))
	var doc struct {
		Stories []struct {
			ID        string   `json:"id"`
			SoThat    string   `json:"so_that"`
			EdgeCases []string `json:"edge_cases"`
			DependsOn []string `json:"depends_on"`
		} `json:"stories"`
	}
	mustDecode(t, json.RawMessage(out), &doc)
	if len(doc.Stories) != 1 || !slices.Equal(doc.Stories[0].DependsOn, []string{"ST-1.2"}) ||
		!slices.Equal(doc.Stories[0].EdgeCases, []string{"A claim of exactly 500 euros."}) || !strings.Contains(doc.Stories[0].SoThat, "500 euros") {
		t.Errorf("stories %+v", doc.Stories)
	}
}

// digestMapRequest is core/spec's mapChunk call.
func digestMapRequest(id string, in evalcorpus.Input, part, parts int, text string) []ports.Message {
	return []ports.Message{{Role: ports.MessageSystem, Content: "You read one part of the raw material of a product specification."},
		{Role: ports.MessageUser, Content: fmt.Sprintf("<input id=%s kind=%q title=%s part=\"%d of %d\">\n%s\n</input>\n\nWrite down the key facts of this part now.",
			strconv.Quote(id), in.Kind, strconv.Quote(in.Title), part, parts, fenced(text, "input"))}}
}

// TestFaithfulDigestKeepsFacts: the faithful digest of the corpus's
// 200-page meeting keeps every fact of the case, drops the routine talk,
// and its merge stays within the facts the prompt allows.
func TestFaithfulDigestKeepsFacts(t *testing.T) {
	t.Parallel()
	cs := corpusCase(t, "warehouse-slotting-workshop")
	in := cs.Inputs[0]
	c := faithfulLLM(t)
	schema := json.RawMessage(`{"type":"object"}`)
	const chunk = 96 << 10
	var parts []string
	for rest := in.Content; rest != ""; {
		n := min(len(rest), chunk)
		if i := strings.LastIndex(rest[:n], "\n"); n < len(rest) && i > 0 {
			n = i + 1
		}
		parts, rest = append(parts, rest[:n]), rest[n:]
	}
	var partials strings.Builder
	for i, p := range parts {
		res, err := c.Chat(context.Background(), ports.ChatRequest{Messages: digestMapRequest("in-1", in, i+1, len(parts), p),
			ResponseFormat: &ports.JSONSchemaFormat{Name: "input_digest_map", Schema: schema, Strict: true}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, filler := range evalcorpus.Filler {
			if strings.Contains(res.Content, strings.TrimSuffix(filler, ".")) {
				t.Errorf("part %d keeps the small talk %q", i+1, filler)
			}
		}
		fmt.Fprintf(&partials, "<partial_digest n=\"%d\">\n%s\n</partial_digest>\n\n", i+1, fenced(res.Content, "partial_digest"))
	}
	res, err := c.Chat(context.Background(), ports.ChatRequest{Messages: []ports.Message{
		{Role: ports.MessageSystem, Content: "You merge partial digests.\n- At most 10 facts: where there are more, merge the closest ones."},
		{Role: ports.MessageUser, Content: partials.String() + "Merge these partial digests into one now."}},
		ResponseFormat: &ports.JSONSchemaFormat{Name: "input_digest_reduce", Schema: schema, Strict: true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Facts []struct {
			Fact   string   `json:"fact"`
			Inputs []string `json:"inputs"`
		} `json:"facts"`
		OpenQuestions []string `json:"open_questions"`
	}
	mustDecode(t, json.RawMessage(res.Content), &d)
	if len(d.Facts) == 0 || len(d.Facts) > 10 || len(d.OpenQuestions) != 1 {
		t.Fatalf("%d facts, open questions %q", len(d.Facts), d.OpenQuestions)
	}
	var all strings.Builder
	for _, f := range d.Facts {
		if !slices.Equal(f.Inputs, []string{"in-1"}) {
			t.Errorf("fact %q cites %v", f.Fact, f.Inputs)
		}
		all.WriteString(f.Fact + "\n")
	}
	for _, f := range cs.Facts {
		if !f.FoundIn(all.String()) {
			t.Errorf("the digest lacks fact %s %q", f.ID, f.Text)
		}
	}
}

// TestFaithfulPipeline runs the corpus's slice through a real
// core/spec.Service over the faithful model: every stage passes the checks
// in both modes, and in single-call mode, where the PRP call holds the raw
// material and every earlier stage, the PRPs carry every fact of the case.
func TestFaithfulPipeline(t *testing.T) {
	t.Parallel()
	for _, id := range evalcorpus.Slice() {
		cs := corpusCase(t, id)
		for _, concurrency := range []int{0, 2} {
			t.Run(fmt.Sprintf("%s/concurrency=%d", id, concurrency), func(t *testing.T) {
				t.Parallel()
				fake := fakeopenai.NewHandler()
				fake.SetResponder(demomodel.New(demomodel.Faithful()).Respond)
				srv := httptest.NewServer(fake)
				t.Cleanup(srv.Close)
				c, err := openai.New(openai.Config{APIKey: "sk-demo", BaseURL: srv.URL + "/v1", Model: "devpilot-demo", MaxRetries: -1})
				if err != nil {
					t.Fatal(err)
				}
				store, jobs := newMemSpecs(), &jobList{}
				svc := spec.New(spec.Config{BatchConcurrency: concurrency}, spec.Deps{Specs: store, Standards: store, Tx: noTx{}, Jobs: jobs,
					LLM: c, Clock: fixture.NewClock(), IDs: &fixture.IDs{}})
				ctx := ports.WithPrincipal(context.Background(), alice)
				var inputs []spec.NewInput
				for _, in := range cs.Inputs {
					inputs = append(inputs, spec.NewInput{Kind: ports.InputKind(in.Kind), Title: in.Title, ContentType: in.ContentType, Content: in.Content})
				}
				v, err := svc.CreateSession(ctx, cs.Title, inputs)
				if err != nil {
					t.Fatal(err)
				}
				var prps ports.SpecArtifact
				for _, st := range ports.Stages {
					if _, err := svc.Generate(ctx, v.Session.ID, ""); err != nil {
						t.Fatal(err)
					}
					if err := svc.RunGeneration(context.Background(), jobs.last().(spec.GenerateStageArgs), true); err != nil {
						t.Fatal(err)
					}
					got, _ := svc.GetSession(ctx, v.Session.ID)
					if got.Session.Status != ports.SpecReady {
						t.Fatalf("after %s: %s %+v", st, got.Session.Status, got.Session.Error)
					}
					a := got.Artifacts[len(got.Artifacts)-1]
					if len(a.Checks) != 0 {
						t.Errorf("%s: checks %q", st, a.Checks)
					}
					validate(t, string(st), a.Data)
					prps = a
				}
				if concurrency > 0 {
					return // the per-story calls carry the facts once they get a context pack
				}
				for _, f := range cs.Facts {
					if !f.FoundIn(string(prps.Data)) {
						t.Errorf("the PRPs lack fact %s %q", f.ID, f.Text)
					}
				}
			})
		}
	}
}

// TestDefaultModeReadsNewParts: the default mode fills the sources a PRD
// schema asks for with the best-matching sentence of the material, and
// grounds single-call PRPs in the repository section the request shows.
func TestDefaultModeReadsNewParts(t *testing.T) {
	t.Parallel()
	c := llm(t)
	cs := corpusCase(t, "expense-notes")
	scope := ask(t, c, "spec_scope", stageSchema(t, "scope"), stagePrompt("scope", cs.Inputs))
	out := ask(t, c, "spec_prd", stageSchema(t, "prd"), stagePrompt("prd", cs.Inputs, [2]string{"scope", scope}))
	var prd faithfulPRD
	mustDecode(t, json.RawMessage(out), &prd)
	for _, r := range prd.Functional {
		if r.Sources == nil || len(r.Sources) > 1 {
			t.Errorf("%s sources %+v, want the best match or none", r.ID, r.Sources)
		}
		for _, s := range r.Sources {
			if s.Input != "1" || !strings.Contains(cs.Inputs[0].Content, s.Quote) {
				t.Errorf("%s quotes %+v", r.ID, s)
			}
		}
	}
	if !strings.Contains(out, `"sources":[{"input":"1","quote":"Employees can submit an expense claim from their phone, with a photo of the receipt in JPEG or PNG."}]`) {
		t.Errorf("REQ-1 does not quote its sentence:\n%s", out)
	}
	prdJSON := ask(t, c, "spec_prd", stageSchema(t, "prd"), stagePrompt("prd", cs.Inputs, [2]string{"scope", scope}))
	prompt := stagePrompt("prps", cs.Inputs, [2]string{"scope", scope}, [2]string{"prd", prdJSON}) +
		"\n# Repository acme/expenses-api\n\n<tree files=\"2\" shown=\"2\">\nMakefile\ninternal/claims/claim.go\n</tree>\n\n<commands source=\"Makefile\">\nmake test\n</commands>\n"
	var prps faithfulPRPs
	mustDecode(t, json.RawMessage(ask(t, c, "spec_prps", stageSchema(t, "prps"), prompt)), &prps)
	for _, p := range prps.PRPs {
		if len(p.Validation.Commands) != 1 || p.Validation.Commands[0].Command != "make test" ||
			!slices.ContainsFunc(p.Tasks, func(tk struct{ ID, Action, Path, Validation string }) bool {
				return tk.Path == "internal/claims/claim.go"
			}) {
			t.Errorf("%s is not grounded in the repository section: %+v %+v", p.ID, p.Tasks, p.Validation)
		}
	}
}

// TestFaithfulSingleCallPRPs: a single-call PRP request with the raw
// material, every earlier stage and the repository section gets PRPs that
// carry every fact of the case, quote the raw sentences their requirements
// come from, and are grounded: created paths new and distinct, a path
// another PRP creates modified only by a story depending on it, file
// references and commands from the repository.
func TestFaithfulSingleCallPRPs(t *testing.T) {
	t.Parallel()
	c := faithfulLLM(t)
	cs := corpusCase(t, "expense-notes")
	var arts [][2]string
	for _, st := range []string{"scope", "prd", "epics", "stories"} {
		arts = append(arts, [2]string{st, ask(t, c, "spec_"+st, stageSchema(t, st), stagePrompt(st, cs.Inputs, arts...))})
	}
	var stories struct {
		Stories []struct {
			ID        string   `json:"id"`
			DependsOn []string `json:"depends_on"`
		} `json:"stories"`
	}
	mustDecode(t, json.RawMessage(arts[3][1]), &stories)
	var tree []string
	for p := range cs.Repo.Files {
		tree = append(tree, p)
	}
	slices.Sort(tree)
	repo := fmt.Sprintf("\n# Repository acme/%s\n\n<tree files=\"%d\" shown=\"%d\">\n%s\n</tree>\n\n<file path=\"internal/claims/claim.go\">\n%s\n</file>\n\n<commands source=\"Makefile\">\nmake test\nmake lint\n</commands>\n",
		cs.Repo.Name, len(tree), len(tree), strings.Join(tree, "\n"), fenced(cs.Repo.Files["internal/claims/claim.go"], "file"))
	out := ask(t, c, "spec_prps", stageSchema(t, "prps"), stagePrompt("prps", cs.Inputs, arts...)+repo)
	validate(t, "prps", json.RawMessage(out))
	var doc faithfulPRPs
	mustDecode(t, json.RawMessage(out), &doc)
	if len(doc.PRPs) != len(stories.Stories) || len(doc.PRPs) < 3 {
		t.Fatalf("%d PRPs for %d stories", len(doc.PRPs), len(stories.Stories))
	}
	createdBy := map[string]string{}
	for i, p := range doc.PRPs {
		story := stories.Stories[i]
		if !slices.ContainsFunc(p.Context.References, func(r struct{ Kind, Target, Section, Why string }) bool {
			return r.Target == "Input 1: "+cs.Inputs[0].Title && strings.Contains(cs.Inputs[0].Content, r.Section) && strings.HasPrefix(r.Why, "Source of REQ-")
		}) {
			t.Errorf("%s quotes no raw sentence: %+v", p.ID, p.Context.References)
		}
		for _, r := range p.Context.References {
			if _, ok := cs.Repo.Files[r.Target]; r.Kind == "file" && !ok {
				t.Errorf("%s references %s", p.ID, r.Target)
			}
		}
		for _, tk := range p.Tasks {
			_, inTree := cs.Repo.Files[tk.Path]
			switch owner, created := createdBy[tk.Path]; {
			case tk.Action == "create" && (inTree || created):
				t.Errorf("%s creates %s, which the tree or %s has", p.ID, tk.Path, owner)
			case tk.Action == "create":
				createdBy[tk.Path] = story.ID
			case !inTree && (!created || !slices.Contains(story.DependsOn, owner)):
				t.Errorf("%s modifies %s, created by %q, a story %s does not depend on", p.ID, tk.Path, owner, story.ID)
			}
		}
		for _, cmd := range p.Validation.Commands {
			if cmd.Command != "make test" && cmd.Command != "make lint" {
				t.Errorf("%s validates with %q", p.ID, cmd.Command)
			}
		}
	}
	modifiesDependency := false
	for i, p := range doc.PRPs {
		for _, tk := range p.Tasks {
			if owner := createdBy[tk.Path]; tk.Action == "modify" && owner != "" && owner != stories.Stories[i].ID {
				modifiesDependency = true
			}
		}
	}
	if !modifiesDependency {
		t.Error("no PRP modifies what the PRP of a story it depends on creates")
	}
	for _, f := range cs.Facts {
		if !f.FoundIn(out) {
			t.Errorf("the PRPs lack fact %s %q", f.ID, f.Text)
		}
	}
	// The non-goal reaches every PRP as an anti-pattern.
	for _, p := range doc.PRPs {
		if !slices.Contains(p.AntiPatterns, "Out of scope: Mileage claims are out of scope for the first release.") {
			t.Errorf("%s anti-patterns %q", p.ID, p.AntiPatterns)
		}
	}
}

// TestFaithfulPRPOddRepository: files without an extension, a tree the
// raw material mentions and no commands do not trip the model.
func TestFaithfulPRPOddRepository(t *testing.T) {
	t.Parallel()
	story := map[string]any{"id": "ST-1.1", "epic_id": "EP-1", "title": "Build it", "as_a": "user", "i_want": "to build it", "so_that": "it is built",
		"acceptance_criteria": []map[string]string{{"given": "x", "when": "y", "then": "z"}}, "requirement_ids": []string{}, "estimate": 1,
		"independent_test": "t", "edge_cases": []string{}, "depends_on": []string{}}
	repo := "\n# Repository acme/odd\n\n<tree files=\"3\" shown=\"3\">\nDockerfile\ncmd/tool/Procfile\nREADME\n</tree>\n\n<file path=\"cmd/tool/Procfile\">\nweb: tool\n</file>\n\nThe repository shows no test or build commands.\n"
	user := strings.Replace(prpRequest(map[string]any{"title": "Odd"}, []any{}, map[string]any{"id": "EP-1"}, story, nil, repo), "# PRD", "<tree>\nnot/the/repo.go\n</tree>\n# PRD", 1)
	out := ask(t, faithfulLLM(t), "spec_prps", stageSchema(t, "prps"), user)
	validate(t, "prps", json.RawMessage(out))
	var doc faithfulPRPs
	mustDecode(t, json.RawMessage(out), &doc)
	if len(doc.PRPs) != 1 || len(doc.PRPs[0].Validation.Commands) != 0 || doc.PRPs[0].Validation.NoneReason == "" || strings.Contains(out, "not/the/repo.go") {
		t.Errorf("PRPs %s", out)
	}
}
