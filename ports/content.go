package ports

import (
	"context"
	"time"
)

//go:generate go tool mockgen -typed -destination ../testkit/mocks/content.go -package mocks . ContentStore

// Brand is a project's brand settings: how its content should sound and
// which words it must and must not use. Version counts the replacements, from
// 1; a project without settings has none stored (the core supplies defaults
// with Version 0).
type Brand struct {
	OrgID          string
	ProjectID      string
	Name           string
	Voice          string
	Tone           []string
	Audience       string
	Values         []string
	BannedWords    []string
	PreferredTerms map[string]string // avoided term → preferred term
	// BannedWordsBlocking makes a banned word found in an item's text block
	// its approval and publication, override or not.
	BannedWordsBlocking bool
	StyleGuide          string
	Examples            []string
	Version             int
	UpdatedBy           string
	UpdatedAt           time.Time
}

// Brief asks for a piece of content: what it is for, for whom, where it goes
// and how long it may be (0 bounds are unbounded).
type Brief struct {
	ID        string
	OrgID     string
	ProjectID string
	CreatedBy string
	Title     string
	Goal      string
	Audience  string
	Channel   string
	Format    string
	Keywords  []string
	CTA       string
	MinWords  int
	MaxWords  int
	Notes     string
	CreatedAt time.Time
}

// ContentStatus is where a content item stands in its lifecycle.
type ContentStatus string

// The statuses of a content item.
const (
	ContentGenerating ContentStatus = "generating"
	ContentDraft      ContentStatus = "draft"
	ContentInReview   ContentStatus = "in_review"
	ContentApproved   ContentStatus = "approved"
	ContentPublished  ContentStatus = "published"
	ContentArchived   ContentStatus = "archived"
	ContentFailed     ContentStatus = "failed"
)

// ContentCheck is one finding of the brand checks on a content item's text.
// Kind is banned_word, preferred_term or length; Term is the word or
// phrase concerned, when there is one.
type ContentCheck struct {
	Kind    string `json:"kind"`
	Term    string `json:"term,omitempty"`
	Message string `json:"message"`
}

// ContentError is why the generation of a content item failed.
type ContentError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ContentItem is one piece of content of a project, generated from a brief
// and edited by people. Version counts every change, from 1, and guards
// updates against lost edits.
type ContentItem struct {
	ID        string
	OrgID     string
	ProjectID string
	BriefID   string
	CreatedBy string
	Title     string
	Body      string
	Format    string
	Status    ContentStatus
	Checks    []ContentCheck
	Error     *ContentError
	// Variant numbers the items of one generate call, from 1.
	Variant   int
	Model     string
	Version   int
	CreatedAt time.Time
	UpdatedAt time.Time
	// PublishedAt is when the item was last published, nil before.
	PublishedAt *time.Time
	// PublishedURL is where the item was published: the remote URL of the
	// publication through a target (when the target reports one), or the
	// URL given when it was marked as published elsewhere; "" before.
	PublishedURL string
	// PublishedVia is how the item was published: PublishedViaTarget or
	// PublishedViaElsewhere; "" before.
	PublishedVia string
	// Override is the latest "publish anyway" given to approve or publish
	// the item despite its brand findings; nil when none was needed.
	Override *ContentOverride
	// EditedBy is the id of the user who last changed the item's title or
	// body by hand, and EditedByName their name (the email) at the time;
	// both "" while the text is the model's.
	EditedBy     string
	EditedByName string
}

// How a content item was published (ContentItem.PublishedVia).
const (
	PublishedViaTarget    = "target"
	PublishedViaElsewhere = "elsewhere"
)

// ContentOverride records who approved or published a content item despite
// its brand findings, when, and why.
type ContentOverride struct {
	Reason string    `json:"reason"`
	By     string    `json:"by"`
	At     time.Time `json:"at"`
}

// ContentFilter narrows a list of content items; empty fields match all.
type ContentFilter struct {
	ProjectID string
	BriefID   string
	Status    ContentStatus
}

// ContentStore keeps brand settings, briefs and content items. Everything
// belongs to an organisation: another org's record is not_found.
type ContentStore interface {
	// GetBrand returns a project's brand settings; not_found when none are
	// stored.
	GetBrand(ctx context.Context, orgID, projectID string) (Brand, error)
	// PutBrand replaces a project's brand settings with b, whose Version must
	// be the stored version + 1 (1 when none is stored). Errors:
	// precondition_failed when the stored version is not b.Version - 1.
	PutBrand(ctx context.Context, b Brand) error

	// CreateBrief stores a new brief.
	CreateBrief(ctx context.Context, b Brief) error
	// GetBrief returns the org's brief; not_found when absent or another
	// org's.
	GetBrief(ctx context.Context, orgID, id string) (Brief, error)
	// ListBriefs returns the org's briefs of a project ("" for every
	// project), newest first, and the next page's cursor ("" at the end);
	// invalid for a bad cursor.
	ListBriefs(ctx context.Context, orgID, projectID string, page Page) ([]Brief, string, error)

	// CreateContentItems stores new content items, all or none.
	CreateContentItems(ctx context.Context, items ...ContentItem) error
	// GetContentItem returns the org's content item; not_found when absent
	// or another org's.
	GetContentItem(ctx context.Context, orgID, id string) (ContentItem, error)
	// ListContentItems returns the org's content items matching f, most
	// recently updated first, and the next page's cursor; invalid for a bad
	// cursor.
	ListContentItems(ctx context.Context, orgID string, f ContentFilter, page Page) ([]ContentItem, string, error)
	// UpdateContentItem replaces the title, body, format, status, checks,
	// error, model, version, updated_at, published_at, published_url,
	// published_via and override of the org's item it.ID, only if
	// the stored version is it.Version - 1, so of two updates from one
	// version exactly one succeeds. Errors: not_found as GetContentItem;
	// precondition_failed when the stored version differs.
	UpdateContentItem(ctx context.Context, it ContentItem) error
	// DeleteContentItem deletes the org's content item; not_found as
	// GetContentItem.
	DeleteContentItem(ctx context.Context, orgID, id string) error

	// CreateContentProject stores a new project (a zero Version as 1, a
	// zero UpdatedAt as CreatedAt). Errors: conflict when the org has a
	// project with p.ID, or one whose name has p.Name's
	// ContentProjectNameKey (of concurrent creates of one name exactly one
	// succeeds); not_found when the org does not exist. A refused create
	// leaves the caller's transaction usable.
	CreateContentProject(ctx context.Context, p ContentProject) error
	// EnsureContentProject stores p as CreateContentProject does unless the
	// org has a project with p.ID already, and says whether it stored p.
	// Errors: conflict when p is not stored and another project of the org
	// has p.Name's key; not_found when the org does not exist.
	EnsureContentProject(ctx context.Context, p ContentProject) (bool, error)
	// GetContentProject returns the org's project; not_found when absent or
	// another org's.
	GetContentProject(ctx context.Context, orgID, id string) (ContentProject, error)
	// ListContentProjects returns the org's projects ordered by name key
	// (ContentProjectNameKey, bytewise) then id, and the next page's cursor
	// ("" at the end); invalid for a bad cursor.
	ListContentProjects(ctx context.Context, orgID string, page Page) ([]ContentProject, string, error)
	// UpdateContentProject replaces the name, description, version and
	// updated_at of the org's project p.ID, only if the stored version is
	// p.Version - 1. Errors: not_found as GetContentProject;
	// precondition_failed when the stored version differs; conflict when
	// another project of the org has p.Name's key.
	UpdateContentProject(ctx context.Context, p ContentProject) error
}
