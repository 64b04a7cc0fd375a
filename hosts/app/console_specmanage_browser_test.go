package app_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
	"github.com/devpilot/devpilot/hosts/sandbox"
	"github.com/devpilot/devpilot/hosts/sandbox/demomodel"
	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
	"github.com/devpilot/devpilot/testkit/fixture"
)

// A specification managed from its page (issue 33, items 3, 5 and 9): a
// note left untitled (its title taken from its first line), a PDF with a
// text layer uploaded through the page and a scanned one refused in words,
// a rename (a bad name's refusal shown), the repository linked from the
// page (the PRPs view then names it), an export to GitHub issues followed to
// done with its issues as links (a second start and a delete while it runs
// refused in words), and a delete confirmed in the page, after which the
// list no longer shows it and the API answers 404. The page is looked at
// 1440 and 390 px wide.
func TestConsoleSpecManage(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := startBrowser(t, d, 1440, 900)
			shots := shotDir()          // where DEVPILOT_LOOK asks to save the pages, to look at them
			shot := func(name string) { // the window as it shows, scrolled to the page's top
				if shots == "" {
					return
				}
				png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
				if err == nil {
					err = os.WriteFile(filepath.Join(shots, string(d)+"-"+name+".png"), png, 0o644)
				}
				if err != nil {
					t.Logf("screenshot %s: %v", name, err)
				}
			}
			b.signInDemo()
			b.goTo("#/specs")
			b.waitFor("the create form", `document.querySelector('#spec-name') && document.querySelector('.spec-input[data-kind="note"] .spec-in-title')`, 10*time.Second)

			// 1. A note without a title: the placeholder says where its
			// title comes from, and creating works.
			placeholder := eval[string](b, `document.querySelector('.spec-input[data-kind="note"] .spec-in-title').placeholder`)
			if !strings.Contains(placeholder, "first line") {
				t.Errorf("the title's placeholder %q does not say it is taken from the first line", placeholder)
			}
			shot("new")
			b.do(chromedp.SendKeys(chromedp.ID("spec-name"), "Gift cards", chromedp.NodeVisible),
				chromedp.SendKeys(chromedp.CSS(`.spec-input[data-kind="note"] .spec-in-content`), "## Checkout with gift cards\n- Customers buy a gift card online\n- Customers redeem a gift card at checkout\n"),
				chromedp.Click(chromedp.ID("spec-create-submit"), chromedp.NodeVisible))
			b.waitFor("the new session", `/^#\/specs\/[0-9a-f-]{36}$/.test(location.hash) && document.querySelector('.spec-name') && document.querySelector('#spec-rename-open')`, 15*time.Second)
			id := eval[string](b, `location.hash.split('/')[2]`)
			b.do(chromedp.Click(chromedp.ID("spec-view-inputs"), chromedp.NodeVisible))
			b.waitFor("the note listed", `document.querySelectorAll('.spec-inputs-table tbody tr').length === 1`, 10*time.Second)
			if got := b.text(".spec-inputs-table tbody tr td:nth-child(2)"); got != "Checkout with gift cards" {
				t.Errorf("the untitled note is titled %q, want its first line", got)
			}

			// 2. A PDF with a text layer, uploaded through the page: the
			// picker accepts it and says so; its text is extracted.
			dir := t.TempDir()
			pdf := filepath.Join(dir, "pricing-brief.pdf")
			scan := filepath.Join(dir, "scanned-contract.pdf")
			if err := os.WriteFile(pdf, fixture.PDF("Gift cards cost between 10 and 500 euros", "Refunds go back to the card"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(scan, fixture.PDF("", ""), 0o644); err != nil {
				t.Fatal(err)
			}
			upload := func(file string) {
				b.do(chromedp.Click(chromedp.CSS(`.spec-add-kind[data-kind="document"]`), chromedp.NodeVisible))
				b.waitFor("the upload form", `document.querySelector('.spec-add input[type="file"]')`, 10*time.Second)
				b.do(chromedp.SetUploadFiles(chromedp.CSS(`.spec-add input[type="file"]`), []string{file}),
					chromedp.Click(chromedp.ID("spec-add-submit"), chromedp.NodeVisible))
			}
			b.do(chromedp.Click(chromedp.CSS(`.spec-add-kind[data-kind="document"]`), chromedp.NodeVisible))
			b.waitFor("the upload form", `document.querySelector('.spec-add input[type="file"]')`, 10*time.Second)
			accept := eval[string](b, `document.querySelector('.spec-add input[type="file"]').accept`)
			hint := b.text(".spec-add .field small")
			for _, want := range []string{".pdf", ".docx", ".md", ".txt"} {
				if !strings.Contains(accept, want) || !strings.Contains(hint, want) {
					t.Errorf("the file picker (accept %q, hint %q) does not offer %s", accept, hint, want)
				}
			}
			b.do(chromedp.EmulateViewport(390, 844))
			b.waitFor("a narrow layout", `window.innerWidth === 390`, 10*time.Second)
			if w := eval[int](b, `document.documentElement.scrollWidth`); w > 390 {
				t.Errorf("the page with the upload form is %d px wide at 390", w)
			}
			b.do(chromedp.ScrollIntoView(chromedp.CSS(`.spec-add`)))
			shot("upload-390")
			b.do(chromedp.EmulateViewport(1440, 900))
			upload(pdf)
			b.waitFor("the PDF listed", `document.querySelectorAll('.spec-inputs-table tbody tr').length === 2`, 15*time.Second)
			if rows := b.text(".spec-inputs-table tbody"); !strings.Contains(rows, "pricing-brief") || !strings.Contains(rows, "text/plain") {
				t.Errorf("inputs after the PDF upload: %q", rows)
			}
			shot("inputs")

			// A scanned PDF (no text layer) is refused, in words, in the page.
			upload(scan)
			b.waitFor("the scan refused", `(e => e && e.textContent.includes('no text layer'))(document.querySelector('.spec-add .error'))`, 15*time.Second)
			if n := eval[int](b, `document.querySelectorAll('.spec-inputs-table tbody tr').length`); n != 2 {
				t.Errorf("%d inputs after the refused scan, want 2", n)
			}

			// A Word document, and a note added without a title, through
			// the add-input form.
			docx := filepath.Join(dir, "meeting-notes.docx")
			if err := os.WriteFile(docx, fixture.DOCX("Support wants to see a card's balance", "Finance wants a monthly report"), 0o644); err != nil {
				t.Fatal(err)
			}
			upload(docx)
			b.waitFor("the Word document listed", `document.querySelectorAll('.spec-inputs-table tbody tr').length === 3`, 15*time.Second)
			b.do(chromedp.Click(chromedp.CSS(`.spec-add-kind[data-kind="note"]`), chromedp.NodeVisible))
			b.waitFor("the note form", `document.querySelector('.spec-add .spec-in-content')`, 10*time.Second)
			if ph := eval[string](b, `document.querySelector('.spec-add .spec-in-title').placeholder`); !strings.Contains(ph, "first line") {
				t.Errorf("the add-input form's title placeholder is %q", ph)
			}
			b.do(chromedp.SendKeys(chromedp.CSS(`.spec-add .spec-in-content`), "\n  Refund rules from finance  \nRefunds are paid back to the card.\n"),
				chromedp.Click(chromedp.ID("spec-add-submit"), chromedp.NodeVisible))
			b.waitFor("the untitled note listed", `document.querySelectorAll('.spec-inputs-table tbody tr').length === 4`, 15*time.Second)
			var v struct {
				Name   string  `json:"name"`
				RepoID *string `json:"repo_id"`
				Inputs []struct {
					Title string `json:"title"`
				} `json:"inputs"`
			}
			get := func() {
				t.Helper()
				code, body := crAPI(b, "GET", "/pse/sessions/"+id, nil)
				if err := json.Unmarshal(body, &v); code != http.StatusOK || err != nil {
					t.Fatalf("GET the session: %d %s", code, body)
				}
			}
			get()
			if len(v.Inputs) != 4 || v.Inputs[0].Title != "Checkout with gift cards" || v.Inputs[1].Title != "pricing-brief" ||
				v.Inputs[2].Title != "meeting-notes" || v.Inputs[3].Title != "Refund rules from finance" {
				t.Errorf("inputs %+v", v.Inputs)
			}

			// 3. Rename: a name with a control character is refused in the
			// page; a good one shows in the heading and in the list.
			b.do(chromedp.Click(chromedp.ID("spec-rename-open"), chromedp.NodeVisible))
			b.waitFor("the rename form", `document.querySelector('#spec-rename-name')`, 10*time.Second)
			b.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('#spec-rename-name').value = 'Gift\tcards'`),
				chromedp.Click(chromedp.ID("spec-rename-save"), chromedp.NodeVisible))
			b.waitFor("the bad name refused", `document.querySelector('#spec-rename-form .error')`, 10*time.Second)
			if msg := b.text("#spec-rename-form .error"); !strings.Contains(msg, "422") {
				t.Errorf("the refusal says %q", msg)
			}
			b.do(chromedp.SetValue(chromedp.ID("spec-rename-name"), "Gift card checkout", chromedp.NodeVisible),
				chromedp.Click(chromedp.ID("spec-rename-save"), chromedp.NodeVisible))
			b.waitFor("the new name", `document.querySelector('.spec-name').textContent === 'Gift card checkout' && !document.querySelector('#spec-rename-form')`, 10*time.Second)
			b.waitFor("the new name in the list", `(a => a && a.textContent.includes('Gift card checkout'))(document.querySelector('.spec-sessions a[aria-current="true"]'))`, 10*time.Second)
			if get(); v.Name != "Gift card checkout" {
				t.Errorf("the API says the name is %q", v.Name)
			}

			// The five stages, without a repository: the PRPs say none is
			// linked.
			b.do(chromedp.Click(chromedp.ID("spec-generate-all"), chromedp.NodeVisible))
			b.waitFor("the five stages", `(s => s && s.dataset.state === 'done')(document.querySelector('.step[data-stage="prps"]')) && document.querySelector('.spec-status-badge').dataset.status === 'ready'`, 90*time.Second)
			b.do(chromedp.Click(chromedp.ID("step-prps"), chromedp.NodeVisible))
			if note := b.text(".spec-prps-repo"); !strings.Contains(note, "No repository is linked") {
				t.Errorf("the PRPs without a repository say %q", note)
			}
			if line := b.text("#spec-repo-line"); !strings.Contains(line, "none linked") {
				t.Errorf("the repository line says %q", line)
			}

			// 4. Link the repository from the page. Without GitHub, or
			// without a connected repository, the page says so plainly (the
			// API's answers are stood in for in the page).
			for _, tc := range []struct{ answer, says string }{
				{`new Response(JSON.stringify({type: 'about:blank', title: 'Service Unavailable', status: 503, code: 'not_configured', detail: 'GitHub is not configured'}), {status: 503, headers: {'Content-Type': 'application/problem+json'}})`, "GitHub is not configured on this server"},
				{`new Response(JSON.stringify({type: 'about:blank', title: 'Precondition Failed', status: 412, code: 'not_connected', detail: 'connect GitHub first'}), {status: 412, headers: {'Content-Type': 'application/problem+json'}})`, "GitHub is not connected yet"},
				{`new Response(JSON.stringify({items: [], next_cursor: null}), {status: 200, headers: {'Content-Type': 'application/json'}})`, "No repositories are connected"},
			} {
				b.do(chromedp.Evaluate[chromedp.Void](`(() => {
					window.__fetch = window.__fetch || window.fetch;
					window.fetch = (u, init) => String(u).startsWith('/scm/repos') ? Promise.resolve(` + tc.answer + `) : window.__fetch(u, init);
				})()`))
				b.do(chromedp.Click(chromedp.ID("spec-repo-open"), chromedp.NodeVisible))
				b.waitFor(tc.says, fmt.Sprintf(`(e => e && e.textContent.includes(%q))(document.querySelector('#spec-repo-form .spec-no-repos'))`, tc.says), 10*time.Second)
				b.do(chromedp.Click(chromedp.ID("spec-repo-open"), chromedp.NodeVisible)) // closes it
				b.waitFor("the panel closed", `!document.querySelector('#spec-repo-form')`, 10*time.Second)
			}
			b.do(chromedp.Evaluate[chromedp.Void](`window.fetch = window.__fetch`))

			// Linked by its owner/name (an unknown one refused in words).
			b.do(chromedp.Click(chromedp.ID("spec-repo-open"), chromedp.NodeVisible))
			b.waitFor("the connected repositories", `[...document.querySelectorAll('#spec-link-repo-select option')].some(o => o.textContent === 'demo/storefront')`, 10*time.Second)
			b.do(chromedp.SendKeys(chromedp.ID("spec-link-repo-name"), "demo/nonexistent", chromedp.NodeVisible),
				chromedp.Click(chromedp.ID("spec-link-repo-save"), chromedp.NodeVisible))
			b.waitFor("an unknown repository refused", `(e => e && e.textContent.includes('not one of the connected repositories'))(document.querySelector('#spec-repo-form .error'))`, 10*time.Second)
			b.do(chromedp.SetValue(chromedp.ID("spec-link-repo-name"), "demo/storefront", chromedp.NodeVisible),
				chromedp.Click(chromedp.ID("spec-link-repo-save"), chromedp.NodeVisible))
			b.waitFor("the repository shown", `(e => e && e.textContent.includes('demo/storefront'))(document.querySelector('#spec-repo-line .spec-repo-name'))`, 10*time.Second)
			b.waitFor("the PRPs naming it", `(e => e && e.textContent.includes('demo/storefront') && e.textContent.includes('before the repository was linked'))(document.querySelector('.spec-prps-repo'))`, 10*time.Second)
			get()
			var repos struct {
				Items []struct {
					ID       string `json:"id"`
					FullName string `json:"full_name"`
				} `json:"items"`
			}
			if code, body := crAPI(b, "GET", "/scm/repos?limit=100", nil); code != http.StatusOK || json.Unmarshal(body, &repos) != nil {
				t.Fatalf("GET /scm/repos: %d %s", code, body)
			}
			storefront := ""
			for _, r := range repos.Items {
				if r.FullName == "demo/storefront" {
					storefront = r.ID
				}
			}
			if v.RepoID == nil || *v.RepoID != storefront || storefront == "" {
				t.Errorf("the session's repo_id is %v, want demo/storefront's %q", v.RepoID, storefront)
			}
			shot("linked")

			// Unlinked, then linked again with the picker.
			b.do(chromedp.Click(chromedp.ID("spec-repo-open"), chromedp.NodeVisible))
			b.waitFor("the unlink button", `document.querySelector('#spec-link-repo-unlink')`, 10*time.Second)
			b.do(chromedp.Click(chromedp.ID("spec-link-repo-unlink"), chromedp.NodeVisible))
			b.waitFor("the repository unlinked", `document.querySelector('#spec-repo-line').textContent.includes('none linked') && document.querySelector('.spec-prps-repo').textContent.includes('No repository is linked')`, 10*time.Second)
			if get(); v.RepoID != nil {
				t.Errorf("the session's repo_id after unlinking is %q", *v.RepoID)
			}
			b.do(chromedp.Click(chromedp.ID("spec-repo-link-one"), chromedp.NodeVisible))
			b.waitFor("the connected repositories", `[...document.querySelectorAll('#spec-link-repo-select option')].some(o => o.textContent === 'demo/storefront')`, 10*time.Second)
			b.do(chromedp.Evaluate[chromedp.Void](`(s => { s.value = [...s.options].find(o => o.textContent === 'demo/storefront').value; })(document.querySelector('#spec-link-repo-select'))`),
				chromedp.Click(chromedp.ID("spec-link-repo-save"), chromedp.NodeVisible))
			b.waitFor("the repository shown again", `(e => e && e.textContent.includes('demo/storefront'))(document.querySelector('#spec-repo-line .spec-repo-name'))`, 10*time.Second)
			if get(); v.RepoID == nil || *v.RepoID != storefront {
				t.Errorf("the session's repo_id after linking again is %v", v.RepoID)
			}

			// 5. Export to GitHub issues. GitHub's secondary rate limit
			// holds the export queued or running, so that a second start
			// and a delete meanwhile are refused (409), in words.
			gh := b.h.sb.GitHub()
			gh.SecondaryRateLimit(time.Second)
			b.do(chromedp.Click(chromedp.ID("spec-export-open"), chromedp.NodeVisible))
			b.waitFor("the export form", `document.querySelector('#spec-export-start') && document.querySelector('#spec-export-repo-select')`, 10*time.Second)
			if def := eval[string](b, `(s => s.options[s.selectedIndex].textContent)(document.querySelector('#spec-export-repo-select'))`); def != "demo/storefront" {
				t.Errorf("the export's repository defaults to %q, want the linked one", def)
			}
			b.do(chromedp.Click(chromedp.ID("spec-export-start"), chromedp.NodeVisible))
			b.waitFor("the export started", `document.querySelector('.spec-export-state')`, 10*time.Second)
			if st := eval[string](b, `document.querySelector('.spec-export-state').dataset.status`); st != "queued" && st != "running" {
				t.Fatalf("the export is %s while GitHub refuses every call", st)
			}
			b.do(chromedp.Click(chromedp.ID("spec-export-start"), chromedp.NodeVisible))
			b.waitFor("the second start refused", `(e => e && e.textContent.includes('queued or running'))(document.querySelector('#spec-export-form .spec-conflict[data-code="export_running"]'))`, 10*time.Second)
			shot("export-running")
			b.do(chromedp.Click(chromedp.ID("spec-delete-open"), chromedp.NodeVisible))
			b.waitFor("the delete confirmation", `document.querySelector('#spec-delete-confirm-btn')`, 10*time.Second)
			b.do(chromedp.Click(chromedp.ID("spec-delete-confirm-btn"), chromedp.NodeVisible))
			b.waitFor("the delete refused while exporting", `document.querySelector('#spec-delete-confirm .spec-conflict[data-code="export_running"]')`, 10*time.Second)
			b.do(chromedp.Click(chromedp.ID("spec-delete-cancel"), chromedp.NodeVisible))
			if code, _ := crAPI(b, "GET", "/pse/sessions/"+id, nil); code != http.StatusOK {
				t.Fatalf("the session is gone after a refused delete: %d", code)
			}
			gh.ClearFaults()
			b.do(chromedp.Click(chromedp.ID("spec-export-open"), chromedp.NodeVisible)) // the export's progress is shown again
			b.waitFor("the export done", `(e => e && e.dataset.status === 'done')(document.querySelector('.spec-export-state'))`, 90*time.Second)
			type link struct{ Kind, Ref, Text, Href string }
			var links []link
			raw := eval[string](b, `JSON.stringify([...document.querySelectorAll('.spec-export-issues li')].map(li => ({kind: li.querySelector('.badge').textContent, ref: li.dataset.ref, text: li.querySelector('a').textContent, href: li.querySelector('a').href})))`)
			if err := json.Unmarshal([]byte(raw), &links); err != nil {
				t.Fatal(err)
			}
			kinds := map[string]int{}
			for _, l := range links {
				kinds[l.Kind]++
			}
			if kinds["story"] == 0 || kinds["epic"] == 0 {
				t.Fatalf("the export shows %v (%+v), want story and epic issues", kinds, links)
			}
			if count := b.text(".spec-export-count"); !strings.Contains(count, fmt.Sprintf("%d of %d", len(links), len(links))) {
				t.Errorf("the export's progress says %q for %d issues", count, len(links))
			}
			// The fake GitHub has each issue the page links to, titled
			// with its id.
			gh.AddUser(sandbox.GitHubLogin, 0).Token("specmanage-test-reader")
			for _, l := range links {
				cut := strings.Index(l.Href, "/demo/storefront/issues/")
				if cut < 0 || "#"+l.Href[strings.LastIndex(l.Href, "/")+1:] != l.Text {
					t.Errorf("issue link %+v", l)
					continue
				}
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, l.Href[:cut]+"/api/v3/repos/demo/storefront/issues/"+l.Text[1:], nil)
				req.Header.Set("Authorization", "token specmanage-test-reader")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				var is struct{ Title string }
				err = json.NewDecoder(resp.Body).Decode(&is)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK || err != nil || !strings.HasPrefix(is.Title, "["+l.Ref+"]") {
					t.Errorf("GitHub's issue %s: %d %q %v, want one titled [%s] …", l.Text, resp.StatusCode, is.Title, err, l.Ref)
				}
			}
			shot("exported")

			// The page at 390 px: nothing wider than the screen.
			b.do(chromedp.EmulateViewport(390, 844))
			b.waitFor("a narrow layout", `window.innerWidth === 390`, 10*time.Second)
			if w := eval[int](b, `document.documentElement.scrollWidth`); w > 390 {
				t.Errorf("the page is %d px wide at 390", w)
			}
			shot("exported-390")
			b.do(chromedp.Click(chromedp.ID("spec-delete-open"), chromedp.NodeVisible))
			b.waitFor("the delete confirmation", `document.querySelector('#spec-delete-confirm-btn')`, 10*time.Second)
			if w := eval[int](b, `document.documentElement.scrollWidth`); w > 390 {
				t.Errorf("the page with the delete confirmation is %d px wide at 390", w)
			}
			shot("delete-390")
			b.do(chromedp.Click(chromedp.ID("spec-delete-cancel"), chromedp.NodeVisible),
				chromedp.EmulateViewport(1440, 900))

			// A delete while a stage generates is refused in words: the
			// model holds its answer until released. The PRPs regenerated
			// are grounded in the linked repository.
			release := make(chan struct{})
			releaseOnce := sync.OnceFunc(func() { close(release) })
			t.Cleanup(releaseOnce)
			model := demomodel.New()
			b.h.sb.Model().SetResponder(func(r *fakeopenai.Request) fakeopenai.Response { <-release; return model.Respond(r) })
			b.do(chromedp.Click(chromedp.ID("stage-regenerate"), chromedp.NodeVisible))
			b.waitFor("the PRPs generating", `document.querySelector('.spec-status-badge').dataset.status === 'generating'`, 10*time.Second)
			b.do(chromedp.Click(chromedp.ID("spec-delete-open"), chromedp.NodeVisible))
			b.waitFor("the delete confirmation", `document.querySelector('#spec-delete-confirm-btn')`, 10*time.Second)
			b.do(chromedp.Click(chromedp.ID("spec-delete-confirm-btn"), chromedp.NodeVisible))
			b.waitFor("the delete refused while generating", `(e => e && e.textContent.includes('being generated'))(document.querySelector('#spec-delete-confirm .spec-conflict[data-code="generation_running"]'))`, 10*time.Second)
			releaseOnce()
			b.waitFor("the PRPs regenerated", `(s => s && s.dataset.state === 'done' && s.textContent.includes('v2'))(document.querySelector('.step[data-stage="prps"]')) && document.querySelector('.spec-status-badge').dataset.status === 'ready'`, 90*time.Second)
			b.waitFor("the PRPs grounded", `(e => e && e.textContent.includes('grounded in the files and commands of demo/storefront'))(document.querySelector('.spec-prps-repo'))`, 10*time.Second)
			if code, _ := crAPI(b, "GET", "/pse/sessions/"+id, nil); code != http.StatusOK {
				t.Fatalf("the session is gone after a refused delete: %d", code)
			}

			// 6. Delete, confirmed in the page, which names what goes.
			what := b.text("#spec-delete-confirm")
			for _, want := range []string{"Gift card checkout", "4 inputs", "6 stage versions", "digests", "exports to GitHub issues"} {
				if !strings.Contains(what, want) {
					t.Errorf("the delete confirmation %q does not name %q", what, want)
				}
			}
			shot("delete")
			b.do(chromedp.Click(chromedp.ID("spec-delete-confirm-btn"), chromedp.NodeVisible))
			b.waitFor("back on the list", `location.hash === '#/specs' && document.querySelector('#spec-name') && document.querySelector('.spec-list .spec-sessions, .spec-list .empty')`, 10*time.Second)
			if eval[bool](b, `[...document.querySelectorAll('.spec-sessions li')].some(li => li.textContent.includes('Gift card checkout'))`) {
				t.Error("the deleted specification is still listed")
			}
			if code, body := crAPI(b, "GET", "/pse/sessions/"+id, nil); code != http.StatusNotFound {
				t.Errorf("GET the deleted session: %d %s", code, body)
			}
		})
	}
}
