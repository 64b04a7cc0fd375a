package content

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/devpilot/devpilot/core/internal/genjob"
	"github.com/devpilot/devpilot/ports"
)

// GenerateContentArgs is the background job that drafts one content item.
type GenerateContentArgs struct {
	OrgID  string `json:"org_id"`
	ItemID string `json:"item_id"`
}

// Kind names the job for the queue.
func (GenerateContentArgs) Kind() string { return "content.generate" }

// Generate starts drafting content from a brief of the caller's
// organisation: variants items (0 means 1) in status generating, titled
// and formatted as the brief, numbered Variant 1..variants, at version 1.
// The items and one GenerateContentArgs job per item are stored in one
// transaction, so either all exist or none. It returns the items.
//
// Errors: invalid (field variants) outside 1..MaxVariants; not_found when
// the brief is absent, another org's, or briefID is not a UUID; the
// store's and the queue's errors.
func (s *Service) Generate(ctx context.Context, briefID string, variants int) ([]ports.ContentItem, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return nil, err
	}
	if variants == 0 {
		variants = 1
	}
	if variants < 1 || variants > MaxVariants {
		return nil, ports.Invalid("invalid number of variants", ports.FieldError{Field: "variants", Reason: fmt.Sprintf("must be 1 to %d", MaxVariants)})
	}
	if !ports.IsID(briefID) {
		return nil, briefNotFound(briefID)
	}
	brief, err := s.d.Store.GetBrief(ctx, p.OrgID, briefID)
	if err != nil {
		return nil, err
	}
	now := s.d.Clock.Now()
	items := make([]ports.ContentItem, variants)
	for i := range items {
		items[i] = ports.ContentItem{
			ID: s.d.IDs.NewID(), OrgID: p.OrgID, ProjectID: brief.ProjectID, BriefID: brief.ID, CreatedBy: p.UserID,
			Title: brief.Title, Format: cmp.Or(brief.Format, DefaultFormat), Status: ports.ContentGenerating,
			Checks: []ports.ContentCheck{}, Variant: i + 1, Version: 1, CreatedAt: now, UpdatedAt: now,
		}
	}
	err = s.d.Tx.WithinTx(ctx, func(ctx context.Context) error {
		if err := s.d.Store.CreateContentItems(ctx, items...); err != nil {
			return err
		}
		for _, it := range items {
			job := GenerateContentArgs{OrgID: p.OrgID, ItemID: it.ID}
			if err := s.d.Jobs.Enqueue(ctx, job, ports.EnqueueOptions{MaxAttempts: s.cfg.MaxAttempts}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return items, nil
}

// failure is a generation that cannot succeed by running the job again.
type failure = genjob.Failure

var (
	failureOf = genjob.FailureOf
	transient = genjob.Transient
)

// RunGeneration drafts one content item; the worker calls it for each
// attempt of a GenerateContentArgs job, with final set on the last one. It
// acts for the organisation named in args, not for a principal.
//
// It returns nil when the job is done: the draft is stored (status draft,
// with the brand checks); or the failure is recorded on the item (status
// failed, Error set); or the item is no longer waiting for a draft (deleted,
// archived, or drafted by an earlier attempt), so running it again changes
// nothing. It returns an error when the job should run again: a transient
// error (see ports.Transient: a rate limit, an unavailable model or
// database, a timeout, a truncated stream), unless final. Any other error,
// such as a model's refusal or a constraint of the store, is recorded at
// once.
func (s *Service) RunGeneration(ctx context.Context, args GenerateContentArgs, final bool) error {
	log := s.log.With("item_id", args.ItemID, "org_id", args.OrgID)
	err := s.generate(ctx, args, log)
	if err == nil {
		return nil
	}
	if genjob.Retry(err, final) {
		log.WarnContext(ctx, "content generation failed; the job will be retried", "err", err)
		return err
	}
	f := failureOf(err)
	log.WarnContext(ctx, "content generation failed", "code", f.Code, "err", err)
	return s.recordFailure(context.WithoutCancel(ctx), args, ports.ContentError{Code: f.Code, Message: f.Message}, log)
}

// AbandonGeneration gives up the draft of args: the worker calls it for a
// job taken up again after its last attempt was interrupted (its process
// stopped). The item becomes failed with code interrupted, unless it is no
// longer generating. It returns the store's errors.
func (s *Service) AbandonGeneration(ctx context.Context, args GenerateContentArgs) error {
	log := s.log.With("item_id", args.ItemID, "org_id", args.OrgID)
	f := genjob.Interrupted()
	log.WarnContext(ctx, "content generation failed", "code", f.Code, "err", f)
	return s.recordFailure(context.WithoutCancel(ctx), args, ports.ContentError{Code: f.Code, Message: f.Message}, log)
}

// recordFailure marks the item failed, unless it is no longer generating.
func (s *Service) recordFailure(ctx context.Context, args GenerateContentArgs, ce ports.ContentError, log *slog.Logger) error {
	it, err := s.d.Store.GetContentItem(ctx, args.OrgID, args.ItemID)
	if errors.Is(err, ports.ErrNotFound) {
		log.InfoContext(ctx, "content item gone before its failure was recorded")
		return nil
	}
	if err != nil {
		return err
	}
	if it.Status != ports.ContentGenerating {
		log.InfoContext(ctx, "content item changed before its failure was recorded", "status", it.Status)
		return nil
	}
	it.Status, it.Error = ports.ContentFailed, &ce
	it.Version, it.UpdatedAt = it.Version+1, s.d.Clock.Now()
	err = s.d.Store.UpdateContentItem(ctx, it)
	if errors.Is(err, ports.ErrPreconditionFailed) || errors.Is(err, ports.ErrNotFound) {
		log.InfoContext(ctx, "content item changed before its failure was recorded", "err", err)
		return nil
	}
	return err
}

func (s *Service) generate(ctx context.Context, args GenerateContentArgs, log *slog.Logger) error {
	if args.OrgID == "" || !ports.IsID(args.ItemID) {
		log.ErrorContext(ctx, "content generation dropped: malformed job")
		return nil
	}
	it, err := s.d.Store.GetContentItem(ctx, args.OrgID, args.ItemID)
	if errors.Is(err, ports.ErrNotFound) {
		log.InfoContext(ctx, "content generation dropped: the item is gone")
		return nil
	}
	if err != nil {
		return err
	}
	if it.Status != ports.ContentGenerating {
		log.InfoContext(ctx, "content generation dropped: the item is not generating", "status", it.Status)
		return nil
	}
	brief, err := s.d.Store.GetBrief(ctx, args.OrgID, it.BriefID)
	if errors.Is(err, ports.ErrNotFound) {
		return &failure{Code: string(ports.KindNotFound), Message: fmt.Sprintf("content brief %s not found", it.BriefID), Cause: err}
	}
	if err != nil {
		return err
	}
	brand, err := s.brand(ctx, args.OrgID, it.ProjectID)
	if err != nil {
		return err
	}
	req := ports.ChatRequest{Model: s.cfg.Model, Messages: buildMessages(brand, brief, it.Variant),
		MaxTokens: s.cfg.MaxTokens, ResponseFormat: responseFormat()}
	ctx = ports.WithAttribution(ctx, ports.Attribution{OrgID: args.OrgID, UserID: it.CreatedBy, Feature: ports.FeatureContent})
	res, err := s.d.LLM.Chat(ctx, req, nil)
	if err != nil {
		if transient(err) {
			return err
		}
		return failureOf(err)
	}
	d, err := parseDraft(res, brief)
	if err != nil {
		return err
	}
	checks := Check(brand, brief, d.title, d.body)
	if len(checks) > 0 {
		d, res, checks = s.revise(ctx, req, res, d, checks, brand, brief, log)
	}
	it.Title, it.Body, it.Status, it.Error = d.title, d.body, ports.ContentDraft, nil
	it.Model = cmp.Or(res.Model, s.cfg.Model)
	it.EditedBy, it.EditedByName = "", "" // the model's text
	it.Checks = checks
	it.Version, it.UpdatedAt = it.Version+1, s.d.Clock.Now()
	err = s.d.Store.UpdateContentItem(ctx, it)
	if errors.Is(err, ports.ErrPreconditionFailed) || errors.Is(err, ports.ErrNotFound) {
		log.InfoContext(ctx, "content draft dropped: the item changed or went meanwhile", "err", err)
		return nil
	}
	if err != nil {
		return err
	}
	log.InfoContext(ctx, "content drafted", "checks", len(it.Checks), "words", len(strings.Fields(it.Body)),
		"prompt_tokens", res.Usage.PromptTokens, "completion_tokens", res.Usage.CompletionTokens)
	return nil
}

// revise gives a draft with brand-check findings one revision pass: the
// draft goes back to the model with the findings (banned words, terms to
// avoid, length), and the revised draft is kept unless it has more
// findings than the first. Any failure of the revision (a model error, an
// unusable answer) keeps the first draft; it is logged, not recorded.
func (s *Service) revise(ctx context.Context, req ports.ChatRequest, first ports.ChatResult, d draft, checks []ports.ContentCheck,
	brand ports.Brand, brief ports.Brief, log *slog.Logger) (draft, ports.ChatResult, []ports.ContentCheck) {
	req.Messages = append(slices.Clone(req.Messages),
		ports.Message{Role: ports.MessageAssistant, Content: first.Content},
		ports.Message{Role: ports.MessageUser, Content: revisionMessage(checks, brief)})
	res, err := s.d.LLM.Chat(ctx, req, nil)
	if err != nil {
		log.WarnContext(ctx, "the revision call failed; keeping the first draft", "err", err)
		return d, first, checks
	}
	revised, err := parseDraft(res, brief)
	if err != nil {
		log.WarnContext(ctx, "the revised draft is unusable; keeping the first draft", "err", err)
		return d, first, checks
	}
	after := Check(brand, brief, revised.title, revised.body)
	if len(after) > len(checks) {
		log.InfoContext(ctx, "the revised draft has more findings; keeping the first draft", "before", len(checks), "after", len(after))
		return d, first, checks
	}
	log.InfoContext(ctx, "content draft revised", "before", len(checks), "after", len(after))
	res.Usage.PromptTokens += first.Usage.PromptTokens
	res.Usage.CompletionTokens += first.Usage.CompletionTokens
	return revised, res, after
}
