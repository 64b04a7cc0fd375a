package spec_test

import (
	"strings"
	"testing"

	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/ports"
)

// TestRepairTurn: a valid answer with traceability findings goes back to
// the model once, in a repair turn that lists them; the better answer is
// stored.
func TestRepairTurn(t *testing.T) {
	t.Parallel()
	// The epics answer leaves REQ-3 uncovered, names an unknown REQ-9 and
	// depends forward.
	gappy := func(t *testing.T) string {
		return edit(t, ports.StageEpics, func(d map[string]any) {
			list := d["epics"].([]any)
			ep1, ep2 := list[0].(map[string]any), list[1].(map[string]any)
			ep1["requirement_ids"], ep1["depends_on"] = []any{"REQ-1", "REQ-9"}, []any{"EP-2"}
			ep2["requirement_ids"] = []any{"REQ-2"}
		})
	}
	wantFindings := []string{"EP-1 names unknown requirement REQ-9", "REQ-3 is not covered by any epic",
		"EP-1 depends on EP-2, which does not come before it in the order"}
	tests := []struct {
		name string
		// second is the repair call's reply; nil for "no repair call".
		second      func(t *testing.T) reply
		wantChecks  []string
		wantFixed   bool
		wantRequest int
	}{
		{"fixed in the second answer", func(t *testing.T) reply { return answer(sample(t, ports.StageEpics)) }, nil, true, 2},
		{"still wrong in the second answer", func(t *testing.T) reply { return answer(gappy(t)) }, wantFindings, false, 2},
		{"the repaired answer is invalid", func(t *testing.T) reply { return answer(`{"epics":"no"}`) }, wantFindings, false, 2},
		{"the repair call fails", func(t *testing.T) reply {
			return fail(&ports.Error{Kind: ports.KindUnavailable, Message: "model down"})
		}, wantFindings, false, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, spec.Config{})
			sid := e.newSession(alice)
			e.seed(sid, ports.StageScope, ports.StagePRD)
			job := e.generate(alice, sid, "")
			first := gappy(t)
			e.script(answer(first), tc.second(t))
			if err := e.svc.RunGeneration(t.Context(), job, false); err != nil {
				t.Fatal(err)
			}
			reqs := e.requests()
			if len(reqs) != tc.wantRequest {
				t.Fatalf("%d model calls, want %d", len(reqs), tc.wantRequest)
			}
			// The repair turn is the first answer, then the findings.
			msgs := reqs[1].Messages
			if len(msgs) != len(reqs[0].Messages)+2 || msgs[len(msgs)-2].Role != ports.MessageAssistant ||
				msgs[len(msgs)-2].Content != first || msgs[len(msgs)-1].Role != ports.MessageUser {
				t.Fatalf("the repair request is not the first answer and a user turn: %+v", msgs[len(reqs[0].Messages):])
			}
			turn := msgs[len(msgs)-1].Content
			for _, f := range wantFindings {
				if !strings.Contains(turn, "- "+f+"\n") {
					t.Errorf("the repair turn does not name %q:\n%s", f, turn)
				}
			}
			if reqs[1].ResponseFormat == nil || reqs[1].ResponseFormat.Name != "spec_epics" {
				t.Errorf("the repair turn asks for %+v", reqs[1].ResponseFormat)
			}
			s := e.session(sid)
			arts := e.artifacts(sid)
			a := arts[len(arts)-1]
			if s.Status != ports.SpecReady || a.Stage != ports.StageEpics {
				t.Fatalf("session %s %+v, last artifact %s", s.Status, s.Error, a.Stage)
			}
			if strings.Join(a.Checks, "|") != strings.Join(tc.wantChecks, "|") {
				t.Errorf("stored checks %q, want %q", a.Checks, tc.wantChecks)
			}
			if fixed := compact(t, string(a.Data)) == compact(t, sample(t, ports.StageEpics)); fixed != tc.wantFixed {
				t.Errorf("stored the repaired answer: %v, want %v", fixed, tc.wantFixed)
			}
		})
	}
}

// TestRepairTurnAfterInvalidAnswer: the invalid-answer turn and the
// findings turn are each used at most once.
func TestRepairTurnAfterInvalidAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t, spec.Config{})
	sid := e.newSession(alice)
	e.seed(sid, ports.StageScope, ports.StagePRD, ports.StageEpics)
	job := e.generate(alice, sid, "")
	gap := edit(t, ports.StageStories, func(d map[string]any) {
		list := d["stories"].([]any)
		d["stories"] = list[:1] // EP-2 loses its stories
	})
	e.script(answer("not json"), answer(gap), answer(sample(t, ports.StageStories)))
	if err := e.svc.RunGeneration(t.Context(), job, false); err != nil {
		t.Fatal(err)
	}
	reqs := e.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model calls, want 3", len(reqs))
	}
	last := reqs[2].Messages[len(reqs[2].Messages)-1].Content
	if !strings.Contains(last, "EP-2 is not covered by any story") || !strings.Contains(reqs[1].Messages[len(reqs[1].Messages)-1].Content, "not valid JSON") {
		t.Errorf("turns: %q / %q", reqs[1].Messages[len(reqs[1].Messages)-1].Content, last)
	}
	arts := e.artifacts(sid)
	if a := arts[len(arts)-1]; a.Stage != ports.StageStories || len(a.Checks) != 0 {
		t.Errorf("stored %s with checks %q", a.Stage, a.Checks)
	}
}
