package spec

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/ports"
)

func TestStoryRules(t *testing.T) {
	t.Parallel()
	epics := &epicsDoc{Epics: []epic{{ID: "EP-1", Order: 1}, {ID: "EP-2", Order: 2}}}
	d := &storiesDoc{Stories: []story{
		{ID: "ST-1.1", EpicID: "EP-1", Estimate: 3, DependsOn: []string{"ST-1.2"},
			AcceptanceCriteria: []criterion{{Then: "it is saved and appears in the list"}}},
		{ID: "ST-1.2", EpicID: "EP-1", Estimate: 13, DependsOn: []string{"ST-1.1", "ST-1.2"}},
		{ID: "ST-2.1", EpicID: "EP-2", Estimate: 5, DependsOn: []string{"ST-1.2", "ST-9.9"},
			AcceptanceCriteria: []criterion{{Then: "it is saved; Anderson sees it"}}},
	}}
	var c checks
	storyRules(&c, d, epics)
	want := []string{
		"ST-1.1 depends on ST-1.2, which comes after it (a forward dependency); reorder or split the stories",
		`ST-1.1 acceptance criterion 1 joins outcomes with "and"; make it one criterion per outcome`,
		"ST-1.2 depends on itself",
		"ST-1.2 is estimated at 13 points; split it into stories of at most 8",
		"ST-2.1 depends on unknown story ST-9.9",
	}
	if !slices.Equal(c.list, want) {
		t.Errorf("findings\n%q\nwant\n%q", c.list, want)
	}
}

func TestFindCommandsAndGrounding(t *testing.T) {
	t.Parallel()
	files := map[string]string{
		"Makefile":                  ".PHONY: test\nVERSION := 1\ntest: build\n\tgo test ./...\n%.o: %.c\nbuild:\n\tgo build ./...\n",
		"package.json":              `{"scripts":{"lint":"eslint .","test":"vitest run"}}`,
		"pnpm-lock.yaml":            "",
		".github/workflows/ci.yaml": "jobs:\n  t:\n    steps:\n      - run: \"pnpm install\"\n      - run: |\n          make test\n          go vet ./...\n      - name: x\n",
		"src/cart/cart.ts":          "export {}",
		"src/cart/cart.test.ts":     "test()",
		"src/users/users.ts":        "export {}",
	}
	v := &repoView{fullName: "acme/web", paths: map[string]bool{}, cache: map[string]string{},
		read: func(_ context.Context, p string) (string, error) { return files[p], nil }}
	for p, c := range files {
		v.files = append(v.files, ports.SCMTreeEntry{Path: p, Size: int64(len(c))})
		v.paths[p] = true
	}
	slices.SortFunc(v.files, func(a, b ports.SCMTreeEntry) int { return cmpString(a.Path, b.Path) })
	got := findCommands(context.Background(), v)
	want := []string{"make test", "make build", "pnpm run lint", "pnpm run test", "pnpm install", "go vet ./..."}
	if !slices.Equal(got, want) {
		t.Errorf("commands %q, want %q", got, want)
	}
	v.commands = got
	if r := v.ranked(tokens("As a shopper I want to empty my carts"), true); len(r) != 2 || !slices.Contains(r, "src/cart/cart.ts") {
		t.Errorf("ranked %q", r)
	}

	d := &prpsDoc{PRPs: []prp{{ID: "PRP-1.1",
		Context:    prpContext{References: []reference{{Kind: refFile, Target: "src/cart/cart.ts"}, {Kind: refFile, Target: "src/nope.ts"}, {Kind: refURL, Target: "https://x.test"}}},
		Tasks:      []task{{ID: "T1", Action: actionModify, Path: "src/cart/gone.ts"}, {ID: "T2", Action: actionCreate, Path: "src/users/users.ts"}, {ID: "T3", Action: actionCreate, Path: "src/cart/empty.ts"}},
		Validation: validation{Commands: []check{{Command: "pnpm run test"}, {Command: "CI=1 make test"}, {Command: "cargo test"}}},
	}}}
	var c checks
	groundingChecks(&c, d, v, nil)
	wantChecks := []string{
		"PRP-1.1 references src/nope.ts, which acme/web does not have",
		"PRP-1.1 task T1 modifies src/cart/gone.ts, which acme/web does not have",
		"PRP-1.1 task T2 creates src/users/users.ts, which acme/web has already",
		`PRP-1.1 validation command "cargo test" uses none of the commands acme/web shows`,
	}
	if !slices.Equal(c.list, wantChecks) {
		t.Errorf("findings\n%q\nwant\n%q", c.list, wantChecks)
	}

	// A path created by a task of the PRPs checked together, or planned by
	// a dependency's PRP, is there to build on.
	built := &prpsDoc{PRPs: []prp{
		{ID: "PRP-1.1", Tasks: []task{{ID: "T1", Action: actionCreate, Path: "src/cart/empty.ts"}}, Validation: validation{NoneReason: "n/a"}},
		{ID: "PRP-1.2", Context: prpContext{References: []reference{{Kind: refFile, Target: "./src/cart/empty.ts"}}},
			Tasks: []task{{ID: "T1", Action: actionModify, Path: "src/cart/empty.ts"}, {ID: "T2", Action: actionModify, Path: "src/cart/planned.ts"}}, Validation: validation{NoneReason: "n/a"}},
	}}
	c = checks{}
	groundingChecks(&c, built, v, map[string]bool{"src/cart/planned.ts": true})
	if c.list != nil {
		t.Errorf("findings for built-on paths: %q", c.list)
	}
	c = checks{}
	groundingChecks(&c, &prpsDoc{PRPs: built.PRPs[1:]}, v, nil)
	if want := []string{
		"PRP-1.2 references ./src/cart/empty.ts, which acme/web does not have",
		"PRP-1.2 task T1 modifies src/cart/empty.ts, which acme/web does not have",
		"PRP-1.2 task T2 modifies src/cart/planned.ts, which acme/web does not have",
	}; !slices.Equal(c.list, want) {
		t.Errorf("findings alone\n%q\nwant\n%q", c.list, want)
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestPRDRequirementsCiteSources: a functional requirement without its
// sources, or citing something that is not an input, is an invalid answer.
func TestPRDRequirementsCiteSources(t *testing.T) {
	t.Parallel()
	_, prd, _, _, _ := samples(t)
	if got := prd.Functional[2].Sources; len(got) != 1 || got[0] != (source{Input: "2", Quote: "Finance re-keys every claim into the ledger."}) {
		t.Errorf("REQ-3 sources %+v", got)
	}
	tests := []struct {
		name   string
		change func(r map[string]any)
		want   string
	}{
		{"no sources", func(r map[string]any) { delete(r, "sources") }, "sources"},
		{"an unknown input", func(r map[string]any) { r["sources"] = []map[string]any{{"input": "first", "quote": "x"}} }, "/sources/0/input"},
		{"a blank quote", func(r map[string]any) { r["sources"] = []map[string]any{{"input": "digest", "quote": " "}} }, "/sources/0/quote"},
		{"an extra field", func(r map[string]any) { r["sources"] = []map[string]any{{"input": "1", "quote": "x", "page": 3}} }, "page"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var doc map[string]any
			b, err := os.ReadFile("testdata/prd.json")
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &doc); err != nil {
				t.Fatal(err)
			}
			tt.change(doc["functional_requirements"].([]any)[0].(map[string]any))
			b, _ = json.Marshal(doc)
			_, problems := parseOutput(ports.StagePRD, string(b))
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, tt.want) }) {
				t.Errorf("problems %q, want one about %s", problems, tt.want)
			}
		})
	}
}
