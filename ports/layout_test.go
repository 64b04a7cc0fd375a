package ports_test

import (
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/devpilot/devpilot"

// pureHelpers are the third-party modules core may import: small, pure
// libraries with no I/O (DESIGN.md's "small pure helpers").
var pureHelpers = []string{
	"github.com/santhosh-tekuri/jsonschema/v6", // tool arguments are validated against JSON Schema
}

func pureHelper(path string) bool {
	for _, h := range pureHelpers {
		if path == h || strings.HasPrefix(path, h+"/") {
			return true
		}
	}
	return false
}

// TestDependencyRule enforces DESIGN.md: core → ports (and the pure helpers);
// ports → standard library; adapters and testkit never import core or hosts; nothing outside
// hosts imports hosts.
func TestDependencyRule(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("go", "list", "-json=ImportPath,Imports", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	seen := 0
	for {
		var pkg struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&pkg); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		seen++
		area := layer(pkg.ImportPath)
		for _, imp := range pkg.Imports {
			if reason := forbidden(area, imp); reason != "" {
				t.Errorf("%s imports %s: %s", pkg.ImportPath, imp, reason)
			}
		}
	}
	if seen < 5 {
		t.Fatalf("go list saw only %d packages", seen)
	}
}

// layer returns the top-level folder of a package of this module, or "".
func layer(path string) string {
	rest, ok := strings.CutPrefix(path, module+"/")
	if !ok {
		return ""
	}
	top, _, _ := strings.Cut(rest, "/")
	return top
}

func standard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

func forbidden(from, imp string) string {
	to := layer(imp)
	switch {
	case to == "hosts" && from != "hosts":
		return "nothing outside hosts/ may import hosts/"
	case from == "ports" && !standard(imp):
		return "ports may import only the standard library"
	case from == "core" && !standard(imp) && to != "ports" && to != "core" && !pureHelper(imp):
		return "core may import only ports, the standard library and the listed pure helpers"
	case (from == "adapters" || from == "testkit") && to == "core":
		return from + " may not import core"
	}
	return ""
}

func TestForbidden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		from, imp string
		bad       bool
	}{
		{"core", module + "/ports", false},
		{"core", "context", false},
		{"core", "github.com/jmoiron/sqlx", true},
		{"core", "github.com/santhosh-tekuri/jsonschema/v6", false},
		{"core", "github.com/santhosh-tekuri/jsonschema/v6/kind", false},
		{"core", "github.com/sashabaranov/go-openai", true},
		{"core", module + "/adapters/sqlstore", true},
		{"ports", "github.com/google/uuid", true},
		{"adapters", module + "/hosts/app", true},
		{"adapters", module + "/core/identity", true},
		{"testkit", module + "/hosts/httpapi", true},
		{"hosts", module + "/core/identity", false},
	}
	for _, tt := range tests {
		if got := forbidden(tt.from, tt.imp) != ""; got != tt.bad {
			t.Errorf("forbidden(%s, %s) = %v, want %v", tt.from, tt.imp, got, tt.bad)
		}
	}
}
