package ports

import (
	"context"
	"io"
	"time"
)

//go:generate go tool mockgen -typed -destination ../testkit/mocks/voice.go -package mocks . Realtime,Transcriber

// RealtimeSessionConfig is what a realtime speech session starts with.
type RealtimeSessionConfig struct {
	// Model overrides the adapter's configured realtime model when not empty.
	Model        string
	Voice        string
	Instructions string
	Tools        []ToolDefinition
	// ExpiresIn is how long the client secret stays valid; 0 is the
	// adapter's default.
	ExpiresIn time.Duration
}

// RealtimeSecret is an ephemeral client secret a browser uses to open a
// realtime session with the provider directly.
type RealtimeSecret struct {
	Value     string
	ExpiresAt time.Time
	Model     string
}

// RealtimeCall is a realtime call the provider accepted: the SDP answer the
// browser completes its WebRTC connection with, the call's id (which a
// sideband connection joins) and the model it runs.
type RealtimeCall struct {
	ID        string
	AnswerSDP string
	Model     string
}

// RealtimeUsage is the tokens one response of a realtime call used, as the
// provider reports them when the response is done. ResponseID is unique
// within the call, so a response is counted once however often it is seen.
type RealtimeUsage struct {
	ResponseID   string
	InputTokens  int64
	OutputTokens int64
	// The details: input tokens read from the cache, and the audio part of
	// the input and output tokens.
	CachedTokens      int64
	InputAudioTokens  int64
	OutputAudioTokens int64
}

// Realtime starts realtime speech sessions: it mints client secrets for a
// browser that talks to the provider directly, or starts a call on the
// browser's behalf and watches it from the server (the "sideband").
type Realtime interface {
	// CreateClientSecret asks the provider for a secret for a session
	// configured as cfg. Errors: rate_limited (with RetryAfter), upstream
	// (the provider failed, could not be reached or answered nonsense),
	// timeout, invalid (Code invalid_request).
	CreateClientSecret(ctx context.Context, cfg RealtimeSessionConfig) (RealtimeSecret, error)
	// StartCall hands the browser's WebRTC SDP offer to the provider for a
	// session configured as cfg (its ExpiresIn is not used) and returns the
	// call with the provider's SDP answer. Errors as CreateClientSecret's;
	// invalid too when the provider rejects the offer.
	StartCall(ctx context.Context, offerSDP string, cfg RealtimeSessionConfig) (RealtimeCall, error)
	// WatchCall joins the call callID from the server and calls onUsage for
	// every response of it that is done, until the call ends; it returns nil
	// then, and also when the call has already ended or is unknown. A
	// response may be reported again by a later WatchCall of the same call.
	// Errors: onUsage's as it returned it; unavailable when the connection
	// fails or drops before the call ends; timeout when joining takes too
	// long; upstream for rejected credentials or a malformed event; ctx's
	// error when ctx ends.
	WatchCall(ctx context.Context, callID string, onUsage func(RealtimeUsage) error) error
}

// TranscriptionRequest is one audio file to transcribe. Audio is read once,
// to the end, and not closed.
type TranscriptionRequest struct {
	// Model overrides the adapter's configured model when not empty.
	Model    string
	Audio    io.Reader
	Filename string
	// Language is an ISO-639-1 hint; "" lets the provider detect it.
	Language string
}

// Transcription is the text of an audio file, its language and its length.
type Transcription struct {
	Text     string
	Language string
	Duration time.Duration
	// Model is the model that transcribed, and Usage the tokens the provider
	// reported for it: the GPT transcription models report tokens (audio
	// in, text out), whisper-1 only seconds, which leave Usage zero.
	Model string
	Usage Usage
}

// Transcriber turns speech into text.
type Transcriber interface {
	// Transcribe transcribes r.Audio. Errors as Realtime's, plus invalid
	// when the provider rejects the audio.
	Transcribe(ctx context.Context, r TranscriptionRequest) (Transcription, error)
}
