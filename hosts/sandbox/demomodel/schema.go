package demomodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// maxCachedSchemas bounds the compiled tool schemas kept: the assistant
// offers one fixed catalogue, so a handful is the working set.
const maxCachedSchemas = 256

// schemaCache compiles tool schemas once. It is safe for concurrent use.
type schemaCache struct {
	mu sync.Mutex
	m  map[string]*jsonschema.Schema
}

func newSchemaCache() *schemaCache { return &schemaCache{m: map[string]*jsonschema.Schema{}} }

type refuseLoads struct{}

func (refuseLoads) Load(string) (any, error) { return nil, errors.New("no remote schemas") }

func (c *schemaCache) compile(raw json.RawMessage) (*jsonschema.Schema, error) {
	key := string(raw)
	c.mu.Lock()
	s, ok := c.m[key]
	c.mu.Unlock()
	if ok {
		return s, nil
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = json.RawMessage(`{"type":"object"}`)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	comp := jsonschema.NewCompiler()
	comp.DefaultDraft(jsonschema.Draft2020)
	comp.AssertFormat()
	comp.UseLoader(refuseLoads{})
	const loc = "urn:devpilot:demomodel:tool"
	if err := comp.AddResource(loc, doc); err != nil {
		return nil, err
	}
	s, err = comp.Compile(loc)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.m) < maxCachedSchemas {
		c.m[key] = s
	}
	c.mu.Unlock()
	return s, nil
}

// validate checks arguments against a tool's parameter schema.
func (c *schemaCache) validate(schema json.RawMessage, args map[string]any) error {
	s, err := c.compile(schema)
	if err != nil {
		return err
	}
	b, err := json.Marshal(args)
	if err != nil {
		return err
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return err
	}
	return s.Validate(inst)
}

// instanceOf builds a small value that fits a JSON Schema of the simple kind
// structured output uses (type, properties, required, items, enum, minItems,
// minimum), for response formats the model knows nothing else about.
func instanceOf(schema json.RawMessage) any {
	var node any
	if err := json.Unmarshal(schema, &node); err != nil {
		return map[string]any{}
	}
	return instance(node, 0)
}

func instance(node any, depth int) any {
	n, _ := node.(map[string]any)
	if n == nil || depth > 12 {
		return map[string]any{}
	}
	if c, ok := n["const"]; ok {
		return c
	}
	if e, ok := n["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	typ := n["type"]
	if list, ok := typ.([]any); ok && len(list) > 0 {
		typ = list[0]
	}
	switch typ {
	case "object":
		out := map[string]any{}
		props, _ := n["properties"].(map[string]any)
		for name, p := range props {
			out[name] = instance(p, depth+1)
		}
		return out
	case "array":
		count := 0
		if f, ok := n["minItems"].(float64); ok {
			count = int(f)
		}
		out := make([]any, 0, count)
		for range min(count, 10) {
			out = append(out, instance(n["items"], depth+1))
		}
		return out
	case "integer", "number":
		if f, ok := n["minimum"].(float64); ok {
			return f
		}
		return 0
	case "boolean":
		return false
	case "null":
		return nil
	case "string":
		return "demo"
	}
	if _, ok := n["properties"]; ok {
		n["type"] = "object"
		return instance(n, depth)
	}
	return "demo"
}
