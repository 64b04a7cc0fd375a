package sqlstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/devpilot/devpilot/ports"
)

type contentProjectRow struct {
	OrgID       string    `db:"org_id"`
	ID          string    `db:"id"`
	Name        string    `db:"name"`
	NameKey     string    `db:"name_key"`
	Description string    `db:"description"`
	CreatedBy   string    `db:"created_by"`
	Version     int       `db:"version"`
	CreatedAt   timestamp `db:"created_at"`
	UpdatedAt   timestamp `db:"updated_at"`
}

func (r contentProjectRow) project() ports.ContentProject {
	return ports.ContentProject{ID: r.ID, OrgID: r.OrgID, Name: r.Name, Description: r.Description, CreatedBy: r.CreatedBy,
		Version: r.Version, CreatedAt: time.Time(r.CreatedAt), UpdatedAt: time.Time(r.UpdatedAt)}
}

const contentProjectColumns = `org_id, id, name, name_key, description, created_by, version, created_at, updated_at`

// insertContentProject inserts p unless its id or name key is taken in its
// org (ON CONFLICT, not a caught unique violation, so a refused insert does
// not abort the caller's PostgreSQL transaction) and says whether it did.
func (s *Content) insertContentProject(ctx context.Context, p ports.ContentProject) (bool, error) {
	version, updated := p.Version, p.UpdatedAt
	if version == 0 {
		version = 1
	}
	if version < 0 {
		return false, ports.Invalid(fmt.Sprintf("content project %s has version %d", p.ID, p.Version),
			ports.FieldError{Field: "version", Reason: "negative"})
	}
	if updated.IsZero() {
		updated = p.CreatedAt
	}
	n, err := s.db.write(ctx).exec(ctx, "INSERT INTO content_projects ("+contentProjectColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		p.OrgID, p.ID, p.Name, ports.ContentProjectNameKey(p.Name), p.Description, p.CreatedBy, version,
		timestamp(p.CreatedAt), timestamp(updated))
	if err != nil {
		return false, storeErr(err, "content project "+p.ID, "org "+p.OrgID)
	}
	return n == 1, nil
}

// projectExists says whether the org has a project with the id.
func (s *Content) projectExists(ctx context.Context, orgID, id string) (bool, error) {
	var one int
	err := s.db.write(ctx).get(ctx, &one, "SELECT 1 FROM content_projects WHERE org_id = ? AND id = ?", orgID, id)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, storeErr(err, "content project "+id, "")
}

func nameTaken(name string) error {
	return ports.Errorf(ports.KindConflict, "a content project named %q exists already", name)
}

// CreateContentProject implements ports.ContentStore with one conditional
// insert, so of concurrent creates of one name exactly one succeeds. It is
// invalid for a negative version.
func (s *Content) CreateContentProject(ctx context.Context, p ports.ContentProject) error {
	ok, err := s.insertContentProject(ctx, p)
	if err != nil || ok {
		return err
	}
	exists, err := s.projectExists(ctx, p.OrgID, p.ID)
	if err != nil {
		return err
	}
	if exists {
		return ports.Errorf(ports.KindConflict, "content project %s exists already", p.ID)
	}
	return nameTaken(p.Name)
}

// EnsureContentProject implements ports.ContentStore.
func (s *Content) EnsureContentProject(ctx context.Context, p ports.ContentProject) (bool, error) {
	ok, err := s.insertContentProject(ctx, p)
	if err != nil || ok {
		return ok, err
	}
	exists, err := s.projectExists(ctx, p.OrgID, p.ID)
	if err != nil || exists {
		return false, err
	}
	return false, nameTaken(p.Name)
}

// GetContentProject implements ports.ContentStore.
func (s *Content) GetContentProject(ctx context.Context, orgID, id string) (ports.ContentProject, error) {
	var r contentProjectRow
	err := s.db.read(ctx).get(ctx, &r, "SELECT "+contentProjectColumns+" FROM content_projects WHERE org_id = ? AND id = ?", orgID, id)
	if err != nil {
		return ports.ContentProject{}, storeErr(err, "content project "+id, "")
	}
	return r.project(), nil
}

// ListContentProjects implements ports.ContentStore. A page holds at most
// page.Size() items.
func (s *Content) ListContentProjects(ctx context.Context, orgID string, page ports.Page) ([]ports.ContentProject, string, error) {
	rows, next, err := listPage(ctx, s.db.read(ctx), "SELECT "+contentProjectColumns+" FROM content_projects WHERE org_id = ?",
		[]any{orgID}, page, keyset[contentProjectRow]{key: "name_key", id: "id",
			last: func(r contentProjectRow) (string, string) { return r.NameKey, r.ID }})
	if err != nil {
		return nil, "", storeErr(err, "content projects", "")
	}
	out := make([]ports.ContentProject, len(rows))
	for i, r := range rows {
		out[i] = r.project()
	}
	return out, next, nil
}

// UpdateContentProject implements ports.ContentStore with one conditional
// update, so of concurrent updates from one version exactly one succeeds.
// A name taken by another project is checked first, so the update does not
// fail on the unique index (which would abort the caller's PostgreSQL
// transaction) but in a race, where the index still refuses it as a
// conflict.
func (s *Content) UpdateContentProject(ctx context.Context, p ports.ContentProject) error {
	c := s.db.write(ctx)
	key := ports.ContentProjectNameKey(p.Name)
	var other string
	// Only when p.ID exists, so an absent project is not_found whatever its
	// name.
	err := c.get(ctx, &other, `SELECT id FROM content_projects WHERE org_id = ? AND name_key = ? AND id <> ?
		AND EXISTS (SELECT 1 FROM content_projects WHERE org_id = ? AND id = ?)`, p.OrgID, key, p.ID, p.OrgID, p.ID)
	switch {
	case err == nil:
		return nameTaken(p.Name)
	case !errors.Is(err, sql.ErrNoRows):
		return storeErr(err, "content project "+p.ID, "")
	}
	n, err := c.exec(ctx, `UPDATE content_projects SET name = ?, name_key = ?, description = ?, version = ?, updated_at = ?
		WHERE org_id = ? AND id = ? AND version = ?`,
		p.Name, key, p.Description, p.Version, timestamp(p.UpdatedAt), p.OrgID, p.ID, p.Version-1)
	if err != nil {
		if constraintKind(err) == ports.KindConflict {
			return ports.Wrap(ports.KindConflict, err, fmt.Sprintf("a content project named %q exists already", p.Name))
		}
		return storeErr(err, "content project "+p.ID, "")
	}
	if n == 1 {
		return nil
	}
	var stored int
	if err := c.get(ctx, &stored, "SELECT version FROM content_projects WHERE org_id = ? AND id = ?", p.OrgID, p.ID); err != nil {
		return storeErr(err, "content project "+p.ID, "")
	}
	return ports.Errorf(ports.KindPreconditionFailed, "content project %s is at version %d, not %d", p.ID, stored, p.Version-1)
}
