package spec

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/devpilot/devpilot/ports"
)

// StandardInput is an organisation standard as an admin writes it: guidance
// in Body, given to the model when it generates any stage in AppliesTo.
type StandardInput struct {
	Title     string
	Body      string
	AppliesTo []ports.Stage
}

// check validates in and returns it cleaned: title and body trimmed, stages
// without repeats in pipeline order.
func (in StandardInput) check() (StandardInput, error) {
	var fields []ports.FieldError
	in.Title = strings.TrimSpace(in.Title)
	if n := utf8.RuneCountInString(in.Title); n == 0 {
		fields = append(fields, ports.FieldError{Field: "title", Reason: "required"})
	} else if n > MaxStandardTitleLen {
		fields = append(fields, ports.FieldError{Field: "title", Reason: fmt.Sprintf("must be at most %d characters", MaxStandardTitleLen)})
	}
	in.Body = strings.TrimSpace(in.Body)
	if n := utf8.RuneCountInString(in.Body); n == 0 {
		fields = append(fields, ports.FieldError{Field: "body", Reason: "required"})
	} else if n > MaxStandardBodyLen {
		fields = append(fields, ports.FieldError{Field: "body", Reason: fmt.Sprintf("must be at most %d characters", MaxStandardBodyLen)})
	}
	if len(in.AppliesTo) == 0 {
		fields = append(fields, ports.FieldError{Field: "applies_to", Reason: "must name at least one stage"})
	}
	for i, st := range in.AppliesTo {
		if !knownStage(st) {
			fields = append(fields, ports.FieldError{Field: fmt.Sprintf("applies_to[%d]", i), Reason: "must be one of " + stageList()})
		}
	}
	if err := invalid(fields); err != nil {
		return StandardInput{}, err
	}
	stages := make([]ports.Stage, 0, len(in.AppliesTo))
	for _, st := range ports.Stages {
		if slices.Contains(in.AppliesTo, st) {
			stages = append(stages, st)
		}
	}
	in.AppliesTo = stages
	return in, nil
}

// admin returns the caller when it administers its organisation; forbidden
// otherwise.
func admin(ctx context.Context) (ports.Principal, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return p, err
	}
	if !p.IsAdmin() {
		return p, &ports.Error{Kind: ports.KindForbidden, Message: "only an organisation admin may change standards"}
	}
	return p, nil
}

// ListStandards returns the caller's organisation's standards, oldest first.
func (s *Service) ListStandards(ctx context.Context) ([]ports.Standard, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return nil, err
	}
	return s.d.Standards.ListStandards(ctx, p.OrgID)
}

// GetStandard returns a standard of the caller's organisation. Errors:
// not_found when absent or another organisation's.
func (s *Service) GetStandard(ctx context.Context, id string) (ports.Standard, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return ports.Standard{}, err
	}
	if !ports.IsID(id) {
		return ports.Standard{}, ports.NotFound("standard", id)
	}
	return s.d.Standards.GetStandard(ctx, p.OrgID, id)
}

// CreateStandard adds a standard to the caller's organisation. Errors:
// forbidden unless the caller is an admin; invalid (fields title: 1..200
// characters, body: 1..20000, applies_to: at least one stage, applies_to[i]:
// a known stage).
func (s *Service) CreateStandard(ctx context.Context, in StandardInput) (ports.Standard, error) {
	p, err := admin(ctx)
	if err != nil {
		return ports.Standard{}, err
	}
	if in, err = in.check(); err != nil {
		return ports.Standard{}, err
	}
	now := s.d.Clock.Now()
	std := ports.Standard{ID: s.d.IDs.NewID(), OrgID: p.OrgID, Title: in.Title, Body: in.Body, AppliesTo: in.AppliesTo, CreatedAt: now, UpdatedAt: now}
	if err := s.d.Standards.CreateStandard(ctx, std); err != nil {
		return ports.Standard{}, err
	}
	return std, nil
}

// UpdateStandard replaces the title, body and stages of a standard of the
// caller's organisation and returns it. Errors: forbidden unless the caller
// is an admin; invalid as CreateStandard; not_found when absent or another
// organisation's.
func (s *Service) UpdateStandard(ctx context.Context, id string, in StandardInput) (ports.Standard, error) {
	p, err := admin(ctx)
	if err != nil {
		return ports.Standard{}, err
	}
	if in, err = in.check(); err != nil {
		return ports.Standard{}, err
	}
	if !ports.IsID(id) {
		return ports.Standard{}, ports.NotFound("standard", id)
	}
	var std ports.Standard
	err = s.d.Tx.WithinTx(ctx, func(ctx context.Context) error {
		var err error
		if std, err = s.d.Standards.GetStandard(ctx, p.OrgID, id); err != nil {
			return err
		}
		std.Title, std.Body, std.AppliesTo, std.UpdatedAt = in.Title, in.Body, in.AppliesTo, s.d.Clock.Now()
		return s.d.Standards.UpdateStandard(ctx, std)
	})
	if err != nil {
		return ports.Standard{}, err
	}
	return std, nil
}

// DeleteStandard deletes a standard of the caller's organisation. Errors:
// forbidden unless the caller is an admin; not_found when absent or another
// organisation's.
func (s *Service) DeleteStandard(ctx context.Context, id string) error {
	p, err := admin(ctx)
	if err != nil {
		return err
	}
	if !ports.IsID(id) {
		return ports.NotFound("standard", id)
	}
	return s.d.Standards.DeleteStandard(ctx, p.OrgID, id)
}
