package spec

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/devpilot/devpilot/ports"
)

// TestPromptVersionChangesWithItsInputs: a change to the template, the
// guidance or the schema is a new version; the same inputs, the same one.
func TestPromptVersionChangesWithItsInputs(t *testing.T) {
	t.Parallel()
	sc := schemas["prps"].raw
	guidance := stageGuidance["prps"]
	base := promptVersion(systemPrompt, guidance, sc)
	if base != promptVersion(systemPrompt, guidance, sc) {
		t.Fatal("the same inputs give two versions")
	}
	if base != PromptVersion("prps") && PromptVersion("prps") == "" {
		t.Fatal("PromptVersion(prps) is empty")
	}
	changed := map[string]string{
		"guidance": promptVersion(systemPrompt, "Write something short.", sc),
		"template": promptVersion(systemPrompt+" ", guidance, sc),
		"schema":   promptVersion(systemPrompt, guidance, append([]byte(nil), sc[:len(sc)-1]...)),
		// The parts are hashed with their lengths: moving text from one to
		// another is a change too.
		"split": promptVersion(systemPrompt+guidance[:1], guidance[1:], sc),
	}
	for what, v := range changed {
		if v == base {
			t.Errorf("changing the %s keeps the version %s", what, base)
		}
	}
}

func TestFindingsByKind(t *testing.T) {
	t.Parallel()
	var c checks
	c.add(FindingDependency, "a")
	c.add(FindingDependency, "b")
	c.add(FindingUncovered, "c")
	got := findingsByKind(c, []string{"the repository could not be read"})
	want := map[string]int{"dependency": 2, "uncovered": 1, "repository": 1}
	if !maps.Equal(got, want) {
		t.Errorf("findingsByKind = %v, want %v", got, want)
	}
	if got := findingsByKind(checks{}, nil); got == nil || len(got) != 0 {
		t.Errorf("findingsByKind of nothing = %#v, want an empty map", got)
	}
}

// TestFindingKindsAreKnownToPorts: every FindingKind this package declares
// is one of ports.SpecFindingKinds, the bounded set Observers label
// findings with (a kind missing there would be counted as "other").
func TestFindingKindsAreKnownToPorts(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var kinds []string
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "FindingKind" {
				return true
			}
			for _, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					kind, _ := strconv.Unquote(lit.Value)
					kinds = append(kinds, kind)
				}
			}
			return true
		})
	}
	if len(kinds) < 5 {
		t.Fatalf("found only the finding kinds %v: has their declaration changed?", kinds)
	}
	for _, k := range kinds {
		if !slices.Contains(ports.SpecFindingKinds, k) {
			t.Errorf("finding kind %q is not in ports.SpecFindingKinds", k)
		}
	}
}
