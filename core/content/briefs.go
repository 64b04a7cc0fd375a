package content

import (
	"context"
	"fmt"

	"github.com/devpilot/devpilot/ports"
)

// BriefInput asks for a piece of content. Text is trimmed; Format defaults
// to DefaultFormat; empty keywords are dropped and repeats (ignoring case)
// kept once. MinWords and MaxWords bound the body's length, 0 leaving that
// side open.
type BriefInput struct {
	ProjectID string
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
}

// CreateBrief stores a new brief of the caller's organisation, created by
// the caller, and returns it. A project id without a project record gets
// one, named after the id. Errors: invalid (fields project_id, title,
// goal, audience, channel, format, keywords, keywords[i], cta,
// length.min_words, length.max_words, notes); the store's errors.
func (s *Service) CreateBrief(ctx context.Context, in BriefInput) (ports.Brief, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return ports.Brief{}, err
	}
	var f fieldErrors
	if fe := checkProjectID(in.ProjectID); fe != nil {
		f = append(f, *fe)
	}
	b := ports.Brief{
		OrgID:     p.OrgID,
		ProjectID: in.ProjectID,
		CreatedBy: p.UserID,
		Title:     f.text("title", in.Title, MaxTitleLen, true),
		Goal:      f.text("goal", in.Goal, MaxGoalLen, false),
		Audience:  f.text("audience", in.Audience, MaxAudienceLen, false),
		Channel:   f.text("channel", in.Channel, MaxChannelLen, false),
		Format:    f.text("format", in.Format, MaxFormatLen, false),
		Keywords:  f.list("keywords", in.Keywords, MaxKeywords, MaxKeywordLen, true),
		CTA:       f.text("cta", in.CTA, MaxCTALen, false),
		MinWords:  in.MinWords,
		MaxWords:  in.MaxWords,
		Notes:     f.text("notes", in.Notes, MaxNotesLen, false),
	}
	if b.Format == "" {
		b.Format = DefaultFormat
	}
	bounds := fmt.Sprintf("must be 0 to %d", MaxWordsBound)
	minOK := in.MinWords >= 0 && in.MinWords <= MaxWordsBound
	maxOK := in.MaxWords >= 0 && in.MaxWords <= MaxWordsBound
	if !minOK {
		f.add("length.min_words", bounds)
	}
	if !maxOK {
		f.add("length.max_words", bounds)
	}
	if minOK && maxOK && in.MinWords > 0 && in.MaxWords > 0 && in.MinWords > in.MaxWords {
		f.add("length.max_words", fmt.Sprintf("must be at least min_words (%d)", in.MinWords))
	}
	if err := f.err(); err != nil {
		return ports.Brief{}, err
	}
	b.ID, b.CreatedAt = s.d.IDs.NewID(), s.d.Clock.Now()
	if err := s.ensureProject(ctx, p, b.ProjectID); err != nil {
		return ports.Brief{}, err
	}
	if err := s.d.Store.CreateBrief(ctx, b); err != nil {
		return ports.Brief{}, err
	}
	return b, nil
}

// Brief returns a brief of the caller's organisation. Errors: not_found
// when it is absent, another org's, or id is not a UUID; the store's errors.
func (s *Service) Brief(ctx context.Context, id string) (ports.Brief, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return ports.Brief{}, err
	}
	if !ports.IsID(id) {
		return ports.Brief{}, briefNotFound(id)
	}
	return s.d.Store.GetBrief(ctx, p.OrgID, id)
}

// ListBriefs returns a page of the organisation's briefs of a project (of
// every project when projectID is ""), newest first, and the next page's
// cursor ("" at the end). page.Limit 0 means DefaultPageLimit. Errors:
// invalid (field project_id, limit) and invalid for a bad cursor; the
// store's errors.
func (s *Service) ListBriefs(ctx context.Context, projectID string, page ports.Page) ([]ports.Brief, string, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return nil, "", err
	}
	if projectID != "" {
		if err := projectIDError(projectID); err != nil {
			return nil, "", err
		}
	}
	page, err = checkPage(page)
	if err != nil {
		return nil, "", err
	}
	return s.d.Store.ListBriefs(ctx, p.OrgID, projectID, page)
}
