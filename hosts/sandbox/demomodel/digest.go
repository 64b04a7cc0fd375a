package demomodel

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/devpilot/devpilot/hosts/sandbox/fakeopenai"
)

// The response format names of core/spec's digest of long inputs: map
// (the key facts of one chunk) and reduce (partial digests merged).
const (
	digestMapSchemaName    = "input_digest_map"
	digestReduceSchemaName = "input_digest_reduce"
)

// digestDoc is a digest as core/spec asks for it.
type digestDoc struct {
	Title         string       `json:"title"`
	Summary       string       `json:"summary"`
	Facts         []digestFact `json:"facts"`
	OpenQuestions []string     `json:"open_questions"`
}

type digestFact struct {
	Fact   string   `json:"fact"`
	Inputs []string `json:"inputs"`
}

// maxDigestFacts bounds a merged digest when the request names no bound.
const maxDigestFacts = 60

var (
	chunkPattern    = regexp.MustCompile(`(?s)<input id="([^"]*)" kind="([^"]*)" title=("(?:[^"\\]|\\.)*") part="\d+ of \d+">\n(.*?)\n</input>`)
	partialPattern  = regexp.MustCompile(`(?s)<partial_digest n="\d+">\n(.*?)\n</partial_digest>`)
	citationPattern = regexp.MustCompile(`\s*\[inputs?: [^\]\n]*\]`)
	maxFactsPattern = regexp.MustCompile(`At most (\d+) facts`)
)

// digestKind says which digest call req is: by its response format, or by
// its prompt when the provider takes no schema; "" for neither.
func digestKind(req *fakeopenai.Request) string {
	switch name := req.ResponseSchemaName(); name {
	case digestMapSchemaName, digestReduceSchemaName:
		return name
	case "":
		for _, msg := range req.Messages {
			if msg.Role != "user" {
				continue
			}
			switch {
			case strings.Contains(msg.Content, "<partial_digest "):
				return digestReduceSchemaName
			case chunkPattern.MatchString(msg.Content):
				return digestMapSchemaName
			}
		}
	}
	return ""
}

// digestAnswer answers a digest call: the key facts of a chunk, read like
// any raw material (its list items or else its sentences), each citing the
// chunk's input; or the partial digests merged, duplicates folded together
// with all their input ids.
func digestAnswer(kind string, req *fakeopenai.Request) digestDoc {
	user := ""
	for _, msg := range req.Messages {
		if msg.Role == "user" {
			user = msg.Content
			break
		}
	}
	if kind == digestReduceSchemaName {
		var parts []digestDoc
		for _, m := range partialPattern.FindAllStringSubmatch(user, -1) {
			if d := decodeInto[digestDoc]([]byte(strings.ReplaceAll(m[1], `<\/partial_digest`, "</partial_digest"))); d != nil {
				parts = append(parts, *d)
			}
		}
		limit := maxDigestFacts
		for _, msg := range req.Messages {
			if m := maxFactsPattern.FindStringSubmatch(msg.Content); msg.Role == "system" && m != nil {
				if n, err := strconv.Atoi(m[1]); err == nil && n > 0 {
					limit = min(limit, n)
				}
			}
		}
		return mergeDigests(parts, limit)
	}
	d := digestDoc{Facts: []digestFact{}, OpenQuestions: []string{}}
	m := chunkPattern.FindStringSubmatch(user)
	if m == nil {
		d.Title = "Raw material"
		return d
	}
	title := m[3]
	if t, err := unquote(title); err == nil {
		title = t
	}
	mat := material{inputs: []input{{kind: m[2], title: title, content: strings.ReplaceAll(m[4], `<\/input`, "</input")}}}
	d.Title = mat.topic()
	d.Summary = mat.problem(d.Title)
	for _, p := range mat.points() {
		d.Facts = append(d.Facts, digestFact{Fact: sentence(p), Inputs: []string{m[1]}})
	}
	d.OpenQuestions = nonNil(mat.questions())
	return d
}

func unquote(s string) (string, error) {
	var out string
	err := json.Unmarshal([]byte(s), &out)
	return out, err
}

// mergeDigests folds partial digests into one: the first title and
// summary, every distinct fact once (with the input ids of all its
// copies), at most limit of them (the first), and the distinct open
// questions.
func mergeDigests(parts []digestDoc, limit int) digestDoc {
	out := digestDoc{Facts: []digestFact{}, OpenQuestions: []string{}}
	for _, p := range parts {
		out.Title = cmpOr(out.Title, p.Title)
		out.Summary = cmpOr(out.Summary, p.Summary)
		for _, f := range p.Facts {
			i := slices.IndexFunc(out.Facts, func(o digestFact) bool { return strings.EqualFold(o.Fact, f.Fact) })
			switch {
			case i >= 0:
				for _, id := range f.Inputs {
					if !slices.Contains(out.Facts[i].Inputs, id) {
						out.Facts[i].Inputs = append(out.Facts[i].Inputs, id)
					}
				}
			case len(out.Facts) < limit:
				out.Facts = append(out.Facts, digestFact{Fact: f.Fact, Inputs: slices.Clone(f.Inputs)})
			}
		}
		for _, q := range p.OpenQuestions {
			if len(out.OpenQuestions) < 5 && !slices.Contains(out.OpenQuestions, q) {
				out.OpenQuestions = append(out.OpenQuestions, q)
			}
		}
	}
	if out.Title == "" {
		out.Title = "Raw material"
	}
	return out
}

// withoutCitations is req with the digest's input citations ("[inputs:
// …]") taken out of its user messages, so that the stages the demo model
// writes from a digest read like those it writes from raw material.
func withoutCitations(req *fakeopenai.Request) *fakeopenai.Request {
	if !slices.ContainsFunc(req.Messages, func(m fakeopenai.Message) bool { return m.Role == "user" && citationPattern.MatchString(m.Content) }) {
		return req
	}
	r := *req
	r.Messages = slices.Clone(req.Messages)
	for i, m := range r.Messages {
		if m.Role == "user" {
			r.Messages[i].Content = citationPattern.ReplaceAllString(m.Content, "")
		}
	}
	return &r
}
