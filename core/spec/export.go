package spec

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// ExportFormat is the shape of a session's export.
type ExportFormat string

// The export formats.
const (
	// ExportZip is a zip archive: README.md, one Markdown file per generated
	// stage, data/<stage>.json, traceability.md and traceability.csv.
	ExportZip ExportFormat = "zip"
	// ExportMarkdown is one Markdown document: the index, every generated
	// stage and the traceability table.
	ExportMarkdown ExportFormat = "md"
)

// exportVersion changes whenever the export's layout does, so that an
// entity tag of an older layout never matches.
const exportVersion = "1"

// StaleNote is the line that heads a stale stage's document in an export.
const StaleNote = "> Stale: regenerate — an earlier stage changed after this one was generated."

// Export is a session's current stage documents, gathered to be written in
// one format. Writing it reads nothing more, so a caller may answer its Tag
// (and a conditional request) before writing.
type Export struct {
	Session ports.SpecSession
	Format  ExportFormat
	// current is the latest version of each generated stage, in stage order.
	current []ports.SpecArtifact
}

// ExportSession gathers the current document of every generated stage of the
// caller's session for export in format ("" is ExportZip). A session without
// any generated stage exports too (its index alone). Errors: invalid (field
// format) for an unknown format; not_found when the session is absent or
// another user's or organisation's, as GetSession.
func (s *Service) ExportSession(ctx context.Context, id string, format ExportFormat) (*Export, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return nil, err
	}
	switch format {
	case "":
		format = ExportZip
	case ExportZip, ExportMarkdown:
	default:
		return nil, ports.Invalid(fmt.Sprintf("unknown export format %.40q; use zip or md", string(format)),
			ports.FieldError{Field: "format", Reason: "must be zip or md"})
	}
	if !ports.IsID(id) {
		return nil, ports.NotFound("specification session", id)
	}
	sess, err := s.d.Specs.GetSpecSession(ctx, p.Owner(), id)
	if err != nil {
		return nil, err
	}
	arts, err := s.d.Specs.ListArtifacts(ctx, id)
	if err != nil {
		return nil, err
	}
	s.nameEditors(ctx, p, arts)
	cur := currentArtifacts(arts)
	e := &Export{Session: sess, Format: format}
	for _, st := range ports.Stages {
		if a, ok := cur[st]; ok {
			e.current = append(e.current, a)
		}
	}
	return e, nil
}

// Tag is a strong validator of what Write writes: it changes whenever the
// session, the current version of a stage, a stale mark or the format does.
func (e *Export) Tag() string {
	h := sha256.New()
	s := e.Session
	fmt.Fprintf(h, "devpilot-spec-export %s\x00%s\x00%s\x00%s\x00%s\x00%d\x00", exportVersion, e.Format, s.ID, s.Name, s.Status, s.UpdatedAt.UnixMicro())
	for _, a := range e.current {
		fmt.Fprintf(h, "%s\x00%s\x00%d\x00%t\x00%d\x00", a.Stage, a.ID, a.Version, a.Stale, a.CreatedAt.UnixMicro())
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// FileName is the name to save the export as: "spec-" and the last eight
// characters of the session's id (the random ones of a UUIDv7), then ".zip"
// or ".md"; only letters, digits and dashes come from the id.
func (e *Export) FileName() string {
	id := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return -1
	}, e.Session.ID)
	if len(id) > 8 {
		id = id[len(id)-8:]
	}
	if id == "" {
		id = "session"
	}
	return "spec-" + strings.ToLower(id) + "." + string(e.Format)
}

// Write writes the export to w in its format. The same session in the same
// state writes the same bytes: zip entries carry the session's updated time,
// never the time of the export. Errors are w's.
func (e *Export) Write(w io.Writer) error {
	if e.Format == ExportMarkdown {
		return e.writeMarkdown(w)
	}
	return e.writeZip(w)
}

// exportFile is one file of a zip export.
type exportFile struct {
	name string
	body []byte
}

func (e *Export) files() []exportFile {
	tr := e.trace()
	files := []exportFile{{"README.md", []byte(e.index(true, tr))}}
	for _, a := range e.current {
		files = append(files, exportFile{stageFile(a.Stage), []byte(stageDocument(a))})
	}
	for _, a := range e.current {
		files = append(files, exportFile{"data/" + string(a.Stage) + ".json", prettyJSON(a.Data)})
	}
	if tr != nil {
		files = append(files, exportFile{"traceability.md", []byte(tr.markdown())}, exportFile{"traceability.csv", tr.csv()})
	}
	return files
}

func (e *Export) writeZip(w io.Writer) error {
	zw := zip.NewWriter(w)
	modified := e.Session.UpdatedAt.UTC().Truncate(time.Second)
	for _, f := range e.files() {
		fw, err := zw.CreateHeader(&zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: modified})
		if err != nil {
			return err
		}
		if _, err := fw.Write(f.body); err != nil {
			return err
		}
	}
	return zw.Close()
}

func (e *Export) writeMarkdown(w io.Writer) error {
	tr := e.trace()
	var b strings.Builder
	b.WriteString(e.index(false, tr))
	for _, a := range e.current {
		b.WriteString("\n---\n\n")
		b.WriteString(stageDocument(a))
	}
	if tr != nil {
		b.WriteString("\n---\n\n")
		b.WriteString(tr.markdown())
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// stageTitles are the stages as the export names them.
var stageTitles = map[ports.Stage]string{
	ports.StageScope: "Scope", ports.StagePRD: "PRD", ports.StageEpics: "Epics", ports.StageStories: "Stories", ports.StagePRPs: "PRPs",
}

// stageFile is a stage's document's name: its place in the pipeline, then
// its name ("02-prd.md").
func stageFile(st ports.Stage) string {
	return fmt.Sprintf("%02d-%s.md", stageIndex(st)+1, st)
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// stageDocument is a stage's current Markdown under a header saying which
// version it is (with the model and prompt version that made it, or who
// edited it by hand) and, when it is stale, that it should be regenerated.
func stageDocument(a ports.SpecArtifact) string {
	var b strings.Builder
	if a.EditedBy != "" {
		fmt.Fprintf(&b, "> %s · version %d · edited by hand %s", stageTitles[a.Stage], a.Version, stamp(a.CreatedAt))
		if n := ports.Line(a.EditorName, 200); n != "" {
			b.WriteString(" by " + n)
		}
	} else {
		fmt.Fprintf(&b, "> %s · version %d · generated %s", stageTitles[a.Stage], a.Version, stamp(a.CreatedAt))
	}
	if m := ports.Line(a.Model, 100); m != "" {
		b.WriteString(" · model " + m)
		if ports.IsSandboxModel(m) {
			b.WriteString(" (the sandbox's scripted model, not AI)")
		}
	}
	if v := ports.Line(a.PromptVersion, 64); v != "" {
		b.WriteString(" · prompt " + v)
	}
	b.WriteString("\n")
	if a.Stale {
		b.WriteString(">\n" + StaleNote + "\n")
	}
	b.WriteString("\n" + strings.TrimSpace(a.Content) + "\n")
	return b.String()
}

// index is the export's README: the session, each stage's status, and the
// traceability summary; links to the files when linked.
func (e *Export) index(linked bool, tr *Traceability) string {
	s := e.Session
	var b strings.Builder
	name := ports.Line(s.Name, MaxNameLen)
	if name == "" {
		name = "Untitled specification"
	}
	fmt.Fprintf(&b, "# %s\n\n", name)
	fmt.Fprintf(&b, "Specification exported from devpilot: session `%s`, status %s, created %s, updated %s.\n",
		ports.Line(s.ID, 64), s.Status, stamp(s.CreatedAt), stamp(s.UpdatedAt))
	b.WriteString("\n## Stages\n\n")
	if linked {
		b.WriteString("| # | Stage | Status | Version | Generated | File |\n|---|---|---|---|---|---|\n")
	} else {
		b.WriteString("| # | Stage | Status | Version | Generated |\n|---|---|---|---|---|\n")
	}
	byStage := map[ports.Stage]ports.SpecArtifact{}
	for _, a := range e.current {
		byStage[a.Stage] = a
	}
	var stale []string
	for i, st := range ports.Stages {
		a, ok := byStage[st]
		row := []string{strconv.Itoa(i + 1), stageTitles[st], "not generated", "—", "—", "—"}
		if ok {
			row[2], row[3], row[4] = "current", strconv.Itoa(a.Version), stamp(a.CreatedAt)
			if a.Stale {
				row[2] = "**stale** — regenerate"
				stale = append(stale, stageTitles[st])
			}
			row[5] = fmt.Sprintf("[%s](%s)", stageFile(st), stageFile(st))
		}
		if !linked {
			row = row[:5]
		}
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
	}
	if len(stale) > 0 {
		fmt.Fprintf(&b, "\nStale: %s. An earlier stage changed after these were generated: regenerate them to bring them up to date.\n",
			strings.Join(stale, ", "))
	}
	if len(e.current) == 0 {
		b.WriteString("\nNo stage is generated yet.\n")
	}
	if linked && len(e.current) > 0 {
		b.WriteString("\nThe structured data of each stage is in `data/<stage>.json`.\n")
	}
	if tr != nil {
		b.WriteString("\n## Traceability\n\n")
		b.WriteString(tr.summary())
		if linked {
			b.WriteString("\nThe matrix is in [traceability.md](traceability.md) and [traceability.csv](traceability.csv).\n")
		}
	}
	return b.String()
}

// prettyJSON indents a stage's data; data that is not JSON is kept as it is.
func prettyJSON(data json.RawMessage) []byte {
	var b bytes.Buffer
	if err := json.Indent(&b, data, "", "  "); err != nil {
		return append(slices.Clone([]byte(data)), '\n')
	}
	b.WriteByte('\n')
	return b.Bytes()
}

// trace is the traceability of the exported stages (see traceOf); nil
// until the PRD is generated.
func (e *Export) trace() *Traceability {
	m := traceOf(e.current)
	if !m.PRD {
		return nil
	}
	return &m
}

// tableText is s on one line, safe inside a Markdown table cell.
func tableText(s string) string {
	return strings.ReplaceAll(ports.Line(s, 500), "|", `\|`)
}

func mdCell(it TraceItem) string {
	switch {
	case it.ID == "":
		return "—"
	case it.Title == "":
		return tableText(it.ID)
	}
	return tableText(it.ID + ": " + it.Title)
}

// csv is traceability.csv: one line per row, with a header.
func (m *Traceability) csv() []byte {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write([]string{"requirement_id", "requirement", "epic_id", "epic", "story_id", "story", "prp_id", "prp", "status", "note"})
	for _, r := range m.Rows {
		_ = w.Write([]string{
			csvCell(r.Requirement.ID), csvCell(r.Requirement.Title), csvCell(r.Epic.ID), csvCell(r.Epic.Title),
			csvCell(r.Story.ID), csvCell(r.Story.Title), csvCell(r.PRP.ID), csvCell(r.PRP.Title), r.Status, csvCell(r.Note),
		})
	}
	w.Flush()
	return b.Bytes()
}

// csvCell is s on one line; a cell a spreadsheet would take for a formula
// is prefixed with an apostrophe.
func csvCell(s string) string {
	s = ports.Line(s, 500)
	if s != "" && strings.ContainsRune("=+-@", rune(s[0])) {
		s = "'" + s
	}
	return s
}
