package sqlstore

import (
	"context"
	"time"

	"github.com/devpilot/devpilot/ports"
)

var _ ports.IssueExportStore = (*Spec)(nil)

type issueExportRow struct {
	ID          string    `db:"id"`
	SessionID   string    `db:"session_id"`
	OrgID       string    `db:"org_id"`
	UserID      string    `db:"user_id"`
	RepoID      string    `db:"repo_id"`
	IncludePRPs bool      `db:"include_prps"`
	Status      string    `db:"status"`
	Total       int       `db:"total"`
	Done        int       `db:"done"`
	Error       string    `db:"error"`
	CreatedAt   timestamp `db:"created_at"`
	UpdatedAt   timestamp `db:"updated_at"`
}

const issueExportColumns = `id, session_id, org_id, user_id, repo_id, include_prps, status, total, done, error, created_at, updated_at`

type exportedIssueRow struct {
	SessionID string    `db:"session_id"`
	RepoID    string    `db:"repo_id"`
	Ref       string    `db:"ref"`
	Kind      string    `db:"kind"`
	Number    int       `db:"number"`
	HTMLURL   string    `db:"html_url"`
	CreatedAt timestamp `db:"created_at"`
	UpdatedAt timestamp `db:"updated_at"`
}

// CreateIssueExport implements ports.IssueExportStore: a second queued or
// running export of the same session and repository violates a partial
// unique index (conflict).
func (s *Spec) CreateIssueExport(ctx context.Context, e ports.IssueExport) error {
	_, err := s.db.write(ctx).exec(ctx, `INSERT INTO spec_issue_exports (`+issueExportColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.ID, e.SessionID, e.OrgID, e.UserID, e.RepoID, e.IncludePRPs, e.Status, e.Total, e.Done, e.Error,
		timestamp(e.CreatedAt), timestamp(e.UpdatedAt))
	return storeErr(err, "an export of spec session "+e.SessionID+" to that repository", "spec session "+e.SessionID)
}

// GetIssueExport implements ports.IssueExportStore.
func (s *Spec) GetIssueExport(ctx context.Context, owner ports.Owner, sessionID, id string) (ports.IssueExport, error) {
	var r issueExportRow
	err := s.db.read(ctx).get(ctx, &r, `SELECT `+issueExportColumns+` FROM spec_issue_exports
		WHERE id = ? AND session_id = ? AND org_id = ? AND user_id = ?`, id, sessionID, owner.OrgID, owner.UserID)
	if err != nil {
		return ports.IssueExport{}, storeErr(err, "issue export "+id, "")
	}
	return ports.IssueExport{ID: r.ID, SessionID: r.SessionID, OrgID: r.OrgID, UserID: r.UserID, RepoID: r.RepoID,
		IncludePRPs: r.IncludePRPs, Status: r.Status, Total: r.Total, Done: r.Done, Error: r.Error,
		CreatedAt: time.Time(r.CreatedAt), UpdatedAt: time.Time(r.UpdatedAt)}, nil
}

// SaveIssueExportProgress implements ports.IssueExportStore.
func (s *Spec) SaveIssueExportProgress(ctx context.Context, id string, p ports.IssueExportProgress, at time.Time) error {
	n, err := s.db.write(ctx).exec(ctx, `UPDATE spec_issue_exports SET status = ?, total = ?, done = ?, error = ?, updated_at = ?
		WHERE id = ?`, p.Status, p.Total, p.Done, p.Error, timestamp(at), id)
	if err != nil {
		return storeErr(err, "issue export "+id, "")
	}
	if n == 0 {
		return ports.NotFound("issue export", id)
	}
	return nil
}

// RecordExportedIssue implements ports.IssueExportStore with one upsert.
func (s *Spec) RecordExportedIssue(ctx context.Context, i ports.ExportedIssue) error {
	_, err := s.db.write(ctx).exec(ctx, `INSERT INTO spec_exported_issues
			(session_id, repo_id, ref, kind, number, html_url, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (session_id, repo_id, ref) DO UPDATE SET kind = excluded.kind, number = excluded.number,
			html_url = excluded.html_url, updated_at = excluded.updated_at`,
		i.SessionID, i.RepoID, i.Ref, i.Kind, i.Number, i.HTMLURL, timestamp(i.CreatedAt), timestamp(i.UpdatedAt))
	return storeErr(err, "exported issue "+i.Ref, "spec session "+i.SessionID)
}

// ListExportedIssues implements ports.IssueExportStore.
func (s *Spec) ListExportedIssues(ctx context.Context, sessionID, repoID string) ([]ports.ExportedIssue, error) {
	var rows []exportedIssueRow
	err := s.db.read(ctx).list(ctx, &rows, `SELECT session_id, repo_id, ref, kind, number, html_url, created_at, updated_at
		FROM spec_exported_issues WHERE session_id = ? AND repo_id = ? ORDER BY created_at, ref`, sessionID, repoID)
	if err != nil {
		return nil, storeErr(err, "exported issues", "")
	}
	out := make([]ports.ExportedIssue, len(rows))
	for i, r := range rows {
		out[i] = ports.ExportedIssue{SessionID: r.SessionID, RepoID: r.RepoID, Ref: r.Ref, Kind: r.Kind, Number: r.Number,
			HTMLURL: r.HTMLURL, CreatedAt: time.Time(r.CreatedAt), UpdatedAt: time.Time(r.UpdatedAt)}
	}
	return out, nil
}
