package spec

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"

	"github.com/devpilot/devpilot/ports"
)

// ExportIssuesArgs is the background job of one export of a session to the
// issues of a connected repository.
type ExportIssuesArgs struct {
	ExportID  string `json:"export_id"`
	SessionID string `json:"session_id"`
	OrgID     string `json:"org_id"`
	UserID    string `json:"user_id"`
}

// Kind names the job for the queue.
func (ExportIssuesArgs) Kind() string { return "spec.export_issues" }

// Error codes of the issue export.
const (
	// CodeExportRunning (conflict): an export of the session to the
	// repository is queued or running.
	CodeExportRunning = "export_running"
	// CodeNotConnected (precondition_failed): the caller has no working
	// connection to the provider.
	CodeNotConnected = "not_connected"
)

// The labels an export puts on its issues: LabelExported on every one, and
// EpicLabelPrefix and the epic's id on those of an epic.
const (
	LabelExported   = "devpilot"
	EpicLabelPrefix = "epic:"
	labelColor      = "5319e7"
	epicLabelColor  = "1d76db"
)

// Issue kinds of an export.
const (
	IssueEpic  = "epic"
	IssueStory = "story"
	IssuePRP   = "prp"
)

// tokenRevoked is the provider's code for a token it no longer accepts
// (see ports.SCMProvider).
const tokenRevoked = "token_revoked"

// exportPages bounds the pages of labels or issues an export reads.
const exportPages = 20

// IssueExportView is an export and the issues the session has in its
// repository.
type IssueExportView struct {
	ports.IssueExport
	Issues []ports.ExportedIssue
}

// IssueMarker is the HTML comment an exported issue's body ends with: it
// names the session and the ref, so that an issue created by an export
// that stopped before recording it is found again instead of duplicated.
// Only the marker that ends a body counts, and the text an export writes
// above it cannot hold one, so a specification's content cannot forge it.
func IssueMarker(sessionID, ref string) string {
	return "<!-- devpilot:spec=" + sessionID + ":ref=" + ref + " -->"
}

// markerPattern matches the marker that ends a body (white space aside).
var markerPattern = regexp.MustCompile(`<!-- devpilot:spec=([0-9a-fA-F-]{36}):ref=((?:EP|ST|PRP)-[0-9.]+) -->\s*$`)

// StartIssueExport starts exporting the caller's session to the issues of
// one of the caller's connected repositories: an issue per story (and per
// PRP with includePRPs) and a tracking issue per epic. The export is
// recorded as queued and its job enqueued in one transaction.
//
// Errors: not_found when the session or the repository is absent or
// another's; conflict (stage_not_ready) when the session has no current
// stories (or PRPs, with includePRPs); precondition_failed (not_connected)
// without a working connection; conflict (export_running) while an export
// of the session to the repository is queued or running; unavailable when
// no source-control integration is configured.
func (s *Service) StartIssueExport(ctx context.Context, sessionID, repoID string, includePRPs bool) (ports.IssueExport, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return ports.IssueExport{}, err
	}
	if s.d.Exports == nil || s.d.Repos == nil || s.d.SCM == nil || s.d.Cipher == nil {
		return ports.IssueExport{}, ports.Errorf(ports.KindUnavailable, "exporting to issues is not configured")
	}
	if !ports.IsID(sessionID) {
		return ports.IssueExport{}, ports.NotFound("specification session", sessionID)
	}
	if _, err := s.d.Specs.GetSpecSession(ctx, p.Owner(), sessionID); err != nil {
		return ports.IssueExport{}, err
	}
	if !ports.IsID(repoID) {
		return ports.IssueExport{}, ports.NotFound("repository", repoID)
	}
	if _, err := s.d.Repos.GetRepository(ctx, p.Owner(), repoID); err != nil {
		return ports.IssueExport{}, err
	}
	arts, err := s.d.Specs.ListArtifacts(ctx, sessionID)
	if err != nil {
		return ports.IssueExport{}, err
	}
	cur := currentArtifacts(arts)
	need := []ports.Stage{ports.StageEpics, ports.StageStories}
	if includePRPs {
		need = append(need, ports.StagePRPs)
	}
	for _, st := range need {
		if _, ok := cur[st]; !ok {
			return ports.IssueExport{}, &ports.Error{Kind: ports.KindConflict, Code: CodeStageNotReady,
				Message: fmt.Sprintf("specification session %s has no %s yet; generate them before exporting", sessionID, st)}
		}
	}
	conn, err := s.d.Repos.GetConnection(ctx, p.Owner(), s.cfg.SCMProvider)
	if errors.Is(err, ports.ErrNotFound) || err == nil && conn.Status == ports.SCMBroken {
		return ports.IssueExport{}, &ports.Error{Kind: ports.KindPreconditionFailed, Code: CodeNotConnected,
			Message: "connect " + s.cfg.SCMProvider + " (again) first: the connection is missing or broken", Err: err}
	}
	if err != nil {
		return ports.IssueExport{}, err
	}
	now := s.d.Clock.Now()
	e := ports.IssueExport{ID: s.d.IDs.NewID(), SessionID: sessionID, OrgID: p.OrgID, UserID: p.UserID, RepoID: repoID,
		IncludePRPs: includePRPs, Status: ports.IssueExportQueued, CreatedAt: now, UpdatedAt: now}
	err = s.d.Tx.WithinTx(ctx, func(ctx context.Context) error {
		if err := s.d.Exports.CreateIssueExport(ctx, e); err != nil {
			if errors.Is(err, ports.ErrConflict) {
				return &ports.Error{Kind: ports.KindConflict, Code: CodeExportRunning,
					Message: fmt.Sprintf("specification session %s is being exported to that repository already", sessionID), Err: err}
			}
			return err
		}
		return s.d.Jobs.Enqueue(ctx, ExportIssuesArgs{ExportID: e.ID, SessionID: sessionID, OrgID: p.OrgID, UserID: p.UserID},
			ports.EnqueueOptions{MaxAttempts: s.cfg.MaxAttempts})
	})
	if err != nil {
		return ports.IssueExport{}, err
	}
	return e, nil
}

// GetIssueExport returns the caller's export of the session with the issues
// the session has in the export's repository. Errors: not_found when the
// session or the export is absent or another's.
func (s *Service) GetIssueExport(ctx context.Context, sessionID, exportID string) (IssueExportView, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return IssueExportView{}, err
	}
	if s.d.Exports == nil {
		return IssueExportView{}, ports.Errorf(ports.KindUnavailable, "exporting to issues is not configured")
	}
	if !ports.IsID(sessionID) {
		return IssueExportView{}, ports.NotFound("specification session", sessionID)
	}
	if !ports.IsID(exportID) {
		return IssueExportView{}, ports.NotFound("issue export", exportID)
	}
	if _, err := s.d.Specs.GetSpecSession(ctx, p.Owner(), sessionID); err != nil {
		return IssueExportView{}, err
	}
	e, err := s.d.Exports.GetIssueExport(ctx, p.Owner(), sessionID, exportID)
	if err != nil {
		return IssueExportView{}, err
	}
	issues, err := s.d.Exports.ListExportedIssues(ctx, sessionID, e.RepoID)
	if err != nil {
		return IssueExportView{}, err
	}
	return IssueExportView{IssueExport: e, Issues: issues}, nil
}

// exportItem is one issue an export writes.
type exportItem struct {
	kind, ref string
	epic      string // the epic the issue is labelled with
	title     string
	body      func(numbers map[string]int) string
}

// RunIssueExport works an ExportIssuesArgs job: it writes the issues in
// order (stories, then PRPs, then the epics' tracking issues, whose task
// lists name the stories' numbers), recording each issue it creates at
// once, and saves the progress after each. An issue recorded by an earlier
// export (or found by its marker) is updated, never created again; no
// issue is closed. Running it again resumes where the last run stopped.
//
// It returns an error for the queue to retry: rate_limited (with
// RetryAfter) when GitHub's rate limit answers, which the worker waits out
// without counting an attempt; another transient error, which fails the
// export when final. A failure that running again would not mend fails the
// export and returns nil.
func (s *Service) RunIssueExport(ctx context.Context, args ExportIssuesArgs, final bool) error {
	log := s.log.With("export_id", args.ExportID, "session_id", args.SessionID)
	owner := ports.Owner{OrgID: args.OrgID, UserID: args.UserID}
	e, err := s.d.Exports.GetIssueExport(ctx, owner, args.SessionID, args.ExportID)
	if errors.Is(err, ports.ErrNotFound) {
		log.WarnContext(ctx, "issue export gone; nothing to do")
		return nil
	}
	if err != nil {
		return err
	}
	if e.Status == ports.IssueExportDone || e.Status == ports.IssueExportFailed {
		return nil
	}
	var connID string
	err = s.exportIssues(ctx, &e, owner, &connID, log)
	switch {
	case err == nil:
		return nil
	case ports.KindOf(err) == ports.KindRateLimited:
		log.InfoContext(ctx, "issue export waits out the rate limit", "done", e.Done, "total", e.Total, "err", err)
		return err
	case ports.Transient(err) && !final:
		log.WarnContext(ctx, "issue export will be retried", "done", e.Done, "total", e.Total, "err", err)
		return err
	}
	if pe, ok := ports.AsError(err); ok && pe.Code == tokenRevoked && connID != "" {
		if merr := s.d.Repos.MarkConnectionBroken(context.WithoutCancel(ctx), connID, "the token was revoked or expired", s.d.Clock.Now()); merr != nil {
			log.ErrorContext(ctx, "cannot mark the connection broken", "err", merr)
		}
		err = &ports.Error{Kind: ports.KindPreconditionFailed, Code: CodeNotConnected,
			Message: "the " + s.cfg.SCMProvider + " connection is broken: the token was revoked or expired; reconnect and export again", Err: err}
	}
	log.WarnContext(ctx, "issue export failed", "done", e.Done, "total", e.Total, "err", err)
	msg := "the export failed"
	if pe, ok := ports.AsError(err); ok && pe.Kind != ports.KindInternal {
		msg = ports.Line(pe.Message, 500)
	}
	return s.d.Exports.SaveIssueExportProgress(context.WithoutCancel(ctx), e.ID,
		ports.IssueExportProgress{Status: ports.IssueExportFailed, Total: e.Total, Done: e.Done, Error: msg}, s.d.Clock.Now())
}

// AbandonIssueExport fails an export whose job was given up.
func (s *Service) AbandonIssueExport(ctx context.Context, args ExportIssuesArgs) error {
	e, err := s.d.Exports.GetIssueExport(ctx, ports.Owner{OrgID: args.OrgID, UserID: args.UserID}, args.SessionID, args.ExportID)
	if err != nil || e.Status == ports.IssueExportDone || e.Status == ports.IssueExportFailed {
		return nil
	}
	return s.d.Exports.SaveIssueExportProgress(ctx, e.ID, ports.IssueExportProgress{Status: ports.IssueExportFailed,
		Total: e.Total, Done: e.Done, Error: "the export was interrupted; start it again"}, s.d.Clock.Now())
}

// exportIssues does the work of RunIssueExport, keeping e's progress.
func (s *Service) exportIssues(ctx context.Context, e *ports.IssueExport, owner ports.Owner, connID *string, log *slog.Logger) error {
	if s.d.Repos == nil || s.d.SCM == nil || s.d.Cipher == nil {
		return ports.Errorf(ports.KindUnavailable, "exporting to issues is not configured")
	}
	sess, err := s.d.Specs.GetSpecSession(ctx, owner, e.SessionID)
	if err != nil {
		return err
	}
	repo, err := s.d.Repos.GetRepository(ctx, owner, e.RepoID)
	if err != nil {
		return err
	}
	conn, err := s.d.Repos.GetConnection(ctx, owner, s.cfg.SCMProvider)
	if err == nil && conn.Status == ports.SCMBroken || errors.Is(err, ports.ErrNotFound) {
		return &ports.Error{Kind: ports.KindPreconditionFailed, Code: CodeNotConnected,
			Message: "the " + s.cfg.SCMProvider + " connection is missing or broken; reconnect and export again"}
	}
	if err != nil {
		return err
	}
	*connID = conn.ID
	opened, err := s.d.Cipher.Open(conn.SealedToken, []byte(conn.ID))
	if err != nil {
		return ports.Wrap(ports.KindInternal, err, "the connection's token cannot be opened")
	}
	token := string(opened)
	arts, err := s.d.Specs.ListArtifacts(ctx, e.SessionID)
	if err != nil {
		return err
	}
	items := planIssues(sess, currentArtifacts(arts), e.IncludePRPs)
	if e.Total != len(items) || e.Done > len(items) {
		e.Done = 0
	}
	e.Total, e.Status = len(items), ports.IssueExportRunning
	if err := s.saveProgress(ctx, e); err != nil {
		return err
	}
	gh := &issueWriter{s: s, token: token, owner: repo.Owner, repo: repo.Name}
	if err := gh.ensureLabels(ctx, items); err != nil {
		return redact(err, token)
	}
	recorded, err := s.d.Exports.ListExportedIssues(ctx, e.SessionID, e.RepoID)
	if err != nil {
		return err
	}
	known := map[string]ports.ExportedIssue{}
	for _, i := range recorded {
		known[i.Ref] = i
	}
	numbers := func() map[string]int {
		out := make(map[string]int, len(known))
		for ref, i := range known {
			out[ref] = i.Number
		}
		return out
	}
	var marked map[string]ports.SCMIssue
	for i := e.Done; i < len(items); i++ {
		it := items[i]
		in := ports.SCMIssueInput{Title: it.title, Body: it.body(numbers()), Labels: []string{LabelExported, EpicLabelPrefix + it.epic}}
		prev, ok := known[it.ref]
		if !ok {
			if marked == nil {
				if marked, err = gh.findMarked(ctx, e.SessionID); err != nil {
					return redact(err, token)
				}
			}
			if is, found := marked[it.ref]; found {
				prev, ok = ports.ExportedIssue{Number: is.Number, HTMLURL: is.HTMLURL, CreatedAt: s.d.Clock.Now()}, true
				log.InfoContext(ctx, "found an exported issue by its marker", "ref", it.ref, "number", is.Number)
			}
		}
		var is ports.SCMIssue
		if ok {
			is, err = s.d.SCM.UpdateIssue(ctx, token, repo.Owner, repo.Name, prev.Number, in)
			if ports.KindOf(err) == ports.KindNotFound {
				ok = false // deleted (or transferred) since: create it again
			}
		}
		if !ok {
			is, err = s.d.SCM.CreateIssue(ctx, token, repo.Owner, repo.Name, in)
			prev.CreatedAt = s.d.Clock.Now()
		}
		if err != nil {
			return redact(err, token)
		}
		now := s.d.Clock.Now()
		rec := ports.ExportedIssue{SessionID: e.SessionID, RepoID: e.RepoID, Ref: it.ref, Kind: it.kind, Number: is.Number,
			HTMLURL: is.HTMLURL, CreatedAt: cmp.Or(prev.CreatedAt, now), UpdatedAt: now}
		if err := s.d.Exports.RecordExportedIssue(context.WithoutCancel(ctx), rec); err != nil {
			return err
		}
		known[it.ref] = rec
		e.Done = i + 1
		if err := s.saveProgress(ctx, e); err != nil {
			return err
		}
	}
	e.Status = ports.IssueExportDone
	return s.saveProgress(ctx, e)
}

func (s *Service) saveProgress(ctx context.Context, e *ports.IssueExport) error {
	e.UpdatedAt = s.d.Clock.Now()
	return s.d.Exports.SaveIssueExportProgress(context.WithoutCancel(ctx), e.ID,
		ports.IssueExportProgress{Status: e.Status, Total: e.Total, Done: e.Done, Error: e.Error}, e.UpdatedAt)
}

// redact removes the token from an error's text.
func redact(err error, token string) error { return ports.Redact(err, token) }

// issueWriter calls the provider for one repository with one token.
type issueWriter struct {
	s                  *Service
	token, owner, repo string
}

// ensureLabels creates the labels the items use that the repository lacks.
func (w *issueWriter) ensureLabels(ctx context.Context, items []exportItem) error {
	have := map[string]bool{}
	cursor := ""
	for range exportPages {
		labels, next, err := w.s.d.SCM.ListLabels(ctx, w.token, w.owner, w.repo, ports.Page{Limit: 100, Cursor: cursor})
		if err != nil {
			return err
		}
		for _, l := range labels {
			have[strings.ToLower(l.Name)] = true
		}
		if cursor = next; cursor == "" {
			break
		}
	}
	want := []ports.SCMLabel{{Name: LabelExported, Color: labelColor, Description: "Exported from a devpilot specification"}}
	for _, it := range items {
		if !slices.ContainsFunc(want, func(l ports.SCMLabel) bool { return l.Name == EpicLabelPrefix+it.epic }) {
			want = append(want, ports.SCMLabel{Name: EpicLabelPrefix + it.epic, Color: epicLabelColor, Description: "Epic " + it.epic})
		}
	}
	for _, l := range want {
		if have[strings.ToLower(l.Name)] {
			continue
		}
		if err := w.s.d.SCM.CreateLabel(ctx, w.token, w.owner, w.repo, l); err != nil && ports.KindOf(err) != ports.KindConflict {
			return err
		}
	}
	return nil
}

// findMarked returns the issues labelled LabelExported whose body ends with
// the marker of the session, by ref; a marker anywhere else in a body is
// not the export's.
func (w *issueWriter) findMarked(ctx context.Context, sessionID string) (map[string]ports.SCMIssue, error) {
	out := map[string]ports.SCMIssue{}
	cursor := ""
	for range exportPages {
		issues, next, err := w.s.d.SCM.ListIssuesByLabel(ctx, w.token, w.owner, w.repo, LabelExported, ports.Page{Limit: 100, Cursor: cursor})
		if err != nil {
			return nil, err
		}
		for _, is := range issues {
			if m := markerPattern.FindStringSubmatch(is.Body); m != nil && strings.EqualFold(m[1], sessionID) {
				if _, dup := out[m[2]]; !dup {
					out[m[2]] = is
				}
			}
		}
		if cursor = next; cursor == "" {
			break
		}
	}
	return out, nil
}
