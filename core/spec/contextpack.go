package spec

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/devpilot/devpilot/core/internal/genjob"
	"github.com/devpilot/devpilot/ports"
)

// A context pack is what a per-epic stories call or a per-story PRP call
// needs beyond its own epic or story (PRP base template: "all needed
// context"; BMAD: self-contained story files): the passages of the raw
// material its requirements cite, the scope's constraints and what is out
// of scope, the PRD's non-goals, assumptions, edge cases and
// clarifications, the stories around it and those it depends on with the
// paths their PRPs plan. It is one <context_pack> element of JSON in the
// call's user message; every key is always present.

// contextPack is the JSON of a <context_pack> element.
type contextPack struct {
	SourcePassages []sourcePassage `json:"source_passages"`
	Constraints    []string        `json:"constraints"`
	OutOfScope     []string        `json:"out_of_scope"`
	NonGoals       []string        `json:"non_goals"`
	Assumptions    []string        `json:"assumptions"`
	EdgeCases      []string        `json:"edge_cases"`
	Clarifications []clarification `json:"clarifications"`
	RelatedStories []relatedStory  `json:"related_stories"`
	Dependencies   []dependency    `json:"dependencies"`
}

// sourcePassage is the raw material around a source a requirement cites:
// Input is the source's input ("1", "2", … or "digest"), Title that
// input's title, Passage its paragraph around the quote (or the quote
// alone when it is not found in the input).
type sourcePassage struct {
	Input          string   `json:"input"`
	Title          string   `json:"title"`
	RequirementIDs []string `json:"requirement_ids"`
	Passage        string   `json:"passage"`
	// primary is the first passage of one of its requirements: the last
	// to be dropped when the pack is too large.
	primary bool
}

// relatedStory is a story the call is to know by id: another of its
// epic's, or one of an epic it depends on.
type relatedStory struct {
	ID     string `json:"id"`
	EpicID string `json:"epic_id"`
	Title  string `json:"title"`
}

// dependency is a story the PRP's story depends on, with the paths the
// PRP written for it plans (none when that PRP is not known).
type dependency struct {
	StoryID      string        `json:"story_id"`
	Title        string        `json:"title"`
	PRPID        string        `json:"prp_id"`
	PlannedPaths []plannedPath `json:"planned_paths"`
}

// plannedPath is one task of a dependency's PRP: what it does to which path.
type plannedPath struct {
	Action string `json:"action"`
	Path   string `json:"path"`
}

// Bounds on the source passages.
const (
	// maxPassageBytes bounds one passage around its quote.
	maxPassageBytes = 1200
	// maxQuoteBytes bounds a quote given as its own passage.
	maxQuoteBytes = 600
)

// material is the raw inputs a context pack quotes, numbered from 1 as
// the PRD's request numbered them, each normalised once (white space
// runs as one space) for finding quotes, however many calls quote it.
type material struct {
	inputs []ports.SpecInput
	once   []sync.Once
	norm   []string
}

func newMaterial(inputs []ports.SpecInput) *material {
	return &material{inputs: inputs, once: make([]sync.Once, len(inputs)), norm: make([]string, len(inputs))}
}

// normalised is input i's content with each run of white space as one
// space, and none at its start.
func (m *material) normalised(i int) string {
	m.once[i].Do(func() { m.norm[i] = normaliseSpace(m.inputs[i].Content) })
	return m.norm[i]
}

// newContextPack is the pack of a call covering the requirements reqIDs:
// their source passages from the material, and what the scope and the PRD
// say for every call. related and deps are the call's own.
func newContextPack(prior *earlier, m *material, reqIDs []string, related []relatedStory, deps []dependency) contextPack {
	p := contextPack{
		SourcePassages: []sourcePassage{}, Constraints: []string{}, OutOfScope: []string{}, NonGoals: []string{},
		Assumptions: []string{}, EdgeCases: []string{}, Clarifications: []clarification{},
		RelatedStories: nonNilSlice(related), Dependencies: nonNilSlice(deps),
	}
	if prior.scope != nil {
		p.Constraints = nonNilSlice(prior.scope.Constraints)
		p.OutOfScope = nonNilSlice(prior.scope.OutOfScope)
	}
	if prior.prd != nil {
		p.NonGoals = nonNilSlice(prior.prd.NonGoals)
		p.Assumptions = nonNilSlice(prior.prd.Assumptions)
		p.EdgeCases = nonNilSlice(prior.prd.EdgeCases)
		p.Clarifications = nonNilSlice(prior.prd.Clarifications)
		for _, r := range requirementsOf(prior.prd, reqIDs) {
			for i, src := range r.Sources {
				p.addPassage(m.passageOf(src), r.ID, i == 0)
			}
		}
	}
	for i := range p.Dependencies {
		p.Dependencies[i].PlannedPaths = nonNilSlice(p.Dependencies[i].PlannedPaths)
	}
	return p
}

func nonNilSlice[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// addPassage adds sp for requirement id, or names id on an equal passage
// already there.
func (p *contextPack) addPassage(sp sourcePassage, id string, primary bool) {
	if strings.TrimSpace(sp.Passage) == "" {
		return
	}
	for i := range p.SourcePassages {
		have := &p.SourcePassages[i]
		if have.Input == sp.Input && have.Passage == sp.Passage {
			if !slices.Contains(have.RequirementIDs, id) {
				have.RequirementIDs = append(have.RequirementIDs, id)
			}
			have.primary = have.primary || primary
			return
		}
	}
	sp.RequirementIDs, sp.primary = []string{id}, primary
	p.SourcePassages = append(p.SourcePassages, sp)
}

// passageOf is the raw material around src: when its quote is found in
// the input it names (white space aside), the paragraph around it, bounded
// to maxPassageBytes; else, and for a digest, the quote itself.
func (m *material) passageOf(src source) sourcePassage {
	quote := strings.TrimSpace(src.Quote)
	sp := sourcePassage{Input: src.Input, Title: src.Input, Passage: clipText(quote, maxQuoteBytes)}
	n, err := strconv.Atoi(src.Input)
	if src.Input == sourceDigest || err != nil || n < 1 || n > len(m.inputs) {
		return sp
	}
	in := m.inputs[n-1]
	sp.Title = in.Title
	if start, end, ok := findQuote(in.Content, m.normalised(n-1), quote); ok {
		sp.Passage = paragraphAround(in.Content, start, end, maxPassageBytes)
	}
	return sp
}

// clipText cuts s to at most n bytes at a character boundary, marking the
// cut.
func clipText(s string, n int) string {
	if clipped, cut := ports.ClipBytes(s, n); cut {
		return clipped + "…"
	}
	return s
}

// normaliseSpace is text with each run of white space as one space, and
// none at its start.
func normaliseSpace(text string) string {
	var b strings.Builder
	b.Grow(len(text))
	space := false
	for _, r := range text {
		if unicode.IsSpace(r) {
			if !space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = true
			continue
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

// findQuote finds quote in text (norm is normaliseSpace(text)), any run of
// white space matching any other, and quotation marks and ellipses around
// it ignored; start and end are byte offsets in text.
func findQuote(text, norm, quote string) (start, end int, ok bool) {
	quote = strings.Trim(quote, "\"'“”‘’«» ")
	quote = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(quote, "…"), "…"))
	quote = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(quote, "..."), "..."))
	want := strings.Join(strings.Fields(quote), " ")
	if want == "" {
		return 0, 0, false
	}
	i := strings.Index(norm, want)
	if i < 0 {
		return 0, 0, false
	}
	// Walk text as normaliseSpace did, to the offsets of norm's i and
	// i+len(want).
	start, end = -1, len(text)
	k := 0 // bytes of norm written so far
	space := false
	for off, r := range text {
		if k == i && start < 0 && !unicode.IsSpace(r) {
			start = off
		}
		if unicode.IsSpace(r) {
			if !space && k > 0 {
				k++
			}
			space = true
			continue
		}
		space = false
		k += utf8.RuneLen(r)
		if k == i+len(want) {
			end = off + utf8.RuneLen(r)
			break
		}
	}
	return start, end, start >= 0
}

// paragraphAround is the paragraph of text (between blank lines) holding
// text[start:end]; when it is longer than limit, the whole lines around
// the quote that fit in limit (the quote alone when it does not fit).
func paragraphAround(text string, start, end, limit int) string {
	ps := 0
	if i := lastBlankLine(text[:start]); i >= 0 {
		ps = i
	}
	pe := len(text)
	if i := firstBlankLine(text[end:]); i >= 0 {
		pe = end + i
	}
	if pe-ps > limit {
		if end-start >= limit {
			return clipText(strings.TrimSpace(text[start:end]), limit)
		}
		room := limit - (end - start)
		ws := max(ps, start-room/2)
		we := min(pe, end+(limit-(end-start)-(start-ws)))
		// Cut at a line break where that keeps most of the window, else
		// at a word.
		if before := text[ws:start]; ws > ps {
			if i := strings.IndexByte(before, '\n'); i >= 0 && i < len(before)/2 {
				ws += i + 1
			} else if i := strings.IndexAny(before, " \t\n"); i >= 0 {
				ws += i + 1
			}
		}
		if after := text[end:we]; we < pe {
			if i := strings.LastIndexByte(after, '\n'); i >= 0 && i > len(after)/2 {
				we = end + i
			} else if i := strings.LastIndexAny(after, " \t\n"); i >= 0 {
				we = end + i
			}
		}
		for ws > 0 && !utf8.RuneStart(text[ws]) {
			ws++
		}
		for we < len(text) && !utf8.RuneStart(text[we]) {
			we--
		}
		ps, pe = ws, we
	}
	return strings.TrimSpace(text[ps:pe])
}

// lastBlankLine is the offset just after the last blank line of s, -1 when
// it has none.
func lastBlankLine(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] != '\n' {
			continue
		}
		j := i - 1
		for j >= 0 && (s[j] == ' ' || s[j] == '\t' || s[j] == '\r') {
			j--
		}
		if j >= 0 && s[j] == '\n' {
			return i + 1
		}
	}
	return -1
}

// firstBlankLine is the offset of the first blank line of s (its line
// break before it), -1 when it has none.
func firstBlankLine(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] != '\n' {
			continue
		}
		j := i + 1
		for j < len(s) && (s[j] == ' ' || s[j] == '\t' || s[j] == '\r') {
			j++
		}
		if j < len(s) && s[j] == '\n' {
			return i
		}
	}
	return -1
}

// bound drops what matters least until the pack's estimated tokens fit
// maxTokens: the passages beyond the first of each requirement (the last
// first), then the other passages, then the last items of the longest of
// the other lists.
func (p *contextPack) bound(maxTokens int) {
	for p.tokens() > maxTokens {
		if i := lastSecondary(p.SourcePassages); i >= 0 {
			p.SourcePassages = slices.Delete(p.SourcePassages, i, i+1)
			continue
		}
		if n := len(p.SourcePassages); n > 0 {
			p.SourcePassages = p.SourcePassages[:n-1]
			continue
		}
		if !p.dropLongest() {
			return
		}
	}
}

func lastSecondary(ps []sourcePassage) int {
	for i := len(ps) - 1; i >= 0; i-- {
		if !ps[i].primary {
			return i
		}
	}
	return -1
}

// dropLongest drops the last item of the longest list other than the
// passages; false when they are all empty.
func (p *contextPack) dropLongest() bool {
	lists := []int{len(p.Constraints), len(p.OutOfScope), len(p.NonGoals), len(p.Assumptions), len(p.EdgeCases),
		len(p.Clarifications), len(p.RelatedStories), len(p.Dependencies)}
	longest := 0
	for i, n := range lists {
		if n > lists[longest] {
			longest = i
		}
	}
	if lists[longest] == 0 {
		return false
	}
	switch longest {
	case 0:
		p.Constraints = p.Constraints[:len(p.Constraints)-1]
	case 1:
		p.OutOfScope = p.OutOfScope[:len(p.OutOfScope)-1]
	case 2:
		p.NonGoals = p.NonGoals[:len(p.NonGoals)-1]
	case 3:
		p.Assumptions = p.Assumptions[:len(p.Assumptions)-1]
	case 4:
		p.EdgeCases = p.EdgeCases[:len(p.EdgeCases)-1]
	case 5:
		p.Clarifications = p.Clarifications[:len(p.Clarifications)-1]
	case 6:
		p.RelatedStories = p.RelatedStories[:len(p.RelatedStories)-1]
	case 7:
		p.Dependencies = p.Dependencies[:len(p.Dependencies)-1]
	}
	return true
}

func (p *contextPack) tokens() int {
	b, _ := json.Marshal(p)
	return estimateTokens(string(b))
}

// element is the pack as the user message carries it.
func (p *contextPack) element() string {
	b, _ := json.Marshal(p)
	return "<context_pack>\n" + genjob.Fenced(string(b), "context_pack") + "\n</context_pack>\n"
}

// packBudget is the most estimated tokens a context pack may take: a
// quarter of the context budget.
func (s *Service) packBudget() int { return s.cfg.ContextBudget / 4 }
