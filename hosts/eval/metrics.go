package eval

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/devpilot/devpilot/hosts/eval/evalcorpus"
)

// The metrics are pure functions of the artifacts' structured data (the
// JSON the API returns as an artifact's "data"), the case and, for the
// assistant, the transcript of a task: the same documents always give the
// same numbers, whatever model wrote them.

// The parts of the stages' data the metrics read.
type (
	prdData struct {
		Functional []struct {
			ID string `json:"id"`
		} `json:"functional_requirements"`
	}
	storiesData struct {
		Stories []storyData `json:"stories"`
	}
	storyData struct {
		ID             string   `json:"id"`
		RequirementIDs []string `json:"requirement_ids"`
	}
	prpsData struct {
		PRPs []prpData `json:"prps"`
	}
	prpData struct {
		ID      string `json:"id"`
		StoryID string `json:"story_id"`
		Context struct {
			References []struct {
				Kind   string `json:"kind"`
				Target string `json:"target"`
			} `json:"references"`
		} `json:"context"`
		Tasks []struct {
			ID         string `json:"id"`
			Action     string `json:"action"`
			Path       string `json:"path"`
			Validation string `json:"validation"`
		} `json:"tasks"`
		Validation struct {
			Commands []struct {
				Command string `json:"command"`
			} `json:"commands"`
		} `json:"validation"`
	}
)

// RequirementCoverage is the share of the PRD's functional requirement ids
// that reach a story (the story lists the id in requirement_ids) and, from
// one of those stories, a PRP (the PRP's story_id is that story). It is nil
// when the PRD has no requirement or a document is missing or unreadable.
func RequirementCoverage(prd, stories, prps json.RawMessage) *float64 {
	var p prdData
	var s storiesData
	var r prpsData
	if json.Unmarshal(prd, &p) != nil || json.Unmarshal(stories, &s) != nil || json.Unmarshal(prps, &r) != nil || len(p.Functional) == 0 {
		return nil
	}
	withPRP := map[string]bool{}
	for _, x := range r.PRPs {
		withPRP[strings.TrimSpace(x.StoryID)] = true
	}
	covered := 0
	for _, req := range p.Functional {
		if slices.ContainsFunc(s.Stories, func(st storyData) bool {
			return withPRP[strings.TrimSpace(st.ID)] && slices.Contains(st.RequirementIDs, req.ID)
		}) {
			covered++
		}
	}
	return share(covered, len(p.Functional))
}

// FactCoverage is the share of the case's facts found (evalcorpus.Fact.FoundIn)
// in a document's text: every string value of the data JSON, keys left
// out. It is nil for a case without facts or a missing document.
func FactCoverage(c evalcorpus.Case, data json.RawMessage) *float64 {
	if len(c.Facts) == 0 || len(data) == 0 {
		return nil
	}
	text, ok := dataText(data)
	if !ok {
		return nil
	}
	found := 0
	for _, f := range c.Facts {
		if f.FoundIn(text) {
			found++
		}
	}
	return share(found, len(c.Facts))
}

// MissingFacts lists the ids of the case's facts a document does not carry.
func MissingFacts(c evalcorpus.Case, data json.RawMessage) []string {
	text, _ := dataText(data)
	var out []string
	for _, f := range c.Facts {
		if !f.FoundIn(text) {
			out = append(out, f.ID)
		}
	}
	return out
}

// dataText joins a JSON document's string values, in a fixed order (object
// keys sorted), one per line.
func dataText(data json.RawMessage) (string, bool) {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return "", false
	}
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			b.WriteString(x)
			b.WriteByte('\n')
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(x[k])
			}
		case float64:
			fmt.Fprintf(&b, "%v\n", x)
		}
	}
	walk(v)
	return b.String(), true
}

// Grounding is what the grounding metric found: the share of the checked
// paths and commands that are grounded, and what was not.
type Grounding struct {
	// Share is nil when the case has no repository or the PRPs name no
	// path and no command.
	Share   *float64 `json:"share"`
	Checked int      `json:"checked"`
	Misses  []string `json:"misses,omitempty"`
}

// GroundingOf checks the PRPs against the case's repository:
//   - a file reference must name a file of the repository or one a task of
//     an earlier PRP creates;
//   - a task that modifies a path must name a file of the repository or one
//     an earlier task creates (an earlier task of the same PRP, or any task
//     of an earlier PRP);
//   - a task that creates a path must not name a file of the repository nor
//     one an earlier task creates;
//   - a validation command (the PRP's and each task's) must be one the
//     repository defines (RepoCommands), or run the same program on a
//     narrower target (`go test ./internal/claims/...` where the Makefile
//     runs `go test ./...`); for make, npm, yarn and pnpm the target or
//     script must be one the repository defines.
//
// Share is nil without a repository.
func GroundingOf(repo *evalcorpus.Repo, prps json.RawMessage) Grounding {
	if repo == nil {
		return Grounding{}
	}
	var d prpsData
	if json.Unmarshal(prps, &d) != nil {
		return Grounding{}
	}
	files := map[string]bool{}
	for p := range repo.Files {
		files[cleanPath(p)] = true
	}
	cmds := RepoCommands(repo.Files)
	var g Grounding
	ok := 0
	check := func(grounded bool, miss string) {
		g.Checked++
		if grounded {
			ok++
		} else {
			g.Misses = append(g.Misses, miss)
		}
	}
	createdBefore := map[string]bool{} // by earlier PRPs
	for _, p := range d.PRPs {
		for _, ref := range p.Context.References {
			if ref.Kind != "file" {
				continue
			}
			t := cleanPath(ref.Target)
			check(files[t] || createdBefore[t], fmt.Sprintf("%s references %s, which neither the repository has nor an earlier PRP creates", p.ID, t))
		}
		created := map[string]bool{} // by earlier tasks of this PRP
		for _, t := range p.Tasks {
			pth := cleanPath(t.Path)
			switch t.Action {
			case "modify":
				check(files[pth] || createdBefore[pth] || created[pth], fmt.Sprintf("%s task %s modifies %s, which neither the repository has nor an earlier task creates", p.ID, t.ID, pth))
			case "create":
				check(!files[pth] && !createdBefore[pth] && !created[pth], fmt.Sprintf("%s task %s creates %s, which exists already", p.ID, t.ID, pth))
				created[pth] = true
			}
			if v := strings.TrimSpace(t.Validation); v != "" {
				check(commandDefined(v, cmds), fmt.Sprintf("%s task %s validation %q is not a command the repository defines", p.ID, t.ID, v))
			}
		}
		for _, c := range p.Validation.Commands {
			if v := strings.TrimSpace(c.Command); v != "" {
				check(commandDefined(v, cmds), fmt.Sprintf("%s validation command %q is not a command the repository defines", p.ID, v))
			}
		}
		for pth := range created {
			createdBefore[pth] = true
		}
	}
	if g.Checked > 0 {
		g.Share = share(ok, g.Checked)
	}
	return g
}

func cleanPath(p string) string {
	p = strings.TrimPrefix(strings.TrimSpace(p), "./")
	if p == "" {
		return ""
	}
	return path.Clean(p)
}

var (
	makeTarget = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9_./-]*)\s*:([^=]|$)`)
	runLine    = regexp.MustCompile(`^\s*(?:-\s+)?run:\s*(.+)$`)
	workflow   = regexp.MustCompile(`^\.github/workflows/[^/]+\.ya?ml$`)
)

// RepoCommands lists the commands a repository defines: "make T" for each
// Makefile target and the commands of its recipes, "npm run S" (and "npm
// test", "yarn S", "pnpm S") for each package.json script, and the
// single-line run steps of its CI workflows. Sorted, without duplicates.
func RepoCommands(files map[string]string) []string {
	set := map[string]bool{}
	add := func(c string) {
		if c = strings.Join(strings.Fields(c), " "); c != "" {
			set[c] = true
		}
	}
	for _, l := range strings.Split(files["Makefile"], "\n") {
		if m := makeTarget.FindStringSubmatch(l); m != nil && !strings.HasPrefix(m[1], ".") && !strings.Contains(m[1], "%") {
			add("make " + m[1])
		} else if strings.HasPrefix(l, "\t") {
			add(strings.TrimLeft(strings.TrimSpace(l), "@-"))
		}
	}
	var pkg struct {
		Scripts map[string]string `json:"scripts"`
	}
	if json.Unmarshal([]byte(files["package.json"]), &pkg) == nil {
		for s := range pkg.Scripts {
			add("npm run " + s)
			add("yarn " + s)
			add("pnpm " + s)
			add("pnpm run " + s)
			if s == "test" || s == "start" {
				add("npm " + s)
			}
		}
	}
	for p, content := range files {
		if !workflow.MatchString(p) {
			continue
		}
		for _, l := range strings.Split(content, "\n") {
			if m := runLine.FindStringSubmatch(l); m != nil {
				if r := strings.Trim(strings.TrimSpace(m[1]), `"'`); r != "|" && r != ">" && r != "|-" && r != ">-" {
					add(r)
				}
			}
		}
	}
	out := make([]string, 0, len(set))
	for c := range set {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// commandDefined reports whether cmd is one of the defined commands, or
// runs the same program (and for make and the package managers, the same
// target or script) with other arguments.
func commandDefined(cmd string, defined []string) bool {
	words := commandWords(cmd)
	if len(words) == 0 {
		return false
	}
	for _, d := range defined {
		dw := commandWords(d)
		if len(dw) == 0 || dw[0] != words[0] {
			continue
		}
		switch words[0] {
		case "make", "npm", "yarn", "pnpm":
			if scriptOf(words) != "" && scriptOf(words) == scriptOf(dw) {
				return true
			}
		default:
			// The same program and subcommand (go test, cargo build…).
			if len(dw) < 2 || len(words) >= 2 && words[1] == dw[1] {
				return true
			}
		}
	}
	return false
}

// commandWords are a command line's words after environment assignments.
func commandWords(cmd string) []string {
	f := strings.Fields(cmd)
	for len(f) > 0 && strings.Contains(f[0], "=") {
		f = f[1:]
	}
	return f
}

// scriptOf is the target (make) or script (npm run S, yarn S…) a command runs.
func scriptOf(words []string) string {
	for _, w := range words[1:] {
		if w == "run" || w == "run-script" || strings.HasPrefix(w, "-") {
			continue
		}
		return w
	}
	return ""
}

// Conflicts are the cross-PRP conflicts of a PRPs document: two PRPs that
// create one path (each PRP after the first counts once), and a task that
// modifies a path a later PRP creates.
func Conflicts(prps json.RawMessage) (int, []string) {
	var d prpsData
	if json.Unmarshal(prps, &d) != nil {
		return 0, nil
	}
	var out []string
	creators := map[string][]string{}
	createdAt := map[string][]int{}
	for i, p := range d.PRPs {
		seen := map[string]bool{}
		for _, t := range p.Tasks {
			if pth := cleanPath(t.Path); t.Action == "create" && pth != "" && !seen[pth] {
				seen[pth] = true
				creators[pth] = append(creators[pth], p.ID)
				createdAt[pth] = append(createdAt[pth], i)
			}
		}
	}
	paths := make([]string, 0, len(creators))
	for p := range creators {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if c := creators[p]; len(c) > 1 {
			for _, id := range c[1:] {
				out = append(out, fmt.Sprintf("%s and %s both create %s", c[0], id, p))
			}
		}
	}
	for i, p := range d.PRPs {
		for _, t := range p.Tasks {
			pth := cleanPath(t.Path)
			if t.Action != "modify" {
				continue
			}
			for _, j := range createdAt[pth] {
				if j > i {
					out = append(out, fmt.Sprintf("%s task %s modifies %s, which the later %s creates", p.ID, t.ID, pth, d.PRPs[j].ID))
					break
				}
			}
		}
	}
	return len(out), out
}

// Generation is what an artifact says of how it was generated (its
// "generation" object).
type Generation struct {
	Calls            *int           `json:"calls"`
	Batches          *int           `json:"batches"`
	FirstTryValid    *int           `json:"first_try_valid"`
	InvalidAnswers   *int           `json:"invalid_answers"`
	RepairTurns      *int           `json:"repair_turns"`
	PromptTokens     *int64         `json:"prompt_tokens"`
	CompletionTokens *int64         `json:"completion_tokens"`
	DurationMS       *int64         `json:"duration_ms"`
	FindingsByKind   map[string]int `json:"findings_by_kind"`
}

// FirstTryValidShare is the share of the stage's asks (one in single-call
// mode, one per epic or story in per-call mode) whose first answer was
// schema-valid. Nil when the artifact does not say (made before devpilot
// counted it).
func (g *Generation) FirstTryValidShare() *float64 {
	if g == nil || g.FirstTryValid == nil || g.Batches == nil || *g.Batches == 0 {
		return nil
	}
	return share(*g.FirstTryValid, *g.Batches)
}

// FindingsLeft is how many findings an artifact kept after repair, and by
// kind when the artifact's generation says (nil otherwise): the sum of
// findings_by_kind when present, else the number of its checks.
func FindingsLeft(checks []string, g *Generation) (int, map[string]int) {
	if g == nil || g.FindingsByKind == nil {
		return len(checks), nil
	}
	n := 0
	for _, v := range g.FindingsByKind {
		n += v
	}
	return n, g.FindingsByKind
}

// BannedWordsIn lists the brand's banned words a draft's text contains,
// whole words, ignoring case.
func BannedWordsIn(text string, banned []string) []string {
	var out []string
	lower := strings.ToLower(text)
	for _, w := range banned {
		w = strings.ToLower(strings.TrimSpace(w))
		if w == "" {
			continue
		}
		if regexp.MustCompile(`(^|[^\p{L}\p{N}])` + regexp.QuoteMeta(w) + `($|[^\p{L}\p{N}])`).MatchString(lower) {
			out = append(out, w)
		}
	}
	return out
}

// ToolSpec is what the assistant metric needs of a tool: its effect (read
// or write) and the JSON Schema of its arguments.
type ToolSpec struct {
	Effect string          `json:"effect"`
	Schema json.RawMessage `json:"schema"`
}

// Transcript is what happened in one assistant task: the user's turns and
// every tool call the model made, in order, with what came back.
type Transcript struct {
	UserTurns []string   `json:"user_turns"`
	Calls     []ToolCall `json:"calls"`
	// Replies are the assistant's texts, one per turn.
	Replies []string `json:"replies,omitempty"`
}

// ToolCall is one tool call of a transcript.
type ToolCall struct {
	// Turn is the index of the user turn the call answers.
	Turn      int             `json:"turn"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	// Result is the tool's result (the tool_result event's, or the confirm
	// response's), null when none came.
	Result json.RawMessage `json:"result,omitempty"`
	// Confirmation says a confirmation_required event asked for approval.
	Confirmation bool `json:"confirmation"`
}

// Task is one scripted assistant task (embedded tasks.json).
type Task struct {
	ID    string     `json:"id"`
	Title string     `json:"title"`
	Turns []TaskTurn `json:"turns"`
}

// TaskTurn is one user turn of a task and what is expected of the model.
type TaskTurn struct {
	Say string `json:"say"`
	// ExpectTools must each be called in this turn.
	ExpectTools []string `json:"expect_tools"`
	// ExpectApproval says a write (and so a confirmation) is expected.
	ExpectApproval bool `json:"expect_approval"`
	// Decision is what the harness answers a confirmation: approve or
	// reject.
	Decision string `json:"decision"`
	// ExpectRefusal says the model must decline: no write tool call.
	ExpectRefusal bool `json:"expect_refusal"`
}

// TaskResult is the assistant metric of one task.
type TaskResult struct {
	ID          string   `json:"id"`
	RightTool   bool     `json:"right_tool"`
	ValidArgs   bool     `json:"valid_arguments"`
	Approvals   bool     `json:"approval_for_every_write"`
	NoInvented  bool     `json:"no_invented_id"`
	Refusals    bool     `json:"refusals"`
	Success     bool     `json:"success"`
	Problems    []string `json:"problems,omitempty"`
	ToolCalls   int      `json:"tool_calls"`
	DurationMS  int64    `json:"duration_ms"`
	TokensTotal *int64   `json:"tokens,omitempty"`
}

var idValue = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// ScoreTask judges a task's transcript:
//   - right tool: every expected tool was called in its turn;
//   - valid arguments: every call's arguments are valid against the tool's
//     schema (an unknown tool fails);
//   - approval for every write: every call of a write tool asked for a
//     confirmation, and each turn that expected one got one;
//   - no invented id: every argument whose key ends in "id" (and every
//     UUID value) appears in the user's turns so far or in an earlier tool
//     result;
//   - refusals: a turn that expected a refusal made no write call.
//
// Success is all five.
func ScoreTask(task Task, tr Transcript, tools map[string]ToolSpec) TaskResult {
	res := TaskResult{ID: task.ID, RightTool: true, ValidArgs: true, Approvals: true, NoInvented: true, Refusals: true, ToolCalls: len(tr.Calls)}
	fail := func(flag *bool, format string, args ...any) {
		*flag = false
		res.Problems = append(res.Problems, fmt.Sprintf(format, args...))
	}
	for i, turn := range task.Turns {
		var calls []ToolCall
		for _, c := range tr.Calls {
			if c.Turn == i {
				calls = append(calls, c)
			}
		}
		for _, want := range turn.ExpectTools {
			if !slices.ContainsFunc(calls, func(c ToolCall) bool { return c.Name == want }) {
				fail(&res.RightTool, "turn %d: %s was not called", i+1, want)
			}
		}
		confirmed := slices.ContainsFunc(calls, func(c ToolCall) bool { return c.Confirmation })
		if turn.ExpectApproval && !confirmed {
			fail(&res.Approvals, "turn %d: no approval was asked for", i+1)
		}
		if turn.ExpectRefusal {
			for _, c := range calls {
				if tools[c.Name].Effect == "write" || c.Confirmation {
					fail(&res.Refusals, "turn %d: expected a refusal, got a call of %s", i+1, c.Name)
				}
			}
		}
	}
	compiled := map[string]*jsonschema.Schema{}
	for ci, c := range tr.Calls {
		spec, ok := tools[c.Name]
		if !ok {
			fail(&res.ValidArgs, "call %d: %s is not a tool", ci+1, c.Name)
		} else if problem := validateArgs(compiled, c.Name, spec.Schema, c.Arguments); problem != "" {
			fail(&res.ValidArgs, "call %d: %s: %s", ci+1, c.Name, problem)
		}
		if ok && spec.Effect == "write" && !c.Confirmation {
			fail(&res.Approvals, "call %d: %s writes without asking for approval", ci+1, c.Name)
		}
		known := knownText(tr, c.Turn, ci)
		for _, id := range idsIn(c.Arguments) {
			if !strings.Contains(known, id) {
				fail(&res.NoInvented, "call %d: %s names %q, which no user turn or earlier result gave", ci+1, c.Name, id)
			}
		}
	}
	res.Success = res.RightTool && res.ValidArgs && res.Approvals && res.NoInvented && res.Refusals
	return res
}

// knownText is what the model had been told before call ci: the user's
// turns up to the call's, and the results of the earlier calls.
func knownText(tr Transcript, turn, ci int) string {
	var b strings.Builder
	for i, u := range tr.UserTurns {
		if i <= turn {
			b.WriteString(u)
			b.WriteByte('\n')
		}
	}
	for _, c := range tr.Calls[:ci] {
		b.Write(c.Result)
		b.WriteByte('\n')
	}
	return b.String()
}

// idsIn lists the id-like argument values: strings under keys ending in
// "id" (account_id, session_id…) and any UUID, at any depth.
func idsIn(args json.RawMessage) []string {
	var v any
	if json.Unmarshal(args, &v) != nil {
		return nil
	}
	var out []string
	var walk func(key string, v any)
	walk = func(key string, v any) {
		switch x := v.(type) {
		case string:
			k := strings.ToLower(key)
			if x != "" && (k == "id" || strings.HasSuffix(k, "_id") || idValue.MatchString(x)) {
				out = append(out, x)
			}
		case []any:
			for _, e := range x {
				walk(key, e)
			}
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				walk(k, x[k])
			}
		}
	}
	walk("", v)
	return out
}

// validateArgs checks arguments against a tool's schema, compiling each
// schema once; "" when they are valid.
func validateArgs(cache map[string]*jsonschema.Schema, name string, schema, args json.RawMessage) string {
	sch, ok := cache[name]
	if !ok {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(schema)))
		if err != nil {
			return "the tool's schema does not parse: " + err.Error()
		}
		c := jsonschema.NewCompiler()
		if err := c.AddResource("tool.json", doc); err != nil {
			return "the tool's schema does not compile: " + err.Error()
		}
		if sch, err = c.Compile("tool.json"); err != nil {
			return "the tool's schema does not compile: " + err.Error()
		}
		cache[name] = sch
	}
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(string(args)))
	if err != nil {
		return "the arguments are not JSON"
	}
	if err := sch.Validate(inst); err != nil {
		return strings.Join(strings.Fields(err.Error()), " ")
	}
	return ""
}

// share is n/of as a pointer; nil when of is 0.
func share(n, of int) *float64 {
	if of == 0 {
		return nil
	}
	v := float64(n) / float64(of)
	return &v
}
