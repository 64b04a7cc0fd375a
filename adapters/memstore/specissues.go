package memstore

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/devpilot/devpilot/ports"
)

var _ ports.IssueExportStore = (*Store)(nil)

type issueKey struct{ session, repo, ref string }

func activeExport(status string) bool {
	return status == ports.IssueExportQueued || status == ports.IssueExportRunning
}

// CreateIssueExport stores a new export; not_found for an unknown session,
// conflict while another export of the session to the repository is queued
// or running, or one with its id exists.
func (s *Store) CreateIssueExport(ctx context.Context, e ports.IssueExport) error {
	defer s.lock()()
	if _, ok := s.spec.sessions[e.SessionID]; !ok {
		return notFoundSpec(e.SessionID)
	}
	if _, ok := s.spec.exports[e.ID]; ok {
		return ports.Errorf(ports.KindConflict, "issue export %s already exists", e.ID)
	}
	if activeExport(e.Status) {
		for _, o := range s.spec.exports {
			if o.SessionID == e.SessionID && o.RepoID == e.RepoID && activeExport(o.Status) {
				return ports.Errorf(ports.KindConflict, "an export of spec session %s to that repository already exists", e.SessionID)
			}
		}
	}
	e.CreatedAt, e.UpdatedAt = utc(e.CreatedAt), utc(e.UpdatedAt)
	put(ctx, s, s.spec.exports, e.ID, e)
	return nil
}

// GetIssueExport returns the owner's export of the session; not_found
// otherwise.
func (s *Store) GetIssueExport(_ context.Context, owner ports.Owner, sessionID, id string) (ports.IssueExport, error) {
	defer s.lock()()
	e, ok := s.spec.exports[id]
	if !ok || e.SessionID != sessionID || e.OrgID != owner.OrgID || e.UserID != owner.UserID {
		return ports.IssueExport{}, ports.NotFound("issue export", id)
	}
	return e, nil
}

// SaveIssueExportProgress records where the export stands; not_found for
// an unknown export.
func (s *Store) SaveIssueExportProgress(ctx context.Context, id string, p ports.IssueExportProgress, at time.Time) error {
	defer s.lock()()
	e, ok := s.spec.exports[id]
	if !ok {
		return ports.NotFound("issue export", id)
	}
	e.Status, e.Total, e.Done, e.Error, e.UpdatedAt = p.Status, p.Total, p.Done, p.Error, utc(at)
	put(ctx, s, s.spec.exports, id, e)
	return nil
}

// RecordExportedIssue stores or replaces the issue of its session,
// repository and ref; not_found for an unknown session.
func (s *Store) RecordExportedIssue(ctx context.Context, i ports.ExportedIssue) error {
	defer s.lock()()
	if _, ok := s.spec.sessions[i.SessionID]; !ok {
		return notFoundSpec(i.SessionID)
	}
	k := issueKey{i.SessionID, i.RepoID, i.Ref}
	i.CreatedAt, i.UpdatedAt = utc(i.CreatedAt), utc(i.UpdatedAt)
	rec := seqd[ports.ExportedIssue]{v: i}
	if old, ok := s.spec.issues[k]; ok {
		rec.seq, rec.v.CreatedAt = old.seq, old.v.CreatedAt
	} else {
		rec.seq = s.next()
	}
	put(ctx, s, s.spec.issues, k, rec)
	return nil
}

// ListExportedIssues returns the session's issues in the repository, in
// the order they were first recorded (ties by ref).
func (s *Store) ListExportedIssues(_ context.Context, sessionID, repoID string) ([]ports.ExportedIssue, error) {
	defer s.lock()()
	var out []ports.ExportedIssue
	for k, v := range s.spec.issues {
		if k.session == sessionID && k.repo == repoID {
			out = append(out, v.v)
		}
	}
	slices.SortFunc(out, func(a, b ports.ExportedIssue) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.Ref, b.Ref))
	})
	return out, nil
}
