// Package content is the core of devpilot's content engine: brand settings
// per project, briefs that ask for a piece of content, and content items
// generated from a brief and then edited and moved through review by people.
//
// Generate stores one item per variant in status generating and enqueues a
// job per item in one transaction; the worker calls RunGeneration, which asks
// the model for a draft that follows the project's brand settings and the
// brief, runs the brand checks (banned words, preferred terms, length) on it
// and stores it as a draft. People then edit it and move it through
// draft → in_review → approved → published; an edit of an approved item
// sends it back to draft. Every change of an item is guarded by its version.
package content

import (
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// Config tunes the content engine. Zero values take the defaults named.
type Config struct {
	// Model overrides the LLM adapter's model when not empty.
	Model string
	// MaxTokens bounds each model call; 0 leaves it to the provider.
	MaxTokens int
	// MaxAttempts bounds how often the queue runs a generation job (5); the
	// worker passes final=true to RunGeneration on the last one.
	MaxAttempts int
	// WatchPoll is how often WatchItem reads a watched item for a new state
	// (DefaultWatchPoll).
	WatchPoll time.Duration
	// AllowPrivateTargets lets publishing targets name loopback and
	// private addresses (tests, the sandbox); off by default.
	AllowPrivateTargets bool
	// PublishTries bounds the tries of one run of a publish job
	// (DefaultPublishTries); PublishBackoff is the first wait between them
	// (DefaultPublishBackoff); PublishJobAttempts bounds the runs of a
	// publish job (DefaultPublishJobAttempts).
	PublishTries       int
	PublishBackoff     time.Duration
	PublishJobAttempts int
}

// DefaultMaxAttempts is Config.MaxAttempts when it is not set.
const DefaultMaxAttempts = 5

// DefaultWatchPoll is Config.WatchPoll's default.
const DefaultWatchPoll = 250 * time.Millisecond

// The limits of the API, in characters (Unicode code points) for text and
// in entries for lists.
const (
	MaxProjectIDLen = 100

	MaxBrandNameLen   = 200
	MaxVoiceLen       = 2000
	MaxToneItems      = 20
	MaxToneLen        = 50
	MaxAudienceLen    = 1000
	MaxValues         = 20
	MaxValueLen       = 200
	MaxBannedWords    = 200
	MaxBannedWordLen  = 100
	MaxPreferredTerms = 200
	MaxTermLen        = 100
	MaxStyleGuideLen  = 20000
	MaxExamples       = 10
	MaxExampleLen     = 5000

	MaxTitleLen   = 200
	MaxGoalLen    = 2000
	MaxChannelLen = 50
	MaxFormatLen  = 50
	MaxKeywords   = 20
	MaxKeywordLen = 50
	MaxCTALen     = 200
	MaxNotesLen   = 5000
	MaxWordsBound = 20000
	MaxBodyLen    = 100000
	MaxVariants   = 3
	DefaultFormat = "article"

	DefaultPageLimit = ports.DefaultPageLimit
	MaxPageLimit     = ports.MaxPageLimit
)

// Error codes set as ports.Error.Code.
const (
	// CodeStaleVersion (precondition_failed): the version named is not the
	// stored one; nothing was changed.
	CodeStaleVersion = "stale_version"
	// CodeVersionRequired (precondition_required): an update of a content
	// item must name the version it was made from.
	CodeVersionRequired = "version_required"
	// CodeInvalidTransition (conflict): the item's status cannot move to the
	// status asked for.
	CodeInvalidTransition = "invalid_transition"
	// CodeNotEditable (conflict): the item's text cannot be changed in its
	// status.
	CodeNotEditable = "not_editable"
)

// Codes of ports.ContentError on a failed item, besides the model error's
// own code (such as invalid_request, context_length or content_filter).
const (
	// CodeEmptyDraft: the model answered without any text for the body.
	CodeEmptyDraft = "empty_draft"
)

func (c Config) withDefaults() Config {
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.PublishTries <= 0 {
		c.PublishTries = DefaultPublishTries
	}
	if c.PublishBackoff <= 0 {
		c.PublishBackoff = DefaultPublishBackoff
	}
	if c.PublishJobAttempts <= 0 {
		c.PublishJobAttempts = DefaultPublishJobAttempts
	}
	if c.WatchPoll <= 0 {
		c.WatchPoll = DefaultWatchPoll
	}
	return c
}

// Deps are the ports a Service needs. Logger nil discards logs.
type Deps struct {
	Store  ports.ContentStore
	Tx     ports.Transactor
	Jobs   ports.JobQueue
	LLM    ports.LLM
	Clock  ports.Clock
	IDs    ports.IDs
	Logger *slog.Logger

	// Publishing: Publish keeps targets and publications, Cipher seals
	// their secrets, Publisher calls webhook and WordPress targets, Repos
	// writes github_file targets (nil: those cannot be used), Audit records
	// the writes (nil: not recorded), Random makes webhook secrets (nil:
	// crypto/rand).
	Publish   ports.PublishStore
	Cipher    ports.Cipher
	Publisher ports.ContentPublisher
	Repos     ports.RepoFiles
	Audit     ports.AuditStore
	Random    io.Reader
	// Users names the person who edits an item's text by hand (their
	// email, recorded on the item); nil records only their id.
	Users ports.UserStore
}

// Service is the content engine's use cases. Everything belongs to the
// caller's organisation: another org's brief or item is not_found. Every
// method but RunGeneration acts for the principal in ctx and fails with
// unauthenticated without one.
type Service struct {
	cfg Config
	d   Deps
	log *slog.Logger
}

// New returns a Service over the given ports.
func New(cfg Config, d Deps) *Service {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{cfg: cfg.withDefaults(), d: d, log: d.Logger.With("core", "content")}
}

var projectIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]+$`)

// checkProjectID returns the problem with a project id, if any.
func checkProjectID(id string) *ports.FieldError {
	switch {
	case id == "":
		return &ports.FieldError{Field: "project_id", Reason: "required"}
	case len(id) > MaxProjectIDLen || !projectIDPattern.MatchString(id):
		return &ports.FieldError{Field: "project_id",
			Reason: fmt.Sprintf("must be 1 to %d characters of A-Z, a-z, 0-9, '.', '_', ':' and '-'", MaxProjectIDLen)}
	}
	return nil
}

func projectIDError(id string) error {
	if fe := checkProjectID(id); fe != nil {
		return ports.Invalid("invalid project id", *fe)
	}
	return nil
}

func invalid(fields []ports.FieldError) error {
	if len(fields) == 0 {
		return nil
	}
	return ports.Invalid("invalid request", fields...)
}

// checkPage applies the default page size and bounds it.
func checkPage(page ports.Page) (ports.Page, error) { return page.Checked() }

func itemNotFound(id string) error  { return ports.NotFound("content item", id) }
func briefNotFound(id string) error { return ports.NotFound("content brief", id) }
