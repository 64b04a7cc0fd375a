package ports_test

import (
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/devpilot/devpilot"

// pureHelpers are the third-party modules core may import: small, pure
// libraries with no I/O (docs/design.md, "The dependency rule").
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

// sharedCore are the packages under core that belong to no area: what
// several areas share (docs/design.md). Every other package under core/X is area X's.
var sharedCore = []string{"tool", "internal"}

// TestDependencyRule enforces the rule docs/design.md describes: core → ports (and the pure helpers);
// one area of core never imports another's package, and core's shared
// packages import no area; ports → standard library; adapters and testkit
// never import core; nothing outside hosts imports hosts; and no package
// outside testkit imports testkit, so no binary links test code
// (hosts/devpilot's TestBinaryLinksNoTestkit checks the binary itself).
//
// Only the packages' own files count, not their tests: a test may import
// testkit, and a test outside hosts may import what hosts/sandbox serves
// (its fakes, hosts/sandbox/fakeopenai and the others, and its demo model),
// as the adapters' tests do.
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
		for _, imp := range pkg.Imports {
			if reason := forbidden(pkg.ImportPath, imp); reason != "" {
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

// coreArea returns the area a package under core belongs to ("assistant"
// for core/assistant/…), "" for a shared package or one outside core.
func coreArea(path string) string {
	rest, ok := strings.CutPrefix(path, module+"/core/")
	if !ok {
		return ""
	}
	first, _, _ := strings.Cut(rest, "/")
	if slices.Contains(sharedCore, first) {
		return ""
	}
	return first
}

func standard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// forbidden says why the package pkg may not import imp, "" when it may.
func forbidden(pkg, imp string) string {
	from, to := layer(pkg), layer(imp)
	switch {
	case to == "hosts" && from != "hosts":
		return "nothing outside hosts/ may import hosts/"
	case from == "ports" && !standard(imp):
		return "ports may import only the standard library"
	case from == "core" && !standard(imp) && to != "ports" && to != "core" && !pureHelper(imp):
		return "core may import only ports, the standard library and the listed pure helpers"
	case (from == "adapters" || from == "testkit") && to == "core":
		return from + " may not import core"
	case from == "core" && to == "core" && coreArea(imp) != "" && coreArea(imp) != coreArea(pkg):
		return "one area of core may not import another area's package (nor may core's shared packages); share through ports or core/tool"
	case to == "testkit" && from != "testkit":
		return "only tests and testkit itself may import testkit (no binary links test code)"
	}
	return ""
}

func TestForbidden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		from, imp string
		bad       bool
	}{
		{"core/spec", module + "/ports", false},
		{"core/spec", "context", false},
		{"core/spec", "github.com/jmoiron/sqlx", true},
		{"core/tool", "github.com/santhosh-tekuri/jsonschema/v6", false},
		{"core/tool", "github.com/santhosh-tekuri/jsonschema/v6/kind", false},
		{"core/assistant", "github.com/sashabaranov/go-openai", true},
		{"core/spec", module + "/adapters/sqlstore", true},
		{"core/spec", module + "/core/tool", false},
		{"core/spec", module + "/core/internal/genjob", false},
		{"core/spec", module + "/core/spec/internal/x", false},
		{"core/voice", module + "/core/assistant", true},
		{"core/cloud", module + "/core/assistant", true},
		{"core/tool", module + "/core/assistant", true},
		{"core/internal/genjob", module + "/core/spec", true},
		{"ports", "github.com/google/uuid", true},
		{"adapters/aws", module + "/hosts/app", true},
		{"adapters/aws", module + "/core/identity", true},
		{"testkit/fakeoidc", module + "/hosts/httpapi", true},
		{"testkit/storetest", module + "/testkit/fixture", false},
		{"testkit/storetest", module + "/core/spec", true},
		{"adapters/memstore", module + "/testkit/storetest", true},
		{"adapters/openai", module + "/hosts/sandbox/fakeopenai", true},
		{"core/spec", module + "/testkit/mocks", true},
		{"hosts/app", module + "/core/identity", false},
		{"hosts/app", module + "/core/assistant", false},
		{"hosts/app", module + "/testkit/fakeoidc", true},
		{"hosts/devpilot", module + "/testkit/mocks", true},
		{"hosts/sandbox", module + "/testkit/fixture", true},
		{"hosts/eval", module + "/testkit/storetest", true},
		{"hosts/sandbox", module + "/hosts/sandbox/fakeopenai", false},
		{"hosts/sandbox", module + "/hosts/sandbox/demomodel", false},
		{"hosts/eval", module + "/hosts/eval/evalcorpus", false},
		{"hosts/eval", module + "/hosts/sandbox/demomodel", false},
		{"hosts/sandbox", module + "/hosts/app", false},
	}
	for _, tt := range tests {
		if got := forbidden(module+"/"+tt.from, tt.imp) != ""; got != tt.bad {
			t.Errorf("forbidden(%s, %s) = %v, want %v", tt.from, tt.imp, got, tt.bad)
		}
	}
}
