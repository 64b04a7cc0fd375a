package memstore

import (
	"context"
	"fmt"

	"github.com/devpilot/devpilot/ports"
)

func copyProject(p ports.ContentProject) ports.ContentProject {
	p.CreatedAt, p.UpdatedAt = utc(p.CreatedAt), utc(p.UpdatedAt)
	return p
}

// projectNamed returns the id of the org's project whose name has name's
// key, other than except, or "" (s.mu held).
func (s *Store) projectNamed(orgID, name, except string) string {
	key := ports.ContentProjectNameKey(name)
	for k, p := range s.content.projects {
		if k.org == orgID && k.project != except && ports.ContentProjectNameKey(p.Name) == key {
			return k.project
		}
	}
	return ""
}

// insertProject stores p unless its id or name is taken (s.mu held) and
// says whether it did; not_found for a missing org, invalid for a negative
// version.
func (s *Store) insertProject(ctx context.Context, p ports.ContentProject) (bool, error) {
	if _, ok := s.identity.orgs[p.OrgID]; !ok {
		return false, ports.NotFound("org", p.OrgID)
	}
	switch {
	case p.Version == 0:
		p.Version = 1
	case p.Version < 0:
		return false, ports.Invalid(fmt.Sprintf("content project %s has version %d", p.ID, p.Version),
			ports.FieldError{Field: "version", Reason: "negative"})
	}
	if p.UpdatedAt.IsZero() {
		p.UpdatedAt = p.CreatedAt
	}
	k := brandKey{p.OrgID, p.ID}
	if _, ok := s.content.projects[k]; ok || s.projectNamed(p.OrgID, p.Name, "") != "" {
		return false, nil
	}
	put(ctx, s, s.content.projects, k, copyProject(p))
	return true, nil
}

// CreateContentProject stores a new project; conflict for a taken id or
// name (ignoring case), not_found for a missing org.
func (s *Store) CreateContentProject(ctx context.Context, p ports.ContentProject) error {
	defer s.lock()()
	ok, err := s.insertProject(ctx, p)
	if err != nil || ok {
		return err
	}
	if _, exists := s.content.projects[brandKey{p.OrgID, p.ID}]; exists {
		return ports.Errorf(ports.KindConflict, "content project %s exists already", p.ID)
	}
	return ports.Errorf(ports.KindConflict, "a content project named %q exists already", p.Name)
}

// EnsureContentProject stores p unless the org has a project with its id;
// conflict when its name is taken, not_found for a missing org.
func (s *Store) EnsureContentProject(ctx context.Context, p ports.ContentProject) (bool, error) {
	defer s.lock()()
	ok, err := s.insertProject(ctx, p)
	if err != nil || ok {
		return ok, err
	}
	if _, exists := s.content.projects[brandKey{p.OrgID, p.ID}]; exists {
		return false, nil
	}
	return false, ports.Errorf(ports.KindConflict, "a content project named %q exists already", p.Name)
}

// GetContentProject returns the org's project; not_found when absent.
func (s *Store) GetContentProject(_ context.Context, orgID, id string) (ports.ContentProject, error) {
	defer s.lock()()
	p, ok := s.content.projects[brandKey{orgID, id}]
	if !ok {
		return ports.ContentProject{}, ports.NotFound("content project", id)
	}
	return copyProject(p), nil
}

// ListContentProjects returns the org's projects by name key, then id.
func (s *Store) ListContentProjects(_ context.Context, orgID string, page ports.Page) ([]ports.ContentProject, string, error) {
	defer s.lock()()
	var all []ports.ContentProject
	for k, p := range s.content.projects {
		if k.org == orgID {
			all = append(all, copyProject(p))
		}
	}
	return paginate(all, page, keyset[ports.ContentProject]{
		key: func(p ports.ContentProject) (string, string) { return ports.ContentProjectNameKey(p.Name), p.ID }})
}

// UpdateContentProject replaces the project's name, description, version
// and update time if the stored version is p.Version - 1.
func (s *Store) UpdateContentProject(ctx context.Context, p ports.ContentProject) error {
	defer s.lock()()
	k := brandKey{p.OrgID, p.ID}
	old, ok := s.content.projects[k]
	if !ok {
		return ports.NotFound("content project", p.ID)
	}
	if s.projectNamed(p.OrgID, p.Name, p.ID) != "" {
		return ports.Errorf(ports.KindConflict, "a content project named %q exists already", p.Name)
	}
	if old.Version != p.Version-1 {
		return ports.Errorf(ports.KindPreconditionFailed, "content project %s is at version %d, not %d", p.ID, old.Version, p.Version-1)
	}
	old.Name, old.Description, old.Version, old.UpdatedAt = p.Name, p.Description, p.Version, p.UpdatedAt
	put(ctx, s, s.content.projects, k, copyProject(old))
	return nil
}
