package app_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
)

func itoa(n int) string { return strconv.Itoa(n) }

// selectedProject is the picker's selected option as people read it.
const selectedProject = `(s => s && s.selectedOptions[0] ? s.selectedOptions[0].textContent : '')(document.querySelector('#project-select'))`

// TestConsoleProjects names content projects in the console, on both
// databases: a project made by name through the page is selected and its
// brand form shows; a rename shows in the picker; a duplicate name shows
// the 409 in words; a project that existed only as an id (its brand saved
// through the API) and an id remembered by the browser from before still
// show and open.
func TestConsoleProjects(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := startBrowser(t, d)
			b.signInDemo()
			if code, body := crAPI(b, "PUT", "/content/brands/legacy-blog", map[string]any{"name": "Legacy"}); code != 200 {
				t.Fatalf("PUT brand of an id: %d %s", code, body)
			}
			// An id this browser used before projects had names.
			b.do(chromedp.Evaluate[chromedp.Void](`localStorage.setItem('devpilot.content.projects', JSON.stringify(['old-id-7']))`))

			b.goTo("#/content/old-id-7")
			b.waitFor("the brand form of the old id", `document.querySelector('#brand-save')`, 15*time.Second)
			b.waitFor("the projects", `[...document.querySelectorAll('#project-select option')].some(o => o.textContent === 'legacy-blog')`, 15*time.Second)
			if got := eval[string](b, selectedProject); got != "old-id-7 (no name yet)" {
				t.Errorf("the old id is shown as %q", got)
			}
			if eval[bool](b, `!document.querySelector('#project-rename').hidden`) {
				t.Errorf("an id without a project offers Rename")
			}

			// Create a project by name: it opens, selected, with its brand form.
			b.do(chromedp.Click(chromedp.ID("project-new"), chromedp.NodeVisible))
			b.do(chromedp.SetValue(chromedp.ID("project-name"), "Spring launch", chromedp.NodeVisible),
				chromedp.SetValue(chromedp.ID("project-description"), "Posts for the spring launch"))
			b.lookAtWidths("projects-new")
			b.do(chromedp.Click(chromedp.ID("project-save")))
			b.waitFor("the new project selected", selectedProject+` === 'Spring launch' && location.hash.length > 20`, 15*time.Second)
			b.waitFor("its brand form", `document.querySelector('#brand-save')`, 15*time.Second)
			id := eval[string](b, `decodeURIComponent(location.hash.slice('#/content/'.length))`)
			if note := b.text("#project-id-note"); !strings.Contains(note, id) {
				t.Errorf("the id note says %q, want the id %s", note, id)
			}
			var p struct{ Name, Description string }
			code, body := crAPI(b, "GET", "/content/projects/"+id, nil)
			if err := json.Unmarshal(body, &p); code != 200 || err != nil || p.Name != "Spring launch" || p.Description != "Posts for the spring launch" {
				t.Fatalf("the project made by the page: %d %s", code, body)
			}

			// Rename it: the picker shows the new name.
			b.do(chromedp.Click(chromedp.ID("project-rename"), chromedp.NodeVisible))
			b.waitFor("the rename form", `document.querySelector('#project-name')?.value === 'Spring launch'`, 10*time.Second)
			b.do(chromedp.SetValue(chromedp.ID("project-name"), "Summer launch"), chromedp.Click(chromedp.ID("project-save")))
			b.waitFor("the new name", selectedProject+` === 'Summer launch' && !document.querySelector('#project-form')`, 15*time.Second)
			if _, body = crAPI(b, "GET", "/content/projects/"+id, nil); !strings.Contains(string(body), `"name":"Summer launch"`) {
				t.Errorf("after the rename: %s", body)
			}

			// A duplicate name is refused, in words.
			b.do(chromedp.Click(chromedp.ID("project-new"), chromedp.NodeVisible))
			b.do(chromedp.SetValue(chromedp.ID("project-name"), "summer LAUNCH", chromedp.NodeVisible), chromedp.Click(chromedp.ID("project-save")))
			b.waitFor("the refusal", `document.querySelector('.project-bar .error')`, 15*time.Second)
			if got := b.text(".project-bar .error"); !strings.Contains(got, "409") || !strings.Contains(got, "exists already") {
				t.Errorf("the duplicate name is shown as %q", got)
			}
			b.lookAtWidths("projects-duplicate")
			b.do(chromedp.Click(chromedp.ID("project-cancel")))

			// The project that existed only as an id is in the picker by its
			// name and opens.
			b.do(chromedp.SetValue(chromedp.ID("project-select"), "legacy-blog"),
				chromedp.Evaluate[chromedp.Void](`document.querySelector('#project-select').dispatchEvent(new Event('change'))`))
			b.waitFor("the legacy project", `location.hash === '#/content/legacy-blog' && document.querySelector('#brand input[name="name"]')?.value === 'Legacy'`, 15*time.Second)
			b.waitFor("it selected", selectedProject+` === 'legacy-blog' && !document.querySelector('#project-rename').hidden`, 15*time.Second)
			names := eval[[]string](b, `[...document.querySelectorAll('#project-select option')].map(o => o.textContent)`)
			if strings.Join(names, "|") != "legacy-blog|Summer launch|old-id-7 (no name yet)" {
				t.Errorf("picker options %q", names)
			}
			b.lookAtWidths("projects-legacy")
		})
	}
}
