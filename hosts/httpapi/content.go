package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/devpilot/devpilot/core/content"
	"github.com/devpilot/devpilot/ports"
)

// Content is the content engine as the transport calls it.
type Content interface {
	Brand(ctx context.Context, projectID string) (ports.Brand, error)
	PutBrand(ctx context.Context, projectID string, in content.BrandInput) (ports.Brand, error)
	CreateBrief(ctx context.Context, in content.BriefInput) (ports.Brief, error)
	Brief(ctx context.Context, id string) (ports.Brief, error)
	ListBriefs(ctx context.Context, projectID string, page ports.Page) ([]ports.Brief, string, error)
	Generate(ctx context.Context, briefID string, variants int) ([]ports.ContentItem, error)
	Item(ctx context.Context, id string) (ports.ContentItem, error)
	ListItems(ctx context.Context, f ports.ContentFilter, page ports.Page) ([]ports.ContentItem, string, error)
	UpdateItem(ctx context.Context, id string, in content.UpdateInput) (ports.ContentItem, error)
	DeleteItem(ctx context.Context, id string) error
	WatchItem(ctx context.Context, id string, emit func(ports.ContentItem) error) error
	CreateTarget(ctx context.Context, in content.TargetInput) (content.NewTarget, error)
	Targets(ctx context.Context, projectID string) ([]ports.PublishTarget, error)
	DeleteTarget(ctx context.Context, id string) error
	Publish(ctx context.Context, itemID, targetID string, at *time.Time, overrideReason *string) (ports.Publication, error)
	Publications(ctx context.Context, itemID string) ([]ports.Publication, error)
	CancelPublication(ctx context.Context, itemID, pubID string) (ports.Publication, error)
	CreateProject(ctx context.Context, in content.ProjectInput) (ports.ContentProject, error)
	Project(ctx context.Context, id string) (ports.ContentProject, error)
	ListProjects(ctx context.Context, page ports.Page) ([]ports.ContentProject, string, error)
	UpdateProject(ctx context.Context, id string, in content.ProjectPatch) (ports.ContentProject, error)
}

// contentRoutes serves the content engine at /content/… and under /api/v1.
//
// httprouter cannot hold /content/briefs beside /content/:content_id, so
// /content/:a and /content/:a/:b are registered once per method and
// contentDispatch picks the handler by the reserved first segment.
func (s *Server) contentRoutes() {
	for _, p := range []string{"", "/api/v1"} {
		s.handle(http.MethodGet, p+"/content", s.listContent)
		for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
			s.handle(m, p+"/content/:a", s.contentDispatch)
			if m == http.MethodGet {
				// GET /content/{id}/events streams: the route has no request
				// timeout, and contentDispatch puts the others' back.
				s.handle(m, p+"/content/:a/:b", s.contentDispatch, streaming)
				s.handle(http.MethodHead, p+"/content/:a/:b", s.contentDispatch)
				continue
			}
			s.handle(m, p+"/content/:a/:b", s.contentDispatch)
		}
		s.handle(http.MethodDelete, p+"/content/:a/:b/:c", s.contentDispatch)
		s.handle(http.MethodPatch, p+"/content/:a/:b", s.contentDispatch)
	}
}

// contentTable maps a reserved first segment ("" for a content id), the
// number of segments and, under a content id, the second segment to the
// handlers by method.
type contentKey struct {
	name     string
	segments int
	sub      string
}

func (s *Server) contentTable() map[contentKey]map[string]handlerFunc {
	return map[contentKey]map[string]handlerFunc{
		{"", 1, ""}:             {http.MethodGet: s.getContent, http.MethodPut: s.updateContent, http.MethodDelete: s.deleteContent},
		{"briefs", 1, ""}:       {http.MethodGet: s.listBriefs, http.MethodPost: s.createBrief},
		{"briefs", 2, ""}:       {http.MethodGet: s.getBrief},
		{"generate", 1, ""}:     {http.MethodPost: s.limited(s.generateContent)},
		{"brands", 2, ""}:       {http.MethodGet: s.getBrand, http.MethodPut: s.putBrand},
		{"", 2, "events"}:       {http.MethodGet: s.contentEvents},
		{"targets", 1, ""}:      {http.MethodGet: s.listTargets, http.MethodPost: s.createTarget},
		{"targets", 2, ""}:      {http.MethodDelete: s.deleteTarget},
		{"", 2, "publish"}:      {http.MethodPost: s.publishContent},
		{"", 2, "publications"}: {http.MethodGet: s.listPublications},
		{"", 3, "publications"}: {http.MethodDelete: s.cancelPublication},
		{"projects", 1, ""}:     {http.MethodGet: s.listProjects, http.MethodPost: s.createProject},
		{"projects", 2, ""}:     {http.MethodGet: s.getProject, http.MethodPatch: s.updateProject},
	}
}

// contentPatterns are the documented routes of contentTable's keys.
var contentPatterns = map[contentKey]string{
	{"", 1, ""}:             "/content/:content_id",
	{"briefs", 1, ""}:       "/content/briefs",
	{"briefs", 2, ""}:       "/content/briefs/:brief_id",
	{"generate", 1, ""}:     "/content/generate",
	{"brands", 2, ""}:       "/content/brands/:project_id",
	{"", 2, "events"}:       "/content/:content_id/events",
	{"targets", 1, ""}:      "/content/targets",
	{"targets", 2, ""}:      "/content/targets/:target_id",
	{"", 2, "publish"}:      "/content/:content_id/publish",
	{"", 2, "publications"}: "/content/:content_id/publications",
	{"", 3, "publications"}: "/content/:content_id/publications/:publication_id",
	{"projects", 1, ""}:     "/content/projects",
	{"projects", 2, ""}:     "/content/projects/:project_id",
}

// contentReserved are the first segments that are not content ids.
var contentReserved = []string{"briefs", "generate", "brands", "targets", "projects"}

func (s *Server) contentDispatch(w http.ResponseWriter, r *http.Request) error {
	key := contentKey{segments: 1}
	if a := pathParam(r, "a"); slices.Contains(contentReserved, a) {
		key.name = a
	}
	if pathParam(r, "b") != "" {
		key.segments = 2
	}
	if pathParam(r, "c") != "" {
		key.segments = 3
	}
	if key.name == "" && key.segments > 1 {
		key.sub = pathParam(r, "b")
	}
	events := key == contentKey{segments: 2, sub: "events"}
	if events && r.Method == http.MethodHead {
		w.Header().Set("Allow", http.MethodGet)
		return &ports.Error{Kind: kindMethodNotAllowed, Message: "an event stream is not served to HEAD; use GET"}
	}
	if r.Method == http.MethodGet && key.segments == 2 && !events {
		// The route streams for the events; this request does not.
		ctx, cancel := context.WithTimeoutCause(r.Context(), s.cfg.RequestTimeout, errRequestTimeout)
		defer cancel()
		r = r.WithContext(ctx)
	}
	methods, ok := s.contentTable()[key]
	if info := infoFrom(r.Context()); ok {
		// The route the metrics, logs and traces name is the documented
		// one, not the router's /content/:a.
		prefix, _, _ := strings.Cut(info.route, "/content/")
		info.route = prefix + contentPatterns[key]
	}
	if !ok {
		return &ports.Error{Kind: ports.KindNotFound, Message: fmt.Sprintf("no route for %s %s", r.Method, r.URL.Path)}
	}
	if err := s.checkPermission(r, r.Method, contentPatterns[key]); err != nil {
		return err
	}
	method := r.Method
	if method == http.MethodHead {
		method = http.MethodGet
	}
	h, ok := methods[method]
	if !ok {
		allow := make([]string, 0, len(methods))
		for m := range methods {
			allow = append(allow, m)
		}
		slices.Sort(allow)
		w.Header().Set("Allow", strings.Join(allow, ", "))
		return &ports.Error{Kind: kindMethodNotAllowed,
			Message: fmt.Sprintf("method %s is not allowed on %s; allowed: %s", r.Method, r.URL.Path, strings.Join(allow, ", "))}
	}
	return h(w, r)
}

// brandJSON is a project's brand settings on the wire; UpdatedAt is null for
// the defaults of a project that has none.
type brandJSON struct {
	ProjectID   string   `json:"project_id"`
	Name        string   `json:"name"`
	Voice       string   `json:"voice"`
	Tone        []string `json:"tone"`
	Audience    string   `json:"audience"`
	Values      []string `json:"values"`
	BannedWords []string `json:"banned_words"`
	// BannedWordsBlocking makes a banned word block approval and publishing.
	BannedWordsBlocking bool              `json:"banned_words_blocking"`
	PreferredTerms      map[string]string `json:"preferred_terms"`
	StyleGuide          string            `json:"style_guide"`
	Examples            []string          `json:"examples"`
	UpdatedAt           *time.Time        `json:"updated_at"`
	Version             int               `json:"version"`
}

func brandOut(b ports.Brand) brandJSON {
	out := brandJSON{ProjectID: b.ProjectID, Name: b.Name, Voice: b.Voice, Tone: nonNil(b.Tone), Audience: b.Audience,
		Values: nonNil(b.Values), BannedWords: nonNil(b.BannedWords), BannedWordsBlocking: b.BannedWordsBlocking, PreferredTerms: b.PreferredTerms,
		StyleGuide: b.StyleGuide, Examples: nonNil(b.Examples), Version: b.Version}
	if out.PreferredTerms == nil {
		out.PreferredTerms = map[string]string{}
	}
	if !b.UpdatedAt.IsZero() {
		out.UpdatedAt = utc(&b.UpdatedAt)
	}
	return out
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

type putBrandRequest struct {
	Name        string   `json:"name"`
	Voice       string   `json:"voice"`
	Tone        []string `json:"tone"`
	Audience    string   `json:"audience"`
	Values      []string `json:"values"`
	BannedWords []string `json:"banned_words"`
	// BannedWordsBlocking makes a banned word block approval and publishing.
	BannedWordsBlocking bool              `json:"banned_words_blocking"`
	PreferredTerms      map[string]string `json:"preferred_terms"`
	StyleGuide          string            `json:"style_guide"`
	Examples            []string          `json:"examples"`
	// Version, like If-Match, makes the replacement conditional.
	Version *int `json:"version"`
	// ProjectID and UpdatedAt are accepted so a GET's body can be sent back.
	ProjectID *string    `json:"project_id"`
	UpdatedAt *time.Time `json:"updated_at"`
}

func (s *Server) getBrand(w http.ResponseWriter, r *http.Request) error {
	b, err := s.d.Content.Brand(r.Context(), pathParam(r, "b"))
	if err != nil {
		return err
	}
	setETag(w, b.Version)
	return writeJSON(w, http.StatusOK, brandOut(b))
}

func (s *Server) putBrand(w http.ResponseWriter, r *http.Request) error {
	projectID := pathParam(r, "b")
	var req putBrandRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.ProjectID != nil && *req.ProjectID != projectID {
		return ports.Invalid("project_id in the body differs from the path",
			ports.FieldError{Field: "project_id", Reason: "must match the path"})
	}
	version, err := expectedVersion(r, req.Version)
	if err != nil {
		return err
	}
	b, err := s.d.Content.PutBrand(r.Context(), projectID, content.BrandInput{
		Name: req.Name, Voice: req.Voice, Tone: req.Tone, Audience: req.Audience, Values: req.Values,
		BannedWords: req.BannedWords, BannedWordsBlocking: req.BannedWordsBlocking, PreferredTerms: req.PreferredTerms, StyleGuide: req.StyleGuide,
		Examples: req.Examples, IfVersion: version,
	})
	if err != nil {
		return err
	}
	setETag(w, b.Version)
	return writeJSON(w, http.StatusOK, brandOut(b))
}

type lengthJSON struct {
	MinWords int `json:"min_words"`
	MaxWords int `json:"max_words"`
}

type briefJSON struct {
	ID        string     `json:"id"`
	ProjectID string     `json:"project_id"`
	Title     string     `json:"title"`
	Goal      string     `json:"goal"`
	Audience  string     `json:"audience"`
	Channel   string     `json:"channel"`
	Format    string     `json:"format"`
	Keywords  []string   `json:"keywords"`
	CTA       string     `json:"cta"`
	Length    lengthJSON `json:"length"`
	Notes     string     `json:"notes"`
	CreatedBy string     `json:"created_by"`
	CreatedAt time.Time  `json:"created_at"`
}

func briefOut(b ports.Brief) briefJSON {
	return briefJSON{ID: b.ID, ProjectID: b.ProjectID, Title: b.Title, Goal: b.Goal, Audience: b.Audience,
		Channel: b.Channel, Format: b.Format, Keywords: nonNil(b.Keywords), CTA: b.CTA,
		Length: lengthJSON{MinWords: b.MinWords, MaxWords: b.MaxWords}, Notes: b.Notes,
		CreatedBy: b.CreatedBy, CreatedAt: b.CreatedAt.UTC()}
}

type createBriefRequest struct {
	ProjectID *string     `json:"project_id"`
	Title     *string     `json:"title"`
	Goal      string      `json:"goal"`
	Audience  string      `json:"audience"`
	Channel   string      `json:"channel"`
	Format    string      `json:"format"`
	Keywords  []string    `json:"keywords"`
	CTA       string      `json:"cta"`
	Length    *lengthJSON `json:"length"`
	Notes     string      `json:"notes"`
}

func (s *Server) createBrief(w http.ResponseWriter, r *http.Request) error {
	var req createBriefRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	var absent []string
	if req.ProjectID == nil {
		absent = append(absent, "project_id")
	}
	if req.Title == nil {
		absent = append(absent, "title")
	}
	if len(absent) > 0 {
		return missing(absent...)
	}
	in := content.BriefInput{ProjectID: *req.ProjectID, Title: *req.Title, Goal: req.Goal, Audience: req.Audience,
		Channel: req.Channel, Format: req.Format, Keywords: req.Keywords, CTA: req.CTA, Notes: req.Notes}
	if req.Length != nil {
		in.MinWords, in.MaxWords = req.Length.MinWords, req.Length.MaxWords
	}
	b, err := s.d.Content.CreateBrief(r.Context(), in)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, briefOut(b))
}

func (s *Server) getBrief(w http.ResponseWriter, r *http.Request) error {
	b, err := s.d.Content.Brief(r.Context(), pathParam(r, "b"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, briefOut(b))
}

func (s *Server) listBriefs(w http.ResponseWriter, r *http.Request) error {
	page, err := pageParams(r)
	if err != nil {
		return err
	}
	briefs, next, err := s.d.Content.ListBriefs(r.Context(), r.URL.Query().Get("project_id"), page)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, list(mapSlice(briefs, briefOut), next))
}

type contentItemJSON struct {
	ID        string               `json:"id"`
	ProjectID string               `json:"project_id"`
	BriefID   string               `json:"brief_id"`
	Title     string               `json:"title"`
	Body      string               `json:"body"`
	Format    string               `json:"format"`
	Status    ports.ContentStatus  `json:"status"`
	Checks    []ports.ContentCheck `json:"checks"`
	Error     *ports.ContentError  `json:"error,omitempty"`
	Variant   int                  `json:"variant"`
	Model     string               `json:"model,omitempty"`
	CreatedBy string               `json:"created_by"`
	Version   int                  `json:"version"`
	CreatedAt time.Time            `json:"created_at"`
	UpdatedAt time.Time            `json:"updated_at"`
	// PublishedAt is when the item was last published; absent before.
	PublishedAt *time.Time `json:"published_at,omitempty"`
	// PublishedURL is where the item was published; absent before, or
	// when its target reported no URL.
	PublishedURL string `json:"published_url,omitempty"`
	// PublishedVia is how: "target" or "elsewhere"; absent before.
	PublishedVia string `json:"published_via,omitempty"`
	// Override is the latest "publish anyway" despite brand findings.
	Override *overrideJSON `json:"override,omitempty"`
	// GeneratedBy says who made the text: the person who last edited its
	// title or body, else the model; null while none has written it.
	GeneratedBy *generatedByJSON `json:"generated_by"`
}

// overrideJSON is a recorded override of brand findings.
type overrideJSON struct {
	Reason string    `json:"reason"`
	By     string    `json:"by"`
	At     time.Time `json:"at"`
}

// overrideRequest is the override a client gives to approve or publish an
// item despite its brand findings.
type overrideRequest struct {
	Reason *string `json:"reason"`
}

// reason is the override's reason; "" (invalid) when the object has none.
func (o *overrideRequest) reason() *string {
	if o == nil {
		return nil
	}
	if o.Reason == nil {
		return new(string)
	}
	return o.Reason
}

func contentItemOut(it ports.ContentItem) contentItemJSON {
	out := contentItemJSON{ID: it.ID, ProjectID: it.ProjectID, BriefID: it.BriefID, Title: it.Title, Body: it.Body,
		Format: it.Format, Status: it.Status, Checks: nonNil(it.Checks), Error: it.Error, Variant: it.Variant,
		Model: it.Model, CreatedBy: it.CreatedBy, Version: it.Version, CreatedAt: it.CreatedAt.UTC(), UpdatedAt: it.UpdatedAt.UTC(),
		PublishedAt: utc(it.PublishedAt), PublishedURL: it.PublishedURL, PublishedVia: it.PublishedVia,
		GeneratedBy: contentGeneratedBy(it)}
	if it.Override != nil {
		out.Override = &overrideJSON{Reason: it.Override.Reason, By: it.Override.By, At: it.Override.At.UTC()}
	}
	return out
}

type generateContentRequest struct {
	BriefID  *string `json:"brief_id"`
	Variants int     `json:"variants"`
}

func (s *Server) generateContent(w http.ResponseWriter, r *http.Request) error {
	var req generateContentRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.BriefID == nil {
		return missing("brief_id")
	}
	if err := s.checkBudget(r); err != nil {
		return err
	}
	items, err := s.d.Content.Generate(r.Context(), *req.BriefID, req.Variants)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusAccepted, map[string]any{"items": mapSlice(items, contentItemOut)})
}

func (s *Server) listContent(w http.ResponseWriter, r *http.Request) error {
	page, err := pageParams(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	f := ports.ContentFilter{ProjectID: q.Get("project_id"), BriefID: q.Get("brief_id"), Status: ports.ContentStatus(q.Get("status"))}
	items, next, err := s.d.Content.ListItems(r.Context(), f, page)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, list(mapSlice(items, contentItemOut), next))
}

// contentEvents streams the states of a content item as they commit (SSE
// event "item", the item as GET returns it, its id the state's tag; with
// Last-Event-ID, the state the client saw is not sent again), with pings,
// until the client leaves or the server stops, when the client reconnects
// (to another replica).
func (s *Server) contentEvents(w http.ResponseWriter, r *http.Request) error {
	watch := func(ctx context.Context, emit func(ports.ContentItem) error) error {
		return s.d.Content.WatchItem(ctx, pathParam(r, "a"), emit)
	}
	return serveProgress(s, w, r, "item", watch, content.StateTag, func(it ports.ContentItem) any { return contentItemOut(it) })
}

func (s *Server) getContent(w http.ResponseWriter, r *http.Request) error {
	it, err := s.d.Content.Item(r.Context(), pathParam(r, "a"))
	if err != nil {
		return err
	}
	setETag(w, it.Version)
	return writeJSON(w, http.StatusOK, contentItemOut(it))
}

type updateContentRequest struct {
	Version *int                 `json:"version"`
	Title   *string              `json:"title"`
	Body    *string              `json:"body"`
	Format  *string              `json:"format"`
	Status  *ports.ContentStatus `json:"status"`
	// PublishedURL marks the item as published elsewhere (with status
	// published).
	PublishedURL *string `json:"published_url"`
	// Override approves or publishes despite brand findings.
	Override *overrideRequest `json:"override"`
}

func (s *Server) updateContent(w http.ResponseWriter, r *http.Request) error {
	var req updateContentRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	version, err := expectedVersion(r, req.Version)
	if err != nil {
		return err
	}
	in := content.UpdateInput{Title: req.Title, Body: req.Body, Format: req.Format, Status: req.Status,
		PublishedURL: req.PublishedURL, OverrideReason: req.Override.reason()}
	if version != nil {
		in.Version = *version
	}
	it, err := s.d.Content.UpdateItem(r.Context(), pathParam(r, "a"), in)
	if err != nil {
		return err
	}
	setETag(w, it.Version)
	return writeJSON(w, http.StatusOK, contentItemOut(it))
}

func (s *Server) deleteContent(w http.ResponseWriter, r *http.Request) error {
	if err := s.d.Content.DeleteItem(r.Context(), pathParam(r, "a")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// setETag sends a record's version as its strong entity tag.
func setETag(w http.ResponseWriter, version int) {
	w.Header().Set("ETag", strconv.Quote(strconv.Itoa(version)))
}

// expectedVersion is the version a conditional write names: If-Match
// ("3", W/"3" or 3) or the body's version, which must agree when both are
// sent; nil when neither is. A list of tags or "*" names no single version
// and is invalid.
func expectedVersion(r *http.Request, body *int) (*int, error) {
	h := strings.TrimSpace(r.Header.Get("If-Match"))
	if h == "" {
		return body, nil
	}
	tag := strings.TrimPrefix(h, "W/")
	if unq, err := strconv.Unquote(tag); err == nil {
		tag = unq
	}
	n, err := strconv.Atoi(tag)
	if err != nil || n < 0 {
		return nil, ports.Invalid(fmt.Sprintf("If-Match must name one version, such as \"3\", not %.50q", h),
			ports.FieldError{Field: "If-Match", Reason: "must be one version"})
	}
	if body != nil && *body != n {
		return nil, ports.Invalid(fmt.Sprintf("If-Match names version %d but the body's version is %d", n, *body),
			ports.FieldError{Field: "version", Reason: "must agree with If-Match"})
	}
	return &n, nil
}
