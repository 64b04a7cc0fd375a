package spec_test

import (
	"strings"
	"testing"
	"time"

	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/ports"
)

// TestDocumentsCutsEveryItem: a session's documents are its overview, each
// stage, each epic, story and PRP on its own (headed by where it comes
// from), and the traceability table; another user's session is not found.
func TestDocumentsCutsEveryItem(t *testing.T) {
	t.Parallel()
	e := newEnv(t, spec.Config{})
	sid := e.newSession(alice)
	for _, st := range ports.Stages {
		e.clock.Advance(time.Minute)
		e.seedData(sid, st, sample(t, st))
	}
	docs, err := e.svc.Documents(as(alice), sid)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, d := range docs.Items {
		paths = append(paths, d.Path)
	}
	want := "|scope|prd|epics|epics/EP-1|epics/EP-2|stories|stories/ST-1.1|stories/ST-2.1|stories/ST-2.2|" +
		"prps|prps/PRP-1.1|prps/PRP-2.1|prps/PRP-2.2|traceability"
	if got := strings.Join(paths, "|"); got != want {
		t.Fatalf("paths %s\nwant  %s", got, want)
	}
	prp, ok := docs.Find("prps/PRP-1.1")
	if !ok || !strings.HasPrefix(prp.Markdown, "> PRP-1.1 of PRPs version 1\n\n## PRP-1.1: ") ||
		strings.Contains(prp.Markdown, "PRP-2.1") || !strings.Contains(prp.Markdown, "### Acceptance criteria") ||
		!strings.Contains(prp.Markdown, "### Validation") || prp.Stage != ports.StagePRPs {
		t.Errorf("PRP-1.1: %+v", prp)
	}
	if story, _ := docs.Find("stories/ST-2.2"); !strings.Contains(story.Markdown, "#### Acceptance criteria") || strings.Contains(story.Markdown, "ST-2.1:") {
		t.Errorf("ST-2.2:\n%s", story.Markdown)
	}
	if over, _ := docs.Find(""); over.Title != "Expense approvals" || !strings.Contains(over.Markdown, sid) {
		t.Errorf("overview: %+v", over)
	}
	if _, err := e.svc.Documents(as(bob), sid); !ports.IsKind(err, ports.KindNotFound) {
		t.Errorf("another user's session: %v", err)
	}
	if _, err := e.svc.Documents(as(alice), "not-an-id"); !ports.IsKind(err, ports.KindNotFound) {
		t.Errorf("a malformed id: %v", err)
	}
}
