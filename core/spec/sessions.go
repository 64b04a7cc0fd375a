package spec

import (
	"context"
	"errors"
	"fmt"
	"math"
	"mime"
	"strings"
	"unicode/utf8"

	"github.com/devpilot/devpilot/ports"
)

// Bounds on a session's inputs, whatever their size: one request adds at
// most MaxInputsPerRequest (more is invalid, 422, before any is checked), and
// a session holds at most MaxInputsPerSession (adding past it is a conflict,
// 409).
const (
	MaxInputsPerRequest = 50
	MaxInputsPerSession = 200
)

// CodeTooManyInputs is the code of the conflict AddInput returns for a
// session that has MaxInputsPerSession inputs.
const CodeTooManyInputs = "too_many_inputs"

// NewInput is a piece of raw material to add to a session: text, already
// extracted from any uploaded file. ContentType describes where the text came
// from ("text/plain" when empty). An empty Title is derived from the content
// (see DeriveTitle).
type NewInput struct {
	Kind        ports.InputKind
	Title       string
	ContentType string
	Content     string
}

// View is a session as a client sees it: its inputs without their content,
// every version of every artifact in stage then version order, and the stage
// a generate call without a stage would produce ("" when the pipeline is
// complete).
type View struct {
	Session   ports.SpecSession
	Inputs    []ports.SpecInput
	Artifacts []ports.SpecArtifact
	NextStage ports.Stage
}

// NextStage is the stage a generate call without a stage would produce for
// a session whose latest stage is current: scope for a new session, "" once
// prps is done. Lists show it as the detail view does.
func NextStage(current ports.Stage) ports.Stage { return nextStage(current) }

// checkInput validates in and returns it cleaned; field prefixes its field
// names ("" or "inputs[2].").
func checkInput(in NewInput, field string) (NewInput, []ports.FieldError) {
	var fields []ports.FieldError
	bad := func(name, reason string) {
		fields = append(fields, ports.FieldError{Field: field + name, Reason: reason})
	}
	switch in.Kind {
	case ports.InputDocument, ports.InputTranscript, ports.InputNote:
	case "":
		bad("kind", "required")
	default:
		bad("kind", "must be document, transcript or note")
	}
	in.Title = strings.TrimSpace(in.Title)
	if in.Title == "" {
		in.Title = DeriveTitle(in.Kind, in.Content)
	}
	if n := utf8.RuneCountInString(in.Title); n > MaxTitleLen {
		bad("title", fmt.Sprintf("must be at most %d characters", MaxTitleLen))
	}
	in.ContentType = strings.TrimSpace(in.ContentType)
	if in.ContentType == "" {
		in.ContentType = "text/plain"
	}
	if mt, params, err := mime.ParseMediaType(in.ContentType); err != nil || len(in.ContentType) > MaxContentTypeLen {
		bad("content_type", "must be a media type such as text/markdown")
	} else {
		in.ContentType = mime.FormatMediaType(mt, params)
	}
	switch {
	case strings.TrimSpace(in.Content) == "":
		bad("content", "must not be empty")
	case !utf8.ValidString(in.Content):
		bad("content", "must be UTF-8 text")
	}
	return in, fields
}

func (s *Service) inputTooLarge(in NewInput, field string) error {
	size := int64(len(in.Content))
	if size <= s.cfg.MaxInputBytes {
		return nil
	}
	return &ports.Error{Kind: ports.KindPayloadTooLarge,
		Message: fmt.Sprintf("input '%s' is %s; the limit is %s", in.Title, formatSize(size), formatSize(s.cfg.MaxInputBytes)),
		Fields:  []ports.FieldError{{Field: field + "content", Reason: "must be at most " + formatSize(s.cfg.MaxInputBytes)}}}
}

func (s *Service) sessionTooLarge(total int64) error {
	if total <= s.cfg.MaxSessionBytes {
		return nil
	}
	return &ports.Error{Kind: ports.KindPayloadTooLarge,
		Message: fmt.Sprintf("the session's inputs would total %s; the limit is %s", formatSize(total), formatSize(s.cfg.MaxSessionBytes))}
}

// formatSize says n bytes in the largest binary unit that fits, rounded up
// to one decimal, so a size over a limit never reads as the limit.
func formatSize(n int64) string {
	units := []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}}
	for _, u := range units {
		if n >= u.size {
			v := math.Ceil(float64(n)*10/float64(u.size)) / 10
			return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0") + " " + u.name
		}
	}
	if n == 1 {
		return "1 byte"
	}
	return fmt.Sprintf("%d bytes", n)
}

func (s *Service) newInput(sessionID string, in NewInput) ports.SpecInput {
	return ports.SpecInput{ID: s.d.IDs.NewID(), SessionID: sessionID, Kind: in.Kind, Title: in.Title,
		ContentType: in.ContentType, Size: int64(len(in.Content)), Content: in.Content, CreatedAt: s.d.Clock.Now()}
}

// CreateSession creates a draft session for the caller with its first inputs
// (none is allowed; generate then fails until one is added). Errors: invalid
// (fields name, inputs — more than MaxInputsPerRequest —, inputs[i].kind,
// inputs[i].title, inputs[i].content_type, inputs[i].content);
// payload_too_large when an input or all of them exceed the limits, saying by
// how much; with InRepository, invalid (repo_id) as SetRepository.
func (s *Service) CreateSession(ctx context.Context, name string, inputs []NewInput, opts ...SessionOption) (View, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return View{}, err
	}
	if len(inputs) > MaxInputsPerRequest {
		return View{}, ports.Invalid(fmt.Sprintf("%d inputs in one request; at most %d may be sent at once (add more with POST /pse/sessions/{id}/inputs, up to %d per session)",
			len(inputs), MaxInputsPerRequest, MaxInputsPerSession),
			ports.FieldError{Field: "inputs", Reason: fmt.Sprintf("at most %d items", MaxInputsPerRequest)})
	}
	name, fields := checkName(name)
	cleaned := make([]NewInput, len(inputs))
	for i, in := range inputs {
		var fs []ports.FieldError
		cleaned[i], fs = checkInput(in, fmt.Sprintf("inputs[%d].", i))
		fields = append(fields, fs...)
	}
	var o sessionOptions
	for _, opt := range opts {
		opt(&o)
	}
	if err := invalid(fields); err != nil {
		return View{}, err
	}
	if o.repoID != "" {
		if err := s.checkRepository(ctx, p, o.repoID); err != nil {
			return View{}, err
		}
	}
	var total int64
	for i, in := range cleaned {
		if err := s.inputTooLarge(in, fmt.Sprintf("inputs[%d].", i)); err != nil {
			return View{}, err
		}
		total += int64(len(in.Content))
	}
	if err := s.sessionTooLarge(total); err != nil {
		return View{}, err
	}
	now := s.d.Clock.Now()
	sess := ports.SpecSession{ID: s.d.IDs.NewID(), OrgID: p.OrgID, UserID: p.UserID, Name: name, RepoID: o.repoID,
		Status: ports.SpecDraft, CreatedAt: now, UpdatedAt: now}
	stored := make([]ports.SpecInput, len(cleaned))
	for i, in := range cleaned {
		stored[i] = s.newInput(sess.ID, in)
	}
	if err := s.d.Specs.CreateSpecSession(ctx, sess, stored); err != nil {
		return View{}, err
	}
	return View{Session: sess, Inputs: withoutContent(stored), Artifacts: []ports.SpecArtifact{}, NextStage: nextStage(sess.CurrentStage)}, nil
}

// AddInput adds an input to the caller's session, at any time; a generation
// that is running already does not see it. It returns the input without its
// content. Errors: not_found when the session is absent or another's;
// invalid (fields kind, title, content_type, content); payload_too_large
// when the input or the session's inputs with it exceed the limits;
// conflict (code too_many_inputs) when the session has MaxInputsPerSession
// inputs already.
func (s *Service) AddInput(ctx context.Context, sessionID string, in NewInput) (ports.SpecInput, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return ports.SpecInput{}, err
	}
	if !ports.IsID(sessionID) {
		return ports.SpecInput{}, ports.NotFound("specification session", sessionID)
	}
	in, fields := checkInput(in, "")
	if err := invalid(fields); err != nil {
		return ports.SpecInput{}, err
	}
	if err := s.inputTooLarge(in, ""); err != nil {
		return ports.SpecInput{}, err
	}
	var stored ports.SpecInput
	err = s.d.Tx.WithinTx(ctx, func(ctx context.Context) error {
		if _, err := s.d.Specs.GetSpecSession(ctx, p.Owner(), sessionID); err != nil {
			return err
		}
		// The store checks the limits and adds in one atomic step, so
		// concurrent adds cannot pass them together.
		stored = s.newInput(sessionID, in)
		had, err := s.d.Specs.AddSpecInput(ctx, p.Owner(), stored,
			ports.SpecInputLimits{MaxInputs: MaxInputsPerSession, MaxBytes: s.cfg.MaxSessionBytes})
		if !errors.Is(err, ports.ErrSpecInputsFull) {
			return err
		}
		if had.Inputs >= MaxInputsPerSession {
			return &ports.Error{Kind: ports.KindConflict, Code: CodeTooManyInputs,
				Message: fmt.Sprintf("the session has %d inputs, the most a session may have", had.Inputs)}
		}
		if tooLarge := s.sessionTooLarge(had.Bytes + stored.Size); tooLarge != nil {
			return tooLarge
		}
		return err
	})
	if err != nil {
		return ports.SpecInput{}, err
	}
	stored.Content = ""
	return stored, nil
}

// GetSession returns the caller's session with its inputs (without their
// content) and artifacts. Errors: not_found when absent or another's.
func (s *Service) GetSession(ctx context.Context, id string) (View, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return View{}, err
	}
	if !ports.IsID(id) {
		return View{}, ports.NotFound("specification session", id)
	}
	sess, err := s.d.Specs.GetSpecSession(ctx, p.Owner(), id)
	if err != nil {
		return View{}, err
	}
	inputs, err := s.d.Specs.ListSpecInputs(ctx, id)
	if err != nil {
		return View{}, err
	}
	arts, err := s.d.Specs.ListArtifacts(ctx, id)
	if err != nil {
		return View{}, err
	}
	if arts == nil {
		arts = []ports.SpecArtifact{}
	}
	s.nameEditors(ctx, p, arts)
	return View{Session: sess, Inputs: withoutContent(inputs), Artifacts: arts, NextStage: nextStage(sess.CurrentStage)}, nil
}

// ListSessions returns the caller's sessions, most recently updated first,
// and the cursor of the next page ("" at the end). A zero Limit means 50.
// Errors: invalid for a limit outside 1..200 or a malformed cursor.
func (s *Service) ListSessions(ctx context.Context, page ports.Page) ([]ports.SpecSession, string, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return nil, "", err
	}
	page, err = page.Checked()
	if err != nil {
		return nil, "", err
	}
	return s.d.Specs.ListSpecSessions(ctx, p.Owner(), page)
}

func withoutContent(inputs []ports.SpecInput) []ports.SpecInput {
	out := make([]ports.SpecInput, len(inputs))
	for i, in := range inputs {
		in.Content = ""
		out[i] = in
	}
	return out
}
