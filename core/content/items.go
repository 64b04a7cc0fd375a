package content

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/devpilot/devpilot/ports"
)

// knownStatus reports whether st is one of the content statuses.
func knownStatus(st ports.ContentStatus) bool {
	switch st {
	case ports.ContentGenerating, ports.ContentDraft, ports.ContentInReview, ports.ContentApproved,
		ports.ContentPublished, ports.ContentArchived, ports.ContentFailed:
		return true
	}
	return false
}

// userTransitions are the status changes people may make; generating →
// draft | failed belongs to the worker, and archived is reachable from every
// status.
var userTransitions = map[ports.ContentStatus][]ports.ContentStatus{
	ports.ContentDraft:     {ports.ContentInReview},
	ports.ContentInReview:  {ports.ContentApproved, ports.ContentDraft},
	ports.ContentApproved:  {ports.ContentPublished, ports.ContentDraft},
	ports.ContentPublished: nil,
}

// canTransition reports whether a person may move a content item from one
// status to another: draft → in_review; in_review → approved | draft;
// approved → published | draft; any status → archived; and any status to
// itself.
func canTransition(from, to ports.ContentStatus) bool {
	if from == to || to == ports.ContentArchived {
		return knownStatus(from) && knownStatus(to)
	}
	for _, next := range userTransitions[from] {
		if next == to {
			return true
		}
	}
	return false
}

// editable reports whether an item's text may be changed in status st.
func editable(st ports.ContentStatus) bool {
	return st == ports.ContentDraft || st == ports.ContentInReview || st == ports.ContentApproved
}

// Item returns a content item of the caller's organisation. Errors:
// not_found when it is absent, another org's, or id is not a UUID; the
// store's errors.
func (s *Service) Item(ctx context.Context, id string) (ports.ContentItem, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return ports.ContentItem{}, err
	}
	if !ports.IsID(id) {
		return ports.ContentItem{}, itemNotFound(id)
	}
	return s.d.Store.GetContentItem(ctx, p.OrgID, id)
}

// ListItems returns a page of the organisation's content items matching f
// (empty fields match all), most recently updated first, and the next
// page's cursor ("" at the end). page.Limit 0 means DefaultPageLimit.
// Errors: invalid (fields project_id, brief_id, status, limit) and invalid
// for a bad cursor; the store's errors.
func (s *Service) ListItems(ctx context.Context, f ports.ContentFilter, page ports.Page) ([]ports.ContentItem, string, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return nil, "", err
	}
	var fields fieldErrors
	if f.ProjectID != "" {
		if fe := checkProjectID(f.ProjectID); fe != nil {
			fields = append(fields, *fe)
		}
	}
	if f.BriefID != "" && !ports.IsID(f.BriefID) {
		fields.add("brief_id", "must be a UUID")
	}
	if f.Status != "" && !knownStatus(f.Status) {
		fields.add("status", "must be generating, draft, in_review, approved, published, archived or failed")
	}
	if err := fields.err(); err != nil {
		return nil, "", err
	}
	page, err = checkPage(page)
	if err != nil {
		return nil, "", err
	}
	return s.d.Store.ListContentItems(ctx, p.OrgID, f, page)
}

// UpdateInput changes a content item. Version is the version the change
// was made from (required). Nil fields are left as they are.
type UpdateInput struct {
	Version int
	Title   *string
	Body    *string
	Format  *string
	Status  *ports.ContentStatus
	// PublishedURL is where the item was published elsewhere: required
	// with, and allowed only with, a move to published.
	PublishedURL *string
	// OverrideReason approves or publishes the item despite its brand
	// findings; recorded only when it was needed.
	OverrideReason *string
}

// UpdateItem changes a content item of the caller's organisation and
// returns it as stored: the next version, updated now, with the brand
// checks run again on its text against the project's current brand
// settings and the brief's length bounds.
//
// Text (title, body, format) may change only in draft, in_review and
// approved; a change of an approved item's text sends it back to draft,
// unless the same update sets a status, which is then checked as a move
// from draft. The status may move draft → in_review; in_review → approved
// or draft; approved → published or draft; from any status to archived; and
// to itself. A generating item may only be archived.
//
// A move to published marks the item as published elsewhere: it needs
// in.PublishedURL, kept on the item with PublishedVia "elsewhere" (an item
// is otherwise published only by a successful publication through a
// target). A move to approved or published of an item whose brand checks
// (as run by this update) have findings needs in.OverrideReason, recorded
// on the item with the caller and the time; without it it is a conflict
// (brand_findings) listing the findings; an item using a banned word of a
// brand that makes banned words blocking is a conflict (banned_words)
// whatever the override. Marks and overrides are audited.
//
// Errors: not_found when the item is absent, another org's, or id is not a
// UUID; precondition_required (version_required) when in.Version is 0;
// invalid (fields version, title, body, format, status, published_url,
// override.reason), and invalid (published_url) for a move to published
// without a URL;
// precondition_failed (stale_version) when in.Version is not the stored
// version, or another update won the race for it; conflict (not_editable)
// for a change of text in another status, or an update of a generating
// item that does not move its status; conflict (invalid_transition) for a
// status change people may not make; the store's errors.
func (s *Service) UpdateItem(ctx context.Context, id string, in UpdateInput) (ports.ContentItem, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return ports.ContentItem{}, err
	}
	if !ports.IsID(id) {
		return ports.ContentItem{}, itemNotFound(id)
	}
	if in.Version == 0 {
		return ports.ContentItem{}, &ports.Error{Kind: ports.KindPreconditionRequired, Code: CodeVersionRequired,
			Message: fmt.Sprintf("name the version of content item %s you changed (If-Match or version)", id)}
	}
	in, err = cleanUpdate(in)
	if err != nil {
		return ports.ContentItem{}, err
	}
	cur, err := s.d.Store.GetContentItem(ctx, p.OrgID, id)
	if err != nil {
		return ports.ContentItem{}, err
	}
	if in.Version != cur.Version {
		return ports.ContentItem{}, &ports.Error{Kind: ports.KindPreconditionFailed, Code: CodeStaleVersion,
			Message: fmt.Sprintf("content item %s is at version %d, not %d; reload it and apply your change again", id, cur.Version, in.Version)}
	}
	next, from, err := applyUpdate(cur, in)
	if err != nil {
		return ports.ContentItem{}, err
	}
	brand, err := s.brand(ctx, p.OrgID, cur.ProjectID)
	if err != nil {
		return ports.ContentItem{}, err
	}
	brief, err := s.d.Store.GetBrief(ctx, p.OrgID, cur.BriefID)
	if errors.Is(err, ports.ErrNotFound) {
		brief = ports.Brief{}
	} else if err != nil {
		return ports.ContentItem{}, err
	}
	next.Checks = Check(brand, brief, next.Title, next.Body)
	next.Version, next.UpdatedAt = cur.Version+1, s.d.Clock.Now()
	if next.Title != cur.Title || next.Body != cur.Body {
		next.EditedBy, next.EditedByName = p.UserID, s.userName(ctx, p.UserID)
	}
	publishing := next.Status == ports.ContentPublished && from != ports.ContentPublished
	approving := next.Status == ports.ContentApproved && from != ports.ContentApproved
	switch {
	case publishing && in.PublishedURL == nil:
		return ports.ContentItem{}, needURL(id)
	case !publishing && in.PublishedURL != nil:
		return ports.ContentItem{}, ports.Invalid("a published URL goes with a move to published",
			ports.FieldError{Field: "published_url", Reason: "allowed only with status published"})
	}
	var override *ports.ContentOverride
	if publishing || approving {
		what, reason := "approved", ""
		if publishing {
			what = "published"
		}
		if in.OverrideReason != nil {
			reason = *in.OverrideReason
		}
		if override, err = gate(brand, next.Checks, id, what, reason, p.UserID, next.UpdatedAt); err != nil {
			return ports.ContentItem{}, err
		}
		if override != nil {
			next.Override = override
		}
	}
	if publishing {
		next.PublishedAt, next.PublishedURL, next.PublishedVia = &next.UpdatedAt, *in.PublishedURL, ports.PublishedViaElsewhere
	}
	err = s.d.Store.UpdateContentItem(ctx, next)
	if errors.Is(err, ports.ErrPreconditionFailed) {
		return ports.ContentItem{}, &ports.Error{Kind: ports.KindPreconditionFailed, Code: CodeStaleVersion, Err: err,
			Message: fmt.Sprintf("content item %s changed meanwhile (it is past version %d); reload it and apply your change again", id, cur.Version)}
	}
	if err != nil {
		return ports.ContentItem{}, err
	}
	if publishing {
		s.audit(ctx, p.UserID, p.OrgID, "content.mark_published", id, map[string]any{"published_url": next.PublishedURL, "version": next.Version}, nil)
	}
	if override != nil {
		s.audit(ctx, p.UserID, p.OrgID, "content.override_brand_findings", id,
			map[string]any{"status": next.Status, "reason": override.Reason, "findings": next.Checks, "version": next.Version}, nil)
	}
	return next, nil
}

// cleanUpdate validates the fields of an update and trims its title and
// format.
func cleanUpdate(in UpdateInput) (UpdateInput, error) {
	var f fieldErrors
	if in.Version < 0 {
		f.add("version", "must be a positive version")
	}
	if in.Title != nil {
		t := f.text("title", *in.Title, MaxTitleLen, true)
		in.Title = &t
	}
	if in.Body != nil && len(*in.Body) > MaxBodyLen && utf8.RuneCountInString(*in.Body) > MaxBodyLen {
		f.add("body", tooLong(MaxBodyLen))
	}
	if in.Format != nil {
		t := f.text("format", *in.Format, MaxFormatLen, true)
		in.Format = &t
	}
	if in.Status != nil && !knownStatus(*in.Status) {
		f.add("status", "must be draft, in_review, approved, published or archived")
	}
	if in.PublishedURL != nil {
		u := checkPublishedURL(&f, *in.PublishedURL)
		in.PublishedURL = &u
	}
	if in.OverrideReason != nil {
		r := checkOverrideReason(&f, "override.reason", *in.OverrideReason)
		in.OverrideReason = &r
	}
	return in, f.err()
}

// applyUpdate returns cur changed as in asks and the status the move was
// checked from (draft after an edit of an approved item's text), or why it
// may not be.
func applyUpdate(cur ports.ContentItem, in UpdateInput) (ports.ContentItem, ports.ContentStatus, error) {
	next := cur
	if in.Title != nil {
		next.Title = *in.Title
	}
	if in.Body != nil {
		next.Body = *in.Body
	}
	if in.Format != nil {
		next.Format = *in.Format
	}
	edited := next.Title != cur.Title || next.Body != cur.Body || next.Format != cur.Format
	// An update that moves nothing would still count the version up and so
	// drop the draft being written: a generating item can only be archived.
	if cur.Status == ports.ContentGenerating && (in.Status == nil || *in.Status == ports.ContentGenerating) {
		return cur, "", &ports.Error{Kind: ports.KindConflict, Code: CodeNotEditable,
			Message: fmt.Sprintf("content item %s is still being generated; wait for its draft, or archive it", cur.ID)}
	}
	if edited && !editable(cur.Status) {
		return cur, "", &ports.Error{Kind: ports.KindConflict, Code: CodeNotEditable,
			Message: fmt.Sprintf("content item %s is %s; its text can be changed only in draft, in_review or approved", cur.ID, cur.Status)}
	}
	from := cur.Status
	if edited && from == ports.ContentApproved {
		from = ports.ContentDraft // an edit invalidates the approval
	}
	next.Status = from
	if in.Status != nil {
		if !canTransition(from, *in.Status) {
			msg := fmt.Sprintf("content item %s cannot move from %s to %s", cur.ID, from, *in.Status)
			if from != cur.Status {
				msg += " (the edit of its approved text returned it to draft)"
			}
			return cur, "", &ports.Error{Kind: ports.KindConflict, Code: CodeInvalidTransition, Message: msg}
		}
		next.Status = *in.Status
	}
	return next, from, nil
}

// DeleteItem deletes a content item of the caller's organisation, in any
// status; a generation still running for it is dropped. Errors: not_found
// when it is absent, another org's, or id is not a UUID; the store's errors.
func (s *Service) DeleteItem(ctx context.Context, id string) error {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return err
	}
	if !ports.IsID(id) {
		return itemNotFound(id)
	}
	return s.d.Store.DeleteContentItem(ctx, p.OrgID, id)
}

// userName is how an item names the user with id: their email, or "" when
// it cannot be read (the id is recorded all the same).
func (s *Service) userName(ctx context.Context, id string) string {
	if s.d.Users == nil {
		return ""
	}
	u, err := s.d.Users.GetUser(ctx, id)
	if err != nil {
		s.log.WarnContext(ctx, "naming the editor of a content item", "user_id", id, "err", err)
		return ""
	}
	return u.Email
}
