package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/devpilot/devpilot/ports"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// Effect says whether a tool only reads or changes something. Writes run only
// after a human approves them, and so do reads an organisation marked
// always_confirm.
type Effect string

// The effects a tool can have.
const (
	EffectRead  Effect = "read"
	EffectWrite Effect = "write"
)

// Tool is an operation the assistant may call.
type Tool struct {
	// Name is snake_case, matching ^[a-z0-9_]{1,64}$.
	Name        string
	Description string
	// Schema is the JSON Schema (draft 2020-12 unless it says otherwise) of
	// the arguments, an object. Formats such as "uuid" are asserted.
	Schema json.RawMessage
	Effect Effect
	// Summary says in one human sentence what a write will do with args; it
	// is shown when asking for confirmation. Required for writes; optional
	// for reads, asked for confirmation only when an organisation marks them
	// always_confirm (without one, the summary names the tool and args).
	Summary func(args json.RawMessage) string
	// Describe, when set, is Summary with the resources named as people
	// know them, looked up for the principal in ctx (NamedSummary makes
	// one); "" falls back to Summary.
	Describe func(ctx context.Context, args json.RawMessage) string
	// Area is the part of the product the tool belongs to; routing offers a
	// page's area's tools (see Route).
	Area Area
	// Core marks a read that helps on any page; routing offers it always.
	Core bool
	// Loose marks a tool whose schema devpilot did not write (an MCP
	// server's): the model is shown it as it is, without strict mode, and
	// arguments are still validated against it.
	Loose bool
	// FillProject names a top-level string property that takes the selected
	// project's id (PageContext.SelectedProjectID) when the model leaves it
	// out or sends null; the model is shown it as nullable even when the
	// schema requires it, and a call without it and without a selected
	// project fails validation as before. "" for none.
	FillProject string
	// Run performs the call with arguments that passed the schema. Its
	// result is encoded as JSON for the model. An error's message reaches the
	// model only when it is a ports.Error; others become "internal error".
	Run func(ctx context.Context, args json.RawMessage) (any, error)
}

// Guard decides whether the principal in ctx may run the tool named name
// (an organisation's permission policy): nil when it may, else an error to
// refuse the call with, whose message says which permission it lacks.
type Guard interface {
	CheckTool(ctx context.Context, name string) error
}

// Registry holds the tools the assistant may call. It is safe for concurrent
// use; tools are registered at start-up by each area's core package.
type Registry struct {
	mu    sync.RWMutex
	tools map[string]*entry
	defs  []ports.ToolDefinition // built on first use after a change
	// words bring areas of tools added by With into play when a message
	// names them.
	words map[Area]*regexp.Regexp
}

type entry struct {
	tool   Tool
	schema *jsonschema.Schema
	doc    map[string]any  // the authored schema, parsed
	wire   json.RawMessage // what the model is shown: strict
}

var toolNamePattern = regexp.MustCompile(`^[a-z0-9_]{1,64}$`)

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{tools: map[string]*entry{}} }

// Register adds tools, compiling each schema once. Either all are added or
// none. Errors: invalid for a bad name, a missing description, Run or (for a
// write) Summary, an unknown effect or a schema that does not compile or is not
// of type object; conflict for a name registered already or given twice.
func (r *Registry) Register(tools ...Tool) error {
	added := make(map[string]*entry, len(tools))
	for _, t := range tools {
		e, err := compileTool(t)
		if err != nil {
			return err
		}
		if _, dup := added[t.Name]; dup {
			return ports.Errorf(ports.KindConflict, "tool %q is given twice", t.Name)
		}
		added[t.Name] = e
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for name := range added {
		if _, dup := r.tools[name]; dup {
			return ports.Errorf(ports.KindConflict, "tool %q is registered already", name)
		}
	}
	for name, e := range added {
		r.tools[name] = e
	}
	r.defs = nil
	return nil
}

// Lookup returns the tool with the name, if registered.
func (r *Registry) Lookup(name string) (Tool, bool) {
	e, ok := r.lookup(name)
	if !ok {
		return Tool{}, false
	}
	return e.tool, true
}

func (r *Registry) lookup(name string) (*entry, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.tools[name]
	return e, ok
}

// Tools returns every registered tool, sorted by name.
func (r *Registry) Tools() []Tool {
	r.mu.RLock()
	tools := make([]Tool, 0, len(r.tools))
	for _, e := range r.tools {
		tools = append(tools, e.tool)
	}
	r.mu.RUnlock()
	slices.SortFunc(tools, func(a, b Tool) int { return strings.Compare(a.Name, b.Name) })
	return tools
}

// Definitions describes every tool to a model, sorted by name. Every call
// until the next Register returns the same slice, which callers must not
// modify.
func (r *Registry) Definitions() []ports.ToolDefinition {
	r.mu.RLock()
	defs := r.defs
	r.mu.RUnlock()
	if defs != nil {
		return defs
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.defs == nil && len(r.tools) > 0 {
		defs = make([]ports.ToolDefinition, 0, len(r.tools))
		for _, e := range r.tools {
			defs = append(defs, e.definition())
		}
		slices.SortFunc(defs, func(a, b ports.ToolDefinition) int { return strings.Compare(a.Name, b.Name) })
		r.defs = defs
	}
	return r.defs
}

func (e *entry) definition() ports.ToolDefinition {
	return ports.ToolDefinition{Name: e.tool.Name, Description: e.tool.Description, Parameters: e.wire, Strict: !e.tool.Loose}
}

func compileTool(t Tool) (*entry, error) {
	bad := func(format string, args ...any) error {
		return &ports.Error{Kind: ports.KindInvalid, Message: fmt.Sprintf("tool %q: ", t.Name) + fmt.Sprintf(format, args...)}
	}
	switch {
	case !toolNamePattern.MatchString(t.Name):
		return nil, bad("the name must match %s", toolNamePattern)
	case strings.TrimSpace(t.Description) == "":
		return nil, bad("a description is required")
	case t.Effect != EffectRead && t.Effect != EffectWrite:
		return nil, bad("the effect must be %q or %q", EffectRead, EffectWrite)
	case t.Run == nil:
		return nil, bad("Run is required")
	case t.Effect == EffectWrite && t.Summary == nil:
		return nil, bad("a write tool needs a Summary")
	}
	schema, doc, err := compileSchema(t.Name, t.Schema)
	if err != nil {
		return nil, bad("invalid schema: %v", err)
	}
	if t.Loose {
		t.Schema = slices.Clone(t.Schema)
		return &entry{tool: t, schema: schema, doc: doc, wire: t.Schema}, nil
	}
	var nullable []string
	if t.FillProject != "" {
		props, _ := doc["properties"].(map[string]any)
		p, _ := props[t.FillProject].(map[string]any)
		if p == nil || !slices.Contains(typesOf(p["type"]), "string") {
			return nil, bad("FillProject %q is not a string property of the schema", t.FillProject)
		}
		nullable = []string{t.FillProject}
	}
	wire, err := wireSchema(t.Schema, nullable...)
	if err != nil {
		return nil, bad("the schema has no strict form: %v", err)
	}
	t.Schema = slices.Clone(t.Schema)
	return &entry{tool: t, schema: schema, doc: doc, wire: wire}, nil
}

// refuseLoads keeps schemas self-contained: a $ref to anything outside the
// schema itself fails to compile instead of reading files.
type refuseLoads struct{}

func (refuseLoads) Load(url string) (any, error) {
	return nil, errors.New("tool schemas may not refer to other documents")
}

func compileSchema(name string, raw json.RawMessage) (*jsonschema.Schema, map[string]any, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, nil, fmt.Errorf("not JSON: %w", err)
	}
	obj, ok := doc.(map[string]any)
	if !ok || obj["type"] != "object" {
		return nil, nil, errors.New(`the arguments must be described as {"type":"object",…}`)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(refuseLoads{})
	loc := "urn:devpilot:tool:" + name
	if err := c.AddResource(loc, doc); err != nil {
		return nil, nil, err
	}
	sch, err := c.Compile(loc)
	return sch, obj, err
}

const maxProblemLen = 1000

// Known are the arguments code knows from where the user is, filled in for
// the model (Tool.FillProject).
type Known struct {
	// ProjectID is the selected project's id, "" when none is selected.
	ProjectID string
}

// check decides whether a call may run. It returns the arguments as JSON when
// they parse (an empty string counts as {}), the tool when it exists, and a
// problem, said for the model, when the call must not run. Nulls standing for
// left-out properties are removed and known arguments filled in first, so
// the arguments returned are those the tool runs with.
func (r *Registry) check(call ports.ToolCall, known Known) (args json.RawMessage, tool Tool, problem string) {
	text := strings.TrimSpace(call.Arguments)
	if text == "" {
		text = "{}"
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err == nil {
		args = json.RawMessage(text)
	}
	e, ok := r.lookup(call.Name)
	switch {
	case !ok:
		return args, Tool{}, fmt.Sprintf("unknown tool %q; call one of the tools you were given", call.Name)
	case err != nil:
		return nil, e.tool, ports.Clip("the arguments are not valid JSON: "+err.Error(), maxProblemLen)
	}
	if e.complete(inst, known) {
		if b, err := json.Marshal(inst); err == nil {
			args = b
		}
	}
	if err := e.schema.Validate(inst); err != nil {
		return args, e.tool, ports.Clip("the arguments do not match the tool's schema: "+schemaProblems(err), maxProblemLen)
	}
	return args, e.tool, ""
}

// complete removes nulls that stand for left-out properties and fills in
// the selected project; it reports whether it changed inst.
func (e *entry) complete(inst any, known Known) bool {
	changed := stripNulls(e.doc, inst)
	obj, ok := inst.(map[string]any)
	if !ok || e.tool.FillProject == "" || known.ProjectID == "" {
		return changed
	}
	if v, given := obj[e.tool.FillProject]; !given || v == nil {
		obj[e.tool.FillProject] = known.ProjectID
		changed = true
	}
	return changed
}

func schemaProblems(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) || len(ve.Causes) == 0 {
		return err.Error()
	}
	lines := make([]string, len(ve.Causes))
	for i, c := range ve.Causes {
		lines[i] = c.Error()
	}
	return strings.Join(lines, "; ")
}

// Check decides, as the chat loop does, whether a call may run, without
// running it: it returns the arguments as JSON when they parse (an empty
// string counts as {}), the tool when it exists, and the problem, worded for
// the model, when the call must not run ("" when it may).
func (r *Registry) Check(call ports.ToolCall) (args json.RawMessage, tool Tool, problem string) {
	return r.check(call, Known{})
}

// CheckWith is Check with the arguments code knows filled in for the model.
func (r *Registry) CheckWith(call ports.ToolCall, known Known) (args json.RawMessage, tool Tool, problem string) {
	return r.check(call, known)
}
