package memstore

import (
	"context"
	"maps"
	"slices"

	"github.com/devpilot/devpilot/ports"
)

var _ ports.ContentStore = (*Store)(nil)

type brandKey struct{ org, project string }

type contentData struct {
	brands map[brandKey]ports.Brand
	briefs map[string]ports.Brief
	items  map[string]ports.ContentItem
	// projects are keyed by org and id, like brands.
	projects map[brandKey]ports.ContentProject
}

func (d *contentData) init() {
	d.brands = map[brandKey]ports.Brand{}
	d.briefs = map[string]ports.Brief{}
	d.items = map[string]ports.ContentItem{}
	d.projects = map[brandKey]ports.ContentProject{}
}

// orEmpty returns a copy of v, empty rather than nil.
func orEmpty[T any](v []T) []T {
	if v == nil {
		return []T{}
	}
	return slices.Clone(v)
}

func copyBrand(b ports.Brand) ports.Brand {
	b.Tone, b.Values, b.BannedWords, b.Examples = orEmpty(b.Tone), orEmpty(b.Values), orEmpty(b.BannedWords), orEmpty(b.Examples)
	if b.PreferredTerms == nil {
		b.PreferredTerms = map[string]string{}
	} else {
		b.PreferredTerms = maps.Clone(b.PreferredTerms)
	}
	b.UpdatedAt = utc(b.UpdatedAt)
	return b
}

func copyBrief(b ports.Brief) ports.Brief {
	b.Keywords, b.CreatedAt = orEmpty(b.Keywords), utc(b.CreatedAt)
	return b
}

func copyItem(it ports.ContentItem) ports.ContentItem {
	it.Checks = orEmpty(it.Checks)
	if it.Error != nil {
		e := *it.Error
		it.Error = &e
	}
	it.CreatedAt, it.UpdatedAt, it.PublishedAt = utc(it.CreatedAt), utc(it.UpdatedAt), utcPtr(it.PublishedAt)
	if it.Override != nil {
		o := *it.Override
		o.At = utc(o.At)
		it.Override = &o
	}
	return it
}

func validContentStatus(st ports.ContentStatus) bool {
	switch st {
	case ports.ContentGenerating, ports.ContentDraft, ports.ContentInReview, ports.ContentApproved,
		ports.ContentPublished, ports.ContentArchived, ports.ContentFailed:
		return true
	}
	return false
}

func invalidStatus(st ports.ContentStatus) error {
	return ports.Invalid("unknown content status "+string(st), ports.FieldError{Field: "status", Reason: "unknown"})
}

// GetBrand returns a project's brand settings; not_found when none are
// stored.
func (s *Store) GetBrand(_ context.Context, orgID, projectID string) (ports.Brand, error) {
	defer s.lock()()
	b, ok := s.content.brands[brandKey{orgID, projectID}]
	if !ok {
		return ports.Brand{}, ports.NotFound("brand settings of project", projectID)
	}
	return copyBrand(b), nil
}

// PutBrand replaces a project's brand settings with b, whose Version must be
// the stored version + 1. Errors: precondition_failed otherwise (checked
// first); not_found for a missing org.
func (s *Store) PutBrand(ctx context.Context, b ports.Brand) error {
	defer s.lock()()
	k := brandKey{b.OrgID, b.ProjectID}
	stored := 0
	if old, ok := s.content.brands[k]; ok {
		stored = old.Version
	}
	if stored != b.Version-1 {
		return ports.Errorf(ports.KindPreconditionFailed, "brand settings of project %s are at version %d, not %d", b.ProjectID, stored, b.Version-1)
	}
	if _, ok := s.identity.orgs[b.OrgID]; !ok {
		return ports.NotFound("org", b.OrgID)
	}
	put(ctx, s, s.content.brands, k, copyBrand(b))
	return nil
}

// CreateBrief stores a new brief; conflict for a taken id, not_found for a
// missing org.
func (s *Store) CreateBrief(ctx context.Context, b ports.Brief) error {
	defer s.lock()()
	if _, ok := s.identity.orgs[b.OrgID]; !ok {
		return ports.NotFound("org", b.OrgID)
	}
	if _, ok := s.content.briefs[b.ID]; ok {
		return ports.Errorf(ports.KindConflict, "brief %s exists already", b.ID)
	}
	put(ctx, s, s.content.briefs, b.ID, copyBrief(b))
	return nil
}

// GetBrief returns the org's brief; not_found when absent or another org's.
func (s *Store) GetBrief(_ context.Context, orgID, id string) (ports.Brief, error) {
	defer s.lock()()
	b, ok := s.content.briefs[id]
	if !ok || b.OrgID != orgID {
		return ports.Brief{}, ports.NotFound("brief", id)
	}
	return copyBrief(b), nil
}

// ListBriefs returns the org's briefs of a project ("" for all), newest
// first, and the next page's cursor; invalid for a malformed cursor.
func (s *Store) ListBriefs(_ context.Context, orgID, projectID string, page ports.Page) ([]ports.Brief, string, error) {
	defer s.lock()()
	var all []ports.Brief
	for _, b := range s.content.briefs {
		if b.OrgID == orgID && (projectID == "" || b.ProjectID == projectID) {
			all = append(all, copyBrief(b))
		}
	}
	return paginate(all, page, keyset[ports.Brief]{desc: true, byTime: true,
		key: func(b ports.Brief) (string, string) { return timeKey(b.CreatedAt), b.ID }})
}

// CreateContentItems stores new content items, all or none: a zero Status
// as generating, a zero Version as 1, a zero UpdatedAt as CreatedAt.
// Errors: conflict for a taken or repeated id; not_found when an item's
// brief is not its org's; invalid (field status) for an unknown status.
func (s *Store) CreateContentItems(ctx context.Context, items ...ports.ContentItem) error {
	defer s.lock()()
	seen := map[string]bool{}
	for i, it := range items {
		if it.Status == "" {
			it.Status = ports.ContentGenerating
		}
		if !validContentStatus(it.Status) {
			return invalidStatus(it.Status)
		}
		if b, ok := s.content.briefs[it.BriefID]; !ok || b.OrgID != it.OrgID {
			return ports.NotFound("brief", it.BriefID)
		}
		if _, ok := s.content.items[it.ID]; ok || seen[it.ID] {
			return ports.Errorf(ports.KindConflict, "content item %s exists already", it.ID)
		}
		seen[it.ID] = true
		if it.Version == 0 {
			it.Version = 1
		}
		if it.UpdatedAt.IsZero() {
			it.UpdatedAt = it.CreatedAt
		}
		items[i] = it
	}
	for _, it := range items {
		put(ctx, s, s.content.items, it.ID, copyItem(it))
	}
	return nil
}

// GetContentItem returns the org's content item; not_found when absent or
// another org's.
func (s *Store) GetContentItem(_ context.Context, orgID, id string) (ports.ContentItem, error) {
	defer s.lock()()
	it, ok := s.content.items[id]
	if !ok || it.OrgID != orgID {
		return ports.ContentItem{}, ports.NotFound("content item", id)
	}
	return copyItem(it), nil
}

// ListContentItems returns the org's content items matching f, most recently
// updated first, and the next page's cursor; invalid for a malformed cursor
// or an unknown status.
func (s *Store) ListContentItems(_ context.Context, orgID string, f ports.ContentFilter, page ports.Page) ([]ports.ContentItem, string, error) {
	if f.Status != "" && !validContentStatus(f.Status) {
		return nil, "", invalidStatus(f.Status)
	}
	defer s.lock()()
	var all []ports.ContentItem
	for _, it := range s.content.items {
		if it.OrgID == orgID && (f.ProjectID == "" || it.ProjectID == f.ProjectID) &&
			(f.BriefID == "" || it.BriefID == f.BriefID) && (f.Status == "" || it.Status == f.Status) {
			all = append(all, copyItem(it))
		}
	}
	return paginate(all, page, keyset[ports.ContentItem]{desc: true, byTime: true,
		key: func(it ports.ContentItem) (string, string) { return timeKey(it.UpdatedAt), it.ID }})
}

// UpdateContentItem replaces the mutable fields of the org's item it.ID when
// the stored version is it.Version - 1. Errors: not_found as GetContentItem;
// precondition_failed for another version; invalid for an unknown status.
func (s *Store) UpdateContentItem(ctx context.Context, it ports.ContentItem) error {
	if !validContentStatus(it.Status) {
		return invalidStatus(it.Status)
	}
	defer s.lock()()
	old, ok := s.content.items[it.ID]
	if !ok || old.OrgID != it.OrgID {
		return ports.NotFound("content item", it.ID)
	}
	if old.Version != it.Version-1 {
		return ports.Errorf(ports.KindPreconditionFailed, "content item %s is at version %d, not %d", it.ID, old.Version, it.Version-1)
	}
	old.Title, old.Body, old.Format, old.Status = it.Title, it.Body, it.Format, it.Status
	old.Checks, old.Error, old.Model, old.Version, old.UpdatedAt = it.Checks, it.Error, it.Model, it.Version, it.UpdatedAt
	old.PublishedAt, old.PublishedURL, old.PublishedVia, old.Override = it.PublishedAt, it.PublishedURL, it.PublishedVia, it.Override
	old.EditedBy, old.EditedByName = it.EditedBy, it.EditedByName
	put(ctx, s, s.content.items, it.ID, copyItem(old))
	return nil
}

// DeleteContentItem deletes the org's content item; not_found as
// GetContentItem.
func (s *Store) DeleteContentItem(ctx context.Context, orgID, id string) error {
	defer s.lock()()
	it, ok := s.content.items[id]
	if !ok || it.OrgID != orgID {
		return ports.NotFound("content item", id)
	}
	del(ctx, s, s.content.items, id)
	s.deletePublicationsOf(ctx, id)
	return nil
}
