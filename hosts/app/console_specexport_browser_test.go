package app_test

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/devpilot/devpilot/adapters/sqlstore"
)

// The spec page's "Download (zip)" and "Markdown" buttons fetch the export
// with the token and save it through a Blob, named as the server says.
func TestConsoleSpecExport(t *testing.T) {
	t.Parallel()
	b := startBrowser(t, sqlstore.DialectSQLite)
	b.signInDemo()
	id := createSpec(t, b, "Exported", "Notes", "- Users pay by card\n")
	b.goTo("#/specs/" + id)
	b.waitFor("the export buttons", `(n => n && n.textContent === 'Exported')(document.querySelector('.spec-name')) && document.querySelector('#spec-export-zip') && document.querySelector('#spec-export-md')`, 10*time.Second)
	// The test keeps what would be saved instead of saving it.
	b.do(chromedp.Evaluate[chromedp.Void](`(() => {
		window.__saved = [];
		const create = URL.createObjectURL;
		URL.createObjectURL = (blob) => { window.__blob = blob; return create.call(URL, blob); };
		HTMLAnchorElement.prototype.click = function () {
			const blob = window.__blob, name = this.download;
			blob.slice(0, 2).text().then((head) => window.__saved.push({ name, size: blob.size, type: blob.type, head }));
		};
	})()`))
	type saved struct {
		Name, Type, Head string
		Size             int
	}
	for i, tc := range []struct{ button, name, typ, head string }{
		{"spec-export-zip", `^spec-[0-9a-f]{8}\.zip$`, "application/zip", "PK"},
		{"spec-export-md", `^spec-[0-9a-f]{8}\.md$`, "text/markdown; charset=utf-8", "# "},
	} {
		b.do(chromedp.Click(chromedp.ID(tc.button), chromedp.NodeVisible))
		b.waitFor(tc.button+" to save", "window.__saved.length === "+string(rune('1'+i)), 10*time.Second)
		var got saved
		if err := json.Unmarshal([]byte(eval[string](b, "JSON.stringify(window.__saved["+string(rune('0'+i))+"])")), &got); err != nil {
			t.Fatal(err)
		}
		if !regexp.MustCompile(tc.name).MatchString(got.Name) || got.Name[5:13] != id[len(id)-8:] || got.Type != tc.typ || got.Head != tc.head || got.Size < 100 {
			t.Errorf("%s saved %+v", tc.button, got)
		}
	}
}
