package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/hosts/sandbox/demomodel"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// transcript is a meeting transcript of about pages pages (500 words a
// page), deterministic, with a few statements a specification can be made
// of among the talk.
func transcript(pages int) string {
	speakers := []string{"Ana", "Bo", "Chen", "Dara"}
	talk := []string{
		"so the way it works today is that every refund goes through the support queue by hand",
		"customers keep asking why a refund takes two weeks when the payment took two seconds",
		"the finance team reconciles the refunds against the ledger at the end of each month",
		"guests who paid without an account cannot see the state of their refund anywhere",
		"we agreed that support agents need one screen with the order, the payment and the refund",
		"the payment provider already tells us when a refund settles through its webhook",
		"a partial refund must be possible for a single item of a larger order",
		"any refund above five hundred euros needs a second approval from a manager",
		"the mobile app should show the refund status next to the order it belongs to",
		"we must keep every refund decision for seven years because of the audit rules",
	}
	var b strings.Builder
	b.WriteString("# Refunds workshop\n\n")
	words := 0
	for i := 0; words < pages*500; i++ {
		line := fmt.Sprintf("[%02d:%02d:%02d] %s: Right, point %d — %s.", i/3600%24, i/60%60, i%60, speakers[i%len(speakers)], i, talk[(i*7)%len(talk)])
		words += len(strings.Fields(line))
		b.WriteString(line + "\n")
	}
	return b.String()
}

// TestSpecLongTranscript: a 200-page transcript (about 100,000 words,
// some 150,000 estimated tokens) completes all five stages against a model
// whose context window it exceeds several times over: the first stage
// digests it once (map-reduce, every request within the window), and every
// stage is given the digest instead. With a shorter transcript that fits
// the budget but not the window, the provider's context_length_exceeded
// takes the same path.
func TestSpecLongTranscript(t *testing.T) {
	tests := []struct {
		name  string
		pages int
		// limit is the model's context window in tokens; the budget is the
		// default (spec.DefaultContextBudget).
		limit int
		// refused says the raw request fits the budget, so the provider
		// refuses it first.
		refused bool
	}{
		{"200 pages over the budget", 200, 64000, false},
		{"60 pages refused by the provider", 60, 40000, true},
	}
	for _, d := range sqlstoretest.Dialects() {
		for _, tt := range tests {
			t.Run(string(d)+"/"+tt.name, func(t *testing.T) {
				t.Parallel()
				st := startStack(t, string(d))
				st.model.SetResponder(demomodel.New().Respond)
				st.model.SetContextLimit(tt.limit)
				member := st.token("pm@example.com")

				text := transcript(tt.pages)
				if words := len(strings.Fields(text)); words < tt.pages*500 {
					t.Fatalf("the transcript has %d words", words)
				}
				code, body, _ := st.call(member, "POST", "/pse/sessions", map[string]any{
					"name": "Refunds",
					"inputs": []map[string]string{
						{"kind": "transcript", "title": "Refunds workshop", "content": text},
						{"kind": "note", "title": "Deadline", "content": "Refund status must ship before the summer sale."},
					},
				})
				var v specView
				if err := json.Unmarshal(body, &v); code != 201 || err != nil {
					t.Fatalf("create session: %d %.300s", code, body)
				}
				id := v.ID

				mapsAfterScope := 0
				for _, stage := range []string{"scope", "prd", "epics", "stories", "prps"} {
					code, body, _ := st.call(member, "POST", "/pse/sessions/"+id+"/generate", nil)
					if code != 202 {
						t.Fatalf("generate %s: %d %s", stage, code, body)
					}
					v = st.waitReady(member, id)
					if v.Status != "ready" || v.CurrentStage == nil || *v.CurrentStage != stage {
						t.Fatalf("after %s: status %s, error %+v", stage, v.Status, v.Error)
					}
					if stage == "scope" {
						mapsAfterScope = countSchema(st.model.Requests(), spec.DigestMapSchema)
					}
				}
				if len(v.Artifacts) != 5 {
					t.Fatalf("%d artifacts", len(v.Artifacts))
				}
				for _, a := range v.Artifacts {
					if len(a.Checks) != 0 || a.Content == "" {
						t.Errorf("%s: checks %q", a.Stage, a.Checks)
					}
				}
				if !strings.Contains(v.Artifacts[0].Content, "Refunds workshop") {
					t.Errorf("the scope does not come from the transcript:\n%.1000s", v.Artifacts[0].Content)
				}

				reqs := st.model.Requests()
				maps, reduces := countSchema(reqs, spec.DigestMapSchema), countSchema(reqs, spec.DigestReduceSchema)
				if maps < 2 || reduces < 1 || maps != mapsAfterScope {
					t.Errorf("%d map calls (%d by the end of scope), %d reduce calls", maps, mapsAfterScope, reduces)
				}
				refusals, stages := 0, 0
				for _, r := range reqs {
					n := fakeopenai.EstimateTokens(&r)
					name := r.ResponseSchemaName()
					if n > tt.limit {
						refusals++
						if !tt.refused || name != "spec_scope" {
							t.Errorf("a %s request of %d tokens went over the window", name, n)
						}
						continue
					}
					if !strings.HasPrefix(name, "spec_") {
						continue
					}
					// Per-epic and per-story calls carry no raw material;
					// every call that does carries the digest.
					user := r.Messages[len(r.Messages)-1].Content
					if strings.Contains(user, "] Bo: Right, point 1 —") {
						t.Errorf("the %s request holds the raw transcript", name)
					}
					if strings.Contains(user, "# Raw material") {
						stages++
						if !strings.Contains(user, `kind="digest"`) {
							t.Errorf("the %s request is not given the digest:\n%.500s", name, user)
						}
					}
				}
				if want := map[bool]int{false: 0, true: 1}[tt.refused]; refusals != want {
					t.Errorf("%d requests refused for their length, want %d", refusals, want)
				}
				if stages < 3 {
					t.Errorf("%d stage requests with raw material within the window, want scope, prd and epics at least", stages)
				}
				if bytes.Contains(body, []byte("context_length")) {
					t.Errorf("the session reports a context error: %s", body)
				}
			})
		}
	}
}

func countSchema(reqs []fakeopenai.Request, name string) int {
	n := 0
	for _, r := range reqs {
		if r.ResponseSchemaName() == name {
			n++
		}
	}
	return n
}
