package eval_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/hosts/eval"
	"github.com/devpilot/devpilot/hosts/eval/evalcorpus"
	"github.com/devpilot/devpilot/hosts/sandbox/demomodel"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// The floors the corpus slice holds on the faithful demo model, which
// writes each stage only from its request: a fact that does not reach a
// call cannot reach what the call writes, so these measure the context each
// call is given.
const (
	floorFactsInPRPs = 0.95
	floorGrounding   = 0.95
)

// runSlice runs the corpus slice's specification part with respond as the
// model and DEVPILOT_SPEC_CONCURRENCY set to concurrency.
func runSlice(t *testing.T, concurrency string, respond func(*fakeopenai.Request) fakeopenai.Response) eval.Report {
	t.Helper()
	env := func(k string) string {
		if k == "DEVPILOT_SPEC_CONCURRENCY" {
			return concurrency
		}
		return ""
	}
	rep, err := eval.Run(context.Background(), eval.Options{Cases: evalcorpus.Slice(), Out: filepath.Join(t.TempDir(), "run"),
		Concurrency: 4, Parts: []string{eval.PartSpec}, Getenv: env, Responder: respond})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// belowFloors lists what in rep falls below the floors.
func belowFloors(rep eval.Report) []string {
	var out []string
	for _, c := range rep.Cases {
		m := c.Metrics
		switch {
		case c.Status != "done":
			out = append(out, fmt.Sprintf("%s: %s %s", c.ID, c.Status, c.Error))
			continue
		case m.FactCoverage.PRPs == nil || *m.FactCoverage.PRPs < floorFactsInPRPs:
			out = append(out, fmt.Sprintf("%s: fact coverage in the PRPs %s < %v (missing %q)", c.ID, pct(m.FactCoverage.PRPs), floorFactsInPRPs, m.FactCoverage.MissingInPRPs))
		}
		if m.Grounding.Share == nil || *m.Grounding.Share < floorGrounding {
			out = append(out, fmt.Sprintf("%s: grounding %s < %v (%q)", c.ID, pct(m.Grounding.Share), floorGrounding, m.Grounding.Misses))
		}
		if m.CrossPRPConflicts == nil || *m.CrossPRPConflicts != 0 {
			out = append(out, fmt.Sprintf("%s: cross-PRP conflicts %v (%q)", c.ID, m.CrossPRPConflicts, m.Conflicts))
		}
	}
	return out
}

func pct(v *float64) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.3f", *v)
}

// TestCorpusSliceHoldsItsFloors runs the corpus slice through the five
// stages on the faithful demo model, one call per story and one call for
// the stage, and holds the floors: every case's PRPs carry at least 95% of
// its facts, 95% of their paths and commands fit its repository, and no
// two PRPs conflict.
func TestCorpusSliceHoldsItsFloors(t *testing.T) {
	t.Parallel()
	for _, mode := range []struct{ name, concurrency string }{{"per-call", "4"}, {"single-call", "0"}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			rep := runSlice(t, mode.concurrency, demomodel.New(demomodel.Faithful()).Respond)
			if len(rep.Cases) != len(evalcorpus.Slice()) {
				t.Fatalf("%d cases, want the slice's %d", len(rep.Cases), len(evalcorpus.Slice()))
			}
			for _, v := range belowFloors(rep) {
				t.Error(v)
			}
		})
	}
}

var (
	contextPackSection = regexp.MustCompile(`(?s)\n# Its context\n<context_pack>\n.*?\n</context_pack>\n`)
	contextPackJSON    = regexp.MustCompile(`(?s)<context_pack>\n(.*?)\n</context_pack>`)
	quotedSources      = regexp.MustCompile(`"sources":\[[^\]]*\]`)
)

// withoutRawMaterial removes from a per-story PRP call the raw material its
// requirements come from: the context pack's source passages and the
// requirements' quoted sources.
func withoutRawMaterial(t *testing.T, user string) string {
	user = contextPackJSON.ReplaceAllStringFunc(user, func(el string) string {
		var pack map[string]any
		if err := json.Unmarshal([]byte(contextPackJSON.FindStringSubmatch(el)[1]), &pack); err != nil {
			t.Errorf("the context pack is not JSON: %v", err)
			return el
		}
		pack["source_passages"] = []any{}
		b, _ := json.Marshal(pack)
		return "<context_pack>\n" + string(b) + "\n</context_pack>"
	})
	return quotedSources.ReplaceAllString(user, `"sources":[]`)
}

// withoutContext removes the whole context pack too, which leaves a
// per-story PRP call as it was before there was one: also without the
// scope's constraints and out-of-scope items, the PRD's non-goals,
// assumptions, edge cases and clarifications, and the stories around it.
func withoutContext(t *testing.T, user string) string {
	return withoutRawMaterial(t, contextPackSection.ReplaceAllString(user, "\n"))
}

// cutPRPCalls is the faithful model answering per-story PRP calls whose
// user message cut has edited.
func cutPRPCalls(t *testing.T, cut func(*testing.T, string) string) func(*fakeopenai.Request) fakeopenai.Response {
	model := demomodel.New(demomodel.Faithful())
	return func(req *fakeopenai.Request) fakeopenai.Response {
		if req.ResponseSchemaName() != "spec_prps" {
			return model.Respond(req)
		}
		edited := *req
		edited.Messages = append([]fakeopenai.Message(nil), req.Messages...)
		found := false
		for i, m := range edited.Messages {
			if m.Role == "user" && contextPackJSON.MatchString(m.Content) {
				found = true
				m.Content = cut(t, m.Content)
				edited.Messages[i] = m
			}
		}
		if !found {
			t.Errorf("a PRP call without a context pack:\n%s", req.Messages[len(req.Messages)-1].Content)
		}
		return model.Respond(&edited)
	}
}

// TestCorpusSliceFloorsNeedTheContext is the check above failing when the
// per-story PRP calls lose the raw material their requirements come from,
// or the whole context pack: the floors hold only because that context
// reaches the calls.
func TestCorpusSliceFloorsNeedTheContext(t *testing.T) {
	t.Parallel()
	for _, mutation := range []struct {
		name string
		cut  func(*testing.T, string) string
	}{{"without the raw material", withoutRawMaterial}, {"without the context pack", withoutContext}} {
		t.Run(mutation.name, func(t *testing.T) {
			t.Parallel()
			below := belowFloors(runSlice(t, "4", cutPRPCalls(t, mutation.cut)))
			if len(below) == 0 {
				t.Fatalf("the floors hold %s in the PRP calls", mutation.name)
			}
			t.Logf("below the floors %s:\n%s", mutation.name, strings.Join(below, "\n"))
		})
	}
}
