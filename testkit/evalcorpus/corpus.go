// Package evalcorpus is devpilot's golden corpus for `devpilot eval`: the
// cases a specification run is measured on. Each case is raw material
// (notes, meeting transcripts, an uploaded document), a small repository
// the sandbox GitHub serves, and the facts a good specification written
// from that material must carry, each tied to the input it comes from.
//
// A case lives in cases/<id>/: case.json (see Case), the input files it
// names, and repo.json (see Repo) when it has a repository.
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
	// Upload makes the input an uploaded file (multipart) instead of JSON.
	Upload  bool   `json:"upload"`
	Content string `json:"-"`
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
func (f Fact) FoundIn(text string) bool {
	text = normalise(text)
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

// Load reads every case of the corpus, in the order of their ids.
func Load() ([]Case, error) {
	dirs, err := fs.ReadDir(files, "cases")
	if err != nil {
		return nil, err
	}
	var out []Case
	for _, d := range dirs {
		if !d.IsDir() {
			continue
		}
		c, err := load(d.Name())
		if err != nil {
			return nil, fmt.Errorf("evalcorpus: case %s: %w", d.Name(), err)
		}
		out = append(out, c)
	}
	return out, nil
}

func load(id string) (Case, error) {
	dir := path.Join("cases", id)
	raw, err := files.ReadFile(path.Join(dir, "case.json"))
	if err != nil {
		return Case{}, err
	}
	var c Case
	if err := json.Unmarshal(raw, &c); err != nil {
		return Case{}, fmt.Errorf("case.json: %w", err)
	}
	c.ID = id
	names := map[string]bool{}
	for i, in := range c.Inputs {
		b, err := files.ReadFile(path.Join(dir, in.Name))
		if err != nil {
			return Case{}, err
		}
		c.Inputs[i].Content = string(b)
		names[in.Name] = true
	}
	if len(c.Inputs) == 0 {
		return Case{}, fmt.Errorf("no inputs")
	}
	for _, f := range c.Facts {
		if !names[f.Input] || len(f.Terms) == 0 {
			return Case{}, fmt.Errorf("fact %s: cites no input of the case or has no terms", f.ID)
		}
	}
	if b, err := files.ReadFile(path.Join(dir, "repo.json")); err == nil {
		var r Repo
		if err := json.Unmarshal(b, &r); err != nil {
			return Case{}, fmt.Errorf("repo.json: %w", err)
		}
		c.Repo = &r
	}
	return c, nil
}
