package httpapi

import (
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
)

// consoleFixture is a small console: a page linking a style sheet, an icon
// through the manifest, and a module importing another.
func consoleFixture() fstest.MapFS {
	return fstest.MapFS{
		"index.html": {Data: []byte(`<!doctype html><html><head>
<link rel="manifest" href="/console/manifest.webmanifest">
<link rel="stylesheet" href="/console/app.css">
<script type="module" src="/console/js/app.js"></script>
</head><body><a href="/console/missing.txt">x</a></body></html>`)},
		"app.css":              {Data: []byte(`body { color: black; background: url("/console/icon.png") }`)},
		"manifest.webmanifest": {Data: []byte(`{"icons":[{"src":"/console/icon.png"}]}`)},
		"icon.png":             {Data: []byte("\x89PNG one")},
		"js/app.js":            {Data: []byte(`import { h } from './ui.js'; h();`)},
		"js/ui.js":             {Data: []byte(`export function h() { return 1; }`)},
	}
}

func mustBuild(t *testing.T, files fstest.MapFS) *consoleAssets {
	t.Helper()
	a, err := buildConsoleAssets(files)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// A changed file gets a new URL, and so does every file that refers to it
// (the manifest for its icon, index.html for all); an unchanged file keeps
// its URL, and so stays in the browser's cache.
func TestConsoleAssetsChangedFileNewURL(t *testing.T) {
	t.Parallel()
	before := mustBuild(t, consoleFixture())
	index := string(before.index.identity)
	for _, name := range []string{"app.css", "manifest.webmanifest", "js/app.js"} {
		if a := before.byPlain[name]; !strings.Contains(index, "/console/"+a.hashed) {
			t.Errorf("index.html does not refer to %s as %s:\n%s", name, a.hashed, index)
		}
	}
	icon := before.byPlain["icon.png"].hashed
	for _, name := range []string{"app.css", "manifest.webmanifest"} {
		if !strings.Contains(string(before.byPlain[name].identity), "/console/"+icon) {
			t.Errorf("%s does not refer to the icon as %s: %s", name, icon, before.byPlain[name].identity)
		}
	}
	if !strings.Contains(index, `"/console/js/ui.js":"/console/`+before.byPlain["js/ui.js"].hashed+`"`) {
		t.Errorf("the import map does not send ui.js to its hashed URL:\n%s", index)
	}
	if !strings.Contains(index, `href="/console/missing.txt"`) {
		t.Errorf("a reference to no file was changed:\n%s", index)
	}

	// A module changes: its URL and the page's (import map, ETag) change;
	// the module importing it is unchanged.
	files := consoleFixture()
	files["js/ui.js"] = &fstest.MapFile{Data: []byte(`export function h() { return 2; }`)}
	after := mustBuild(t, files)
	if after.byPlain["js/ui.js"].hashed == before.byPlain["js/ui.js"].hashed {
		t.Error("a changed module kept its URL")
	}
	if after.byPlain["js/app.js"].hashed != before.byPlain["js/app.js"].hashed || after.byPlain["app.css"].hashed != before.byPlain["app.css"].hashed {
		t.Error("an unchanged file got a new URL")
	}
	if after.index.etag("") == before.index.etag("") || after.csp == before.csp {
		t.Error("the page's ETag or its policy's import map hash did not change with the import map")
	}

	// An icon changes: so do the manifest and style sheet that refer to it,
	// and the page that refers to them.
	files = consoleFixture()
	files["icon.png"] = &fstest.MapFile{Data: []byte("\x89PNG two")}
	after = mustBuild(t, files)
	for _, name := range []string{"icon.png", "manifest.webmanifest", "app.css"} {
		if after.byPlain[name].hashed == before.byPlain[name].hashed {
			t.Errorf("%s kept its URL when the icon changed", name)
		}
	}
	if after.index.etag("") == before.index.etag("") {
		t.Error("the page's ETag did not change")
	}
	if after.byPlain["js/app.js"].hashed != before.byPlain["js/app.js"].hashed {
		t.Error("a module got a new URL when the icon changed")
	}
}

// Files that refer to each other cannot be hashed: the build says so.
func TestConsoleAssetsCycle(t *testing.T) {
	t.Parallel()
	files := consoleFixture()
	files["a.css"] = &fstest.MapFile{Data: []byte(`@import "/console/b.css";`)}
	files["b.css"] = &fstest.MapFile{Data: []byte(`@import "/console/a.css";`)}
	if _, err := buildConsoleAssets(files); err == nil || !strings.Contains(err.Error(), "refers to itself") {
		t.Errorf("build of a cycle: %v", err)
	}
	delete(files, "index.html")
	delete(files, "a.css")
	if _, err := buildConsoleAssets(files); err == nil {
		t.Error("a console without index.html was built")
	}
}

// Accept-Encoding is read with its q-values.
func TestConsoleAcceptEncoding(t *testing.T) {
	t.Parallel()
	a := mustBuild(t, consoleFixture()).index
	for accept, want := range map[string]string{
		"":                    "",
		"br":                  "br",
		"gzip, br":            "br",
		"br;q=0, gzip":        "gzip",
		"br; q=0.0, gzip;q=1": "gzip",
		"*":                   "br",
		"*, br;q=0":           "gzip",
		"*;q=0, gzip":         "gzip",
		"gzip;q=bad":          "",
		"x-gzip":              "",
	} {
		if got, _ := a.pick(accept); got != want {
			t.Errorf("Accept-Encoding %q: %q, want %q", accept, got, want)
		}
	}
	rr := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	a.serve(rr, req, "csp", cacheRevalidate)
	if rr.Header().Get("Content-Encoding") != "gzip" || rr.Header().Get("ETag") != a.etag("gzip") {
		t.Errorf("served %v", rr.Header())
	}
}
