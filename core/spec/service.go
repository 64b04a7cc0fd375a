// Package spec is the core of devpilot's specification engine (PSE): raw
// material (documents, transcripts, notes) turned, one stage per generate
// call, into Scope → PRD → Epics → Stories → PRPs, shaped by the
// organisation's standards.
//
// A session holds inputs and versioned artifacts. Generate moves a session to
// generating and enqueues a job in one transaction; the worker calls
// RunGeneration, which asks the model for the stage's structured output,
// validates it against the stage's JSON Schema and id rules, checks its
// traceability against the earlier stages, renders it as Markdown and stores
// it as the stage's next version. Regenerating an earlier stage marks every
// later artifact stale.
package spec

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"github.com/devpilot/devpilot/ports"
)

// Config tunes the specification engine. Zero values take the defaults named.
type Config struct {
	// MaxInputBytes bounds the content of one input (1 MiB).
	MaxInputBytes int64
	// MaxSessionBytes bounds the content of all inputs of a session (8 MiB).
	MaxSessionBytes int64
	// Model overrides the LLM adapter's model when not empty.
	Model string
	// MaxTokens bounds each model call's output; 0 leaves it to the
	// provider. It is the spec engine's own, not the chat's.
	MaxTokens int
	// CallTimeout bounds each model call of a stage (a call, its repair
	// turn, a batch's call, a digest step) on its own; 0 leaves it to the
	// LLM adapter.
	CallTimeout time.Duration
	// BatchConcurrency, when above 0, generates stories one call per epic
	// and PRPs one call per story, that many calls at a time, each given
	// only its own context (with a context pack: the raw passages its
	// requirements cite, the scope's constraints, the PRD's non-goals, the
	// stories around it and those it depends on), an epic's call after
	// those of the epics it depends on and a story's after those of the
	// stories it depends on, and assembles them into one stage version; 0
	// asks for each stage in one call.
	BatchConcurrency int
	// SCMProvider names the provider of the connections linked repositories
	// are read with ("github").
	SCMProvider string
	// MaxAttempts bounds how often the queue runs a generation job (5); the
	// worker passes final=true to RunGeneration on the last one.
	MaxAttempts int
	// ContextBudget bounds the estimated tokens of a stage's request
	// (DefaultContextBudget; at least 2000): a stage whose request with the
	// raw inputs does not fit is given their digest instead (made once);
	// one that fits is given the inputs verbatim. A context pack takes at
	// most a quarter of it.
	ContextBudget int
	// WatchPoll is how often WatchSession reads a watched session for a new
	// state (DefaultWatchPoll).
	WatchPoll time.Duration
	// Temperature is the sampling temperature of each stage's calls (its
	// asks, retries, repair turns and the digest calls made for it), from 0
	// to 2; a stage not in it leaves the temperature to the provider.
	Temperature map[ports.Stage]float64
	// Seed, when not nil, is sent with every stage's calls, for providers
	// that sample deterministically given one.
	Seed *int64
}

// DefaultWatchPoll is Config.WatchPoll's default.
const DefaultWatchPoll = 250 * time.Millisecond

// The defaults of Config.
const (
	DefaultMaxInputBytes   = 1 << 20
	DefaultMaxSessionBytes = 8 << 20
	DefaultMaxAttempts     = 5
)

// The limits of the API.
const (
	MaxNameLen          = 200
	MaxTitleLen         = 200
	MaxContentTypeLen   = 255
	MaxStandardTitleLen = 200
	MaxStandardBodyLen  = 20000
	DefaultPageLimit    = ports.DefaultPageLimit
	MaxPageLimit        = ports.MaxPageLimit
)

// Error codes set as ports.Error.Code, and as SpecError.Code on a failed session.
const (
	// CodeNoInputs (invalid): generate was called on a session without inputs.
	CodeNoInputs = "no_inputs"
	// CodeGenerationRunning (conflict): the session is generating already.
	CodeGenerationRunning = "generation_running"
	// CodePipelineComplete (conflict): every stage is generated and no stage was named.
	CodePipelineComplete = "pipeline_complete"
	// CodeStageNotReady (conflict): the stage's predecessor has no current artifact.
	CodeStageNotReady = "stage_not_ready"
	// CodeInvalidOutput (SpecError): the model's answer failed validation twice.
	CodeInvalidOutput = "invalid_output"
)

func (c Config) withDefaults() Config {
	if c.MaxInputBytes <= 0 {
		c.MaxInputBytes = DefaultMaxInputBytes
	}
	if c.MaxSessionBytes <= 0 {
		c.MaxSessionBytes = DefaultMaxSessionBytes
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.ContextBudget <= 0 {
		c.ContextBudget = DefaultContextBudget
	}
	c.ContextBudget = max(c.ContextBudget, minContextBudget)
	if c.SCMProvider == "" {
		c.SCMProvider = "github"
	}
	if c.WatchPoll <= 0 {
		c.WatchPoll = DefaultWatchPoll
	}
	return c
}

// Deps are the ports a Service needs. Logger nil discards logs. Repos, SCM
// and Cipher read the repository a session is linked to; without them
// sessions cannot be linked and PRPs are not grounded.
type Deps struct {
	Specs     ports.SpecStore
	Standards ports.StandardStore
	Tx        ports.Transactor
	Jobs      ports.JobQueue
	LLM       ports.LLM
	// Digests keeps the digests of inputs too long for the model; nil
	// digests them again for every stage that needs it.
	Digests ports.SpecDigestStore
	Clock   ports.Clock
	IDs     ports.IDs
	Logger  *slog.Logger
	Repos   ports.SCMStore
	SCM     ports.SCMProvider
	Cipher  ports.Cipher
	// Exports keeps the exports of sessions to repository issues; without
	// it (or Repos, SCM and Cipher) exporting to issues is unavailable.
	Exports ports.IssueExportStore
	// Observer hears each stage stored (nil: ports.NopObserver).
	Observer ports.Observer
	// Audit records renames and deletes of sessions (nil: not recorded).
	Audit ports.AuditStore
	// Users names the authors of versions edited by hand (EditorName);
	// nil leaves them unnamed.
	Users ports.UserStore
}

// Service is the specification engine's use cases. Every method but
// RunGeneration acts for the principal in ctx and fails with unauthenticated
// without one.
type Service struct {
	cfg Config
	d   Deps
	log *slog.Logger
	// refusedTokens is the fewest estimated tokens of a stage request the
	// provider refused as too long for its window (0: none): a request as
	// long is asked from the digest without being sent first.
	refusedTokens atomic.Int64
}

// New returns a Service over the given ports.
func New(cfg Config, d Deps) *Service {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Observer == nil {
		d.Observer = ports.NopObserver{}
	}
	cfg.Temperature = maps.Clone(cfg.Temperature)
	return &Service{cfg: cfg.withDefaults(), d: d, log: d.Logger.With("core", "spec")}
}

func invalid(fields []ports.FieldError) error {
	if len(fields) == 0 {
		return nil
	}
	return ports.Invalid("invalid request", fields...)
}

// knownStage reports whether st is one of ports.Stages.
func knownStage(st ports.Stage) bool { return stageIndex(st) >= 0 }

func stageIndex(st ports.Stage) int { return slices.Index(ports.Stages, st) }

// nextStage is the stage after current (scope when current is ""), and ""
// after prps.
func nextStage(current ports.Stage) ports.Stage {
	i := stageIndex(current) + 1
	if i >= len(ports.Stages) {
		return ""
	}
	return ports.Stages[i]
}

// previousStage is the stage before st, "" for scope.
func previousStage(st ports.Stage) ports.Stage {
	if i := stageIndex(st); i > 0 {
		return ports.Stages[i-1]
	}
	return ""
}

func stageList() string {
	return fmt.Sprintf("%s, %s, %s, %s or %s", ports.Stages[0], ports.Stages[1], ports.Stages[2], ports.Stages[3], ports.Stages[4])
}
