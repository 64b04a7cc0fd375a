package httpapi

import (
	"context"
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/devpilot/devpilot/core/assistant"
	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/ports"
)

// Assistant is the assistant core as the transport calls it.
type Assistant interface {
	Chat(ctx context.Context, in assistant.ChatInput) (*assistant.Run, error)
	Continue(ctx context.Context, sessionID string) (*assistant.Run, error)
	Confirm(ctx context.Context, in assistant.ConfirmInput) (assistant.ConfirmResult, error)
	ReplayBatches(ctx context.Context, sessionID string, after int64, emit func([]assistant.Event) error) (bool, error)
	Stop(ctx context.Context, sessionID string) (ports.Turn, error)
	ListSessions(ctx context.Context, page ports.Page) ([]ports.ChatSession, string, error)
	SearchSessions(ctx context.Context, q string, page ports.Page) ([]ports.ChatSession, string, error)
	GetSession(ctx context.Context, id string) (assistant.SessionDetail, error)
	DeleteSession(ctx context.Context, id string) error
	GenerateTitle(ctx context.Context, sessionID string) (string, error)
	Preferences(ctx context.Context) ([]ports.Preference, *time.Time, error)
	SetPreferences(ctx context.Context, instructions []string) ([]ports.Preference, time.Time, error)
	ListTools(ctx context.Context) ([]assistant.ToolInfo, error)
	SetToolPolicy(ctx context.Context, name string, alwaysConfirm bool) (assistant.ToolInfo, error)
}

func (s *Server) assistantRoutes() {
	s.handle(http.MethodPost, "/api/v1/agent/chat", s.chat, streaming, costly)
	s.handle(http.MethodPost, "/api/v1/agent/confirm", s.confirm, streaming)
	s.handle(http.MethodGet, "/api/v1/agent/sessions", s.listSessions)
	s.handle(http.MethodGet, "/api/v1/agent/sessions/:session_id", s.getSession)
	s.handle(http.MethodDelete, "/api/v1/agent/sessions/:session_id", s.deleteSession)
	s.handle(http.MethodGet, "/api/v1/agent/sessions/:session_id/stream", s.resumeStream, streaming)
	s.handle(http.MethodPost, "/api/v1/agent/sessions/:session_id/stop", s.stopTurn)
	s.handle(http.MethodPost, "/api/v1/agent/generate-title", s.generateTitle)
	s.handle(http.MethodGet, "/api/v1/agent/memory/preferences", s.getPreferences)
	s.handle(http.MethodPost, "/api/v1/agent/memory/preferences", s.setPreferences)
	s.handle(http.MethodGet, "/api/v1/agent/tools", s.listTools)
	s.handle(http.MethodPut, "/api/v1/agent/tools/:name", s.setToolPolicy)
}

type chatRequest struct {
	Message   *string `json:"message"`
	SessionID string  `json:"session_id"`
	Context   *struct {
		CurrentPage       string `json:"current_page"`
		SelectedProjectID string `json:"selected_project_id"`
	} `json:"context"`
}

// CodeResumeThroughStream (conflict) refuses a chat POST that carries
// Last-Event-ID: a client reconnecting to a stream it lost.
const CodeResumeThroughStream = "resume_through_stream"

func (s *Server) chat(w http.ResponseWriter, r *http.Request) error {
	// A POST is a new message. A client that re-sends it to reconnect (as
	// some SSE clients do, with the last id they saw) would start a second
	// turn; its turn runs on, so it resumes through the stream route.
	if r.Header.Get("Last-Event-ID") != "" {
		return &ports.Error{Kind: ports.KindConflict, Code: CodeResumeThroughStream,
			Message: "this chat message was sent already; to reconnect, GET /api/v1/agent/sessions/{session_id}/stream with Last-Event-ID, and do not send the message again"}
	}
	var req chatRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.Message == nil {
		return missing("message")
	}
	if err := s.checkBudget(r); err != nil {
		return err
	}
	in := assistant.ChatInput{SessionID: req.SessionID, Message: *req.Message}
	if req.Context != nil {
		in.Context = &tool.PageContext{CurrentPage: req.Context.CurrentPage, SelectedProjectID: req.Context.SelectedProjectID}
	}
	run, err := s.d.Assistant.Chat(r.Context(), in)
	if err != nil {
		return err
	}
	// The session is known before any event: a client that loses the
	// stream (or the page) before the first one can still find it.
	w.Header().Set("X-Session-Id", run.SessionID())
	return s.streamRun(w, r, run)
}

// streamRun answers with the run's events as an SSE stream, each batch the
// run stored together in one write. The turn does not end with the request:
// when the client goes, it runs on (bounded by its own timeout) and stores
// every event, for the client to resume through the stream route; only
// Shutdown cancels it. Errors after the stream started are the run's to
// report as events; they are only logged.
func (s *Server) streamRun(w http.ResponseWriter, r *http.Request, run *assistant.Run) error {
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	defer cancel()
	defer context.AfterFunc(s.turns, cancel)()
	stream := s.openSSE(w, pingEvery)
	defer stream.close()
	return run.StreamBatches(ctx, stream.events)
}

type confirmRequest struct {
	SessionID      *string `json:"session_id"`
	ConfirmationID *string `json:"confirmation_id"`
	Approved       *bool   `json:"approved"`
	Reason         string  `json:"reason"`
}

type confirmResponse struct {
	ConfirmationID string       `json:"confirmation_id"`
	Status         string       `json:"status"`
	Result         *outcomeJSON `json:"result,omitempty"`
}

type outcomeJSON struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

func outcome(o *ports.ToolOutcome) *outcomeJSON {
	if o == nil {
		return nil
	}
	return &outcomeJSON{OK: o.OK, Result: o.Result, Error: o.Error}
}

func (s *Server) confirm(w http.ResponseWriter, r *http.Request) error {
	var req confirmRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	var absent []string
	if req.SessionID == nil {
		absent = append(absent, "session_id")
	}
	if req.ConfirmationID == nil {
		absent = append(absent, "confirmation_id")
	}
	if req.Approved == nil {
		absent = append(absent, "approved")
	}
	if len(absent) > 0 {
		return missing(absent...)
	}
	res, err := s.d.Assistant.Confirm(r.Context(), assistant.ConfirmInput{
		SessionID: *req.SessionID, ConfirmationID: *req.ConfirmationID, Approved: *req.Approved, Reason: req.Reason,
	})
	if err != nil {
		return err
	}
	if acceptsEventStream(r) {
		run, err := s.d.Assistant.Continue(r.Context(), *req.SessionID)
		if err != nil {
			return err
		}
		return s.streamRun(w, r, run)
	}
	return writeJSON(w, http.StatusOK, confirmResponse{
		ConfirmationID: res.Confirmation.ID,
		Status:         string(res.Confirmation.Status),
		Result:         outcome(res.Outcome),
	})
}

// acceptsEventStream reports whether the client asked for an SSE answer.
func acceptsEventStream(r *http.Request) bool {
	return mediaTypeAccepted(r, "text/event-stream")
}

// mediaTypeAccepted reports whether the Accept header names the media type.
func mediaTypeAccepted(r *http.Request, want string) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		if mt, _, err := mime.ParseMediaType(strings.TrimSpace(part)); err == nil && mt == want {
			return true
		}
	}
	return false
}

type sessionJSON struct {
	ID                   string    `json:"id"`
	Title                string    `json:"title"`
	CreatedAt            time.Time `json:"created_at"`
	UpdatedAt            time.Time `json:"updated_at"`
	MessageCount         int       `json:"message_count"`
	PendingConfirmations int       `json:"pending_confirmations"`
}

func sessionOut(s ports.ChatSession) sessionJSON {
	return sessionJSON{
		ID: s.ID, Title: s.Title, CreatedAt: s.CreatedAt.UTC(), UpdatedAt: s.UpdatedAt.UTC(),
		MessageCount: s.MessageCount, PendingConfirmations: s.PendingConfirmations,
	}
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) error {
	page, err := pageParams(r)
	if err != nil {
		return err
	}
	sessions, next, err := s.d.Assistant.SearchSessions(r.Context(), r.URL.Query().Get("q"), page)
	if err != nil {
		return err
	}
	items := make([]sessionJSON, len(sessions))
	for i, sess := range sessions {
		items[i] = sessionOut(sess)
	}
	return writeJSON(w, http.StatusOK, list(items, next))
}

type toolCallJSON struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type messageJSON struct {
	ID         string         `json:"id"`
	Role       string         `json:"role"`
	Content    string         `json:"content"`
	ToolCalls  []toolCallJSON `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
	Name       string         `json:"name,omitempty"`
	CreatedAt  time.Time      `json:"created_at"`
}

type confirmationJSON struct {
	ID         string          `json:"id"`
	ToolCallID string          `json:"tool_call_id"`
	Name       string          `json:"name"`
	Arguments  json.RawMessage `json:"arguments"`
	Summary    string          `json:"summary"`
	Status     string          `json:"status"`
	CreatedAt  time.Time       `json:"created_at"`
	ExpiresAt  time.Time       `json:"expires_at"`
	DecidedAt  *time.Time      `json:"decided_at,omitempty"`
	DecidedBy  string          `json:"decided_by,omitempty"`
	Reason     string          `json:"reason,omitempty"`
	Result     *outcomeJSON    `json:"result,omitempty"`
	ExecutedAt *time.Time      `json:"executed_at,omitempty"`
}

type sessionDetailJSON struct {
	sessionJSON
	Messages      []messageJSON      `json:"messages"`
	Confirmations []confirmationJSON `json:"confirmations"`
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) error {
	d, err := s.d.Assistant.GetSession(r.Context(), pathParam(r, "session_id"))
	if err != nil {
		return err
	}
	out := sessionDetailJSON{
		sessionJSON:   sessionOut(d.Session),
		Messages:      make([]messageJSON, len(d.Messages)),
		Confirmations: make([]confirmationJSON, len(d.Confirmations)),
	}
	for i, m := range d.Messages {
		mj := messageJSON{ID: m.ID, Role: string(m.Role), Content: m.Content, ToolCallID: m.ToolCallID, Name: m.Name, CreatedAt: m.CreatedAt.UTC()}
		for _, c := range m.ToolCalls {
			mj.ToolCalls = append(mj.ToolCalls, toolCallJSON{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
		}
		out.Messages[i] = mj
	}
	for i, c := range d.Confirmations {
		out.Confirmations[i] = confirmationJSON{
			ID: c.ID, ToolCallID: c.ToolCallID, Name: c.ToolName, Arguments: c.Arguments, Summary: c.Summary,
			Status: string(c.Status), CreatedAt: c.CreatedAt.UTC(), ExpiresAt: c.ExpiresAt.UTC(),
			DecidedAt: utc(c.DecidedAt), DecidedBy: c.DecidedBy, Reason: c.Reason,
			Result: outcome(c.Outcome), ExecutedAt: utc(c.ExecutedAt),
		}
	}
	return writeJSON(w, http.StatusOK, out)
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) error {
	if err := s.d.Assistant.DeleteSession(r.Context(), pathParam(r, "session_id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// resumeStream replays a session's events after Last-Event-ID (or ?after=)
// and follows a running turn; 204 when there is nothing to send.
func (s *Server) resumeStream(w http.ResponseWriter, r *http.Request) error {
	after, err := lastEventID(r)
	if err != nil {
		return err
	}
	var stream *sseStream
	defer func() {
		if stream != nil {
			stream.close()
		}
	}()
	replayed, err := s.d.Assistant.ReplayBatches(r.Context(), pathParam(r, "session_id"), after, func(evs []assistant.Event) error {
		if stream == nil {
			stream = s.openSSE(w, pingEvery)
		}
		return stream.events(evs)
	})
	if stream != nil {
		return err
	}
	if err != nil {
		return err
	}
	if !replayed {
		w.WriteHeader(http.StatusNoContent)
	}
	return nil
}

type stopResponse struct {
	SessionID string `json:"session_id"`
	TurnID    string `json:"turn_id"`
	Status    string `json:"status"`
}

// stopTurn asks the session's running turn to stop, on whichever replica it
// runs: 202, and the turn's stream ends with done{finish_reason:"stopped"}.
func (s *Server) stopTurn(w http.ResponseWriter, r *http.Request) error {
	t, err := s.d.Assistant.Stop(r.Context(), pathParam(r, "session_id"))
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusAccepted, stopResponse{SessionID: t.SessionID, TurnID: t.ID, Status: "stopping"})
}

func lastEventID(r *http.Request) (int64, error) {
	field, v := "Last-Event-ID", r.Header.Get("Last-Event-ID")
	if v == "" {
		field, v = "after", r.URL.Query().Get("after")
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return 0, &ports.Error{Kind: ports.KindMalformed, Message: field + " must be a non-negative event id",
			Fields: []ports.FieldError{{Field: field, Reason: "must be a non-negative integer"}}}
	}
	return n, nil
}

type titleRequest struct {
	SessionID *string `json:"session_id"`
}

func (s *Server) generateTitle(w http.ResponseWriter, r *http.Request) error {
	var req titleRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.SessionID == nil {
		return missing("session_id")
	}
	title, err := s.d.Assistant.GenerateTitle(r.Context(), *req.SessionID)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]string{"session_id": *req.SessionID, "title": title})
}

type preferenceJSON struct {
	ID          string    `json:"id"`
	Instruction string    `json:"instruction"`
	CreatedAt   time.Time `json:"created_at"`
}

type preferencesJSON struct {
	Preferences []preferenceJSON `json:"preferences"`
	UpdatedAt   *time.Time       `json:"updated_at"`
}

func preferencesOut(prefs []ports.Preference, at *time.Time) preferencesJSON {
	out := preferencesJSON{Preferences: make([]preferenceJSON, len(prefs)), UpdatedAt: utc(at)}
	for i, p := range prefs {
		out.Preferences[i] = preferenceJSON{ID: p.ID, Instruction: p.Instruction, CreatedAt: p.CreatedAt.UTC()}
	}
	return out
}

func (s *Server) getPreferences(w http.ResponseWriter, r *http.Request) error {
	prefs, at, err := s.d.Assistant.Preferences(r.Context())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, preferencesOut(prefs, at))
}

type setPreferencesRequest struct {
	Preferences *[]struct {
		Instruction string `json:"instruction"`
	} `json:"preferences"`
}

func (s *Server) setPreferences(w http.ResponseWriter, r *http.Request) error {
	var req setPreferencesRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.Preferences == nil {
		return missing("preferences")
	}
	instructions := make([]string, len(*req.Preferences))
	for i, p := range *req.Preferences {
		instructions[i] = p.Instruction
	}
	prefs, at, err := s.d.Assistant.SetPreferences(r.Context(), instructions)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, preferencesOut(prefs, &at))
}

type toolJSON struct {
	Name          string `json:"name"`
	Description   string `json:"description"`
	Effect        string `json:"effect"`
	AlwaysConfirm bool   `json:"always_confirm"`
}

func toolOut(t assistant.ToolInfo) toolJSON {
	return toolJSON{Name: t.Name, Description: t.Description, Effect: string(t.Effect), AlwaysConfirm: t.AlwaysConfirm}
}

// listTools answers the whole catalogue as one page of a list.
func (s *Server) listTools(w http.ResponseWriter, r *http.Request) error {
	tools, err := s.d.Assistant.ListTools(r.Context())
	if err != nil {
		return err
	}
	items := make([]toolJSON, len(tools))
	for i, t := range tools {
		items[i] = toolOut(t)
	}
	return writeJSON(w, http.StatusOK, list(items, ""))
}

type toolPolicyRequest struct {
	AlwaysConfirm *bool `json:"always_confirm"`
}

func (s *Server) setToolPolicy(w http.ResponseWriter, r *http.Request) error {
	var req toolPolicyRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.AlwaysConfirm == nil {
		return missing("always_confirm")
	}
	tl, err := s.d.Assistant.SetToolPolicy(r.Context(), pathParam(r, "name"), *req.AlwaysConfirm)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, toolOut(tl))
}
