package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/devpilot/devpilot/adapters/sqlstore/sqlstoretest"
)

// crAPI calls the sandbox's API as the demo user, as another client would
// while the console is open (the content and repository browser tests use
// it to change things behind the page's back). headers are key, value pairs.
func crAPI(b *browser, method, path string, body any, headers ...string) (int, []byte) {
	b.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			b.t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	ctx, cancel := context.WithTimeout(b.t.Context(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, b.base+path, rd)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+b.h.sb.Token())
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// xssBody is a content body with every way a page could be made to run
// script: it must show as text.
const xssBody = "Our synergy story.\n\n<script>window.__xss = 1</script>\n\n" +
	`<img src=x onerror="window.__xss = 2">` + "\n\n[click me](javascript:window.__xss=3)"

func TestConsoleContent(t *testing.T) {
	t.Parallel()
	for _, d := range sqlstoretest.Dialects() {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			b := startBrowser(t, d)
			b.signInDemo()
			const project = "3f1c2a9e-5b7d-4c1e-9a2b-7d4e8f6a1c30"
			b.goTo("#/content/" + project)

			// Brand settings: a new project has the defaults (version 0);
			// saving them makes version 1.
			b.waitFor("the brand form", `document.querySelector('#brand-save')`, 15*time.Second)
			b.do(chromedp.SetValue(chromedp.CSS(`#brand input[name="name"]`), "Acme", chromedp.NodeVisible),
				chromedp.SetValue(chromedp.CSS(`#brand input[name="banned_words"]`), "synergy, leverage"),
				chromedp.SetValue(chromedp.CSS(`#brand textarea[name="preferred_terms"]`), "utilize => use"),
				chromedp.Click(chromedp.ID("brand-save")))
			b.waitFor("version 1 saved", `document.querySelector('#brand summary').textContent.includes('version 1')`, 15*time.Second)

			// Someone else changes them meanwhile: the page's save is a
			// version conflict, said so, and nothing is overwritten.
			code, body := crAPI(b, "PUT", "/content/brands/"+project, map[string]any{
				"name": "Acme by someone else", "banned_words": []string{"synergy"}}, "If-Match", `"1"`)
			if code != 200 {
				t.Fatalf("PUT brand: %d %s", code, body)
			}
			b.do(chromedp.SetValue(chromedp.CSS(`#brand input[name="name"]`), "Acme mine"),
				chromedp.Click(chromedp.ID("brand-save")))
			b.waitFor("the conflict", `document.querySelector('#brand .conflict')`, 15*time.Second)
			if got := b.text("#brand .conflict"); !strings.Contains(got, "Version conflict") || !strings.Contains(got, "Someone else changed") {
				t.Errorf("conflict shown as %q", got)
			}
			var brand struct {
				Name    string
				Version int
			}
			_, body = crAPI(b, "GET", "/content/brands/"+project, nil)
			if json.Unmarshal(body, &brand); brand.Name != "Acme by someone else" || brand.Version != 2 {
				t.Errorf("after the conflict the brand is %s", body)
			}
			b.do(chromedp.Click(chromedp.CSS(`#brand .conflict button`), chromedp.NodeVisible))
			b.waitFor("their settings", `document.querySelector('#brand input[name="name"]').value === 'Acme by someone else' && !document.querySelector('#brand .conflict')`, 15*time.Second)

			// A brief, then two drafts generated from it land in the draft
			// column with their brand checks.
			b.waitFor("the briefs", `document.querySelector('.briefs-card .empty, .briefs-card .briefs')`, 15*time.Second)
			b.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('details.new-brief').open = true`),
				chromedp.SetValue(chromedp.CSS(`.brief-form input[name="title"]`), "Gift cards are here", chromedp.NodeVisible),
				chromedp.SetValue(chromedp.CSS(`.brief-form textarea[name="goal"]`), "Tell shoppers they can buy and redeem gift cards."),
				chromedp.SetValue(chromedp.CSS(`.brief-form input[name="format"]`), "article"),
				chromedp.SetValue(chromedp.CSS(`.brief-form input[name="min_words"]`), "60"),
				chromedp.SetValue(chromedp.CSS(`.brief-form input[name="max_words"]`), "120"),
				chromedp.Click(chromedp.ID("brief-create")))
			b.waitFor("the brief", `[...document.querySelectorAll('.brief strong')].some(e => e.textContent === 'Gift cards are here') || document.querySelector('.brief-form .error')`, 15*time.Second)
			if e := eval[string](b, `document.querySelector('.brief-form .error')?.textContent || ''`); e != "" {
				t.Fatalf("creating the brief: %s", e)
			}
			b.do(chromedp.SetValue(chromedp.CSS(`.brief select.variants`), "2"),
				chromedp.Click(chromedp.CSS(`.brief button.generate`)))
			b.waitFor("two drafts", `document.querySelectorAll('.board-col[data-status="draft"] .content-card').length === 2 && !document.querySelector('.content-card[data-status="generating"]')`, 60*time.Second)
			if n := eval[int](b, `document.querySelectorAll('.board-col[data-status="draft"] .content-card .checks .badge').length`); n < 2 {
				t.Errorf("%d check badges on the drafts", n)
			}
			if h := b.text(`#col-draft`); !strings.Contains(h, "Draft") || !strings.Contains(h, "2") {
				t.Errorf("draft column heading %q", h)
			}

			// A body holding script, an onerror image and a javascript: link,
			// written through the API, shows as text; its banned word is
			// flagged on the card.
			id := eval[string](b, `document.querySelector('.board-col[data-status="draft"] .content-card').dataset.id`)
			var item struct{ Version int }
			_, body = crAPI(b, "GET", "/content/"+id, nil)
			json.Unmarshal(body, &item)
			code, body = crAPI(b, "PUT", "/content/"+id, map[string]any{"body": xssBody}, "If-Match", fmt.Sprintf(`"%d"`, item.Version))
			if code != 200 {
				t.Fatalf("PUT content: %d %s", code, body)
			}
			b.do(chromedp.Click(chromedp.ID("board-refresh"), chromedp.NodeVisible))
			card := fmt.Sprintf(`.content-card[data-id=%q]`, id)
			b.waitFor("the banned word flagged", `document.querySelector('`+card+` .check[data-kind="banned_word"]')`, 15*time.Second)
			if got := b.text(card + ` .check[data-kind="banned_word"]`); !strings.Contains(got, "synergy") {
				t.Errorf("banned word check %q", got)
			}
			b.readmeShot("content")
			b.do(chromedp.Click(chromedp.CSS(card+" .card-open"), chromedp.NodeVisible))
			b.waitFor("the item's body", `document.querySelector('dialog.content-item[open] .content-body') && document.querySelector('dialog.content-item .content-body').textContent.includes('window.__xss = 1')`, 15*time.Second)
			text := b.text("dialog.content-item .content-body")
			for _, want := range []string{"<script>window.__xss = 1</script>", `<img src=x onerror="window.__xss = 2">`, "[click me](javascript:window.__xss=3)"} {
				if !strings.Contains(text, want) {
					t.Errorf("the body does not show %q as text: %q", want, text)
				}
			}
			if n := eval[int](b, `document.querySelectorAll('main script, main img, dialog script, dialog img, a[href^="javascript"]').length`); n != 0 {
				t.Errorf("%d script, img or javascript: link elements made from the body", n)
			}
			if x := eval[any](b, `window.__xss`); x != nil {
				t.Errorf("the payload ran: window.__xss = %v", x)
			}

			// A stale move is a conflict in the dialog too.
			_, body = crAPI(b, "GET", "/content/"+id, nil)
			json.Unmarshal(body, &item)
			if code, body = crAPI(b, "PUT", "/content/"+id, map[string]any{"title": "Gift cards, retitled"}, "If-Match", fmt.Sprintf(`"%d"`, item.Version)); code != 200 {
				t.Fatalf("PUT content: %d %s", code, body)
			}
			b.do(chromedp.Click(chromedp.CSS(`dialog.content-item button[data-to="in_review"]`), chromedp.NodeVisible))
			b.waitFor("the item's conflict", `document.querySelector('dialog.content-item .conflict')`, 15*time.Second)
			b.do(chromedp.Click(chromedp.CSS(`dialog.content-item .conflict button`), chromedp.NodeVisible))
			b.waitFor("the item reloaded", `document.querySelector('#item-title').textContent === 'Gift cards, retitled'`, 15*time.Second)
			b.do(chromedp.Click(chromedp.CSS(`dialog.content-item button[data-to="in_review"]`), chromedp.NodeVisible))
			b.waitFor("the item in review", `document.querySelector('.board-col[data-status="in_review"] `+card+`')`, 15*time.Second)

			// Delete asks first.
			b.do(chromedp.Click(chromedp.ID("item-delete"), chromedp.NodeVisible))
			b.confirmInPage()
			b.waitFor("the item gone", `!document.querySelector('dialog.content-item[open]') && !document.querySelector('`+card+`')`, 15*time.Second)
			if code, _ := crAPI(b, "GET", "/content/"+id, nil); code != 404 {
				t.Errorf("deleted item: GET = %d", code)
			}

			// The other draft, in review with a banned word: Approve asks
			// for a reason to go ahead anyway; an approved item is published
			// elsewhere only with its URL, which the dialog then shows.
			id2 := eval[string](b, `document.querySelector('.board-col[data-status="draft"] .content-card').dataset.id`)
			_, body = crAPI(b, "GET", "/content/"+id2, nil)
			json.Unmarshal(body, &item)
			if code, body = crAPI(b, "PUT", "/content/"+id2, map[string]any{"body": "Gift cards bring synergy to every shop.", "status": "in_review"},
				"If-Match", fmt.Sprintf(`"%d"`, item.Version)); code != 200 {
				t.Fatalf("PUT content: %d %s", code, body)
			}
			card2 := fmt.Sprintf(`.content-card[data-id=%q]`, id2)
			b.do(chromedp.Click(chromedp.ID("board-refresh"), chromedp.NodeVisible))
			b.waitFor("the second item in review", `document.querySelector('.board-col[data-status="in_review"] `+card2+`')`, 15*time.Second)
			b.do(chromedp.Click(chromedp.CSS(card2+" .card-open"), chromedp.NodeVisible))
			b.waitFor("its dialog", `document.querySelector('dialog.content-item[open] button[data-to="approved"]')`, 15*time.Second)
			if n := eval[int](b, `document.querySelectorAll('dialog.content-item button[data-to="published"]').length`); n != 0 {
				t.Errorf("%d plain Publish moves: publishing needs a target or a URL", n)
			}
			b.do(chromedp.Click(chromedp.CSS(`dialog.content-item button[data-to="approved"]`), chromedp.NodeVisible))
			b.waitFor("the request for a reason", `document.querySelector('#item-override')`, 15*time.Second)
			if got := b.text("dialog.content-item .item-errors"); !strings.Contains(got, "brand checks found problems") || !strings.Contains(got, "synergy") {
				t.Errorf("the refusal reads %q", got)
			}
			b.do(chromedp.SetValue(chromedp.CSS(`dialog.content-item input[name="override-reason"]`), "Marketing signed off on the wording", chromedp.NodeVisible),
				chromedp.Click(chromedp.ID("item-override")))
			b.waitFor("the item approved", `document.querySelector('.board-col[data-status="approved"] `+card2+`') && document.querySelector('dialog.content-item .item-elsewhere')`, 15*time.Second)
			if got := b.text("dialog.content-item .item-meta"); !strings.Contains(got, "Marketing signed off") {
				t.Errorf("the dialog does not show the override: %q", got)
			}
			b.do(chromedp.Evaluate[chromedp.Void](`document.querySelector('dialog.content-item .item-elsewhere').open = true`),
				chromedp.SetValue(chromedp.CSS(`dialog.content-item input[name="published-url"]`), "https://blog.example.com/gift-cards", chromedp.NodeVisible),
				chromedp.Click(chromedp.ID("item-published-elsewhere")))
			// Publishing asks again: each decision to let the findings
			// through is its own, with its own reason.
			b.waitFor("the request for a reason to publish", `document.querySelector('#item-override')?.textContent === 'Publish anyway'`, 15*time.Second)
			b.do(chromedp.SetValue(chromedp.CSS(`dialog.content-item input[name="override-reason"]`), "Published on the partner blog as agreed", chromedp.NodeVisible),
				chromedp.Click(chromedp.ID("item-override")))
			b.waitFor("the item published", `document.querySelector('.board-col[data-status="published"] `+card2+`')`, 15*time.Second)
			if got := b.text("dialog.content-item .item-meta"); !strings.Contains(got, "Published elsewhere") || !strings.Contains(got, "https://blog.example.com/gift-cards") {
				t.Errorf("the dialog does not show where it is published: %q", got)
			}
			_, body = crAPI(b, "GET", "/content/"+id2, nil)
			var published struct {
				Status, PublishedURL, PublishedVia string `json:"-"`
			}
			var raw map[string]any
			json.Unmarshal(body, &raw)
			published.Status, _ = raw["status"].(string)
			published.PublishedURL, _ = raw["published_url"].(string)
			published.PublishedVia, _ = raw["published_via"].(string)
			if published.Status != "published" || published.PublishedURL != "https://blog.example.com/gift-cards" || published.PublishedVia != "elsewhere" {
				t.Errorf("the item after the page published it: %s", body)
			}
		})
	}
}
