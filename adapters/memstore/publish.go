package memstore

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/devpilot/devpilot/ports"
)

var _ ports.PublishStore = (*Store)(nil)

type publishData struct {
	targets      map[string]ports.PublishTarget
	publications map[string]ports.Publication
}

func (d *publishData) init() {
	d.targets = map[string]ports.PublishTarget{}
	d.publications = map[string]ports.Publication{}
}

func copyTarget(t ports.PublishTarget) ports.PublishTarget {
	t.Config = maps.Clone(t.Config)
	if t.Config == nil {
		t.Config = map[string]string{}
	}
	t.CreatedAt = utc(t.CreatedAt)
	return t
}

func copyPublication(p ports.Publication) ports.Publication {
	p.Attempts = orEmpty(p.Attempts)
	for i := range p.Attempts {
		p.Attempts[i].At = utc(p.Attempts[i].At)
	}
	p.RunAt, p.CreatedAt, p.UpdatedAt, p.FinishedAt = utc(p.RunAt), utc(p.CreatedAt), utc(p.UpdatedAt), utcPtr(p.FinishedAt)
	return p
}

// CreateTarget stores a new target. Errors: conflict for a taken id, or a
// name the project's targets have already.
func (s *Store) CreateTarget(ctx context.Context, t ports.PublishTarget) error {
	defer s.lock()()
	if _, ok := s.publish.targets[t.ID]; ok {
		return ports.Errorf(ports.KindConflict, "publishing target %s exists already", t.ID)
	}
	for _, o := range s.publish.targets {
		if o.OrgID == t.OrgID && o.ProjectID == t.ProjectID && o.Name == t.Name {
			return ports.Errorf(ports.KindConflict, "publishing target %q already exists", t.Name)
		}
	}
	put(ctx, s, s.publish.targets, t.ID, copyTarget(t))
	return nil
}

// GetTarget returns the org's target; not_found when absent.
func (s *Store) GetTarget(_ context.Context, orgID, id string) (ports.PublishTarget, error) {
	defer s.lock()()
	t, ok := s.publish.targets[id]
	if !ok || t.OrgID != orgID {
		return ports.PublishTarget{}, ports.NotFound("publishing target", id)
	}
	return copyTarget(t), nil
}

// ListTargets returns the org's targets of a project, by name.
func (s *Store) ListTargets(_ context.Context, orgID, projectID string) ([]ports.PublishTarget, error) {
	defer s.lock()()
	out := []ports.PublishTarget{}
	for _, t := range s.publish.targets {
		if t.OrgID == orgID && t.ProjectID == projectID {
			out = append(out, copyTarget(t))
		}
	}
	slices.SortFunc(out, func(a, b ports.PublishTarget) int {
		return cmpOr(strings.Compare(a.Name, b.Name), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// DeleteTarget deletes the org's target; not_found when absent.
func (s *Store) DeleteTarget(ctx context.Context, orgID, id string) error {
	defer s.lock()()
	t, ok := s.publish.targets[id]
	if !ok || t.OrgID != orgID {
		return ports.NotFound("publishing target", id)
	}
	del(ctx, s, s.publish.targets, id)
	return nil
}

// CreatePublication stores a new publication. Errors: conflict for a
// taken id; not_found when its item is not its org's.
func (s *Store) CreatePublication(ctx context.Context, p ports.Publication) error {
	defer s.lock()()
	if it, ok := s.content.items[p.ItemID]; !ok || it.OrgID != p.OrgID {
		return ports.NotFound("content item", p.ItemID)
	}
	if _, ok := s.publish.publications[p.ID]; ok {
		return ports.Errorf(ports.KindConflict, "publication %s exists already", p.ID)
	}
	put(ctx, s, s.publish.publications, p.ID, copyPublication(p))
	return nil
}

// GetPublication returns the org's publication; not_found when absent.
func (s *Store) GetPublication(_ context.Context, orgID, id string) (ports.Publication, error) {
	defer s.lock()()
	p, ok := s.publish.publications[id]
	if !ok || p.OrgID != orgID {
		return ports.Publication{}, ports.NotFound("publication", id)
	}
	return copyPublication(p), nil
}

// ListPublications returns the publications of the org's item, newest
// first.
func (s *Store) ListPublications(_ context.Context, orgID, itemID string) ([]ports.Publication, error) {
	defer s.lock()()
	out := []ports.Publication{}
	for _, p := range s.publish.publications {
		if p.OrgID == orgID && p.ItemID == itemID {
			out = append(out, copyPublication(p))
		}
	}
	slices.SortFunc(out, func(a, b ports.Publication) int {
		return cmpOr(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(b.ID, a.ID))
	})
	return out, nil
}

// UpdatePublication changes the org's publication if its status is one of
// from. Errors: not_found; precondition_failed.
func (s *Store) UpdatePublication(ctx context.Context, p ports.Publication, from ...ports.PublicationStatus) error {
	defer s.lock()()
	cur, ok := s.publish.publications[p.ID]
	if !ok || cur.OrgID != p.OrgID {
		return ports.NotFound("publication", p.ID)
	}
	if !slices.Contains(from, cur.Status) {
		return ports.Errorf(ports.KindPreconditionFailed, "publication %s is %s", p.ID, cur.Status)
	}
	next := cur
	next.Status, next.Attempts, next.RemoteURL, next.Error = p.Status, p.Attempts, p.RemoteURL, p.Error
	next.UpdatedAt, next.FinishedAt = p.UpdatedAt, p.FinishedAt
	put(ctx, s, s.publish.publications, p.ID, copyPublication(next))
	return nil
}

// deletePublicationsOf deletes the publications of an item (s.mu held).
func (s *Store) deletePublicationsOf(ctx context.Context, itemID string) {
	for id, p := range s.publish.publications {
		if p.ItemID == itemID {
			del(ctx, s, s.publish.publications, id)
		}
	}
}
