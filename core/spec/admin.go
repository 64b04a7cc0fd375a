package spec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/devpilot/devpilot/ports"
)

// The actions RenameSession and DeleteSession record in the audit log, on
// the resource "spec_session/<id>".
const (
	AuditSpecRename = "spec.rename"
	AuditSpecDelete = "spec.delete"
)

// checkName returns a session's name trimmed, or the field errors (name)
// of a name that is empty, longer than MaxNameLen, not UTF-8, or holds a
// control character (NUL, a line break, a tab …).
func checkName(name string) (string, []ports.FieldError) {
	name = strings.TrimSpace(name)
	bad := func(reason string) (string, []ports.FieldError) {
		return name, []ports.FieldError{{Field: "name", Reason: reason}}
	}
	switch n := utf8.RuneCountInString(name); {
	case n == 0:
		return bad("required")
	case n > MaxNameLen:
		return bad(fmt.Sprintf("must be at most %d characters", MaxNameLen))
	case !utf8.ValidString(name):
		return bad("must be UTF-8 text")
	case strings.ContainsFunc(name, unicode.IsControl):
		return bad("must not contain control characters")
	}
	return name, nil
}

// RenameSession renames the caller's session, at any time (a generation
// running is not affected), and returns it as it now stands. It is audited
// (AuditSpecRename, with the old and new names) when an audit log is
// configured. Errors: not_found when the session is absent or another's;
// invalid (name) as CreateSession's name.
func (s *Service) RenameSession(ctx context.Context, sessionID, name string) (View, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return View{}, err
	}
	if !ports.IsID(sessionID) {
		return View{}, ports.NotFound("specification session", sessionID)
	}
	name, fields := checkName(name)
	if err := invalid(fields); err != nil {
		return View{}, err
	}
	err = s.d.Tx.WithinTx(ctx, func(ctx context.Context) error {
		old, err := s.d.Specs.GetSpecSession(ctx, p.Owner(), sessionID)
		if err != nil {
			return err
		}
		if _, err := s.d.Specs.RenameSpecSession(ctx, p.Owner(), sessionID, name, s.d.Clock.Now()); err != nil {
			return err
		}
		return s.audit(ctx, p, AuditSpecRename, sessionID, map[string]string{"from": old.Name, "name": name})
	})
	if err != nil {
		return View{}, err
	}
	return s.GetSession(ctx, sessionID)
}

// DeleteSession deletes the caller's session with everything it owns: its
// inputs, artifacts, digest, and the bookkeeping of its exports to
// repository issues (the issues themselves stay on GitHub). The delete and
// its audit entry (AuditSpecDelete, with the session's name), when an audit
// log is configured, are one transaction. A generation job that runs after
// it finds no session and drops.
//
// Errors: not_found when the session is absent (deleted already) or
// another's; conflict (code generation_running) while it is generating, or
// (code export_running) while an export of it to GitHub issues is queued or
// running, so a worker never writes into a deleted session.
func (s *Service) DeleteSession(ctx context.Context, sessionID string) error {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return err
	}
	if !ports.IsID(sessionID) {
		return ports.NotFound("specification session", sessionID)
	}
	return s.d.Tx.WithinTx(ctx, func(ctx context.Context) error {
		deleted, err := s.d.Specs.DeleteSpecSession(ctx, p.Owner(), sessionID)
		if errors.Is(err, ports.ErrSpecGenerating) {
			return &ports.Error{Kind: ports.KindConflict, Code: CodeGenerationRunning,
				Message: "the session is generating; delete it once the generation ends"}
		}
		if errors.Is(err, ports.ErrSpecExportRunning) {
			return &ports.Error{Kind: ports.KindConflict, Code: CodeExportRunning,
				Message: "the session is being exported to GitHub issues; delete it once the export ends"}
		}
		if err != nil {
			return err
		}
		return s.audit(ctx, p, AuditSpecDelete, sessionID, map[string]string{"name": deleted.Name})
	})
}

// audit records an action of p on a session, in ctx's transaction; nothing
// without an audit log.
func (s *Service) audit(ctx context.Context, p ports.Principal, action, sessionID string, args map[string]string) error {
	if s.d.Audit == nil {
		return nil
	}
	b, err := json.Marshal(args)
	if err != nil {
		return ports.Wrap(ports.KindInternal, err, "encode audit arguments")
	}
	return s.d.Audit.RecordAudit(ctx, ports.AuditEntry{ID: s.d.IDs.NewID(), OrgID: p.OrgID, UserID: p.UserID,
		Action: action, Resource: "spec_session/" + sessionID, Arguments: b, Outcome: ports.AuditOK, At: s.d.Clock.Now()})
}
