package httpapi

import (
	"net/http"
	"time"

	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/ports"
)

type issueExportRequest struct {
	RepoID      *string `json:"repo_id"`
	IncludePRPs *bool   `json:"include_prps"`
}

type exportedIssueJSON struct {
	Kind    string `json:"kind"`
	Ref     string `json:"ref"`
	Number  int    `json:"number"`
	HTMLURL string `json:"html_url"`
}

type issueExportJSON struct {
	ExportID    string              `json:"export_id"`
	SessionID   string              `json:"session_id"`
	RepoID      string              `json:"repo_id"`
	IncludePRPs bool                `json:"include_prps"`
	Status      string              `json:"status"`
	Total       int                 `json:"total"`
	Done        int                 `json:"done"`
	Error       string              `json:"error,omitempty"`
	Issues      []exportedIssueJSON `json:"issues"`
	CreatedAt   time.Time           `json:"created_at"`
	UpdatedAt   time.Time           `json:"updated_at"`
}

func issueExportOut(v spec.IssueExportView) issueExportJSON {
	e := v.IssueExport
	out := issueExportJSON{ExportID: e.ID, SessionID: e.SessionID, RepoID: e.RepoID, IncludePRPs: e.IncludePRPs, Status: e.Status,
		Total: e.Total, Done: e.Done, Error: e.Error, Issues: []exportedIssueJSON{}, CreatedAt: e.CreatedAt.UTC(), UpdatedAt: e.UpdatedAt.UTC()}
	for _, i := range v.Issues {
		out.Issues = append(out.Issues, exportedIssueJSON{Kind: i.Kind, Ref: i.Ref, Number: i.Number, HTMLURL: i.HTMLURL})
	}
	return out
}

// startIssueExport answers POST /pse/sessions/{id}/export/github: 202 with
// the queued export.
func (s *Server) startIssueExport(w http.ResponseWriter, r *http.Request) error {
	var req issueExportRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.RepoID == nil || *req.RepoID == "" {
		return ports.FieldsError(ports.KindMalformed, ports.FieldError{Field: "repo_id", Reason: "required"})
	}
	e, err := s.d.Spec.StartIssueExport(r.Context(), pathParam(r, "session_id"), *req.RepoID, req.IncludePRPs != nil && *req.IncludePRPs)
	if err != nil {
		return err
	}
	w.Header().Set("Location", r.URL.Path+"/"+e.ID)
	out := issueExportOut(spec.IssueExportView{IssueExport: e})
	return writeJSON(w, http.StatusAccepted, out)
}

// getIssueExport answers GET /pse/sessions/{id}/export/github/{export_id}.
func (s *Server) getIssueExport(w http.ResponseWriter, r *http.Request) error {
	v, err := s.d.Spec.GetIssueExport(r.Context(), pathParam(r, "session_id"), pathParam(r, "export_id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, issueExportOut(v))
}
