package spec

import (
	"context"
	"fmt"
	"strings"

	"github.com/devpilot/devpilot/ports"
)

// Document is one addressable Markdown document of a session, for clients
// that read a session piece by piece (the MCP server's resources): the
// overview, a stage, one epic, story or PRP, or the traceability table.
type Document struct {
	// Path names the document within its session: "" (the overview), a
	// stage ("prd"), "epics/EP-1", "stories/ST-1.2", "prps/PRP-1.2" or
	// "traceability".
	Path string
	// Title is a short human name ("PRP-1.2: Sign-in with email").
	Title string
	// Markdown is the document.
	Markdown string
	// Stage is the stage the document comes from; "" for the overview and
	// the traceability table.
	Stage ports.Stage
}

// Documents is the session and every document of it, the overview first,
// then each generated stage followed by its items, then the traceability
// table when any stage is generated.
type Documents struct {
	Session ports.SpecSession
	Items   []Document
}

// Find returns the document at path, if the session has it.
func (d Documents) Find(path string) (Document, bool) {
	for _, doc := range d.Items {
		if doc.Path == path {
			return doc, true
		}
	}
	return Document{}, false
}

// Documents reads the caller's session id as its addressable documents,
// rendered from the current version of each stage as the export renders them
// (items are cut out of their stage's structured data). Errors: not_found when
// the session is absent or another's.
func (s *Service) Documents(ctx context.Context, id string) (Documents, error) {
	e, err := s.ExportSession(ctx, id, ExportMarkdown)
	if err != nil {
		return Documents{}, err
	}
	tr := e.trace()
	out := Documents{Session: e.Session}
	out.Items = append(out.Items, Document{Path: "", Title: sessionName(e.Session), Markdown: e.index(false, tr)})
	for _, a := range e.current {
		out.Items = append(out.Items, Document{Path: string(a.Stage), Title: stageTitles[a.Stage], Markdown: stageDocument(a), Stage: a.Stage})
		out.Items = append(out.Items, itemDocuments(a)...)
	}
	if tr != nil {
		out.Items = append(out.Items, Document{Path: "traceability", Title: "Traceability", Markdown: tr.markdown()})
	}
	return out, nil
}

// sessionName is the session's name as a title.
func sessionName(s ports.SpecSession) string {
	if name := ports.Line(s.Name, MaxNameLen); name != "" {
		return name
	}
	return "Untitled specification"
}

// itemDocuments cuts an epics, stories or PRPs artifact into one document
// per item with a well-formed id; other stages have none.
func itemDocuments(a ports.SpecArtifact) []Document {
	head := func(id string) string {
		note := fmt.Sprintf("> %s of %s version %d", id, stageTitles[a.Stage], a.Version)
		if a.Stale {
			note += "\n>\n" + StaleNote
		}
		return note + "\n\n"
	}
	var docs []Document
	switch d := decodeDoc(a.Stage, a.Data).(type) {
	case *epicsDoc:
		for _, ep := range d.Epics {
			if epicIDPattern.MatchString(ep.ID) {
				var m md
				renderEpics(&m, &epicsDoc{Epics: []epic{ep}})
				docs = append(docs, Document{Path: "epics/" + ep.ID, Title: itemTitle(ep.ID, ep.Title),
					Markdown: head(ep.ID) + withoutFirstHeading(m.String()), Stage: a.Stage})
			}
		}
	case *storiesDoc:
		for _, st := range d.Stories {
			if storyIDPattern.MatchString(st.ID) {
				var m md
				renderStories(&m, &storiesDoc{Stories: []story{st}})
				docs = append(docs, Document{Path: "stories/" + st.ID, Title: itemTitle(st.ID, st.Title),
					Markdown: head(st.ID) + withoutFirstHeading(m.String()), Stage: a.Stage})
			}
		}
	case *prpsDoc:
		for _, p := range d.PRPs {
			if prpIDPattern.MatchString(p.ID) {
				var m md
				renderPRPs(&m, &prpsDoc{PRPs: []prp{p}})
				docs = append(docs, Document{Path: "prps/" + p.ID, Title: itemTitle(p.ID, p.Title),
					Markdown: head(p.ID) + withoutFirstHeading(m.String()), Stage: a.Stage})
			}
		}
	}
	return docs
}

func itemTitle(id, title string) string {
	if t := ports.Line(title, 200); t != "" {
		return id + ": " + t
	}
	return id
}

// withoutFirstHeading drops the stage's level-1 heading a renderer starts
// with, and the blank line after it.
func withoutFirstHeading(s string) string {
	if strings.HasPrefix(s, "# ") {
		if _, rest, ok := strings.Cut(s, "\n"); ok {
			return strings.TrimLeft(rest, "\n")
		}
	}
	return s
}
