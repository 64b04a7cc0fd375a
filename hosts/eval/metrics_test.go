package eval

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/hosts/eval/evalcorpus"
)

func ptr(v float64) *float64 { return &v }

func eqShare(a, b *float64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	d := *a - *b
	return d < 1e-9 && d > -1e-9
}

func show(v *float64) string {
	if v == nil {
		return "null"
	}
	b, _ := json.Marshal(*v)
	return string(b)
}

func TestRequirementCoverage(t *testing.T) {
	t.Parallel()
	prd := `{"functional_requirements":[{"id":"REQ-1"},{"id":"REQ-2"},{"id":"REQ-3"},{"id":"REQ-4"}]}`
	stories := `{"stories":[{"id":"ST-1.1","requirement_ids":["REQ-1","REQ-2"]},{"id":"ST-1.2","requirement_ids":["REQ-3"]}]}`
	tests := []struct {
		name, prd, stories, prps string
		want                     *float64
	}{
		// REQ-1, REQ-2 reach ST-1.1 and its PRP; REQ-3 reaches ST-1.2, which has no PRP; REQ-4 no story.
		{"half", prd, stories, `{"prps":[{"id":"PRP-1.1","story_id":"ST-1.1"}]}`, ptr(0.5)},
		{"all but the storyless", prd, stories, `{"prps":[{"story_id":"ST-1.1"},{"story_id":"ST-1.2"}]}`, ptr(0.75)},
		{"no PRPs", prd, stories, `{"prps":[]}`, ptr(0)},
		{"no requirements", `{"functional_requirements":[]}`, stories, `{"prps":[]}`, nil},
		{"unreadable", `not json`, stories, `{"prps":[]}`, nil},
	}
	for _, tt := range tests {
		if got := RequirementCoverage(json.RawMessage(tt.prd), json.RawMessage(tt.stories), json.RawMessage(tt.prps)); !eqShare(got, tt.want) {
			t.Errorf("%s: RequirementCoverage = %s, want %s", tt.name, show(got), show(tt.want))
		}
	}
}

func TestFactCoverage(t *testing.T) {
	t.Parallel()
	c := evalcorpus.Case{Facts: []evalcorpus.Fact{
		{ID: "F1", Terms: []string{"receipt", "photo"}},
		{ID: "F2", Terms: []string{"seven years|7 years"}},
		{ID: "F3", Terms: []string{"500", "second approver"}},
		{ID: "F4", Terms: []string{"payroll"}},
	}}
	tests := []struct {
		name, data string
		want       *float64
		missing    []string
	}{
		{"values at any depth, across lines", `{"a":"Attach a PHOTO of the\nreceipt","b":[{"c":"kept 7 years"}],"n":500,"d":"needs a second approver"}`, ptr(0.75), []string{"F4"}},
		{"keys do not count", `{"payroll":"x"}`, ptr(0), []string{"F1", "F2", "F3", "F4"}},
		{"missing document", ``, nil, nil},
	}
	for _, tt := range tests {
		if got := FactCoverage(c, json.RawMessage(tt.data)); !eqShare(got, tt.want) {
			t.Errorf("%s: FactCoverage = %s, want %s", tt.name, show(got), show(tt.want))
		}
		if tt.data != "" {
			if got := MissingFacts(c, json.RawMessage(tt.data)); !reflect.DeepEqual(got, tt.missing) {
				t.Errorf("%s: MissingFacts = %v, want %v", tt.name, got, tt.missing)
			}
		}
	}
	if FactCoverage(evalcorpus.Case{}, json.RawMessage(`{}`)) != nil {
		t.Error("a case without facts has a fact coverage")
	}
}

var testRepo = &evalcorpus.Repo{Files: map[string]string{
	"go.mod":                   "module x\n",
	"Makefile":                 ".PHONY: test lint\n\ntest:\n\tgo test ./...\n\nlint:\n\tgo vet ./...\n",
	"internal/claims/claim.go": "package claims\n",
	"package.json":             `{"scripts":{"build":"tsc","test":"vitest"}}`,
	".github/workflows/ci.yml": "jobs:\n  t:\n    steps:\n      - run: make lint\n      - run: npm ci\n",
}}

func TestRepoCommands(t *testing.T) {
	t.Parallel()
	got := RepoCommands(testRepo.Files)
	for _, want := range []string{"make test", "make lint", "go test ./...", "go vet ./...", "npm run build", "npm test", "yarn test", "npm ci"} {
		if !strings.Contains("\n"+strings.Join(got, "\n")+"\n", "\n"+want+"\n") {
			t.Errorf("RepoCommands = %q, want %q among them", got, want)
		}
	}
}

func TestGrounding(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		prps   string
		repo   *evalcorpus.Repo
		want   *float64
		misses int
	}{
		{"everything grounded", `{"prps":[
			{"id":"PRP-1","context":{"references":[{"kind":"file","target":"internal/claims/claim.go"},{"kind":"url","target":"https://x"}]},
			 "tasks":[{"id":"T1","action":"create","path":"internal/claims/store.go","validation":"go test ./internal/claims/..."},
			          {"id":"T2","action":"modify","path":"./internal/claims/store.go"},
			          {"id":"T3","action":"modify","path":"internal/claims/claim.go","validation":"make test"}],
			 "validation":{"commands":[{"command":"make lint"},{"command":"npm run build"}]}},
			{"id":"PRP-2","context":{"references":[{"kind":"file","target":"internal/claims/store.go"}]},
			 "tasks":[{"id":"T1","action":"modify","path":"internal/claims/store.go"}]}]}`, testRepo, ptr(1), 0},
		{"invented paths and commands", `{"prps":[
			{"id":"PRP-1","context":{"references":[{"kind":"file","target":"internal/nowhere.go"},{"kind":"file","target":"internal/later.go"}]},
			 "tasks":[{"id":"T1","action":"modify","path":"internal/later.go"},
			          {"id":"T2","action":"create","path":"internal/later.go"},
			          {"id":"T3","action":"create","path":"go.mod"}],
			 "validation":{"commands":[{"command":"make e2e"},{"command":"pytest"},{"command":"go test ./..."}]}}]}`, testRepo, ptr(2.0 / 8), 6},
		{"no repository", `{"prps":[{"id":"PRP-1","tasks":[{"action":"modify","path":"x"}]}]}`, nil, nil, 0},
	}
	for _, tt := range tests {
		g := GroundingOf(tt.repo, json.RawMessage(tt.prps))
		if !eqShare(g.Share, tt.want) || len(g.Misses) != tt.misses {
			t.Errorf("%s: Grounding = %s with misses %q, want %s with %d", tt.name, show(g.Share), g.Misses, show(tt.want), tt.misses)
		}
	}
}

func TestConflicts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, prps string
		want       int
	}{
		{"none", `{"prps":[{"id":"PRP-1","tasks":[{"action":"create","path":"a.go"},{"action":"modify","path":"a.go"}]},{"id":"PRP-2","tasks":[{"action":"modify","path":"a.go"}]}]}`, 0},
		{"two create one path", `{"prps":[{"id":"PRP-1","tasks":[{"action":"create","path":"a.go"}]},{"id":"PRP-2","tasks":[{"action":"create","path":"./a.go"}]},{"id":"PRP-3","tasks":[{"action":"create","path":"a.go"}]}]}`, 2},
		{"modify before a later create", `{"prps":[{"id":"PRP-1","tasks":[{"id":"T1","action":"modify","path":"b.go"}]},{"id":"PRP-2","tasks":[{"action":"create","path":"b.go"}]}]}`, 1},
	}
	for _, tt := range tests {
		if n, list := Conflicts(json.RawMessage(tt.prps)); n != tt.want || len(list) != n {
			t.Errorf("%s: Conflicts = %d %q, want %d", tt.name, n, list, tt.want)
		}
	}
}

func TestGenerationMetrics(t *testing.T) {
	t.Parallel()
	decode := func(s string) *Generation {
		var g struct {
			Generation *Generation `json:"generation"`
		}
		if err := json.Unmarshal([]byte(s), &g); err != nil {
			t.Fatal(err)
		}
		return g.Generation
	}
	tests := []struct {
		doc       string
		checks    []string
		firstTry  *float64
		findings  int
		byKindNil bool
	}{
		// Four asks (one per story), three valid at the first call; seven
		// calls with the retry and the repair turns.
		{`{"generation":{"calls":7,"batches":4,"first_try_valid":3,"repair_turns":1,"findings_by_kind":{"uncovered":2,"dependency":1}}}`, []string{"x"}, ptr(0.75), 3, false},
		{`{"generation":{"calls":2,"batches":1,"first_try_valid":1}}`, []string{"x", "y"}, ptr(1), 2, true},
		{`{"generation":{"calls":2,"batches":1,"first_try_valid":0}}`, nil, ptr(0), 0, true},
		// An artifact made before the counts: nothing to say.
		{`{"generation":{"calls":0,"batches":0,"first_try_valid":0}}`, nil, nil, 0, true},
		{`{}`, []string{"a", "b", "c"}, nil, 3, true},
	}
	for _, tt := range tests {
		g := decode(tt.doc)
		if got := g.FirstTryValidShare(); !eqShare(got, tt.firstTry) {
			t.Errorf("%s: first try = %s, want %s", tt.doc, show(got), show(tt.firstTry))
		}
		n, byKind := FindingsLeft(tt.checks, g)
		if n != tt.findings || (byKind == nil) != tt.byKindNil {
			t.Errorf("%s: findings = %d %v, want %d (by kind nil: %v)", tt.doc, n, byKind, tt.findings, tt.byKindNil)
		}
	}
}

func TestBannedWordsIn(t *testing.T) {
	t.Parallel()
	got := BannedWordsIn("A Synergy of leverage; leveraged gains.", []string{"synergy", "leverage", "cheap", ""})
	if !reflect.DeepEqual(got, []string{"synergy", "leverage"}) {
		t.Errorf("BannedWordsIn = %q", got)
	}
}

func TestScoreTask(t *testing.T) {
	t.Parallel()
	tools := map[string]ToolSpec{
		"list_cloud_accounts": {Effect: "read", Schema: json.RawMessage(`{"type":"object","additionalProperties":false}`)},
		"scale_service": {Effect: "write", Schema: json.RawMessage(`{"type":"object","required":["account_id","service","desired_count"],
			"properties":{"account_id":{"type":"string"},"service":{"type":"string"},"desired_count":{"type":"integer","minimum":0}},"additionalProperties":false}`)},
	}
	const acct = "0193a7c2-0000-7000-8000-000000000001"
	scale := Task{ID: "scale", Turns: []TaskTurn{{Say: "scale checkout to 3", ExpectTools: []string{"scale_service"}, ExpectApproval: true, Decision: "approve"}}}
	good := Transcript{UserTurns: []string{"scale checkout to 3"}, Calls: []ToolCall{
		{Turn: 0, Name: "list_cloud_accounts", Arguments: json.RawMessage(`{}`), Result: json.RawMessage(`[{"id":"` + acct + `"}]`)},
		{Turn: 0, Name: "scale_service", Arguments: json.RawMessage(`{"account_id":"` + acct + `","service":"checkout","desired_count":3}`), Confirmation: true},
	}}
	refuse := Task{ID: "refuse", Turns: []TaskTurn{{Say: "scale checkout to 5000", ExpectRefusal: true}}}
	tests := []struct {
		name  string
		task  Task
		tr    Transcript
		check func(TaskResult) bool
	}{
		{"success", scale, good, func(r TaskResult) bool { return r.Success && len(r.Problems) == 0 }},
		{"wrong tool", scale, Transcript{UserTurns: good.UserTurns, Calls: good.Calls[:1]}, func(r TaskResult) bool {
			return !r.Success && !r.RightTool && !r.Approvals
		}},
		{"invented id", scale, Transcript{UserTurns: good.UserTurns, Calls: []ToolCall{good.Calls[1]}}, func(r TaskResult) bool {
			return !r.Success && !r.NoInvented && r.RightTool && r.ValidArgs
		}},
		{"invalid arguments", scale, Transcript{UserTurns: good.UserTurns, Calls: []ToolCall{good.Calls[0],
			{Name: "scale_service", Arguments: json.RawMessage(`{"account_id":"` + acct + `","service":"checkout","desired_count":-1}`), Confirmation: true}}},
			func(r TaskResult) bool { return !r.Success && !r.ValidArgs }},
		{"write without approval", scale, Transcript{UserTurns: good.UserTurns, Calls: []ToolCall{good.Calls[0],
			{Name: "scale_service", Arguments: good.Calls[1].Arguments}}}, func(r TaskResult) bool { return !r.Success && !r.Approvals }},
		{"refused", refuse, Transcript{UserTurns: []string{"scale checkout to 5000"}}, func(r TaskResult) bool { return r.Success }},
		{"did not refuse", refuse, Transcript{UserTurns: []string{"scale checkout to 5000"}, Calls: good.Calls}, func(r TaskResult) bool {
			return !r.Success && !r.Refusals
		}},
		{"unknown tool", refuse, Transcript{UserTurns: []string{"x"}, Calls: []ToolCall{{Name: "drop_database", Arguments: json.RawMessage(`{}`)}}},
			func(r TaskResult) bool { return !r.Success && !r.ValidArgs }},
	}
	for _, tt := range tests {
		if got := ScoreTask(tt.task, tt.tr, tools); !tt.check(got) {
			t.Errorf("%s: %+v", tt.name, got)
		}
	}
}

func TestModelConfigured(t *testing.T) {
	t.Parallel()
	tests := []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"OPENAI_API_KEY": "sk-x"}, true},
		{map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"}, true},
		{map[string]string{"OPENAI_BASE_URL": "https://api.openai.com/v1"}, false},
		{map[string]string{"DEVPILOT_LLM_MODEL": "gpt-4o"}, false},
	}
	for _, tt := range tests {
		if got := modelConfigured(func(k string) string { return tt.env[k] }); got != tt.want {
			t.Errorf("modelConfigured(%v) = %v, want %v", tt.env, got, tt.want)
		}
	}
}
