package tool

import (
	"regexp"
	"slices"
	"strings"

	"github.com/devpilot/devpilot/ports"
)

// Area is a part of the product; each tool belongs to one.
type Area string

// The areas of the product.
const (
	AreaCloud   Area = "cloud"
	AreaContent Area = "content"
	AreaSpec    Area = "spec"
	AreaSCM     Area = "scm"
)

// DefaultMaxTools bounds the tools offered in one model call unless
// the assistant's Config.MaxTools says otherwise. OpenAI's function calling guide advises
// fewer than 20 functions at a time for accuracy.
const DefaultMaxTools = 20

// pageAreas maps the first segment of a console page (current_page) to its
// area.
var pageAreas = map[string]Area{
	"cloud": AreaCloud, "infrastructure": AreaCloud, "aws": AreaCloud,
	"content": AreaContent, "brands": AreaContent, "briefs": AreaContent,
	"pse": AreaSpec, "specs": AreaSpec, "spec": AreaSpec, "specifications": AreaSpec,
	"scm": AreaSCM, "repos": AreaSCM, "repositories": AreaSCM, "github": AreaSCM,
}

// AreaOfPage is the area a console page belongs to ("/cloud/services",
// "#/specs/…", "https://host/content"), "" when it belongs to none.
func AreaOfPage(page string) Area {
	page = strings.ToLower(strings.TrimSpace(page))
	if i := strings.Index(page, "://"); i >= 0 { // a full URL: its path, or its fragment
		page = page[i+3:]
		if j := strings.IndexAny(page, "/#"); j >= 0 {
			page = page[j:]
		} else {
			page = ""
		}
	}
	for _, seg := range strings.FieldsFunc(page, func(r rune) bool { return r == '/' || r == '#' || r == '?' }) {
		if a, ok := pageAreas[seg]; ok {
			return a
		}
		if seg != "api" && seg != "v1" && seg != "console" && seg != "app" {
			break // the first meaningful segment decides
		}
	}
	return ""
}

// areaWords are the words of a message that point to an area, for a
// message sent without a page (a cheap keyword router).
var areaWords = map[Area]*regexp.Regexp{
	AreaCloud:   regexp.MustCompile(`\b(aws|cloud|accounts?|clusters?|ecs|services?|tasks?|scal(e|ing)|deploy(s|ed|ment)?|roll ?out|logs?|lambdas?|functions?|invoke|amplify|apps?|builds?|costs?|spend(ing)?|bill(ing)?|production|prod|infrastructure)\b`),
	AreaContent: regexp.MustCompile(`\b(content|briefs?|brands?|drafts?|posts?|articles?|copy|newsletters?|blog|linkedin|tone|banned words?|publish(ed)?|marketing)\b`),
	AreaSpec:    regexp.MustCompile(`\b(specs?|specifications?|pse|scope|prds?|epics?|stor(y|ies)|prps?|requirements?|transcripts?|stages?)\b`),
	AreaSCM:     regexp.MustCompile(`\b(repos?|repositor(y|ies)|commits?|pull requests?|pulls?|prs?|github|branch(es)?|merged?|activity|code)\b`),
}

var areaOrder = []Area{AreaCloud, AreaContent, AreaSpec, AreaSCM}

// areasOfMessage are the areas a message names, most mentioned first.
func areasOfMessage(msg string) []Area {
	msg = strings.ToLower(msg)
	type hit struct {
		a Area
		n int
	}
	var hits []hit
	for _, a := range areaOrder {
		if n := len(areaWords[a].FindAllStringIndex(msg, -1)); n > 0 {
			hits = append(hits, hit{a, n})
		}
	}
	slices.SortStableFunc(hits, func(x, y hit) int { return y.n - x.n })
	out := make([]Area, len(hits))
	for i, h := range hits {
		out[i] = h.a
	}
	return out
}

// Route chooses the tools offered to the model in one call from the page
// and the message alone: RouteFollowing without a conversation.
func (r *Registry) Route(page *PageContext, message string, max int) []ports.ToolDefinition {
	return r.RouteFollowing(page, message, nil, max)
}

// RouteFollowing chooses the tools offered to the model in one call, at most
// max (0 means DefaultMaxTools). The areas in play are the page's, then the
// areas the message names (most named first), then the areas of recent, the
// tools the conversation called or asked to confirm lately (most recent
// first; names the registry does not know are skipped). The tools are taken
// in this order until max is reached: the writes of the areas in play, the
// core reads (Tool.Core) and the tools of no area, the reads of the areas in
// play, and, when no area is in play, the reads of every area. So a write of
// an area the conversation is in is never dropped for a read of another
// area, and a follow-up such as "add another one" keeps the write it
// continues. The result is sorted by name, so the same inputs give the same
// tools, and the provider's cached prefix holds.
func (r *Registry) RouteFollowing(page *PageContext, message string, recent []string, max int) []ports.ToolDefinition {
	if max <= 0 {
		max = DefaultMaxTools
	}
	var areas []Area
	addArea := func(a Area) {
		if a != "" && !slices.Contains(areas, a) {
			areas = append(areas, a)
		}
	}
	if page != nil {
		addArea(AreaOfPage(page.CurrentPage))
	}
	for _, a := range areasOfMessage(message) {
		addArea(a)
	}
	r.mu.RLock()
	if len(r.words) > 0 {
		lower := strings.ToLower(message)
		extra := make([]Area, 0, len(r.words))
		for a, re := range r.words {
			if re.MatchString(lower) {
				extra = append(extra, a)
			}
		}
		slices.Sort(extra)
		for _, a := range extra {
			addArea(a)
		}
	}
	entries := make([]*entry, 0, len(r.tools))
	for _, e := range r.tools {
		entries = append(entries, e)
	}
	for _, name := range recent {
		if e, ok := r.tools[name]; ok {
			addArea(e.tool.Area)
		}
	}
	r.mu.RUnlock()
	slices.SortFunc(entries, func(a, b *entry) int { return strings.Compare(a.tool.Name, b.tool.Name) })

	chosen := make([]*entry, 0, max)
	seen := map[string]bool{}
	add := func(keep func(Tool) bool) {
		for _, e := range entries {
			if len(chosen) == max {
				return
			}
			if !seen[e.tool.Name] && keep(e.tool) {
				seen[e.tool.Name] = true
				chosen = append(chosen, e)
			}
		}
	}
	for _, a := range areas {
		add(func(t Tool) bool { return t.Area == a && t.Effect != EffectRead })
	}
	add(func(t Tool) bool { return t.Core || t.Area == "" })
	for _, a := range areas {
		add(func(t Tool) bool { return t.Area == a })
	}
	if len(areas) == 0 {
		add(func(t Tool) bool { return t.Effect == EffectRead })
	}
	slices.SortFunc(chosen, func(a, b *entry) int { return strings.Compare(a.tool.Name, b.tool.Name) })
	defs := make([]ports.ToolDefinition, len(chosen))
	for i, e := range chosen {
		defs[i] = e.definition()
	}
	return defs
}
