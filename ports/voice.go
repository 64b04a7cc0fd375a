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

// Realtime mints client secrets for realtime speech sessions.
type Realtime interface {
	// CreateClientSecret asks the provider for a secret for a session
	// configured as cfg. Errors: rate_limited (with RetryAfter), upstream
	// (the provider failed, could not be reached or answered nonsense),
	// timeout, invalid (Code invalid_request).
	CreateClientSecret(ctx context.Context, cfg RealtimeSessionConfig) (RealtimeSecret, error)
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
