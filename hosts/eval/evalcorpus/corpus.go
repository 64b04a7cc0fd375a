// Package evalcorpus is devpilot's golden corpus for `devpilot eval`: the
// cases a specification run is measured on. Each case is raw material
// (notes, meeting transcripts, an uploaded document), a small repository
// the sandbox GitHub serves, and the facts a good specification written
// from that material must carry, each tied to the input it comes from.
//
// A case lives in cases/<id>/: case.json (see Case), the input files it
// names, and repo.json (see Repo) when it has a repository.
//
// Long meeting transcripts are not stored whole. Their file holds the
// meeting's substantive turns, one "Speaker: text" line each (a Markdown
// heading and blank lines may come first), and the input says how long the
// meeting was: "expand": {"pages": 200}. Load fills the pages (a page is
// PageChars characters) with routine meeting talk — greetings, audio
// trouble, scheduling, agenda chatter, small talk — between the
// substantive turns, spread evenly, and gives every turn a timestamp. The
// filler is drawn from a fixed list of lines by a generator seeded with
// the case id and file name, so the same case always expands to the same
// text; it states no requirement, number or decision, so every fact of the
// case comes from the stored turns.
//
// Slice names the few small cases `make test` runs end to end; the whole
// corpus is for `devpilot eval`.
package evalcorpus

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
)

//go:embed all:cases
var files embed.FS

// Case is one case of the corpus.
type Case struct {
	// ID is the case's directory name.
	ID     string `json:"-"`
	Title  string `json:"title"`
	Domain string `json:"domain"`
	// Kind is what the raw material mostly is: notes, transcript or
	// document.
	Kind   string  `json:"kind"`
	Inputs []Input `json:"inputs"`
	// Repo is the repository the specification is linked to, nil when the
	// case has none.
	Repo  *Repo  `json:"-"`
	Facts []Fact `json:"facts"`
}

// Input is one piece of raw material, as it is added to a specification
// session.
type Input struct {
	// Name is the input's file in the case directory; facts cite it.
	Name string `json:"file"`
	// Kind is the session input's kind: document, transcript or note.
	Kind        string `json:"kind"`
	Title       string `json:"title"`
	ContentType string `json:"content_type"`
	// Upload makes the input an uploaded file (multipart) instead of JSON;
	// its ContentType is then text/markdown or text/plain.
	Upload bool `json:"upload"`
	// Expand, when set, makes the stored turns a meeting of that many
	// pages (see the package doc).
	Expand *Expand `json:"expand,omitempty"`
	// Content is the input's text, expanded when Expand is set.
	Content string `json:"-"`
}

// Expand is how long a transcript stored as its substantive turns is.
type Expand struct {
	// Pages is the meeting's length in pages of PageChars characters.
	Pages int `json:"pages"`
}

// Repo is a case's repository, read from repo.json.
type Repo struct {
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Files       map[string]string `json:"files"`
}

// Fact is something a good specification of the case must carry.
type Fact struct {
	ID   string `json:"id"`
	Text string `json:"fact"`
	// Input is the Name of the input the fact comes from.
	Input string `json:"input"`
	// Terms must all appear in a document for it to carry the fact; a
	// term "a|b" is found when either alternative is.
	Terms []string `json:"terms"`
}

var space = regexp.MustCompile(`\s+`)

// normalise folds case and runs of white space, so that a term is found
// across line breaks and in any capitalisation.
func normalise(s string) string { return space.ReplaceAllString(strings.ToLower(s), " ") }

// FoundIn reports whether text carries the fact: every term (one of its
// alternatives) appears in it, ignoring case and white space.
func (f Fact) FoundIn(text string) bool { return f.foundNormalised(normalise(text)) }

// foundNormalised is FoundIn for text already normalised.
func (f Fact) foundNormalised(text string) bool {
	for _, t := range f.Terms {
		if !slices.ContainsFunc(strings.Split(t, "|"), func(alt string) bool {
			alt = strings.TrimSpace(normalise(alt))
			return alt != "" && strings.Contains(text, alt)
		}) {
			return false
		}
	}
	return len(f.Terms) > 0
}

// slice are the cases `make test` runs end to end: small ones (short
// notes, a two-page transcript, an uploaded document), each with a
// repository.
var slice = []string{"expense-notes", "fleet-dispatch-call", "course-enrolment-upload", "flag-cleanup-notes"}

// Slice returns the ids of the few small cases `make test` runs end to end
// (short notes, a two-page transcript, an uploaded document, each with a
// repository); they are quick enough for every test run.
func Slice() []string { return slices.Clone(slice) }

// Load reads every case of the corpus, in the order of their ids. It
// fails when a case is malformed: no inputs, an input that is empty or of
// an upload type the API refuses, a fact that cites no input of the case,
// has no terms or whose terms its input does not contain, an empty
// repository file, or an id used twice.
func Load() ([]Case, error) { return loadFrom(files) }

func loadFrom(fsys fs.FS) ([]Case, error) {
	dirs, err := fs.ReadDir(fsys, "cases")
	if err != nil {
		return nil, err
	}
	var out []Case
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		c, err := load(fsys, d.Name())
		if err != nil {
			return nil, fmt.Errorf("evalcorpus: case %s: %w", d.Name(), err)
		}
		out = append(out, c)
	}
	return out, nil
}

// Get returns the case with the id, reading only that case; ok is false
// when there is none. Errors as Load's.
func Get(id string) (Case, bool, error) {
	if _, err := fs.Stat(files, path.Join("cases", id, "case.json")); err != nil || strings.Contains(id, "/") {
		return Case{}, false, nil
	}
	c, err := load(files, id)
	if err != nil {
		return Case{}, false, fmt.Errorf("evalcorpus: case %s: %w", id, err)
	}
	return c, true, nil
}

// Input returns the case's input with the file name, ok false when it has
// none.
func (c Case) Input(name string) (Input, bool) {
	for _, in := range c.Inputs {
		if in.Name == name {
			return in, true
		}
	}
	return Input{}, false
}

func load(fsys fs.FS, id string) (Case, error) {
	dir := path.Join("cases", id)
	raw, err := fs.ReadFile(fsys, path.Join(dir, "case.json"))
	if err != nil {
		return Case{}, err
	}
	var c Case
	if err := json.Unmarshal(raw, &c); err != nil {
		return Case{}, fmt.Errorf("case.json: %w", err)
	}
	c.ID = id
	if len(c.Inputs) == 0 {
		return Case{}, fmt.Errorf("no inputs")
	}
	content := map[string]string{}
	for i, in := range c.Inputs {
		if _, dup := content[in.Name]; dup {
			return Case{}, fmt.Errorf("input %s named twice", in.Name)
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, in.Name))
		if err != nil {
			return Case{}, err
		}
		text := string(b)
		if in.Expand != nil {
			if text, err = expand(id+"/"+in.Name, text, in.Expand.Pages); err != nil {
				return Case{}, fmt.Errorf("input %s: %w", in.Name, err)
			}
		}
		if strings.TrimSpace(text) == "" {
			return Case{}, fmt.Errorf("input %s is empty", in.Name)
		}
		if in.Upload && in.ContentType != "text/markdown" && in.ContentType != "text/plain" {
			return Case{}, fmt.Errorf("input %s: an upload is text/markdown or text/plain, not %q", in.Name, in.ContentType)
		}
		c.Inputs[i].Content = text
		content[in.Name] = normalise(text)
	}
	factIDs := map[string]bool{}
	for _, f := range c.Facts {
		text, ok := content[f.Input]
		switch {
		case f.ID == "" || factIDs[f.ID]:
			return Case{}, fmt.Errorf("fact %q: no id, or an id used twice", f.ID)
		case !ok:
			return Case{}, fmt.Errorf("fact %s: cites %q, no input of the case", f.ID, f.Input)
		case len(f.Terms) == 0 || slices.ContainsFunc(f.Terms, func(t string) bool { return strings.Trim(t, "| ") == "" }):
			return Case{}, fmt.Errorf("fact %s: has no terms, or an empty one", f.ID)
		case !f.foundNormalised(text):
			return Case{}, fmt.Errorf("fact %s: input %s does not contain its terms %q", f.ID, f.Input, f.Terms)
		}
		factIDs[f.ID] = true
	}
	if b, err := fs.ReadFile(fsys, path.Join(dir, "repo.json")); err == nil {
		var r Repo
		if err := json.Unmarshal(b, &r); err != nil {
			return Case{}, fmt.Errorf("repo.json: %w", err)
		}
		if r.Name == "" || len(r.Files) == 0 {
			return Case{}, fmt.Errorf("repo.json: no name or no files")
		}
		for p, content := range r.Files {
			if strings.TrimSpace(content) == "" {
				return Case{}, fmt.Errorf("repo.json: file %s is empty", p)
			}
		}
		c.Repo = &r
	}
	return c, nil
}
