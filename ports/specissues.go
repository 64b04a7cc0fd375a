package ports

import (
	"context"
	"time"
)

//go:generate go tool mockgen -typed -destination ../testkit/mocks/specissues.go -package mocks . IssueExportStore

// The statuses of an issue export.
const (
	IssueExportQueued  = "queued"
	IssueExportRunning = "running"
	IssueExportDone    = "done"
	IssueExportFailed  = "failed"
)

// IssueExport is one export of a specification session's epics, stories
// and (optionally) PRPs to the issues of a connected repository, run in the
// background. Total is how many issues it writes, Done how many it has
// written so far.
type IssueExport struct {
	ID          string
	SessionID   string
	OrgID       string
	UserID      string
	RepoID      string
	IncludePRPs bool
	Status      string
	Total       int
	Done        int
	Error       string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// IssueExportProgress is where a running export stands.
type IssueExportProgress struct {
	Status string
	Total  int
	Done   int
	Error  string
}

// ExportedIssue is an issue an export created, remembered per session,
// repository and the ref it stands for (an epic, story or PRP id), so that
// the next export of that session to that repository updates it.
type ExportedIssue struct {
	SessionID string
	RepoID    string
	Ref       string // "EP-1", "ST-1.1", "PRP-1.1"
	Kind      string // "epic", "story" or "prp"
	Number    int
	HTMLURL   string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// IssueExportStore keeps issue exports and the issues they created.
type IssueExportStore interface {
	// CreateIssueExport stores a new export. Errors: not_found for an
	// unknown session; conflict while another export of the same session
	// to the same repository is queued or running.
	CreateIssueExport(ctx context.Context, e IssueExport) error
	// GetIssueExport returns the owner's export of the session; not_found
	// when absent, of another session, or another owner's.
	GetIssueExport(ctx context.Context, owner Owner, sessionID, id string) (IssueExport, error)
	// SaveIssueExportProgress records where the export stands at the time
	// given. Errors: not_found for an unknown export.
	SaveIssueExportProgress(ctx context.Context, id string, p IssueExportProgress, at time.Time) error
	// RecordExportedIssue stores the issue of i's session, repository and
	// ref, replacing the number, URL and kind of one stored before (keeping
	// its CreatedAt). Errors: not_found for an unknown session.
	RecordExportedIssue(ctx context.Context, i ExportedIssue) error
	// ListExportedIssues returns the issues recorded for the session and
	// repository, in the order they were first recorded (ties by ref).
	ListExportedIssues(ctx context.Context, sessionID, repoID string) ([]ExportedIssue, error)
}
