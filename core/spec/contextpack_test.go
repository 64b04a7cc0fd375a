package spec_test

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/ports"
)

const kickoffDoc = `# Kick-off

We met on Monday to talk about expenses.

Managers approve by email today. Employees wait three weeks for reimbursements. Finance is unhappy.

The office moves in June.`

var (
	packPattern  = regexp.MustCompile(`(?s)<context_pack>\n(.*?)\n</context_pack>`)
	batchEpicID  = regexp.MustCompile(`<epic>\n\{"id":"(EP-\d+)"`)
	batchStoryID = regexp.MustCompile(`<story>\n\{"id":"(ST-[\d.]+)"`)
)

// pack is a <context_pack> as a fake model reads it.
type pack struct {
	SourcePassages []struct {
		Input, Title, Passage string
		RequirementIDs        []string `json:"requirement_ids"`
	} `json:"source_passages"`
	Constraints    []string `json:"constraints"`
	OutOfScope     []string `json:"out_of_scope"`
	NonGoals       []string `json:"non_goals"`
	Assumptions    []string `json:"assumptions"`
	EdgeCases      []string `json:"edge_cases"`
	Clarifications []struct{ Question, Impact string }
	RelatedStories []struct {
		ID     string
		EpicID string `json:"epic_id"`
		Title  string
	} `json:"related_stories"`
	Dependencies []struct {
		StoryID      string `json:"story_id"`
		Title        string
		PRPID        string                          `json:"prp_id"`
		PlannedPaths []struct{ Action, Path string } `json:"planned_paths"`
	}
}

func readPack(t *testing.T, user string) pack {
	t.Helper()
	m := packPattern.FindAllStringSubmatch(user, -1)
	if len(m) != 1 {
		t.Fatalf("%d context packs in:\n%s", len(m), user)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal([]byte(m[0][1]), &keys); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"source_passages", "constraints", "out_of_scope", "non_goals", "assumptions", "edge_cases", "clarifications", "related_stories", "dependencies"} {
		if v, ok := keys[k]; !ok || !strings.HasPrefix(string(v), "[") {
			t.Errorf("the pack's %s is %s", k, v)
		}
	}
	var p pack
	if err := json.Unmarshal([]byte(m[0][1]), &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// batchFake answers per-call requests from the samples, each call with the
// sample's items of its epic or story; first, when set, answers an epic's
// or a story's first call instead.
type batchFake struct {
	t     *testing.T
	mu    sync.Mutex
	users map[string][]string // the user messages of each epic's or story's calls
	first map[string]string
	// always, when set, answers every call of an epic or a story instead.
	always map[string]string
}

func (f *batchFake) reply(_ context.Context, req ports.ChatRequest, _ func(string) error) (ports.ChatResult, error) {
	user := req.Messages[1].Content
	var key, content string
	switch req.ResponseFormat.Name {
	case "spec_stories":
		key = batchEpicID.FindStringSubmatch(user)[1]
		content = edit(f.t, ports.StageStories, func(d map[string]any) {
			d["stories"] = slices.DeleteFunc(d["stories"].([]any), func(s any) bool { return s.(map[string]any)["epic_id"] != key })
		})
	case "spec_prps":
		key = batchStoryID.FindStringSubmatch(user)[1]
		content = edit(f.t, ports.StagePRPs, func(d map[string]any) {
			d["prps"] = slices.DeleteFunc(d["prps"].([]any), func(p any) bool { return p.(map[string]any)["story_id"] != key })
		})
	default:
		f.t.Errorf("a %s call", req.ResponseFormat.Name)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.users == nil {
		f.users = map[string][]string{}
	}
	f.users[key] = append(f.users[key], req.Messages[len(req.Messages)-1].Content)
	if c, ok := f.first[key]; ok && len(f.users[key]) == 1 {
		content = c
	}
	if c, ok := f.always[key]; ok {
		content = c
	}
	return ports.ChatResult{Content: content, FinishReason: ports.FinishStop, Model: "model-x"}, nil
}

// newBatchSession is a session of two inputs with the scope, PRD and epics
// samples, generated one call per epic and per story.
func newBatchSession(t *testing.T) (*env, string, *batchFake) {
	t.Helper()
	e := newEnv(t, spec.Config{BatchConcurrency: 2})
	v, err := e.svc.CreateSession(as(alice), "Expense approvals", []spec.NewInput{
		{Kind: ports.InputDocument, Title: "Kick-off notes", ContentType: "text/markdown", Content: kickoffDoc},
		{Kind: ports.InputTranscript, Title: "Finance call", Content: "Finance re-keys every claim into the ledger."},
	})
	if err != nil {
		t.Fatal(err)
	}
	e.seed(v.Session.ID, ports.StageScope, ports.StagePRD, ports.StageEpics)
	f := &batchFake{t: t}
	e.llm.EXPECT().Chat(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(f.reply)
	return e, v.Session.ID, f
}

// TestContextPacks: every per-epic stories call and per-story PRP call
// carries one context pack: the passages of the raw material its
// requirements cite, the scope's constraints and out-of-scope items, the
// PRD's non-goals, assumptions, edge cases and clarifications, the
// stories around it, and for a PRP the stories it depends on with the
// paths their PRPs plan.
func TestContextPacks(t *testing.T) {
	t.Parallel()
	e, sid, f := newBatchSession(t)
	var scope struct {
		Constraints []string `json:"constraints"`
		OutOfScope  []string `json:"out_of_scope"`
	}
	_ = json.Unmarshal([]byte(sample(t, ports.StageScope)), &scope)
	var prd struct {
		NonGoals    []string `json:"non_goals"`
		Assumptions []string `json:"assumptions"`
		EdgeCases   []string `json:"edge_cases"`
	}
	_ = json.Unmarshal([]byte(sample(t, ports.StagePRD)), &prd)

	for _, st := range []ports.Stage{ports.StageStories, ports.StagePRPs} {
		if err := e.svc.RunGeneration(t.Context(), e.generate(alice, sid, ""), false); err != nil {
			t.Fatal(err)
		}
		if s := e.session(sid); s.Status != ports.SpecReady || s.CurrentStage != st {
			t.Fatalf("after %s: %s %+v", st, s.Status, s.Error)
		}
	}
	if len(f.users) != 5 {
		t.Fatalf("calls for %d epics and stories, want 5", len(f.users))
	}
	para := "Managers approve by email today. Employees wait three weeks for reimbursements. Finance is unhappy."
	for key, users := range f.users {
		if len(users) != 1 {
			t.Errorf("%s: %d calls", key, len(users))
		}
		p := readPack(t, users[0])
		if !slices.Equal(p.Constraints, scope.Constraints) || len(p.Constraints) == 0 || !slices.Equal(p.OutOfScope, scope.OutOfScope) ||
			!slices.Equal(p.NonGoals, prd.NonGoals) || !slices.Equal(p.Assumptions, prd.Assumptions) || !slices.Equal(p.EdgeCases, prd.EdgeCases) ||
			len(p.Clarifications) != 1 {
			t.Errorf("%s: the pack lacks the scope's or the PRD's lists: %+v", key, p)
		}
		var passages []string
		for _, sp := range p.SourcePassages {
			passages = append(passages, sp.Input+"|"+sp.Title+"|"+strings.Join(sp.RequirementIDs, ",")+"|"+sp.Passage)
		}
		var related []string
		for _, r := range p.RelatedStories {
			related = append(related, r.ID+"|"+r.EpicID+"|"+r.Title)
		}
		var deps []string
		for _, d := range p.Dependencies {
			var paths []string
			for _, pp := range d.PlannedPaths {
				paths = append(paths, pp.Action+" "+pp.Path)
			}
			deps = append(deps, d.StoryID+"|"+d.Title+"|"+d.PRPID+"|"+strings.Join(paths, ","))
		}
		want := map[string][3][]string{
			"EP-1":   {{"1|Kick-off notes|REQ-1|" + para}, nil, nil},
			"EP-2":   {{"1|Kick-off notes|REQ-2|" + para, "2|Finance call|REQ-3|Finance re-keys every claim into the ledger."}, {"ST-1.1|EP-1|Submit an expense with a receipt"}, nil},
			"ST-1.1": {{"1|Kick-off notes|REQ-1|" + para}, nil, nil},
			"ST-2.1": {{"1|Kick-off notes|REQ-2|" + para}, {"ST-2.2|EP-2|Export approved expenses as CSV"},
				{"ST-1.1|Submit an expense with a receipt|PRP-1.1|create migrations/0007_expenses.sql,create internal/store/expenses.go,create internal/http/expenses.go"}},
			"ST-2.2": {{"2|Finance call|REQ-3|Finance re-keys every claim into the ledger."}, {"ST-2.1|EP-2|Approve or reject an expense"},
				{"ST-2.1|Approve or reject an expense|PRP-2.1|modify internal/store/expenses.go,create internal/http/approvals.go"}},
		}[key]
		if !slices.Equal(passages, want[0]) {
			t.Errorf("%s: passages\n%q\nwant\n%q", key, passages, want[0])
		}
		if !slices.Equal(related, want[1]) {
			t.Errorf("%s: related stories %q, want %q", key, related, want[1])
		}
		if !slices.Equal(deps, want[2]) {
			t.Errorf("%s: dependencies %q, want %q", key, deps, want[2])
		}
	}
}

// TestStoryRulesInTheRepairTurn: in per-call mode, an epic's stories that
// break the story rules (an unknown dependency, "and" in a criterion, an
// oversized story) go back in its repair turn; a dependency on a story of
// an epic it depends on is known.
func TestStoryRulesInTheRepairTurn(t *testing.T) {
	t.Parallel()
	e, sid, f := newBatchSession(t)
	f.first = map[string]string{"EP-2": edit(t, ports.StageStories, func(d map[string]any) {
		list := d["stories"].([]any)
		s21, s22 := list[1].(map[string]any), list[2].(map[string]any)
		s21["depends_on"] = []any{"ST-1.1"}
		s22["depends_on"] = []any{"ST-2.9"}
		s22["estimate"] = 13
		s22["acceptance_criteria"].([]any)[0].(map[string]any)["then"] = "a CSV is downloaded and the expenses are marked exported"
		d["stories"] = []any{s21, s22}
	})}
	if err := e.svc.RunGeneration(t.Context(), e.generate(alice, sid, ""), false); err != nil {
		t.Fatal(err)
	}
	if s := e.session(sid); s.Status != ports.SpecReady {
		t.Fatalf("%s %+v", s.Status, s.Error)
	}
	if len(f.users["EP-2"]) != 2 {
		t.Fatalf("EP-2: %d calls, want a repair turn", len(f.users["EP-2"]))
	}
	repair := f.users["EP-2"][1]
	for _, want := range []string{"ST-2.2 depends on unknown story ST-2.9", `ST-2.2 acceptance criterion 1 joins outcomes with "and"`, "ST-2.2 is estimated at 13 points"} {
		if !strings.Contains(repair, want) {
			t.Errorf("the repair turn lacks %q:\n%s", want, repair)
		}
	}
	if strings.Contains(repair, "ST-1.1") {
		t.Errorf("the dependency on a story of EP-1 is a finding:\n%s", repair)
	}
	if len(f.users["EP-1"]) != 1 {
		t.Errorf("EP-1: %d calls", len(f.users["EP-1"]))
	}
	arts := e.artifacts(sid)
	if a := arts[len(arts)-1]; len(a.Checks) != 0 {
		t.Errorf("the repaired stories have checks %q", a.Checks)
	}
}

// conflictingPRP is the PRP of ST-2.2 creating the path PRP-2.1 creates.
func conflictingPRP(t *testing.T) string {
	return edit(t, ports.StagePRPs, func(d map[string]any) {
		p := d["prps"].([]any)[2].(map[string]any)
		p["tasks"].([]any)[1].(map[string]any)["path"] = "internal/http/approvals.go"
		d["prps"] = []any{p}
	})
}

const approvalsConflict = "PRP-2.2 task T2 creates internal/http/approvals.go, which PRP-2.1 creates too (task T2)"

// TestCrossPRPConflictsRepairedPerCall: in per-call mode, a PRP whose task
// creates a path another PRP creates is asked once more, in a repair turn
// naming the conflict; a repaired answer without it is kept, and one that
// keeps it leaves the conflict in the stage's checks.
func TestCrossPRPConflictsRepairedPerCall(t *testing.T) {
	t.Parallel()
	for _, fixed := range []bool{true, false} {
		t.Run(map[bool]string{true: "repaired", false: "kept"}[fixed], func(t *testing.T) {
			t.Parallel()
			e, sid, f := newBatchSession(t)
			if err := e.svc.RunGeneration(t.Context(), e.generate(alice, sid, ""), false); err != nil {
				t.Fatal(err)
			}
			f.mu.Lock()
			if fixed {
				f.first = map[string]string{"ST-2.2": conflictingPRP(t)}
			} else {
				f.always = map[string]string{"ST-2.2": conflictingPRP(t)}
			}
			f.users = nil
			f.mu.Unlock()
			if err := e.svc.RunGeneration(t.Context(), e.generate(alice, sid, ""), false); err != nil {
				t.Fatal(err)
			}
			if s := e.session(sid); s.Status != ports.SpecReady || s.CurrentStage != ports.StagePRPs {
				t.Fatalf("%s %+v", s.Status, s.Error)
			}
			if len(f.users["ST-1.1"]) != 1 || len(f.users["ST-2.1"]) != 1 || len(f.users["ST-2.2"]) != 2 {
				t.Fatalf("calls %v, want one repair turn for ST-2.2", f.users)
			}
			if repair := f.users["ST-2.2"][1]; !strings.Contains(repair, approvalsConflict) {
				t.Errorf("the repair turn lacks the conflict:\n%s", repair)
			}
			arts := e.artifacts(sid)
			a := arts[len(arts)-1]
			has := slices.ContainsFunc(a.Checks, func(c string) bool { return strings.HasPrefix(c, approvalsConflict) })
			if has == fixed {
				t.Errorf("checks %q", a.Checks)
			}
			if got := strings.Contains(string(a.Data), `"path":"internal/http/exports.go"`); got != fixed {
				t.Errorf("the stored PRPs:\n%s", a.Data)
			}
			// The conflict's repair is a repair turn of ST-2.2's batch, not a
			// fourth batch.
			if g := a.Generation; g.Batches != 3 || g.RepairTurns != 1 || g.Calls != 4 {
				t.Errorf("generation %+v, want 3 batches, 1 repair turn, 4 calls", g)
			}
		})
	}
}

// TestCrossPRPConflictsInTheSingleCallRepairTurn: with one call for the
// stage, the conflicts between PRPs go into its repair turn.
func TestCrossPRPConflictsInTheSingleCallRepairTurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t, spec.Config{})
	sid := e.newSession(alice)
	e.seed(sid, ports.StageScope, ports.StagePRD, ports.StageEpics, ports.StageStories)
	bad := edit(t, ports.StagePRPs, func(d map[string]any) {
		p := d["prps"].([]any)[2].(map[string]any)
		p["tasks"].([]any)[1].(map[string]any)["path"] = "internal/http/approvals.go"
	})
	e.script(answer(bad), answer(bad))
	if err := e.svc.RunGeneration(t.Context(), e.generate(alice, sid, ""), false); err != nil {
		t.Fatal(err)
	}
	reqs := e.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	if last := reqs[1].Messages[len(reqs[1].Messages)-1].Content; !strings.Contains(last, approvalsConflict) {
		t.Errorf("the repair turn lacks the conflict:\n%s", last)
	}
	arts := e.artifacts(sid)
	if a := arts[len(arts)-1]; !slices.ContainsFunc(a.Checks, func(c string) bool { return strings.HasPrefix(c, approvalsConflict) }) {
		t.Errorf("checks %q", a.Checks)
	}
}
