package app_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
)

// The Specifications page in a real browser: a session created from a note
// and an uploaded document, taken through the five stages with "Generate
// next", an earlier stage regenerated (later ones marked stale), the
// traceability view, a stage document holding markup shown as text, and an
// admin's standard.
func TestConsoleSpecs(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := startBrowser(t, d)
			b.signInDemo()
			b.goTo("#/specs")
			b.waitFor("the create form", `document.querySelector('#spec-name') && document.querySelector('.spec-list')`, 10*time.Second)

			doc := filepath.Join(t.TempDir(), "gift-cards.md")
			if err := os.WriteFile(doc, []byte("# Gift cards\n\nCustomers want to give credit as a present.\n\n- Customers buy a gift card online\n- Customers redeem a gift card at checkout\n- Support staff see the balance of a gift card\n"), 0o644); err != nil {
				t.Fatal(err)
			}

			// Create: a name, the storefront repository (so the PRPs are
			// grounded in it), a note, and an uploaded .md document.
			b.waitFor("the repository picker", `[...document.querySelectorAll('#spec-repo option')].some(o => o.textContent === 'demo/storefront')`, 10*time.Second)
			b.do(chromedp.Evaluate[chromedp.Void](`(s => { s.value = [...s.options].find(o => o.textContent === 'demo/storefront').value; })(document.querySelector('#spec-repo'))`))
			b.do(chromedp.SendKeys(chromedp.ID("spec-name"), "Gift cards", chromedp.NodeVisible),
				chromedp.SendKeys(chromedp.CSS(`.spec-input[data-kind="note"] .spec-in-title`), "Kickoff notes"),
				chromedp.SendKeys(chromedp.CSS(`.spec-input[data-kind="note"] .spec-in-content`), "- Admins see a monthly report of gift card sales\n"),
				chromedp.Click(chromedp.ID("spec-add-document"), chromedp.NodeVisible),
				chromedp.SetUploadFiles(chromedp.CSS(`.spec-input[data-kind="document"] input[type="file"]`), []string{doc}),
				chromedp.Click(chromedp.ID("spec-create-submit"), chromedp.NodeVisible))
			b.waitFor("the new session", `/^#\/specs\/[0-9a-f-]{36}$/.test(location.hash) && document.querySelector('.spec-name')`, 10*time.Second)
			if got := b.text(".spec-name"); got != "Gift cards" {
				t.Errorf("session name shown %q", got)
			}
			b.waitFor("the session in the list", `[...document.querySelectorAll('.spec-sessions a[aria-current="true"]')].some(a => a.textContent.includes('Gift cards'))`, 10*time.Second)
			b.do(chromedp.Click(chromedp.ID("spec-view-inputs"), chromedp.NodeVisible))
			b.waitFor("both inputs listed", `document.querySelectorAll('.spec-inputs-table tbody tr').length === 2`, 10*time.Second)
			inputs := b.text(".spec-inputs-table tbody")
			for _, want := range []string{"note", "Kickoff notes", "document", "gift-cards", "text/markdown"} {
				if !strings.Contains(inputs, want) {
					t.Errorf("inputs table %q lacks %q", inputs, want)
				}
			}

			// Five stages, each with "Generate next", each shown when ready.
			for _, stage := range []string{"scope", "prd", "epics", "stories", "prps"} {
				b.waitFor("generate next to be offered for "+stage, fmt.Sprintf(
					`(b => b && !b.disabled && b.textContent.toLowerCase().includes(%q))(document.querySelector('#spec-generate-next'))`,
					strings.ToLower(map[string]string{"scope": "Scope", "prd": "PRD", "epics": "Epics", "stories": "Stories", "prps": "PRPs"}[stage])), 15*time.Second)
				b.do(chromedp.Click(chromedp.ID("spec-generate-next"), chromedp.NodeVisible))
				b.waitFor(stage+" to be generated", fmt.Sprintf(
					`document.querySelector('.step[data-stage=%q]').dataset.state === 'done' && document.querySelector('.spec-status-badge').dataset.status === 'ready' && document.querySelector('.stage[data-stage=%q] .spec-doc h2')`, stage, stage), 20*time.Second)
			}
			b.waitFor("the pipeline complete", `document.querySelector('#spec-generate-next').disabled && document.querySelector('.spec-status').textContent.includes('All five stages')`, 5*time.Second)
			if got := b.text(`.spec-sessions a[aria-current="true"]`); !strings.Contains(got, "ready") || !strings.Contains(got, "all stages done") {
				t.Errorf("the list entry was not updated: %q", got)
			}

			// The PRPs are grounded in the linked repository: they name its
			// files and the commands its package.json shows.
			b.do(chromedp.Click(chromedp.ID("step-prps"), chromedp.NodeVisible))
			b.waitFor("the PRPs document", `document.querySelector('.stage[data-stage="prps"] .spec-doc h2')`, 5*time.Second)
			if got := b.text(`.stage[data-stage="prps"] .spec-doc`); !strings.Contains(got, "src/app/") || !strings.Contains(got, "npm run") {
				t.Errorf("the PRPs are not grounded in demo/storefront: %.600q", got)
			}

			// Each stage's document, version and data.
			b.do(chromedp.Click(chromedp.ID("step-epics"), chromedp.NodeVisible))
			b.waitFor("the epics document", `document.querySelector('.stage[data-stage="epics"] .spec-doc h2')`, 5*time.Second)
			if got := b.text(`.stage[data-stage="epics"] .spec-doc`); !strings.Contains(got, "EP-1") || !strings.Contains(got, "REQ-1") {
				t.Errorf("epics document %q", got)
			}
			if got := b.text(".stage-version"); got != "version 1" {
				t.Errorf("epics version shown %q", got)
			}
			if n := eval[int](b, `JSON.parse(document.querySelector('.stage-data pre').textContent).epics.length`); n < 1 {
				t.Errorf("structured data holds %d epics", n)
			}
			clearToast(b)
			b.readmeShot("specs")

			// The traceability view: every requirement → epic → story → PRP,
			// as the API answers it (console_trace_browser_test.go holds the
			// rows to the API's and the CSV's).
			b.do(chromedp.Click(chromedp.ID("spec-view-trace"), chromedp.NodeVisible))
			b.waitFor("the traceability table", `document.querySelector('.trace-table tbody tr')`, 5*time.Second)
			type traceShape struct {
				Reqs, Rows, Complete, Flags int
				Clean                       bool
			}
			tr := eval[traceShape](b, `(() => {
				const rows = [...document.querySelectorAll('.trace-table tbody tr')];
				return {
					reqs: new Set(rows.map(r => r.dataset.requirement)).size,
					rows: rows.length,
					complete: rows.filter(r => r.dataset.status === 'complete' && r.dataset.prp).length,
					flags: document.querySelectorAll('.trace-flag').length,
					clean: !!document.querySelector('.trace-clean'),
				};
			})()`)
			if tr.Reqs < 3 || tr.Complete != tr.Rows || tr.Flags != 0 || !tr.Clean {
				t.Errorf("traceability view: %+v", tr)
			}
			if got := b.text(".trace-table"); !strings.Contains(got, "REQ-1") || !strings.Contains(got, "EP-1") || !strings.Contains(got, "ST-1.1") || !strings.Contains(got, "PRP-1.1") {
				t.Errorf("traceability table %q", got)
			}
			clearToast(b)
			b.readmeShot("traceability")

			// Orphans, uncovered requirements and dangling references are
			// said in words (a made-up answer: the demo model's trace is
			// clean).
			b.do(chromedp.Evaluate[chromedp.Void](`import('/console/js/pages/specs/trace.js').then(m => {
				const it = (id, title) => ({id, title});
				const el = document.createElement('section');
				el.append(...m.renderTrace('sid', {
					prd_generated: true, epics_generated: true,
					rows: [
						{requirement: it('REQ-1', 'Buy'), epic: it('EP-1', 'Buying'), story: it('ST-1.1', 'Pay'), prp: it('PRP-1.1', 'Pay'), status: 'complete', note: ''},
						{requirement: it('REQ-2', 'Redeem'), epic: null, story: null, prp: null, status: 'uncovered', note: 'no epic lists REQ-2'},
						{requirement: null, epic: it('EP-1', 'Buying'), story: it('ST-1.2', 'Receipt'), prp: null, status: 'orphan', note: 'ST-1.2 cites no requirement of its epic EP-1'},
						{requirement: null, epic: it('EP-9', ''), story: it('ST-9.1', 'Stray'), prp: null, status: 'orphan', note: 'ST-9.1 names unknown epic EP-9'},
					],
					summary: {requirements: 2, uncovered: ['REQ-2'], orphans: ['ST-1.2', 'ST-9.1'], stale: [],
						dangling: [{from: 'ST-9.1', ref: 'EP-9', note: 'ST-9.1 names unknown epic EP-9'}]},
				}, []));
				el.id = 'trace-fixture';
				el.hidden = true;
				document.body.append(el);
			})`, chromedp.EvalAwaitPromise))
			fixture := eval[map[string][]string](b, `(() => {
				const q = (s) => [...document.querySelectorAll('#trace-fixture ' + s)].map(e => e.textContent);
				return {
					uncovered: q('.trace-uncovered li'), orphans: q('.trace-orphans li'), dangling: q('.trace-dangling li'),
					flags: q('.trace-table .trace-flag'), statuses: q('.trace-table .trace-status'),
				};
			})()`)
			for key, want := range map[string]string{
				"uncovered": "✖ Uncovered REQ-2: no epic lists it",
				"orphans":   "⚠ Orphan ST-1.2: cites no requirement of its epic EP-1|⚠ Orphan ST-9.1: names unknown epic EP-9",
				"dangling":  "✖ Dangling ST-9.1 names unknown epic EP-9",
				"flags":     "✖ Dangling: names nothing",
				"statuses":  "✔ Complete|✖ Uncovered|⚠ Orphan|⚠ Orphan",
			} {
				if got := strings.Join(fixture[key], "|"); got != want {
					t.Errorf("%s: %q, want %q", key, got, want)
				}
			}

			// Regenerating an earlier stage makes a new version and marks the
			// later stages stale.
			b.do(chromedp.Click(chromedp.ID("step-prd"), chromedp.NodeVisible),
				chromedp.Click(chromedp.ID("stage-regenerate"), chromedp.NodeVisible))
			b.waitFor("prd version 2 and stale later stages", `document.querySelector('.spec-status-badge').dataset.status === 'ready'
				&& document.querySelector('.stage[data-stage="prd"]') && document.querySelector('.stage[data-stage="prd"]').dataset.version === '2'
				&& ['epics', 'stories', 'prps'].every(s => document.querySelector('.step[data-stage="' + s + '"]').dataset.state === 'stale')`, 20*time.Second)
			if got := b.text(`.step[data-stage="epics"]`); !strings.Contains(got, "stale") {
				t.Errorf("a stale stage says %q", got)
			}
			if got := b.text("#spec-generate-next"); got != "Generate next: Epics" {
				t.Errorf("after regenerating the PRD, the next button says %q", got)
			}

			// The page is usable on a phone: nothing wider than the screen.
			b.do(chromedp.EmulateViewport(390, 844))
			b.waitFor("no horizontal scroll at 390 px", `document.documentElement.scrollWidth <= 390`, 5*time.Second)
			b.do(chromedp.EmulateViewport(1280, 900))

			// "Generate all" takes a session through the five stages from
			// one click; the page learns each state from the progress
			// stream, and asks for nothing while nothing changes.
			all := createSpec(t, b, "One click", "Notes", "- Users pay by card\n- Users see a receipt\n")
			b.goTo("#/specs/" + all)
			b.waitFor("generate all offered", `(n => n && n.textContent === 'One click')(document.querySelector('.spec-name')) && (b => b && !b.disabled)(document.querySelector('#spec-generate-all'))`, 10*time.Second)
			b.do(chromedp.Evaluate[chromedp.Void](`(() => {
				window.__gets = 0;
				const real = window.fetch;
				window.fetch = (url, opts) => {
					if (/\/pse\/sessions\/[0-9a-f-]{36}$/.test(String(url)) && (!opts || !opts.method || opts.method === 'GET')) window.__gets++;
					return real(url, opts);
				};
			})()`))
			b.do(chromedp.Click(chromedp.ID("spec-generate-all"), chromedp.NodeVisible))
			b.waitFor("all five stages from one click", `document.querySelector('.spec-status').textContent.includes('All five stages') && document.querySelectorAll('.step[data-state="done"]').length === 5`, 60*time.Second)
			gets := eval[int](b, `window.__gets`)
			time.Sleep(2500 * time.Millisecond)
			if after := eval[int](b, `window.__gets`); after != gets {
				t.Errorf("the page fetched the session %d times while nothing changed", after-gets)
			}
			if gets > 12 {
				t.Errorf("the page fetched the session %d times for five stages", gets)
			}
			b.do(chromedp.Evaluate[chromedp.Void](`location.reload()`))
			// The reload has to land before the next page is opened: a hash
			// set while it is pending is lost to the reload's own URL.
			b.waitFor("the reloaded page", `window.__gets === undefined && document.readyState === 'complete' && document.querySelector('.spec-name')`, 15*time.Second)

			// A stage document holding markup shows it as text.
			xss := "<script>window.__xss=1</script> <img src=x onerror=window.__xss=2> [click](javascript:window.__xss=3)"
			id := createSpec(t, b, "Markup", xss, "- Users pay by card\n- Users see a receipt\n")
			b.goTo("#/specs/" + id)
			b.waitFor("the markup session", `(n => n && n.textContent === 'Markup')(document.querySelector('.spec-name')) && (b => b && !b.disabled)(document.querySelector('#spec-generate-next'))`, 10*time.Second)
			b.do(chromedp.Click(chromedp.ID("spec-generate-next"), chromedp.NodeVisible))
			b.waitFor("the markup scope", `document.querySelector('.stage[data-stage="scope"] .spec-doc h2')`, 20*time.Second)
			if got := b.text(".spec-doc h2"); !strings.Contains(got, "<script>") || !strings.Contains(got, "<img src=x onerror=") || !strings.Contains(got, "javascript:") {
				t.Errorf("the markup was not shown as text: %q", got)
			}
			if n := eval[int](b, `document.querySelectorAll('.spec-doc script, .spec-doc img, .spec-doc a[href^="javascript"], main [onerror]').length`); n != 0 {
				t.Errorf("%d elements made from the model's markup", n)
			}
			if v := eval[bool](b, `window.__xss === undefined`); !v {
				t.Error("the markup ran")
			}

			// A failed generation shows its error, as text. The demo model
			// never fails, so the page's own fetch is wrapped (by the test)
			// to answer the generate and report the session failed.
			b.do(chromedp.Evaluate[chromedp.Void](`(() => {
				const real = window.fetch;
				window.fetch = async (url, opts) => {
					const u = String(url);
					const json = (v, status) => new Response(JSON.stringify(v), {status, headers: {'Content-Type': 'application/json'}});
					if (u.endsWith('/generate')) return json({session_id: 'x', stage: 'prd', status: 'generating'}, 202);
					if (/\/pse\/sessions\/[0-9a-f-]{36}$/.test(u)) {
						const s = await (await real(url, opts)).json();
						return json({...s, status: 'failed', error: {stage: 'prd', code: 'invalid_output', message: 'the model answered <b>twice</b> with invalid JSON'}}, 200);
					}
					return real(url, opts);
				};
			})()`))
			b.do(chromedp.Click(chromedp.ID("spec-generate-next"), chromedp.NodeVisible))
			b.waitFor("the failure shown", `document.querySelector('.spec-error') && document.querySelector('.step[data-stage="prd"]').dataset.state === 'failed'`, 10*time.Second)
			if got := b.text(".spec-error"); !strings.Contains(got, "Generating PRD failed (invalid_output): the model answered <b>twice</b> with invalid JSON") {
				t.Errorf("failure shown as %q", got)
			}
			if got := b.text(".spec-status-badge"); got != "failed" {
				t.Errorf("status badge %q", got)
			}

			// An admin adds a standard, sees it listed, edits it, deletes it.
			b.goTo("#/specs/standards")
			b.waitFor("the standards form", `document.querySelector('.std-form input[name="std-title"]') && document.querySelector('.std-list .empty')`, 10*time.Second)
			b.do(chromedp.SendKeys(chromedp.CSS(`.std-form input[name="std-title"]`), "Accessibility", chromedp.NodeVisible),
				chromedp.SendKeys(chromedp.CSS(`.std-form textarea[name="std-body"]`), "Every story meets **WCAG 2.2 AA**."),
				chromedp.Click(chromedp.CSS(`.std-form input[value="scope"]`)),
				chromedp.Click(chromedp.CSS(`.std-form input[value="prd"]`)),
				chromedp.Click(chromedp.CSS(`.std-form button[type="submit"]`)))
			b.waitFor("the standard listed", `document.querySelector('.std-items .std-name')`, 10*time.Second)
			if got := b.text(".std-items li"); !strings.Contains(got, "Accessibility") || !strings.Contains(got, "WCAG 2.2 AA") || !strings.Contains(got, "stories") || strings.Contains(got, "scope") {
				t.Errorf("standard listed as %q", got)
			}
			if n := eval[int](b, `document.querySelectorAll('.std-items .std-body strong').length`); n != 1 {
				t.Errorf("the standard's Markdown was not rendered (%d strong)", n)
			}
			b.do(chromedp.Click(chromedp.CSS(".std-items .std-edit"), chromedp.NodeVisible))
			b.waitFor("the edit form", `document.querySelector('.std-form input[name="std-title"]').value === 'Accessibility'`, 5*time.Second)
			b.do(chromedp.SetValue(chromedp.CSS(`.std-form input[name="std-title"]`), "Accessibility first"),
				chromedp.Click(chromedp.CSS(`.std-form button[type="submit"]`)))
			b.waitFor("the edited standard", `(e => e && e.textContent === 'Accessibility first')(document.querySelector('.std-items .std-name'))`, 10*time.Second)
			b.do(chromedp.Click(chromedp.CSS(".std-items .std-delete"), chromedp.NodeVisible))
			b.confirmInPage()
			b.waitFor("the standard deleted", `!document.querySelector('.std-items') && document.querySelector('.std-list .empty')`, 10*time.Second)
		})
	}
}

// createSpec creates a session with one note through the API and returns
// its id.
func createSpec(t *testing.T, b *browser, name, title, content string) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"name": name, "inputs": []map[string]string{{"kind": "note", "title": title, "content": content}}})
	req, _ := http.NewRequest(http.MethodPost, b.base+"/pse/sessions", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+b.h.sb.Token())
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s struct{ ID string }
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /pse/sessions = %d, %v", resp.StatusCode, err)
	}
	return s.ID
}

// clearToast empties the live region before a README screenshot, so that a
// passing message does not cover the page.
func clearToast(b *browser) {
	b.do(chromedp.Evaluate[chromedp.Void](`document.getElementById('toast').textContent = ''`))
}
