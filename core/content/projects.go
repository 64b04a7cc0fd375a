package content

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/devpilot/devpilot/ports"
)

// The limits of a content project's name and description, in characters.
const (
	MaxProjectNameLen        = 100
	MaxProjectDescriptionLen = 2000
)

// CodeNameTaken (conflict): another project of the organisation has the
// name, ignoring case.
const CodeNameTaken = "name_taken"

// The audit actions of content project writes.
const (
	AuditCreateProject = "content.create_project"
	AuditUpdateProject = "content.update_project"
)

// ProjectInput is a new content project: a name (required) and a
// description. Both are trimmed.
type ProjectInput struct {
	Name        string
	Description string
}

// ProjectPatch changes a content project: the fields given (nil keeps the
// stored one). IfVersion, when set, makes the change conditional on the
// stored version.
type ProjectPatch struct {
	Name        *string
	Description *string
	IfVersion   *int
}

// checkProjectName returns name trimmed and its problem, if any: empty,
// longer than MaxProjectNameLen, or holding a control character (line
// breaks and tabs included), invalid UTF-8, a byte-order mark or a
// bidirectional control.
func checkProjectName(f *fieldErrors, name string) string {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		f.add("name", "required")
	case ports.TextFault(name) != "":
		f.add("name", ports.TextFault(name))
	case strings.ContainsFunc(name, unicode.IsControl):
		f.add("name", "must not contain control characters (line breaks and tabs included)")
	case utf8.RuneCountInString(name) > MaxProjectNameLen:
		f.add("name", tooLong(MaxProjectNameLen))
	}
	return name
}

// checkProjectDescription returns description trimmed, noting text that is
// not acceptable (ports.TextFault) or too long.
func checkProjectDescription(f *fieldErrors, description string) string {
	description = strings.TrimSpace(description)
	if fault := ports.TextFault(description); fault != "" {
		f.add("description", fault)
		return description
	}
	return f.text("description", description, MaxProjectDescriptionLen, false)
}

func projectNotFound(id string) error { return ports.NotFound("content project", id) }

// nameTaken is the conflict of a name another project has.
func nameTaken(name string, err error) error {
	return &ports.Error{Kind: ports.KindConflict, Code: CodeNameTaken,
		Message: fmt.Sprintf("a content project named %q exists already; choose another name", name), Err: err}
}

// CreateProject stores a new content project of the caller's organisation,
// created by the caller, with a new id, and returns it. It is audited
// (AuditCreateProject) when an audit log is configured. Errors: invalid
// (fields name, description); conflict (name_taken) when another project
// of the organisation has the name, ignoring case; the store's errors.
func (s *Service) CreateProject(ctx context.Context, in ProjectInput) (ports.ContentProject, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return ports.ContentProject{}, err
	}
	var f fieldErrors
	now := s.d.Clock.Now()
	pr := ports.ContentProject{
		ID: s.d.IDs.NewID(), OrgID: p.OrgID, CreatedBy: p.UserID, Version: 1, CreatedAt: now, UpdatedAt: now,
		Name:        checkProjectName(&f, in.Name),
		Description: checkProjectDescription(&f, in.Description),
	}
	if err := f.err(); err != nil {
		return ports.ContentProject{}, err
	}
	err = s.d.Store.CreateContentProject(ctx, pr)
	if errors.Is(err, ports.ErrConflict) {
		err = nameTaken(pr.Name, err)
	}
	s.audit(ctx, p.UserID, p.OrgID, AuditCreateProject, pr.ID, map[string]any{"name": pr.Name}, err)
	if err != nil {
		return ports.ContentProject{}, err
	}
	return pr, nil
}

// Project returns a content project of the caller's organisation. Errors:
// not_found when it is absent, another org's, or id is not a project id;
// the store's errors.
func (s *Service) Project(ctx context.Context, id string) (ports.ContentProject, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return ports.ContentProject{}, err
	}
	if checkProjectID(id) != nil {
		return ports.ContentProject{}, projectNotFound(id)
	}
	return s.d.Store.GetContentProject(ctx, p.OrgID, id)
}

// ListProjects returns a page of the organisation's content projects by
// name (ignoring case), and the next page's cursor ("" at the end).
// page.Limit 0 means DefaultPageLimit. Errors: invalid (limit, cursor); the
// store's errors.
func (s *Service) ListProjects(ctx context.Context, page ports.Page) ([]ports.ContentProject, string, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return nil, "", err
	}
	page, err = checkPage(page)
	if err != nil {
		return nil, "", err
	}
	return s.d.Store.ListContentProjects(ctx, p.OrgID, page)
}

// maxProjectRaces bounds how often an unconditional UpdateProject re-reads
// the project after losing a race with another change.
const maxProjectRaces = 3

// UpdateProject renames a content project of the caller's organisation or
// changes its description, and returns it as stored. It is audited
// (AuditUpdateProject, with the old and new name) when an audit log is
// configured. Errors: not_found as Project; invalid (fields name,
// description, version); conflict (name_taken) as CreateProject;
// precondition_failed (stale_version) when in.IfVersion is not the stored
// version; the store's errors.
func (s *Service) UpdateProject(ctx context.Context, id string, in ProjectPatch) (ports.ContentProject, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return ports.ContentProject{}, err
	}
	if checkProjectID(id) != nil {
		return ports.ContentProject{}, projectNotFound(id)
	}
	var f fieldErrors
	var name, description string
	if in.Name != nil {
		name = checkProjectName(&f, *in.Name)
	}
	if in.Description != nil {
		description = checkProjectDescription(&f, *in.Description)
	}
	if in.IfVersion != nil && *in.IfVersion < 1 {
		f.add("version", "must be 1 or more")
	}
	if err := f.err(); err != nil {
		return ports.ContentProject{}, err
	}
	for race := 1; ; race++ {
		cur, err := s.d.Store.GetContentProject(ctx, p.OrgID, id)
		if err != nil {
			return ports.ContentProject{}, err
		}
		if in.IfVersion != nil && *in.IfVersion != cur.Version {
			return ports.ContentProject{}, &ports.Error{Kind: ports.KindPreconditionFailed, Code: CodeStaleVersion,
				Message: fmt.Sprintf("content project %s is at version %d, not %d; reload it and apply your change again", id, cur.Version, *in.IfVersion)}
		}
		next := cur
		if in.Name != nil {
			next.Name = name
		}
		if in.Description != nil {
			next.Description = description
		}
		next.Version, next.UpdatedAt = cur.Version+1, s.d.Clock.Now()
		err = s.d.Store.UpdateContentProject(ctx, next)
		if errors.Is(err, ports.ErrPreconditionFailed) && in.IfVersion == nil && race < maxProjectRaces {
			continue
		}
		switch {
		case errors.Is(err, ports.ErrConflict):
			err = nameTaken(next.Name, err)
		case errors.Is(err, ports.ErrPreconditionFailed):
			err = &ports.Error{Kind: ports.KindPreconditionFailed, Code: CodeStaleVersion,
				Message: fmt.Sprintf("content project %s changed meanwhile; reload it and apply your change again", id), Err: err}
		}
		s.audit(ctx, p.UserID, p.OrgID, AuditUpdateProject, id,
			map[string]any{"from": cur.Name, "name": next.Name, "description_changed": next.Description != cur.Description}, err)
		if err != nil {
			return ports.ContentProject{}, err
		}
		return next, nil
	}
}

// ensureProject gives a project id used by a write a project record when it
// has none: named after the id, or when another project has that name,
// after the id and a short random suffix. Project ids came before project
// records, so every id keeps working.
func (s *Service) ensureProject(ctx context.Context, p ports.Principal, projectID string) error {
	now := s.d.Clock.Now()
	pr := ports.ContentProject{ID: projectID, OrgID: p.OrgID, Name: projectID, CreatedBy: p.UserID, Version: 1, CreatedAt: now, UpdatedAt: now}
	_, err := s.d.Store.EnsureContentProject(ctx, pr)
	if !errors.Is(err, ports.ErrConflict) {
		return err
	}
	pr.Name = fmt.Sprintf("%s (%s)", projectID, strings.ReplaceAll(s.d.IDs.NewID(), "-", "")[:8])
	_, err = s.d.Store.EnsureContentProject(ctx, pr)
	return err
}
