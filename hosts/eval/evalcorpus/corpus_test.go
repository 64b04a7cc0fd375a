package evalcorpus

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
)

// loaded is Load's answer, read once for the tests that only look.
var loaded = sync.OnceValues(Load)

func TestLoadReadsEveryCase(t *testing.T) {
	t.Parallel()
	cases, err := loaded()
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 12 {
		t.Fatalf("%d cases, want at least 12", len(cases))
	}
	kinds, domains := map[string]bool{}, map[string]bool{}
	uploads, total, longest := 0, 0, 0
	for _, c := range cases {
		kinds[c.Kind], domains[c.Domain] = true, true
		if c.Title == "" || len(c.Facts) < 4 || len(c.Facts) > 8 {
			t.Errorf("case %s: no title, or %d facts (want 4 to 8)", c.ID, len(c.Facts))
		}
		if c.Repo == nil || len(c.Repo.Files) < 4 || len(c.Repo.Files) > 12 {
			t.Errorf("case %s: no repository of 4 to 12 files", c.ID)
		} else if !slices.ContainsFunc([]string{"Makefile", "package.json"}, func(p string) bool { return c.Repo.Files[p] != "" }) &&
			!hasWorkflow(c.Repo) {
			t.Errorf("case %s: the repository has no Makefile, package.json or CI workflow", c.ID)
		}
		for _, in := range c.Inputs {
			if in.Upload {
				uploads++
			}
			if in.Kind == "transcript" {
				longest = max(longest, len(in.Content))
			}
			total += len(in.Content)
		}
	}
	for _, k := range []string{"notes", "transcript", "document"} {
		if !kinds[k] {
			t.Errorf("no case of kind %s", k)
		}
	}
	if len(domains) < 5 || uploads == 0 {
		t.Errorf("%d domains, %d uploads", len(domains), uploads)
	}
	if longest < 200*PageChars {
		t.Errorf("the longest transcript has %d characters, want 200 pages", longest)
	}
	t.Logf("%d cases, %d domains, %d characters of input", len(cases), len(domains), total)
}

func hasWorkflow(r *Repo) bool {
	for p := range r.Files {
		if strings.HasPrefix(p, ".github/workflows/") {
			return true
		}
	}
	return false
}

// TestStoredSize: the corpus embeds its long meetings as their turns, not
// as hundreds of pages.
func TestStoredSize(t *testing.T) {
	t.Parallel()
	size := 0
	walk, err := files.ReadDir("cases")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range walk {
		entries, _ := files.ReadDir("cases/" + d.Name())
		for _, e := range entries {
			b, _ := files.ReadFile("cases/" + d.Name() + "/" + e.Name())
			size += len(b)
		}
	}
	if size > 300<<10 {
		t.Errorf("the corpus embeds %d bytes, want under 300 KB", size)
	}
}

func TestSlice(t *testing.T) {
	t.Parallel()
	cases, err := loaded()
	if err != nil {
		t.Fatal(err)
	}
	ids := Slice()
	if len(ids) < 3 || len(ids) > 4 {
		t.Fatalf("slice %v, want 3 or 4 cases", ids)
	}
	kinds := map[string]bool{}
	for _, id := range ids {
		i := slices.IndexFunc(cases, func(c Case) bool { return c.ID == id })
		if i < 0 {
			t.Errorf("slice names %s, which the corpus lacks", id)
			continue
		}
		c := cases[i]
		kinds[c.Kind] = true
		if c.Repo == nil {
			t.Errorf("slice case %s has no repository", id)
		}
		for _, in := range c.Inputs {
			if len(in.Content) > 3*PageChars {
				t.Errorf("slice case %s: input %s has %d characters, too long for every test run", id, in.Name, len(in.Content))
			}
		}
	}
	if len(kinds) != 3 {
		t.Errorf("the slice's kinds are %v, want notes, a transcript and a document", kinds)
	}
	ids[0] = "changed"
	if Slice()[0] == "changed" {
		t.Error("Slice returns the package's own list")
	}
}

func TestExpand(t *testing.T) {
	t.Parallel()
	stored := "# Meeting\n\nAna: We keep invoices for ten years.\nBo: Exports run at midnight.\n"
	a, err := expand("case/meeting.txt", stored, 20)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := expand("case/meeting.txt", stored, 20)
	if a != b {
		t.Error("the same seed expands to different text")
	}
	if len(a) < 20*PageChars || len(a) > 21*PageChars {
		t.Errorf("20 pages expand to %d characters", len(a))
	}
	if !strings.HasPrefix(a, "# Meeting\n\n[00:00:00] ") {
		t.Errorf("the heading is not kept first:\n%.200s", a)
	}
	// The turns stay in order, spread out, each line a timestamped turn.
	i, j := strings.Index(a, "Ana: We keep invoices for ten years."), strings.Index(a, "Bo: Exports run at midnight.")
	if i < 10*PageChars/2 || j < i+5*PageChars || j > len(a)-3*PageChars {
		t.Errorf("turns at %d and %d of %d characters", i, j, len(a))
	}
	for l := range strings.SplitSeq(strings.TrimSpace(a[strings.Index(a, "["):]), "\n") {
		if !strings.HasPrefix(l, "[") || !strings.Contains(l, ": ") {
			t.Fatalf("line %q is not a timestamped turn", l)
		}
		if text := l[strings.Index(l, "] ")+2:]; !strings.Contains(text, "ten years") && !strings.Contains(text, "midnight") &&
			!slices.Contains(Filler, text[strings.Index(text, ": ")+2:]) {
			t.Fatalf("line %q is neither a stored turn nor filler", l)
		}
	}
	if c, _ := expand("other/meeting.txt", stored, 20); c == a {
		t.Error("another seed expands to the same filler")
	}
	for _, bad := range []struct {
		stored string
		pages  int
	}{{stored, 0}, {"# Only a heading\n", 3}, {"Ana: fine\nnot a turn\n", 3}} {
		if _, err := expand("x", bad.stored, bad.pages); err == nil {
			t.Errorf("expand(%q, %d) succeeds", bad.stored, bad.pages)
		}
	}
}

// TestFillerHasNoFacts: no fact of any case is found in the filler.
func TestFillerHasNoFacts(t *testing.T) {
	t.Parallel()
	cases, err := loaded()
	if err != nil {
		t.Fatal(err)
	}
	filler := strings.Join(Filler, "\n")
	for _, c := range cases {
		for _, f := range c.Facts {
			if f.FoundIn(filler) {
				t.Errorf("case %s: fact %s is found in the filler", c.ID, f.ID)
			}
		}
	}
}

func TestLoadRejects(t *testing.T) {
	t.Parallel()
	good := `{"title":"T","domain":"d","kind":"notes","inputs":[{"file":"n.md","kind":"note","title":"N","content_type":"text/markdown"}],
		"facts":[{"id":"F1","fact":"x","input":"n.md","terms":["seven years"]}]}`
	tests := []struct {
		name string
		fs   fstest.MapFS
		want string
	}{
		{"valid", fstest.MapFS{"cases/a/case.json": {Data: []byte(good)}, "cases/a/n.md": {Data: []byte("Kept for seven years.")},
			"cases/a/repo.json": {Data: []byte(`{"name":"r","files":{"main.go":"package main"}}`)}}, ""},
		{"unknown input", fstest.MapFS{"cases/a/case.json": {Data: []byte(strings.Replace(good, `"input":"n.md"`, `"input":"x.md"`, 1))},
			"cases/a/n.md": {Data: []byte("Kept for seven years.")}}, "no input of the case"},
		{"no terms", fstest.MapFS{"cases/a/case.json": {Data: []byte(strings.Replace(good, `["seven years"]`, `[]`, 1))},
			"cases/a/n.md": {Data: []byte("Kept for seven years.")}}, "no terms"},
		{"empty term", fstest.MapFS{"cases/a/case.json": {Data: []byte(strings.Replace(good, `["seven years"]`, `["seven years", " | "]`, 1))},
			"cases/a/n.md": {Data: []byte("Kept for seven years.")}}, "no terms"},
		{"terms not in the input", fstest.MapFS{"cases/a/case.json": {Data: []byte(good)}, "cases/a/n.md": {Data: []byte("Kept for a while.")}},
			"does not contain its terms"},
		{"empty input", fstest.MapFS{"cases/a/case.json": {Data: []byte(good)}, "cases/a/n.md": {Data: []byte(" \n")}}, "is empty"},
		{"upload of another type", fstest.MapFS{"cases/a/case.json": {Data: []byte(strings.Replace(good, `"content_type":"text/markdown"`, `"content_type":"application/pdf","upload":true`, 1))},
			"cases/a/n.md": {Data: []byte("Kept for seven years.")}}, "upload"},
		{"fact id twice", fstest.MapFS{"cases/a/case.json": {Data: []byte(strings.Replace(good, `"terms":["seven years"]}`, `"terms":["seven years"]},{"id":"F1","fact":"y","input":"n.md","terms":["kept"]}`, 1))},
			"cases/a/n.md": {Data: []byte("Kept for seven years.")}}, "used twice"},
		{"empty repository file", fstest.MapFS{"cases/a/case.json": {Data: []byte(good)}, "cases/a/n.md": {Data: []byte("Kept for seven years.")},
			"cases/a/repo.json": {Data: []byte(`{"name":"r","files":{"main.go":""}}`)}}, "is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadFrom(tt.fs)
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestFactFoundIn(t *testing.T) {
	t.Parallel()
	f := Fact{Terms: []string{"seven years|7 years", "Receipt"}}
	for text, want := range map[string]bool{
		"Receipts are kept for SEVEN\n years.": true,
		"receipts: 7 years":                    true,
		"receipts are kept for a while":        false,
		"seven years":                          false,
	} {
		if got := f.FoundIn(text); got != want {
			t.Errorf("FoundIn(%q) = %v, want %v", text, got, want)
		}
	}
	if (Fact{}).FoundIn("anything") {
		t.Error("a fact without terms is found")
	}
}

func TestGet(t *testing.T) {
	t.Parallel()
	c, ok, err := Get("expense-notes")
	if err != nil || !ok || c.ID != "expense-notes" || c.Repo == nil || len(c.Inputs) != 1 {
		t.Fatalf("Get: %+v %v %v", c, ok, err)
	}
	if in, ok := c.Input("notes.md"); !ok || !strings.Contains(in.Content, "seven years") {
		t.Errorf("Input(notes.md) = %+v, %v", in, ok)
	}
	if _, ok := c.Input("nope.md"); ok {
		t.Error("Input finds a file the case lacks")
	}
	for _, id := range []string{"nope", "../cases", "expense-notes/x"} {
		if _, ok, err := Get(id); ok || err != nil {
			t.Errorf("Get(%q): %v %v", id, ok, err)
		}
	}
}
