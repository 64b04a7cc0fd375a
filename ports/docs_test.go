package ports_test

import (
	"bufio"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// repoRoot is the module's root, seen from this package's directory.
const repoRoot = ".."

// maxDocLine is the longest line the README and docs/ may have outside tables
// and code blocks.
const maxDocLine = 120

// outsideRefs are the ways a file may point at the design and contract files
// that used to live beside the repository. They are built from pieces so that
// this file does not match itself.
var outsideRefs = regexp.MustCompile(`\b(?:` + "API" + `|` + "DESIGN" + `)\.md\b|\.\./` + "shared")

// mayReadOutsideContract are the files allowed to name the contract beside
// the repository: the conformance test that reads it when it is there.
var mayReadOutsideContract = []string{"hosts/httpapi/apimd_test.go"}

// skippedDirs are never searched: VCS data, installed packages, and what the
// build, `devpilot run` and `make eval` leave in a working copy.
var skippedDirs = []string{".git", "node_modules", "bin", "data", "eval-runs"}

// checkedExts are the kinds of file whose text a reader meets: code and its
// comments, documents, the OpenAPI document and the console's scripts.
var checkedExts = []string{".go", ".md", ".json", ".js", ".yaml", ".yml"}

// TestNothingPointsOutsideTheRepository fails when a Go, Markdown, JSON,
// JavaScript or YAML file names a design or contract file outside the
// repository: the design and the API are described in docs/, and a reader of a
// clone has nothing else.
func TestNothingPointsOutsideTheRepository(t *testing.T) {
	t.Parallel()
	checked := 0
	err := filepath.WalkDir(repoRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != repoRoot && slices.Contains(skippedDirs, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !slices.Contains(checkedExts, filepath.Ext(path)) {
			return nil
		}
		rel := relPath(t, path)
		if slices.Contains(mayReadOutsideContract, rel) {
			return nil
		}
		checked++
		for n, line := range fileLines(t, path) {
			if outsideRefs.MatchString(line) {
				t.Errorf("%s:%d refers to a file outside the repository (cite docs/api.md or docs/design.md): %s",
					rel, n+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("checked only %d files: is %s the repository's root?", checked, repoRoot)
	}
}

// TestDocLinesAreShort fails for a line of README.md or docs/*.md longer than
// maxDocLine characters outside tables and fenced code blocks.
func TestDocLinesAreShort(t *testing.T) {
	t.Parallel()
	for _, doc := range docFiles(t) {
		for _, l := range proseLines(t, doc) {
			if n := utf8.RuneCountInString(l.text); n > maxDocLine && !strings.HasPrefix(strings.TrimSpace(l.text), "|") {
				t.Errorf("%s:%d is %d characters long (at most %d outside tables and code blocks)",
					relPath(t, doc), l.number, n, maxDocLine)
			}
		}
	}
}

// mdLink matches a Markdown link or image target: [text](target) or
// [text](target "title").
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// codeSpan matches inline code, whose brackets are not links.
var codeSpan = regexp.MustCompile("``[^`]*``|`[^`]*`")

// TestDocLinksResolve fails when a relative link in README.md or docs/*.md
// points at a file that does not exist, or at a heading that its Markdown
// file does not have.
func TestDocLinksResolve(t *testing.T) {
	t.Parallel()
	anchors := map[string][]string{} // Markdown file → its heading anchors
	anchorsOf := func(path string) []string {
		if a, ok := anchors[path]; ok {
			return a
		}
		a := headingAnchors(t, path)
		anchors[path] = a
		return a
	}
	links := 0
	for _, doc := range docFiles(t) {
		for _, l := range proseLines(t, doc) {
			for _, m := range mdLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(l.text, ""), -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				links++
				file, anchor, _ := strings.Cut(target, "#")
				where := doc
				if file != "" {
					where = filepath.Join(filepath.Dir(doc), filepath.FromSlash(file))
					if _, err := os.Stat(where); err != nil {
						t.Errorf("%s:%d links to %s, which does not exist", relPath(t, doc), l.number, target)
						continue
					}
				}
				if anchor == "" {
					continue
				}
				if filepath.Ext(where) != ".md" {
					t.Errorf("%s:%d links to an anchor in %s, which is not Markdown", relPath(t, doc), l.number, target)
					continue
				}
				if !slices.Contains(anchorsOf(where), anchor) {
					t.Errorf("%s:%d links to #%s, which %s has no heading for", relPath(t, doc), l.number, anchor,
						relPath(t, where))
				}
			}
		}
	}
	if links < 10 {
		t.Fatalf("found only %d relative links in the docs: has the link syntax changed?", links)
	}
}

// TestAPIDocIndexesEveryOperation fails when an operation of the OpenAPI
// document is missing from the index in docs/api.md, written as
// `METHOD /path`.
func TestAPIDocIndexesEveryOperation(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "hosts", "httpapi", "openapi.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	apiDoc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	methods := []string{"get", "put", "post", "delete", "patch", "head", "options"}
	found := 0
	for path, item := range doc.Paths {
		for method := range item {
			if !slices.Contains(methods, method) {
				continue // parameters, summary, …
			}
			found++
			op := "`" + strings.ToUpper(method) + " " + path + "`"
			if !strings.Contains(string(apiDoc), op) {
				t.Errorf("docs/api.md does not index %s: add it to its area under \"Operations by area\"", op)
			}
		}
	}
	if found < 50 {
		t.Fatalf("found only %d operations in openapi.json", found)
	}
}

// docLine is one line of a document and its 1-based number.
type docLine struct {
	number int
	text   string
}

// proseLines returns the lines of a Markdown file outside fenced code blocks
// (the fences themselves excluded).
func proseLines(t *testing.T, path string) []docLine {
	t.Helper()
	var out []docLine
	fenced := false
	for n, line := range fileLines(t, path) {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, docLine{n + 1, line})
		}
	}
	return out
}

// headingAnchors returns the anchors GitHub gives the headings of a Markdown
// file, duplicates numbered -1, -2, … as it numbers them.
func headingAnchors(t *testing.T, path string) []string {
	t.Helper()
	var out []string
	seen := map[string]int{}
	for _, l := range proseLines(t, path) {
		trimmed := strings.TrimLeft(l.text, "#")
		if trimmed == l.text || !strings.HasPrefix(trimmed, " ") || len(l.text)-len(trimmed) > 6 {
			continue
		}
		slug := headingSlug(strings.TrimSpace(trimmed))
		if n := seen[slug]; n > 0 {
			out = append(out, slug+"-"+strconv.Itoa(n))
		} else {
			out = append(out, slug)
		}
		seen[slug]++
	}
	return out
}

// linkText replaces [text](target) with text, as a rendered heading shows it.
var linkText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// headingSlug is GitHub's anchor for a heading: lower case, letters, digits,
// hyphens and underscores kept, spaces turned into hyphens, the rest dropped.
func headingSlug(heading string) string {
	heading = linkText.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

func TestHeadingSlug(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"Access: roles, permissions and token scopes": "access-roles-permissions-and-token-scopes",
		"Evaluating the model's output":               "evaluating-the-models-output",
		"Using devpilot as a library":                 "using-devpilot-as-a-library",
		"The `/api/v1` aliases":                       "the-apiv1-aliases",
		"See [design](design.md)":                     "see-design",
	}
	for in, want := range tests {
		if got := headingSlug(in); got != want {
			t.Errorf("headingSlug(%q) = %q, want %q", in, got, want)
		}
	}
}

// docFiles are README.md and every Markdown file in docs/.
func docFiles(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatal("no docs/*.md")
	}
	return append([]string{filepath.Join(repoRoot, "README.md")}, docs...)
}

func fileLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return lines
}

func relPath(t *testing.T, path string) string {
	t.Helper()
	rel, err := filepath.Rel(repoRoot, path)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.ToSlash(rel)
}
