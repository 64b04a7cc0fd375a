package sqlstore

import (
	"context"
	"strings"
	"time"

	"github.com/devpilot/devpilot/ports"
)

var _ ports.PublishStore = (*Publish)(nil)

// Publish keeps publishing targets and publications. It implements
// ports.PublishStore, with the errors that port documents; every record is
// an org's, and another org's is not_found.
type Publish struct {
	db *DB
}

// NewPublish returns the publishing store over db.
func NewPublish(db *DB) *Publish { return &Publish{db: db} }

type targetRow struct {
	ID           string    `db:"id"`
	OrgID        string    `db:"org_id"`
	ProjectID    string    `db:"project_id"`
	Name         string    `db:"name"`
	Kind         string    `db:"kind"`
	Config       string    `db:"config"`
	SealedSecret string    `db:"sealed_secret"`
	CreatedBy    string    `db:"created_by"`
	CreatedAt    timestamp `db:"created_at"`
}

func (r targetRow) target() (ports.PublishTarget, error) {
	cfg, err := decodeMap(r.Config)
	if err != nil {
		return ports.PublishTarget{}, err
	}
	return ports.PublishTarget{ID: r.ID, OrgID: r.OrgID, ProjectID: r.ProjectID, Name: r.Name, Kind: r.Kind,
		Config: cfg, SealedSecret: r.SealedSecret, CreatedBy: r.CreatedBy, CreatedAt: time.Time(r.CreatedAt)}, nil
}

const targetColumns = "id, org_id, project_id, name, kind, config, sealed_secret, created_by, created_at"

// CreateTarget implements ports.PublishStore.
func (s *Publish) CreateTarget(ctx context.Context, t ports.PublishTarget) error {
	cfg, err := encodeMap(t.Config)
	if err != nil {
		return err
	}
	_, err = s.db.write(ctx).exec(ctx, "INSERT INTO content_targets ("+targetColumns+") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
		t.ID, t.OrgID, t.ProjectID, t.Name, t.Kind, cfg, t.SealedSecret, t.CreatedBy, timestamp(t.CreatedAt))
	return storeErr(err, "publishing target "+strings.ToValidUTF8(t.Name, ""), "org "+t.OrgID)
}

// GetTarget implements ports.PublishStore.
func (s *Publish) GetTarget(ctx context.Context, orgID, id string) (ports.PublishTarget, error) {
	var r targetRow
	err := s.db.read(ctx).get(ctx, &r, "SELECT "+targetColumns+" FROM content_targets WHERE id = ? AND org_id = ?", id, orgID)
	if err != nil {
		return ports.PublishTarget{}, storeErr(err, "publishing target "+id, "")
	}
	return r.target()
}

// ListTargets implements ports.PublishStore.
func (s *Publish) ListTargets(ctx context.Context, orgID, projectID string) ([]ports.PublishTarget, error) {
	var rows []targetRow
	err := s.db.read(ctx).list(ctx, &rows, "SELECT "+targetColumns+` FROM content_targets
		WHERE org_id = ? AND project_id = ? ORDER BY name, id`, orgID, projectID)
	if err != nil {
		return nil, storeErr(err, "publishing targets", "")
	}
	out := make([]ports.PublishTarget, 0, len(rows))
	for _, r := range rows {
		t, err := r.target()
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// DeleteTarget implements ports.PublishStore.
func (s *Publish) DeleteTarget(ctx context.Context, orgID, id string) error {
	n, err := s.db.write(ctx).exec(ctx, "DELETE FROM content_targets WHERE id = ? AND org_id = ?", id, orgID)
	if err == nil && n == 0 {
		return ports.NotFound("publishing target", id)
	}
	return storeErr(err, "publishing target "+id, "")
}

type publicationRow struct {
	ID         string     `db:"id"`
	OrgID      string     `db:"org_id"`
	ItemID     string     `db:"item_id"`
	TargetID   string     `db:"target_id"`
	TargetName string     `db:"target_name"`
	TargetKind string     `db:"target_kind"`
	Status     string     `db:"status"`
	RunAt      timestamp  `db:"run_at"`
	Attempts   string     `db:"attempts"`
	RemoteURL  string     `db:"remote_url"`
	Error      string     `db:"error"`
	CreatedBy  string     `db:"created_by"`
	CreatedAt  timestamp  `db:"created_at"`
	UpdatedAt  timestamp  `db:"updated_at"`
	FinishedAt *timestamp `db:"finished_at"`
}

func (r publicationRow) publication() (ports.Publication, error) {
	attempts, err := decodeFullList[ports.PublishAttempt](r.Attempts)
	if err != nil {
		return ports.Publication{}, err
	}
	for i := range attempts {
		attempts[i].At = attempts[i].At.UTC()
	}
	return ports.Publication{ID: r.ID, OrgID: r.OrgID, ItemID: r.ItemID, TargetID: r.TargetID, TargetName: r.TargetName,
		TargetKind: r.TargetKind, Status: ports.PublicationStatus(r.Status), RunAt: time.Time(r.RunAt), Attempts: attempts,
		RemoteURL: r.RemoteURL, Error: r.Error, CreatedBy: r.CreatedBy, CreatedAt: time.Time(r.CreatedAt),
		UpdatedAt: time.Time(r.UpdatedAt), FinishedAt: r.FinishedAt.timePtr()}, nil
}

const publicationColumns = `id, org_id, item_id, target_id, target_name, target_kind, status, run_at, attempts,
	remote_url, error, created_by, created_at, updated_at, finished_at`

// CreatePublication implements ports.PublishStore.
func (s *Publish) CreatePublication(ctx context.Context, p ports.Publication) error {
	attempts, err := encodeList(p.Attempts)
	if err != nil {
		return err
	}
	c := s.db.write(ctx)
	ok, err := c.exists(ctx, "SELECT 1 FROM content_items WHERE id = ? AND org_id = ?", p.ItemID, p.OrgID)
	if err != nil {
		return storeErr(err, "content item "+p.ItemID, "")
	}
	if !ok {
		return ports.NotFound("content item", p.ItemID)
	}
	_, err = c.exec(ctx, "INSERT INTO content_publications ("+publicationColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		p.ID, p.OrgID, p.ItemID, p.TargetID, p.TargetName, p.TargetKind, string(p.Status), timestamp(p.RunAt), attempts,
		p.RemoteURL, p.Error, p.CreatedBy, timestamp(p.CreatedAt), timestamp(p.UpdatedAt), timestampPtr(p.FinishedAt))
	return storeErr(err, "publication "+p.ID, "content item "+p.ItemID)
}

// GetPublication implements ports.PublishStore.
func (s *Publish) GetPublication(ctx context.Context, orgID, id string) (ports.Publication, error) {
	var r publicationRow
	err := s.db.read(ctx).get(ctx, &r, "SELECT "+publicationColumns+" FROM content_publications WHERE id = ? AND org_id = ?", id, orgID)
	if err != nil {
		return ports.Publication{}, storeErr(err, "publication "+id, "")
	}
	return r.publication()
}

// ListPublications implements ports.PublishStore.
func (s *Publish) ListPublications(ctx context.Context, orgID, itemID string) ([]ports.Publication, error) {
	var rows []publicationRow
	err := s.db.read(ctx).list(ctx, &rows, "SELECT "+publicationColumns+` FROM content_publications
		WHERE item_id = ? AND org_id = ? ORDER BY created_at DESC, id DESC`, itemID, orgID)
	if err != nil {
		return nil, storeErr(err, "publications", "")
	}
	out := make([]ports.Publication, 0, len(rows))
	for _, r := range rows {
		p, err := r.publication()
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// UpdatePublication implements ports.PublishStore with one conditional
// update.
func (s *Publish) UpdatePublication(ctx context.Context, p ports.Publication, from ...ports.PublicationStatus) error {
	if len(from) == 0 {
		return ports.Errorf(ports.KindInternal, "UpdatePublication needs a status to move from")
	}
	attempts, err := encodeList(p.Attempts)
	if err != nil {
		return err
	}
	args := []any{string(p.Status), attempts, p.RemoteURL, p.Error, timestamp(p.UpdatedAt), timestampPtr(p.FinishedAt), p.ID, p.OrgID}
	marks := make([]string, len(from))
	for i, st := range from {
		marks[i] = "?"
		args = append(args, string(st))
	}
	c := s.db.write(ctx)
	n, err := c.exec(ctx, `UPDATE content_publications SET status = ?, attempts = ?, remote_url = ?, error = ?, updated_at = ?,
		finished_at = ? WHERE id = ? AND org_id = ? AND status IN (`+strings.Join(marks, ", ")+")", args...)
	if err != nil {
		return storeErr(err, "publication "+p.ID, "")
	}
	if n == 1 {
		return nil
	}
	var stored string
	err = c.get(ctx, &stored, "SELECT status FROM content_publications WHERE id = ? AND org_id = ?", p.ID, p.OrgID)
	if err != nil {
		return storeErr(err, "publication "+p.ID, "")
	}
	return ports.Errorf(ports.KindPreconditionFailed, "publication %s is %s", p.ID, stored)
}
