package spec

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/devpilot/devpilot/core/internal/genjob"
	"github.com/devpilot/devpilot/ports"
)

// GenerateStageArgs is the background job that generates one stage of a
// session for one generate call.
type GenerateStageArgs struct {
	SessionID    string      `json:"session_id"`
	OrgID        string      `json:"org_id"`
	UserID       string      `json:"user_id"`
	Stage        ports.Stage `json:"stage"`
	GenerationID string      `json:"generation_id"`
	// Through, when later than Stage, is the last stage of a chain: once
	// Stage is stored, the next stage's generation starts in the same
	// transaction, with its own job, until Through is done or a stage
	// fails. "" generates Stage alone.
	Through ports.Stage `json:"through,omitempty"`
}

// Kind names the job for the queue.
func (GenerateStageArgs) Kind() string { return "spec.generate_stage" }

// Generate starts generating a stage of the caller's session: stage, or the
// next one when stage is "". Regenerating an earlier stage is allowed; it
// makes a new version and, once stored, marks every later artifact stale. The
// session moves to generating and the job that does the work is enqueued in
// one transaction, so the job exists exactly when the state changed. It
// returns the session as it now stands.
//
// Errors: invalid (field stage) for an unknown stage; not_found when the
// session is absent or another's; invalid (no_inputs) when the session has no
// inputs; conflict (generation_running) while a generation runs; conflict
// (pipeline_complete) when no stage is named and prps is done; conflict
// (stage_not_ready) when the stage before the one asked for has no artifact,
// or only a stale one.
func (s *Service) Generate(ctx context.Context, sessionID string, stage ports.Stage) (ports.SpecSession, error) {
	return s.GenerateThrough(ctx, sessionID, stage, "")
}

// GenerateThrough is Generate that goes on, in the background, through the
// stage through: each stage, once stored, starts the next one's generation
// in the same transaction (the session stays generating between them), and
// the first stage that fails stops the chain with its reason on the
// session. through "" generates one stage, as Generate does. Regenerating
// an earlier stage through a later one regenerates the stages between,
// which its new version made stale.
//
// Errors: Generate's; invalid (field through) for an unknown stage or one
// before the stage generated first.
func (s *Service) GenerateThrough(ctx context.Context, sessionID string, stage, through ports.Stage) (ports.SpecSession, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return ports.SpecSession{}, err
	}
	if stage != "" && !knownStage(stage) {
		return ports.SpecSession{}, ports.Invalid("unknown stage", ports.FieldError{Field: "stage", Reason: "must be one of " + stageList()})
	}
	if through != "" && !knownStage(through) {
		return ports.SpecSession{}, ports.Invalid("unknown stage", ports.FieldError{Field: "through", Reason: "must be one of " + stageList()})
	}
	if !ports.IsID(sessionID) {
		return ports.SpecSession{}, ports.NotFound("specification session", sessionID)
	}
	sess, err := s.d.Specs.GetSpecSession(ctx, p.Owner(), sessionID)
	if err != nil {
		return ports.SpecSession{}, err
	}
	if sess.Status == ports.SpecGenerating {
		return ports.SpecSession{}, generationRunning(sess, nil)
	}
	inputs, err := s.d.Specs.ListSpecInputs(ctx, sessionID)
	if err != nil {
		return ports.SpecSession{}, err
	}
	if len(inputs) == 0 {
		return ports.SpecSession{}, &ports.Error{Kind: ports.KindInvalid, Code: CodeNoInputs,
			Message: fmt.Sprintf("specification session %s has no inputs; add a document, transcript or note first", sessionID)}
	}
	if stage == "" {
		if stage = nextStage(sess.CurrentStage); stage == "" {
			return ports.SpecSession{}, &ports.Error{Kind: ports.KindConflict, Code: CodePipelineComplete,
				Message: fmt.Sprintf("specification session %s is complete; name a stage to regenerate it", sessionID)}
		}
	}
	if prev := previousStage(stage); prev != "" {
		arts, err := s.d.Specs.ListArtifacts(ctx, sessionID)
		if err != nil {
			return ports.SpecSession{}, err
		}
		if a, ok := currentArtifacts(arts)[prev]; !ok || a.Stale {
			return ports.SpecSession{}, &ports.Error{Kind: ports.KindConflict, Code: CodeStageNotReady,
				Message: fmt.Sprintf("stage %s needs a current %s artifact; generate %s first", stage, prev, prev)}
		}
	}
	if through != "" && stageIndex(through) < stageIndex(stage) {
		return ports.SpecSession{}, ports.Invalid("through is before the stage generated",
			ports.FieldError{Field: "through", Reason: fmt.Sprintf("must be %s or a later stage", stage)})
	}
	if through == stage {
		through = ""
	}
	job := GenerateStageArgs{SessionID: sessionID, OrgID: p.OrgID, UserID: p.UserID, Stage: stage, GenerationID: s.d.IDs.NewID(), Through: through}
	var started ports.SpecSession
	err = s.d.Tx.WithinTx(ctx, func(ctx context.Context) error {
		var err error
		started, err = s.d.Specs.StartGeneration(ctx, p.Owner(), sessionID, stage, job.GenerationID, s.d.Clock.Now())
		if errors.Is(err, ports.ErrConflict) {
			return generationRunning(sess, err)
		}
		if err != nil {
			return err
		}
		return s.d.Jobs.Enqueue(ctx, job, ports.EnqueueOptions{MaxAttempts: s.cfg.MaxAttempts})
	})
	if err != nil {
		return ports.SpecSession{}, err
	}
	return started, nil
}

func generationRunning(sess ports.SpecSession, cause error) error {
	msg := fmt.Sprintf("specification session %s is generating already", sess.ID)
	if sess.Generating != "" {
		msg = fmt.Sprintf("specification session %s is generating its %s already", sess.ID, sess.Generating)
	}
	return &ports.Error{Kind: ports.KindConflict, Code: CodeGenerationRunning, Message: msg, Err: cause}
}

// currentArtifacts maps each stage to its latest version.
func currentArtifacts(arts []ports.SpecArtifact) map[ports.Stage]ports.SpecArtifact {
	out := map[ports.Stage]ports.SpecArtifact{}
	for _, a := range arts {
		if cur, ok := out[a.Stage]; !ok || a.Version > cur.Version {
			out[a.Stage] = a
		}
	}
	return out
}

// failure is a generation that cannot succeed by running the job again.
type failure = genjob.Failure

var (
	failureOf = genjob.FailureOf
	transient = genjob.Transient
)

// RunGeneration does the work of one generate call; the worker calls it for
// each attempt of a GenerateStageArgs job, with final set on the last one. It
// acts for the session's owner named in args, not for a principal.
//
// It returns nil when the job is done: the artifact is stored; or the failure
// is recorded on the session (status failed, Error set), after which
// generate may be called again; or the generation is no longer wanted (the
// session is gone, or no longer generating this generation, as when a
// retried job finds its artifact stored already). It returns an error when
// the job should run again: a transient error (see ports.Transient: a rate
// limit, an unavailable model or database, a timeout, a truncated stream),
// unless final. Any other error, such as a model answer invalid twice, a
// model's refusal or a constraint of the store, is recorded at once.
func (s *Service) RunGeneration(ctx context.Context, args GenerateStageArgs, final bool) error {
	log := s.log.With("session_id", args.SessionID, "stage", args.Stage, "generation_id", args.GenerationID)
	ctx = ports.WithAttribution(ctx, ports.Attribution{OrgID: args.OrgID, UserID: args.UserID, Feature: ports.FeatureSpec})
	err := s.generate(ctx, args, log)
	if err == nil {
		return nil
	}
	if genjob.Retry(err, final) {
		log.WarnContext(ctx, "generation failed; the job will be retried", "err", err)
		return err
	}
	return s.recordFailure(ctx, args, failureOf(err), err, log)
}

// AbandonGeneration gives up the generation of args: the worker calls it for
// a job taken up again after its last attempt was interrupted (its process
// stopped). The session becomes failed with code interrupted, unless it no
// longer runs this generation. It returns the store's errors.
func (s *Service) AbandonGeneration(ctx context.Context, args GenerateStageArgs) error {
	log := s.log.With("session_id", args.SessionID, "stage", args.Stage, "generation_id", args.GenerationID)
	f := genjob.Interrupted()
	return s.recordFailure(ctx, args, f, f, log)
}

// recordFailure marks the session's generation of args failed with f,
// unless it no longer runs it; err is what failed, for the log.
func (s *Service) recordFailure(ctx context.Context, args GenerateStageArgs, f *failure, err error, log *slog.Logger) error {
	log.WarnContext(ctx, "generation failed", "code", f.Code, "err", err)
	e := ports.SpecError{Stage: args.Stage, Code: f.Code, Message: f.Message}
	ferr := s.d.Specs.FailGeneration(context.WithoutCancel(ctx), args.SessionID, args.GenerationID, e, s.d.Clock.Now())
	if errors.Is(ferr, ports.ErrConflict) || errors.Is(ferr, ports.ErrNotFound) {
		log.InfoContext(ctx, "generation superseded before its failure was recorded", "err", ferr)
		return nil
	}
	return ferr
}

func (s *Service) generate(ctx context.Context, args GenerateStageArgs, log *slog.Logger) error {
	if !knownStage(args.Stage) {
		return &failure{Code: string(ports.KindInternal), Message: fmt.Sprintf("unknown stage %q", args.Stage)}
	}
	owner := ports.Owner{OrgID: args.OrgID, UserID: args.UserID}
	sess, err := s.d.Specs.GetSpecSession(ctx, owner, args.SessionID)
	if errors.Is(err, ports.ErrNotFound) {
		log.InfoContext(ctx, "generation dropped: the session is gone")
		return nil
	}
	if err != nil {
		return err
	}
	if sess.Status != ports.SpecGenerating || sess.GenerationID != args.GenerationID {
		log.InfoContext(ctx, "generation dropped: done already or superseded", "status", sess.Status, "current_generation_id", sess.GenerationID)
		return nil
	}
	inputs, err := s.d.Specs.ListSpecInputs(ctx, args.SessionID)
	if err != nil {
		return err
	}
	arts, err := s.d.Specs.ListArtifacts(ctx, args.SessionID)
	if err != nil {
		return err
	}
	standards, err := s.d.Standards.ListStandards(ctx, args.OrgID)
	if err != nil {
		return err
	}
	before := currentArtifacts(arts)
	for st := range before {
		if stageIndex(st) >= stageIndex(args.Stage) {
			delete(before, st)
		}
	}
	prior := earlierDocs(before)
	findings := func(doc any) []string { return traceability(doc, prior) }
	stats := newStats(s.cfg, args.Stage)
	started := s.d.Clock.Now()
	out, res, notes, err := s.askStage(withStats(ctx, stats), args, sess, inputs, before, standards, &prior, findings, log)
	if err != nil {
		return err
	}
	found := traceabilityChecks(out.doc, prior)
	checks := append(notes, found.list...)
	if checks == nil {
		checks = []string{}
	}
	now := s.d.Clock.Now()
	gen := stats.snapshot()
	gen.DurationMS = max(now.Sub(started).Milliseconds(), 0)
	gen.FindingsByKind = findingsByKind(found, notes)
	art := ports.SpecArtifact{
		ID: s.d.IDs.NewID(), SessionID: args.SessionID, Stage: args.Stage, Format: "markdown",
		Content: render(out.doc, checks), Data: out.data, Checks: checks,
		Model: cmp.Or(res.Model, s.cfg.Model), GenerationID: args.GenerationID, CreatedAt: now,
		PromptVersion: PromptVersion(args.Stage), Generation: gen,
	}
	next := s.continuation(args)
	err = s.d.Tx.WithinTx(ctx, func(ctx context.Context) error {
		if err := s.d.Specs.CompleteGeneration(ctx, art, now); err != nil {
			return err
		}
		if next == nil {
			return nil
		}
		if _, err := s.d.Specs.StartGeneration(ctx, owner, args.SessionID, next.Stage, next.GenerationID, now); err != nil {
			return err
		}
		return s.d.Jobs.Enqueue(ctx, *next, ports.EnqueueOptions{MaxAttempts: s.cfg.MaxAttempts})
	})
	if errors.Is(err, ports.ErrConflict) || errors.Is(err, ports.ErrNotFound) {
		log.InfoContext(ctx, "generation dropped at completion: stored already or superseded", "err", err)
		return nil
	}
	if err != nil {
		return err
	}
	s.d.Observer.SpecStageGenerated(args.Stage, gen.RepairTurns, gen.FindingsByKind)
	log.InfoContext(ctx, "stage generated", "checks", len(checks), "prompt_version", art.PromptVersion,
		"calls", gen.Calls, "batches", gen.Batches, "first_try_valid", gen.FirstTryValid,
		"invalid_answers", gen.InvalidAnswers, "repair_turns", gen.RepairTurns,
		"prompt_tokens", gen.PromptTokens, "completion_tokens", gen.CompletionTokens,
		"duration_ms", gen.DurationMS, "findings_by_kind", gen.FindingsByKind)
	if next != nil {
		log.InfoContext(ctx, "next stage started", "next_stage", next.Stage, "through", args.Through)
	}
	return nil
}

// continuation is the job of the stage after args' in its chain, nil when
// args' stage is the chain's last.
func (s *Service) continuation(args GenerateStageArgs) *GenerateStageArgs {
	if args.Through == "" || stageIndex(args.Stage) >= stageIndex(args.Through) {
		return nil
	}
	next := args
	next.Stage = nextStage(args.Stage)
	next.GenerationID = s.d.IDs.NewID()
	if next.Stage == args.Through {
		next.Through = ""
	}
	return &next
}

const maxFailureLen = 1000

func invalidOutputMessage(st ports.Stage, problems []string) string {
	msg := fmt.Sprintf("the model's %s was invalid twice: %s", st, problems[0])
	if n := len(problems) - 1; n > 0 {
		msg += fmt.Sprintf(" (and %d more problem%s)", n, plural(n))
	}
	if clipped, cut := ports.ClipBytes(msg, maxFailureLen); cut {
		msg = clipped + "…"
	}
	return msg
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
