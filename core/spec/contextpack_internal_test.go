package spec

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/devpilot/devpilot/ports"
)

const kickoff = `# Kick-off

We met on Monday to talk about expenses.

Managers approve by email today. Employees wait three
weeks   for reimbursements. Finance is unhappy.

LATER-PARAGRAPH: the office moves in June.`

func TestPassageOf(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("Filler words before the quote. ", 80) + "\nThe QUOTE sits here in the middle.\n" + strings.Repeat("Filler words after the quote. ", 80)
	inputs := []ports.SpecInput{
		{Title: "Kick-off notes", Content: kickoff},
		{Title: "Long call", Content: long},
		{Title: "Café", Content: "  Intro.\n\n Le café  au lait — ümlaut\tstraße. Fin. \n\nAutre."},
	}
	tests := []struct {
		name      string
		src       source
		title     string
		want      string // the passage, or a part of it when contains
		contains  bool
		maxBytes  int
		forbidden string
	}{
		{name: "its paragraph, white space aside", src: source{Input: "1", Quote: "Employees wait three weeks for reimbursements."},
			title: "Kick-off notes", want: "Managers approve by email today. Employees wait three\nweeks   for reimbursements. Finance is unhappy."},
		{name: "quotation marks and an ellipsis around it", src: source{Input: "1", Quote: "“…approve by email today.”"},
			title: "Kick-off notes", want: "Managers approve by email today. Employees wait three\nweeks   for reimbursements. Finance is unhappy."},
		{name: "not found: the quote", src: source{Input: "1", Quote: "Employees wait four weeks."}, title: "Kick-off notes", want: "Employees wait four weeks."},
		{name: "a digest: the quote", src: source{Input: "digest", Quote: "Employees wait three weeks for reimbursements."}, title: "digest",
			want: "Employees wait three weeks for reimbursements."},
		{name: "an input that does not exist: the quote", src: source{Input: "7", Quote: "Managers approve by email today."}, title: "7",
			want: "Managers approve by email today."},
		{name: "characters beyond ASCII", src: source{Input: "3", Quote: "au lait — ümlaut straße."}, title: "Café",
			want: "Le café  au lait — ümlaut\tstraße. Fin."},
		{name: "a long paragraph: bounded around the quote", src: source{Input: "2", Quote: "The QUOTE sits here in the middle."}, title: "Long call",
			want: "The QUOTE sits here in the middle.", contains: true, maxBytes: maxPassageBytes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := newMaterial(inputs).passageOf(tt.src)
			if got.Input != tt.src.Input || got.Title != tt.title {
				t.Errorf("input %q title %q, want %q %q", got.Input, got.Title, tt.src.Input, tt.title)
			}
			if tt.contains {
				if !strings.Contains(got.Passage, tt.want) || len(got.Passage) > tt.maxBytes || len(got.Passage) < tt.maxBytes/2 {
					t.Errorf("passage of %d bytes:\n%s", len(got.Passage), got.Passage)
				}
				at := strings.Index(long, got.Passage)
				if at <= 0 || long[at-1] != ' ' || long[at+len(got.Passage)] != ' ' {
					t.Errorf("the passage is not cut at words:\n%s", got.Passage)
				}
				return
			}
			if got.Passage != tt.want {
				t.Errorf("passage\n%q\nwant\n%q", got.Passage, tt.want)
			}
		})
	}
}

func TestContextPackFromEarlierStages(t *testing.T) {
	t.Parallel()
	scope, prd, _, _, _ := samples(t)
	prd.Functional[0].Sources = []source{{Input: "1", Quote: "Employees wait three weeks for reimbursements."}, {Input: "1", Quote: "approve by email"}}
	prd.Functional[1].Sources = []source{{Input: "1", Quote: "Managers approve by email today."}, {Input: "digest", Quote: "Managers decide in two days."}}
	prior := &earlier{scope: scope, prd: prd}
	inputs := []ports.SpecInput{{Title: "Kick-off notes", Content: kickoff}}
	p := newContextPack(prior, newMaterial(inputs), []string{"REQ-1", "REQ-2"}, nil, nil)
	para := "Managers approve by email today. Employees wait three\nweeks   for reimbursements. Finance is unhappy."
	want := []sourcePassage{
		{Input: "1", Title: "Kick-off notes", RequirementIDs: []string{"REQ-1", "REQ-2"}, Passage: para, primary: true},
		{Input: "digest", Title: "digest", RequirementIDs: []string{"REQ-2"}, Passage: "Managers decide in two days."},
	}
	if fmt.Sprint(p.SourcePassages) != fmt.Sprint(want) {
		t.Errorf("passages\n%+v\nwant\n%+v", p.SourcePassages, want)
	}
	if !slices.Equal(p.Constraints, scope.Constraints) || !slices.Equal(p.OutOfScope, scope.OutOfScope) || len(p.Constraints) == 0 ||
		!slices.Equal(p.NonGoals, prd.NonGoals) || !slices.Equal(p.Assumptions, prd.Assumptions) || !slices.Equal(p.EdgeCases, prd.EdgeCases) ||
		!slices.Equal(p.Clarifications, prd.Clarifications) {
		t.Errorf("pack %+v", p)
	}
	el := p.element()
	for _, key := range []string{`"source_passages":[`, `"constraints":[`, `"out_of_scope":[`, `"non_goals":[`, `"assumptions":[`, `"edge_cases":[`,
		`"clarifications":[`, `"related_stories":[]`, `"dependencies":[]`} {
		if !strings.Contains(el, key) {
			t.Errorf("the element lacks %s:\n%s", key, el)
		}
	}
	if !strings.HasPrefix(el, "<context_pack>\n{") || !strings.HasSuffix(el, "}\n</context_pack>\n") || strings.Contains(el, "primary") {
		t.Errorf("element:\n%s", el)
	}

	// Bounded: the passages beyond each requirement's first go first.
	p.SourcePassages = append(p.SourcePassages, sourcePassage{Input: "1", Passage: strings.Repeat("x", 4000), RequirementIDs: []string{"REQ-2"}})
	p.bound(p.tokens() - 1)
	if len(p.SourcePassages) != 2 || p.SourcePassages[1].Input != "digest" {
		t.Errorf("after the first bound: %+v", p.SourcePassages)
	}
	p.bound(p.tokens() - 1)
	if len(p.SourcePassages) != 1 || !p.SourcePassages[0].primary {
		t.Errorf("after the second bound: %+v", p.SourcePassages)
	}
	p.bound(0)
	if len(p.SourcePassages)+len(p.Constraints)+len(p.NonGoals)+len(p.EdgeCases) != 0 {
		t.Errorf("bound to nothing: %+v", p)
	}
}

// TestRunBatchesDependencies: a batch starts after the earlier batches it
// depends on finished, later and unknown dependencies are ignored, at most
// BatchConcurrency run at once, and a failure cancels the batches waiting
// on it.
func TestRunBatchesDependencies(t *testing.T) {
	t.Parallel()
	// 1 after 0; 3 after 1; 2 names 4 (later) and 9 (unknown).
	deps := map[int][]int{1: {0}, 2: {4, 9}, 3: {1, 1}, 4: {2}}
	for _, bound := range []int{1, 2, 4} {
		t.Run(fmt.Sprint("bound ", bound), func(t *testing.T) {
			t.Parallel()
			s := &Service{cfg: Config{BatchConcurrency: bound}}
			var mu sync.Mutex
			var events []string
			running, most := 0, 0
			results, _, err := s.runBatches(t.Context(), 5, func(i int) []int { return deps[i] },
				func(_ context.Context, i int, done func(int) (output, bool)) (output, ports.ChatResult, error) {
					mu.Lock()
					events = append(events, fmt.Sprint("start ", i))
					running++
					most = max(most, running)
					mu.Unlock()
					for _, j := range deps[i] {
						out, ok := done(j)
						if ok != (j < i) || ok && out.data == nil {
							t.Errorf("batch %d: done(%d) = %v", i, j, ok)
						}
					}
					mu.Lock()
					running--
					events = append(events, fmt.Sprint("end ", i))
					mu.Unlock()
					return output{data: []byte(fmt.Sprint(i))}, ports.ChatResult{Usage: ports.Usage{PromptTokens: 1}}, nil
				})
			if err != nil || len(results) != 5 {
				t.Fatal(err)
			}
			for i, ds := range deps {
				for _, j := range ds {
					if j < i && slices.Index(events, fmt.Sprint("end ", j)) > slices.Index(events, fmt.Sprint("start ", i)) {
						t.Errorf("batch %d started before %d ended: %v", i, j, events)
					}
				}
			}
			if most > bound {
				t.Errorf("%d batches ran at once, bound %d", most, bound)
			}
			if bound == 1 && fmt.Sprint(events) != "[start 0 end 0 start 1 end 1 start 2 end 2 start 3 end 3 start 4 end 4]" {
				t.Errorf("with a bound of 1: %v", events)
			}
		})
	}

	t.Run("a failure cancels its dependants", func(t *testing.T) {
		t.Parallel()
		s := &Service{cfg: Config{BatchConcurrency: 2}}
		boom := errors.New("boom")
		var mu sync.Mutex
		var ran []int
		_, _, err := s.runBatches(t.Context(), 3, func(i int) []int { return deps[i] },
			func(ctx context.Context, i int, _ func(int) (output, bool)) (output, ports.ChatResult, error) {
				mu.Lock()
				ran = append(ran, i)
				mu.Unlock()
				if i == 0 {
					return output{}, ports.ChatResult{}, boom
				}
				<-ctx.Done()
				return output{}, ports.ChatResult{}, ctx.Err()
			})
		if !errors.Is(err, boom) || slices.Contains(ran, 1) {
			t.Errorf("err %v, ran %v", err, ran)
		}
	})
}
