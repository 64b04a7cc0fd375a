package ports

import (
	"context"
	"encoding/json"
	"time"
)

//go:generate go tool mockgen -typed -destination ../testkit/mocks/spec.go -package mocks . SpecStore,StandardStore

// Stage is one step of the specification pipeline.
type Stage string

// The stages, in pipeline order (see Stages).
const (
	StageScope   Stage = "scope"
	StagePRD     Stage = "prd"
	StageEpics   Stage = "epics"
	StageStories Stage = "stories"
	StagePRPs    Stage = "prps"
)

// Stages lists the stages in order.
var Stages = []Stage{StageScope, StagePRD, StageEpics, StageStories, StagePRPs}

// SpecStatus is where a specification session stands.
type SpecStatus string

// The statuses of a specification session.
const (
	SpecDraft      SpecStatus = "draft"
	SpecGenerating SpecStatus = "generating"
	SpecReady      SpecStatus = "ready"
	SpecFailed     SpecStatus = "failed"
)

// InputKind says what kind of raw material an input is.
type InputKind string

// The kinds of input.
const (
	InputDocument   InputKind = "document"
	InputTranscript InputKind = "transcript"
	InputNote       InputKind = "note"
)

// SpecError is why the last generation of a session failed.
type SpecError struct {
	Stage   Stage  `json:"stage"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// SpecSession is a specification session: raw inputs turned, one stage per
// generate call, into versioned artifacts. It belongs to one user.
type SpecSession struct {
	ID     string
	OrgID  string
	UserID string
	Name   string
	// RepoID is devpilot's id of the connected repository the session is
	// grounded in (its PRPs cite that repository's files), or "".
	RepoID string
	Status SpecStatus
	// CurrentStage is the last stage with a current artifact ("" before scope).
	CurrentStage Stage
	// Generating is the stage being generated, and GenerationID the generate
	// call doing it, while Status is generating.
	Generating   Stage
	GenerationID string
	Error        *SpecError
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// SpecInput is one piece of raw material of a session.
type SpecInput struct {
	ID          string
	SessionID   string
	Kind        InputKind
	Title       string
	ContentType string
	Size        int64
	Content     string
	CreatedAt   time.Time
}

// SpecArtifact is one version of a stage's output: structured Data (JSON
// matching the stage's schema), Content rendered from it as Markdown, and the
// traceability Checks found when it was generated. Stale is set when an
// earlier stage was regenerated after it. PromptVersion names the stage's
// instructions and schema it was asked with (a short hash; "" for an
// artifact made before versions were recorded), and Generation measures how
// it was made.
type SpecArtifact struct {
	ID            string
	SessionID     string
	Stage         Stage
	Version       int
	Format        string
	Content       string
	Data          json.RawMessage
	Checks        []string
	Model         string
	GenerationID  string
	Stale         bool
	CreatedAt     time.Time
	PromptVersion string
	Generation    SpecGeneration
	// EditedBy is the id of the user who wrote this version by hand
	// (SpecStore.SaveEditedArtifact); "" for a version a model generated.
	// An edited version has no Model, PromptVersion or Generation.
	EditedBy string
	// EditorName is EditedBy's name as devpilot knows them (their email
	// address), filled in by the specification engine when it reads versions
	// for a caller of the same organisation; stores neither keep nor set it.
	EditorName string
}

// SpecGeneration is the statistics of the generation of one artifact, all
// zero for an artifact made before they were recorded. An ask is one
// request for the stage's answer with its retries and repair turn: one in
// single-call mode, one per epic (stories) or per story (PRPs) in batch
// mode.
type SpecGeneration struct {
	// Calls counts the stage's model calls: every ask's first call, its
	// retry after an invalid answer and its repair turn, and the calls that
	// digested the inputs for it.
	Calls int
	// Batches counts the stage's asks that got an answer.
	Batches int
	// FirstTryValid counts the asks whose first answer was valid (JSON
	// matching the stage's schema and id rules).
	FirstTryValid int
	// InvalidAnswers counts the answers of the asks that were not valid.
	InvalidAnswers int
	// RepairTurns counts the turns that sent a valid answer's findings back
	// to the model.
	RepairTurns int
	// PromptTokens and CompletionTokens sum the usage of every call.
	PromptTokens     int
	CompletionTokens int
	// DurationMS is the time the stage took to generate, in milliseconds.
	DurationMS int64
	// FindingsByKind counts the findings left on the artifact (its Checks)
	// by kind (unknown_id, uncovered, dependency, …; repository for a
	// repository that could not be read).
	FindingsByKind map[string]int
	// Temperature and Seed are the sampling settings the calls were sent
	// with; nil when left to the provider.
	Temperature *float64
	Seed        *int64
}

// SpecInputLimits bound a session's inputs for SpecStore.AddSpecInput; a
// zero field does not bound.
type SpecInputLimits struct {
	MaxInputs int   // how many inputs a session may hold
	MaxBytes  int64 // how many bytes (the sum of Size) they may hold
}

// SpecInputTotals is what a session's inputs hold: how many, and how many
// bytes in all.
type SpecInputTotals struct {
	Inputs int
	Bytes  int64
}

// CodeSpecInputsFull is the code of the conflict SpecStore.AddSpecInput
// returns for an input that would take its session past the limits given.
const CodeSpecInputsFull = "spec_inputs_full"

// ErrSpecInputsFull matches (errors.Is) that conflict.
var ErrSpecInputsFull = &Error{Kind: KindConflict, Code: CodeSpecInputsFull}

// CodeSpecGenerating is the code of the conflict SpecStore.DeleteSpecSession
// returns for a session that is generating.
const CodeSpecGenerating = "generation_running"

// ErrSpecGenerating matches (errors.Is) that conflict.
var ErrSpecGenerating = &Error{Kind: KindConflict, Code: CodeSpecGenerating}

// CodeSpecExportRunning is the code of the conflict
// SpecStore.DeleteSpecSession returns for a session with an issue export
// queued or running.
const CodeSpecExportRunning = "export_running"

// ErrSpecExportRunning matches (errors.Is) that conflict.
var ErrSpecExportRunning = &Error{Kind: KindConflict, Code: CodeSpecExportRunning}

// SpecStore keeps specification sessions, their inputs and artifacts.
type SpecStore interface {
	// CreateSpecSession stores a new session with its first inputs, in one step.
	CreateSpecSession(ctx context.Context, s SpecSession, inputs []SpecInput) error
	// GetSpecSession returns the owner's session; not_found when absent or
	// another owner's.
	GetSpecSession(ctx context.Context, owner Owner, id string) (SpecSession, error)
	// ListSpecSessions returns the owner's sessions, most recently updated
	// first, and the next page's cursor ("" at the end); invalid for a bad cursor.
	ListSpecSessions(ctx context.Context, owner Owner, page Page) ([]SpecSession, string, error)
	// SetSpecRepository links the owner's session to the repository repoID
	// ("" unlinks it) at the time given and returns the session; not_found
	// as GetSpecSession.
	SetSpecRepository(ctx context.Context, owner Owner, id, repoID string, at time.Time) (SpecSession, error)
	// RenameSpecSession sets the owner's session's name, and its UpdatedAt
	// to at, and returns the session; not_found as GetSpecSession.
	RenameSpecSession(ctx context.Context, owner Owner, id, name string, at time.Time) (SpecSession, error)
	// DeleteSpecSession deletes the owner's session with everything it
	// owns (its inputs, artifacts, digest, issue exports and the record of
	// the issues they created) in one step, unless it is generating, and
	// returns it as it was. Errors: not_found as GetSpecSession; conflict
	// (code CodeSpecGenerating, ErrSpecGenerating) while it is generating,
	// or (code CodeSpecExportRunning, ErrSpecExportRunning) while an issue
	// export of it is queued or running; then nothing is deleted.
	DeleteSpecSession(ctx context.Context, owner Owner, id string) (SpecSession, error)
	// AddSpecInput stores an input of the owner's session, unless the
	// session would then pass limits: then it is a conflict (code
	// CodeSpecInputsFull) and nothing is stored. It returns what the
	// session held before, whether or not in was stored. The check and
	// the insert are one atomic step, so concurrent adds never pass the
	// limits. Errors: not_found as GetSpecSession; conflict when in's id
	// exists.
	AddSpecInput(ctx context.Context, owner Owner, in SpecInput, limits SpecInputLimits) (SpecInputTotals, error)
	// ListSpecInputs returns a session's inputs with their content, oldest first.
	ListSpecInputs(ctx context.Context, sessionID string) ([]SpecInput, error)
	// StartGeneration atomically moves the owner's session, when it is not
	// generating, to generating stage with generationID, clearing Error, and
	// returns it. Errors: not_found as GetSpecSession; conflict when a
	// generation is running.
	StartGeneration(ctx context.Context, owner Owner, id string, stage Stage, generationID string, at time.Time) (SpecSession, error)
	// CompleteGeneration stores the artifact of generation a.GenerationID as
	// the next version of its stage, marks every artifact of a later stage
	// stale, and sets the session ready with CurrentStage a.Stage — all in one
	// step, and only while the session is still generating that generation.
	// Errors: conflict when an artifact of that generation is stored already
	// or the session is no longer generating it; not_found for an unknown
	// session.
	CompleteGeneration(ctx context.Context, a SpecArtifact, at time.Time) error
	// FailGeneration sets the session failed with e, only while it is still
	// generating generationID; conflict otherwise.
	FailGeneration(ctx context.Context, sessionID, generationID string, e SpecError, at time.Time) error
	// SaveEditedArtifact stores a, a version of its stage written by hand
	// (a.EditedBy set), as version base+1 of the stage of the owner's
	// session, marks every artifact of a later stage stale, and sets the
	// session's CurrentStage to a.Stage and its UpdatedAt to at — all in
	// one step, and only while the session is not generating and base is
	// still the stage's latest version. a.Version and a.Stale are ignored;
	// a zero CreatedAt is stored as at. It returns a as stored.
	// Errors: not_found as GetSpecSession; conflict while the session is
	// generating, or when a's id or GenerationID exists; precondition_failed
	// when the stage's latest version is not base (none is version 0).
	SaveEditedArtifact(ctx context.Context, owner Owner, a SpecArtifact, base int, at time.Time) (SpecArtifact, error)
	// ListArtifacts returns every version of every artifact of a session, in
	// stage order, then version order.
	ListArtifacts(ctx context.Context, sessionID string) ([]SpecArtifact, error)
}

// Standard is an organisation's standing guidance for the stages it applies to.
type Standard struct {
	ID        string
	OrgID     string
	Title     string
	Body      string
	AppliesTo []Stage
	CreatedAt time.Time
	UpdatedAt time.Time
}

// StandardStore keeps organisation standards.
type StandardStore interface {
	// CreateStandard stores a new standard.
	CreateStandard(ctx context.Context, s Standard) error
	// GetStandard returns the org's standard; not_found when absent or
	// another org's.
	GetStandard(ctx context.Context, orgID, id string) (Standard, error)
	// ListStandards returns the org's standards, oldest first.
	ListStandards(ctx context.Context, orgID string) ([]Standard, error)
	// UpdateStandard replaces the org's standard's title, body and stages;
	// not_found as GetStandard.
	UpdateStandard(ctx context.Context, s Standard) error
	// DeleteStandard deletes the org's standard; not_found as GetStandard.
	DeleteStandard(ctx context.Context, orgID, id string) error
}
