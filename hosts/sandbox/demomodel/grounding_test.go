package demomodel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/adapters/github"
	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/hosts/sandbox/fakegithub"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
	"github.com/devpilot/devpilot/ports"
	"github.com/devpilot/devpilot/testkit/fixture"
	"github.com/devpilot/devpilot/testkit/mocks"
)

const ghToken = "gho_groundingAAAAAAAAAAAAAAAAAAAAAAAAAAAA"

// shopFiles is a small Go service with a Makefile and a CI workflow.
var shopFiles = map[string]string{
	"Makefile":                    ".PHONY: test lint\n\ntest:\n\tgo test -race ./...\n\nlint:\n\tgo vet ./...\n",
	"go.mod":                      "module example.com/shop\n\ngo 1.26\n",
	"cmd/shop/main.go":            "package main\n\nfunc main() {}\n",
	"internal/expense/expense.go": "package expense\n\n// Expense is a cost an employee claims back.\ntype Expense struct{ ID string }\n",
	"internal/expense/submit.go":  "package expense\n\n// Submit stores a new expense.\nfunc Submit(e Expense) error { return nil }\n",
	"internal/approval/queue.go":  "package approval\n\n// Queue lists pending expenses.\nfunc Queue() {}\n",
	"internal/ledger/export.go":   "package ledger\n\n// Export writes approved expenses as CSV.\nfunc Export() {}\n",
	".github/workflows/ci.yml":    "name: ci\non: [push]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - run: make lint\n      - name: Test\n        run: |\n          go test -race ./...\n          go build ./...\n",
}

// groundedEnv is a spec.Service over the demo model (through the real
// OpenAI adapter) and a fake GitHub holding acme/shop, linked through the
// real GitHub adapter.
type groundedEnv struct {
	svc   *spec.Service
	fake  *fakeopenai.Server
	jobs  *jobList
	ctx   context.Context
	repo  string
	files map[string]string
}

func newGroundedEnv(t *testing.T, concurrency int) *groundedEnv {
	t.Helper()
	gh := fakegithub.New(t)
	gh.AddUser("alice", 101).Token(ghToken)
	gh.AddRepo("acme", "shop", fakegithub.Private(), fakegithub.VisibleTo("alice")).Files(shopFiles)
	client, err := github.New(github.Config{ClientID: "Iv1.x", ClientSecret: "s", WebURL: gh.URL(), APIURL: gh.APIURL()})
	if err != nil {
		t.Fatal(err)
	}
	ctrl := gomock.NewController(t)
	const repoID = "0190a000-0000-7000-8000-0000000000aa"
	repos := mocks.NewMockSCMStore(ctrl)
	repos.EXPECT().GetRepository(gomock.Any(), gomock.Any(), repoID).AnyTimes().Return(ports.Repository{ID: repoID,
		SCMRepo: ports.SCMRepo{FullName: "acme/shop", Owner: "acme", Name: "shop"}}, nil)
	repos.EXPECT().GetRepository(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().Return(ports.Repository{}, ports.NotFound("repository", "x"))
	repos.EXPECT().GetConnection(gomock.Any(), gomock.Any(), "github").AnyTimes().Return(ports.SCMConnection{ID: "conn-1", SealedToken: "sealed", Status: ports.SCMActive}, nil)
	cipher := mocks.NewMockCipher(ctrl)
	cipher.EXPECT().Open("sealed", []byte("conn-1")).AnyTimes().Return([]byte(ghToken), nil)

	c, fake := serve(t)
	store, jobs := newMemSpecs(), &jobList{}
	svc := spec.New(spec.Config{BatchConcurrency: concurrency}, spec.Deps{Specs: store, Standards: store, Tx: noTx{}, Jobs: jobs,
		LLM: c, Clock: fixture.NewClock(), IDs: &fixture.IDs{}, Repos: repos, SCM: client, Cipher: cipher})
	return &groundedEnv{svc: svc, fake: fake, jobs: jobs, ctx: ports.WithPrincipal(context.Background(), alice), repo: repoID, files: shopFiles}
}

// run generates stage st of the session and returns its artifact.
func (e *groundedEnv) run(t *testing.T, sid string) ports.SpecArtifact {
	t.Helper()
	if _, err := e.svc.Generate(e.ctx, sid, ""); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.RunGeneration(context.Background(), e.jobs.last().(spec.GenerateStageArgs), true); err != nil {
		t.Fatal(err)
	}
	v, err := e.svc.GetSession(e.ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	if v.Session.Status != ports.SpecReady {
		t.Fatalf("status %s, error %+v", v.Session.Status, v.Session.Error)
	}
	return v.Artifacts[len(v.Artifacts)-1]
}

type groundedPRPs struct {
	PRPs []struct {
		ID      string
		StoryID string `json:"story_id"`
		Context struct {
			References []struct{ Kind, Target string }
		}
		Tasks []struct {
			Action, Path, Validation string
		}
		Validation struct {
			Commands   []struct{ Level, Command, Expect string }
			NoneReason string `json:"none_reason"`
		}
	}
}

func schemaName(r fakeopenai.Request) string {
	if r.ResponseFormat == nil || r.ResponseFormat.JSONSchema == nil {
		return ""
	}
	return r.ResponseFormat.JSONSchema.Name
}

// TestGroundedPRPs: with a linked repository, stories come from one call
// per epic, PRPs from one call per story, and every PRP cites only paths the
// repository has and validates with commands it shows.
func TestGroundedPRPs(t *testing.T) {
	t.Parallel()
	e := newGroundedEnv(t, 4)
	v, err := e.svc.CreateSession(e.ctx, "Expenses", []spec.NewInput{{Kind: ports.InputDocument, Title: "expenses.md", ContentType: "text/markdown", Content: expenseDoc}},
		spec.InRepository(e.repo))
	if err != nil || v.Session.RepoID != e.repo {
		t.Fatalf("CreateSession in a repository: %+v, %v", v.Session, err)
	}
	if _, err := e.svc.CreateSession(e.ctx, "Elsewhere", nil, spec.InRepository("0190a000-0000-7000-8000-0000000000bb")); ports.KindOf(err) != ports.KindInvalid {
		t.Fatalf("CreateSession in an unknown repository: %v", err)
	}
	sid := v.Session.ID
	var epics struct{ Epics []struct{ ID string } }
	for _, st := range ports.Stages {
		before := len(e.fake.Requests())
		a := e.run(t, sid)
		if len(a.Checks) != 0 {
			t.Errorf("%s checks: %q", st, a.Checks)
		}
		calls := e.fake.Requests()[before:]
		switch st {
		case ports.StageEpics:
			_ = json.Unmarshal(a.Data, &epics)
		case ports.StageStories:
			var asked []string
			for _, r := range calls {
				if schemaName(r) != "spec_stories" {
					t.Errorf("stories stage made a %q call", schemaName(r))
				}
				m := regexp.MustCompile(`<epic>\n\{"id":"(EP-\d+)"`).FindStringSubmatch(r.Messages[len(r.Messages)-1].Content)
				if m == nil || strings.Contains(r.Messages[len(r.Messages)-1].Content, "# Raw material") {
					t.Errorf("a stories call without one epic, or with the raw material:\n%s", r.Messages[len(r.Messages)-1].Content)
					continue
				}
				asked = append(asked, m[1])
			}
			slices.Sort(asked)
			var want []string
			for _, ep := range epics.Epics {
				want = append(want, ep.ID)
			}
			slices.Sort(want)
			if len(want) < 2 || !slices.Equal(asked, want) {
				t.Errorf("stories calls for %v, want one per epic %v", asked, want)
			}
		case ports.StagePRPs:
			var doc groundedPRPs
			if err := json.Unmarshal(a.Data, &doc); err != nil {
				t.Fatal(err)
			}
			if len(calls) != len(doc.PRPs) {
				t.Errorf("%d PRP calls for %d PRPs", len(calls), len(doc.PRPs))
			}
			known := []string{"make test", "make lint", "go test -race ./...", "go build ./..."}
			for _, p := range doc.PRPs {
				files := 0
				for _, r := range p.Context.References {
					if r.Kind == "file" {
						files++
						if _, ok := e.files[r.Target]; !ok {
							t.Errorf("%s references %s, which acme/shop does not have", p.ID, r.Target)
						}
					}
				}
				for _, tk := range p.Tasks {
					if _, ok := e.files[tk.Path]; ok != (tk.Action == "modify") {
						t.Errorf("%s: %s %s; in the repository: %v", p.ID, tk.Action, tk.Path, ok)
					}
				}
				if files == 0 || len(p.Validation.Commands) == 0 {
					t.Errorf("%s has %d file references and %d commands", p.ID, files, len(p.Validation.Commands))
				}
				for _, c := range p.Validation.Commands {
					if !slices.Contains(known, c.Command) {
						t.Errorf("%s validates with %q, which acme/shop does not show", p.ID, c.Command)
					}
				}
			}
			if !strings.Contains(a.Content, "```sh\nmake test\n```") || !strings.Contains(a.Content, "`internal/") {
				t.Errorf("the PRP Markdown lacks its commands in code blocks or its file references:\n%s", a.Content)
			}
			var prompt string
			for _, r := range calls {
				if c := r.Messages[len(r.Messages)-1].Content; strings.Contains(c, `<story>`+"\n"+`{"id":"ST-1.1"`) {
					prompt = c
				}
			}
			for _, want := range []string{"# Repository acme/shop", "internal/expense/submit.go", "<commands", "make test", "go test -race ./..."} {
				if !strings.Contains(prompt, want) {
					t.Errorf("a PRP prompt lacks %q:\n%s", want, prompt)
				}
			}
		}
	}
}

// TestGroundingFinding: a PRP that references a path the linked repository
// does not have is sent back once and, when the answer keeps it, stored
// with the finding.
func TestGroundingFinding(t *testing.T) {
	t.Parallel()
	e := newGroundedEnv(t, 1)
	v, err := e.svc.CreateSession(e.ctx, "Expenses", []spec.NewInput{{Kind: ports.InputDocument, Title: "expenses.md", ContentType: "text/markdown", Content: expenseDoc}})
	if err != nil {
		t.Fatal(err)
	}
	sid := v.Session.ID
	for range 4 {
		e.run(t, sid)
	}
	if _, err := e.svc.SetRepository(e.ctx, sid, e.repo); err != nil {
		t.Fatal(err)
	}
	bad := fmt.Sprintf(`{"prps":[{"id":"PRP-1.1","story_id":"ST-1.1","title":"Submit","goal":"Submit expenses.","deliverable":"A form.","why":["REQ-1"],
		"acceptance_criteria":[{"given":"I am signed in","when":"I submit","then":"it is saved"}],"context":{"references":[{"kind":"file","target":"internal/nope/missing.go","section":"All","why":"Invented."}],"codebase":[],"gotchas":[]},
		"tasks":[{"id":"T1","action":"modify","path":"internal/expense/submit.go","pattern":"%s","details":"Add it.","depends_on":[],"validation":"make test"}],
		"validation":{"commands":[{"level":"unit","command":"make test","expect":"Passes."}],"none_reason":""},"success_checklist":["Done."],"anti_patterns":[]}]}`, "Follow submit.go")
	e.fake.Enqueue(fakeopenai.Text(bad), fakeopenai.Text(bad))
	before := len(e.fake.Requests())
	a := e.run(t, sid)
	want := "PRP-1.1 references internal/nope/missing.go, which acme/shop does not have"
	if !slices.Contains(a.Checks, want) {
		t.Errorf("checks %q, want %q", a.Checks, want)
	}
	repair := e.fake.Requests()[before+1]
	if last := repair.Messages[len(repair.Messages)-1].Content; !strings.Contains(last, want) {
		t.Errorf("the repair turn does not carry the finding:\n%s", last)
	}
}
