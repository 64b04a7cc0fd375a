package spec_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"

	"go.uber.org/mock/gomock"

	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/ports"
)

// fakeDigester answers the digest calls (a map call: one fact per chunk,
// naming its size; a reduce call: the facts of the partials in order) and
// the stage calls (the sample), counting the calls of each kind.
type fakeDigester struct {
	mu    sync.Mutex
	calls map[string]int
	// users are the user messages of the stage requests, in order.
	users []string
	// tooLong, when set, refuses a stage request holding it as a
	// provider refuses a request longer than the model's context.
	tooLong string
}

func (f *fakeDigester) count(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[name]
}

func (f *fakeDigester) reply(t *testing.T) func(context.Context, ports.ChatRequest, func(string) error) (ports.ChatResult, error) {
	return func(_ context.Context, req ports.ChatRequest, _ func(string) error) (ports.ChatResult, error) {
		name := req.ResponseFormat.Name
		f.mu.Lock()
		if f.calls == nil {
			f.calls = map[string]int{}
		}
		f.calls[name]++
		f.mu.Unlock()
		user := req.Messages[1].Content
		switch name {
		case spec.DigestMapSchema:
			doc := map[string]any{"title": "Expense approvals", "summary": "Employees wait three weeks.",
				"facts":          []map[string]any{{"fact": fmt.Sprintf("A chunk of %d bytes.", len(user)), "inputs": []string{"made-up"}}},
				"open_questions": []string{}}
			b, _ := json.Marshal(doc)
			return ports.ChatResult{Content: string(b), FinishReason: ports.FinishStop, Model: "model-x"}, nil
		case spec.DigestReduceSchema:
			var facts []map[string]any
			for _, m := range regexp.MustCompile(`(?s)<partial_digest n="\d+">\n(.*?)\n</partial_digest>`).FindAllStringSubmatch(user, -1) {
				var d struct{ Facts []map[string]any }
				_ = json.Unmarshal([]byte(m[1]), &d)
				facts = append(facts, d.Facts...)
			}
			b, _ := json.Marshal(map[string]any{"title": "Expense approvals", "summary": "Employees wait three weeks.", "facts": facts, "open_questions": []string{"Which ledger?"}})
			return ports.ChatResult{Content: string(b), FinishReason: ports.FinishStop, Model: "model-x"}, nil
		}
		f.mu.Lock()
		f.users = append(f.users, user)
		f.mu.Unlock()
		if f.tooLong != "" && strings.Contains(user, f.tooLong) {
			return ports.ChatResult{}, &ports.Error{Kind: ports.KindInvalid, Code: ports.CodeContextLength, Message: "the conversation is too long for the model"}
		}
		st := ports.Stage(strings.TrimPrefix(name, "spec_"))
		return ports.ChatResult{Content: sample(t, st), FinishReason: ports.FinishStop, Model: "model-x"}, nil
	}
}

// longInput is a transcript of about n bytes, in lines.
func longInput(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "Ana: line %d — employees wait three weeks for reimbursements and managers approve by email.\n", i)
	}
	return b.String()
}

func TestLongInputsAreDigested(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  spec.Config
		// tooLong makes the provider refuse the raw request instead of the
		// budget catching it.
		tooLong bool
	}{
		{"over the budget", spec.Config{ContextBudget: 2000}, false},
		{"refused by the provider", spec.Config{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tt.cfg)
			f := &fakeDigester{}
			if tt.tooLong {
				f.tooLong = "line 0 —"
			}
			e.llm.EXPECT().Chat(gomock.Any(), gomock.Any(), gomock.Any()).AnyTimes().DoAndReturn(f.reply(t))
			raw := longInput(40000) // ~10k tokens: 5 chunks at a 2000-token budget
			v, err := e.svc.CreateSession(as(alice), "Expense approvals", []spec.NewInput{
				{Kind: ports.InputTranscript, Title: "Kick-off call", Content: raw},
				{Kind: ports.InputNote, Title: "Constraint", Content: "Must ship before the holiday freeze."},
			})
			if err != nil {
				t.Fatal(err)
			}
			sid := v.Session.ID
			ids := []string{v.Inputs[0].ID, v.Inputs[1].ID}

			if err := e.svc.RunGeneration(t.Context(), e.generate(alice, sid, ""), false); err != nil {
				t.Fatal(err)
			}
			if s := e.session(sid); s.Status != ports.SpecReady {
				t.Fatalf("after scope: %s %+v", s.Status, s.Error)
			}
			maps := f.count(spec.DigestMapSchema)
			if tt.tooLong && maps != 2 { // one chunk each at the default budget
				t.Errorf("%d map calls, want 2", maps)
			}
			if !tt.tooLong && maps < 6 { // 40000 bytes in chunks of at most 4000, and the note
				t.Errorf("%d map calls, want the transcript in chunks", maps)
			}
			if f.count(spec.DigestReduceSchema) < 1 {
				t.Errorf("no reduce call")
			}
			d, err := e.digests.GetSpecDigest(t.Context(), sid)
			if err != nil {
				t.Fatalf("the digest is not stored: %v", err)
			}
			if strings.Join(d.InputIDs, ",") != strings.Join(ids, ",") || d.Model != "model-x" {
				t.Errorf("digest covers %v (model %q), want %v", d.InputIDs, d.Model, ids)
			}
			// Each fact cites the input its chunk came from, whatever the
			// model wrote.
			if strings.Contains(d.Content, "made-up") || !strings.Contains(d.Content, "[inputs: "+ids[0]+"]") || !strings.Contains(d.Content, "[inputs: "+ids[1]+"]") {
				t.Errorf("digest citations:\n%s", d.Content)
			}
			// The stage is asked once from the digest (after the raw
			// request the provider refused).
			wantUsers := 1
			if tt.tooLong {
				wantUsers = 2
			}
			if len(f.users) != wantUsers {
				t.Fatalf("%d stage requests, want %d", len(f.users), wantUsers)
			}
			last := f.users[len(f.users)-1]
			if strings.Contains(last, "line 0 —") || !strings.Contains(last, `kind="digest"`) || !strings.Contains(last, "## Key facts") {
				t.Errorf("the stage request does not hold the digest instead of the inputs:\n%.2000s", last)
			}

			// Every later stage is given the digest, not the raw inputs, and
			// the digest is not made again.
			for _, st := range []ports.Stage{ports.StagePRD, ports.StageEpics} {
				if err := e.svc.RunGeneration(t.Context(), e.generate(alice, sid, ""), false); err != nil {
					t.Fatal(err)
				}
				if s := e.session(sid); s.Status != ports.SpecReady || s.CurrentStage != st {
					t.Fatalf("after %s: %s %+v", st, s.Status, s.Error)
				}
			}
			// Every later stage goes to the stored digest at once: over the
			// budget, or as long as a request the provider refused.
			later := f.users[wantUsers:]
			for _, u := range later {
				if strings.Contains(u, "line 0 —") || !strings.Contains(u, `kind="digest"`) {
					t.Errorf("a later stage is not given the digest:\n%.2000s", u)
				}
			}
			if got := f.count(spec.DigestMapSchema); got != maps {
				t.Errorf("the digest was made again: %d map calls, then %d", maps, got)
			}
			if e.digests.count() != 1 {
				t.Errorf("the digest was stored %d times", e.digests.count())
			}

			// An input added later makes the digest out of date.
			if _, err := e.svc.AddInput(as(alice), sid, spec.NewInput{Kind: ports.InputNote, Title: "More", Content: "Refunds must be visible."}); err != nil {
				t.Fatal(err)
			}
			if err := e.svc.RunGeneration(t.Context(), e.generate(alice, sid, ""), false); err != nil {
				t.Fatal(err)
			}
			if got := f.count(spec.DigestMapSchema); got == maps || e.digests.count() != 2 {
				t.Errorf("after a new input: %d map calls (was %d), %d puts", got, maps, e.digests.count())
			}
			if d, _ := e.digests.GetSpecDigest(t.Context(), sid); len(d.InputIDs) != 3 {
				t.Errorf("the new digest covers %v", d.InputIDs)
			}

			// A shorter request than the one refused is sent as it is.
			short := e.newSession(alice)
			n := len(f.users)
			if err := e.svc.RunGeneration(t.Context(), e.generate(alice, short, ""), false); err != nil {
				t.Fatal(err)
			}
			if len(f.users) != n+1 || !strings.Contains(f.users[n], "Employees wait three weeks for reimbursements.") {
				t.Errorf("the short session's request does not hold its input:\n%s", f.users[n:])
			}
		})
	}
}

// TestInputsThatFitAreGivenVerbatim: a stored digest that is current does
// not replace inputs that fit the budget; the request holds them verbatim.
func TestInputsThatFitAreGivenVerbatim(t *testing.T) {
	t.Parallel()
	e := newEnv(t, spec.Config{})
	sid := e.newSession(alice)
	ids := []string{}
	for _, in := range e.inputs(sid) {
		ids = append(ids, in.ID)
	}
	if err := e.digests.PutSpecDigest(t.Context(), ports.SpecDigest{SessionID: sid, InputIDs: ids, Data: json.RawMessage(`{}`),
		Content: "# Digest\n\n## Key facts\n\n- DIGEST-ONLY-FACT\n", Model: "model-x", CreatedAt: e.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	e.script(answer(sample(t, ports.StageScope)))
	if err := e.svc.RunGeneration(t.Context(), e.generate(alice, sid, ""), false); err != nil {
		t.Fatal(err)
	}
	if s := e.session(sid); s.Status != ports.SpecReady {
		t.Fatalf("after scope: %s %+v", s.Status, s.Error)
	}
	user := e.requests()[0].Messages[1].Content
	if !strings.Contains(user, "Employees wait three weeks for reimbursements.") || strings.Contains(user, "DIGEST-ONLY-FACT") || strings.Contains(user, `kind="digest"`) {
		t.Errorf("the request does not hold the raw inputs instead of the digest:\n%s", user)
	}
}
