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
	"github.com/devpilot/devpilot/hosts/app"
)

// pubItem is what the publishing browser test reads of a content item.
type pubItem struct {
	ID           string
	Status       string
	Version      int
	Body         string
	PublishedURL string `json:"published_url"`
	PublishedVia string `json:"published_via"`
	GeneratedBy  *struct {
		Kind     string
		Model    string
		UserID   string `json:"user_id"`
		UserName string `json:"user_name"`
		Sandbox  bool
	} `json:"generated_by"`
}

func getPubItem(b *browser, id string) pubItem {
	b.t.Helper()
	code, body := crAPI(b, "GET", "/content/"+id, nil)
	var it pubItem
	if err := json.Unmarshal(body, &it); code != 200 || err != nil {
		b.t.Fatalf("GET content %s: %d %s", id, code, body)
	}
	return it
}

// moveItem changes an item through the API as another client would; fields
// are sent with the item's current version.
func moveItem(b *browser, id string, fields map[string]any) pubItem {
	b.t.Helper()
	it := getPubItem(b, id)
	code, body := crAPI(b, "PUT", "/content/"+id, fields, "If-Match", fmt.Sprintf(`"%d"`, it.Version))
	if code != 200 {
		b.t.Fatalf("PUT content %s %v: %d %s", id, fields, code, body)
	}
	return getPubItem(b, id)
}

// publishShots saves the page at 1440 and 390 px wide, whole and as the
// viewport shows the publishing part, where DEVPILOT_LOOK asks (shotDir).
func publishShots(b *browser, name string) {
	dir := shotDir()
	if dir == "" {
		return
	}
	for _, w := range []int64{1440, 390} {
		b.do(chromedp.EmulateViewport(w, 900))
		time.Sleep(300 * time.Millisecond)
		b.saveScreenshot(dir, fmt.Sprintf("%s-%s-%d", sanitize(b.t.Name()), name, w))
		// What the dialog or the targets show, in the viewport.
		b.do(chromedp.Evaluate[chromedp.Void](`(document.querySelector('dialog[open] .item-publishing:not([hidden])') || document.querySelector('#targets')).scrollIntoView()`),
			chromedp.Sleep(200*time.Millisecond))
		png, err := chromedp.Run(b.ctx, chromedp.CaptureScreenshot())
		if err != nil {
			b.t.Logf("screenshot: %v", err)
			continue
		}
		_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%s-%d-view.png", sanitize(b.t.Name()), name, w)), png, 0o644)
	}
	b.do(chromedp.EmulateViewport(1280, 900))
}

// TestConsolePublish publishes for real from the console, on both databases:
// a webhook target made in the page (its secret shown once) pointing at a
// fake that checks the signature; an approved item published through it,
// the page then showing the publication succeeded, its remote URL and the
// item published via the target; a scheduled publication cancelled; a
// blocking banned word refused in words; an edit by hand said to be the
// demo user's, a sandbox draft said to be the sandbox model's; and the
// target deleted after a confirmation in the page.
func TestConsolePublish(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			rc := newReceiver(t, 0)
			b := startBrowserWith(t, d, map[string]string{app.EnvPublishAllowPrivate: "1"})
			b.signInDemo()
			const project = "7c2d9b1e-4a3f-4e6d-8b5a-1f0e9d8c7b61"
			b.goTo("#/content/" + project)

			// Two sandbox drafts to publish.
			code, body := crAPI(b, "POST", "/content/briefs", map[string]any{"project_id": project, "title": "Spring launch",
				"goal": "Announce the spring plans.", "length": map[string]int{"min_words": 20, "max_words": 200}})
			var brief struct{ ID string }
			if err := json.Unmarshal(body, &brief); code != 201 || err != nil {
				t.Fatalf("create brief: %d %s", code, body)
			}
			code, body = crAPI(b, "POST", "/content/generate", map[string]any{"brief_id": brief.ID, "variants": 2})
			var gen struct{ Items []pubItem }
			if err := json.Unmarshal(body, &gen); code != 202 || err != nil || len(gen.Items) != 2 {
				t.Fatalf("generate: %d %s", code, body)
			}
			idA, idB := gen.Items[0].ID, gen.Items[1].ID
			b.do(chromedp.Click(chromedp.ID("board-refresh"), chromedp.NodeVisible))
			b.waitFor("two drafts", `document.querySelectorAll('.board-col[data-status="draft"] .content-card').length === 2`, 60*time.Second)
			for _, id := range []string{idA, idB} {
				if it := getPubItem(b, id); it.GeneratedBy == nil || it.GeneratedBy.Kind != "model" || !it.GeneratedBy.Sandbox {
					t.Errorf("a sandbox draft's generated_by: %+v", it.GeneratedBy)
				}
			}
			cardA := fmt.Sprintf(`.content-card[data-id=%q]`, idA)
			if got := b.text(cardA + " .made-by"); !strings.Contains(got, "sandbox model") {
				t.Errorf("the sandbox draft's card says %q", got)
			}

			// A webhook target, made in the page: its secret is shown once.
			b.waitFor("the targets", `document.querySelector('#targets .targets-list .empty')`, 15*time.Second)
			b.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('details.new-target').open = true`),
				chromedp.SetValue(chromedp.CSS(`#targets input[name="target-name"]`), "Hooks fake", chromedp.NodeVisible),
				chromedp.SetValue(chromedp.CSS(`#targets input[name="target-url"]`), rc.srv.URL+"/hooks/devpilot", chromedp.NodeVisible),
				chromedp.Click(chromedp.ID("target-create")))
			b.waitFor("the secret", `document.querySelector('#targets .secret-once input')?.value || document.querySelector('.target-form .error')`, 15*time.Second)
			if e := eval[string](b, `document.querySelector('.target-form .error')?.textContent || ''`); e != "" {
				t.Fatalf("creating the target: %s", e)
			}
			secret := eval[string](b, `document.querySelector('#targets .secret-once input').value`)
			if !strings.HasPrefix(secret, "whsec_") {
				t.Fatalf("the secret shown: %q", secret)
			}
			if got := b.text("#targets .secret-once"); !strings.Contains(got, "will not be shown again") {
				t.Errorf("the secret box says %q", got)
			}
			rc.mu.Lock()
			rc.secret = secret
			rc.mu.Unlock()
			b.waitFor("the target listed", `[...document.querySelectorAll('#targets .target-name')].some(e => e.textContent === 'Hooks fake')`, 15*time.Second)
			publishShots(b, "targets-secret")
			b.do(chromedp.Click(chromedp.ID("target-secret-done"), chromedp.NodeVisible))
			b.waitFor("the secret gone", `!document.querySelector('#targets .secret-once')`, 15*time.Second)
			code, body = crAPI(b, "GET", "/content/targets?project_id="+project, nil)
			if code != 200 || strings.Contains(string(body), secret) || !strings.Contains(string(body), `"has_secret":true`) {
				t.Errorf("the targets listed: %d %s", code, body)
			}

			// Item A, edited by hand in the page, says whose words it has.
			b.do(chromedp.Click(chromedp.CSS(cardA+" .card-open"), chromedp.NodeVisible))
			b.waitFor("item A's dialog", `document.querySelector('dialog.content-item[open][data-loaded] .made-by')`, 15*time.Second)
			if got := b.text("dialog.content-item .item-meta"); !strings.Contains(got, "Generated by the sandbox model") {
				t.Errorf("the sandbox draft's dialog says %q", got)
			}
			b.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('dialog.content-item details.item-edit').open = true`),
				chromedp.SetValue(chromedp.CSS(`dialog.content-item textarea[name="body"]`), "Spring is here: our new plans start today, with more storage, faster support and a simpler price for every team, written by hand.", chromedp.NodeVisible),
				chromedp.Click(chromedp.ID("item-save")))
			b.waitFor("edited by the demo user", `document.querySelector('dialog.content-item .made-by')?.textContent === 'Edited by demo@example.com'`, 15*time.Second)
			if it := getPubItem(b, idA); it.GeneratedBy == nil || it.GeneratedBy.Kind != "user" || it.GeneratedBy.UserName != "demo@example.com" || it.GeneratedBy.UserID == "" {
				t.Errorf("an edited item's generated_by: %+v", it.GeneratedBy)
			}

			// Approved in the page, then published through the target: the
			// fake gets the signed item, and the page shows it published.
			b.do(chromedp.Click(chromedp.CSS(`dialog.content-item button[data-to="in_review"]`), chromedp.NodeVisible))
			b.waitFor("in review", `document.querySelector('dialog.content-item button[data-to="approved"]')`, 15*time.Second)
			b.do(chromedp.Click(chromedp.CSS(`dialog.content-item button[data-to="approved"]`), chromedp.NodeVisible))
			b.waitFor("approved, with Publish…", `document.querySelector('dialog.content-item details.item-publish')`, 15*time.Second)
			if e := eval[string](b, `document.querySelector('dialog.content-item .item-errors')?.textContent || ''`); e != "" {
				t.Fatalf("approving: %s", e)
			}
			b.do(chromedp.Click(chromedp.CSS(`dialog.content-item details.item-publish > summary`), chromedp.NodeVisible))
			b.waitFor("the target in the picker", `[...document.querySelectorAll('dialog.content-item select[name="publish-target"] option')].some(o => o.textContent === 'Hooks fake (Webhook)')`, 15*time.Second)
			publishShots(b, "publish-form")
			b.do(chromedp.SetValue(chromedp.CSS(`dialog.content-item select[name="publish-target"]`),
				eval[string](b, `[...document.querySelectorAll('dialog.content-item select[name="publish-target"] option')].find(o => o.textContent === 'Hooks fake (Webhook)').value`)),
				chromedp.Click(chromedp.ID("item-publish")))
			select {
			case got := <-rc.arrived:
				if !got.valid {
					t.Errorf("the delivery's signature %q does not check with the secret shown", got.signature)
				}
				item, _ := got.body["item"].(map[string]any)
				if item["id"] != idA || !strings.Contains(fmt.Sprint(item["body"]), "written by hand") {
					t.Errorf("the delivery's body: %v", got.body)
				}
			case <-time.After(60 * time.Second):
				t.Fatalf("no delivery reached the webhook fake; deliveries: %+v", rc.deliveries())
			}
			b.waitFor("the publication succeeded", `document.querySelector('dialog.content-item .pub[data-status="succeeded"]')`, 60*time.Second)
			b.waitFor("the item published via the target", `document.querySelector('dialog.content-item .item-meta .published-line[data-via="target"]')?.textContent.includes('Published via Hooks fake')`, 30*time.Second)
			meta := b.text("dialog.content-item .item-meta")
			if !strings.Contains(meta, "Published via Hooks fake") || !strings.Contains(meta, "https://hooks.example.com/posts/") {
				t.Errorf("the item's header says %q", meta)
			}
			if n := eval[int](b, `document.querySelectorAll('dialog.content-item .pub a[href^="https://hooks.example.com/posts/"]').length`); n != 1 {
				t.Errorf("%d links to the remote URL in the publication", n)
			}
			if got := b.text(`dialog.content-item .pub[data-status="succeeded"]`); !strings.Contains(got, "Published") || !strings.Contains(got, "1 attempt") {
				t.Errorf("the publication reads %q", got)
			}
			b.readmeShot("publish")
			publishShots(b, "published")
			// At 390 px the dialog, its publication and the remote URL stay
			// within the screen.
			b.do(chromedp.EmulateViewport(390, 844))
			b.waitFor("a narrow layout", `window.innerWidth === 390`, 10*time.Second)
			if w := eval[int](b, `Math.max(document.documentElement.scrollWidth, Math.ceil(document.querySelector('dialog.content-item .pub[data-status="succeeded"]').getBoundingClientRect().right))`); w > 390 {
				t.Errorf("the published item's dialog reaches %d px at 390", w)
			}
			b.do(chromedp.EmulateViewport(1280, 900))
			if it := getPubItem(b, idA); it.Status != "published" || it.PublishedVia != "target" || !strings.HasPrefix(it.PublishedURL, "https://hooks.example.com/posts/") {
				t.Errorf("item A after publishing: %+v", it)
			}
			b.do(chromedp.Click(chromedp.CSS(`dialog.content-item .item-head .close`), chromedp.NodeVisible))
			b.waitFor("item A's card published via a target", `document.querySelector('.board-col[data-status="published"] `+cardA+` .card-published[data-via="target"]')`, 30*time.Second)

			// Item B uses a banned word (not blocking yet) and is approved
			// with a reason elsewhere; scheduled for later from the page,
			// it asks for a reason to publish anyway, and is cancelled there.
			code, body = crAPI(b, "PUT", "/content/brands/"+project, map[string]any{"name": "Spring", "banned_words": []string{"synergy"}})
			if code != 200 {
				t.Fatalf("PUT brand: %d %s", code, body)
			}
			moveItem(b, idB, map[string]any{"body": "Spring plans full of synergy, for every team that wants more storage, faster support and a simpler price this year."})
			moveItem(b, idB, map[string]any{"status": "in_review"})
			moveItem(b, idB, map[string]any{"status": "approved", "override": map[string]any{"reason": "Checked with marketing"}})
			cardB := fmt.Sprintf(`.content-card[data-id=%q]`, idB)
			b.do(chromedp.Click(chromedp.ID("board-refresh"), chromedp.NodeVisible))
			b.waitFor("item B approved", `document.querySelector('.board-col[data-status="approved"] `+cardB+` .check[data-kind="banned_word"]')`, 15*time.Second)
			b.do(chromedp.Click(chromedp.CSS(cardB+" .card-open"), chromedp.NodeVisible))
			b.waitFor("item B's publish form", `document.querySelector('dialog.content-item[open][data-loaded] details.item-publish') && document.querySelector('dialog.content-item .pubs .empty')`, 15*time.Second)
			b.do(chromedp.Click(chromedp.CSS(`dialog.content-item details.item-publish > summary`), chromedp.NodeVisible))
			b.waitFor("the target chosen", `document.querySelector('dialog.content-item select[name="publish-target"]').value !== ''`, 15*time.Second)
			b.do(chromedp.Click(chromedp.CSS(`dialog.content-item input[name="publish-when"][value="later"]`), chromedp.NodeVisible),
				chromedp.Evaluate[chromedp.Void](`(() => {
					const d = new Date(Date.now() + 2 * 86400e3), p = (n) => String(n).padStart(2, '0');
					document.querySelector('dialog.content-item input[name="publish-at"]').value =
						d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) + 'T10:30';
				})()`))
			if got := b.text("dialog.content-item .publish-when"); !strings.Contains(got, "Your local time") {
				t.Errorf("the schedule does not say its time zone: %q", got)
			}
			b.do(chromedp.Click(chromedp.ID("item-publish"), chromedp.NodeVisible))
			b.waitFor("the request for a reason", `document.querySelector('#publish-override')`, 15*time.Second)
			if got := b.text("dialog.content-item .publish-errors"); !strings.Contains(got, "brand checks found problems") || !strings.Contains(got, "synergy") {
				t.Errorf("the request for a reason reads %q", got)
			}
			b.do(chromedp.SetValue(chromedp.CSS(`dialog.content-item input[name="publish-override-reason"]`), "The partner asked for this wording", chromedp.NodeVisible),
				chromedp.Click(chromedp.ID("publish-override")))
			b.waitFor("the scheduled publication", `document.querySelector('dialog.content-item .pub[data-status="scheduled"] .pub-cancel')`, 15*time.Second)
			if got := b.text(`dialog.content-item .pub[data-status="scheduled"]`); !strings.Contains(got, "Scheduled") || !strings.Contains(got, "10:30") {
				t.Errorf("the scheduled publication reads %q", got)
			}
			if got := b.text("dialog.content-item .item-meta"); !strings.Contains(got, "The partner asked for this wording") {
				t.Errorf("the dialog does not show the override: %q", got)
			}
			publishShots(b, "scheduled")
			b.do(chromedp.Click(chromedp.CSS(`dialog.content-item .pub[data-status="scheduled"] .pub-cancel`), chromedp.NodeVisible))
			b.confirmInPage() // cancelling asks in the page first, like every destructive action
			b.waitFor("the publication cancelled", `document.querySelector('dialog.content-item .pub[data-status="cancelled"]') && !document.querySelector('dialog.content-item .pub-cancel')`, 15*time.Second)
			code, body = crAPI(b, "GET", "/content/"+idB+"/publications", nil)
			if code != 200 || !strings.Contains(string(body), `"status":"cancelled"`) {
				t.Errorf("item B's publications: %d %s", code, body)
			}
			if it := getPubItem(b, idB); it.Status != "approved" {
				t.Errorf("item B after the cancel is %s", it.Status)
			}

			// The brand's settings, in the page, make banned words blocking
			// (the form keeps its banned words, and a save of the form keeps
			// the choice): publishing is refused, in words, whatever the
			// reason.
			b.do(chromedp.Click(chromedp.CSS(`dialog.content-item .item-head .close`), chromedp.NodeVisible))
			b.do(chromedp.Reload()) // the brand form was drawn before the API changed the brand
			b.waitFor("the brand form", `document.querySelector('#brand-save') && document.querySelector('#brand summary').textContent.includes('version 1')`, 15*time.Second)
			b.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('details#brand').open = true`))
			if eval[bool](b, `document.querySelector('#brand-banned-blocking').checked`) {
				t.Errorf("banned words are shown blocking before anyone made them so")
			}
			b.do(chromedp.Click(chromedp.ID("brand-banned-blocking"), chromedp.NodeVisible),
				chromedp.Click(chromedp.ID("brand-save"), chromedp.NodeVisible))
			b.waitFor("version 2 saved", `document.querySelector('#brand summary').textContent.includes('version 2')`, 15*time.Second)
			var brand struct {
				BannedWords []string `json:"banned_words"`
				Blocking    bool     `json:"banned_words_blocking"`
			}
			code, body = crAPI(b, "GET", "/content/brands/"+project, nil)
			if err := json.Unmarshal(body, &brand); code != 200 || err != nil || !brand.Blocking || strings.Join(brand.BannedWords, ",") != "synergy" {
				t.Fatalf("the brand after the page made banned words blocking: %d %s", code, body)
			}
			b.do(chromedp.Click(chromedp.ID("brand-save"), chromedp.NodeVisible))
			b.waitFor("version 3 saved", `document.querySelector('#brand summary').textContent.includes('version 3')`, 15*time.Second)
			if code, body = crAPI(b, "GET", "/content/brands/"+project, nil); code != 200 || !strings.Contains(string(body), `"banned_words_blocking":true`) {
				t.Errorf("a save of the form dropped the blocking: %d %s", code, body)
			}
			publishShots(b, "brand-blocking")
			b.do(chromedp.Click(chromedp.CSS(cardB+" .card-open"), chromedp.NodeVisible))
			b.waitFor("item B's publish form", `document.querySelector('dialog.content-item[open][data-loaded] details.item-publish') && document.querySelector('dialog.content-item .pub[data-status="cancelled"]')`, 15*time.Second)
			b.do(chromedp.Click(chromedp.CSS(`dialog.content-item details.item-publish > summary`), chromedp.NodeVisible))
			b.waitFor("the target chosen", `document.querySelector('dialog.content-item select[name="publish-target"]').value !== ''`, 15*time.Second)
			b.do(chromedp.Click(chromedp.ID("item-publish"), chromedp.NodeVisible))
			b.waitFor("the refusal", `document.querySelector('dialog.content-item .publish-errors .error')`, 15*time.Second)
			if got := b.text("dialog.content-item .publish-errors"); !strings.Contains(got, "cannot be published") || !strings.Contains(got, "synergy") {
				t.Errorf("the refusal reads %q", got)
			}
			if n := eval[int](b, `document.querySelectorAll('dialog.content-item .pub').length`); n != 1 {
				t.Errorf("%d publications of item B after the refusal, want the cancelled one", n)
			}
			publishShots(b, "banned")
			b.do(chromedp.Click(chromedp.CSS(`dialog.content-item .item-head .close`), chromedp.NodeVisible))

			// The target is deleted after a confirmation in the page.
			b.do(chromedp.Click(chromedp.CSS(`#targets .target-delete`), chromedp.NodeVisible))
			b.confirmInPage()
			b.waitFor("no targets", `document.querySelector('#targets .targets-list .empty') && !document.querySelector('#targets .target')`, 15*time.Second)
			code, body = crAPI(b, "GET", "/content/targets?project_id="+project, nil)
			if code != 200 || strings.Contains(string(body), "Hooks fake") {
				t.Errorf("targets after the delete: %d %s", code, body)
			}
			if n := len(rc.deliveries()); n != 1 {
				t.Errorf("the webhook fake got %d deliveries, want 1", n)
			}
		})
	}
}
