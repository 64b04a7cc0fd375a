// Package voice is the core of devpilot's voice features: realtime speech
// sessions with the assistant, the tool calls a voice model makes in them,
// and transcription of uploaded audio.
//
// A voice session is a chat session too (titled "Voice session"), so the
// history shows what was done by voice: StartSession creates it and mints a
// realtime client secret whose instructions carry the user's standing
// instructions and whose tools are every tool of the assistant, or, when the
// client names its page, those the chat routes there. The browser talks to
// the provider directly and hands each tool call to ToolCall, which
// runs reads at once and turns writes (and reads the organisation marked
// always_confirm) into pending confirmations, decided through the
// assistant's Confirm like any other.
//
// StartCall is the other way in: the browser hands its WebRTC offer to the
// server, which starts the call with the provider itself and then meters it
// (MeterCall, in a background job): the provider reports each response's
// tokens to the server's sideband connection, and they are recorded for the
// voice feature, each response once.
package voice

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/devpilot/devpilot/core/tool"
	"github.com/devpilot/devpilot/ports"
)

// Config tunes voice. Zero values take the defaults named.
type Config struct {
	// Voice is the realtime voice; "" is the adapter's default.
	Voice string
	// Model overrides the realtime adapter's model when not empty.
	Model string
	// Expiry is how long a client secret stays valid; 0 is the adapter's
	// default.
	Expiry time.Duration
	// MaxAudioBytes bounds an uploaded audio file (DefaultMaxAudioBytes).
	MaxAudioBytes int64
	// Instructions start every voice session (DefaultInstructions).
	Instructions string
	// MaxCall bounds how long a realtime call's usage is metered
	// (DefaultMaxCall).
	MaxCall time.Duration
}

// DefaultMaxAudioBytes is the largest audio file Transcribe accepts unless
// Config says otherwise: 25 MiB, the provider's own limit.
const DefaultMaxAudioBytes = 25 << 20

// DefaultInstructions are the base instructions of a voice session when
// Config.Instructions is empty.
// The assistant's ground rules (see Assistant.Instructions) and the date follow
// them.
const DefaultInstructions = `You are devpilot, the voice assistant of a product team. You help with specifications, cloud services, content and code repositories, using the tools you are given. Changes wait for the user's approval on screen: after calling such a tool, tell the user it is waiting for their approval. Speak briefly and naturally, in short sentences without lists or markup.`

// SessionTitle is the title of the chat session that records a voice session.
const SessionTitle = "Voice session"

// Error codes set as ports.Error.Code.
const (
	// CodeUnsupportedFormat (unsupported_media_type): the file's extension is
	// not one of the supported audio formats.
	CodeUnsupportedFormat = "unsupported_format"
	// CodeFormatMismatch (unsupported_media_type): the file's content is not
	// the format its extension names.
	CodeFormatMismatch = "format_mismatch"
	// CodeAudioTooLarge (payload_too_large): the file is larger than
	// Config.MaxAudioBytes.
	CodeAudioTooLarge = "audio_too_large"
)

func (c Config) withDefaults() Config {
	if c.MaxAudioBytes <= 0 {
		c.MaxAudioBytes = DefaultMaxAudioBytes
	}
	if c.MaxCall <= 0 {
		c.MaxCall = DefaultMaxCall
	}
	if strings.TrimSpace(c.Instructions) == "" {
		c.Instructions = DefaultInstructions
	}
	return c
}

// Assistant is what voice needs of the assistant (*assistant.Service has
// it): the tools it offers, the instructions it gives the model, the
// caller's organisation's tool policy, and carrying out a call in a chat
// session.
type Assistant interface {
	// Registry holds the tools, routed per page as the chat routes them.
	Registry() *tool.Registry
	// Instructions are base followed by the ground rules every session
	// keeps, today's date and the caller's standing instructions.
	Instructions(ctx context.Context, base string) (string, error)
	// Policy reads the tool policy of the caller's organisation.
	Policy(ctx context.Context) (tool.Policy, error)
	// CheckTool returns nil when the caller's role may run the tool named
	// name; forbidden (permission_denied, naming the permission) when the
	// organisation's permission policy refuses it.
	CheckTool(ctx context.Context, name string) error
	// ExecuteToolUnder checks a call and runs a read at once or makes a
	// write (or a read pol marks) a pending confirmation of the session.
	ExecuteToolUnder(ctx context.Context, sessionID string, call ports.ToolCall, pol tool.Policy) (tool.Execution, error)
}

// Budget is the organisations' monthly token budgets (*usage.Budgets is
// one).
type Budget interface {
	// Check returns the budget_exceeded (rate_limited) Error when orgID
	// has used its month's budget.
	Check(ctx context.Context, orgID string) error
}

// Deps are the ports and services a Service needs. Observer nil hears
// nothing; Logger nil discards logs.
type Deps struct {
	// Assistant provides the tools, runs them and keeps the preferences.
	Assistant   Assistant
	Sessions    ports.ChatSessionStore
	Messages    ports.ChatMessageStore
	Realtime    ports.Realtime
	Transcriber ports.Transcriber
	Tx          ports.Transactor
	Clock       ports.Clock
	IDs         ports.IDs
	// Jobs gets the job that meters a call StartCall starts, and Usage the
	// tokens MeterCall records.
	Jobs  ports.JobQueue
	Usage ports.UsageStore
	// Budget, when set, refuses a call StartCall would start, and a client
	// secret StartSessionOn would mint, for an organisation over its monthly
	// token budget.
	Budget Budget
	// Observer hears the tool calls ToolCall handles and the calls
	// StartCall starts.
	Observer ports.Observer
	Logger   *slog.Logger
}

// Service is the voice use cases. Every method acts for the principal in ctx
// and fails with unauthenticated without one.
type Service struct {
	cfg Config
	d   Deps
	log *slog.Logger
}

// New returns a Service over the given ports.
func New(cfg Config, d Deps) *Service {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Observer == nil {
		d.Observer = ports.NopObserver{}
	}
	return &Service{cfg: cfg.withDefaults(), d: d, log: d.Logger.With("core", "voice")}
}

// Session is a voice session that has started: the client secret a browser
// opens the realtime session with, and the chat session that records it.
type Session struct {
	Secret    ports.RealtimeSecret
	SessionID string
}

// StartSession starts a voice session for the caller without a page: see
// StartSessionOn.
func (s *Service) StartSession(ctx context.Context) (Session, error) {
	return s.StartSessionOn(ctx, nil)
}

// tools are the realtime session's function definitions: every assistant
// tool without a page (the session lasts and the user may ask anything);
// with a page, those the chat routes there (docs/api.md, "Voice and audio").
func (s *Service) tools(page *tool.PageContext) []ports.ToolDefinition {
	if page == nil || (page.CurrentPage == "" && page.SelectedProjectID == "") {
		return s.d.Assistant.Registry().Definitions()
	}
	return s.d.Assistant.Registry().Route(page, "", tool.DefaultMaxTools)
}

// StartSessionOn starts a voice session for the caller on a console page
// (nil for none): it mints a realtime client secret whose instructions are
// the base instructions followed by the assistant's ground rules, today's
// date and the caller's standing instructions, and whose tools are those the
// chat would offer on that page (at most tool.DefaultMaxTools, routed by
// the assistant's Registry.Route; without a page, every tool), then creates
// the chat session titled "Voice session" that records what is done by
// voice. Errors: unauthenticated; budget_exceeded (rate_limited) from
// Deps.Budget, before the provider hears of it; the Realtime port's
// (rate_limited, unavailable, timeout, upstream, invalid) pass through; the
// stores'.
func (s *Service) StartSessionOn(ctx context.Context, page *tool.PageContext) (Session, error) {
	p, err := ports.RequirePrincipal(ctx)
	if err != nil {
		return Session{}, err
	}
	if s.d.Budget != nil {
		if err := s.d.Budget.Check(ctx, p.OrgID); err != nil {
			return Session{}, err
		}
	}
	instructions, err := s.d.Assistant.Instructions(ctx, s.cfg.Instructions)
	if err != nil {
		return Session{}, err
	}
	secret, err := s.d.Realtime.CreateClientSecret(ctx, ports.RealtimeSessionConfig{
		Model:        s.cfg.Model,
		Voice:        s.cfg.Voice,
		Instructions: instructions,
		Tools:        s.tools(page),
		ExpiresIn:    s.cfg.Expiry,
	})
	if err != nil {
		return Session{}, err
	}
	// The secret is minted first so that a provider failure leaves no empty
	// session behind; a secret whose session could not be stored just expires.
	sess := s.newSession(p)
	if err := s.d.Sessions.CreateSession(ctx, sess); err != nil {
		return Session{}, err
	}
	return Session{Secret: secret, SessionID: sess.ID}, nil
}

func (s *Service) newSession(p ports.Principal) ports.ChatSession {
	now := s.d.Clock.Now()
	return ports.ChatSession{ID: s.d.IDs.NewID(), OrgID: p.OrgID, UserID: p.UserID, Title: SessionTitle,
		CreatedAt: now, UpdatedAt: now}
}
