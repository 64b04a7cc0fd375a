package tool

import (
	"context"
	"maps"
	"regexp"
	"strings"
)

// Source supplies an organisation's tools beyond the registry's (those of
// the MCP servers it registered), looked up for each turn and confirmation.
type Source interface {
	// OrgTools returns the organisation's extra tools. It never fails a
	// turn: what cannot be listed is left out and said in Extra.Notes. It
	// returns within a bounded time.
	OrgTools(ctx context.Context, orgID string) Extra
	// Owns reports whether name is the name of a tool Source may supply,
	// so that a confirmation of it is looked up here.
	Owns(name string) bool
}

// Extra is what a Source supplies for one organisation.
type Extra struct {
	// Tools are the tools, of their own areas.
	Tools []Tool
	// AreaWords are, for each area of Tools, the words of a message that
	// bring the area into play (a server's name).
	AreaWords map[Area][]string
	// Notes are sentences for the model about tools left out ("linear's
	// tools are unavailable: it did not answer in time").
	Notes []string
}

// With returns a registry holding r's tools and extra's. A tool of extra
// that does not compile or whose name r has already is left out, with the
// error said in the problems returned. r is not changed.
func (r *Registry) With(extra Extra) (*Registry, []error) {
	out := NewRegistry()
	r.mu.RLock()
	maps.Copy(out.tools, r.tools)
	words := maps.Clone(r.words)
	r.mu.RUnlock()
	var problems []error
	for _, t := range extra.Tools {
		if err := out.Register(t); err != nil {
			problems = append(problems, err)
		}
	}
	if len(extra.AreaWords) > 0 && words == nil {
		words = map[Area]*regexp.Regexp{}
	}
	for a, ws := range extra.AreaWords {
		quoted := make([]string, 0, len(ws))
		for _, w := range ws {
			if w = strings.ToLower(strings.TrimSpace(w)); w != "" {
				quoted = append(quoted, regexp.QuoteMeta(w))
			}
		}
		if len(quoted) > 0 {
			words[a] = regexp.MustCompile(`\b(` + strings.Join(quoted, "|") + `)\b`)
		}
	}
	out.words = words
	return out, problems
}
