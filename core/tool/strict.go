package tool

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// The wire schema of a tool is what the model is shown: its authored schema
// in the subset of JSON Schema that strict function calling accepts
// (OpenAI's function calling guide, "Strict mode", and Structured Outputs'
// "Supported schemas"): every object lists all its properties as required
// and has additionalProperties false; a property the authored schema leaves
// optional is required but nullable, and null stands for "left out"; the
// keywords strict mode does not take are dropped, and a length limit is said
// in the description instead. The authored schema stays the one arguments
// are validated against, after nulls standing for left-out properties are
// removed (stripNulls).

// unsupportedStrict are keywords strict mode rejects; they are kept for
// validation and left off the wire.
var unsupportedStrict = []string{"minLength", "maxLength", "minProperties", "maxProperties",
	"patternProperties", "unevaluatedProperties", "propertyNames", "uniqueItems", "contains",
	"minContains", "maxContains", "unevaluatedItems", "default", "examples", "$schema", "$id"}

// wireSchema derives the strict wire schema of an authored one; nullable
// names top-level properties made nullable even though the authored schema
// requires them (filled in by code when null). It fails for a schema that has
// no strict form: an untyped value, or an object whose additional properties
// are a schema (a map).
func wireSchema(raw json.RawMessage, nullable ...string) (json.RawMessage, error) {
	var doc map[string]any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	out, err := strictNode(doc, "", nullable)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(out)
	if err != nil {
		return nil, err
	}
	return b, nil
}

func strictNode(n map[string]any, path string, nullable []string) (map[string]any, error) {
	out := make(map[string]any, len(n))
	for k, v := range n {
		if !slices.Contains(unsupportedStrict, k) {
			out[k] = v
		}
	}
	if limit := lengthNote(n); limit != "" {
		desc, _ := out["description"].(string)
		out["description"] = strings.TrimSpace(desc + " " + limit)
	}
	if alts, ok := n["anyOf"].([]any); ok {
		list := make([]any, len(alts))
		for i, a := range alts {
			m, ok := a.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s: anyOf holds a non-schema", where(path))
			}
			s, err := strictNode(m, path, nil)
			if err != nil {
				return nil, err
			}
			list[i] = s
		}
		out["anyOf"] = list
		return out, nil
	}
	types := typesOf(n["type"])
	if len(types) == 0 {
		return nil, fmt.Errorf("%s: strict mode needs a type", where(path))
	}
	if slices.Contains(types, "array") {
		items, ok := n["items"].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: an array needs an items schema", where(path))
		}
		s, err := strictNode(items, path+"[]", nil)
		if err != nil {
			return nil, err
		}
		out["items"] = s
	}
	if !slices.Contains(types, "object") {
		return out, nil
	}
	if ap, ok := n["additionalProperties"]; ok && ap != false {
		return nil, fmt.Errorf("%s: strict mode needs additionalProperties false, not a map", where(path))
	}
	out["additionalProperties"] = false
	props, _ := n["properties"].(map[string]any)
	required := map[string]bool{}
	if list, ok := n["required"].([]any); ok {
		for _, r := range list {
			if s, ok := r.(string); ok {
				required[s] = true
			}
		}
	}
	for _, name := range nullable {
		required[name] = false
	}
	names := make([]string, 0, len(props))
	wired := make(map[string]any, len(props))
	for name, p := range props {
		m, ok := p.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: not a schema", where(path+"."+name))
		}
		s, err := strictNode(m, path+"."+name, nil)
		if err != nil {
			return nil, err
		}
		if !required[name] {
			s = withNull(s)
		}
		wired[name] = s
		names = append(names, name)
	}
	slices.Sort(names)
	out["properties"] = wired
	req := make([]any, len(names))
	for i, name := range names {
		req[i] = name
	}
	out["required"] = req
	return out, nil
}

func where(path string) string {
	if path == "" {
		return "the arguments"
	}
	return "property " + strings.TrimPrefix(path, ".")
}

// lengthNote says a string's length limits, which strict mode cannot carry.
func lengthNote(n map[string]any) string {
	lo, hasLo := n["minLength"]
	hi, hasHi := n["maxLength"]
	switch {
	case hasLo && hasHi && fmt.Sprint(lo) != "0":
		return fmt.Sprintf("(%v to %v characters)", lo, hi)
	case hasHi:
		return fmt.Sprintf("(at most %v characters)", hi)
	}
	return ""
}

func typesOf(t any) []string {
	switch v := t.(type) {
	case string:
		return []string{v}
	case []any:
		out := make([]string, 0, len(v))
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// withNull makes a wire property nullable: null joins its types (and its
// enum), or its anyOf.
func withNull(s map[string]any) map[string]any {
	if alts, ok := s["anyOf"].([]any); ok {
		for _, a := range alts {
			if m, ok := a.(map[string]any); ok && slices.Contains(typesOf(m["type"]), "null") {
				return s
			}
		}
		s["anyOf"] = append(slices.Clone(alts), map[string]any{"type": "null"})
		return s
	}
	types := typesOf(s["type"])
	if !slices.Contains(types, "null") {
		list := make([]any, 0, len(types)+1)
		for _, t := range types {
			list = append(list, t)
		}
		s["type"] = append(list, "null")
	}
	if enum, ok := s["enum"].([]any); ok && !slices.Contains(enum, nil) {
		s["enum"] = append(slices.Clone(enum), nil)
	}
	return s
}

// stripNulls removes, from arguments that parsed, every property whose value
// is null where the authored schema does not allow null there: a strict
// model sends null for what it leaves out. It reports whether it removed any.
func stripNulls(schema map[string]any, inst any) bool {
	obj, ok := inst.(map[string]any)
	if !ok {
		if arr, ok := inst.([]any); ok {
			items, _ := schema["items"].(map[string]any)
			changed := false
			for _, v := range arr {
				changed = stripNulls(items, v) || changed
			}
			return changed
		}
		return false
	}
	props, _ := schema["properties"].(map[string]any)
	changed := false
	for k, v := range obj {
		ps, _ := props[k].(map[string]any)
		if v == nil {
			if !allowsNull(ps) {
				delete(obj, k)
				changed = true
			}
			continue
		}
		changed = stripNulls(ps, v) || changed
	}
	return changed
}

func allowsNull(s map[string]any) bool {
	if s == nil {
		return false
	}
	if slices.Contains(typesOf(s["type"]), "null") {
		return true
	}
	if alts, ok := s["anyOf"].([]any); ok {
		for _, a := range alts {
			if m, ok := a.(map[string]any); ok && allowsNull(m) {
				return true
			}
		}
	}
	return false
}

// StrictProblem says why a wire schema is not in the strict subset, "" when
// it is: every object has additionalProperties false and requires each of
// its properties, every value has a type (or anyOf), and no keyword strict
// mode rejects is used. Tests of every area's tools use it.
func StrictProblem(raw json.RawMessage) string {
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return "not JSON: " + err.Error()
	}
	if err := checkStrict(doc, ""); err != nil {
		return err.Error()
	}
	return ""
}

func checkStrict(n map[string]any, path string) error {
	for _, k := range unsupportedStrict {
		if _, ok := n[k]; ok {
			return fmt.Errorf("%s: keyword %s is not allowed in strict mode", where(path), k)
		}
	}
	if alts, ok := n["anyOf"].([]any); ok {
		for _, a := range alts {
			m, _ := a.(map[string]any)
			if err := checkStrict(m, path); err != nil {
				return err
			}
		}
		return nil
	}
	types := typesOf(n["type"])
	if len(types) == 0 {
		return fmt.Errorf("%s: no type", where(path))
	}
	if slices.Contains(types, "array") {
		items, _ := n["items"].(map[string]any)
		if items == nil {
			return fmt.Errorf("%s: no items", where(path))
		}
		if err := checkStrict(items, path+"[]"); err != nil {
			return err
		}
	}
	if !slices.Contains(types, "object") {
		return nil
	}
	if n["additionalProperties"] != false {
		return fmt.Errorf("%s: additionalProperties is not false", where(path))
	}
	props, _ := n["properties"].(map[string]any)
	req, _ := n["required"].([]any)
	for name, p := range props {
		if !slices.Contains(req, any(name)) {
			return fmt.Errorf("%s: not required", where(path+"."+name))
		}
		m, _ := p.(map[string]any)
		if m == nil {
			return errors.New(where(path+"."+name) + ": not a schema")
		}
		if err := checkStrict(m, path+"."+name); err != nil {
			return err
		}
	}
	return nil
}
