package app

import (
	"log/slog"

	"go.uber.org/fx"

	"github.com/devpilot/devpilot/core/assistant"
	"github.com/devpilot/devpilot/core/usage"
	"github.com/devpilot/devpilot/core/voice"
	"github.com/devpilot/devpilot/ports"
)

// VoiceModule provides voice sessions and transcription.
var VoiceModule = fx.Module("voice",
	fx.Provide(NewVoice),
)

// VoiceParams are what the voice service is built from.
type VoiceParams struct {
	fx.In
	Logger      *slog.Logger
	Assistant   *assistant.Service
	Sessions    ports.ChatSessionStore
	Messages    ports.ChatMessageStore
	Realtime    ports.Realtime
	Transcriber ports.Transcriber
	Tx          ports.Transactor
	Clock       ports.Clock
	IDs         ports.IDs
	// Jobs and Usage meter the realtime calls started through the server.
	Jobs  ports.JobQueue
	Usage ports.UsageStore
	// Budgets refuse calls over an organisation's monthly token budget.
	Budgets *usage.Budgets
	// Observer, when given (TelemetryModule), hears the tool calls.
	Observer ports.Observer `optional:"true"`
}

// NewVoice returns the voice service. The realtime model, voice and token
// lifetime are the adapter's, configured in NewOpenAI.
func NewVoice(p VoiceParams) *voice.Service {
	return voice.New(voice.Config{}, voice.Deps{
		Assistant: p.Assistant, Sessions: p.Sessions, Messages: p.Messages, Realtime: p.Realtime,
		Transcriber: p.Transcriber, Tx: p.Tx, Clock: p.Clock, IDs: p.IDs, Jobs: p.Jobs, Usage: p.Usage, Budget: p.Budgets,
		Observer: p.Observer, Logger: p.Logger,
	})
}
