package app_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/devpilot/devpilot/adapters/sqlstore"
)

// The console's Markdown renderer (md.js) makes a link only of an absolute
// http(s) or mailto URL, or of a path or fragment that the browser resolves
// to the console's own origin; any other link, such as /\evil.example/b
// (a backslash is a slash to the URL parser, so it reads as
// //evil.example/b), stays text. The renderer is the browser's, not the
// database's, so this runs on SQLite alone.
func TestConsoleMarkdownLinksStayOnTheOrigin(t *testing.T) {
	t.Parallel()
	b := startBrowser(t, sqlstore.DialectSQLite)
	hrefs := []string{
		`/\evil.example/b`, `//evil.example/b`, `/\/evil.example/b`, `\\evil.example/b`, `/\\evil.example`,
		`javascript:alert(1)`, `JaVaScRiPt:alert(1)`, `data:text/html,hi`, `http:\\evil.example/b`, `https:evil.example`,
		`vbscript:x`, `evil.example/b`,
		`/api/v1/me`, `#/specs`, `/%5Cevil.example/b`, `https://example.com/a?b=c`, `http://example.com/`, `mailto:team@example.com`,
	}
	want := map[string]string{
		`/api/v1/me`: b.base + "/api/v1/me", `/%5Cevil.example/b`: b.base + "/%5Cevil.example/b",
		`https://example.com/a?b=c`: "https://example.com/a?b=c", `http://example.com/`: "http://example.com/",
		`mailto:team@example.com`: "mailto:team@example.com",
	}
	arg, _ := json.Marshal(hrefs)
	got, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]map[string]string](`import('/console/js/md.js').then(m => `+string(arg)+`.map(href => {
		const el = document.createElement('div');
		el.append(m.render('see [the link](' + href + ') here'));
		const a = el.querySelector('a');
		return {href: a ? a.href : '', text: el.textContent, target: a && a.target || ''};
	}))`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	if len(got) != len(hrefs) {
		t.Fatalf("%d results for %d links", len(got), len(hrefs))
	}
	for i, href := range hrefs {
		g := got[i]
		switch w, ok := want[href]; {
		case href == "#/specs":
			if !strings.HasPrefix(g["href"], b.base+"/") || !strings.HasSuffix(g["href"], "#/specs") {
				t.Errorf("[the link](%s) links to %q, want this page's #/specs", href, g["href"])
			}
		case ok:
			if g["href"] != w {
				t.Errorf("[the link](%s) links to %q, want %q", href, g["href"], w)
			}
		default:
			if g["href"] != "" || !strings.Contains(g["text"], "[the link]("+href+")") {
				t.Errorf("[the link](%s) became a link to %q (text %q), want text", href, g["href"], g["text"])
			}
		}
		if external := strings.HasPrefix(href, "http"); g["href"] != "" && (g["target"] == "_blank") != external {
			t.Errorf("[the link](%s): target %q", href, g["target"])
		}
	}
}
