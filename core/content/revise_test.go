package content_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/devpilot/devpilot/core/content"
	"github.com/devpilot/devpilot/ports"
)

// TestRevisionPass: a draft with brand-check findings goes back to the
// model once with them; the revision is kept unless it is worse or
// unusable.
func TestRevisionPass(t *testing.T) {
	t.Parallel()
	brand := content.BrandInput{Name: "Acme", BannedWords: []string{"cheap"}, PreferredTerms: map[string]string{"utilize": "use"}}
	brief := content.BriefInput{Goal: "Book demos", MinWords: 5, MaxWords: 40}
	const (
		banned  = `{"title":"Approvals","body":"A cheap way to utilize your phone for approvals. Book a demo."}`
		clean   = `{"title":"Approvals","body":"An affordable way to use your phone for approvals. Book a demo."}`
		worse   = `{"title":"Cheap approvals","body":"Cheap. Utilize it."}`
		tooLong = `{"title":"Approvals","body":"` + "word " + `"}`
	)
	bannedChecks := []ports.ContentCheck{
		{Kind: content.CheckBannedWord, Term: "cheap", Message: `uses the banned word "cheap" once`},
		{Kind: content.CheckPreferredTerm, Term: "utilize", Message: `uses "utilize"; the brand prefers "use"`},
	}
	tests := []struct {
		name      string
		replies   []reply
		wantBody  string
		wantCheck []ports.ContentCheck
	}{
		{"revised clean", []reply{answer(banned), answer(clean)}, "An affordable way to use your phone for approvals. Book a demo.", []ports.ContentCheck{}},
		{"revision worse", []reply{answer(banned), answer(worse)}, "A cheap way to utilize your phone for approvals. Book a demo.", bannedChecks},
		{"revision unusable", []reply{answer(banned), answer(`{"title":"T","body":""}`)}, "A cheap way to utilize your phone for approvals. Book a demo.", bannedChecks},
		{"revision call fails", []reply{answer(banned), fail(&ports.Error{Kind: ports.KindUnavailable, Message: "down"})}, "A cheap way to utilize your phone for approvals. Book a demo.", bannedChecks},
		{"clean draft: no revision", []reply{answer(clean)}, "An affordable way to use your phone for approvals. Book a demo.", []ports.ContentCheck{}},
		{"too short: revised to length", []reply{answer(tooLong), answer(clean)}, "An affordable way to use your phone for approvals. Book a demo.", []ports.ContentCheck{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, content.Config{})
			job := started(e, brand, brief, 1)[0]
			e.script(tt.replies...)
			if err := e.svc.RunGeneration(t.Context(), job, false); err != nil {
				t.Fatalf("RunGeneration = %v", err)
			}
			it := e.mustItem(job.ItemID)
			if it.Status != ports.ContentDraft || it.Body != tt.wantBody || !reflect.DeepEqual(it.Checks, tt.wantCheck) {
				t.Errorf("item %s %q checks %+v; want %q %+v", it.Status, it.Body, it.Checks, tt.wantBody, tt.wantCheck)
			}
			reqs := e.requests()
			if len(reqs) != len(tt.replies) {
				t.Fatalf("%d model calls, want %d", len(reqs), len(tt.replies))
			}
			if len(reqs) < 2 {
				return
			}
			// The revision turn: the first draft, then its findings.
			msgs := reqs[1].Messages
			if len(msgs) != 4 || msgs[2].Role != ports.MessageAssistant || msgs[3].Role != ports.MessageUser ||
				reqs[1].ResponseFormat == nil || reqs[1].ResponseFormat.Name != "content_draft" {
				t.Fatalf("revision request %+v", reqs[1])
			}
			turn := msgs[3].Content
			if tt.name == "too short: revised to length" {
				if !strings.Contains(turn, "the body has 1 word; the brief asks for at least 5") || !strings.Contains(turn, "bring the body to 5 to 40 words") {
					t.Errorf("the revision turn:\n%s", turn)
				}
				return
			}
			for _, want := range []string{`uses the banned word "cheap" once`, `say it without "cheap" in any form`,
				`uses "utilize"; the brand prefers "use"`, `write the brand's preferred term instead of "utilize"`} {
				if !strings.Contains(turn, want) {
					t.Errorf("the revision turn lacks %q:\n%s", want, turn)
				}
			}
		})
	}
}
