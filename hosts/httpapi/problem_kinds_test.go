package httpapi

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/devpilot/devpilot/ports"
)

// TestEveryErrorKindHasAStatus reads the ports package's source for every
// constant of type Kind and checks that the problem table maps it, so that a
// kind added there cannot fall through to a 500.
func TestEveryErrorKindHasAStatus(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join("..", "..", "ports", "*.go"))
	if err != nil || len(files) == 0 {
		t.Fatalf("ports sources: %v", err)
	}
	kinds := 0
	for _, file := range files {
		f, err := parser.ParseFile(fset, file, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			spec, ok := n.(*ast.ValueSpec)
			if !ok || spec.Type == nil {
				return true
			}
			if id, ok := spec.Type.(*ast.Ident); !ok || id.Name != "Kind" {
				return true
			}
			for i, name := range spec.Names {
				lit, ok := spec.Values[i].(*ast.BasicLit)
				if !ok {
					continue
				}
				value, _ := strconv.Unquote(lit.Value)
				kinds++
				if _, ok := problemClasses[ports.Kind(value)]; !ok {
					t.Errorf("ports.%s (%q) has no row in problemClasses", name.Name, value)
				}
			}
			return true
		})
	}
	if kinds < 16 {
		t.Fatalf("found only %d kinds in ports: has the declaration changed?", kinds)
	}
}
