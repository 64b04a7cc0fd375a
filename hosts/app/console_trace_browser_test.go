package app_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
)

// The traceability view in a real browser shows the rows of
// GET …/traceability, which are those of the export's traceability.csv: a
// story is under the requirement it cites, not under every requirement of
// its epic. Its ids, and those in the stage documents, are links that land
// on the item (scrolled to and highlighted); ids in code stay text. On both
// databases, at 1440 and 390 px.
func TestConsoleTrace(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := startBrowser(t, d)
			b.signInDemo()
			// Four requirements; the demo model groups two per epic and writes
			// one story per requirement, citing it alone.
			id := createSpec(t, b, "Gift cards", "Notes", "- Customers buy a gift card online\n- Customers redeem a gift card at checkout\n"+
				"- Support staff see the balance of a gift card\n- Admins see a monthly report of gift card sales\n")
			b.goTo("#/specs/" + id)
			b.waitFor("generate all offered", `(b => b && !b.disabled)(document.querySelector('#spec-generate-all'))`, 10*time.Second)
			b.do(chromedp.Click(chromedp.ID("spec-generate-all"), chromedp.NodeVisible))
			b.waitFor("the PRPs generated", `document.querySelector('.step[data-stage="prps"]').dataset.state === 'done' && document.querySelector('.spec-status-badge').dataset.status === 'ready'`, 60*time.Second)

			// The view's rows are the API's and the CSV's.
			b.do(chromedp.Click(chromedp.ID("spec-view-trace"), chromedp.NodeVisible))
			b.waitFor("the traceability table", `document.querySelector('.trace-table tbody tr')`, 10*time.Second)
			shown := eval[[]string](b, `[...document.querySelectorAll('.trace-table tbody tr')].map(tr =>
				[tr.dataset.requirement, tr.dataset.epic, tr.dataset.story, tr.dataset.prp].join('>') + ' ' + tr.dataset.status + ' ' + tr.querySelector('.trace-note').textContent)`)
			code, body := crAPI(b, "GET", "/pse/sessions/"+id+"/traceability", nil)
			var api traceAnswer
			if err := json.Unmarshal(body, &api); code != 200 || err != nil {
				t.Fatalf("GET traceability: %d %s", code, body)
			}
			code, archive := crAPI(b, "GET", "/pse/sessions/"+id+"/export", nil)
			if code != 200 {
				t.Fatalf("export: %d", code)
			}
			fromCSV := csvTraceLines(t, archive)
			if strings.Join(shown, "\n") != strings.Join(api.lines(), "\n") || strings.Join(shown, "\n") != strings.Join(fromCSV, "\n") {
				t.Errorf("the view's rows:\n%s\nthe API's:\n%s\ntraceability.csv's:\n%s", strings.Join(shown, "\n"), strings.Join(api.lines(), "\n"), strings.Join(fromCSV, "\n"))
			}
			// EP-1 lists REQ-1 and REQ-2; ST-1.1 cites REQ-1 and ST-1.2 REQ-2.
			joined := strings.Join(shown, "\n")
			for _, want := range []string{"REQ-1>EP-1>ST-1.1>PRP-1.1 complete", "REQ-2>EP-1>ST-1.2>PRP-1.2 complete", "REQ-4>EP-2>ST-2.2>PRP-2.2 complete"} {
				if !strings.Contains(joined, want) {
					t.Errorf("no row %q in\n%s", want, joined)
				}
			}
			if strings.Contains(joined, "REQ-1>EP-1>ST-1.2") || strings.Contains(joined, "REQ-2>EP-1>ST-1.1") {
				t.Errorf("a story is listed under a requirement it does not cite:\n%s", joined)
			}
			if len(shown) != 4 || !strings.Contains(b.text(".trace-summary"), "no findings") || b.text(".trace-clean") == "" {
				t.Errorf("rows %d, summary %q", len(shown), b.text(".trace-summary"))
			}
			if got := b.text(`.trace-table tr[data-story="ST-1.2"] td[data-label="Status"]`); got != "✔ Complete" {
				t.Errorf("a status in words: %q", got)
			}

			// Screens at 1440 and 390 px for a person to look at, with
			// DEVPILOT_SCREENSHOTS=1.
			shots := filepath.Join(failureDir(), "trace")
			shot := func(name string) {
				if os.Getenv("DEVPILOT_SCREENSHOTS") == "1" {
					b.saveScreenshot(shots, string(d)+"-"+name)
				}
			}
			for _, w := range []int{1440, 390} {
				b.do(chromedp.EmulateViewport(int64(w), 900))
				b.waitFor(fmt.Sprintf("no horizontal scroll at %d px", w), fmt.Sprintf(`document.documentElement.scrollWidth <= %d`, w), 5*time.Second)
				shot(fmt.Sprintf("trace-%d", w))
			}
			b.do(chromedp.EmulateViewport(1280, 900))

			// A story's id lands on the stories stage at that story.
			b.do(chromedp.Click(chromedp.CSS(`.trace-table tr[data-story="ST-2.2"] a.spec-id-link[data-ref="ST-2.2"]`), chromedp.NodeVisible))
			landed := func(stage, item string) {
				t.Helper()
				b.waitFor("landing on "+item, fmt.Sprintf(`location.hash === %q && document.querySelector('.stage[data-stage=%q]')
					&& (e => e && e.classList.contains('spec-target') && document.activeElement === e
						&& e.getBoundingClientRect().top >= 0 && e.getBoundingClientRect().bottom <= innerHeight)(document.getElementById(%q))`,
					"#/specs/"+id+"/"+stage+"/"+item, stage, "spec-item-"+item), 10*time.Second)
				if n := eval[int](b, `document.querySelectorAll('.spec-target').length`); n != 1 {
					t.Errorf("%d items highlighted", n)
				}
			}
			landed("stories", "ST-2.2")
			if got := b.text("#spec-item-ST-2\\.2"); !strings.HasPrefix(got, "ST-2.2: ") {
				t.Errorf("landed on %q", got)
			}
			shot("landed-story")
			// An id of the same stage lands without leaving the page.
			b.do(chromedp.Evaluate[chromedp.Void](`window.__same = true`))
			b.do(chromedp.Click(chromedp.CSS(`.stage[data-stage="stories"] .spec-doc a.spec-id-link[data-ref="ST-2.1"]`), chromedp.NodeVisible))
			landed("stories", "ST-2.1")
			if !eval[bool](b, `window.__same === true`) {
				t.Errorf("the page was reloaded")
			}

			// A requirement's id in the epics document lands on the PRD at it.
			b.do(chromedp.Click(chromedp.ID("step-epics"), chromedp.NodeVisible))
			b.waitFor("the epics document", `document.querySelector('.stage[data-stage="epics"] .spec-doc a.spec-id-link[data-ref="REQ-3"]')`, 10*time.Second)
			if got := eval[string](b, `document.querySelector('.stage[data-stage="epics"] .spec-doc h3').id`); got != "spec-item-EP-1" {
				t.Errorf("the first epic's heading has id %q", got)
			}
			b.do(chromedp.Click(chromedp.CSS(`.stage[data-stage="epics"] .spec-doc a.spec-id-link[data-ref="REQ-3"]`), chromedp.NodeVisible))
			landed("prd", "REQ-3")
			if got := b.text("#spec-item-REQ-3"); !strings.HasPrefix(got, "REQ-3: ") {
				t.Errorf("landed on %q", got)
			}
			b.do(chromedp.EmulateViewport(390, 844))
			shot("landed-requirement-390")
			b.do(chromedp.EmulateViewport(1280, 900))

			// Ids in code stay text; markup stays text; a heading defining
			// an item gets its anchor, not a link to itself.
			type linked struct {
				Links   []string
				Anchor  string
				Bold    int
				Code    string
				Defined string
			}
			got, err := chromedp.Run(b.ctx, chromedp.Evaluate[linked](`(() => {
				return Promise.all([import('/console/js/md.js'), import('/console/js/pages/specs/links.js')]).then(([md, links]) => {
					const el = document.createElement('div');
					el.append(md.render("## ST-1.1: Pay\n\nSee REQ-1, EP-2 and ST-1.2 but not `+"`REQ-2`"+` or NOPE-1 or REQ-1.5.\n\n`+"```"+`\nPRP-1.1 EP-1\n`+"```"+`\n\n<b onclick=\"x\">PRP-2.1</b>\n"));
					links.linkIds(el, 'sid');
					return {
						links: [...el.querySelectorAll('a')].map(a => a.dataset.ref + ' ' + a.getAttribute('href')),
						anchor: el.querySelector('h3').id,
						bold: el.querySelectorAll('b').length,
						code: el.querySelector('pre').textContent + '|' + el.querySelector('p code').textContent,
						defined: el.querySelector('h3').querySelectorAll('a').length + '',
					};
				});
			})()`, chromedp.EvalAwaitPromise))
			if err != nil {
				t.Fatal(err)
			}
			wantLinks := []string{"REQ-1 #/specs/sid/prd/REQ-1", "EP-2 #/specs/sid/epics/EP-2", "ST-1.2 #/specs/sid/stories/ST-1.2", "PRP-2.1 #/specs/sid/prps/PRP-2.1"}
			if strings.Join(got.Links, ",") != strings.Join(wantLinks, ",") || got.Anchor != "spec-item-ST-1.1" || got.Bold != 0 ||
				got.Code != "PRP-1.1 EP-1|REQ-2" || got.Defined != "0" {
				t.Errorf("linkIds: %+v", got)
			}
		})
	}
}
