package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/devpilot/devpilot/ports"
)

var _ ports.ContentStore = (*Content)(nil)

// Content keeps the content engine's records: brand settings per project,
// briefs and content items. It implements ports.ContentStore, with the errors
// that port documents; every record is an org's, and another org's is
// not_found. Empty lists and maps read back empty, never nil.
type Content struct {
	db *DB
}

// NewContent returns the content store over db.
func NewContent(db *DB) *Content {
	return &Content{db: db}
}

// decodeFullList is decodeList, with an empty list read back empty, not nil.
func decodeFullList[T any](text string) ([]T, error) {
	v, err := decodeList[T](text)
	if err != nil {
		return nil, err
	}
	if v == nil {
		v = []T{}
	}
	return v, nil
}

// encodeMap returns m as a JSON object, "{}" when it is empty.
func encodeMap(m map[string]string) (string, error) {
	if len(m) == 0 {
		return "{}", nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return "", ports.Wrap(ports.KindInternal, err, "encode map")
	}
	return string(b), nil
}

// decodeMap reads a JSON object from encodeMap; an empty one is an empty map.
func decodeMap(text string) (map[string]string, error) {
	m := map[string]string{}
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		return nil, ports.Wrap(ports.KindInternal, fmt.Errorf("sqlstore: bad JSON object: %w", err), "database error")
	}
	if m == nil { // the text was null
		m = map[string]string{}
	}
	return m, nil
}

// encodeLists encodes each list in turn, stopping at the first error.
func encodeLists(lists ...[]string) ([]string, error) {
	out := make([]string, len(lists))
	for i, l := range lists {
		var err error
		if out[i], err = encodeList(l); err != nil {
			return nil, err
		}
	}
	return out, nil
}

type brandRow struct {
	OrgID          string    `db:"org_id"`
	ProjectID      string    `db:"project_id"`
	Name           string    `db:"name"`
	Voice          string    `db:"voice"`
	Tone           string    `db:"tone"`
	Audience       string    `db:"audience"`
	Values         string    `db:"brand_values"`
	BannedWords    string    `db:"banned_words"`
	PreferredTerms string    `db:"preferred_terms"`
	Blocking       bool      `db:"banned_words_blocking"`
	StyleGuide     string    `db:"style_guide"`
	Examples       string    `db:"examples"`
	Version        int       `db:"version"`
	UpdatedBy      string    `db:"updated_by"`
	UpdatedAt      timestamp `db:"updated_at"`
}

func (r brandRow) brand() (ports.Brand, error) {
	b := ports.Brand{
		OrgID: r.OrgID, ProjectID: r.ProjectID, Name: r.Name, Voice: r.Voice, Audience: r.Audience,
		StyleGuide: r.StyleGuide, BannedWordsBlocking: r.Blocking, Version: r.Version, UpdatedBy: r.UpdatedBy, UpdatedAt: time.Time(r.UpdatedAt),
	}
	var err error
	for _, l := range []struct {
		dst  *[]string
		text string
	}{{&b.Tone, r.Tone}, {&b.Values, r.Values}, {&b.BannedWords, r.BannedWords}, {&b.Examples, r.Examples}} {
		if *l.dst, err = decodeFullList[string](l.text); err != nil {
			return ports.Brand{}, err
		}
	}
	if b.PreferredTerms, err = decodeMap(r.PreferredTerms); err != nil {
		return ports.Brand{}, err
	}
	return b, nil
}

const brandColumns = `org_id, project_id, name, voice, tone, audience, brand_values, banned_words, preferred_terms,
	style_guide, examples, version, updated_by, updated_at, banned_words_blocking`

// brandWhat names a project's brand settings in messages.
func brandWhat(projectID string) string { return "brand settings of project " + projectID }

// GetBrand implements ports.ContentStore.
func (s *Content) GetBrand(ctx context.Context, orgID, projectID string) (ports.Brand, error) {
	var r brandRow
	err := s.db.read(ctx).get(ctx, &r, "SELECT "+brandColumns+" FROM content_brands WHERE org_id = ? AND project_id = ?",
		orgID, projectID)
	if err != nil {
		return ports.Brand{}, storeErr(err, brandWhat(projectID), "")
	}
	return r.brand()
}

// PutBrand implements ports.ContentStore with one conditional statement, so
// of any number of concurrent puts of one version exactly one succeeds:
// version 1 is an insert that does nothing when settings are stored, any
// other an update of the stored version b.Version - 1. Every field of b is
// stored. It is also not_found when the org does not exist.
func (s *Content) PutBrand(ctx context.Context, b ports.Brand) error {
	lists, err := encodeLists(b.Tone, b.Values, b.BannedWords, b.Examples)
	if err != nil {
		return err
	}
	terms, err := encodeMap(b.PreferredTerms)
	if err != nil {
		return err
	}
	c := s.db.write(ctx)
	var n int64
	if b.Version == 1 {
		// ON CONFLICT, not a caught unique violation, so a refused put does
		// not abort the caller's PostgreSQL transaction.
		n, err = c.exec(ctx, "INSERT INTO content_brands ("+brandColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)
			ON CONFLICT (org_id, project_id) DO NOTHING`,
			b.OrgID, b.ProjectID, b.Name, b.Voice, lists[0], b.Audience, lists[1], lists[2], terms,
			b.StyleGuide, lists[3], b.UpdatedBy, timestamp(b.UpdatedAt), b.BannedWordsBlocking)
	} else {
		n, err = c.exec(ctx, `UPDATE content_brands SET name = ?, voice = ?, tone = ?, audience = ?, brand_values = ?,
			banned_words = ?, preferred_terms = ?, style_guide = ?, examples = ?, version = ?, updated_by = ?, updated_at = ?,
			banned_words_blocking = ?
			WHERE org_id = ? AND project_id = ? AND version = ?`,
			b.Name, b.Voice, lists[0], b.Audience, lists[1], lists[2], terms, b.StyleGuide, lists[3],
			b.Version, b.UpdatedBy, timestamp(b.UpdatedAt), b.BannedWordsBlocking, b.OrgID, b.ProjectID, b.Version-1)
	}
	if err != nil {
		return storeErr(err, brandWhat(b.ProjectID), "org "+b.OrgID)
	}
	if n == 1 {
		return nil
	}
	var stored int
	err = c.get(ctx, &stored, "SELECT version FROM content_brands WHERE org_id = ? AND project_id = ?", b.OrgID, b.ProjectID)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return storeErr(err, brandWhat(b.ProjectID), "")
	}
	return ports.Errorf(ports.KindPreconditionFailed, "%s are at version %d, not %d", brandWhat(b.ProjectID), stored, b.Version-1)
}

type briefRow struct {
	ID        string    `db:"id"`
	OrgID     string    `db:"org_id"`
	ProjectID string    `db:"project_id"`
	CreatedBy string    `db:"created_by"`
	Title     string    `db:"title"`
	Goal      string    `db:"goal"`
	Audience  string    `db:"audience"`
	Channel   string    `db:"channel"`
	Format    string    `db:"format"`
	Keywords  string    `db:"keywords"`
	CTA       string    `db:"cta"`
	MinWords  int       `db:"min_words"`
	MaxWords  int       `db:"max_words"`
	Notes     string    `db:"notes"`
	CreatedAt timestamp `db:"created_at"`
}

func (r briefRow) brief() (ports.Brief, error) {
	keywords, err := decodeFullList[string](r.Keywords)
	if err != nil {
		return ports.Brief{}, err
	}
	return ports.Brief{
		ID: r.ID, OrgID: r.OrgID, ProjectID: r.ProjectID, CreatedBy: r.CreatedBy, Title: r.Title, Goal: r.Goal,
		Audience: r.Audience, Channel: r.Channel, Format: r.Format, Keywords: keywords, CTA: r.CTA,
		MinWords: r.MinWords, MaxWords: r.MaxWords, Notes: r.Notes, CreatedAt: time.Time(r.CreatedAt),
	}, nil
}

const briefColumns = `id, org_id, project_id, created_by, title, goal, audience, channel, format, keywords, cta,
	min_words, max_words, notes, created_at`

// CreateBrief implements ports.ContentStore. It is a conflict when the id
// exists, and not_found when the org does not exist.
func (s *Content) CreateBrief(ctx context.Context, b ports.Brief) error {
	keywords, err := encodeList(b.Keywords)
	if err != nil {
		return err
	}
	_, err = s.db.write(ctx).exec(ctx, "INSERT INTO content_briefs ("+briefColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		b.ID, b.OrgID, b.ProjectID, b.CreatedBy, b.Title, b.Goal, b.Audience, b.Channel, b.Format, keywords, b.CTA,
		b.MinWords, b.MaxWords, b.Notes, timestamp(b.CreatedAt))
	return storeErr(err, "brief "+b.ID, "org "+b.OrgID)
}

// GetBrief implements ports.ContentStore.
func (s *Content) GetBrief(ctx context.Context, orgID, id string) (ports.Brief, error) {
	var r briefRow
	err := s.db.read(ctx).get(ctx, &r, "SELECT "+briefColumns+" FROM content_briefs WHERE id = ? AND org_id = ?", id, orgID)
	if err != nil {
		return ports.Brief{}, storeErr(err, "brief "+id, "")
	}
	return r.brief()
}

// ListBriefs implements ports.ContentStore. A page holds at most page.Size()
// items; ties in the creation time are ordered by id, highest first.
func (s *Content) ListBriefs(ctx context.Context, orgID, projectID string, page ports.Page) ([]ports.Brief, string, error) {
	query := "SELECT " + briefColumns + " FROM content_briefs WHERE org_id = ?"
	args := []any{orgID}
	if projectID != "" {
		query += " AND project_id = ?"
		args = append(args, projectID)
	}
	rows, next, err := listPage(ctx, s.db.read(ctx), query, args, page, keyset[briefRow]{key: "created_at", id: "id", desc: true, byTime: true,
		last: func(r briefRow) (string, string) { return timeKey(time.Time(r.CreatedAt)), r.ID }})
	if err != nil {
		return nil, "", storeErr(err, "briefs", "")
	}
	briefs := make([]ports.Brief, len(rows))
	for i, r := range rows {
		if briefs[i], err = r.brief(); err != nil {
			return nil, "", err
		}
	}
	return briefs, next, nil
}

// checkContentStatus is an invalid error, naming the field "status", unless
// status is one of the ports' content statuses.
func checkContentStatus(status ports.ContentStatus) error {
	switch status {
	case ports.ContentGenerating, ports.ContentDraft, ports.ContentInReview, ports.ContentApproved,
		ports.ContentPublished, ports.ContentArchived, ports.ContentFailed:
		return nil
	}
	return ports.Invalid(fmt.Sprintf("unknown content status %q", status), ports.FieldError{Field: "status", Reason: "unknown"})
}

type contentItemRow struct {
	ID        string    `db:"id"`
	OrgID     string    `db:"org_id"`
	ProjectID string    `db:"project_id"`
	BriefID   string    `db:"brief_id"`
	CreatedBy string    `db:"created_by"`
	Title     string    `db:"title"`
	Body      string    `db:"body"`
	Format    string    `db:"format"`
	Status    string    `db:"status"`
	Checks    string    `db:"checks"`
	Error     jsonText  `db:"error"`
	Variant   int       `db:"variant"`
	Model     string    `db:"model"`
	Version   int       `db:"version"`
	CreatedAt timestamp `db:"created_at"`
	UpdatedAt timestamp `db:"updated_at"`
	// PublishedAt is NULL before the item is published.
	PublishedAt  *timestamp `db:"published_at"`
	PublishedURL string     `db:"published_url"`
	PublishedVia string     `db:"published_via"`
	Override     jsonText   `db:"override"`
	EditedBy     string     `db:"edited_by"`
	EditedByName string     `db:"edited_by_name"`
}

func (r contentItemRow) item() (ports.ContentItem, error) {
	checks, err := decodeFullList[ports.ContentCheck](r.Checks)
	if err != nil {
		return ports.ContentItem{}, err
	}
	it := ports.ContentItem{
		ID: r.ID, OrgID: r.OrgID, ProjectID: r.ProjectID, BriefID: r.BriefID, CreatedBy: r.CreatedBy,
		Title: r.Title, Body: r.Body, Format: r.Format, Status: ports.ContentStatus(r.Status), Checks: checks,
		Variant: r.Variant, Model: r.Model, Version: r.Version,
		CreatedAt: time.Time(r.CreatedAt), UpdatedAt: time.Time(r.UpdatedAt), PublishedAt: r.PublishedAt.timePtr(),
		PublishedURL: r.PublishedURL, PublishedVia: r.PublishedVia, EditedBy: r.EditedBy, EditedByName: r.EditedByName,
	}
	if len(r.Override) > 0 {
		it.Override = new(ports.ContentOverride)
		if err := json.Unmarshal(r.Override, it.Override); err != nil {
			return ports.ContentItem{}, ports.Wrap(ports.KindInternal, fmt.Errorf("sqlstore: bad content override: %w", err), "database error")
		}
	}
	if len(r.Error) > 0 {
		it.Error = new(ports.ContentError)
		if err := json.Unmarshal(r.Error, it.Error); err != nil {
			return ports.ContentItem{}, ports.Wrap(ports.KindInternal, fmt.Errorf("sqlstore: bad content error: %w", err), "database error")
		}
	}
	return it, nil
}

// encodeContentFields returns the checks, error and override of an item as
// stored.
func encodeContentFields(it ports.ContentItem) (checks string, contentErr, override jsonText, err error) {
	if checks, err = encodeList(it.Checks); err != nil {
		return "", nil, nil, err
	}
	if it.Error != nil {
		b, err := json.Marshal(it.Error)
		if err != nil {
			return "", nil, nil, ports.Wrap(ports.KindInternal, err, "encode content error")
		}
		contentErr = b
	}
	if it.Override != nil {
		o := *it.Override
		o.At = o.At.UTC()
		b, err := json.Marshal(o)
		if err != nil {
			return "", nil, nil, ports.Wrap(ports.KindInternal, err, "encode content override")
		}
		override = b
	}
	return checks, contentErr, override, nil
}

const contentItemColumns = `id, org_id, project_id, brief_id, created_by, title, body, format, status, checks, error,
	variant, model, version, created_at, updated_at, published_at, published_url, published_via, override,
	edited_by, edited_by_name`

// CreateContentItems implements ports.ContentStore in one transaction. A
// zero Status is stored as generating, a zero Version as 1 and a zero
// UpdatedAt as CreatedAt. It is a conflict when an item's id exists (or is
// given twice), not_found when an item's brief is not its org's, and invalid
// for an unknown status or a negative version; then nothing is stored.
func (s *Content) CreateContentItems(ctx context.Context, items ...ports.ContentItem) error {
	type prepared struct {
		status   ports.ContentStatus
		version  int
		updated  time.Time
		checks   string
		err      jsonText
		override jsonText
	}
	rows := make([]prepared, len(items))
	for i, it := range items {
		p := prepared{status: it.Status, version: it.Version, updated: it.UpdatedAt}
		if p.status == "" {
			p.status = ports.ContentGenerating
		}
		if err := checkContentStatus(p.status); err != nil {
			return err
		}
		switch {
		case p.version == 0:
			p.version = 1
		case p.version < 0:
			return ports.Invalid(fmt.Sprintf("content item %s has version %d", it.ID, it.Version),
				ports.FieldError{Field: "version", Reason: "negative"})
		}
		if p.updated.IsZero() {
			p.updated = it.CreatedAt
		}
		var err error
		if p.checks, p.err, p.override, err = encodeContentFields(it); err != nil {
			return err
		}
		rows[i] = p
	}
	if len(items) == 0 {
		return nil
	}
	return s.db.WithinTx(ctx, func(ctx context.Context) error {
		c := s.db.write(ctx)
		// One statement per item, so an error names the item or brief at fault.
		for i, it := range items {
			p := rows[i]
			_, err := c.exec(ctx, "INSERT INTO content_items ("+contentItemColumns+`)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
				it.ID, it.OrgID, it.ProjectID, it.BriefID, it.CreatedBy, it.Title, it.Body, it.Format, string(p.status),
				p.checks, p.err, it.Variant, it.Model, p.version, timestamp(it.CreatedAt), timestamp(p.updated), timestampPtr(it.PublishedAt),
				it.PublishedURL, it.PublishedVia, p.override, it.EditedBy, it.EditedByName)
			if err != nil {
				return storeErr(err, "content item "+it.ID, "brief "+it.BriefID)
			}
		}
		return nil
	})
}

// GetContentItem implements ports.ContentStore.
func (s *Content) GetContentItem(ctx context.Context, orgID, id string) (ports.ContentItem, error) {
	var r contentItemRow
	err := s.db.read(ctx).get(ctx, &r, "SELECT "+contentItemColumns+" FROM content_items WHERE id = ? AND org_id = ?", id, orgID)
	if err != nil {
		return ports.ContentItem{}, storeErr(err, "content item "+id, "")
	}
	return r.item()
}

// ListContentItems implements ports.ContentStore. A page holds at most
// page.Size() items; ties in the update time are ordered by id, highest
// first. It is invalid for an unknown status in f.
func (s *Content) ListContentItems(ctx context.Context, orgID string, f ports.ContentFilter, page ports.Page) ([]ports.ContentItem, string, error) {
	query := "SELECT " + contentItemColumns + " FROM content_items WHERE org_id = ?"
	args := []any{orgID}
	if f.ProjectID != "" {
		query += " AND project_id = ?"
		args = append(args, f.ProjectID)
	}
	if f.BriefID != "" {
		query += " AND brief_id = ?"
		args = append(args, f.BriefID)
	}
	if f.Status != "" {
		if err := checkContentStatus(f.Status); err != nil {
			return nil, "", err
		}
		query += " AND status = ?"
		args = append(args, string(f.Status))
	}
	rows, next, err := listPage(ctx, s.db.read(ctx), query, args, page, keyset[contentItemRow]{key: "updated_at", id: "id", desc: true, byTime: true,
		last: func(r contentItemRow) (string, string) { return timeKey(time.Time(r.UpdatedAt)), r.ID }})
	if err != nil {
		return nil, "", storeErr(err, "content items", "")
	}
	items := make([]ports.ContentItem, len(rows))
	for i, r := range rows {
		if items[i], err = r.item(); err != nil {
			return nil, "", err
		}
	}
	return items, next, nil
}

// UpdateContentItem implements ports.ContentStore with one conditional
// update, so of any number of concurrent updates from one version exactly
// one succeeds. The item keeps its project, brief, creator, variant and
// creation time whatever it says. It is also invalid for an unknown status.
func (s *Content) UpdateContentItem(ctx context.Context, it ports.ContentItem) error {
	if err := checkContentStatus(it.Status); err != nil {
		return err
	}
	checks, contentErr, override, err := encodeContentFields(it)
	if err != nil {
		return err
	}
	c := s.db.write(ctx)
	n, err := c.exec(ctx, `UPDATE content_items SET title = ?, body = ?, format = ?, status = ?, checks = ?, error = ?,
		model = ?, version = ?, updated_at = ?, published_at = ?, published_url = ?, published_via = ?, override = ?,
		edited_by = ?, edited_by_name = ?
		WHERE id = ? AND org_id = ? AND version = ?`,
		it.Title, it.Body, it.Format, string(it.Status), checks, contentErr, it.Model, it.Version, timestamp(it.UpdatedAt), timestampPtr(it.PublishedAt),
		it.PublishedURL, it.PublishedVia, override, it.EditedBy, it.EditedByName,
		it.ID, it.OrgID, it.Version-1)
	if err != nil {
		return storeErr(err, "content item "+it.ID, "")
	}
	if n == 1 {
		return nil
	}
	var stored int
	err = c.get(ctx, &stored, "SELECT version FROM content_items WHERE id = ? AND org_id = ?", it.ID, it.OrgID)
	if err != nil {
		return storeErr(err, "content item "+it.ID, "")
	}
	return ports.Errorf(ports.KindPreconditionFailed, "content item %s is at version %d, not %d", it.ID, stored, it.Version-1)
}

// DeleteContentItem implements ports.ContentStore.
func (s *Content) DeleteContentItem(ctx context.Context, orgID, id string) error {
	n, err := s.db.write(ctx).exec(ctx, "DELETE FROM content_items WHERE id = ? AND org_id = ?", id, orgID)
	if err == nil && n == 0 {
		return ports.NotFound("content item", id)
	}
	return storeErr(err, "content item "+id, "")
}
