package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/devpilot/devpilot/core/spec"
	"github.com/devpilot/devpilot/ports"
)

// Spec is the specification engine as the transport calls it.
type Spec interface {
	CreateSession(ctx context.Context, name string, inputs []spec.NewInput, opts ...spec.SessionOption) (spec.View, error)
	SetRepository(ctx context.Context, sessionID, repoID string) (spec.View, error)
	RenameSession(ctx context.Context, sessionID, name string) (spec.View, error)
	DeleteSession(ctx context.Context, sessionID string) error
	AddInput(ctx context.Context, sessionID string, in spec.NewInput) (ports.SpecInput, error)
	GenerateThrough(ctx context.Context, sessionID string, stage, through ports.Stage) (ports.SpecSession, error)
	WatchSession(ctx context.Context, sessionID string, emit func(ports.SpecSession) error) error
	GetSession(ctx context.Context, id string) (spec.View, error)
	ExportSession(ctx context.Context, id string, format spec.ExportFormat) (*spec.Export, error)
	Traceability(ctx context.Context, id string) (spec.Traceability, error)
	StartIssueExport(ctx context.Context, sessionID, repoID string, includePRPs bool) (ports.IssueExport, error)
	GetIssueExport(ctx context.Context, sessionID, exportID string) (spec.IssueExportView, error)
	ListSessions(ctx context.Context, page ports.Page) ([]ports.SpecSession, string, error)
	ListStandards(ctx context.Context) ([]ports.Standard, error)
	GetStandard(ctx context.Context, id string) (ports.Standard, error)
	CreateStandard(ctx context.Context, in spec.StandardInput) (ports.Standard, error)
	UpdateStandard(ctx context.Context, id string, in spec.StandardInput) (ports.Standard, error)
	DeleteStandard(ctx context.Context, id string) error
	EditStage(ctx context.Context, sessionID string, stage ports.Stage, data json.RawMessage, base *int) (ports.SpecArtifact, error)
	StageVersions(ctx context.Context, sessionID string, stage ports.Stage) ([]ports.SpecArtifact, error)
	DiffVersions(ctx context.Context, sessionID string, stage ports.Stage, from, to int) (spec.StageDiff, error)
}

// specUploadLimit bounds a PSE request body: an uploaded document of
// ports.MaxDocumentBytes (20 MiB; its text is capped apart), or a session's
// text inputs (8 MiB by default), plus multipart framing.
const specUploadLimit = ports.MaxDocumentBytes + 1<<20

// specRoutes serves the specification engine at /pse/… and, like the
// assistant's, under /api/v1 (docs/api.md, "Specification engine").
func (s *Server) specRoutes() {
	for _, p := range []string{"", "/api/v1"} {
		s.handle(http.MethodPost, p+"/pse/sessions", s.createSpecSession, maxBody(specUploadLimit))
		s.handle(http.MethodGet, p+"/pse/sessions", s.listSpecSessions)
		s.handle(http.MethodGet, p+"/pse/sessions/:session_id", s.getSpecSession)
		s.handle(http.MethodPatch, p+"/pse/sessions/:session_id", s.renameSpecSession)
		s.handle(http.MethodDelete, p+"/pse/sessions/:session_id", s.deleteSpecSession)
		s.handle(http.MethodGet, p+"/pse/sessions/:session_id/events", s.specEvents, streaming)
		s.handle(http.MethodGet, p+"/pse/sessions/:session_id/export", s.exportSpec)
		s.handle(http.MethodGet, p+"/pse/sessions/:session_id/traceability", s.specTraceability)
		s.handle(http.MethodPost, p+"/pse/sessions/:session_id/export/github", s.startIssueExport)
		s.handle(http.MethodGet, p+"/pse/sessions/:session_id/export/github/:export_id", s.getIssueExport)
		s.handle(http.MethodPost, p+"/pse/sessions/:session_id/inputs", s.addSpecInput, maxBody(specUploadLimit))
		s.handle(http.MethodPost, p+"/pse/sessions/:session_id/generate", s.generateSpec, costly)
		s.handle(http.MethodPut, p+"/pse/sessions/:session_id/repository", s.setSpecRepository)
		s.handle(http.MethodPut, p+"/pse/sessions/:session_id/stages/:stage", s.editSpecStage, maxBody(specUploadLimit))
		s.handle(http.MethodGet, p+"/pse/sessions/:session_id/stages/:stage/versions", s.listStageVersions)
		s.handle(http.MethodGet, p+"/pse/sessions/:session_id/stages/:stage/diff", s.diffStageVersions)
		s.handle(http.MethodGet, p+"/pse/standards", s.listStandards)
		s.handle(http.MethodPost, p+"/pse/standards", s.createStandard)
		s.handle(http.MethodPut, p+"/pse/standards", s.updateStandard)
		s.handle(http.MethodDelete, p+"/pse/standards", s.deleteStandard)
		s.handle(http.MethodGet, p+"/pse/standards/:standard_id", s.getStandard)
		s.handle(http.MethodPut, p+"/pse/standards/:standard_id", s.updateStandard)
		s.handle(http.MethodDelete, p+"/pse/standards/:standard_id", s.deleteStandard)
	}
}

type specInputJSON struct {
	Kind    string `json:"kind"`
	Title   string `json:"title"`
	Content string `json:"content"`
}

func (in specInputJSON) input() spec.NewInput {
	return spec.NewInput{Kind: ports.InputKind(in.Kind), Title: in.Title, ContentType: "text/plain", Content: in.Content}
}

type createSpecRequest struct {
	Name   *string         `json:"name"`
	RepoID *string         `json:"repo_id"`
	Inputs []specInputJSON `json:"inputs"`
}

func (s *Server) createSpecSession(w http.ResponseWriter, r *http.Request) error {
	var name, repoID string
	var inputs []spec.NewInput
	if isMultipart(r) {
		form, err := readSpecForm(r, s.d.Documents)
		if err != nil {
			return err
		}
		if form.name == "" {
			return missing("name")
		}
		name, inputs, repoID = form.name, form.inputs, form.repoID
	} else {
		var req createSpecRequest
		if err := decodeJSON(w, r, &req); err != nil {
			return err
		}
		if req.Name == nil {
			return missing("name")
		}
		name = *req.Name
		if req.RepoID != nil {
			repoID = *req.RepoID
		}
		for _, in := range req.Inputs {
			inputs = append(inputs, in.input())
		}
	}
	view, err := s.d.Spec.CreateSession(r.Context(), name, inputs, spec.InRepository(repoID))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, specSessionOut(view))
}

type renameSpecRequest struct {
	Name *string `json:"name"`
}

// renameSpecSession answers PATCH /pse/sessions/{id}: the session renamed.
func (s *Server) renameSpecSession(w http.ResponseWriter, r *http.Request) error {
	var req renameSpecRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.Name == nil {
		return missing("name")
	}
	view, err := s.d.Spec.RenameSession(r.Context(), pathParam(r, "session_id"), *req.Name)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, specSessionOut(view))
}

// deleteSpecSession answers DELETE /pse/sessions/{id}: 204 once the session
// and everything it owns are deleted.
func (s *Server) deleteSpecSession(w http.ResponseWriter, r *http.Request) error {
	if err := s.d.Spec.DeleteSession(r.Context(), pathParam(r, "session_id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

type repositoryRequest struct {
	RepoID *string `json:"repo_id"`
}

// setSpecRepository links a session to a connected repository, or unlinks
// it with "repo_id": null, and answers the session.
func (s *Server) setSpecRepository(w http.ResponseWriter, r *http.Request) error {
	var req repositoryRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	repoID := ""
	if req.RepoID != nil {
		repoID = *req.RepoID
	}
	view, err := s.d.Spec.SetRepository(r.Context(), pathParam(r, "session_id"), repoID)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, specSessionOut(view))
}

func (s *Server) addSpecInput(w http.ResponseWriter, r *http.Request) error {
	var in spec.NewInput
	if isMultipart(r) {
		form, err := readSpecForm(r, s.d.Documents)
		if err != nil {
			return err
		}
		if len(form.inputs) != 1 {
			return &ports.Error{Kind: ports.KindMalformed, Message: "send exactly one file part",
				Fields: []ports.FieldError{{Field: "file", Reason: "exactly one required"}}}
		}
		in = form.inputs[0]
	} else {
		var req specInputJSON
		if err := decodeJSON(w, r, &req); err != nil {
			return err
		}
		in = req.input()
	}
	added, err := s.d.Spec.AddInput(r.Context(), pathParam(r, "session_id"), in)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, specInputOut(added))
}

type generateRequest struct {
	Stage   string `json:"stage"`
	Through string `json:"through"`
}

func (s *Server) generateSpec(w http.ResponseWriter, r *http.Request) error {
	var req generateRequest
	if r.ContentLength != 0 {
		if err := decodeJSON(w, r, &req); err != nil {
			return err
		}
	}
	if err := s.checkBudget(r); err != nil {
		return err
	}
	sess, err := s.d.Spec.GenerateThrough(r.Context(), pathParam(r, "session_id"), ports.Stage(req.Stage), ports.Stage(req.Through))
	if err != nil {
		return err
	}
	out := map[string]string{"session_id": sess.ID, "stage": string(sess.Generating), "status": string(sess.Status)}
	if req.Through != "" && req.Through != out["stage"] {
		out["through"] = req.Through
	}
	return writeJSON(w, http.StatusAccepted, out)
}

func (s *Server) getSpecSession(w http.ResponseWriter, r *http.Request) error {
	view, err := s.d.Spec.GetSession(r.Context(), pathParam(r, "session_id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, specSessionOut(view))
}

func (s *Server) listSpecSessions(w http.ResponseWriter, r *http.Request) error {
	page, err := pageParams(r)
	if err != nil {
		return err
	}
	sessions, next, err := s.d.Spec.ListSessions(r.Context(), page)
	if err != nil {
		return err
	}
	items := make([]specSessionJSON, len(sessions))
	for i, sess := range sessions {
		items[i] = specSessionOut(spec.View{Session: sess, NextStage: spec.NextStage(sess.CurrentStage)})
		items[i].Inputs, items[i].Artifacts = nil, nil
	}
	return writeJSON(w, http.StatusOK, list(items, next))
}

// specForm is what a multipart PSE request carries.
type specForm struct {
	name   string
	repoID string
	inputs []spec.NewInput
}

const maxFormField = 1 << 10

// readSpecForm streams a multipart body: a "name" field, an optional "kind"
// field (document by default) applying to the files, and "file" parts, each
// text/markdown or text/plain, or a PDF or Word document whose text docs
// extracts (readUpload).
func readSpecForm(r *http.Request, docs ports.DocumentText) (specForm, error) {
	mr, err := r.MultipartReader()
	if err != nil {
		return specForm{}, malformed("not a multipart/form-data body: %v", err)
	}
	var form specForm
	kind := ports.InputDocument
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return specForm{}, bodyError(err, "reading the multipart body")
		}
		switch part.FormName() {
		case "name":
			v, err := readField(part)
			if err != nil {
				return specForm{}, err
			}
			form.name = v
		case "repo_id":
			v, err := readField(part)
			if err != nil {
				return specForm{}, err
			}
			form.repoID = v
		case "kind":
			v, err := readField(part)
			if err != nil {
				return specForm{}, err
			}
			kind = ports.InputKind(v)
		case "file":
			if len(form.inputs) == spec.MaxInputsPerRequest {
				return specForm{}, ports.Invalid(fmt.Sprintf("send at most %d files in one request", spec.MaxInputsPerRequest),
					ports.FieldError{Field: "file", Reason: fmt.Sprintf("at most %d files", spec.MaxInputsPerRequest)})
			}
			in, err := readUpload(r.Context(), part, docs)
			if err != nil {
				return specForm{}, err
			}
			form.inputs = append(form.inputs, in)
		}
		part.Close()
	}
	for i := range form.inputs {
		form.inputs[i].Kind = kind
	}
	return form, nil
}

func readField(part *multipart.Part) (string, error) {
	b, err := io.ReadAll(io.LimitReader(part, maxFormField+1))
	if err != nil {
		return "", bodyError(err, "reading a form field")
	}
	if len(b) > maxFormField {
		return "", &ports.Error{Kind: ports.KindInvalid, Message: "form field " + part.FormName() + " is too long",
			Fields: []ports.FieldError{{Field: part.FormName(), Reason: "at most 1 KiB"}}}
	}
	if reason := ports.TextFault(string(b)); reason != "" {
		return "", ports.Invalid("form field "+part.FormName()+" "+reason, ports.FieldError{Field: part.FormName(), Reason: reason})
	}
	return strings.TrimSpace(string(b)), nil
}

var textExtensions = map[string]string{".md": "text/markdown", ".markdown": "text/markdown", ".txt": "text/plain", ".text": "text/plain"}

// readUpload reads an uploaded file: a PDF or a Word document (.docx), by
// its declared type, its extension or (a PDF) its first bytes, is turned
// into text by docs, with "[page N]" lines or blank lines between
// paragraphs kept; anything else must be Markdown or plain UTF-8 text, by
// its declared type or its extension. Without docs a document is 415.
func readUpload(ctx context.Context, part *multipart.Part, docs ports.DocumentText) (spec.NewInput, error) {
	name := part.FileName()
	if reason := ports.TextFault(name); reason != "" {
		return spec.NewInput{}, ports.Invalid("the file name "+reason, ports.FieldError{Field: "file", Reason: "file name " + reason})
	}
	title := strings.TrimSuffix(path.Base(name), path.Ext(name))
	br := bufio.NewReader(part)
	head, _ := br.Peek(5) // a read error surfaces on the next read
	if doc := ports.DocumentType(part.Header.Get("Content-Type"), name, head); doc != "" {
		if docs == nil {
			return spec.NewInput{}, &ports.Error{Kind: ports.KindUnsupportedMedia,
				Message: "PDF and Word uploads are not supported here: upload the document's text as text/markdown or text/plain"}
		}
		text, err := docs.Extract(ctx, doc, name, br, spec.DefaultMaxInputBytes)
		if err != nil {
			if _, ok := errors.AsType[*ports.Error](err); ok || errors.Is(err, context.Canceled) {
				return spec.NewInput{}, err
			}
			return spec.NewInput{}, bodyError(err, "reading an uploaded file")
		}
		return spec.NewInput{Title: title, ContentType: "text/plain", Content: text}, nil
	}
	content, err := io.ReadAll(br)
	if err != nil {
		return spec.NewInput{}, bodyError(err, "reading an uploaded file")
	}
	declared, _, _ := mime.ParseMediaType(part.Header.Get("Content-Type"))
	ct, known := textExtensions[strings.ToLower(path.Ext(name))]
	if declared == "text/markdown" || declared == "text/plain" {
		ct, known = declared, true
	}
	if !known || !utf8.Valid(content) || bytes.IndexByte(content, 0) >= 0 {
		return spec.NewInput{}, &ports.Error{Kind: ports.KindUnsupportedMedia,
			Message: fmt.Sprintf("file %.200q must be UTF-8 text/markdown or text/plain (.md, .markdown, .txt), a PDF with a text layer (.pdf) or a Word document (.docx), without NUL bytes", name)}
	}
	// A leading byte-order mark is the file's encoding signature, not text.
	text := strings.TrimPrefix(string(content), "\uFEFF")
	if reason := ports.TextFault(text); reason != "" {
		return spec.NewInput{}, ports.Invalid(fmt.Sprintf("file %q %s", name, reason), ports.FieldError{Field: "file", Reason: reason})
	}
	return spec.NewInput{Title: title, ContentType: ct, Content: text}, nil
}

// bodyError maps a failure to read the body: over the limit is 413, anything
// else 400.
func bodyError(err error, doing string) error {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return tooLarge(tooBig.Limit)
	}
	return malformed("%s: %v", doing, err)
}

func isMultipart(r *http.Request) bool {
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return mt == "multipart/form-data"
}

type specInputOutJSON struct {
	ID          string    `json:"id"`
	Kind        string    `json:"kind"`
	Title       string    `json:"title"`
	ContentType string    `json:"content_type"`
	Size        int64     `json:"size"`
	CreatedAt   time.Time `json:"created_at"`
}

func specInputOut(in ports.SpecInput) specInputOutJSON {
	return specInputOutJSON{ID: in.ID, Kind: string(in.Kind), Title: in.Title, ContentType: in.ContentType, Size: in.Size, CreatedAt: in.CreatedAt.UTC()}
}

type artifactJSON struct {
	Stage         string             `json:"stage"`
	Version       int                `json:"version"`
	Format        string             `json:"format"`
	Content       string             `json:"content"`
	Data          json.RawMessage    `json:"data"`
	Checks        []string           `json:"checks"`
	Stale         bool               `json:"stale"`
	Model         string             `json:"model"`
	PromptVersion string             `json:"prompt_version"`
	Generation    specGenerationJSON `json:"generation"`
	GeneratedBy   generatedByJSON    `json:"generated_by"`
	CreatedAt     time.Time          `json:"created_at"`
}

// generatedByJSON says who made an artifact's version: {"kind":"model",
// "model":"gpt-4o-mini","sandbox":false} for one a model generated (sandbox
// true when that model was the sandbox's scripted one, not AI),
// {"kind":"user","user_id":"…","user_name":"…"} for one a person wrote by
// hand.
type generatedByJSON struct {
	Kind     string `json:"kind"`
	Model    string `json:"model,omitempty"`
	Sandbox  *bool  `json:"sandbox,omitempty"`
	UserID   string `json:"user_id,omitempty"`
	UserName string `json:"user_name,omitempty"`
}

func generatedByOut(a ports.SpecArtifact) generatedByJSON {
	if a.EditedBy != "" {
		return userMade(a.EditedBy, a.EditorName)
	}
	return modelMade(a.Model)
}

func artifactOut(a ports.SpecArtifact) artifactJSON {
	checks := a.Checks
	if checks == nil {
		checks = []string{}
	}
	return artifactJSON{Stage: string(a.Stage), Version: a.Version, Format: a.Format, Content: a.Content,
		Data: a.Data, Checks: checks, Stale: a.Stale, Model: a.Model, PromptVersion: a.PromptVersion,
		Generation: specGenerationOut(a.Generation), GeneratedBy: generatedByOut(a), CreatedAt: a.CreatedAt.UTC()}
}

type editStageRequest struct {
	Data json.RawMessage `json:"data"`
}

// editSpecStage stores a hand-written version of a stage: the body's data
// on the version If-Match names (428 without it, 412 when stale).
func (s *Server) editSpecStage(w http.ResponseWriter, r *http.Request) error {
	var req editStageRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if len(req.Data) == 0 || string(req.Data) == "null" {
		return missing("data")
	}
	base, err := expectedVersion(r, nil)
	if err != nil {
		return err
	}
	a, err := s.d.Spec.EditStage(r.Context(), pathParam(r, "session_id"), ports.Stage(pathParam(r, "stage")), req.Data, base)
	if err != nil {
		return err
	}
	setETag(w, a.Version)
	return writeJSON(w, http.StatusOK, artifactOut(a))
}

// stageVersionJSON is one version in a stage's list of versions.
type stageVersionJSON struct {
	Version       int             `json:"version"`
	CreatedAt     time.Time       `json:"created_at"`
	Stale         bool            `json:"stale"`
	Model         string          `json:"model"`
	GeneratedBy   generatedByJSON `json:"generated_by"`
	PromptVersion string          `json:"prompt_version"`
}

func (s *Server) listStageVersions(w http.ResponseWriter, r *http.Request) error {
	arts, err := s.d.Spec.StageVersions(r.Context(), pathParam(r, "session_id"), ports.Stage(pathParam(r, "stage")))
	if err != nil {
		return err
	}
	items := make([]stageVersionJSON, len(arts))
	for i, a := range arts {
		items[i] = stageVersionJSON{Version: a.Version, CreatedAt: a.CreatedAt.UTC(), Stale: a.Stale, Model: a.Model,
			GeneratedBy: generatedByOut(a), PromptVersion: a.PromptVersion}
	}
	return writeJSON(w, http.StatusOK, map[string]any{"items": items})
}

type diffItemJSON struct {
	ID      string          `json:"id"`
	Section string          `json:"section"`
	Item    json.RawMessage `json:"item"`
}

type changedItemJSON struct {
	ID      string   `json:"id"`
	Section string   `json:"section"`
	Fields  []string `json:"fields"`
}

type stageDiffJSON struct {
	From     int               `json:"from"`
	To       int               `json:"to"`
	Added    []diffItemJSON    `json:"added"`
	Removed  []diffItemJSON    `json:"removed"`
	Changed  []changedItemJSON `json:"changed"`
	TextDiff string            `json:"text_diff"`
}

func (s *Server) diffStageVersions(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	version := func(name string) (int, error) {
		v := q.Get(name)
		if v == "" {
			return 0, missing(name)
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return 0, ports.Invalid(name+" must be a version number", ports.FieldError{Field: name, Reason: "must be an integer ≥ 1"})
		}
		return n, nil
	}
	from, err := version("from")
	if err != nil {
		return err
	}
	to, err := version("to")
	if err != nil {
		return err
	}
	d, err := s.d.Spec.DiffVersions(r.Context(), pathParam(r, "session_id"), ports.Stage(pathParam(r, "stage")), from, to)
	if err != nil {
		return err
	}
	out := stageDiffJSON{From: d.From, To: d.To, TextDiff: d.TextDiff,
		Added: diffItemsOut(d.Added), Removed: diffItemsOut(d.Removed), Changed: make([]changedItemJSON, len(d.Changed))}
	for i, c := range d.Changed {
		out.Changed[i] = changedItemJSON{ID: c.ID, Section: c.Section, Fields: c.Fields}
	}
	return writeJSON(w, http.StatusOK, out)
}

func diffItemsOut(items []spec.DiffItem) []diffItemJSON {
	out := make([]diffItemJSON, len(items))
	for i, it := range items {
		out[i] = diffItemJSON{ID: it.ID, Section: it.Section, Item: it.Item}
	}
	return out
}

// specGenerationJSON is an artifact's generation statistics; all zero for
// an artifact made before they were recorded.
type specGenerationJSON struct {
	Calls            int            `json:"calls"`
	Batches          int            `json:"batches"`
	FirstTryValid    int            `json:"first_try_valid"`
	InvalidAnswers   int            `json:"invalid_answers"`
	RepairTurns      int            `json:"repair_turns"`
	PromptTokens     int            `json:"prompt_tokens"`
	CompletionTokens int            `json:"completion_tokens"`
	DurationMS       int64          `json:"duration_ms"`
	FindingsByKind   map[string]int `json:"findings_by_kind"`
	Temperature      *float64       `json:"temperature"`
	Seed             *int64         `json:"seed"`
}

func specGenerationOut(g ports.SpecGeneration) specGenerationJSON {
	out := specGenerationJSON(g)
	if out.FindingsByKind == nil {
		out.FindingsByKind = map[string]int{}
	}
	return out
}

// specProgressJSON is the data of a progress stream's session event: the
// session's state, without its inputs and artifacts (GET the session for
// those once it is ready).
type specProgressJSON struct {
	SessionID    string           `json:"session_id"`
	Name         string           `json:"name"`
	Status       string           `json:"status"`
	CurrentStage *string          `json:"current_stage"`
	NextStage    *string          `json:"next_stage"`
	Generating   *string          `json:"generating"`
	Error        *ports.SpecError `json:"error,omitempty"`
	UpdatedAt    time.Time        `json:"updated_at"`
}

// specEvents streams the states of a session as they commit (SSE event
// "session", its id the state's tag; with Last-Event-ID, the state the
// client saw is not sent again), with pings, until the client leaves or
// the server stops, when the client reconnects (to another replica).
func (s *Server) specEvents(w http.ResponseWriter, r *http.Request) error {
	watch := func(ctx context.Context, emit func(ports.SpecSession) error) error {
		return s.d.Spec.WatchSession(ctx, pathParam(r, "session_id"), emit)
	}
	return serveProgress(s, w, r, "session", watch, spec.StateTag, func(sess ports.SpecSession) any {
		return specProgressJSON{
			SessionID: sess.ID, Name: sess.Name, Status: string(sess.Status),
			CurrentStage: optStage(sess.CurrentStage), NextStage: optStage(spec.NextStage(sess.CurrentStage)),
			Generating: optStage(sess.Generating), Error: sess.Error, UpdatedAt: sess.UpdatedAt.UTC(),
		}
	})
}

type specSessionJSON struct {
	ID           string              `json:"id"`
	Name         string              `json:"name"`
	RepoID       *string             `json:"repo_id"`
	Status       string              `json:"status"`
	CurrentStage *string             `json:"current_stage"`
	NextStage    *string             `json:"next_stage"`
	Inputs       *[]specInputOutJSON `json:"inputs,omitempty"`    // nil in lists
	Artifacts    *[]artifactJSON     `json:"artifacts,omitempty"` // nil in lists
	Error        *ports.SpecError    `json:"error,omitempty"`
	CreatedAt    time.Time           `json:"created_at"`
	UpdatedAt    time.Time           `json:"updated_at"`
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func optStage(st ports.Stage) *string {
	if st == "" {
		return nil
	}
	v := string(st)
	return &v
}

func specSessionOut(v spec.View) specSessionJSON {
	out := specSessionJSON{
		ID: v.Session.ID, Name: v.Session.Name, RepoID: optString(v.Session.RepoID), Status: string(v.Session.Status),
		CurrentStage: optStage(v.Session.CurrentStage), NextStage: optStage(v.NextStage),
		Error: v.Session.Error, CreatedAt: v.Session.CreatedAt.UTC(), UpdatedAt: v.Session.UpdatedAt.UTC(),
	}
	inputs, artifacts := make([]specInputOutJSON, len(v.Inputs)), make([]artifactJSON, len(v.Artifacts))
	out.Inputs, out.Artifacts = &inputs, &artifacts
	for i, in := range v.Inputs {
		inputs[i] = specInputOut(in)
	}
	for i, a := range v.Artifacts {
		artifacts[i] = artifactOut(a)
	}
	return out
}

type standardRequest struct {
	ID        string   `json:"id"`
	Title     string   `json:"title"`
	Body      string   `json:"body"`
	AppliesTo []string `json:"applies_to"`
}

func (req standardRequest) input() spec.StandardInput {
	in := spec.StandardInput{Title: req.Title, Body: req.Body}
	for _, st := range req.AppliesTo {
		in.AppliesTo = append(in.AppliesTo, ports.Stage(st))
	}
	return in
}

type standardJSON struct {
	ID        string    `json:"id"`
	Title     string    `json:"title"`
	Body      string    `json:"body"`
	AppliesTo []string  `json:"applies_to"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func standardOut(st ports.Standard) standardJSON {
	out := standardJSON{ID: st.ID, Title: st.Title, Body: st.Body, AppliesTo: []string{}, CreatedAt: st.CreatedAt.UTC(), UpdatedAt: st.UpdatedAt.UTC()}
	for _, a := range st.AppliesTo {
		out.AppliesTo = append(out.AppliesTo, string(a))
	}
	return out
}

func (s *Server) listStandards(w http.ResponseWriter, r *http.Request) error {
	standards, err := s.d.Spec.ListStandards(r.Context())
	if err != nil {
		return err
	}
	items := make([]standardJSON, len(standards))
	for i, st := range standards {
		items[i] = standardOut(st)
	}
	return writeJSON(w, http.StatusOK, list(items, ""))
}

func (s *Server) getStandard(w http.ResponseWriter, r *http.Request) error {
	st, err := s.d.Spec.GetStandard(r.Context(), pathParam(r, "standard_id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, standardOut(st))
}

func (s *Server) createStandard(w http.ResponseWriter, r *http.Request) error {
	var req standardRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	st, err := s.d.Spec.CreateStandard(r.Context(), req.input())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, standardOut(st))
}

// standardID is the standard a request addresses: the path's, else the
// body's id (PUT) or ?id= (DELETE). A body id that contradicts the path is
// invalid.
func standardID(r *http.Request, bodyID string) (string, error) {
	id := pathParam(r, "standard_id")
	switch {
	case id != "" && bodyID != "" && bodyID != id:
		return "", ports.Invalid("the body's id differs from the path's", ports.FieldError{Field: "id", Reason: "must match the path"})
	case id == "" && bodyID != "":
		id = bodyID
	case id == "":
		id = r.URL.Query().Get("id")
	}
	if id == "" {
		return "", missing("id")
	}
	return id, nil
}

func (s *Server) updateStandard(w http.ResponseWriter, r *http.Request) error {
	var req standardRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	id, err := standardID(r, req.ID)
	if err != nil {
		return err
	}
	st, err := s.d.Spec.UpdateStandard(r.Context(), id, req.input())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, standardOut(st))
}

func (s *Server) deleteStandard(w http.ResponseWriter, r *http.Request) error {
	id, err := standardID(r, "")
	if err != nil {
		return err
	}
	if err := s.d.Spec.DeleteStandard(r.Context(), id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
