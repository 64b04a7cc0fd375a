package spec

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/devpilot/devpilot/ports"
)

// The stage schemas stay within what providers accept for strict structured
// output: every property required, no additional properties, and no keywords
// beyond type, properties, items, enum, pattern, minItems and minimum.
//
//go:embed schemas/*.json
var schemaFiles embed.FS

type stageSchema struct {
	raw      json.RawMessage
	compiled *jsonschema.Schema
}

var schemas = mustCompileSchemas()

func mustCompileSchemas() map[ports.Stage]stageSchema {
	out := make(map[ports.Stage]stageSchema, len(ports.Stages))
	for _, st := range ports.Stages {
		raw, err := schemaFiles.ReadFile("schemas/" + string(st) + ".json")
		if err != nil {
			panic(fmt.Sprintf("spec: schema of stage %s: %v", st, err))
		}
		compiled, err := compileSchema(string(st), raw)
		if err != nil {
			panic(fmt.Sprintf("spec: schema of stage %s: %v", st, err))
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, raw); err != nil {
			panic(fmt.Sprintf("spec: schema of stage %s: %v", st, err))
		}
		out[st] = stageSchema{raw: compact.Bytes(), compiled: compiled}
	}
	return out
}

type refuseLoads struct{}

func (refuseLoads) Load(string) (any, error) {
	return nil, errors.New("stage schemas may not refer to other documents")
}

func compileSchema(name string, raw []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refuseLoads{})
	loc := "urn:devpilot:spec:" + name
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	return c.Compile(loc)
}

// responseFormat asks the model for the stage's structured output.
func responseFormat(st ports.Stage) *ports.JSONSchemaFormat {
	return &ports.JSONSchemaFormat{Name: "spec_" + string(st), Schema: schemas[st].raw, Strict: true}
}

// validateSchema checks a parsed JSON value against the stage's schema and
// returns each violation as "at '/path': reason".
func validateSchema(st ports.Stage, v any) []string {
	err := schemas[st].compiled.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return []string{err.Error()}
	}
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			msg := e.Error()
			if rest, ok := strings.CutPrefix(msg, "at '':"); ok {
				msg = "at '/':" + rest
			}
			out = append(out, msg)
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	return out
}
