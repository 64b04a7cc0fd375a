package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/core/voice"
	"github.com/devpilot/devpilot/ports"
)

// Voice is voice and audio as the transport calls it.
type Voice interface {
	StartSessionOn(ctx context.Context, page *tool.PageContext) (voice.Session, error)
	StartCall(ctx context.Context, offerSDP string) (voice.Call, error)
	MeterOwnCall(ctx context.Context, callID string) error
	ToolCall(ctx context.Context, in voice.ToolCallInput) (voice.ToolCallResult, error)
	Transcribe(ctx context.Context, in voice.TranscribeInput) (ports.Transcription, error)
}

// audioUploadLimit bounds a transcription request: a 25 MiB file plus the
// multipart framing and fields. The file's own limit is the core's.
const audioUploadLimit = 26 << 20

// transcribeTimeout bounds a transcription request, longer than the
// provider call's own bound so that a slow provider is a 504 from the adapter.
const transcribeTimeout = 3 * time.Minute

// voiceRoutes serves voice and audio: the voice endpoints under /api/v1/voice, and
// transcription at /audio/transcribe and under /api/v1.
func (s *Server) voiceRoutes() {
	s.handle(http.MethodPost, "/api/v1/voice/session", s.voiceSession, costly)
	s.handle(http.MethodPost, "/api/v1/voice/calls", s.voiceCall, maxBody(voice.MaxOfferBytes), costly)
	s.handle(http.MethodPost, "/api/v1/voice/calls/:call_id/metering", s.meterOwnCall, costly)
	s.handle(http.MethodPost, "/api/v1/voice/tool-calls", s.voiceToolCall)
	for _, p := range []string{"", "/api/v1"} {
		s.handle(http.MethodPost, p+"/audio/transcribe", s.transcribe, maxBody(audioUploadLimit), timeout(transcribeTimeout), costly)
	}
}

// voiceSessionRequest is the optional body of POST /api/v1/voice/session:
// the page the session starts on, as a chat's context, which routes the
// session's tools as the chat's; without it the session gets every tool.
type voiceSessionRequest struct {
	Context *struct {
		CurrentPage       string `json:"current_page"`
		SelectedProjectID string `json:"selected_project_id"`
	} `json:"context"`
}

func (s *Server) voiceSession(w http.ResponseWriter, r *http.Request) error {
	var req voiceSessionRequest
	if r.ContentLength != 0 { // the body is optional
		if err := decodeJSON(w, r, &req); err != nil {
			return err
		}
	}
	var page *tool.PageContext
	if req.Context != nil {
		page = &tool.PageContext{CurrentPage: req.Context.CurrentPage, SelectedProjectID: req.Context.SelectedProjectID}
	}
	sess, err := s.d.Voice.StartSessionOn(r.Context(), page)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{
		"token": sess.Secret.Value, "expires_at": sess.Secret.ExpiresAt.UTC(), "model": sess.Secret.Model,
		"session_id": sess.SessionID,
	})
}

// The headers of a call's SDP answer that name the call and its chat session.
const (
	headerCallID    = "X-Devpilot-Call-Id"
	headerSessionID = "X-Devpilot-Session-Id"
)

// voiceCall starts a realtime call from the browser's SDP offer (the body,
// application/sdp) and answers the provider's SDP answer: 201 with
// application/sdp and the call and session ids in headers, or, when the
// client accepts application/json and not application/sdp, 201 with
// {"call_id","sdp","model","session_id"}.
func (s *Server) voiceCall(w http.ResponseWriter, r *http.Request) error {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/sdp" {
		return &ports.Error{Kind: ports.KindUnsupportedMedia, Message: "the request body must be the WebRTC SDP offer, as application/sdp"}
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return bodyError(err, "reading the SDP offer")
	}
	if !utf8.Valid(b) {
		return malformed("the SDP offer is not UTF-8 text")
	}
	call, err := s.d.Voice.StartCall(r.Context(), string(b))
	if err != nil {
		return err
	}
	w.Header().Set(headerCallID, call.ID)
	w.Header().Set(headerSessionID, call.SessionID)
	accept := r.Header.Get("Accept")
	if strings.Contains(accept, "application/json") && !strings.Contains(accept, "application/sdp") {
		return writeJSON(w, http.StatusCreated, map[string]any{
			"call_id": call.ID, "sdp": call.AnswerSDP, "model": call.Model, "session_id": call.SessionID,
		})
	}
	w.Header().Set("Content-Type", "application/sdp")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusCreated)
	_, _ = io.WriteString(w, call.AnswerSDP)
	return nil
}

// meterOwnCall meters a realtime call the client started with a voice
// session's client secret: 202 {"call_id","status":"metering"}.
func (s *Server) meterOwnCall(w http.ResponseWriter, r *http.Request) error {
	id := pathParam(r, "call_id")
	if err := s.d.Voice.MeterOwnCall(r.Context(), id); err != nil {
		return err
	}
	return writeJSON(w, http.StatusAccepted, map[string]string{"call_id": id, "status": "metering"})
}

type voiceToolCallRequest struct {
	Name      *string         `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	CallID    string          `json:"call_id"`
	SessionID string          `json:"session_id"`
}

func (s *Server) voiceToolCall(w http.ResponseWriter, r *http.Request) error {
	var req voiceToolCallRequest
	if err := decodeJSON(w, r, &req); err != nil {
		return err
	}
	if req.Name == nil {
		return missing("name")
	}
	res, err := s.d.Voice.ToolCall(r.Context(), voice.ToolCallInput{
		SessionID: req.SessionID, Name: *req.Name, Arguments: req.Arguments, CallID: req.CallID,
	})
	if err != nil {
		return err
	}
	if c := res.Confirmation; c != nil {
		return writeJSON(w, http.StatusOK, map[string]any{
			"confirmation_id": c.ID, "summary": res.Summary, "status": c.Status,
			"expires_at": c.ExpiresAt.UTC(), "session_id": res.SessionID, "call_id": res.CallID,
		})
	}
	return writeJSON(w, http.StatusOK, map[string]any{"output": res.Output, "session_id": res.SessionID, "call_id": res.CallID})
}

// transcribe reads the multipart upload without holding it in memory: the
// audio part is spooled to a temporary file (the language field may follow
// it), then streamed from there to the provider.
func (s *Server) transcribe(w http.ResponseWriter, r *http.Request) error {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		return &ports.Error{Kind: ports.KindUnsupportedMedia, Message: "the request body must be multipart/form-data with the audio in the field file"}
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return malformed("not a multipart/form-data body: %v", err)
	}
	var (
		in    voice.TranscribeInput
		spool *os.File
	)
	defer func() {
		if spool != nil {
			_ = spool.Close()
			_ = os.Remove(spool.Name())
		}
	}()
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return bodyError(err, "reading the multipart body")
		}
		switch name := part.FormName(); name {
		case "file", "audio":
			if spool != nil {
				return malformed("send one audio file, in the field file")
			}
			if spool, err = os.CreateTemp("", "devpilot-audio-*"); err != nil {
				return err
			}
			if _, err := io.Copy(spool, part); err != nil {
				return bodyError(err, "reading the audio file")
			}
			if _, err := spool.Seek(0, io.SeekStart); err != nil {
				return err
			}
			in.Filename = part.FileName()
		case "language":
			v, err := io.ReadAll(io.LimitReader(part, 64))
			if err != nil {
				return bodyError(err, "reading the language field")
			}
			in.Language = strings.TrimSpace(string(v))
		default:
			if _, err := io.Copy(io.Discard, part); err != nil { // tolerate, as the provider's API does
				return bodyError(err, "reading the multipart body")
			}
		}
	}
	if spool == nil {
		return missing("file")
	}
	in.Audio = spool
	t, err := s.d.Voice.Transcribe(r.Context(), in)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, map[string]any{"text": t.Text, "language": t.Language, "duration": t.Duration.Seconds()})
}
