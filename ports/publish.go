package ports

import (
	"context"
	"time"
)

//go:generate go tool mockgen -typed -destination ../testkit/mocks/publish.go -package mocks . PublishStore,ContentPublisher,RepoFiles

// Publishing target kinds.
const (
	TargetWebhook    = "webhook"
	TargetWordPress  = "wordpress"
	TargetGitHubFile = "github_file"
)

// PublishTarget is where a project's approved content can be published: an
// outbound webhook, a WordPress site or a file in a GitHub repository.
// Config holds the kind's settings (never a secret); SealedSecret holds the
// webhook's signing secret or the WordPress application password, sealed
// with the Cipher bound to the target's id, or "" for a kind without one.
type PublishTarget struct {
	ID           string
	OrgID        string
	ProjectID    string
	Name         string
	Kind         string
	Config       map[string]string
	SealedSecret string
	CreatedBy    string
	CreatedAt    time.Time
}

// PublicationStatus is where a publication stands.
type PublicationStatus string

// The statuses of a publication: scheduled (waiting for its time) or queued
// (waiting for a worker), then running, then succeeded or failed; a
// scheduled or queued one may be cancelled before it runs.
const (
	PublicationScheduled PublicationStatus = "scheduled"
	PublicationQueued    PublicationStatus = "queued"
	PublicationRunning   PublicationStatus = "running"
	PublicationSucceeded PublicationStatus = "succeeded"
	PublicationFailed    PublicationStatus = "failed"
	PublicationCancelled PublicationStatus = "cancelled"
)

// PublishAttempt is one try at delivering a publication: when, how it ended
// (ok or failed), and the remote URL or the error.
type PublishAttempt struct {
	At        time.Time `json:"at"`
	Outcome   string    `json:"outcome"`
	RemoteURL string    `json:"remote_url,omitempty"`
	Error     string    `json:"error,omitempty"`
}

// Publication is one request to publish a content item to a target, now or
// at a time, with every attempt at it. Its ID is also the delivery id a
// webhook receives, the same across retries. TargetName and TargetKind are
// kept so the record reads well after the target is deleted.
type Publication struct {
	ID         string
	OrgID      string
	ItemID     string
	TargetID   string
	TargetName string
	TargetKind string
	Status     PublicationStatus
	RunAt      time.Time
	Attempts   []PublishAttempt
	RemoteURL  string
	Error      string
	CreatedBy  string
	CreatedAt  time.Time
	UpdatedAt  time.Time
	FinishedAt *time.Time
}

// PublishStore keeps publishing targets and publications. Every record
// belongs to an organisation: another org's is not_found.
type PublishStore interface {
	// CreateTarget stores a new target. Errors: conflict when the project
	// has a target of that name.
	CreateTarget(ctx context.Context, t PublishTarget) error
	// GetTarget returns the org's target; not_found when absent.
	GetTarget(ctx context.Context, orgID, id string) (PublishTarget, error)
	// ListTargets returns the org's targets of a project, by name.
	ListTargets(ctx context.Context, orgID, projectID string) ([]PublishTarget, error)
	// DeleteTarget deletes the org's target; not_found when absent. Its
	// publications are kept.
	DeleteTarget(ctx context.Context, orgID, id string) error

	// CreatePublication stores a new publication. Errors: not_found when
	// its content item does not exist.
	CreatePublication(ctx context.Context, p Publication) error
	// GetPublication returns the org's publication; not_found when absent.
	GetPublication(ctx context.Context, orgID, id string) (Publication, error)
	// ListPublications returns the publications of the org's content item,
	// newest first.
	ListPublications(ctx context.Context, orgID, itemID string) ([]Publication, error)
	// UpdatePublication replaces the status, attempts, remote URL, error,
	// updated and finished times of the org's publication p.ID, only if its
	// stored status is one of from, so of concurrent moves from one status
	// exactly one succeeds. Errors: not_found when absent;
	// precondition_failed when its status is none of from.
	UpdatePublication(ctx context.Context, p Publication, from ...PublicationStatus) error
}

// PublishedItem is a content item as it is sent to a target.
type PublishedItem struct {
	ID        string    `json:"id"`
	ProjectID string    `json:"project_id"`
	Title     string    `json:"title"`
	Body      string    `json:"body"`
	Format    string    `json:"format"`
	Version   int       `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// WebhookPost is one delivery of a publication to a webhook target.
type WebhookPost struct {
	URL         string
	Secret      string
	DeliveryID  string
	Item        PublishedItem
	PublishedAt time.Time
}

// WordPressPost is one post of a content item to a WordPress site.
type WordPressPost struct {
	SiteURL  string
	Username string
	Password string
	Title    string
	Content  string
}

// PublishResult is what a target answered to a successful publish: the URL
// of the published content when it says one.
type PublishResult struct {
	RemoteURL string
}

// ContentPublisher sends content to webhook and WordPress targets, one
// attempt per call. Errors: a retryable Error (unavailable, timeout) for a
// 5xx answer, a timeout or a connection failure; upstream for any other
// failure answer; invalid for a URL it refuses to call (a private address
// when those are not allowed).
type ContentPublisher interface {
	// Webhook POSTs the publication, signed with the secret.
	Webhook(ctx context.Context, p WebhookPost) (PublishResult, error)
	// WordPress creates a published post.
	WordPress(ctx context.Context, p WordPressPost) (PublishResult, error)
}

// RepoFileWrite writes one file of a repository in one commit.
type RepoFileWrite struct {
	RepoID  string // devpilot's id of a connected repository
	Branch  string // "" for the default branch
	Path    string
	Content string
	Message string
}

// RepoFiles writes files into the repositories an owner's source-control
// connection can see.
type RepoFiles interface {
	// CheckRepo returns the owner's repository. Errors: not_found when the
	// owner has no such repository.
	CheckRepo(ctx context.Context, owner Owner, repoID string) (Repository, error)
	// WriteFile creates or replaces the file in one commit, unless it holds
	// that content already, and returns its URL. Errors: not_found for an
	// unknown repository; precondition_failed when the owner is not
	// connected; the provider's errors.
	WriteFile(ctx context.Context, owner Owner, w RepoFileWrite) (PublishResult, error)
}
