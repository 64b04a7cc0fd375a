package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
)

// The rules below are the ones of redocly's `recommended` ruleset that a
// client generator cares about, checked in Go so that they hold on every
// machine; TestOpenAPIRedoclyLint runs the real linter where CI installed it.

// operationVerbs are the verbs an operationId may start with: a generated
// client's method reads as verb+noun (listSpecSessions, getSpecSession).
var operationVerbs = []string{
	"accept", "add", "cancel", "complete", "create", "decide", "delete", "deploy", "diff", "edit",
	"end", "export", "follow", "generate", "get", "invoke", "link", "list", "meter", "publish",
	"receive", "remove", "rename", "replace", "resume", "revoke", "run", "scale", "search", "send",
	"set", "start", "stop", "test", "transcribe", "update", "verify",
}

var operationIDShape = regexp.MustCompile(`^([a-z]+)([A-Z][a-z0-9]*)+$`)

// pathParamNames returns the {name}s of a path template, in order.
func pathParamNames(template string) []string {
	var names []string
	for _, seg := range strings.Split(template, "/") {
		if name, ok := strings.CutPrefix(seg, "{"); ok && strings.HasSuffix(name, "}") {
			names = append(names, strings.TrimSuffix(name, "}"))
		}
	}
	return names
}

// pathParam finds the path parameter name of op under item, the
// operation's own winning over the path item's.
func pathParamOf(item *openapi3.PathItem, op *openapi3.Operation, name string) *openapi3.Parameter {
	if p := op.Parameters.GetByInAndName(openapi3.ParameterInPath, name); p != nil {
		return p
	}
	return item.Parameters.GetByInAndName(openapi3.ParameterInPath, name)
}

// excludes reports whether every operation of item declares the path
// parameter name with a schema that rules out the literal segment word.
func excludes(item *openapi3.PathItem, name, word string) bool {
	ops := item.Operations()
	if len(ops) == 0 {
		return false
	}
	for _, op := range ops {
		p := pathParamOf(item, op, name)
		if p == nil || p.Schema == nil || p.Schema.Value == nil {
			return false
		}
		not := p.Schema.Value.Not
		if not == nil || not.Value == nil || !slices.Contains(not.Value.Enum, any(word)) {
			return false
		}
	}
	return true
}

// pathAmbiguity says whether one URL could match both templates a and b,
// as redocly's no-ambiguous-paths sees it: as many segments and as many
// parameters, and equal literals wherever both have one. identical is the
// worse case of templates that differ only in their parameters' names
// (OpenAPI forbids it). resolved is true when, at some segment where one has
// a literal and the other a parameter, the parameter's schema excludes that
// literal (content_id is never "briefs"), so no URL matches both after all.
func pathAmbiguity(doc *openapi3.T, a, b string) (ambiguous, identical, resolved bool) {
	sa, sb := strings.Split(a, "/"), strings.Split(b, "/")
	if len(sa) != len(sb) || len(pathParamNames(a)) != len(pathParamNames(b)) {
		return false, false, false
	}
	isParam := func(s string) bool { return strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") }
	identical = true
	for i := range sa {
		pa, pb := isParam(sa[i]), isParam(sb[i])
		switch {
		case !pa && !pb && sa[i] != sb[i]:
			return false, false, false
		case pa && !pb:
			identical = false
			resolved = resolved || excludes(doc.Paths.Value(a), strings.Trim(sa[i], "{}"), sb[i])
		case !pa && pb:
			identical = false
			resolved = resolved || excludes(doc.Paths.Value(b), strings.Trim(sb[i], "{}"), sa[i])
		}
	}
	return true, identical, resolved
}

// TestOpenAPIForGenerators holds the document to what client generators
// and redocly's recommended rules need: a server, a unique camelCase
// verb+noun operationId on every operation, paths that resolve
// unambiguously, every path parameter declared, tags declared and
// described, a summary, a success and a 4xx answer on every operation,
// defined security schemes and no unused components.
func TestOpenAPIForGenerators(t *testing.T) {
	t.Parallel()
	doc := loadOpenAPI(t)

	if len(doc.Servers) == 0 {
		t.Error("openapi.json has no servers: a generated client has no base URL")
	} else if doc.Servers[0].URL != "/" {
		t.Errorf("the first server is %q, want the relative %q (the origin the document came from)", doc.Servers[0].URL, "/")
	}

	declared := map[string]bool{}
	for _, tag := range doc.Tags {
		if declared[tag.Name] {
			t.Errorf("tag %q is declared twice", tag.Name)
		}
		declared[tag.Name] = true
		if strings.TrimSpace(tag.Description) == "" {
			t.Errorf("tag %q has no description", tag.Name)
		}
	}
	used := map[string]bool{}
	schemes := doc.Components.SecuritySchemes
	checkSecurity := func(where string, reqs *openapi3.SecurityRequirements) {
		if reqs == nil {
			return
		}
		for _, req := range *reqs {
			for name := range req {
				if schemes[name] == nil {
					t.Errorf("%s: security scheme %q is not defined", where, name)
				}
			}
		}
	}
	checkSecurity("openapi.json", &doc.Security)

	ids := map[string]string{} // operationId → the operation's key
	templates := slices.Sorted(maps.Keys(doc.Paths.Map()))
	for _, template := range templates {
		item := doc.Paths.Value(template)
		if item.Ref != "" {
			t.Errorf("%s is a $ref path item: its operations would share operationIds", template)
		}
		names := pathParamNames(template)
		for _, p := range item.Parameters {
			if p.Value != nil && p.Value.In == openapi3.ParameterInPath && !slices.Contains(names, p.Value.Name) {
				t.Errorf("%s declares path parameter %q, which is not in the path", template, p.Value.Name)
			}
		}
		for method, op := range item.Operations() {
			key := method + " " + template
			switch id := op.OperationID; {
			case id == "":
				t.Errorf("%s has no operationId", key)
			case ids[id] != "":
				t.Errorf("%s and %s have the same operationId %q", ids[id], key, id)
			case !operationIDShape.MatchString(id):
				t.Errorf("%s: operationId %q is not camelCase verb+noun", key, id)
			case !slices.Contains(operationVerbs, operationIDShape.FindStringSubmatch(id)[1]):
				t.Errorf("%s: operationId %q does not start with a verb (%s)", key, id, strings.Join(operationVerbs, ", "))
			}
			if op.OperationID != "" && ids[op.OperationID] == "" {
				ids[op.OperationID] = key
			}
			if strings.TrimSpace(op.Summary) == "" {
				t.Errorf("%s has no summary", key)
			}
			if len(op.Tags) == 0 {
				t.Errorf("%s has no tag", key)
			}
			for _, tag := range op.Tags {
				used[tag] = true
				if !declared[tag] {
					t.Errorf("%s: tag %q is not declared in tags", key, tag)
				}
			}
			for _, name := range names {
				if pathParamOf(item, op, name) == nil {
					t.Errorf("%s: path parameter %q is not declared", key, name)
				}
			}
			for _, p := range op.Parameters {
				if p.Value != nil && p.Value.In == openapi3.ParameterInPath && !slices.Contains(names, p.Value.Name) {
					t.Errorf("%s declares path parameter %q, which is not in the path", key, p.Value.Name)
				}
			}
			success, clientError := false, false
			for code := range op.Responses.Map() {
				success = success || code[0] == '2' || code[0] == '3'
				clientError = clientError || code[0] == '4'
			}
			if !success {
				t.Errorf("%s documents no 2xx or 3xx answer", key)
			}
			if !clientError {
				t.Errorf("%s documents no 4xx answer", key)
			}
			checkSecurity(key, op.Security)
		}
	}
	if len(ids) < 100 {
		t.Errorf("only %d operationIds: did the document lose operations?", len(ids))
	}
	for _, tag := range doc.Tags {
		if !used[tag.Name] {
			t.Errorf("tag %q is declared but no operation has it", tag.Name)
		}
	}

	for i, a := range templates {
		for _, b := range templates[i+1:] {
			ambiguous, identical, resolved := pathAmbiguity(doc, a, b)
			switch {
			case identical:
				t.Errorf("%s and %s differ only in their parameters' names", a, b)
			case ambiguous && !resolved:
				t.Errorf("%s and %s can match the same URL, and no parameter's schema excludes the other's literal", a, b)
			}
		}
	}

	// Every component is referenced: by a $ref, or (the events of a stream)
	// by a media type's x-event-schema.
	raw := OpenAPI()
	unused := func(kind string, names []string) {
		for _, name := range names {
			if !bytes.Contains(raw, []byte(`"#/components/`+kind+`/`+name+`"`)) {
				t.Errorf("components.%s.%s is never referenced", kind, name)
			}
		}
	}
	unused("schemas", slices.Collect(maps.Keys(doc.Components.Schemas)))
	unused("parameters", slices.Collect(maps.Keys(doc.Components.Parameters)))
	unused("responses", slices.Collect(maps.Keys(doc.Components.Responses)))
	unused("headers", slices.Collect(maps.Keys(doc.Components.Headers)))
}

// redoclyProblem is one finding of `redocly lint --format=json`.
type redoclyProblem struct {
	RuleID   string `json:"ruleId"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
	Location []struct {
		Pointer string `json:"pointer"`
	} `json:"location"`
}

func (p redoclyProblem) String() string {
	where := ""
	if len(p.Location) > 0 {
		where = " at " + p.Location[0].Pointer
	}
	return fmt.Sprintf("%s %s: %s%s", p.Severity, p.RuleID, p.Message, where)
}

var ambiguousPair = regexp.MustCompile("`([^`]+)` and `([^`]+)`")

// knownWarning reports whether a warning of redocly's is one the linter
// cannot see past, and why the document is right anyway.
func knownWarning(doc *openapi3.T, p redoclyProblem) bool {
	switch p.RuleID {
	case "no-ambiguous-paths":
		// /content/briefs/{brief_id} and /content/{content_id}/events are
		// both part of the API; content_id's schema excludes "briefs", which the
		// linter does not read. TestOpenAPIForGenerators checks each pair.
		m := ambiguousPair.FindStringSubmatch(p.Message)
		if m == nil {
			return false
		}
		ambiguous, identical, resolved := pathAmbiguity(doc, m[1], m[2])
		return ambiguous && !identical && resolved
	case "no-unused-components":
		// A stream's event schema is named by its media type's
		// x-event-schema, which the linter does not follow.
		if len(p.Location) == 0 {
			return false
		}
		name, ok := strings.CutPrefix(p.Location[0].Pointer, "#/components/schemas/")
		return ok && bytes.Contains(OpenAPI(), []byte(`"x-event-schema": {"$ref": "#/components/schemas/`+name+`"}`))
	}
	return false
}

// TestOpenAPIRedoclyLint runs `redocly lint --extends=recommended` on the
// served document and wants no error and no warning but the known ones. The
// test downloads nothing: .ci/run installs the pinned @redocly/cli into a
// cache and sets DEVPILOT_REDOCLY to its executable.
func TestOpenAPIRedoclyLint(t *testing.T) {
	t.Parallel()
	bin := os.Getenv("DEVPILOT_REDOCLY")
	if bin == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("DEVPILOT_REDOCLY is unset in CI: .ci/run should install @redocly/cli and set it")
		}
		t.Skip("DEVPILOT_REDOCLY is unset: .ci/run installs @redocly/cli and sets it to its redocly executable")
	}
	doc := loadOpenAPI(t)
	dir := t.TempDir() // no redocly.yaml of the tree's is picked up
	if err := os.WriteFile(filepath.Join(dir, "openapi.json"), OpenAPI(), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "lint", "--extends=recommended", "--format=json", "--max-problems=100000", "openapi.json")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), // no telemetry, no update check: the test stays offline
		"REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true", "REDOCLY_SUPPRESS_NOTIFICATIONS=true")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run() // exits 1 when there are errors: the report says which
	var report struct {
		Totals struct {
			Errors   int `json:"errors"`
			Warnings int `json:"warnings"`
		} `json:"totals"`
		Problems []redoclyProblem `json:"problems"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		t.Fatalf("%s lint: %v; its output is not a JSON report (%v)\nstdout: %.2000s\nstderr: %.2000s", bin, runErr, err, stdout.String(), stderr.String())
	}
	known := 0
	for _, p := range report.Problems {
		switch {
		case p.Severity == "error":
			t.Errorf("redocly: %s", p)
		case knownWarning(doc, p):
			known++
			t.Logf("redocly, known: %s", p)
		default:
			t.Errorf("redocly: %s", p)
		}
	}
	if report.Totals.Errors != 0 {
		t.Errorf("redocly lint --extends=recommended: %d errors, want 0", report.Totals.Errors)
	}
	t.Logf("redocly lint --extends=recommended: %d errors, %d warnings (%d known)", report.Totals.Errors, report.Totals.Warnings, known)
}
