package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/ports"
)

func validTool(name string) tool.Tool {
	return tool.Tool{
		Name: name, Description: "does " + name, Schema: json.RawMessage(`{"type":"object"}`), Effect: tool.EffectRead,
		Run: func(context.Context, json.RawMessage) (any, error) { return nil, nil },
	}
}

func TestRegisterRejectsBadTools(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(*tool.Tool)
		want   string
	}{
		{"upper case name", func(tl *tool.Tool) { tl.Name = "GetProject" }, "name"},
		{"dash in name", func(tl *tool.Tool) { tl.Name = "get-project" }, "name"},
		{"empty name", func(tl *tool.Tool) { tl.Name = "" }, "name"},
		{"name too long", func(tl *tool.Tool) { tl.Name = strings.Repeat("a", 65) }, "name"},
		{"no description", func(tl *tool.Tool) { tl.Description = " " }, "description"},
		{"unknown effect", func(tl *tool.Tool) { tl.Effect = "delete" }, "effect"},
		{"no run", func(tl *tool.Tool) { tl.Run = nil }, "Run"},
		{"write without summary", func(tl *tool.Tool) { tl.Effect = tool.EffectWrite }, "Summary"},
		{"schema not JSON", func(tl *tool.Tool) { tl.Schema = json.RawMessage(`{"type":`) }, "schema"},
		{"no schema", func(tl *tool.Tool) { tl.Schema = nil }, "schema"},
		{"schema not an object", func(tl *tool.Tool) { tl.Schema = json.RawMessage(`{"type":"string"}`) }, "schema"},
		{"schema breaks the metaschema", func(tl *tool.Tool) {
			tl.Schema = json.RawMessage(`{"type":"object","properties":{"a":{"type":5}}}`)
		}, "schema"},
		{"schema refers outside", func(tl *tool.Tool) {
			tl.Schema = json.RawMessage(`{"type":"object","properties":{"a":{"$ref":"file:///etc/passwd"}}}`)
		}, "schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tl := validTool("get_project")
			tt.change(&tl)
			r := tool.NewRegistry()
			err := r.Register(tl)
			if !errors.Is(err, ports.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want invalid about %s", err, tt.want)
			}
			if len(r.Definitions()) != 0 {
				t.Error("a bad tool was registered")
			}
		})
	}
}

func TestRegisterRejectsDuplicatesAllOrNothing(t *testing.T) {
	t.Parallel()
	r := tool.NewRegistry()
	if err := r.Register(validTool("a_tool")); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(validTool("b_tool"), validTool("a_tool")); !errors.Is(err, ports.ErrConflict) {
		t.Errorf("registered twice: %v", err)
	}
	if err := r.Register(validTool("c_tool"), validTool("c_tool")); !errors.Is(err, ports.ErrConflict) {
		t.Errorf("given twice: %v", err)
	}
	if err := r.Register(validTool("d_tool"), validTool("Bad")); err == nil {
		t.Error("a bad tool was accepted")
	}
	if defs := r.Definitions(); len(defs) != 1 {
		t.Errorf("definitions %+v, want only a_tool", defs)
	}
}

func TestDefinitionsSortedAndLookup(t *testing.T) {
	t.Parallel()
	r := tool.NewRegistry()
	schema := `{"type":"object","properties":{"n":{"type":"integer"}}}`
	z := validTool("zeta")
	z.Schema = json.RawMessage(schema)
	if err := r.Register(z, validTool("alpha"), validTool("mid_1")); err != nil {
		t.Fatal(err)
	}
	defs := r.Definitions()
	var got []string
	for _, d := range defs {
		got = append(got, d.Name)
	}
	if strings.Join(got, ",") != "alpha,mid_1,zeta" {
		t.Errorf("order %v", got)
	}
	wire := `{"additionalProperties":false,"properties":{"n":{"type":["integer","null"]}},"required":["n"],"type":"object"}`
	if string(defs[2].Parameters) != wire || !defs[2].Strict || defs[2].Description != "does zeta" {
		t.Errorf("definition %+v", defs[2])
	}
	if tl, ok := r.Lookup("mid_1"); !ok || tl.Name != "mid_1" || tl.Effect != tool.EffectRead {
		t.Errorf("Lookup = %+v, %v", tl, ok)
	}
	if _, ok := r.Lookup("nope"); ok {
		t.Error("found an unregistered tool")
	}
}

func TestDefinitionsFollowRegister(t *testing.T) {
	t.Parallel()
	r := tool.NewRegistry()
	names := func() string {
		var got []string
		for _, d := range r.Definitions() {
			got = append(got, d.Name)
		}
		return strings.Join(got, ",")
	}
	if got := names(); got != "" {
		t.Errorf("empty registry: %s", got)
	}
	var wg sync.WaitGroup
	for _, name := range []string{"b_tool", "a_tool", "c_tool"} {
		wg.Go(func() {
			if err := r.Register(validTool(name)); err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() { _ = r.Definitions() })
	}
	wg.Wait()
	if got := names(); got != "a_tool,b_tool,c_tool" {
		t.Errorf("definitions %s", got)
	}
	if err := r.Register(validTool("a_tool")); err == nil {
		t.Fatal("registered twice")
	}
	if err := r.Register(validTool("d_tool")); err != nil {
		t.Fatal(err)
	}
	if got := names(); got != "a_tool,b_tool,c_tool,d_tool" {
		t.Errorf("after another Register: %s", got)
	}
}

// TestWireSchemasAreStrict: the model is shown each schema in strict form,
// nested objects and arrays too, and a schema with no strict form is refused.
func TestWireSchemasAreStrict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, schema string
		ok           bool
	}{
		{"flat", `{"type":"object","properties":{"a":{"type":"string","maxLength":5},"b":{"type":"integer"}},"required":["a"]}`, true},
		{"nested", `{"type":"object","properties":{"len":{"type":"object","properties":{"min":{"type":"integer"}}},"tags":{"type":"array","items":{"type":"object","properties":{"k":{"type":"string","enum":["x","y"]}}}}}}`, true},
		{"a map", `{"type":"object","properties":{"m":{"type":"object","additionalProperties":{"type":"string"}}}}`, false},
		{"untyped", `{"type":"object","properties":{"any":{"description":"anything"}}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := tool.NewRegistry()
			tl := validTool("t")
			tl.Schema = json.RawMessage(tt.schema)
			err := r.Register(tl)
			if (err == nil) != tt.ok {
				t.Fatalf("Register: %v, want ok %v", err, tt.ok)
			}
			if err != nil {
				return
			}
			d := r.Definitions()[0]
			if p := tool.StrictProblem(d.Parameters); p != "" || !d.Strict {
				t.Errorf("wire schema %s: %s", d.Parameters, p)
			}
			// null for what is left out is accepted and treated as absent.
			args := map[string]string{"flat": `{"a":"x","b":null}`, "nested": `{"len":{"min":null},"tags":[{"k":null}]}`}[tt.name]
			want := map[string]string{"flat": `{"a":"x"}`, "nested": `{"len":{},"tags":[{}]}`}[tt.name]
			if got, _, problem := r.Check(ports.ToolCall{Name: "t", Arguments: args}); problem != "" || string(got) != want {
				t.Errorf("Check(%s) = %s, %q; want %s", args, got, problem, want)
			}
		})
	}
	if p := tool.StrictProblem(json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)); p == "" {
		t.Error("a non-strict schema passed StrictProblem")
	}
}
