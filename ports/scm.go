package ports

import (
	"context"
	"io"
	"time"
)

//go:generate go tool mockgen -typed -destination ../testkit/mocks/scm.go -package mocks . SCMProvider,SCMStore,SCMWebhooks,SCMWebhookCheck

// SCMToken is an OAuth token of a source-control provider.
type SCMToken struct {
	AccessToken  string
	TokenType    string
	Scope        string
	RefreshToken string
	Expiry       *time.Time
}

// String describes the token without its secrets.
func (t SCMToken) String() string { return "SCMToken{" + t.TokenType + " " + t.Scope + "}" }

// GoString is String, so %#v does not print the secrets either.
func (t SCMToken) GoString() string { return t.String() }

// SCMUser is who a token belongs to at the provider.
type SCMUser struct {
	ID    int64
	Login string
}

// SCMRepo is a repository as the provider describes it.
type SCMRepo struct {
	ProviderID    int64
	FullName      string
	Owner         string
	Name          string
	Description   string
	DefaultBranch string
	HTMLURL       string
	Private       bool
	PushedAt      *time.Time
}

// SCMCommit is a commit.
type SCMCommit struct {
	SHA         string
	Repo        string // full name, for search results
	Message     string
	AuthorName  string
	AuthorEmail string
	AuthorLogin string
	HTMLURL     string
	CommittedAt time.Time
}

// SCMPull is a pull request.
type SCMPull struct {
	Number      int
	Title       string
	State       string
	AuthorLogin string
	HTMLURL     string
	HeadRef     string
	BaseRef     string
	Draft       bool
	Merged      bool
	CreatedAt   time.Time
	UpdatedAt   time.Time
	MergedAt    *time.Time
	ClosedAt    *time.Time
}

// SCMTreeEntry is one file of a repository's tree.
type SCMTreeEntry struct {
	Path string // slash-separated, from the repository's root
	Size int64  // in bytes
}

// SCMFile is the content of one file of a repository, at most the bound
// it was read with.
type SCMFile struct {
	Path    string
	Content string
	// Size is the whole file's size; Truncated is set when Content holds
	// less than that.
	Size      int64
	Truncated bool
}

// SCMActivity is one thing that happened in a repository: a push, a pull
// request opened or merged, a branch or tag created or deleted, a release,
// a comment. Source says where devpilot learnt it: "api" or "webhook".
type SCMActivity struct {
	ID      string
	RepoID  int64 // the provider's repository id
	Kind    string
	Action  string
	Actor   string
	Ref     string
	Summary string
	URL     string
	// SHA is the commit the entry leads to (a push's head commit), or "".
	SHA        string
	At         time.Time
	Source     string
	DeliveryID string
}

// SCMProvider reads a source-control provider with a user's token and runs
// its OAuth web flow. Page cursors are opaque. Errors: rate_limited with
// RetryAfter; upstream with Code "token_revoked" when the token is no longer
// accepted; not_found; unavailable or timeout when the provider does not
// answer well.
type SCMProvider interface {
	// AuthorizeURL is where to send the user to grant access, with state and
	// the PKCE S256 challenge of the verifier. Errors: unavailable when the
	// provider is not configured (the message names what to set).
	AuthorizeURL(state, codeChallenge, redirectURI string) (string, error)
	// Exchange trades an authorization code (and the PKCE verifier) for a token.
	Exchange(ctx context.Context, code, codeVerifier, redirectURI string) (SCMToken, error)
	// User returns who the token belongs to.
	User(ctx context.Context, token string) (SCMUser, error)
	// ListRepos returns the repositories the token can see.
	ListRepos(ctx context.Context, token string, page Page) ([]SCMRepo, string, error)
	// ListCommits returns a repository's commits, newest first.
	ListCommits(ctx context.Context, token, owner, repo string, page Page) ([]SCMCommit, string, error)
	// ListPulls returns a repository's pull requests, newest first.
	ListPulls(ctx context.Context, token, owner, repo string, page Page) ([]SCMPull, string, error)
	// SearchCommits searches commits the token can see.
	SearchCommits(ctx context.Context, token, query string, page Page) ([]SCMCommit, string, error)
	// ListActivity returns a repository's recent activity, newest first.
	ListActivity(ctx context.Context, token, owner, repo string, page Page) ([]SCMActivity, string, error)
	// ReadTree returns the files of the repository at ref (the default
	// branch when ""), by path, and whether the provider cut the listing
	// short. Errors: not_found for an unknown repository or ref.
	ReadTree(ctx context.Context, token, owner, repo, ref string) (files []SCMTreeEntry, truncated bool, err error)
	// ReadFile returns the file at path and ref (the default branch when
	// ""), its content cut to maxBytes. Errors: not_found when there is no
	// such file; invalid for a path that is a directory or not a plain path.
	ReadFile(ctx context.Context, token, owner, repo, ref, path string, maxBytes int) (SCMFile, error)
	// CreateIssue opens an issue. Errors: not_found for an unknown
	// repository; invalid when the provider refuses the issue's fields;
	// forbidden when the token may not write issues.
	CreateIssue(ctx context.Context, token, owner, repo string, in SCMIssueInput) (SCMIssue, error)
	// UpdateIssue replaces an issue's title, body and labels, leaving its
	// state alone. Errors: CreateIssue's; not_found for an unknown issue.
	UpdateIssue(ctx context.Context, token, owner, repo string, number int, in SCMIssueInput) (SCMIssue, error)
	// ListIssuesByLabel returns a page of the repository's issues (open and
	// closed, not pull requests) carrying label, oldest first, and the next
	// page's cursor.
	ListIssuesByLabel(ctx context.Context, token, owner, repo, label string, page Page) ([]SCMIssue, string, error)
	// ListLabels returns a page of the repository's labels and the next
	// page's cursor.
	ListLabels(ctx context.Context, token, owner, repo string, page Page) ([]SCMLabel, string, error)
	// CreateLabel creates a label. Errors: conflict when the repository has
	// a label of that name already; CreateIssue's.
	CreateLabel(ctx context.Context, token, owner, repo string, l SCMLabel) error
	// WriteFile creates or replaces a file in one commit (updating the
	// file's current version), unless it holds that content already, and
	// returns the file's web URL. Errors: not_found for an unknown
	// repository or branch; forbidden when the token cannot push; conflict
	// when the file changed meanwhile; invalid for a path that is not a
	// plain path.
	WriteFile(ctx context.Context, token, owner, repo string, w SCMFileWrite) (htmlURL string, err error)
}

// SCMIssue is an issue of a repository.
type SCMIssue struct {
	Number  int
	Title   string
	Body    string
	State   string // "open" or "closed"
	Labels  []string
	HTMLURL string
}

// SCMIssueInput is what an issue is opened or updated with.
type SCMIssueInput struct {
	Title  string
	Body   string
	Labels []string
}

// SCMLabel is a repository's issue label; Color is six hex digits.
type SCMLabel struct {
	Name        string
	Color       string
	Description string
}

// SCMFileWrite is one file written in one commit: on Branch ("" for the
// default branch), at Path, with Message.
type SCMFileWrite struct {
	Path    string
	Branch  string
	Content string
	Message string
}

// SCMWebhooks reads a provider's webhook deliveries: their signature, the
// encodings of their body and their payloads. It holds the provider's wire
// format, so that what reaches the core is typed and provider-neutral.
type SCMWebhooks interface {
	// CheckWebhook starts checking a delivery signed with signature (the
	// provider's signature header) under secret, whose body has
	// contentType: the raw body is written to the check as it is read, so
	// that a body need not be held whole before it is authenticated.
	// Errors: unauthenticated when signature is missing (Message says so)
	// or not of the provider's form; unsupported_media_type for a content
	// type the provider does not send.
	CheckWebhook(signature, contentType string, secret []byte) (SCMWebhookCheck, error)
	// ParseWebhook reads the JSON payload of a delivery of event into what
	// devpilot records of it: nil for an event it does not record. It takes
	// nothing on trust: text is returned as the payload holds it. Errors:
	// malformed when the payload cannot be read as event (reading it again
	// would not help).
	ParseWebhook(event string, payload []byte) (*SCMWebhookEvent, error)
}

// SCMWebhookCheck checks one delivery's signature over the raw body written
// to it.
type SCMWebhookCheck interface {
	io.Writer
	// Verify reports whether what was written is signed. Errors:
	// unauthenticated when it is not.
	Verify() error
	// Payload returns the JSON payload of the raw body (all that was
	// written), decoded from its content type. Errors: malformed when the
	// body is not of its content type, or the payload is not JSON.
	Payload(body []byte) ([]byte, error)
}

// SCMWebhookEvent is a webhook payload as devpilot records it: the fields
// of the events it keeps (push, pull_request, create, delete, release,
// issue_comment), whatever the provider. Text is as the payload holds it,
// unbounded and uncleaned; a field the payload lacks is zero.
type SCMWebhookEvent struct {
	Kind    string // the event's name
	Action  string // what happened within it ("opened", "published", ...)
	RepoID  int64  // the provider's repository id
	RepoURL string // the repository's web page
	Actor   string // the sender's login
	// Ref is a push's full ref ("refs/heads/main"), the name of the ref a
	// create or delete event is about, a pull request's head branch, or a
	// release's tag.
	Ref     string
	RefType string // create and delete: "branch" or "tag"
	// A push's: whether it created, deleted or force-moved the ref, the
	// compare URL, the commit the ref now points to, its head commit's id
	// and how many commits it carries.
	Created, Deleted, Forced bool
	Compare                  string
	After                    string
	HeadCommit               string
	Commits                  int
	// Number is a pull request's or a commented issue's number: the
	// payload's own for a pull request, else the pull request's.
	Number int
	Title  string // a pull request's
	Merged bool   // a pull request's
	// URL is the web page of the pull request, the release or the comment.
	URL string
	// HasPull, HasRelease and HasIssue report whether the payload holds the
	// pull request, the release or the issue at all.
	HasPull, HasRelease, HasIssue bool
}

// OAuthState is a pending OAuth authorisation: single use, bound to the
// user who started it and to the browser they started it in, expiring.
type OAuthState struct {
	State         string
	OrgID         string
	UserID        string
	CodeVerifier  string
	RedirectAfter string
	// BindingHash is the hex SHA-256 of the secret the starting browser
	// keeps (a cookie); the callback must present that secret. "" binds to
	// no browser.
	BindingHash string
	CreatedAt   time.Time
	ExpiresAt   time.Time
}

// SCM connection statuses.
const (
	SCMActive = "active"
	SCMBroken = "broken"
)

// SCMConnection is a user's link to a provider account, holding the sealed
// token.
type SCMConnection struct {
	ID       string
	OrgID    string
	UserID   string
	Provider string
	Login    string
	// Scopes are the OAuth scopes the provider granted the token, as it
	// named them ("repo,read:user"); "" when it named none.
	Scopes      string
	SealedToken string
	Status      string
	Error       string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// Repository is a repository a connection can see, with devpilot's id.
type Repository struct {
	ID           string
	OrgID        string
	UserID       string
	ConnectionID string
	SCMRepo
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Webhook delivery statuses.
const (
	DeliveryPending   = "pending"
	DeliveryProcessed = "processed"
	DeliveryIgnored   = "ignored"
	DeliveryFailed    = "failed"
)

// WebhookDelivery is one webhook delivery, stored before it is processed.
type WebhookDelivery struct {
	ID          string // the provider's delivery id (X-GitHub-Delivery)
	Event       string
	Payload     []byte
	Status      string
	Error       string
	ReceivedAt  time.Time
	ProcessedAt *time.Time
}

// DeliveryFinish is how processing one webhook delivery ended: its final
// status (processed, ignored or failed) and, for a failure, the reason.
type DeliveryFinish struct {
	ID     string
	Status string
	Error  string
}

// WebhookDigest records that a delivery whose raw body has a digest was
// received, so that the same signed body replayed under another delivery id
// or another event's name can be recognised.
type WebhookDigest struct {
	Digest     string // hex SHA-256 of the raw body (what the signature covers)
	DeliveryID string
	At         time.Time
}

// SCMStore keeps OAuth states, connections, repositories, webhook deliveries
// and repository activity.
type SCMStore interface {
	// CreateOAuthState stores a pending authorisation.
	CreateOAuthState(ctx context.Context, s OAuthState) error
	// ConsumeOAuthState removes and returns the state, so it works once.
	// Errors: not_found when absent or used; gone (Code "expired") when it
	// expired before now (it is removed all the same).
	ConsumeOAuthState(ctx context.Context, state string, now time.Time) (OAuthState, error)
	// SaveConnection stores the owner's connection to c.Provider, replacing
	// an earlier one (keeping its id, taking its login, scopes, token,
	// status and error from c), and returns it.
	SaveConnection(ctx context.Context, c SCMConnection) (SCMConnection, error)
	// GetConnection returns the owner's connection to the provider; not_found
	// when there is none.
	GetConnection(ctx context.Context, owner Owner, provider string) (SCMConnection, error)
	// MarkConnectionBroken records that the connection's token stopped working.
	MarkConnectionBroken(ctx context.Context, id, reason string, at time.Time) error
	// SaveRepositories upserts the repositories a connection sees (keyed by
	// connection and provider id, keeping devpilot's ids) and returns them.
	SaveRepositories(ctx context.Context, connectionID string, repos []Repository, at time.Time) ([]Repository, error)
	// PruneRepositories deletes the connection's repositories last saved
	// before the time given (those a complete listing saved at that time no
	// longer showed) and returns how many it deleted.
	PruneRepositories(ctx context.Context, connectionID string, savedBefore time.Time) (int, error)
	// ListRepositories returns the owner's repositories by full name, and the
	// next page's cursor; invalid for a bad cursor.
	ListRepositories(ctx context.Context, owner Owner, page Page) ([]Repository, string, error)
	// GetRepository returns the owner's repository; not_found when absent or
	// another owner's.
	GetRepository(ctx context.Context, owner Owner, id string) (Repository, error)
	// RecordDelivery stores a delivery unless one with its id exists; it
	// reports whether it stored it. It is RecordDeliveries of one delivery.
	RecordDelivery(ctx context.Context, d WebhookDelivery) (bool, error)
	// RecordDeliveries stores each delivery unless one with its id exists,
	// all or nothing, and reports for each whether it stored it (stored has
	// the length of ds). Of deliveries sharing an id, stored before or in
	// ds, only the first is stored. It fails as RecordDelivery does, storing
	// none of ds.
	RecordDeliveries(ctx context.Context, ds []WebhookDelivery) (stored []bool, err error)
	// ClaimWebhookDigests records each digest unless an equal one was
	// recorded at or after since (a replay within the window), all or
	// nothing, and reports for each whether it recorded it (claimed has the
	// length of ds). A digest recorded before since is recorded again, with
	// the new delivery id and time. Of equal digests within ds only the
	// first can be claimed; of concurrent calls claiming one digest, at most
	// one reports it claimed.
	ClaimWebhookDigests(ctx context.Context, ds []WebhookDigest, since time.Time) (claimed []bool, err error)
	// GetDelivery returns a delivery; not_found when absent.
	GetDelivery(ctx context.Context, id string) (WebhookDelivery, error)
	// GetDeliveries returns the deliveries of ids that exist, in the order
	// of ids, each once however often ids names it; an id without a
	// delivery is left out, without an error.
	GetDeliveries(ctx context.Context, ids []string) ([]WebhookDelivery, error)
	// FinishDelivery records how processing a delivery ended.
	FinishDelivery(ctx context.Context, id, status, errMsg string, at time.Time) error
	// FinishDeliveries records how processing each delivery ended, with at
	// as its ProcessedAt, all or nothing, as FinishDelivery does one; a
	// delivery that does not exist is skipped. Errors: invalid, finishing
	// none, when a status is not processed, ignored or failed.
	FinishDeliveries(ctx context.Context, fs []DeliveryFinish, at time.Time) error
	// AppendActivity stores activity entries, skipping any whose id exists.
	AppendActivity(ctx context.Context, entries ...SCMActivity) error
	// ListActivity returns the activity of a provider repository id, newest
	// first, and the next page's cursor; invalid for a bad cursor.
	ListActivity(ctx context.Context, repoID int64, page Page) ([]SCMActivity, string, error)
}
