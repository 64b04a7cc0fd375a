package demomodel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
)

var alice = ports.Principal{UserID: "user-alice", OrgID: "org-1", Role: ports.RoleMember}

const expenseDoc = `# Expense approvals

Employees email receipts to their managers and finance re-keys every expense into the ledger. Reimbursements take three weeks.

## Requirements
- Employees can submit an expense with a photo of its receipt.
- Managers approve or reject the pending expenses of their team, with a reason when rejecting.
- Finance exports approved expenses as CSV for the ledger.
- Employees see the status of each expense they submitted.
- Receipts must be kept for seven years.

## Out of scope
- Paying employees (payroll stays as it is)

Which ledger columns does finance need?
`

const kickoffTranscript = `[00:01] Dana: We want the approval queue on mobile too.
[00:02] Sam: Managers should get a daily digest of pending approvals.
[00:03] Dana: And admins need to manage expense categories.`

// TestSpecPipeline runs every stage of a real core/spec.Service against the
// demo model over HTTP, through the real OpenAI adapter, and expects each
// artifact to pass validation at the first attempt with no traceability
// warning.
func TestSpecPipeline(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		inputs []spec.NewInput
	}{
		{"document and transcript", []spec.NewInput{
			{Kind: ports.InputDocument, Title: "expenses.md", ContentType: "text/markdown", Content: expenseDoc},
			{Kind: ports.InputTranscript, Title: "Kick-off call", ContentType: "text/plain", Content: kickoffTranscript},
		}},
		{"one short note", []spec.NewInput{{Kind: ports.InputNote, Title: "Idea", Content: "A dark mode."}}},
		{"prose only", []spec.NewInput{{Kind: ports.InputDocument, Title: "Customer portal", ContentType: "text/markdown",
			Content: "Customers cannot see their invoices online. They call support to get copies, which costs the team hours every week. " +
				"We want a portal where customers download invoices and update their billing address. Support agents should see what customers changed."}}},
		{"tricky markup", []spec.NewInput{{Kind: ports.InputDocument, Title: "Weird \"quoted\" </input> title", ContentType: "text/markdown",
			Content: "```\n</input>\ncode\n```\n* **Bold** item with a [link](http://x.test) here\n* 2nd item: \"quotes\" and \\ backslashes\n1) numbered item that is long enough\n"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store, jobs := newMemSpecs(), &jobList{}
			ids := &fixture.IDs{}
			svc := spec.New(spec.Config{}, spec.Deps{Specs: store, Standards: store, Tx: noTx{}, Jobs: jobs,
				LLM: llm(t), Clock: fixture.NewClock(), IDs: ids})
			ctx := ports.WithPrincipal(context.Background(), alice)
			v, err := svc.CreateSession(ctx, "Demo", tt.inputs)
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range ports.Stages {
				if _, err := svc.Generate(ctx, v.Session.ID, ""); err != nil {
					t.Fatalf("generate %s: %v", st, err)
				}
				args := jobs.last().(spec.GenerateStageArgs)
				if args.Stage != st {
					t.Fatalf("generating %s, want %s", args.Stage, st)
				}
				if err := svc.RunGeneration(context.Background(), args, true); err != nil {
					t.Fatalf("run %s: %v", st, err)
				}
				got, err := svc.GetSession(ctx, v.Session.ID)
				if err != nil {
					t.Fatal(err)
				}
				if got.Session.Status != ports.SpecReady || got.Session.Error != nil {
					t.Fatalf("after %s: status %s, error %+v", st, got.Session.Status, got.Session.Error)
				}
				a := got.Artifacts[len(got.Artifacts)-1]
				if a.Stage != st || len(a.Checks) != 0 {
					t.Errorf("%s artifact: stage %s, checks %q", st, a.Stage, a.Checks)
				}
				validate(t, string(st), a.Data)
			}
			// Regenerating an earlier stage gives the same document.
			got, _ := svc.GetSession(ctx, v.Session.ID)
			first := got.Artifacts[1].Data
			if _, err := svc.Generate(ctx, v.Session.ID, ports.StagePRD); err != nil {
				t.Fatal(err)
			}
			if err := svc.RunGeneration(context.Background(), jobs.last().(spec.GenerateStageArgs), true); err != nil {
				t.Fatal(err)
			}
			got, _ = svc.GetSession(ctx, v.Session.ID)
			for _, a := range got.Artifacts {
				if a.Stage == ports.StagePRD && a.Version == 2 && !bytes.Equal(a.Data, first) {
					t.Errorf("regenerated PRD differs:\n%s\n%s", first, a.Data)
				}
			}
		})
	}
}

// TestSpecContentFromMaterial checks that the stages are built from the
// raw material, not canned.
func TestSpecContentFromMaterial(t *testing.T) {
	t.Parallel()
	store, jobs := newMemSpecs(), &jobList{}
	svc := spec.New(spec.Config{}, spec.Deps{Specs: store, Standards: store, Tx: noTx{}, Jobs: jobs,
		LLM: llm(t), Clock: fixture.NewClock(), IDs: &fixture.IDs{}})
	ctx := ports.WithPrincipal(context.Background(), alice)
	v, err := svc.CreateSession(ctx, "Expenses", []spec.NewInput{{Kind: ports.InputDocument, Title: "expenses.md", Content: expenseDoc}})
	if err != nil {
		t.Fatal(err)
	}
	data := map[ports.Stage]json.RawMessage{}
	for _, st := range ports.Stages[:4] {
		if _, err := svc.Generate(ctx, v.Session.ID, ""); err != nil {
			t.Fatal(err)
		}
		if err := svc.RunGeneration(context.Background(), jobs.last().(spec.GenerateStageArgs), true); err != nil {
			t.Fatal(err)
		}
		got, _ := svc.GetSession(ctx, v.Session.ID)
		data[st] = got.Artifacts[len(got.Artifacts)-1].Data
	}
	var scope struct {
		Title         string   `json:"title"`
		InScope       []string `json:"in_scope"`
		OutOfScope    []string `json:"out_of_scope"`
		OpenQuestions []string `json:"open_questions"`
		Users         []struct {
			Persona string `json:"persona"`
		} `json:"users"`
	}
	mustDecode(t, data[ports.StageScope], &scope)
	if scope.Title != "Expense approvals" || len(scope.InScope) != 5 || !strings.Contains(scope.InScope[0], "photo of its receipt") {
		t.Errorf("scope %+v", scope)
	}
	if len(scope.OutOfScope) != 1 || !strings.HasPrefix(scope.OutOfScope[0], "Paying employees") ||
		len(scope.OpenQuestions) != 1 || scope.OpenQuestions[0] != "Which ledger columns does finance need?" {
		t.Errorf("out of scope %q, open questions %q", scope.OutOfScope, scope.OpenQuestions)
	}
	if len(scope.Users) != 3 || scope.Users[0].Persona != "Employee" || scope.Users[1].Persona != "Manager" {
		t.Errorf("users %+v", scope.Users)
	}
	var prd struct {
		Functional []struct {
			ID, Title string
			Sources   []struct{ Input, Quote string }
		} `json:"functional_requirements"`
	}
	mustDecode(t, data[ports.StagePRD], &prd)
	if len(prd.Functional) != 5 || prd.Functional[0].ID != "REQ-1" || prd.Functional[0].Title != "Submit an expense with a photo" {
		t.Errorf("PRD requirements %+v", prd.Functional)
	}
	// Each requirement cites the sentence of the material it comes from.
	for i, want := range []string{"Employees can submit an expense with a photo of its receipt.", "Managers approve or reject the pending expenses of their team, with a reason when rejecting."} {
		if src := prd.Functional[i].Sources; len(src) != 1 || src[0].Input != "1" || src[0].Quote != want {
			t.Errorf("REQ-%d sources %+v, want %q from input 1", i+1, src, want)
		}
	}
	var stories struct {
		Stories []struct {
			ID    string `json:"id"`
			AsA   string `json:"as_a"`
			IWant string `json:"i_want"`
		} `json:"stories"`
	}
	mustDecode(t, data[ports.StageStories], &stories)
	if len(stories.Stories) != 5 || stories.Stories[0].ID != "ST-1.1" || stories.Stories[2].ID != "ST-2.1" ||
		stories.Stories[0].IWant != "to submit an expense with a photo of its receipt" {
		t.Errorf("stories %+v", stories.Stories)
	}
}

func mustDecode(t *testing.T, data json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
}

// validate checks a stage's data against core/spec/schemas/<stage>.json
// and the id rules of core/spec/stages.go.
func validate(t *testing.T, stage string, data json.RawMessage) {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	raw, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "..", "core", "spec", "schemas", stage+".json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("urn:"+stage, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("urn:" + stage)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(inst); err != nil {
		t.Errorf("%s does not match its schema: %v\n%s", stage, err, data)
	}
	// Ids: unique, and ST-e.n under EP-e, PRP-e.n for ST-e.n.
	ids := regexp.MustCompile(`"id":"([^"]+)"`).FindAllStringSubmatch(string(data), -1)
	seen := map[string]bool{}
	for _, m := range ids {
		if regexp.MustCompile(`^T\d+$`).MatchString(m[1]) {
			continue // task ids are numbered within their PRP
		}
		if seen[m[1]] {
			t.Errorf("%s: id %s used twice", stage, m[1])
		}
		seen[m[1]] = true
	}
	for _, m := range regexp.MustCompile(`"id":"ST-(\d+)\.\d+","epic_id":"EP-(\d+)"`).FindAllStringSubmatch(string(data), -1) {
		if m[1] != m[2] {
			t.Errorf("story ST-%s… under EP-%s", m[1], m[2])
		}
	}
	for _, m := range regexp.MustCompile(`"id":"PRP-([\d.]+)","story_id":"ST-([\d.]+)"`).FindAllStringSubmatch(string(data), -1) {
		if m[1] != m[2] {
			t.Errorf("PRP-%s implements ST-%s", m[1], m[2])
		}
	}
}
