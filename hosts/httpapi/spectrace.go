package httpapi

import (
	"net/http"

	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/ports"
)

// traceItemJSON is one link of a traceability chain.
type traceItemJSON struct {
	ID    string `json:"id"`
	Title string `json:"title"`
}

// traceRowJSON is one chain requirement → epic → story → PRP; a link the
// chain does not have is null.
type traceRowJSON struct {
	Requirement *traceItemJSON `json:"requirement"`
	Epic        *traceItemJSON `json:"epic"`
	Story       *traceItemJSON `json:"story"`
	PRP         *traceItemJSON `json:"prp"`
	Status      string         `json:"status"`
	Note        string         `json:"note"`
}

type danglingJSON struct {
	From string `json:"from"`
	Ref  string `json:"ref"`
	Note string `json:"note"`
}

type traceSummaryJSON struct {
	Requirements int            `json:"requirements"`
	Uncovered    []string       `json:"uncovered"`
	Orphans      []string       `json:"orphans"`
	Dangling     []danglingJSON `json:"dangling"`
	Stale        []ports.Stage  `json:"stale"`
}

// traceabilityJSON is GET /pse/sessions/{id}/traceability: the rows of the
// export's traceability.csv and their summary.
type traceabilityJSON struct {
	SessionID      string           `json:"session_id"`
	PRDGenerated   bool             `json:"prd_generated"`
	EpicsGenerated bool             `json:"epics_generated"`
	Rows           []traceRowJSON   `json:"rows"`
	Summary        traceSummaryJSON `json:"summary"`
}

func traceItemOut(it spec.TraceItem) *traceItemJSON {
	if it.ID == "" {
		return nil
	}
	return &traceItemJSON{ID: it.ID, Title: it.Title}
}

// specTraceability answers GET /pse/sessions/{id}/traceability: the
// session's traceability, the one relation its export's files and GitHub
// issues use (404 for another's session).
func (s *Server) specTraceability(w http.ResponseWriter, r *http.Request) error {
	id := pathParam(r, "session_id")
	tr, err := s.d.Spec.Traceability(r.Context(), id)
	if err != nil {
		return err
	}
	out := traceabilityJSON{SessionID: id, PRDGenerated: tr.PRD, EpicsGenerated: tr.Epics, Rows: make([]traceRowJSON, len(tr.Rows)),
		Summary: traceSummaryJSON{Requirements: tr.Requirements, Uncovered: nonNil(tr.Uncovered), Orphans: nonNil(tr.Orphans),
			Dangling: make([]danglingJSON, len(tr.Dangling)), Stale: nonNil(tr.Stale)}}
	for i, row := range tr.Rows {
		out.Rows[i] = traceRowJSON{Requirement: traceItemOut(row.Requirement), Epic: traceItemOut(row.Epic), Story: traceItemOut(row.Story),
			PRP: traceItemOut(row.PRP), Status: row.Status, Note: row.Note}
	}
	for i, d := range tr.Dangling {
		out.Summary.Dangling[i] = danglingJSON(d)
	}
	return writeJSON(w, http.StatusOK, out)
}
