package spec

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/ports"
)

// samples decodes the testdata samples, a clean set.
func samples(t *testing.T) (scope *scopeDoc, prd *prdDoc, epics *epicsDoc, stories *storiesDoc, prps *prpsDoc) {
	t.Helper()
	docs := map[ports.Stage]any{}
	for _, st := range ports.Stages {
		b, err := os.ReadFile("testdata/" + string(st) + ".json")
		if err != nil {
			t.Fatal(err)
		}
		out, problems := parseOutput(st, string(b))
		if problems != nil {
			t.Fatalf("testdata/%s.json is invalid: %q", st, problems)
		}
		docs[st] = out.doc
	}
	return docs[ports.StageScope].(*scopeDoc), docs[ports.StagePRD].(*prdDoc), docs[ports.StageEpics].(*epicsDoc),
		docs[ports.StageStories].(*storiesDoc), docs[ports.StagePRPs].(*prpsDoc)
}

func TestTraceability(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(prd *prdDoc, epics *epicsDoc, stories *storiesDoc, prps *prpsDoc)
		stage  ports.Stage
		want   []string
	}{
		{name: "clean prd", stage: ports.StagePRD},
		{name: "clean epics", stage: ports.StageEpics},
		{name: "clean stories", stage: ports.StageStories},
		{name: "clean prps", stage: ports.StagePRPs},
		{name: "a requirement no epic covers", stage: ports.StageEpics,
			change: func(prd *prdDoc, _ *epicsDoc, _ *storiesDoc, _ *prpsDoc) {
				prd.Functional = append(prd.Functional, requirement{ID: "REQ-4", Title: "Audit log"})
			},
			want: []string{"REQ-4 is not covered by any epic"}},
		{name: "an epic naming an unknown requirement", stage: ports.StageEpics,
			change: func(_ *prdDoc, epics *epicsDoc, _ *storiesDoc, _ *prpsDoc) {
				epics.Epics[0].RequirementIDs = []string{"REQ-1", "REQ-9", "REQ-9"}
			},
			want: []string{"EP-1 names unknown requirement REQ-9"}},
		{name: "epic dependencies", stage: ports.StageEpics,
			change: func(_ *prdDoc, epics *epicsDoc, _ *storiesDoc, _ *prpsDoc) {
				epics.Epics[0].DependsOn = []string{"EP-1", "EP-2", "EP-7"}
			},
			want: []string{"EP-1 depends on itself", "EP-1 depends on EP-2, which does not come before it in the order", "EP-1 depends on unknown epic EP-7"}},
		{name: "a story with an unknown epic", stage: ports.StageStories,
			change: func(_ *prdDoc, _ *epicsDoc, stories *storiesDoc, _ *prpsDoc) {
				stories.Stories[0].ID, stories.Stories[0].EpicID = "ST-9.1", "EP-9"
				stories.Stories[1].DependsOn = nil
			},
			want: []string{"ST-9.1 names unknown epic EP-9", "EP-1 is not covered by any story"}},
		{name: "a story with an unknown requirement", stage: ports.StageStories,
			change: func(_ *prdDoc, _ *epicsDoc, stories *storiesDoc, _ *prpsDoc) {
				stories.Stories[1].RequirementIDs = []string{"REQ-2", "REQ-8"}
			},
			want: []string{"ST-2.1 names unknown requirement REQ-8"}},
		{name: "a story without a PRP", stage: ports.StagePRPs,
			change: func(_ *prdDoc, _ *epicsDoc, _ *storiesDoc, prps *prpsDoc) { prps.PRPs = prps.PRPs[:2] },
			want:   []string{"ST-2.2 is not covered by any PRP"}},
		{name: "a PRP for an unknown story", stage: ports.StagePRPs,
			change: func(_ *prdDoc, _ *epicsDoc, _ *storiesDoc, prps *prpsDoc) {
				prps.PRPs[2].ID, prps.PRPs[2].StoryID = "PRP-3.1", "ST-3.1"
			},
			want: []string{"PRP-3.1 names unknown story ST-3.1", "ST-2.2 is not covered by any PRP"}},
		{name: "prd references", stage: ports.StagePRD,
			change: func(prd *prdDoc, _ *epicsDoc, _ *storiesDoc, _ *prpsDoc) {
				prd.Journeys[0].RequirementIDs = []string{"REQ-5"}
				prd.SuccessMetrics[1].Validates = []string{"REQ-3", "NFR-2"}
			},
			want: []string{`user journey "Claim a taxi ride" names unknown requirement REQ-5`, `success metric "Expenses re-keyed by hand" names unknown requirement NFR-2`}},
		{name: "two PRPs creating one path", stage: ports.StagePRPs,
			change: func(_ *prdDoc, _ *epicsDoc, _ *storiesDoc, prps *prpsDoc) {
				prps.PRPs[2].Tasks[1].Path = "./internal/http/approvals.go "
			},
			want: []string{"PRP-2.2 task T2 creates internal/http/approvals.go, which PRP-2.1 creates too (task T2); create a path in one PRP only, and modify it in the PRPs of the stories that depend on that one"}},
		{name: "modifying a path a PRP of a story it does not depend on creates", stage: ports.StagePRPs,
			change: func(_ *prdDoc, _ *epicsDoc, stories *storiesDoc, _ *prpsDoc) { stories.Stories[1].DependsOn = nil },
			want: []string{
				"PRP-2.1 task T1 modifies internal/store/expenses.go, which PRP-1.1 creates (task T2), but ST-2.1 does not depend on ST-1.1; modify only paths the repository has or the PRPs of the stories it depends on create",
				"PRP-2.2 task T1 modifies internal/store/expenses.go, which PRP-1.1 creates (task T2), but ST-2.2 does not depend on ST-1.1; modify only paths the repository has or the PRPs of the stories it depends on create",
			}},
		{name: "modifying a path of a PRP it depends on through another", stage: ports.StagePRPs,
			change: func(_ *prdDoc, _ *epicsDoc, _ *storiesDoc, prps *prpsDoc) {
				prps.PRPs[2].Tasks[1].Action, prps.PRPs[2].Tasks[1].Path = actionModify, "internal/http/expenses.go"
			}},
		{name: "descriptions instead of paths are not compared", stage: ports.StagePRPs,
			change: func(_ *prdDoc, _ *epicsDoc, _ *storiesDoc, prps *prpsDoc) {
				for i := range prps.PRPs {
					prps.PRPs[i].Tasks[0].Action, prps.PRPs[i].Tasks[0].Path = actionCreate, "the module this feature belongs in"
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, prd, epics, stories, prps := samples(t)
			if tt.change != nil {
				tt.change(prd, epics, stories, prps)
			}
			docs := map[ports.Stage]any{ports.StagePRD: prd, ports.StageEpics: epics, ports.StageStories: stories, ports.StagePRPs: prps}
			got := traceability(docs[tt.stage], earlier{prd: prd, epics: epics, stories: stories})
			if !slices.Equal(got, tt.want) {
				t.Errorf("checks %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTraceabilitySkipsMissingStages(t *testing.T) {
	t.Parallel()
	_, _, epics, stories, prps := samples(t)
	for _, doc := range []any{epics, stories, prps} {
		if got := traceability(doc, earlier{}); got != nil {
			t.Errorf("checks %q without earlier stages", got)
		}
	}
}

func TestMarkdownNamesEveryID(t *testing.T) {
	t.Parallel()
	scope, prd, epics, stories, prps := samples(t)
	idPattern := regexp.MustCompile(`\b(REQ|NFR|EP|ST|PRP)-\d+(\.\d+)?\b`)
	for _, doc := range []any{scope, prd, epics, stories, prps} {
		md := render(doc, nil)
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		data := string(b)
		for _, id := range idPattern.FindAllString(data, -1) {
			if !strings.Contains(md, id) {
				t.Errorf("%T: the Markdown lacks %s", doc, id)
			}
		}
		if strings.Contains(md, "Traceability checks") {
			t.Errorf("%T: a checks section without checks", doc)
		}
		if !strings.HasPrefix(md, "# ") || strings.Count(md, "\n## ") < 1 {
			t.Errorf("%T: no headings:\n%s", doc, md)
		}
	}
	md := render(epics, []string{"REQ-4 is not covered by any epic"})
	if !strings.HasSuffix(md, "## Traceability checks\n\n- REQ-4 is not covered by any epic\n") {
		t.Errorf("checks section:\n%s", md)
	}
	// Text that would break a heading stays on its line.
	epics.Epics[0].Title = "Multi\nline # title"
	if md := render(epics, nil); !strings.Contains(md, "## EP-1: Multi line # title\n") {
		t.Errorf("heading:\n%s", md)
	}
}

func TestIDRules(t *testing.T) {
	t.Parallel()
	_, prd, epics, stories, prps := samples(t)
	for _, doc := range []any{prd, epics, stories, prps} {
		if p := idRules(doc); p != nil {
			t.Errorf("%T: problems %q in the clean samples", doc, p)
		}
	}
	prd.NonFunctional = append(prd.NonFunctional, prd.NonFunctional[0])
	epics.Epics[1].ID = "EP-1"
	stories.Stories[2].ID = "ST-2.1"
	prps.PRPs[0].StoryID = "ST-1.2"
	want := map[any]string{
		prd:     "the non-functional requirement id NFR-1 is used more than once; ids must be unique",
		epics:   "the epic id EP-1 is used more than once; ids must be unique",
		stories: "the story id ST-2.1 is used more than once; ids must be unique",
		prps:    "at '/prps/0/id': PRP-1.1 implements story ST-1.2, so its id must be PRP-1.2",
	}
	for doc, w := range want {
		if p := idRules(doc); len(p) != 1 || p[0] != w {
			t.Errorf("%T: problems %q, want %q", doc, p, w)
		}
	}
}

func TestSchemasAreStrictCompatible(t *testing.T) {
	t.Parallel()
	allowed := map[string]bool{"type": true, "description": true, "additionalProperties": true, "required": true,
		"properties": true, "items": true, "enum": true, "pattern": true, "minItems": true, "minimum": true}
	for _, st := range ports.Stages {
		var walk func(path string, node map[string]any)
		walk = func(path string, node map[string]any) {
			for k := range node {
				if !allowed[k] {
					t.Errorf("%s %s: keyword %q", st, path, k)
				}
			}
			if node["type"] == "object" {
				props, _ := node["properties"].(map[string]any)
				req, _ := node["required"].([]any)
				if node["additionalProperties"] != false || len(req) != len(props) {
					t.Errorf("%s %s: an object must forbid additional properties and require all %d", st, path, len(props))
				}
				for name, p := range props {
					walk(path+"/"+name, p.(map[string]any))
				}
			}
			if items, ok := node["items"].(map[string]any); ok {
				walk(path+"/items", items)
			}
		}
		var root map[string]any
		if err := json.Unmarshal(schemas[st].raw, &root); err != nil {
			t.Fatal(err)
		}
		if root["type"] != "object" {
			t.Errorf("%s: the root is not an object", st)
		}
		walk("", root)
	}
}

func TestCrossPRPFindingsHaveTheirKind(t *testing.T) {
	t.Parallel()
	_, _, _, stories, prps := samples(t)
	prps.PRPs[2].Tasks[1].Path = "internal/http/approvals.go"
	stories.Stories[1].DependsOn = nil
	c := traceabilityChecks(prps, earlier{stories: stories})
	if got := c.byKind(); got[FindingCrossPRP] != 3 || len(got) != 1 {
		t.Errorf("kinds %v of %q", got, c.list)
	}
}
